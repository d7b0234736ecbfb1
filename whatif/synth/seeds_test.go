package synth

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/whatif"
)

// The seed experiments of issue 8 (spec §6): the published effects,
// checked qualitatively on the generated workloads. A policy not yet
// registered skips its experiment with a message; nothing is hard-coded.
// SYNTH_SEEDS_FULL=1 runs the long versions (published run lengths and
// group counts) and prints the tables docs/synth.md records.

func full() bool { return os.Getenv("SYNTH_SEEDS_FULL") != "" }

// policies looks the policies up, skipping the test when one is missing.
func policies(t *testing.T, names ...string) []whatif.Policy {
	t.Helper()
	var ps []whatif.Policy
	for _, n := range names {
		p, err := whatif.LookupPolicy(n)
		if err != nil {
			t.Skipf("policy %q is not registered yet (have %v): experiment not run", n, whatif.PolicyNames())
		}
		ps = append(ps, p)
	}
	return ps
}

func replay(t *testing.T, res *Result, spec string, p whatif.Policy, seed uint64) *Report {
	t.Helper()
	cfg := whatif.DefaultConfig(p)
	cfg.Topology, cfg.Seed = topo(t, spec), seed
	rep, _, err := Run(res, cfg)
	if err != nil {
		t.Fatalf("%s under %s: %v", res.Command, p.Name(), err)
	}
	return rep
}

func pctRow(r *Report) string {
	var b strings.Builder
	for _, q := range Percentiles {
		fmt.Fprintf(&b, " %6d", r.Pct[pctName(q)])
	}
	return b.String()
}

// replayMeasured is replay keeping the wakeup latencies (sorted, ns).
func replayMeasured(t *testing.T, res *Result, spec string, p whatif.Policy, seed uint64) (*Report, *Measure) {
	t.Helper()
	cfg := whatif.DefaultConfig(p)
	cfg.Topology, cfg.Seed = topo(t, spec), seed
	rep, _, m, err := run(res, cfg)
	if err != nil {
		t.Fatalf("%s under %s: %v", res.Command, p.Name(), err)
	}
	return rep, m
}

// schbenchExperiment runs cmd on spec under bad and good and checks the
// published shape: p99 (and p95 when checkP95) at least 10x higher under
// bad, bad's p99 in the milliseconds, good's below a millisecond, p50
// about the same. The tail checks pool the seeds' wakeups: a run of
// schbench -r 10 on HiKey has 40, so its p95 is its third-longest wakeup,
// and whether that one waited behind a hog is chance (the replay's rework
// runs put 0 to 4 of 40 there, seeds 1-8; the published run's p90 51 us
// and p95 4 ms say 2 to 3 of 40). The pooled percentiles check the
// fraction; each seed's p50 and good's p99 are checked alone.
func schbenchExperiment(t *testing.T, spec, cmd string, bad, good string, checkP95 bool) {
	ps := policies(t, bad, good)
	seeds := []uint64{1, 2, 3}
	if full() {
		seeds = []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	}
	t.Logf("%s on %s; percentiles (us) p50 p75 p90 p95 p99 p99.5 p99.9", cmd, spec)
	pool := [2]*Measure{{}, {}}
	for _, seed := range seeds {
		res := gen(t, cmd, seed, topo(t, spec))
		b, bm := replayMeasured(t, res, spec, ps[0], seed)
		g, gm := replayMeasured(t, res, spec, ps[1], seed)
		pool[0].Latencies = append(pool[0].Latencies, bm.Latencies...)
		pool[1].Latencies = append(pool[1].Latencies, gm.Latencies...)
		t.Logf("seed %d %-16s%s  samples %d pending %d migrations %d invol %d", seed, bad, pctRow(b), b.Samples, b.EdgesPending, b.AllMigrations, b.InvoluntarySwaps)
		t.Logf("seed %d %-16s%s  samples %d pending %d migrations %d invol %d", seed, good, pctRow(g), g.Samples, g.EdgesPending, g.AllMigrations, g.InvoluntarySwaps)
		if gp99 := g.Pct["p99"]; gp99 >= 1000 {
			t.Errorf("seed %d: p99 under %s %d us, want below a millisecond", seed, good, gp99)
		}
		if d := b.Pct["p50"] - g.Pct["p50"]; d > 20 || d < -20 {
			t.Errorf("seed %d: p50 %s %d us vs %s %d us: want about the same", seed, bad, b.Pct["p50"], good, g.Pct["p50"])
		}
	}
	for _, m := range pool {
		slices.Sort(m.Latencies)
	}
	pct := func(i int, q float64) int64 { return pool[i].Percentile(q) / 1000 }
	t.Logf("seeds pooled: %s p95 %d p99 %d us (%d wakeups), %s p95 %d p99 %d us (%d)", bad, pct(0, 95), pct(0, 99), len(pool[0].Latencies), good, pct(1, 95), pct(1, 99), len(pool[1].Latencies))
	if bp99 := pct(0, 99); bp99 < 1000 {
		t.Errorf("pooled p99 under %s %d us, want milliseconds", bad, bp99)
	}
	if bp99, gp99 := pct(0, 99), pct(1, 99); bp99 < 10*max(gp99, 1) {
		t.Errorf("pooled p99 %s %d us vs %s %d us: want at least 10x", bad, bp99, good, gp99)
	}
	if bp95, gp95 := pct(0, 95), pct(1, 95); checkP95 && bp95 < 10*max(gp95, 1) {
		t.Errorf("pooled p95 %s %d us vs %s %d us: want at least 10x", bad, bp95, good, gp95)
	}
}

// Experiment 1 (spec §6.1): HiKey, rework vs llc-nr-running. Published:
// p95 4152 vs 78 us, p99 14288 vs 94 us, p50 33 vs 34 us.
func TestSeedSchbenchHikey(t *testing.T) {
	schbenchExperiment(t, "hikey", "schbench -m 2 -t 4 -s 10000 -c 1000000 -r 10", "rework", "llc-nr-running", true)
}

// Experiment 2 (spec §6.2): 40-CPU VM, pre-rework (legacy) vs rework.
// Published: p99 256 vs 12240 us, p50 155 vs 147 us. The published run
// is -r 0 (forever) with -z 120; this one runs 20 s (stats after the 5 s
// warmup), 60 s with SYNTH_SEEDS_FULL.
func TestSeedSchbenchVM40(t *testing.T) {
	r := 20
	if full() {
		r = 60
	}
	cmd := fmt.Sprintf("schbench -t 20 -r %d -c 1000000 -s 1000 -i 30 -z 120", r)
	t.Run("legacy", func(t *testing.T) { schbenchExperiment(t, "vm40-smt2", cmd, "rework", "legacy", false) })
	// The fix (spec: llc-nr-running gives a few hundred us too).
	t.Run("llc-nr-running", func(t *testing.T) { schbenchExperiment(t, "vm40-smt2", cmd, "rework", "llc-nr-running", false) })
}

// Experiment 3 (spec §6.3): ebizzy on POWER8 SMT8, the prefer-sibling
// fix. Published cpu-migrations before/after: -t 22 366/123, -t 48
// 3776/189, -t 96 2790/506. Reported, not asserted (the issue asks what
// the replay predicts).
func TestSeedEbizzyPower8(t *testing.T) {
	if testing.Short() {
		t.Skip("reported, not asserted: skipped in -short")
	}
	ps := policies(t, "legacy-presibfix", "legacy")
	S, variants := 1, []string{""}
	if full() {
		S, variants = 10, []string{"", " -m"}
	}
	for _, c := range variants {
		for _, n := range []int{22, 48, 96} {
			cmd := fmt.Sprintf("ebizzy -t %d -S %d%s", n, S, c)
			res := gen(t, cmd, 1, topo(t, "power8-22c-smt8"))
			for _, p := range ps {
				r := replay(t, res, "power8-22c-smt8", p, 1)
				t.Logf("%-24s %-18s cpu-migrations %6d  records/s %9.0f  involuntary %d", cmd, p.Name(), r.Migrations, r.RecordsPerSec, r.InvoluntarySwaps)
				if r.Records <= 0 {
					t.Errorf("%s under %s: no records", cmd, p.Name())
				}
			}
		}
	}
}

// Experiment 4 (spec §6.4): hackbench -l N/g -g g under rework and
// runnable-avg, on the 8-CPU arm64 (hikey: two clusters of four, N =
// 2560 as published) and on arm64-2node-224 (published N = 256000, which
// the in-memory Workload cannot hold: N = 2560 here, and only with
// SYNTH_SEEDS_FULL). Reported, not asserted.
func TestSeedHackbench(t *testing.T) {
	if testing.Short() {
		t.Skip("reported, not asserted: skipped in -short")
	}
	ps := policies(t, "rework", "runnable-avg")
	type machine struct {
		spec   string
		n      int
		groups []int
	}
	ms := []machine{{"hikey", 320, []int{1, 4}}}
	if full() {
		ms = []machine{{"hikey", 2560, []int{1, 4, 8, 16}}, {"arm64-2node-224", 2560, []int{1, 4, 16, 32, 64, 128, 256}}}
	}
	for _, m := range ms {
		for _, g := range m.groups {
			cmd := fmt.Sprintf("hackbench -l %d -g %d", m.n/g, g)
			res := gen(t, cmd, 1, topo(t, m.spec))
			for _, p := range ps {
				r := replay(t, res, m.spec, p, 1)
				t.Logf("%-16s %-26s %-14s time %.3f s  migrations %7d  involuntary %7d", m.spec, cmd, p.Name(), r.TimeS, r.Migrations, r.InvoluntarySwaps)
				if r.TimeS <= 0 {
					t.Errorf("%s under %s: no completion time", cmd, p.Name())
				}
			}
		}
	}
}
