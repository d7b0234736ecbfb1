package whatif

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Extraction of Edge.Awaits on one CPU, A = task 10, B = task 20, by hand.
// Three exchanges at 1, 2 and 3 ms: A wakes B and switches out 10 µs
// later; in "request/reply" A blocks (S), and B, having run, wakes A and
// blocks; in "producer" A is switched out runnable (R) and B blocks
// without waking it (a producer does not wait for its consumer). At 4 ms
// A wakes B, B preempts it 20 µs later (A switched out R) and blocks at
// 4.2 ms; A runs again without a wakeup and blocks at 4.5 ms. That last
// wakeup hid B's reply only where A's other exchanges show A waiting for
// one: its edge is Awaits in "request/reply" (three blocks after waking
// B, all answered by B: the pair's minimum), not in "producer".
func TestExtractAwaits(t *testing.T) {
	const us = int64(1000)
	for _, c := range []struct {
		name  string
		prevA string // A's state when it switches to B in exchanges 1-3
		want  bool
	}{
		{"request/reply", "S", true},
		{"producer", "R", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := []timeline.Event{nSwitch(100*us, 0, 0, "R", 10)}
			for i := int64(1); i <= 3; i++ {
				base := i * ms
				evs = append(evs, nWaking(base, 0, 10, 20, 0), nSwitch(base+10*us, 0, 10, c.prevA, 20))
				if c.prevA == "S" {
					evs = append(evs, nWaking(base+200*us, 0, 20, 10, 0))
				}
				evs = append(evs, nSwitch(base+210*us, 0, 20, "S", 10))
			}
			evs = append(evs,
				nWaking(4*ms, 0, 10, 20, 0),
				nSwitch(4*ms+20*us, 0, 10, "R", 20),
				nSwitch(4*ms+200*us, 0, 20, "S", 10),
				nSwitch(4*ms+500*us, 0, 10, "S", 0))
			w, err := Extract(&noiseReader{evs: evs})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range w.Edges {
				if e.Awaits {
					got = append(got, fmt.Sprintf("%d->%d@%d", w.Tasks[e.Waker].TID, w.Tasks[e.Wakee].TID, e.TimeNS))
				}
			}
			var want []string
			if c.want {
				want = []string{fmt.Sprintf("10->20@%d", 4*ms)}
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

// The replay of an awaited reply on one CPU (v6.1, latency 6 ms, wakeup
// granularity 1 ms, sleeper credit 3 ms), by hand. A runs from 0 with 2 ms
// of demand and wakes B (0.5 ms of demand) at 0.8 ms, an Awaits edge
// whose wakee preempted A in the trace. B's vruntime, max(0, 0.8 − 3 ms),
// is 0.8 ms behind A's: under the granularity, no preemption.
//   - With ReplyAwaits A goes on to its await point (0.8 ms: the edge's
//     offset, no run-on) and sleeps there; B runs 0.8-1.3 ms and its
//     reply, at its end (the pair shows no other replies to place it by),
//     wakes A, which runs its remaining 1.2 ms: two wakeups, both served
//     at once.
//   - Without, A runs its 2 ms through and B waits for it: one wakeup of
//     1.2 ms.
//   - With ReplyAwaits and the wakeup at 2.5 ms of 3 ms, B is 2.5 ms
//     behind and preempts A at once, as in the trace: B's reply finds A
//     runnable, A never sleeps, one wakeup.
//   - The same with the machine's delays: the trace's local preemptions
//     took 0.3 ms, and this one came 0.2 ms into A's run-on
//     (NoPreemptNS), its await point. The reschedule A's wakeup raised
//     switches it out there (2.7 ms), as the trace shows, not at the
//     drawn 2.8 ms after A had gone to sleep: B runs 2.7-3.2 ms, A
//     resumes without a wakeup; B waited 0.2 ms.
func TestReplyAwaited(t *testing.T) {
	for _, c := range []struct {
		name    string
		awaits  bool
		demand  int64 // A's
		wakeAt  int64
		runs    []string // task@start-end in 0.1 ms
		wakeups int64
		maxLat  int64
		awaited int64
		runOn   int64 // the edge's NoPreemptNS; > 0: with the trace's 0.3 ms local preemption delay
	}{
		{"awaits", true, 2 * ms, 8 * ms / 10, []string{"A@0-8", "B@8-13", "A@13-25"}, 2, 0, 1, 0},
		{"off", false, 2 * ms, 8 * ms / 10, []string{"A@0-20", "B@20-25"}, 1, 12 * ms / 10, 0, 0},
		{"preempted", true, 3 * ms, 25 * ms / 10, []string{"A@0-25", "B@25-30", "A@30-35"}, 1, 0, 0, 0},
		{"preempted at the await point", true, 3 * ms, 25 * ms / 10, []string{"A@0-27", "B@27-32", "A@32-35"}, 1, 2 * ms / 10, 0, 2 * ms / 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			a := b.task("a", 120, 0, true, CauseStart, c.demand)
			bb := b.task("b", 120, 0, false, CauseWake, ms/2)
			b.edge(a, 0, c.wakeAt, bb, 0)
			b.w.Edges[0].Awaits = true
			b.w.Edges[0].NoPreemptNS = c.runOn
			cfg := testConfig()
			if c.runOn > 0 {
				b.w.PreemptWakeLocalNS = []int64{3 * ms / 10}
				cfg.IdleWake = true
			}
			w := b.done(t)
			cfg.ReplyAwaits = c.awaits
			res, ch := replayChecked(t, w, cfg)
			got := ch.namedRuns(map[int64]string{int64(w.Tasks[a].TID): "A", int64(w.Tasks[bb].TID): "B"})
			if fmt.Sprint(got) != fmt.Sprint(c.runs) {
				t.Errorf("runs %v, want %v", got, c.runs)
			}
			m := res.Metrics
			if m.WakeupCount != c.wakeups || m.WakeupMaxNS != c.maxLat {
				t.Errorf("%d wakeups, max latency %d ns; want %d, %d", m.WakeupCount, m.WakeupMaxNS, c.wakeups, c.maxLat)
			}
			if res.Stats.RepliesAwaited != c.awaited || res.Stats.AwaitsStranded != 0 {
				t.Errorf("replies awaited %d, stranded %d; want %d, 0", res.Stats.RepliesAwaited, res.Stats.AwaitsStranded, c.awaited)
			}
		})
	}
}

// withReplyEdges places each awaited reply by the pair's replies the
// trace shows: B's activation 0 (started by A) wakes A 0.3 ms into its
// 0.5 ms (0.2 ms before its end); A's Awaits wakeup of B's activation 1
// (0.6 ms) gets its reply 0.4 ms into it, as an EdgeReply from B to A's
// awaiting activation; a pair with no replies shown gets it at the end.
func TestReplyEdgePlacement(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	a := b.task("a", 120, 0, true, CauseStart, ms, ms)
	bb := b.task("b", 120, 1, false, CauseWake, ms/2, 6*ms/10)
	c := b.task("c", 120, 1, false, CauseWake, ms/4)
	b.edge(a, 0, ms/2, bb, 0)
	b.edge(bb, 0, 3*ms/10, a, 1)
	b.edge(a, 1, ms/2, bb, 1)
	b.edge(a, 1, 6*ms/10, c, 0)
	b.w.Edges[2].Awaits = true
	b.w.Edges[3].Awaits = true
	w := b.done(t)
	r := w.withReplyEdges(true, true)
	if r == w || len(w.Edges) != 4 {
		t.Fatal("withReplyEdges changed its workload or returned it")
	}
	var got []string
	for _, e := range r.Edges {
		if e.Kind == EdgeReply {
			got = append(got, fmt.Sprintf("%s%d@%d->%s%d", r.Tasks[e.Waker].Comm, e.WakerAct, e.OffsetNS, r.Tasks[e.Wakee].Comm, e.WakeeAct))
		}
	}
	want := []string{fmt.Sprintf("b1@%d->a1", 4*ms/10), fmt.Sprintf("c0@%d->a1", ms/4)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reply edges %v, want %v", got, want)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
}

// On a real trace with awaited replies (this machine's schbench -t 2:
// workers whose message thread preempted them), the marks survive
// --save-workload, and a replay with ReplyAwaits waits for some replies,
// strands none (the invariants hold: Replay checks them) and is
// deterministic.
func TestReplyAwaitsRealTrace(t *testing.T) {
	f := "../fixtures/local-6.18/schbench-m1-t2.perf.data"
	if _, err := os.Stat(f); err != nil {
		t.Skip("fixture absent")
	}
	w, _ := extractFixture(t, f)
	n := 0
	for _, e := range w.Edges {
		if e.Awaits {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no awaited replies extracted")
	}
	dir := t.TempDir()
	back := reloadWorkload(t, w)
	if !reflect.DeepEqual(w.Edges, back.Edges) {
		t.Error("edges changed through save/load")
	}
	pol, _ := LookupPolicy("latest")
	cfg := DefaultConfig(pol)
	cfg.ReplyAwaits = true
	var outs [2][]byte
	for i := range outs {
		out := filepath.Join(dir, fmt.Sprintf("s%d.arrow", i))
		res, err := ReplayToFile(out, back, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.RepliesAwaited == 0 || res.Stats.AwaitsStranded != 0 {
			t.Errorf("replies awaited %d, stranded %d; want > 0, 0", res.Stats.RepliesAwaited, res.Stats.AwaitsStranded)
		}
		outs[i], _ = os.ReadFile(out)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("replay with ReplyAwaits not deterministic")
	}
}
