package whatif

import (
	"fmt"
	"testing"
)

// perf record moves itself through every CPU at its start (and back at
// its end) by waking each CPU's stopper: the extraction turns those
// wakeups into EdgeMove edges with the destination the trace's
// sched_migrate_task gives. Expected from `perf script` on the
// fixtures: guest-P's perf (pid 326) goes 0 -> 1 at 9.545221 (its first
// switch on CPU 0 seen) and 1 -> 0 at 10.156912; guest-A's perf (pid
// 1098) 0 -> 1 -> ... -> 7 from 9.459014 (CPUs 1-7 not yet switched in
// the trace: its runs there are inferred from the migrations) and 7 -> 0
// at 9.964646, and perf-exec (pid 1099, later hackbench), exec'ing, 6 ->
// 3 at 9.463865 (sched_exec). Nothing else in these traces is moved by a
// stopper it woke.
func TestStopperMoveFixtures(t *testing.T) {
	for _, c := range []struct {
		path string
		want string
	}{
		{"../fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data", "[perf->1 perf->0]"},
		{"../fixtures/kernels/guest-A-2s2c2t-2numa/hackbench.perf.data", "[perf->1 perf->2 perf->3 perf->4 perf->5 perf->6 perf->7 perf->0 hackbench->3]"},
	} {
		w, _ := extractFixture(t, c.path)
		var got []string
		for _, e := range w.Edges {
			if e.Kind == EdgeMove {
				got = append(got, fmt.Sprintf("%s->%d", w.Tasks[e.Waker].Comm, e.Target))
			}
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s: moves %s, want %s", c.path, s, c.want)
		}
	}
}
