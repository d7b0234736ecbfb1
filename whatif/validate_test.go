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
		var b strings.Builder
		if err := Compare("v6.1", m, m, &c.st).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, "exit deadlines:") {
				got = l
			}
		}
		if got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
