#!/usr/bin/env bash
# Regenerates cmd/replay/default.pgo: the CPU profile that Go's
# profile-guided optimisation builds cmd/replay with (go build and go run
# pick it up by themselves; a cold build takes no longer with it). Rerun
# after large changes to the hot paths; a stale profile only loses speed.
#
# The profile is taken on a real trace recorded on the fly (as
# scripts/bench-ingest.sh does; needs root, perf and hackbench): four
# perf.data ingests and one what-if replay of a smaller trace, so neither
# path's hot calls drown the other's.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/hackbench-traces.sh
go build -pgo=off -o "$out/replay-nopgo" ./cmd/replay
profs=()
for i in 1 2 3 4; do
  "$out/replay-nopgo" --cpuprofile "$out/pgo-ingest-$i.prof" ingest --progress=never "$out/large.data" -o "$out/pgo.arrow" 2>/dev/null
  profs+=("$out/pgo-ingest-$i.prof")
done
"$out/replay-nopgo" --cpuprofile "$out/pgo-whatif.prof" whatif -i "$out/small.data" --seed 0 >/dev/null
profs+=("$out/pgo-whatif.prof")
go tool pprof -proto "${profs[@]}" > cmd/replay/default.pgo.tmp 2>/dev/null
mv cmd/replay/default.pgo.tmp cmd/replay/default.pgo
echo "pgo: wrote cmd/replay/default.pgo ($(stat -c %s cmd/replay/default.pgo) bytes) from ${#profs[@]} profiles"
