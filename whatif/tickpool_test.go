package whatif

import (
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The wakeup-preemption delays through Extract, by hand, kept apart by
// whether a tick of the preempted CPU fell between the wakeup and the
// switch. CPU 0 runs task 20, CPU 1 task 30; task 10 (on CPU 0) is woken
// four times and preempts 20 each time, running 0.1 ms before it blocks:
// by 30 from CPU 1 at 1 ms, switched in at 1.05 ms (remote, 50 µs); by
// 30 at 3 ms, CPU 0's tick record at 4 ms, switched in at 4.2 ms (remote,
// a tick between: 1.2 ms); by 20 itself at 6 ms, switched in at 6.03 ms
// (local, 30 µs); by 20 at 7 ms, a tick at 8 ms, switched in at 8.1 ms
// (local, a tick between: 1.1 ms); by 30 at 10 ms, enqueued on CPU 0 in
// the IPI of a remote wakeup that shares no cache (20's hard-IRQ update
// at 10.03 ms, 10's sched_stat_sleep at 10.045 ms, both in hard IRQ: the
// update is the enqueue's, not a tick's), switched in at 10.1 ms
// (remote, no tick: 100 µs).
func TestPreemptDelaysApartByTickByHand(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(ms/2, 0, 0, "R", 20),
		nSwitch(ms/2, 1, 0, "R", 30),
		nWaking(1*ms, 1, 30, 10, 0),
		nSwitch(1*ms+50000, 0, 20, "R", 10),
		nSwitch(1*ms+150000, 0, 10, "S", 20),
		nWaking(3*ms, 1, 30, 10, 0),
		withFlags(nRuntime(4*ms, 0, 20, hardirq), hardirq),
		nSwitch(4*ms+200000, 0, 20, "R", 10),
		nSwitch(4*ms+300000, 0, 10, "S", 20),
		nWaking(6*ms, 0, 20, 10, 0),
		nSwitch(6*ms+30000, 0, 20, "R", 10),
		nSwitch(6*ms+130000, 0, 10, "S", 20),
		nWaking(7*ms, 0, 20, 10, 0),
		withFlags(nRuntime(8*ms, 0, 20, hardirq), hardirq),
		nSwitch(8*ms+100000, 0, 20, "R", 10),
		nSwitch(8*ms+200000, 0, 10, "S", 20),
		nWaking(10*ms, 1, 30, 10, 0),
		withFlags(nRuntime(10*ms+30000, 0, 20, hardirq), hardirq),
		nStatSleep(10*ms+45000, 0, 10, hardirq),
		nSwitch(10*ms+100000, 0, 20, "R", 10),
		nSwitch(10*ms+200000, 0, 10, "S", 20),
	}}
	w, err := Extract(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want []int64
	}{
		{"remote", w.PreemptWakeNS, []int64{50000, 100000}},
		{"remote, a tick between", w.PreemptWakeTickNS, []int64{1200000}},
		{"local", w.PreemptWakeLocalNS, []int64{30000}},
		{"local, a tick between", w.PreemptWakeLocalTickNS, []int64{1100000}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Which replays draw the delays a tick fell in. A wakee preempts its
// CPU's running task at once under both disciplines (EEVDF: X's timer
// wakeup of TestPositiveLagWakeePreempts, at t0+5.15 ms; CFS, v6.1: W's
// arrival at t0+5 ms beside a hog, as TestTinyRemotePreemptPool), an
// interrupt on the CPU itself: the local pools. The trace's delays
// without a tick are 20 of 30 µs, with one 20 of 3 ms. Over 20 seeds
// the EEVDF replay switches the wakee in 30 µs after its wakeup every
// time; the CFS one draws from all 40, so some seeds wait 3 ms and some
// 30 µs (9 and 11 here).
func TestTickDelaysAreCFSOnly(t *testing.T) {
	pools := func(w *Workload) {
		for range 20 {
			w.PreemptWakeLocalNS = append(w.PreemptWakeLocalNS, 30000)
			w.PreemptWakeLocalTickNS = append(w.PreemptWakeLocalTickNS, 3*ms)
		}
	}
	for _, c := range []struct {
		policy         string
		wake           int64
		min30, min3000 int
	}{{"latest", t0 + 5150000, 20, 0}, {"v6.1", t0 + 5*ms, 3, 3}} {
		n30, n3000 := 0, 0
		for seed := range 20 {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			var wt int32
			if c.policy == "latest" {
				b.task("y", 120, 0, true, CauseStart, 20*ms)
				wt = b.task("x", 120, 0, false, CauseStart, 1*ms, 1*ms)
				a := &b.w.Tasks[wt].Activations[1]
				a.Cause, a.SleepNS = CauseArrival, 150000
			} else {
				b.task("hog", 120, 0, true, CauseStart, 20*ms)
				wt = b.task("w", 120, 0, false, CauseArrival, ms)
				b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 5*ms
			}
			w := b.done(t)
			pools(w)
			cfg := policyConfig(t, c.policy)
			cfg.IdleWake, cfg.Seed = true, uint64(seed)
			_, ch := replayChecked(t, w, cfg)
			r := ch.firstRunAfter(int64(w.Tasks[wt].TID), c.wake-1)
			switch {
			case r == nil:
				t.Fatalf("%s seed %d: the wakee never ran after its wakeup", c.policy, seed)
			case r.start == c.wake+30000:
				n30++
			case r.start == c.wake+3*ms:
				n3000++
			default:
				t.Errorf("%s seed %d: the wakee ran at wakeup%+d ns, want +30 µs or +3 ms", c.policy, seed, r.start-c.wake)
			}
		}
		if n30 < c.min30 || n3000 < c.min3000 || c.policy == "latest" && n3000 > 0 {
			t.Errorf("%s: %d seeds at 30 µs, %d at 3 ms; want at least %d and %d", c.policy, n30, n3000, c.min30, c.min3000)
		}
	}
}

// nStatSleep is a sleeper's enqueue statistics record, written on cpu.
func nStatSleep(t int64, cpu, pid int32, flags int64) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedStatSleep, "sched:sched_stat_sleep"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, "t")
	e.SetInt(timeline.CommonFlags, flags)
	return e
}
