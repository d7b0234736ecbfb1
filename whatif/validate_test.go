package whatif

import (
	"fmt"
	"strings"
	"testing"
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
// rt-app example records sched_switch alone): its latency goals are met
// by two empty distributions, which the table must not leave unsaid.
func TestFidelityTableReportsNoWakeups(t *testing.T) {
	for _, c := range []struct {
		observed int64
		want     bool
	}{{0, true}, {1, false}} {
		f := Compare("latest", &Metrics{WakeupCount: c.observed}, &Metrics{WakeupCount: 790}, nil)
		got := tableLine(t, f, "trace: no wakeup followed by its switch-in") != ""
		if got != c.want {
			t.Errorf("%d observed wakeups: line shown %v, want %v", c.observed, got, c.want)
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

// The note on remote wakeup preemptions (FIDELITY.md round 32): printed on
// a trace with host stalls when the trace's waited at least 4 times and
// 1 ms longer (p50) than the replay's, each with 20 or more; guest-B
// hackbench's seed-0 figures (184 at 3.616 ms against 183 at 0.514 ms).
func TestFidelityTableRemotePreemptNote(t *testing.T) {
	const key = "other_busy_cpu.preempt"
	want := "remote wakeup preemptions: the trace's waited 3.616 ms (p50 of 184), the replay's 0.514 ms (of 183): the host ran the preempted vCPU late, which the replay models only through the running task's own host stalls (FIDELITY.md round 32)"
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
		if got := tableLine(t, f, "remote wakeup preemptions:"); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// --validate names the switch charge's pools when the replay used them
// (the caller sets Fidelity.SwitchCharge only then), and says nothing
// otherwise.
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
}
