package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Extraction of a herd's hidden wait (await.go), on one CPU by hand:
// threads 21-24 ran and sleep; main thread 10 sleeps; L (25) runs, wakes
// 10 at 1 ms and is switched out runnable for it 20 µs later; 10 wakes
// the siblings named in each case and blocks at 1.2 ms; L runs again
// without a wakeup and blocks at 1.5 ms. L's edge is an Awaits candidate
// (its wakee preempted it and ended its activation before L ran again)
// with no request/reply history: kept only where 10's activation woke at
// least minHerd of L's siblings (every task here has command "t").
func TestExtractHerdAwaits(t *testing.T) {
	const us = int64(1000)
	for _, c := range []struct {
		name     string
		siblings []int32
		want     bool
	}{
		{"herd of four", []int32{21, 22, 23, 24}, true},
		{"herd of three", []int32{21, 22, 23}, true},
		{"two woken", []int32{21, 22}, false},
		{"one woken twice", []int32{21, 21, 21}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var evs []timeline.Event
			at := 100 * us
			for _, p := range []int32{21, 22, 23, 24, 10} {
				evs = append(evs, nSwitch(at, 0, 0, "R", p), nSwitch(at+10*us, 0, p, "S", 0))
				at += 50 * us
			}
			evs = append(evs,
				nSwitch(at, 0, 0, "R", 25),
				nWaking(ms, 0, 25, 10, 0),
				nSwitch(ms+20*us, 0, 25, "R", 10))
			for i, p := range c.siblings {
				evs = append(evs, nWaking(ms+50*us+int64(i)*10*us, 0, 10, p, 0))
			}
			evs = append(evs,
				nSwitch(ms+200*us, 0, 10, "S", 25),
				nSwitch(ms+500*us, 0, 25, "S", 21))
			w, err := Extract(&noiseReader{evs: evs})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range w.Edges {
				if e := &w.Edges[i]; e.Awaits {
					got = append(got, fmt.Sprintf("%d->%d herd %v", w.Tasks[e.Waker].TID, w.Tasks[e.Wakee].TID, w.isHerd(e)))
				}
			}
			var want []string
			if c.want {
				want = []string{"25->10 herd true"}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("awaiting edges %v, want %v", got, want)
			}
			if err := w.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// The replay of a herd's hidden wait on one CPU (v6.1), by hand. L
// (command w) runs from 0 with 1 ms of demand: it wakes the main thread
// M at 0.1 ms (an Awaits edge: M preempted it in the trace) and receiver
// R at 0.5 ms (a send). M's activation (0.3 ms) wakes L's siblings W1-W3
// (command w, 0.05 ms each) at 0.1, 0.15 and 0.2 ms into it: the start
// barrier's broadcast. Every task starts at vruntime 0 and a woken one
// keeps its own (above min_vruntime less the sleeper credit): M, 0.1 ms
// behind L at its wakeup, under the 1 ms granularity, does not preempt
// it.
//   - With HerdAwaits L stops at its await point (0.1 ms: the edge's
//     offset) and sleeps; M runs 0.1-0.4 ms, its broadcast's first wakeup
//     (0.2 ms) also wakes L; W1-W3 (vruntime 0, in wakeup order) run
//     0.4-0.55 ms, then L (0.1) its remaining 0.9 ms, to 1.45 ms, sending
//     to R 0.4 ms into it; R runs 1.45-1.55 ms.
//   - Without, L runs its whole 1 ms first, sending to R at 0.5 ms,
//     before M has run: M 1-1.3 ms, then R (vruntime 0, queued before
//     W1-W3) 1.3-1.4 ms, W1-W3 1.4-1.55 ms.
func TestHerdAwaited(t *testing.T) {
	for _, c := range []struct {
		name string
		herd bool
		runs []string // task@start-end in 0.1 ms
	}{
		{"awaits", true, []string{"L@0-1", "M@1-4", "W1@4-4", "W2@4-5", "W3@5-5", "L@5-14", "R@14-15"}},
		{"off", false, []string{"L@0-10", "M@10-13", "R@13-14", "W1@14-14", "W2@14-15", "W3@15-15"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			l := b.task("w", 120, 0, true, CauseStart, ms)
			m := b.task("m", 120, 0, false, CauseWake, 3*ms/10)
			r := b.task("r", 120, 0, false, CauseWake, ms/10)
			var ws []int32
			for range 3 {
				ws = append(ws, b.task("w", 120, 0, false, CauseWake, ms/20))
			}
			b.edge(l, 0, ms/10, m, 0)
			b.edge(l, 0, ms/2, r, 0)
			for i, x := range ws {
				b.edge(m, 0, ms/10+int64(i)*ms/20, x, 0)
			}
			b.w.Edges[0].Awaits = true
			w := b.done(t)
			cfg := testConfig()
			cfg.HerdAwaits = c.herd
			_, ch := replayChecked(t, w, cfg)
			names := map[int64]string{int64(w.Tasks[l].TID): "L", int64(w.Tasks[m].TID): "M", int64(w.Tasks[r].TID): "R"}
			for i, x := range ws {
				names[int64(w.Tasks[x].TID)] = fmt.Sprintf("W%d", i+1)
			}
			got := ch.namedRuns(names)
			if fmt.Sprint(got) != fmt.Sprint(c.runs) {
				t.Errorf("runs %v, want %v", got, c.runs)
			}
		})
	}
}

// On guest-P's 6.1 messaging recording (r3 of the same-day set) the one
// herd is the start barrier's: sender 545, the last thread created, wakes
// the main thread 464 with its ready write at 21.957227754 s and is
// switched out runnable for it 34 µs later; 464 wakes the other 79
// threads from 21.957320 to 21.958334 s and blocks; 545 runs again at
// 21.996783 s with no wakeup (read from `perf script` on the recording).
// With HerdAwaits the replay holds 545's sends until 464's broadcast:
// its first send comes after 464's first wakeup of a thread of its
// command, where without it 545 sends before the broadcast.
func TestHerdOnMessaging(t *testing.T) {
	f := "../fixtures/kernels/crosskernel/v6.1/guest-P-1s2c1t/r3/messaging.perf.data.gz"
	w, _ := extractFixture(t, f)
	var herds []string
	for i := range w.Edges {
		if e := &w.Edges[i]; e.Awaits && w.isHerd(e) {
			herds = append(herds, fmt.Sprintf("%d->%d@%d", w.Tasks[e.Waker].TID, w.Tasks[e.Wakee].TID, e.TimeNS))
		}
	}
	if want := "[545->464@21957227754]"; fmt.Sprint(herds) != want {
		t.Fatalf("herd edges %v, want %s", herds, want)
	}
	if h, r := w.AwaitCounts(); h != 1 || r != 0 {
		t.Errorf("AwaitCounts %d herds, %d replies; want 1, 0", h, r)
	}
	for _, herd := range []bool{true, false} {
		cfg := DefaultConfig(mustPolicy(t, "v6.1"))
		cfg.Topology, cfg.HerdAwaits = w.Topology, herd
		// The broadcast: 464's first wakeup of a thread after 545's ready
		// write woke it (464's earlier ones follow its forks).
		var ready, firstSend, broadcast int64 = -1, -1, -1
		sink := sinkFunc(func(e *timeline.Event) error {
			if e.Kind != timeline.SchedWaking {
				return nil
			}
			switch waker, wakee := e.Int32(timeline.CommonPID), e.Int32(timeline.PID); {
			case waker == 545 && wakee == 464 && ready < 0:
				ready = e.Time
			case waker == 545 && wakee != 464 && firstSend < 0:
				firstSend = e.Time
			case waker == 464 && ready >= 0 && broadcast < 0 && e.Str(timeline.Comm) == "sched-messaging":
				broadcast = e.Time
			}
			return nil
		})
		res, err := Replay(w, cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int64{true: 1, false: 0}[herd]; res.Stats.RepliesAwaited != want {
			t.Errorf("herd %v: %d hidden waits slept, want %d", herd, res.Stats.RepliesAwaited, want)
		}
		if ready < 0 || firstSend < 0 || broadcast < 0 {
			t.Fatalf("herd %v: ready write %d, first send %d, broadcast %d", herd, ready, firstSend, broadcast)
		}
		if after := firstSend > broadcast; after != herd {
			t.Errorf("herd %v: 545's first send at %d, 464's broadcast at %d", herd, firstSend, broadcast)
		}
	}
}

type sinkFunc func(*timeline.Event) error

func (f sinkFunc) Emit(e *timeline.Event) error { return f(e) }

// --validate says how often a waker slept for what the trace hid, and
// nothing when none did.
func TestFidelityTableHiddenWaits(t *testing.T) {
	for _, c := range []struct {
		st   Stats
		want string
	}{
		{Stats{RepliesAwaited: 3}, "hidden waits: wakers slept 3 times where the trace shows their wakee preempting them, until the broadcast or reply the wakee's activation made, which the trace hid (--set herd_awaits=off: not for broadcasts)"},
		{Stats{}, ""},
	} {
		if got := statsLine(t, c.st, "hidden waits:"); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
