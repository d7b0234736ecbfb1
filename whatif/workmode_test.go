package whatif

import (
	"strings"
	"testing"
)

func TestTimeBounded(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string // "" for not bounded
	}{
		// The recordings' own command lines (perf.data CMDLINE).
		{"/bin/perf sched record -o stressng-mix.perf.data -- stress-ng --cpu 4 --switch 2 --timeout 2s --metrics-brief", "stress-ng --timeout 2s"},
		{"/bin/perf sched record -o schbench.perf.data -- schbench -m 2 -t 4 -r 3", "schbench -r 3"},
		{"/bin/perf sched record -o hackbench.perf.data -- hackbench -g 2 -l 15", ""},
		// Option spellings.
		{"perf sched record -- stress-ng --cpu 2 -t 10", "stress-ng -t 10"},
		{"perf sched record -- stress-ng --cpu 2 -t10s", "stress-ng -t 10s"},
		{"perf sched record -- stress-ng --cpu 2 --timeout=5m", "stress-ng --timeout 5m"},
		{"perf sched record -- /usr/bin/stress-ng --cpu 2 --timeout 0", ""}, // 0: no timeout
		{"perf sched record -- stress-ng --cpu 2", ""},                      // runs until killed
		{"perf sched record -- schbench -m 2", "schbench (its default 30 s runtime)"},
		{"perf sched record -- schbench --runtime=60", "schbench --runtime 60"},
		{"perf sched record -- cyclictest -m -D 30", "cyclictest -D 30"},
		{"perf sched record -- cyclictest -m", ""},
		{"perf sched record -- timeout 10 ./server", "timeout 10 ./server"},
		{"perf sched record -a sleep 5", ""},
		{"", ""},
	} {
		why, ok := TimeBounded(strings.Fields(tc.cmd))
		if ok != (tc.want != "") || why != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.cmd, why, ok, tc.want)
		}
	}
}
