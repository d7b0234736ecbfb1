package main

import (
	"math"
	"testing"

	"github.com/schedreplay/replay/whatif"
)

// signedError by hand: a percentile's error is the JSON's rel_error; the
// idle error is (simulated idle − observed idle) / (observed idle +
// observed CPU time), with its sign, where the goal keeps only its size.
func TestSignedErrorByHand(t *testing.T) {
	r := &run{}
	f := &r.res.Fidelity
	f.RelError = map[string]float64{"wakeup_p50_ns": -0.25}
	f.Observed = map[string]any{"idle_ns": 100.0, "cpu_time_ns": 900.0}
	f.Simulated = map[string]any{"idle_ns": 70.0, "cpu_time_ns": 930.0}
	if got := signedError(r, goal{Metric: "wakeup_p50_ns", Value: 0.25}); got != -0.25 {
		t.Errorf("p50: %v, want -0.25", got)
	}
	// (70 − 100) / (100 + 900) = −0.03
	if got := signedError(r, goal{Metric: "idle_ns/total_cpu_time", Value: 0.03}); got != -0.03 {
		t.Errorf("idle: %v, want -0.03", got)
	}
	f.Observed = map[string]any{"idle_ns": 0.0, "cpu_time_ns": 0.0}
	if got := signedError(r, goal{Metric: "idle_ns/total_cpu_time"}); got != 0 {
		t.Errorf("idle of an empty trace: %v, want 0", got)
	}
}

// bandRows by hand: three runs of one recording, the trace's p50 band
// 48.0..52.0 %, the replays' 60/64/70 % below it (median 64) and 62/66/71
// % up to its top (median 66); two runs missed below the band (negative
// error), one met it.
func TestBandRowsByHand(t *testing.T) {
	var runs []*run
	for i, c := range []struct {
		below, upTo, err float64
		met              bool
	}{{60, 62, -0.3, false}, {70, 71, -0.5, false}, {64, 66, 0.1, true}} {
		r := &run{name: "guest-N/hackbench", seed: i}
		f := &r.res.Fidelity
		f.GoalBands = []whatif.GoalBand{{Metric: "wakeup_p50_ns", Permille: 500,
			ObservedBelow: 48, ObservedUpTo: 52, SimulatedBelow: c.below, SimulatedUpTo: c.upTo}}
		f.Goals = []goal{{Metric: "wakeup_p50_ns", Met: c.met}}
		f.RelError = map[string]float64{"wakeup_p50_ns": c.err}
		runs = append(runs, r)
	}
	got := bandRows(runs)
	want := `| guest-N/hackbench | 48.0..52.0 % \| 64.0..66.0 % (2/1/0) |`
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// recordingName by hand: a committed recording is GUEST/WORKLOAD; a
// repeat, holdout or affinity recording adds @rN to its guest's family, a
// run of one boot with the timer events @tN, this machine's stressors
// (stressors/rN, no committed first) @rN to theirs; Debian's 6.12 boots of a
// guest are a family of their own. The workload (-against's per-workload
// totals) is the family's last element.
func TestRecordingName(t *testing.T) {
	for path, want := range map[string][2]string{ // name, workload
		"fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data":                                {"guest-P-1s2c1t/hackbench", "hackbench"},
		"fixtures/kernels/repeats/guest-P-1s2c1t/r2/hackbench.perf.data.gz":                  {"guest-P-1s2c1t/hackbench@r2", "hackbench"},
		"fixtures/kernels/holdout/guest-B-1s4c2t/r1/pipe.perf.data.gz":                       {"guest-B-1s4c2t/pipe@r1", "pipe"},
		"fixtures/kernels/affinity/guest-Q-1s2c2t/r1/taskset-hogs.perf.data.gz":              {"guest-Q-1s2c2t/taskset-hogs@r1", "taskset-hogs"},
		"fixtures/kernels/v6.12/guest-P-1s2c1t/r3/schbench.perf.data.gz":                     {"guest-P-1s2c1t-v6.12/schbench@r3", "schbench"},
		"fixtures/kernels/crosskernel/v6.12/guest-N-2s1c1t-2numa/r2/pipe.perf.data.gz":       {"guest-N-2s1c1t-2numa-6.12-same-day/pipe@r2", "pipe"},
		"fixtures/kernels/crosskernel/v6.1/guest-M-1s1c2t/r1/hackbench.perf.data.gz":         {"guest-M-1s1c2t-6.1-same-day/hackbench@r1", "hackbench"},
		"fixtures/local-6.18/repeats/r2/stressng-mix.perf.data":                              {"local-6.18/stressng-mix@r2", "stressng-mix"},
		"fixtures/local-6.18/hackbench-g2-l100.perf.data":                                    {"local-6.18/hackbench-g2-l100", "hackbench-g2-l100"},
		"fixtures/local-6.18/stressors/r3/stressng-mq.perf.data":                             {"stressors/stressng-mq@r3", "stressng-mq"},
		"fixtures/kernels/idle-tick/guest-B-1s4c2t/schbench/schbench-3.perf.data.gz":         {"guest-B-1s4c2t/schbench@t3", "schbench"},
		"fixtures/kernels/idle-tick/guest-B-1s4c2t/stressng-mix/stressng-mix-2.perf.data.gz": {"guest-B-1s4c2t/stressng-mix@t2", "stressng-mix"},
	} {
		got := recordingName(path)
		if got != want[0] {
			t.Errorf("%s: %q, want %q", path, got, want[0])
		}
		if wl := workloadOf(got); wl != want[1] {
			t.Errorf("%s: workload %q, want %q", path, wl, want[1])
		}
	}
}

// biasRows by hand: one group, two recordings of three seeds each, p50
// only (limit 0.15). Recording a: errors −0.3, +0.1, −0.2 (median −0.2:
// the median misses; one run of three meets). Recording b: +0.1, +0.2,
// +0.12 (median +0.12: met; two of three runs meet). So p50: the median
// meets on 1 of 2 recordings, the runs' shares 1/3 + 2/3 = 1.0; the
// other goals have no runs (0 of 0).
func TestBiasRowsByHand(t *testing.T) {
	var runs []*run
	for _, rec := range []struct {
		name string
		errs []float64
	}{{"guest-N/hackbench", []float64{-0.3, 0.1, -0.2}}, {"guest-N/schbench", []float64{0.1, 0.2, 0.12}}} {
		for i, e := range rec.errs {
			r := &run{group: "6.1 2-vCPU", name: rec.name, seed: i}
			f := &r.res.Fidelity
			f.RelError = map[string]float64{"wakeup_p50_ns": e}
			abs := max(e, -e)
			f.Goals = []goal{{Metric: "wakeup_p50_ns", Limit: 0.15, Value: abs, Met: abs <= 0.15}}
			runs = append(runs, r)
		}
	}
	got := biasRows(runs)
	want := "6.1 2-vCPU           p50 1 of 2 (1.0), p95 0 of 0 (0.0), p99 0 of 0 (0.0), idle 0 of 0 (0.0)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// chanceVar by hand: 30 runs, 15 met before and 15 now: each build's
// count varies by 30 × ½ × ½ = 7.5, their difference by 15. 30 of 30
// before and 27 now: 0 + 30 × 0.9 × 0.1 = 2.7. No runs: 0.
func TestChanceVarByHand(t *testing.T) {
	for _, c := range []struct {
		before, now, n int
		want           float64
	}{{15, 15, 30, 15}, {30, 27, 30, 2.7}, {0, 0, 0, 0}} {
		if got := chanceVar(c.before, c.now, c.n); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("chanceVar(%d, %d, %d) = %v, want %v", c.before, c.now, c.n, got, c.want)
		}
	}
}

// A latency goal on a trace with no observed wakeup compares nothing:
// vacuous, left out of the counts; the idle goal never is. --validate's
// JSON marks it not_compared; JSON kept from before it did is read by
// its wakeup count.
func TestVacuousGoals(t *testing.T) {
	for _, c := range []struct {
		wakeups     float64
		metric      string
		notCompared bool
		want        bool
	}{
		{0, "wakeup_p50_ns", false, true},
		{0, "wakeup_p99_ns", false, true},
		{0, "idle_ns/total_cpu_time", false, false},
		{12, "wakeup_p50_ns", false, false},
		{0, "wakeup_p95_ns", true, true},
	} {
		r := &run{}
		r.res.Fidelity.Observed = map[string]any{"wakeup_count": c.wakeups}
		if got := r.vacuous(goal{Metric: c.metric, NotCompared: c.notCompared}); got != c.want {
			t.Errorf("%v wakeups, %s: vacuous %v, want %v", c.wakeups, c.metric, got, c.want)
		}
	}
}

// placeMove by hand: round 84's first version moved guest-D r4's waker's
// CPU p95 from 0.33 to 3.28 ms against the trace's 0.62 (away); a move
// from 3.28 back to 0.33 is toward it; under 1.5 times or 0.5 ms apart,
// or without seeds in common, no row.
func TestPlaceMoveByHand(t *testing.T) {
	const ms = 1e6
	for _, c := range []struct {
		name          string
		trace         float64
		before, after []float64
		want          string
	}{
		{"away", 0.62 * ms, []float64{0.33 * ms, 0.30 * ms, 0.40 * ms}, []float64{3.28 * ms, 3.0 * ms, 3.5 * ms}, "  r4                                       waker's CPU      p95 0.330 -> 3.280 ms (3 seeds)  AWAY from the trace's 0.620 ms"},
		{"toward", 0.62 * ms, []float64{3.28 * ms}, []float64{0.33 * ms}, "  r4                                       waker's CPU      p95 3.280 -> 0.330 ms (1 seeds)  toward the trace's 0.620 ms"},
		{"under 1.5 times", 0.62 * ms, []float64{2 * ms}, []float64{2.9 * ms}, ""},
		{"under 0.5 ms", 0.62 * ms, []float64{0.2 * ms}, []float64{0.6 * ms}, ""},
		{"no seeds", 0.62 * ms, nil, nil, ""},
	} {
		got, ok := placeMove("r4", "waker's CPU", c.trace, true, c.before, c.after)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q %v, want %q", c.name, got, ok, c.want)
		}
	}
}

// choiceRows by hand: two seeds of guest-P's hackbench (the replay's
// medians: kept (10+20)/2 = 15, pulled 5) and one of guest-M's, in one
// group; a recording whose trace has no sched_waking is left out.
func TestChoiceRowsByHand(t *testing.T) {
	wp := func(kept, pulled, elsewhere, stayed, moved float64) map[string]any {
		return map[string]any{"wake_choices": map[string]any{"kept": kept, "pulled": pulled, "elsewhere": elsewhere, "stayed": stayed, "moved": moved}}
	}
	mk := func(name string, obs, sim map[string]any) *run {
		r := &run{group: "6.1 2-vCPU", name: name}
		r.res.Fidelity.Observed, r.res.Fidelity.Simulated = obs, sim
		return r
	}
	runs := []*run{
		mk("guest-P-1s2c1t/hackbench", wp(30, 4, 0, 50, 1), wp(10, 5, 0, 40, 0)),
		mk("guest-P-1s2c1t/hackbench", wp(30, 4, 0, 50, 1), wp(20, 5, 0, 60, 2)),
		mk("guest-M-1s1c2t/hackbench@r2", wp(8, 2, 1, 9, 0), wp(4, 4, 0, 10, 0)),
		mk("guest-N-2s1c1t-2numa/hackbench", map[string]any{}, wp(1, 1, 1, 1, 1)),
	}
	fams, recs := choiceRows(runs)
	if len(recs) != 2 || recs[0].sim != [5]float64{15, 5, 0, 50, 1} || recs[1].obs != [5]float64{8, 2, 1, 9, 0} {
		t.Fatalf("recordings %+v", recs)
	}
	want := choiceRow{name: "6.1 2-vCPU hackbench", obs: [5]float64{38, 6, 1, 59, 1}, sim: [5]float64{19, 9, 0, 60, 1}, recordings: 2}
	if len(fams) != 1 || fams[0] != want {
		t.Errorf("families %+v, want %+v", fams, want)
	}
	if got, want := choiceCell(want.obs), "kept 38 of 45 (84 %), pulled 6, stayed 59, moved 1"; got != want {
		t.Errorf("cell %q, want %q", got, want)
	}
}

// mergedRows by hand: three runs of one group. The first misses p95
// (+0.40) with a bound of +0.10 (within the goal's 0.15) and misses p50
// with no bound in its JSON; the second misses p95 with a bound of +0.30
// (not within); the third meets every goal. p95: 2 missed, 1 within the
// bound; p50: 1 missed, 0; p99: none.
func TestMergedRowsByHand(t *testing.T) {
	mk := func(seed int, p50, p95 float64, bound map[string]float64) *run {
		r := &run{group: "6.1 shared", name: "guest-D/stressng-mix", seed: seed}
		f := &r.res.Fidelity
		f.Observed = map[string]any{"wakeup_count": 100.0}
		f.Goals = []goal{
			{Metric: "wakeup_p50_ns", Limit: 0.15, Value: p50, Met: p50 <= 0.15},
			{Metric: "wakeup_p95_ns", Limit: 0.15, Value: p95, Met: p95 <= 0.15},
			{Metric: "wakeup_p99_ns", Limit: 0.25, Value: 0.1, Met: true},
		}
		if bound != nil {
			f.MergedAsFast = &whatif.MergedAsFast{Missing: 5, RelError: bound}
		}
		return r
	}
	runs := []*run{
		mk(0, 0.2, 0.4, map[string]float64{"wakeup_p95_ns": 0.1}),
		mk(1, 0.1, 0.4, map[string]float64{"wakeup_p50_ns": 0.05, "wakeup_p95_ns": 0.3}),
		mk(2, 0.1, 0.1, map[string]float64{"wakeup_p95_ns": 0.01}),
	}
	got := mergedRows(runs)
	want := "6.1 shared           p50 1 missed, 0 within the bound, p95 2 missed, 1 within the bound, p99 0 missed, 0 within the bound"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// kindOf by hand: each group a family can start with sums under its own
// kind of guest, and a group it does not know under one of its own, not
// another's (the vfork and taskset families were once summed with the
// eight-vCPU guests).
func TestKindOf(t *testing.T) {
	for group, want := range map[string]string{
		"6.1 committed":          "the eight-vCPU guests",
		"6.1 shared":             "the eight-vCPU guests",
		"6.1 repeats":            "the eight-vCPU guests",
		"6.1 2-vCPU":             "the two-vCPU guests",
		"6.18":                   "this machine's 6.18",
		"6.18 workloads":         "this machine's later 6.18 builds",
		"6.18 stressors repeats": "this machine's stress-ng stressors",
		"6.1 affinity":           "the four-vCPU guest under taskset",
		"6.12":                   "Debian's 6.12 (two vCPUs)",
		"6.12 same-day":          "6.12 beside 6.1 on one day",
		"a new group":            "group a new group",
	} {
		if got := kindOf(group); got != want {
			t.Errorf("kindOf(%q) = %q, want %q", group, got, want)
		}
	}
}
