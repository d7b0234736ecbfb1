#!/bin/bash
# extract.sh NAME: split $GUEST_DIR/console-NAME.log into out/NAME/info/*.
N=$1; L=${GUEST_DIR:-.}/console-$N.log; D=out/$N; rm -rf $D; mkdir -p $D/info
tr -d '\r' < $L | awk -v D=$D '/^=====BEGIN /{f=D"/"$2; next} /^=====END /{f=""; next} f!=""{print > f}'
