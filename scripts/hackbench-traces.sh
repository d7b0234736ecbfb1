# Sourced by scripts/bench-ingest.sh and scripts/pgo.sh: records the two
# perf sched traces of hackbench they share into $out (kept between runs,
# never committed): large.data (hackbench -g 10 -l $LOOPS, default 3000,
# about 160 MB) and small.data (a quarter of the loops). Needs root, perf
# and hackbench (apt-get install rt-tests).
out=${BENCH_DIR:-bench/out}
mkdir -p "$out"
loops=${LOOPS:-3000}
command -v hackbench >/dev/null || { echo "$(basename "$0"): hackbench missing (apt-get install rt-tests)"; exit 1; }
record() { # record FILE LOOPS
  [ -s "$1" ] && return 0
  perf sched record -q -o "$1" -- hackbench -g 10 -l "$2" >/dev/null 2>&1
}
record "$out/large.data" "$loops"
record "$out/small.data" "$((loops / 4))"
