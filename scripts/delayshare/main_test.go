package main

import (
	"strings"
	"testing"
)

// TestRun: the trace's shares from its schedstats, the replay's summed
// over the seeds (here 10 blocks, 2 kept, 1 requeued a seed: 20.0 % and
// 10.0 % of 20 over two), per trace and per workload; a 6.1 trace has
// none to read.
func TestRun(t *testing.T) {
	const v612 = "../../fixtures/kernels/crosskernel/v6.12/guest-M-1s1c2t/r1/messaging.perf.data.gz"
	const v61 = "../../fixtures/kernels/crosskernel/v6.1/guest-M-1s1c2t/r1/messaging.perf.data.gz"
	var b strings.Builder
	calls := 0
	err := run(&b, []string{v612, v61}, []int{0, 1}, func(path string, seed int) (counts, error) {
		calls++
		return counts{Blocks: 10, Delayed: 2, Requeued: 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// The trace's own: 1,430 blocks, 230 dequeued at a later pick and 189
	// requeued (TestDelayedDequeuesFalseAlarms reads the same file).
	for _, want := range []string{
		"trace:   29.3 % kept (13.2 % requeued) of 1430",
		"replay:  20.0 % kept (10.0 % requeued) of 20 (2 seeds)",
		v61 + ": no delayed dequeue to read",
		"messaging      trace  29.3 % kept (13.2 % requeued) of 1430 | replay  20.0 % kept (10.0 % requeued) of 20",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if calls != 2 {
		t.Errorf("%d replays, want 2 (the 6.1 trace is not replayed)", calls)
	}
}
