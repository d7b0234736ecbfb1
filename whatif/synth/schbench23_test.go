package synth

import (
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/whatif"
)

// Hand-worked structure of the 2023 rewrite on the ideal machine. Costs:
// syscall 1 us, wakeup 2 us, thread start 5 us, pthread_create 15 us;
// -n 2 over -F 6 KiB: three 16x16 matrices (6144/3/8 = 256 elements),
// 2 x 16³ = 8192 multiply-adds at 1 ns = 8.192 us of work a request.
//
// Post/wake loop (-t 1): main forks the message thread at 15 us; it
// creates the worker (released at 15+5+15 = 35 us) and is at its loop at
// 36 us, finds no one, blocks at 38 us. The worker starts (5 us), posts
// at 41 us (waking the message thread) and waits. The message thread
// runs at 41 us, splices at 42, wakes the worker at 42+1+2 = 45 us; the
// worker samples its latency and enters usleep(100) (2 us), runs again
// at 147 us, works 8.192 us and posts at 147+8.192+1 = 156.192 us. A
// request therefore takes 115.192 us from post to post: posts at
// 41 + 115.192k us. Request k is run while its wakeup (post + 4 us) is
// before 1 s: k = 0..8680 (8681 requests); the post after the last is
// past 1 s, so the worker leaves instead. Activations: worker 1 + 2 x
// 8681, message thread 1 + 8681, main 2 (start, 1 s); edges: 2 forks +
// 8681 posts + 8681 wakeups.
//
// -R 10 (-t 1, -r 2): the message thread queues 10 requests 0.2 us apart
// from 36 us while the worker is still starting (it looks at 41 us):
// no wakeup; the worker takes all 10 and runs them (10 usleeps: 10
// timer activations), then finds none and waits. At 1 s + 36 us the
// first request wakes it (the only wakeup), the other 9 queue while it
// works; it runs 1, then 9, then waits. The message thread sleeps out
// each second: activations at 15 us, 1 s + 36 us and 2 s + 36 us (after
// -r: it sees the stop there). Worker: 1 + 10 + 1 + 10 activations.
func TestSchbench2023Shape(t *testing.T) {
	tp := topo(t, "hikey")
	cases := []struct {
		cmd                string
		tasks, acts, edges int64
		samplesMin         int64 // replayed wakeup latency samples, at least
		check              func(t *testing.T, w *whatif.Workload)
	}{
		{"schbench --version 2023 -m 1 -t 1 -s 100 -n 2 -F 6 -r 1", 3, 2 + (1 + 8681) + (1 + 2*8681), 2 + 2*8681, 8000, func(t *testing.T, w *whatif.Workload) {
			msg, wk := w.Tasks[1], w.Tasks[2]
			if msg.Comm != "schbench-msg" || wk.Comm != "schbench-worker" {
				t.Errorf("comms %q %q", msg.Comm, wk.Comm)
			}
			want := []whatif.Activation{
				{DemandNS: 7000, Cause: whatif.CauseFork, ReleaseNS: 35000},
				{DemandNS: 2000, Cause: whatif.CauseWake, ReleaseNS: 45000, SleepNS: 4000},
				{DemandNS: 10192, Cause: whatif.CauseArrival, ReleaseNS: 147000, SleepNS: 100000},
			}
			for i, a := range want {
				g := wk.Activations[i]
				if g.DemandNS != a.DemandNS || g.Cause != a.Cause || g.ReleaseNS != a.ReleaseNS || g.SleepNS != a.SleepNS {
					t.Errorf("worker activation %d: %+v, want %+v", i, g, a)
				}
			}
			if a := msg.Activations[0]; a.ReleaseNS != 15000 || a.DemandNS != 23000 {
				t.Errorf("message thread start: %+v", a)
			}
			if a := msg.Activations[1]; a.ReleaseNS != 41000 || a.DemandNS != 5000 || a.Cause != whatif.CauseWake {
				t.Errorf("message thread first wakeup: %+v", a)
			}
			if a := msg.Activations[2]; a.ReleaseNS != 156192 {
				t.Errorf("second post at %d, want 156192", a.ReleaseNS)
			}
			if last := wk.Activations[len(wk.Activations)-1]; last.End != whatif.EndExit {
				t.Errorf("the worker does not leave at the end: %+v", last)
			}
		}},
		{"schbench --version 2023 -m 1 -t 1 -s 100 -n 2 -F 6 -r 2 -R 10", 3, 3 + 3 + 22, 3, 1, func(t *testing.T, w *whatif.Workload) {
			msg := w.Tasks[1]
			var rel []int64
			for _, a := range msg.Activations {
				rel = append(rel, a.ReleaseNS)
			}
			if !reflect.DeepEqual(rel, []int64{15000, 1e9 + 36000, 2e9 + 36000}) {
				t.Errorf("message thread releases %v", rel)
			}
			wakes := 0
			for _, e := range w.Edges {
				if e.Kind == whatif.EdgeWake {
					wakes++
					if e.TimeNS != 1e9+36000+200 {
						t.Errorf("wakeup at %d, want 1 s + 36.2 us", e.TimeNS)
					}
				}
			}
			if wakes != 1 {
				t.Errorf("%d wakeups, want 1", wakes)
			}
		}},
		// -t defaults to the CPUs per message thread (hikey: 8).
		{"schbench --version 2023 -m 2 -r 1", 1 + 2 + 8, -1, -1, 100, nil},
	}
	pol, _ := whatif.LookupPolicy("v6.1")
	for _, c := range cases {
		res := gen(t, c.cmd, 1, tp)
		if res.Tasks != c.tasks || (c.acts >= 0 && res.Activations != c.acts) || (c.edges >= 0 && res.Edges != c.edges) {
			t.Errorf("%s: %d tasks %d activations %d edges, want %d %d %d", c.cmd, res.Tasks, res.Activations, res.Edges, c.tasks, c.acts, c.edges)
		}
		if c.check != nil {
			c.check(t, res.Workload)
		}
		again := gen(t, c.cmd, 2, tp)
		if !reflect.DeepEqual(res.Workload, again.Workload) {
			t.Errorf("%s: not deterministic", c.cmd)
		}
		acyclic(t, c.cmd, res.Workload)
		cfg := whatif.DefaultConfig(pol)
		cfg.Topology = tp
		rep, _, err := Run(res, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.cmd, err)
		}
		if rep.Samples < c.samplesMin {
			t.Errorf("%s: %d latency samples, want at least %d", c.cmd, rep.Samples, c.samplesMin)
		}
	}
}

// The two versions' flags do not mix, and the rewrite's limits are
// refused with the reason.
func TestSchbench2023Flags(t *testing.T) {
	cases := []struct{ cmd, want string }{
		{"schbench --version 2023 -c 100", "belong to the 2020 version"},
		{"schbench -n 3", "flags of the 2023 rewrite"},
		{"schbench -F 64", "flags of the 2023 rewrite"},
		{"schbench --version 2023 -A 80", "auto-RPS"},
		{"schbench --version 2024", "want 2020 or 2023"},
		{"schbench --version 2023 -R -1", "-R -1"},
		{"schbench --version 2023 -r 0", "forever"},
		{"schbench --version 2023 -s 0 -n 0 -r 1", ""},
		{"schbench -m 3 --version=2023 -t 2", ""},
	}
	for _, c := range cases {
		g, err := ParseCommand(strings.Fields(c.cmd))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.cmd, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.cmd, err, c.want)
		}
		_ = g
	}
	// --version applies first: -m given before it is kept.
	g, _ := ParseCommand(strings.Fields("schbench -m 3 --version 2023 -t 2"))
	if o := g.(*Schbench); o.MessageThreads != 3 || o.Workers != 2 || o.SleepUS != 100 || o.Version != 2023 {
		t.Errorf("parsed %+v", o)
	}
}
