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
