#!/usr/bin/env bash
# Ingest speed and memory against `perf script` on the same large perf.data,
# recorded on the fly (never committed). Needs root (perf sched record),
# perf, and hackbench (apt-get install rt-tests).
#
#   scripts/bench-ingest.sh            # ~300 MB trace
#   LOOPS=4000 scripts/bench-ingest.sh # size it
#
# Prints one table: wall seconds and peak RSS for each tool, and the ratio.
# Also ingests a trace a quarter the size to show peak memory does not grow
# with trace length.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/hackbench-traces.sh
go build -o "$out/replay" ./cmd/replay

measure() { # measure NAME CMD... -> "seconds peak_kb cpu_seconds"
  local name=$1; shift
  # The output of an earlier run is removed first: replacing a file makes
  # the kernel free the old one's pages, which is not the command's work.
  local prev=""
  for a in "$@"; do if [ "$prev" = "-o" ]; then rm -f "$a"; fi; prev=$a; done
  /usr/bin/time -f "%e %M %U %S" -o "$out/$name.time" "$@" >/dev/null 2>"$out/$name.err" || { cat "$out/$name.err"; exit 1; }
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$out/$name.time"
}

size_mb() { echo $(( $(stat -c %s "$1") / 1000000 )); }
read -r ps_s ps_kb ps_cpu < <(measure perf-script perf script -i "$out/large.data")
read -r ri_s ri_kb ri_cpu < <(measure replay-large "$out/replay" ingest --progress=never "$out/large.data" -o "$out/large.arrow")
read -r rz_s rz_kb rz_cpu < <(measure replay-none "$out/replay" ingest --progress=never --compress none "$out/large.data" -o "$out/large-none.arrow")
read -r rr_s rr_kb rr_cpu < <(measure replay-reader "$out/replay" info -i "$out/large.data")
read -r rs_s rs_kb rs_cpu < <(measure replay-small "$out/replay" ingest --progress=never "$out/small.data" -o "$out/small.arrow")
# The same lines printed: perf script with replay script's fields, and
# replay script from the perf.data and from its timeline.
read -r pf_s pf_kb pf_cpu < <(measure perf-script-f perf script --ns -F comm,tid,pid,cpu,time,event,trace --show-task-events --show-lost-events -i "$out/large.data")
read -r rp_s rp_kb rp_cpu < <(measure replay-script "$out/replay" script "$out/large.data")
read -r ra_s ra_kb ra_cpu < <(measure replay-script-arrow "$out/replay" script "$out/large.arrow")
events=$("$out/replay" info -i "$out/large.arrow" --json | sed -n 's/^  "events": \([0-9]*\),/\1/p')

echo "machine:   $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d" " -f1-3 /proc/loadavg)"
echo "perf:      $(perf --version)"
echo "trace:     $out/large.data, $(size_mb "$out/large.data") MB, $events events (hackbench -g 10 -l $loops)"
printf '%-34s %8s %12s %12s\n' "command" "seconds" "CPU seconds" "peak RSS MB"
printf '%-34s %8s %12s %12d\n' "perf script -i large.data" "$ps_s" "$ps_cpu" $((ps_kb / 1024))
printf '%-34s %8s %12s %12d\n' "replay ingest large.data (lz4)" "$ri_s" "$ri_cpu" $((ri_kb / 1024))
printf '%-34s %8s %12s %12d\n' "replay ingest --compress none" "$rz_s" "$rz_cpu" $((rz_kb / 1024))
printf '%-34s %8s %12s %12d\n' "replay info (reader only)" "$rr_s" "$rr_cpu" $((rr_kb / 1024))
printf '%-34s %8s %12s %12d\n' "replay ingest small.data ($(size_mb "$out/small.data") MB)" "$rs_s" "$rs_cpu" $((rs_kb / 1024))
printf '%-34s %8s %12s %12d\n' "perf script -F (replay script's)" "$pf_s" "$pf_cpu" $((pf_kb / 1024))
printf '%-34s %8s %12s %12d\n' "replay script large.data" "$rp_s" "$rp_cpu" $((rp_kb / 1024))
printf '%-34s %8s %12s %12d\n' "replay script large.arrow" "$ra_s" "$ra_cpu" $((ra_kb / 1024))
echo "output: $(size_mb "$out/large.arrow") MB lz4 (default), $(size_mb "$out/large-none.arrow") MB uncompressed"
awk -v a="$ps_s" -v b="$ri_s" -v c="$rz_s" -v d="$rr_s" 'BEGIN { printf "speed-up vs perf script: %.1fx (default, lz4), %.1fx (uncompressed), reader alone %.1fx\n", a / b, a / c, a / d }'
awk -v a="$pf_s" -v b="$rp_s" -v c="$ra_s" 'BEGIN { printf "replay script vs perf script, same lines: %.1fx from the perf.data, %.1fx from the timeline\n", a / b, a / c }'
