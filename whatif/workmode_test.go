package whatif

import (
	"strings"
	"testing"
)

func TestTimeBounded(t *testing.T) {
	const s = int64(1e9)
	for _, tc := range []struct {
		cmd   string
		want  string // "" for not bounded
		bound int64  // its length, 0 if not read
	}{
		// The recordings' own command lines (perf.data CMDLINE).
		{"/bin/perf sched record -o stressng-mix.perf.data -- stress-ng --cpu 4 --switch 2 --timeout 2s --metrics-brief", "stress-ng --timeout 2s", 2 * s},
		{"/bin/perf sched record -o schbench.perf.data -- schbench -m 2 -t 4 -r 3", "schbench -r 3", 3 * s},
		{"/bin/perf sched record -o hackbench.perf.data -- hackbench -g 2 -l 15", "", 0},
		// Option spellings.
		{"perf sched record -- stress-ng --cpu 2 -t 10", "stress-ng -t 10", 10 * s},
		{"perf sched record -- stress-ng --cpu 2 -t10s", "stress-ng -t 10s", 10 * s},
		{"perf sched record -- stress-ng --cpu 2 --timeout=5m", "stress-ng --timeout 5m", 300 * s},
		{"perf sched record -- stress-ng --cpu 2 --timeout 1h", "stress-ng --timeout 1h", 3600 * s},
		{"perf sched record -- stress-ng --cpu 2 --timeout 2d", "stress-ng --timeout 2d", 2 * 86400 * s},
		{"perf sched record -- /usr/bin/stress-ng --cpu 2 --timeout 0", "", 0}, // 0: no timeout
		{"perf sched record -- stress-ng --cpu 2", "", 0},                      // runs until killed
		{"perf sched record -- stress-ng --cpu 2 -t soon", "stress-ng -t soon", 0},
		{"perf sched record -- schbench -m 2", "schbench (its default 30 s runtime)", 30 * s},
		{"perf sched record -- schbench --runtime=60", "schbench --runtime 60", 60 * s},
		{"perf sched record -- cyclictest -m -D 30", "cyclictest -D 30", 30 * s},
		{"perf sched record -- cyclictest -m -D 2m", "cyclictest -D 2m", 120 * s},
		{"perf sched record -- cyclictest -m", "", 0},
		{"perf sched record -- timeout 10 ./server", "timeout 10 ./server", 10 * s},
		{"perf sched record -- timeout 2.5 ./server", "timeout 2.5 ./server", 2500 * 1000000},
		{"perf sched record -a sleep 5", "", 0},
		{"", "", 0},
	} {
		why, bound, ok := TimeBounded(strings.Fields(tc.cmd))
		if ok != (tc.want != "") || why != tc.want || bound != tc.bound {
			t.Errorf("%q: got %q, %d ns, %v; want %q, %d ns", tc.cmd, why, bound, ok, tc.want, tc.bound)
		}
	}
}

// stress-ng's fork stressor (fixtures/local-6.18/workloads, README): its
// children exit on their own, about 2,600 of them within the 1 s run, and
// must not be cut at their recorded exits. perf script: the first fork
// (stress-ng 28645 forking its first stressor: sched_process_fork at
// 86038.754283 s, its sched_wakeup_new, the fork edge's time, at
// 86038.754291), so the deadline fired from 86039.754291 s; seven tasks
// switch out dead from then on (two children, the two stressors' last
// two, the stressors, their parent). A replay cuts only those (and
// little of their work); cutting every exit, it cut over 100 ms of the
// children's work on every seed tried.
func TestExitDeadlinesOnForkedChildren(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/local-6.18/workloads/stressng-fork.perf.data")
	from := ExitDeadlineFrom(w)
	if want := int64(86039754291000); from < want || from >= want+1000 {
		t.Fatalf("deadline from %d ns, want %d", from, want)
	}
	after := 0
	for i := range w.Tasks {
		if e := w.Tasks[i].ExitNS; e > 0 && e >= from {
			after++
		}
	}
	if after != 7 {
		t.Errorf("%d tasks exit from the deadline on, want 7", after)
	}
	p, _ := LookupPolicy("latest")
	cfg := DefaultConfig(p)
	cfg.SetWork(w, true)
	res, err := Replay(w, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Stats; st.DeadlineCuts > 7 || st.DeadlineCutNS > 50e6 {
		t.Errorf("%d deadline cuts, %d ns cut; want at most 7 and 50 ms", st.DeadlineCuts, st.DeadlineCutNS)
	}
	cfg.ExitDeadlineFromNS = 0
	if res, err = Replay(w, cfg, nil); err != nil {
		t.Fatal(err)
	} else if res.Stats.DeadlineCutNS < 100e6 {
		t.Errorf("every exit a deadline: %d ns cut, want the failure this guards against (over 100 ms)", res.Stats.DeadlineCutNS)
	}
}
