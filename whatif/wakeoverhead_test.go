package whatif

import (
	"fmt"
	"testing"
)

// A task's wake overhead is the lower median of the demands of its
// activations started by a wakeup, and 0 with fewer than eight of them
// (one activation's work would stand for it).
func TestWakeOverheadOf(t *testing.T) {
	wake := func(d ...int64) []Activation {
		var a []Activation
		for _, x := range d {
			a = append(a, Activation{DemandNS: x, Cause: CauseWake})
		}
		return a
	}
	for _, c := range []struct {
		name string
		acts []Activation
		want int64
	}{
		{"none", nil, 0},
		{"seven", wake(1, 2, 3, 4, 5, 6, 7), 0},
		{"eight: lower median", wake(8, 1, 7, 2, 6, 3, 5, 4), 4},
		{"nine", wake(9, 1, 8, 2, 7, 3, 6, 4, 5), 5},
		{"start and arrivals left out", append([]Activation{{DemandNS: 100, Cause: CauseStart}, {DemandNS: 100, Cause: CauseArrival}}, wake(1, 1, 1, 1, 1, 1, 1, 3)...), 1},
		{"start and arrivals do not count", append([]Activation{{DemandNS: 100, Cause: CauseStart}, {DemandNS: 100, Cause: CauseArrival}}, wake(1, 1, 1, 1, 1, 1, 1)...), 0},
	} {
		if got := wakeOverheadOf(&Task{Activations: c.acts}); got != c.want {
			t.Errorf("%s: wake overhead %d, want %d", c.name, got, c.want)
		}
	}
}

// A continued activation starts at its task's wake overhead, never past
// its own demand, its first wakeup or its first host stall; nothing with
// the setting off or without an overhead.
func TestSkipWakeOverhead(t *testing.T) {
	for _, c := range []struct {
		name             string
		skip             bool
		overhead, demand int64
		edgeAt, stallAt  int64 // -1: none
		want             int64
	}{
		{"overhead", true, 3, 10, -1, -1, 3},
		{"off", false, 3, 10, -1, -1, 0},
		{"no overhead", true, 0, 10, -1, -1, 0},
		{"whole demand", true, 3, 2, -1, -1, 2},
		{"first wakeup", true, 3, 10, 1, -1, 1},
		{"wakeup at the start", true, 3, 10, 0, -1, 0},
		{"first host stall", true, 3, 10, 5, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Activation{DemandNS: c.demand, Cause: CauseWake}
			w := &Workload{}
			if c.edgeAt >= 0 {
				w.Edges = append(w.Edges, Edge{Kind: EdgeWake, OffsetNS: c.edgeAt})
				a.EdgeLo, a.EdgeHi = 0, 1
			}
			if c.stallAt >= 0 {
				w.HostStalls = append(w.HostStalls, HostStall{OffsetNS: c.stallAt, LenNS: 1})
				a.StallLo, a.StallHi = 0, 1
			}
			w.Tasks = []Task{{Activations: []Activation{a}}}
			s := &Sim{w: w, cfg: Config{SkipWakeOverhead: c.skip}}
			tk := &simTask{w: &w.Tasks[0], wakeOverheadNS: c.overhead}
			s.skipWakeOverhead(tk)
			if tk.progress != c.want || tk.skippedNS != c.want || s.stats.WakeOverheadNS != c.want {
				t.Errorf("progress %d, skipped %d, stats %d; want %d", tk.progress, tk.skippedNS, s.stats.WakeOverheadNS, c.want)
			}
			if n := map[bool]int64{true: 1, false: 0}[c.want > 0]; s.stats.WakeOverheadSkips != n {
				t.Errorf("skips %d, want %d", s.stats.WakeOverheadSkips, n)
			}
		})
	}
}

// Two CPUs, no idle-exit delay. A runs 24 ms on CPU 0 and wakes B at
// 0.5 ms into its work, then at 10, 12, ..., 22 ms. B runs 5 ms on CPU 1,
// then eight activations started by A's wakeups: 3 ms, then seven of 1 ms.
// By hand: A's first wakeup finds B still in its first activation, so B
// goes on into its 3 ms one without blocking, from 5 ms. Kept, it runs
// all of it and blocks at 8 ms; skipped, it starts past its wake overhead,
// the lower median of 3, 1, 1, 1, 1, 1, 1, 1 ms (1 ms), and blocks at
// 7 ms. Each later wakeup finds B asleep and CPU 1 idle (wake_affine_idle
// keeps the idle previous CPU): B runs 10-11, 12-13, ..., 22-23 ms either
// way. Every task's run time plus what it skipped is its demand (the
// replay's invariant check).
func TestWakeOverheadScenario(t *testing.T) {
	for _, c := range []struct {
		skip  bool
		first string
		ns    int64
	}{
		{false, "b@cpu1:0-80", 0},
		{true, "b@cpu1:0-70", ms},
	} {
		t.Run(fmt.Sprint("skip=", c.skip), func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=2,threads=1")
			a := b.task("a", 120, 0, true, CauseStart, 24*ms)
			bt := b.task("b", 120, 1, true, CauseStart, 5*ms, 3*ms, ms, ms, ms, ms, ms, ms, ms)
			b.edge(a, 0, ms/2, bt, 1)
			for k := int32(2); k <= 8; k++ {
				b.edge(a, 0, int64(6+2*k)*ms, bt, k)
			}
			w := b.done(t)
			cfg := testConfig()
			cfg.SkipWakeOverhead = c.skip
			res, ch := replayChecked(t, w, cfg)
			got := ch.namedCPURuns(map[int64]string{int64(w.Tasks[a].TID): "a", int64(w.Tasks[bt].TID): "b"})
			want := []string{c.first}
			for k := int64(2); k <= 8; k++ {
				want = append(want, fmt.Sprintf("b@cpu1:%d-%d", 60+20*k, 70+20*k))
			}
			want = append(want, "a@cpu0:0-240")
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("runs (name@cpu:start-end in 0.1 ms) %v, want %v", got, want)
			}
			if res.Stats.ContinuedWithoutSleep != 1 || res.Stats.WakeOverheadNS != c.ns {
				t.Errorf("continued %d, wake overhead skipped %d ns; want 1, %d", res.Stats.ContinuedWithoutSleep, res.Stats.WakeOverheadNS, c.ns)
			}
		})
	}
}

// --validate says how many continued activations skipped how much, and
// says nothing when none did.
func TestFidelityTableWakeOverhead(t *testing.T) {
	for _, c := range []struct {
		st   Stats
		want string
	}{
		{Stats{WakeOverheadSkips: 213, WakeOverheadNS: 54234210}, "wake overhead: 213 activations went on without blocking (their wakeup came first) and skipped the block and wakeup their demand includes, 54.2 ms (each task's median activation demand; --set wake_overhead=keep: not)"},
		{Stats{ContinuedWithoutSleep: 5}, ""},
	} {
		if got := statsLine(t, c.st, "wake overhead:"); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
