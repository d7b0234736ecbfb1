package whatif

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// --validate's table says when the replay's order departed from the
// trace's: more than a quarter of the wake edges found their wakee still
// running or queued (edges_pending), so those were no wakeups in the
// replay. 30 of 100 is reported; 25 of 100 is not.
func TestFidelityTableReportsPendingEdges(t *testing.T) {
	for _, c := range []struct {
		pending int64
		want    bool
	}{{30, true}, {25, false}} {
		m := &Metrics{}
		f := Compare("v6.1", m, m, &Stats{EdgesFired: 100, EdgesPending: c.pending})
		var b strings.Builder
		if err := f.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(b.String(), fmt.Sprintf("replay order: %d of the 100 wake edges", c.pending))
		if got != c.want {
			t.Errorf("%d pending of 100: line shown %v, want %v\n%s", c.pending, got, c.want, b.String())
		}
	}
}

// --validate's table says when the trace shows no wakeup at all (LISA's
// rt-app example records sched_switch alone): its latency goals compare
// two empty distributions, so they are marked not compared (neither met
// nor missed) in the JSON and the table; the idle goal is compared.
func TestFidelityTableReportsNoWakeups(t *testing.T) {
	for _, c := range []struct {
		observed int64
		want     bool
	}{{0, true}, {1, false}} {
		obs := &Metrics{WakeupCount: c.observed, IdleNS: 100, CPUTimeNS: 900}
		sim := &Metrics{WakeupCount: 790, IdleNS: 100, CPUTimeNS: 900}
		if c.observed > 0 {
			obs.WakeupP50NS, obs.WakeupP95NS, obs.WakeupP99NS = 1000, 1000, 1000
			sim.WakeupP50NS, sim.WakeupP95NS, sim.WakeupP99NS = 1000, 1000, 1000
		}
		f := Compare("latest", obs, sim, nil)
		got := tableLine(t, f, "trace: no wakeup followed by its switch-in") != ""
		if got != c.want {
			t.Errorf("%d observed wakeups: line shown %v, want %v", c.observed, got, c.want)
		}
		for _, g := range f.Goals {
			latency := strings.HasPrefix(g.Metric, "wakeup_")
			if want := c.want && latency; g.NotCompared != want {
				t.Errorf("%d observed wakeups, %s: not compared %v, want %v", c.observed, g.Metric, g.NotCompared, want)
			}
			if want := !(c.want && latency); g.Met != want {
				t.Errorf("%d observed wakeups, %s: met %v, want %v", c.observed, g.Metric, g.Met, want)
			}
			line := tableLine(t, f, "goal "+g.Metric)
			if want := g.NotCompared; strings.HasSuffix(line, "NOT COMPARED (no wakeups in the trace)") != want {
				t.Errorf("%d observed wakeups: table line %q, want not compared %v", c.observed, line, want)
			}
		}
	}
}

// tableLine is the line of f's table that starts with prefix ("" when
// there is none; the last when several do).
func tableLine(t *testing.T, f *Fidelity, prefix string) string {
	t.Helper()
	var b strings.Builder
	if err := f.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, prefix) {
			got = l
		}
	}
	return got
}

// statsLine is the line of --validate's table starting with prefix for
// replay statistics st ("" when there is none).
func statsLine(t *testing.T, st Stats, prefix string) string {
	t.Helper()
	m := &Metrics{}
	f := Compare("v6.1", m, m, nil)
	f.Stats = &st
	return tableLine(t, f, prefix)
}

// --validate's table reports the work the recorded exits bounded: tasks
// cut at their exit (the stranded ones too) with the demand cut, and the
// spinners that ran on to it; nothing without exit deadlines.
func TestFidelityTableReportsExitDeadlines(t *testing.T) {
	m := &Metrics{}
	for _, c := range []struct {
		st   Stats
		want string
	}{
		{Stats{DeadlineCuts: 3, StrandedCuts: 1, DeadlineCutNS: 2500000, RunOnTasks: 2, RunOnNS: 7300000},
			"exit deadlines: 4 tasks stopped at their recorded exit (2.5 ms of demand cut), 2 spinners ran on to it (7.3 ms past their demand)"},
		{Stats{}, ""},
	} {
		if got := tableLine(t, Compare("v6.1", m, m, &c.st), "exit deadlines:"); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// The note on remote wakeup preemptions at the CPU's first switch
// (FIDELITY.md rounds 32, 84, 147): printed on a trace with host stalls
// when the trace's waited at least 4 times and 1 ms longer (p50) than the
// replay's, each with 20 or more; hand-fed figures of guest-B hackbench's
// size (184 at 3.616 ms against 183 at 0.514 ms).
func TestFidelityTableRemotePreemptNote(t *testing.T) {
	const key = "other_busy_cpu.preempt.first"
	want := "remote wakeup preemptions at the CPU's first switch: the trace's waited 3.616 ms (p50 of 184), the replay's 0.514 ms (of 183): the host ran the preempted vCPU late more often than the replay's host model has it (FIDELITY.md rounds 32 and 84)"
	for _, c := range []struct {
		name     string
		stalls   int
		obs, sim PlaceStats
		want     string
	}{
		{"guest", 175, PlaceStats{Count: 184, P50NS: 3616000}, PlaceStats{Count: 183, P50NS: 514000}, want},
		{"no host stalls", 0, PlaceStats{Count: 184, P50NS: 3616000}, PlaceStats{Count: 183, P50NS: 514000}, ""},
		{"under 4 times", 175, PlaceStats{Count: 184, P50NS: 3616000}, PlaceStats{Count: 183, P50NS: 905000}, ""},
		{"under 1 ms apart", 175, PlaceStats{Count: 184, P50NS: 900000}, PlaceStats{Count: 183, P50NS: 100000}, ""},
		{"too few", 175, PlaceStats{Count: 19, P50NS: 3616000}, PlaceStats{Count: 183, P50NS: 514000}, ""},
	} {
		obs := &Metrics{WakeupByPlace: map[string]PlaceStats{key: c.obs}}
		sim := &Metrics{WakeupByPlace: map[string]PlaceStats{key: c.sim}}
		f := Compare("v6.1", obs, sim, nil)
		f.HostStalls = c.stalls
		if got := tableLine(t, f, "remote wakeup preemptions at"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// --validate names the switch charge's pools when the replay used them
// (the caller sets Fidelity.SwitchCharge only then), and the trace's long
// block charges when it has some; nothing otherwise.
func TestFidelityTableSwitchChargeNote(t *testing.T) {
	f := Compare("v6.12", &Metrics{}, &Metrics{}, nil)
	if got := tableLine(t, f, "trace: at "); got != "" {
		t.Errorf("without the charge: %q", got)
	}
	f.SwitchCharge = &SwitchChargeSummary{Switches: 1751, PreemptP50NS: 29606, BlockP50NS: 43984, BlockIRQP50NS: 44855}
	want := "trace: at 1751 switches the kernel charged the next task the run from the leaving task's last update (median 30 µs after a preemption, 44 µs after a block a task's wakeup ends, 45 µs after one an interrupt's does): replayed so (--set switch_charge=off: not)"
	if got := tableLine(t, f, "trace: at "); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := tableLine(t, f, "trace: at 3 blocks"); got != "" {
		t.Errorf("without long blocks: %q", got)
	}
	f.SwitchCharge.LongBlocks, f.SwitchCharge.LongNS = 3, 5700000
	want = "trace: at 3 blocks that run was a quarter tick or more (5.7 ms in all: a host stall, or a run on with the reschedule pending, between the task's last update and its switch), which the kernel charged to the task switched in: replayed so at those activations' ends (--set switch_charge=pools: drawn from the shorter ones)"
	if got := tableLine(t, f, "trace: at 3 blocks"); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// --validate's notes on the host model: none without their counts, else
// the counts and the time in ms.
func TestFidelityTableHostNotes(t *testing.T) {
	for _, c := range []struct {
		prefix string
		set    func(f *Fidelity)
		want   string
	}{
		{"host waits:", func(f *Fidelity) { f.Stats.BusyHostWaits, f.Stats.BusyHostWaitNS = 203, 512345678 },
			"host waits: 203 wakeup preemptions sent to another busy vCPU, outside its task's own host stalls, waited for a host core (512.3 ms in all; the task fired no wakeup meanwhile; --set busy_host_wait=off: not)"},
		{"host stalls shortened:", func(f *Fidelity) { f.Stats.HostStallsShortened, f.Stats.HostStallShortenedNS = 23, 99612345 },
			"host stalls shortened: 23 of the trace's host stalls came where the replay ran fewer vCPUs busy than the trace had then, and kept only the share the host's contention leaves (1 - H/busy): 99.6 ms of demand less (--set stall_contention=off: not)"},
		{"long switch charges:", func(f *Fidelity) { f.Stats.LongSwitchCharges, f.Stats.LongSwitchChargeNS = 7, 61292599 },
			"long switch charges: 7 of the replay's blocks came where the trace's had such a run, and charged the task switched in 61.3 ms of it (at most what the leaving task ran since its last update)"},
		{"trace: 105 wakeups were queued", func(f *Fidelity) { f.EnqueueAfterStall = 105 },
			"trace: 105 wakeups were queued only after a host stall of their waker inside try_to_wake_up (the stall between the waking and the enqueue's first record): queued after that stall in the replay too where it sends them to another CPU than the waker's, their latency counting from the waking (--set wake_stall=off: at once)"},
	} {
		if got := tableLine(t, Compare("v6.1", &Metrics{}, &Metrics{}, &Stats{}), c.prefix); got != "" {
			t.Errorf("%s without the count: %q", c.prefix, got)
		}
		f := Compare("v6.1", &Metrics{}, &Metrics{}, &Stats{})
		c.set(f)
		if got := tableLine(t, f, c.prefix); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
	}
}

// A schedule without sched_migrate_task cannot show migrations at a
// wakeup: its side of --validate prints "-" and its JSON has no key, not
// a 0 (a replay's output always writes the event). By hand: two CPUs, 10
// wakes 20 onto its own CPU and blocks; no migration record anywhere.
func TestValidateMigrationsAtWakeupUnknown(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(ms/2, 0, 0, "R", 10),
		nSwitch(ms/2, 1, 30, "S", 0),
		nWaking(1*ms, 0, 10, 20, 0),
		nSwitch(1*ms+100000, 0, 10, "S", 20),
	}}
	_, obs, err := ExtractAndMeasure(r, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if obs.MigrationsAtWakeup != nil {
		t.Fatalf("observed migrations at a wakeup %d, want unknown", *obs.MigrationsAtWakeup)
	}
	three := int64(3)
	f := Compare("v6.1", obs, &Metrics{MigrationsAtWakeup: &three}, nil)
	if got, want := strings.Join(strings.Fields(tableLine(t, f, "migrations_at_wakeup")), " "), "migrations_at_wakeup - 3"; got != want {
		t.Errorf("table line %q, want %q", got, want)
	}
	js, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "migrations_at_wakeup") {
		t.Errorf("observed JSON has the key: %s", js)
	}
}

// A trace of sched_wakeup without sched_waking (common ftrace setups)
// times its wakeups from sched_wakeup, as perf sched timehist does; the
// observed side of --validate saw none until round 66. By hand: CPU 0 runs
// 10, which wakes 20 at 1 ms and blocks at 1.1 ms, switching to 20 (100
// µs, on the waker's CPU); CPU 1 idles until 21's wakeup at 2 ms, runs it
// from 2.05 ms (50 µs, on an idle CPU). And on LISA's trace-cmd text
// example (Apache-2.0, in ../shared): 1,066 wakeups, p50 4 µs, p95 29 µs,
// p99 61 µs, max 397 µs, as a Python reader of the text counts them
// (first sched_wakeup since the task's last switch-out to its switch-in).
func TestObservedWakeupsFromSchedWakeup(t *testing.T) {
	wakeup := func(at int64, cpu, waker, wakee int32) timeline.Event {
		e := nWaking(at, cpu, waker, wakee, cpu)
		e.Kind, e.Name = timeline.SchedWakeup, "sched:sched_wakeup"
		return e
	}
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(ms/2, 0, 0, "R", 10),
		nSwitch(ms/2, 1, 30, "S", 0),
		wakeup(1*ms, 0, 10, 20),
		nSwitch(1*ms+100000, 0, 10, "S", 20),
		wakeup(2*ms, 1, 0, 21),
		nSwitch(2*ms+50000, 1, 0, "R", 21),
	}}
	_, obs, err := ExtractAndMeasure(r, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if obs.WakeupCount != 2 || obs.WakeupP50NS != 50000 || obs.WakeupMaxNS != 100000 {
		t.Errorf("observed %d wakeups, p50 %d, max %d ns; want 2, 50000, 100000", obs.WakeupCount, obs.WakeupP50NS, obs.WakeupMaxNS)
	}
	if p := obs.WakeupByPlace["waker_cpu"]; p.Count != 1 || p.P50NS != 100000 {
		t.Errorf("on the waker's CPU %+v, want one of 100 µs", p)
	}
	if p := obs.WakeupByPlace["idle_cpu"]; p.Count != 1 || p.P50NS != 50000 {
		t.Errorf("onto an idle CPU %+v, want one of 50 µs", p)
	}

	const lisa = "../../shared/fixtures/public/lisa/tests/assets/trace_txt/trace.txt"
	if _, err := os.Stat(lisa); err != nil {
		t.Skipf("%s: %v", lisa, err)
	}
	_, obs = extractFixture(t, lisa)
	if obs.WakeupCount != 1066 || obs.WakeupP50NS != 4000 || obs.WakeupP95NS != 29000 || obs.WakeupP99NS != 61000 || obs.WakeupMaxNS != 397000 {
		t.Errorf("%s: %d wakeups, p50/p95/p99/max %d/%d/%d/%d ns; want 1066, 4000/29000/61000/397000", lisa,
			obs.WakeupCount, obs.WakeupP50NS, obs.WakeupP95NS, obs.WakeupP99NS, obs.WakeupMaxNS)
	}
}

// The observed side measures a wakeup to its task's first switch-in
// (analysis.Options.FirstSwitchIn). On guest-P's second hogs holdout,
// perf (425) is woken at 21.528697955 on CPU 1, switched in on CPU 0 at
// 21.529015901 (317,946 ns), and switched in again on CPU 1 at
// 21.531306957, CPU 0's buffer having closed at 21.530390208 before its
// switch-out (perf script --ns). perf sched timehist would measure
// 2,609,002 ns, which was this recording's observed p95; with the first
// switch-in the p95 is the next wait down.
func TestObservedWakeupToFirstSwitchIn(t *testing.T) {
	const path = "../fixtures/kernels/holdout/guest-P-1s2c1t/r2/hogs.perf.data.gz"
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	_, obs := extractFixture(t, path)
	if obs.RepeatSwitchIns != 1 {
		t.Errorf("repeat switch-ins %d, want 1", obs.RepeatSwitchIns)
	}
	lat := obs.Latencies()
	if !slices.Contains(lat, 317946) || slices.Contains(lat, 2609002) {
		t.Errorf("perf's wakeup: 317946 ns among the latencies %v, 2609002 %v; want only the first", slices.Contains(lat, 317946), slices.Contains(lat, 2609002))
	}
	if obs.WakeupP95NS >= 2609002 {
		t.Errorf("observed p95 %d ns: still timehist's measure of perf's wakeup", obs.WakeupP95NS)
	}
	var b strings.Builder
	f := Compare("v6.1", obs, obs, &Stats{})
	if err := f.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "trace: 1 switch-ins of a task already switched in since its wakeup") {
		t.Errorf("table has no note on the repeat switch-in:\n%s", b.String())
	}
}

// Longest wakeups asked for on a schedule with none: the comparison still
// carries both lists, empty, so --validate --worst always answers; not
// asked for, it carries none.
func TestCompareWorstEmpty(t *testing.T) {
	for _, n := range []int{0, 5} {
		m := newMeasurer(nil, 1, true, n)
		mt, _, err := m.Finish()
		if err != nil {
			t.Fatal(err)
		}
		f := Compare("v6.1", mt, mt, nil)
		switch {
		case n == 0 && f.Worst != nil:
			t.Errorf("not asked for: worst %+v", f.Worst)
		case n > 0 && (f.Worst == nil || f.Worst.Observed == nil || len(f.Worst.Observed) != 0 || len(f.Worst.Simulated) != 0):
			t.Errorf("asked for, no wakeups: worst %+v, want two empty lists", f.Worst)
		}
	}
}

// The replay's percentiles with its missing wakeups counted as waits of
// 0, by hand: the trace has 10 wakeups, the replay 8 (1 to 8 ms) and 3
// merged edges, so 2 are missing (the smaller): 10 latencies, 0, 0, 1 ..
// 8 ms, whose nearest-rank p50 is the 5th (3 ms) and p95 and p99 the
// 10th (8 ms). With 1 merged edge 1 is missing: the p50 is the 5th of 9
// (4 ms, +1/3 against the trace's 3 ms), the p95 the 9th (8 ms). None
// without a merged edge, or when the replay has as many wakeups. Half of
// them missing, the p50 is the last of the zeros.
func TestMergedAsFast(t *testing.T) {
	obs := &Metrics{WakeupCount: 10, WakeupP50NS: 3 * ms, WakeupP95NS: 8 * ms, WakeupP99NS: 8 * ms}
	sim := &Metrics{WakeupCount: 8}
	for i := int64(1); i <= 8; i++ {
		sim.latencies = append(sim.latencies, i*ms)
	}
	for _, c := range []struct {
		pending, simCount int64
		want              *MergedAsFast
	}{
		{3, 8, &MergedAsFast{Missing: 2, P50NS: 3 * ms, P95NS: 8 * ms, P99NS: 8 * ms,
			RelError: map[string]float64{"wakeup_p50_ns": 0, "wakeup_p95_ns": 0, "wakeup_p99_ns": 0}}},
		{1, 8, &MergedAsFast{Missing: 1, P50NS: 4 * ms, P95NS: 8 * ms, P99NS: 8 * ms,
			RelError: map[string]float64{"wakeup_p50_ns": 0.3333, "wakeup_p95_ns": 0, "wakeup_p99_ns": 0}}},
		{0, 8, nil},
		{3, 10, nil},
	} {
		sim.WakeupCount = c.simCount
		got := mergedAsFast(obs, sim, &Stats{EdgesPending: c.pending})
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%d merged, replay %d wakeups: %+v, want %+v", c.pending, c.simCount, got, c.want)
		}
	}
	// Half missing (1 to 5 ms, 5 merged): the p50 is the 5th of 10, the
	// last of the zeros.
	half := &Metrics{WakeupCount: 5, latencies: sim.latencies[:5]}
	want5 := &MergedAsFast{Missing: 5, P50NS: 0, P95NS: 5 * ms, P99NS: 5 * ms,
		RelError: map[string]float64{"wakeup_p50_ns": -1, "wakeup_p95_ns": -0.375, "wakeup_p99_ns": -0.375}}
	if got := mergedAsFast(obs, half, &Stats{EdgesPending: 5}); !reflect.DeepEqual(got, want5) {
		t.Errorf("half missing: %+v, want %+v", got, want5)
	}
	sim.WakeupCount = 8
	f := Compare("v6.1", obs, sim, &Stats{EdgesPending: 3})
	want := "merged as fast: had the replay's 2 missing wakeups (the trace's count less its own, wake edges it merged into a run) each been the fastest, its p50, p95 and p99 would be 3.000, 8.000 and 8.000 ms (+0.0000, +0.0000, +0.0000): a bound on how much of a miss the merges make"
	if got := tableLine(t, f, "merged as fast:"); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
