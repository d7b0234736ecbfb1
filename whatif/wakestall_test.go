package whatif

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Extraction marks a wakeup whose waker's vCPU stalled inside
// try_to_wake_up. CPU 0 runs task 10 (ticks at 1, 5 and 9 ms), CPU 1 runs
// task 30, CPU 2 task 40; task 20 slept on CPU 1 at 0.5 ms. At 10 ms task 10 wakes 20
// (target CPU 1), and CPU 0 records nothing more until 20 ms (longer than
// a tick plus the tolerance: a gap). By hand: the first record after the
// waking (or after its migration) ending the gap, if it is the enqueue's
// own (20's sched_stat_sleep, or update_curr of the running task of the
// CPU it goes to, CPU 1's task 30 or, migrated to CPU 2, task 40, in the
// waker's context), puts the stall inside the try_to_wake_up: marked. The
// enqueue's records before the gap, a tick ending it, a record of another
// task, or one written in an interrupt do not.
func TestEnqueueAfterStallByHand(t *testing.T) {
	const task = 0x01 // IRQS_OFF, task context: try_to_wake_up's records
	for _, c := range []struct {
		name  string
		after []timeline.Event
		want  bool
	}{
		{"stall, then the wakee's sleep statistics", []timeline.Event{nStatSleep(20*ms, 0, 20, task)}, true},
		{"stall, then the target's update_curr", []timeline.Event{nRuntime(20*ms, 0, 30, task), nStatSleep(20*ms+10000, 0, 20, task)}, true},
		{"migration, stall, then the enqueue", []timeline.Event{nMigrate(10*ms+20000, 0, 20, 1, 1), nStatSleep(20*ms, 0, 20, task)}, true},
		{"migration elsewhere, stall, then that CPU's update_curr", []timeline.Event{nMigrate(10*ms+20000, 0, 20, 1, 2), nRuntime(20*ms, 0, 40, task)}, true},
		{"no migration, stall, then another CPU's update_curr", []timeline.Event{nRuntime(20*ms, 0, 40, task)}, false},
		{"the enqueue, then a stall", []timeline.Event{nStatSleep(10*ms+50000, 0, 20, task), nRuntime(20*ms, 0, 10, hardirq)}, false},
		{"stall ended by a tick", []timeline.Event{nRuntime(20*ms, 0, 10, hardirq), nStatSleep(20*ms+10000, 0, 20, task)}, false},
		{"stall ended by the waker's own update", []timeline.Event{nRuntime(20*ms, 0, 10, task), nStatSleep(20*ms+10000, 0, 20, task)}, false},
		{"stall ended by an interrupt's records", []timeline.Event{nStatSleep(20*ms, 0, 20, hardirq)}, false},
	} {
		evs := []timeline.Event{
			nSwitch(500000, 0, 0, "R", 10),
			nSwitch(500000, 1, 20, "S", 30),
			nSwitch(500000, 2, 0, "R", 40),
			nRuntime(1*ms, 0, 10, hardirq), nRuntime(5*ms, 0, 10, hardirq), nRuntime(9*ms, 0, 10, hardirq),
			nWaking(10*ms, 0, 10, 20, 1),
		}
		evs = append(evs, c.after...)
		evs = append(evs, nSwitch(21*ms, 1, 30, "R", 20), nSwitch(22*ms, 1, 20, "S", 30), nSwitch(23*ms, 0, 10, "S", 0))
		sortEvents(evs)
		w, err := Extract(&noiseReader{evs: evs})
		if err != nil {
			t.Fatal(err)
		}
		var got, found bool
		for _, e := range w.Edges {
			if e.Kind == EdgeWake && w.Tasks[e.Waker].TID == 10 && w.Tasks[e.Wakee].TID == 20 {
				got, found = e.EnqueueAfterStall, true
			}
		}
		if !found || got != c.want {
			t.Errorf("%s: edge found %v, EnqueueAfterStall %v, want %v", c.name, found, got, c.want)
		}
	}
}

// The replay holds such a wakeup's enqueue for its waker's stall. The
// waker runs 20 ms of demand on CPU 0 from t0 and wakes the sleeper (on
// idle CPU 1, its own) at 2 ms of it; a 4 ms host stall of the waker
// starts at 2.5 ms. By hand: with the rule the sleeper's waking is
// written at t0+2 ms and it is queued when the waker passes the stall's
// end, at t0+6.5 ms, running then on idle CPU 1 (a wait of 4.5 ms); off,
// or without the mark, or with the stall more than a tick past the edge,
// it runs at t0+2 ms. A wakee queued on the waker's own CPU (a kworker
// of CPU 0, pinned there) is not held: queued at t0+2 ms, its preemption
// of the waker lands in the waker's stall and waits for its end
// (hostStallEnd), so it too runs at t0+6.5 ms, with nothing held.
func TestWakeQueuedAfterWakerStall(t *testing.T) {
	for _, c := range []struct {
		name      string
		on, mark  bool
		stallAt   int64
		wakee     string
		wantCPU   int64
		wantStart int64
		held      bool
	}{
		{"held for the stall", true, true, 2500000, "sleeper", 1, t0 + 6500000, true},
		{"off", false, true, 2500000, "sleeper", 1, t0 + 2*ms, false},
		{"not marked", true, false, 2500000, "sleeper", 1, t0 + 2*ms, false},
		{"stall a tick past the edge", true, true, 2*ms + 4*ms + stallToleranceNS + 1, "sleeper", 1, t0 + 2*ms, false},
		{"onto the waker's CPU", true, true, 2500000, "kworker/0:1", 0, t0 + 6500000, false},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		wk := b.task("waker", 120, 0, true, CauseStart, 20*ms)
		sl := b.task(c.wakee, 120, int32(c.wantCPU), false, CauseWake, ms)
		b.edge(wk, 0, 2*ms, sl, 0)
		b.w.Edges[0].EnqueueAfterStall = c.mark
		b.w.HostStalls = []HostStall{{Task: wk, Act: 0, OffsetNS: c.stallAt, LenNS: 4 * ms}}
		w := b.done(t)
		w.Stalls = &StallModel{TickNS: 4 * ms, StallsNS: []int64{4 * ms}, MeanStallNS: 4 * ms}
		cfg := testConfig()
		cfg.IdleWake = true
		cfg.WakeStall = c.on
		res, ch := replayChecked(t, w, cfg)
		r := ch.firstRunAfter(int64(w.Tasks[sl].TID), 0)
		if r == nil || r.cpu != c.wantCPU || r.start != c.wantStart {
			t.Errorf("%s: wakee's run %+v, want on CPU %d from %d", c.name, r, c.wantCPU, c.wantStart)
		}
		if len(ch.wakings) != 1 || ch.wakings[0].Time != t0+2*ms {
			t.Errorf("%s: wakings %v, want one at %d", c.name, ch.wakings, t0+2*ms)
		}
		wantN, wantNS := int64(0), int64(0)
		if c.held {
			wantN, wantNS = 1, c.wantStart-t0-2*ms
		}
		if res.Stats.WakesAfterStall != wantN || res.Stats.WakeAfterStallNS != wantNS {
			t.Errorf("%s: %d wakes held for %d ns, want %d for %d", c.name, res.Stats.WakesAfterStall, res.Stats.WakeAfterStallNS, wantN, wantNS)
		}
	}
}
