package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

const us = int64(1000)

// nStat is a schedstats record of kind (sched_stat_sleep or _wait) for
// pid on cpu at t, measuring delay.
func nStat(t int64, kind timeline.Kind, cpu, pid int32, delay int64) timeline.Event {
	e := nStatSleep(t, cpu, pid, 0)
	e.Kind = kind
	if kind == timeline.SchedStatWait {
		e.Name = "sched:sched_stat_wait"
	}
	e.SetInt(timeline.Delay, delay)
	return e
}

// TestDelayedDequeuesEvidence: the blocks the sleep statistics show kept
// queued, case by case (times in µs after 1 s; task 10 blocks on CPU 0 at
// 100 µs, task 12 on CPU 1 wakes it).
func TestDelayedDequeuesEvidence(t *testing.T) {
	t0 := int64(1e9)
	at := func(u int64) int64 { return t0 + u*us }
	sleep := func(now, from int64) timeline.Event {
		return nStat(at(now), timeline.SchedStatSleep, 0, 10, at(now)-at(from))
	}
	wake := nWaking(at(1000), 1, 12, 10, 0)
	for _, c := range []struct {
		name                     string
		evs                      []timeline.Event
		blocks, delayed, requeue int
		until                    int64 // for the block at 100 µs: 0 not delayed
	}{
		{"dequeued at the block (its sleep dated 3 µs before the switch)",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), wake, sleep(1010, 97)},
			1, 0, 0, 0},
		{"the final dequeue at a later pick (the switch at 400 µs, read 3 µs before)",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nSwitch(at(400), 0, 11, "R", 13), wake, sleep(1010, 397)},
			1, 1, 0, at(397)},
		{"dated later from no switch: the wakeup's clock behind",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nSwitch(at(400), 0, 11, "R", 13), wake, sleep(1010, 250)},
			1, 0, 0, 0},
		{"the CPU went idle between: every delayed task dequeued there",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nSwitch(at(200), 0, 11, "S", 0), nSwitch(at(400), 0, 0, "R", 13), wake, sleep(1010, 397)},
			1, 0, 0, 0},
		{"a block straight to idle: nothing else queued, dequeued",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 0), nSwitch(at(400), 0, 0, "R", 13), wake, sleep(1010, 397)},
			0, 0, 0, 0},
		{"requeued: switched in with no sleep statistics, its wait from the block",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nWaking(at(300), 1, 12, 10, 0),
				nStat(at(500), timeline.SchedStatWait, 0, 10, 400*us), nSwitch(at(500), 0, 11, "R", 10)},
			1, 0, 1, untilRequeue},
		{"not requeued: its wait from the waking (a wakeup's enqueue without statistics)",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nWaking(at(300), 1, 12, 10, 0),
				nStat(at(500), timeline.SchedStatWait, 0, 10, 200*us), nSwitch(at(500), 0, 11, "R", 10)},
			0, 0, 0, 0},
		{"not requeued: the CPU idled before the waking",
			[]timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nSwitch(at(200), 0, 11, "S", 0), nWaking(at(300), 1, 12, 10, 0),
				nStat(at(500), timeline.SchedStatWait, 0, 10, 400*us), nSwitch(at(500), 0, 0, "R", 10)},
			0, 0, 0, 0},
		{"a preemption is no block",
			[]timeline.Event{nSwitch(at(100), 0, 10, "R", 11), nSwitch(at(400), 0, 11, "R", 13), wake, sleep(1010, 397)},
			0, 0, 0, 0},
	} {
		evs := append([]timeline.Event{nSwitch(t0, 0, 0, "R", 10), nStatSleep(t0, 1, 99, 0)}, c.evs...)
		evs[1].SetInt(timeline.Delay, 1)
		dq, err := ReadDelayedDequeues(&timeline.SliceReader{Events: evs})
		if err != nil || dq == nil {
			t.Fatalf("%s: %v, %v", c.name, dq, err)
		}
		u, ok := dq.delayedUntil(10, at(100))
		if !ok {
			u = 0
		}
		if dq.Blocks != c.blocks || dq.Delayed != c.delayed || dq.Requeued != c.requeue || u != c.until {
			t.Errorf("%s: blocks %d delayed %d requeued %d until %d; want %d, %d, %d, %d",
				c.name, dq.Blocks, dq.Delayed, dq.Requeued, u, c.blocks, c.delayed, c.requeue, c.until)
		}
	}
	// No sleep statistics: nothing to say. A kernel before v6.12: none.
	if dq, err := ReadDelayedDequeues(&timeline.SliceReader{Events: []timeline.Event{nSwitch(at(100), 0, 10, "S", 11)}}); dq != nil || err != nil {
		t.Errorf("without statistics: %+v, %v", dq, err)
	}
	old := &timeline.SliceReader{Events: []timeline.Event{nSwitch(at(100), 0, 10, "S", 11), nStat(at(900), timeline.SchedStatSleep, 0, 10, 500*us)}}
	old.M.Source.OSRelease = "6.1.0-41-amd64"
	if dq, err := ReadDelayedDequeues(old); dq != nil || err != nil {
		t.Errorf("a 6.1 trace: %+v, %v", dq, err)
	}
}

// TestDelayedDequeuesFalseAlarms: the rules against real traces. A 6.1
// kernel has no delayed dequeue, so whatever they find in its statistics
// is a false alarm: a few in a hundred blocks at most. The same workload
// under 6.12 shows the kernel keeping tasks queued: hundreds.
func TestDelayedDequeuesFalseAlarms(t *testing.T) {
	for _, c := range []struct {
		path       string
		minPct     float64
		maxPct     float64
		minBlocks  int
		viaRelease bool // ReadDelayedDequeues keeps the trace's evidence
	}{
		{"../fixtures/kernels/crosskernel/v6.1/guest-P-1s2c1t/r2/messaging.perf.data.gz", 0, 2, 1000, false},
		{"../fixtures/kernels/crosskernel/v6.12/guest-M-1s1c2t/r1/messaging.perf.data.gz", 15, 100, 1000, true},
	} {
		dq := delaysWith(t, c.path, scanDelayedDequeues)
		if dq == nil {
			t.Fatalf("%s: no sleep statistics", c.path)
		}
		pct := 100 * float64(dq.Delayed+dq.Requeued) / float64(max(dq.Blocks, 1))
		if dq.Blocks < c.minBlocks || pct < c.minPct || pct > c.maxPct {
			t.Errorf("%s: %d blocks, %d delayed, %d requeued (%.1f %%); want at least %d blocks, %g–%g %%",
				c.path, dq.Blocks, dq.Delayed, dq.Requeued, pct, c.minBlocks, c.minPct, c.maxPct)
		}
		if got := delayedOf(t, c.path) != nil; got != c.viaRelease {
			t.Errorf("%s: ReadDelayedDequeues kept evidence %v, want %v", c.path, got, c.viaRelease)
		}
	}
}

// TestShadowDelayedDequeue, by hand: CPU 0 runs task 10 from 1 s with
// task 11 queued; 10 blocks at 1 ms and the kernel kept it queued until
// 33 ms (DelayedDequeues). While delayed it counts in nr_running (2),
// h_nr_queued (2, the balancer's count under v6.12) and the load (2048),
// not in h_nr_runnable (1: the balancer's count from v6.14); its own
// load_avg grows as an entity on the queue does, from about 22 after its
// 1 ms of running to 1024 × (1 − y^33) ≈ 523 at 33 ms, its runnable_avg
// not (its 1 ms, decayed, about 11). After 33 ms only 11 is left. Task
// 12, kept queued on CPU 1 by a block at 60 ms until a waking requeues
// it at 70 ms, is runnable again on its CPU with no placement.
func TestShadowDelayedDequeue(t *testing.T) {
	d := specDomains(t, "sockets=1,cores=2,threads=1", "6.12")
	t0 := int64(1e9)
	dq := &DelayedDequeues{until: map[blockAt]int64{{10, t0 + ms}: t0 + 33*ms, {12, t0 + 60*ms}: untilRequeue}}
	for _, name := range []string{"v6.12", "latest"} {
		pol, err := LookupPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		s := newBalanceShadow(pol, 250, dq)
		ev := func(e timeline.Event) { s.event(&e) }
		ev(nSwitch(t0, 0, 0, "R", 10))
		ev(nWaking(t0, 1, 0, 11, 0))
		ev(nSwitch(t0+ms, 0, 10, "S", 11))
		r := s.rq(0)
		groups := d.CPUs[0].Domains[0].Groups()
		var sgs SGStats
		s.groupStats(groups[0], d, 1, CPUNotIdle, t0+2*ms, &sgs)
		wantH := uint32(2)
		if name == "latest" {
			wantH = 1
		}
		if r.nr != 2 || r.nrFair != 1 || r.nrDelayed != 1 || r.loadW != 2048 || sgs.SumNrRunning != 2 || sgs.SumHNrRunning != wantH {
			t.Errorf("%s, delayed: nr %d runnable %d delayed %d load.weight %d, group nr %d h_nr %d; want 2, 1, 1, 2048, 2, %d",
				name, r.nr, r.nrFair, r.nrDelayed, r.loadW, sgs.SumNrRunning, sgs.SumHNrRunning, wantH)
		}
		ev(nRuntime(t0+40*ms, 0, 11, hardirq))
		t10 := s.tasks[10]
		if r.nr != 1 || r.nrFair != 1 || r.nrDelayed != 0 || r.loadW != 1024 || t10.onRQ || t10.delayed {
			t.Errorf("%s, after the final dequeue: nr %d runnable %d delayed %d load.weight %d, task on_rq %v delayed %v; want 1, 1, 0, 1024, false, false",
				name, r.nr, r.nrFair, r.nrDelayed, r.loadW, t10.onRQ, t10.delayed)
		}
		if l, rn := t10.avg.loadAvg, t10.avg.runnableAvg; l < 500 || l > 545 || rn < 5 || rn > 25 {
			t.Errorf("%s: task 10's load_avg %d, runnable_avg %d at 33 ms; want about 523 and 11", name, l, rn)
		}
		// Task 12 on CPU 1: runs, blocks kept queued behind 13, requeued.
		ev(nSwitch(t0+50*ms, 1, 0, "R", 12))
		ev(nWaking(t0+50*ms, 0, 11, 13, 1))
		ev(nSwitch(t0+60*ms, 1, 12, "S", 13))
		r1 := s.rq(1)
		if r1.nr != 2 || r1.nrDelayed != 1 {
			t.Errorf("%s: CPU 1 nr %d delayed %d after 12's block; want 2, 1", name, r1.nr, r1.nrDelayed)
		}
		ev(nWaking(t0+70*ms, 0, 11, 12, 0))
		if t12 := s.tasks[12]; r1.nr != 2 || r1.nrFair != 2 || r1.nrDelayed != 0 || t12.cpu != 1 || !t12.onRQ || t12.delayed || s.open[0] != nil {
			t.Errorf("%s: after the requeue CPU 1 nr %d runnable %d delayed %d, task 12 on CPU %d on_rq %v delayed %v, open wakeup %v; want 2, 2, 0, CPU 1, true, false, none",
				name, r1.nr, r1.nrFair, r1.nrDelayed, t12.cpu, t12.onRQ, t12.delayed, s.open[0])
		}
	}
	// The same without the evidence: 10 leaves at its block, its load
	// decays from its 1 ms.
	pol, _ := LookupPolicy("v6.12")
	s := newBalanceShadow(pol, 250, nil)
	for _, e := range []timeline.Event{nSwitch(t0, 0, 0, "R", 10), nWaking(t0, 1, 0, 11, 0), nSwitch(t0+ms, 0, 10, "S", 11), nRuntime(t0+40*ms, 0, 11, hardirq)} {
		s.event(&e)
	}
	s.updTask(s.tasks[10], t0+33*ms, false)
	if r, l := s.rq(0), s.tasks[10].avg.loadAvg; r.nr != 1 || l > 25 {
		t.Errorf("without delays: nr %d, task 10's load_avg %d; want 1 and about 11", r.nr, l)
	}
}

// shadowCounts checks a shadow's run-queue counters against its tasks:
// each CPU's nr_running, runnable and delayed counts and load weight are
// the sums over the tasks queued there.
func shadowCounts(s *wakeShadow) error {
	type sums struct{ nr, fair, delayed, w uint64 }
	want := map[int32]*sums{}
	for pid, t := range s.tasks {
		if !t.onRQ || t.cpu < 0 {
			if t.delayed {
				return fmt.Errorf("task %d delayed off any queue", pid)
			}
			continue
		}
		x := want[t.cpu]
		if x == nil {
			x = &sums{}
			want[t.cpu] = x
		}
		x.nr++
		switch {
		case t.rt:
			continue
		case t.delayed:
			x.delayed++
		default:
			x.fair++
		}
		x.w += t.w
	}
	for c, r := range s.rqs {
		x := want[int32(c)]
		if x == nil {
			x = &sums{}
		}
		if r.nr != x.nr || r.nrFair != x.fair || r.nrDelayed != x.delayed || r.loadW != x.w {
			return fmt.Errorf("cpu %d: nr %d runnable %d delayed %d weight %d; its tasks %+v", c, r.nr, r.nrFair, r.nrDelayed, r.loadW, *x)
		}
	}
	return nil
}

// fuzzShadowDelays runs the shadow over evs with the delayed dequeues
// their statistics show and checks its counters after every event.
func fuzzShadowDelays(t *testing.T, evs []timeline.Event, d *model.Domains) {
	dq, err := ReadDelayedDequeues(&timeline.SliceReader{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	pol, _ := LookupPolicy("v6.12")
	s := newBalanceShadow(pol, 250, dq)
	for i := range evs {
		s.event(&evs[i])
		if err := shadowCounts(s); err != nil {
			t.Fatalf("after event %d (%s at %d): %v", i, evs[i].Kind, evs[i].Time, err)
		}
	}
	if _, err := BusyBalanceShadow(&timeline.SliceReader{Events: evs}, d, pol, 250, dq); err != nil {
		t.Fatal(err)
	}
}
