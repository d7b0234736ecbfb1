#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t debugfs debugfs /sys/kernel/debug
O=/tmp/out; mkdir -p $O/info; cd $O
uname -a > info/uname.txt
cat /proc/cmdline > info/cmdline.txt
lscpu -p > info/lscpu-p.txt 2>&1
lscpu > info/lscpu.txt 2>&1
for f in /sys/devices/system/cpu/cpu[0-9]*/topology/* /sys/devices/system/cpu/cpu[0-9]*/cache/index*/level /sys/devices/system/cpu/cpu[0-9]*/cache/index*/type /sys/devices/system/cpu/cpu[0-9]*/cache/index*/shared_cpu_list /sys/devices/system/cpu/cpu[0-9]*/cache/index*/size; do echo "$f: $(cat $f 2>&1)"; done | sed 's#^/sys#sys#' > info/cpu_topology_sysfs.txt
for f in /sys/devices/system/node/node*/cpulist /sys/devices/system/node/node*/distance; do echo "== $f"; cat $f; done 2>&1 | sed 's#^== /sys#== sys#' > info/numa_nodes.txt
if [ -d /sys/kernel/debug/sched/domains ]; then
  (cd /sys/kernel/debug/sched && for f in $(find domains -type f | sort); do printf '%s: %s\n' "$f" "$(cat $f 2>&1 | tr '\n' ' ')"; done) > info/sched_domains_files.txt
else echo "no domains dir" > info/sched_domains_files.txt; fi
dmesg > info/dmesg.txt
cat /proc/schedstat > info/proc_schedstat.txt
for f in info/*; do echo "=====BEGIN $f"; cat $f; echo "=====END $f"; done
echo "=====DONE"
poweroff -f
