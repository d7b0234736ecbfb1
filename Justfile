# replay: build, test, bench, fuzz, demo.  (`npm install -g rust-just` gives `just`.)

default: test

# Build the replay binary into ./bin.
build:
    go build -o bin/replay ./cmd/replay

# The README's test command, plus formatting, vet and staticcheck.
test:
    test -z "$(gofmt -l .)" || (gofmt -l . && exit 1)
    go vet ./...
    go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
    go test ./...

# Race detector over everything (slower; CI runs it with -short).
race:
    go test -race ./...

# Go benchmarks, then ingest vs `perf script` and vs `trace-cmd report` on large traces recorded on the fly.
bench:
    go test -run '^$' -bench . -benchmem ./...
    scripts/bench-ingest.sh
    scripts/bench-tracedat.sh

# Regenerate cmd/replay/default.pgo (profile-guided optimisation) from a large trace recorded on the fly.
pgo:
    scripts/pgo.sh

# Fuzz every parser for a while each (FUZZTIME=2m just fuzz for longer).
fuzz:
    scripts/fuzz.sh

# The main job on the bundled real trace.
demo:
    go run ./cmd/replay demo

# Fidelity of the what-if engine on every real recording (FIDELITY.md's totals); SEEDS=0-9 for ten seeds.
fidelity:
    go run ./scripts/fidelity -seeds ${SEEDS:-0-2}

# The repeat recordings too, and the kernel against itself (FIDELITY.md round 49).
fidelity-repeats:
    go run ./scripts/fidelity -seeds ${SEEDS:-0-29} -repeats

# The holdout recordings too: workloads no fidelity round had seen (FIDELITY.md round 50).
fidelity-holdout:
    go run ./scripts/fidelity -seeds ${SEEDS:-0-29} -holdout

# FIDELITY.md's status tables (seeds 0-29, the holdouts and repeats included).
fidelity-status:
    go run ./scripts/fidelity -seeds ${SEEDS:-0-29} -holdout -repeats -status

# The other real traces (LISA's, trappy's, the format samples recorded on this machine) besides the recordings (FIDELITY.md, "The other real traces").
fidelity-public:
    go run ./scripts/fidelity -seeds ${SEEDS:-0-29} -public -status

# The what-if question put to the guests recorded under 6.1 and 6.12 on one day: each recording replayed under the other kernel's policy, against the change the recordings show (FIDELITY.md rounds 108-109; PAIRS=earlier for round 108's recordings of other days).
crosskernel:
    go run ./scripts/crosskernel -runs ${RUNS:-10} -pairs ${PAIRS:-same-day}

# The goals on the six workloads recorded under 6.1 and 6.12 on one day, with the kernel against itself (FIDELITY.md round 109).
fidelity-same-day:
    go run ./scripts/fidelity -seeds ${SEEDS:-0-29} -same-day -status

# The 6.12 kernel's EEVDF state against the replays' (FIDELITY.md rounds 61 and 151): W=hackbench|stressng-mix for another workload, R=fixtures/kernels for the 6.12 recordings under every directory there (the same-day ones too: W=messaging).
shadow:
    #!/usr/bin/env bash
    set -euo pipefail
    w=${W:-schbench}; d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
    traces=$(find "${R:-fixtures/kernels/v6.12}" -path '*v6.12*' -name "$w.perf.data.gz" | sort)
    go build -o "$d/replay" ./cmd/replay
    for f in $traces; do "$d/replay" whatif -i "$f" --seed 0 -o "$d/$(echo "$f" | tr / _).arrow" 2>/dev/null >/dev/null; done
    go run ./scripts/eevdfshadow $traces vs "$d"/*.arrow

# The shadow's picks against the replays' own switches over every 6.12 recording, seeds 0 and 1, each replay alone (FIDELITY.md rounds 136 and 151): the picks table's rows summed.
shadow-replays:
    #!/usr/bin/env bash
    set -euo pipefail
    d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
    go build -o "$d/replay" ./cmd/replay
    go build -o "$d/eevdfshadow" ./scripts/eevdfshadow
    for f in $(find fixtures/kernels -path '*v6.12*' -name '*.perf.data.gz' | sort); do
      for s in 0 1; do
        "$d/replay" whatif -i "$f" --seed $s -o "$d/r.arrow" >/dev/null 2>&1
        "$d/eevdfshadow" "$d/r.arrow" | awk '/^picks at switches/ { on = 1; next } on && NF == 6 { print $2, $4; next } { on = 0 }'
      done
    done | awk '{ a += $1; d += $2 } END { printf "%d of %d picks agree, %d disagree\n", a, a + d, d }'

# The extractor's tick and enqueue classes against each CPU's tick grid over every 6.1 and 6.12 guest recording (FIDELITY.md round 66).
tickgrid:
    go run ./scripts/tickgrid

# The model's balance arithmetic against the kernel's /proc/schedstat over the guests' hackbench recordings and the two-vCPU holdouts' messaging, with their snapshots (FIDELITY.md round 95).
balanceshadow:
    go run ./scripts/balanceshadow fixtures/kernels/guest-*/hackbench.perf.data fixtures/kernels/repeats/*/r*/hackbench.perf.data.gz fixtures/kernels/v6.12/*/r*/hackbench.perf.data.gz fixtures/kernels/holdout/guest-[MNP]*/r*/messaging.perf.data.gz

# Every periodic busy balance pass of every guest recording with snapshots, the model's verdict on a PELT shadow against the kernel's busy counters, with totals per kernel (FIDELITY.md round 149).
balanceshadow-busy:
    go run ./scripts/balanceshadow -busy $(find fixtures/kernels -name '*.perf.data' -o -name '*.perf.data.gz' | sort)

# The fork and balance shadows on every 6.12 guest recording, the blocks their schedstats show delayed-dequeued kept queued (FIDELITY.md round 150): forks placed as the kernel did, then the moving passes' summed imbalance against the kernel's lb_imbalance over the rows where every pass is seen (within 10 %, mean |ln ratio|). -no-delayed-dequeue after each script name gives the shadow before.
shadows-v612:
    go run ./scripts/forkshadow $(find fixtures/kernels -path '*v6.12*' -name '*.perf.data.gz' | sort) | tail -n 1
    go run ./scripts/balanceshadow $(find fixtures/kernels -path '*v6.12*' -name '*.perf.data.gz' | sort) | awk '$NF ~ /^[0-9.]+$/ && $(NF-1) == "|" && $NF > 0 { n++; l = log($NF); if (l < 0) l = -l; s += l; if ($NF >= 0.9 && $NF <= 1.1) w++ } END { printf "%d rows with every pass seen: %d within 10 %%, mean |ln ratio| %.3f\n", n, w, s / n }'

# How often the kernel's blocks and the replays' are delayed-dequeued (kept queued, requeued by a waking) on every 6.12 recording, seeds 0 and 1 (FIDELITY.md round 150).
delayshare:
    go run ./scripts/delayshare -seeds 0-1 $(find fixtures/kernels -path '*v6.12*' -name '*.perf.data.gz' | sort)

# The forks' idle exits and placements on every two-vCPU hackbench recording (6.1 committed and repeats, 6.12): the kernel's, then the replays' (seeds 0-2) from the one idle-exit pool, then with idle_exit=split (FIDELITY.md round 152).
forkidle:
    #!/usr/bin/env bash
    set -euo pipefail
    d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
    go build -o "$d/replay" ./cmd/replay
    fs=$(ls fixtures/kernels/guest-[MNP]*/hackbench.perf.data fixtures/kernels/repeats/guest-[MNP]*/r*/hackbench.perf.data.gz fixtures/kernels/v6.12/*/r*/hackbench.perf.data.gz)
    for f in $fs; do
      n=$(echo "$f" | tr / _)
      for s in 0 1 2; do
        "$d/replay" whatif -i "$f" --seed $s -o "$d/pool_${n}_$s.arrow" >/dev/null 2>&1
        "$d/replay" whatif -i "$f" --seed $s --set idle_exit=split -o "$d/split_${n}_$s.arrow" >/dev/null 2>&1
      done
    done
    go run ./scripts/forkidle $fs vs "$d"/pool_*.arrow vs "$d"/split_*.arrow

# The model's fork balancing against the kernel's own fork placements, on the loads a PELT shadow redoes from each 6.1 guest recording (FIDELITY.md round 97; for the 6.12 guests' the shadow keeps the blocks their schedstats show delayed-dequeued, round 150).
forkshadow:
    go run ./scripts/forkshadow fixtures/kernels/guest-*/*.perf.data fixtures/kernels/guest-*/*.perf.data.gz fixtures/kernels/repeats/*/r*/*.perf.data.gz
