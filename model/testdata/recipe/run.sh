#!/bin/bash
# run.sh NAME QEMU-TOPOLOGY-ARGS...: boot $KERNEL with the initramfs in
# $GUEST_DIR (busybox-static, lscpu, guest-init.sh as /init) on the given
# topology and keep the serial console in $GUEST_DIR/console-NAME.log.
NAME=$1; shift
KERNEL=${KERNEL:?set KERNEL to a vmlinuz, e.g. from linux-image-6.1.0-57-amd64}
cd "${GUEST_DIR:-.}" || exit 1
timeout 900 qemu-system-x86_64 -accel tcg,thread=multi -cpu qemu64,vendor=GenuineIntel -m 1024 "$@" \
  -nic none -nographic -no-reboot -kernel "$KERNEL" -initrd initramfs.cpio.gz \
  -append "console=ttyS0 panic=-1 sched_verbose mitigations=off topo=$NAME" > console-$NAME.log 2>&1
echo "qemu rc=$?" >> console-$NAME.log
