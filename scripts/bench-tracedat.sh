#!/usr/bin/env bash
# trace.dat ingest speed and memory against `trace-cmd report` on the same
# large trace.dat, recorded on the fly (never committed). Needs root,
# tracefs, trace-cmd and hackbench (apt-get install trace-cmd rt-tests).
#
#   scripts/bench-tracedat.sh             # ~300 MB trace.dat
#   BUF_MB=100 scripts/bench-tracedat.sh  # ring buffer per CPU, sizes the file
#
# `trace-cmd record` cannot start on machines where
# /proc/sys/kernel/ftrace_enabled is read-only, so the ring buffer is set up
# by hand in tracefs (sched:* and task:* events, no overwrite, one buffer of
# BUF_MB MB per CPU), filled by hackbench, then saved with `trace-cmd
# extract` (as shared/fixtures/recorded/README.md describes). The tracefs
# settings it changes are put back on exit.
#
# Prints one table: wall and CPU (user+sys) seconds and peak RSS for each
# tool, and the ratios; `replay info` on the trace.dat shows the reader's
# share (it reads every event but writes no timeline). The machine may be
# shared: the load average is printed, and CPU seconds are the steadier
# measure.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_DIR:-bench/out}
mkdir -p "$out"
buf_mb=${BUF_MB:-160}
loops=${LOOPS:-100000}
tfs=${TRACEFS:-/sys/kernel/tracing}
for c in trace-cmd hackbench; do
  command -v "$c" >/dev/null || { echo "bench: $c missing (apt-get install trace-cmd rt-tests)"; exit 1; }
done
[ -w "$tfs/tracing_on" ] || { echo "bench: $tfs not writable (needs root and tracefs)"; exit 1; }
go build -o "$out/replay" ./cmd/replay

dat="$out/large.dat"
record() {
  [ -s "$dat" ] && return 0
  local old_kb old_ow old_on
  old_kb=$(sed 's/ .*//' "$tfs/buffer_size_kb")
  old_ow=$(cat "$tfs/options/overwrite")
  old_on=$(cat "$tfs/tracing_on")
  restore() {
    echo 0 >"$tfs/tracing_on"
    echo 0 >"$tfs/events/sched/enable"
    echo 0 >"$tfs/events/task/enable" 2>/dev/null || true
    echo "$old_ow" >"$tfs/options/overwrite"
    echo >"$tfs/trace"
    echo "$old_kb" >"$tfs/buffer_size_kb"
    echo "$old_on" >"$tfs/tracing_on"
  }
  trap restore EXIT
  echo 0 >"$tfs/tracing_on"
  echo nop >"$tfs/current_tracer"
  echo $((buf_mb * 1024)) >"$tfs/buffer_size_kb"
  echo 0 >"$tfs/options/overwrite" # stop when full: no overwritten pages
  echo >"$tfs/trace"
  echo 1 >"$tfs/events/sched/enable"
  echo 1 >"$tfs/events/task/enable" 2>/dev/null || true
  echo 1 >"$tfs/tracing_on"
  # Run until every CPU's buffer is full (it then drops events) or the
  # loops are done.
  setsid hackbench -g 10 -l "$loops" >/dev/null 2>&1 &
  local hb=$!
  while kill -0 "$hb" 2>/dev/null; do
    sleep 1
    if ! grep -h '^dropped events:' "$tfs"/per_cpu/cpu*/stats | grep -q ': 0$'; then
      kill -- -"$hb" 2>/dev/null || kill "$hb" 2>/dev/null || true
    fi
  done
  wait "$hb" 2>/dev/null || true
  echo 0 >"$tfs/tracing_on"
  (cd "$out" && trace-cmd extract -o large.dat >/dev/null 2>"$out/extract.err") || { cat "$out/extract.err"; exit 1; }
  restore
  trap - EXIT
}
record

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
read -r tc_s tc_kb tc_c < <(measure trace-cmd-report trace-cmd report -i "$dat")
read -r ri_s ri_kb ri_c < <(measure replay-tracedat "$out/replay" ingest --progress=never "$dat" -o "$out/large-dat.arrow")
read -r rz_s rz_kb rz_c < <(measure replay-tracedat-none "$out/replay" ingest --progress=never --compress none "$dat" -o "$out/large-dat-none.arrow")
# The reader alone: `replay info` on the raw trace.dat reads every event
# (one pass, summary only) and writes no timeline.
read -r rr_s rr_kb rr_c < <(measure replay-info "$out/replay" info -i "$dat")
events=$("$out/replay" info -i "$out/large-dat.arrow" --json | sed -n 's/^  "events": \([0-9]*\),/\1/p')
version=$("$out/replay" info -i "$out/large-dat.arrow" --json | sed -n 's/^    "format": "\(.*\)",/\1/p')

echo "machine:   $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "trace-cmd: $(trace-cmd -h 2>&1 | sed -n 's/^trace-cmd version //p')"
echo "trace:     $dat, $(size_mb "$dat") MB ($(( $(awk '/^    [0-9]* bytes in size/ { gsub(/[()]/, ""); s += $5 } END { print s }' "$out/extract.err" 2>/dev/null || echo 0) / 1000000 )) MB of ring-buffer pages), $version, $events events (tracefs sched:* task:*, $buf_mb MB/CPU, hackbench -g 10, trace-cmd extract)"
printf '%-40s %8s %12s %12s\n' "command" "seconds" "CPU seconds" "peak RSS MB"
printf '%-40s %8s %12s %12d\n' "trace-cmd report -i large.dat" "$tc_s" "$tc_c" $((tc_kb / 1024))
printf '%-40s %8s %12s %12d\n' "replay ingest large.dat ($(size_mb "$out/large-dat.arrow") MB lz4)" "$ri_s" "$ri_c" $((ri_kb / 1024))
printf '%-40s %8s %12s %12d\n' "replay ingest --compress none ($(size_mb "$out/large-dat-none.arrow") MB)" "$rz_s" "$rz_c" $((rz_kb / 1024))
printf '%-40s %8s %12s %12d\n' "replay info -i large.dat (reader only)" "$rr_s" "$rr_c" $((rr_kb / 1024))
awk -v a="$tc_s" -v b="$ri_s" -v c="$tc_c" -v d="$ri_c" 'BEGIN { printf "speed-up vs trace-cmd report: %.1fx (wall), %.1fx (CPU)\n", a / b, c / d }'
awk -v a="$tc_s" -v b="$rz_s" -v c="$tc_c" -v d="$rz_c" 'BEGIN { printf "speed-up with --compress none: %.1fx (wall), %.1fx (CPU)\n", a / b, c / d }'
awk -v a="$tc_s" -v b="$rr_s" -v c="$tc_c" -v d="$rr_c" 'BEGIN { printf "reader alone vs trace-cmd report: %.1fx (wall), %.1fx (CPU)\n", a / b, c / d }'
