package whatif

import (
	"github.com/schedreplay/replay/model"

	"reflect"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Wakeup places by hand, on 2 CPUs (times in ms):
//   - 1: CPU 0 runs 10, CPU 1 runs 20; 2: 20 blocks (CPU 1 idle);
//   - 3: 10 wakes 30, which runs on CPU 1 at 3.5: idle CPU, 0.5;
//   - 4: 10 wakes 40, which runs on CPU 0 when 10 blocks at 4.2: the
//     waker's CPU, 0.2;
//   - 5: 40 wakes 10, which runs on CPU 1 when 30 blocks at 5.3: another
//     busy CPU, 0.3;
//   - 6: records lost; 6.5: 40 wakes 20, which runs on CPU 1 at 7: the
//     analysis leaves out a wait that spans the loss (20 switched out at
//     2), and CPU 1's state at the wakeup is not known anyway;
//   - 7.5: an interrupt wakes 40 while it runs; 40 blocks at 8 (CPU 0
//     idle from then); 9: 20 wakes 40 from CPU 1, and it runs on CPU 0
//     at 9.4: idle, 0.4 (from the wakeup after its switch-out, not the
//     one at 7.5), until 10;
//   - 11: 50 runs on CPU 0; 12: 50 wakes 10 onto CPU 1, where 20 runs
//     and is switched out runnable at 12.6 for 10: another busy CPU, 0.6,
//     by preemption (the one at 5.3 came after 30 blocked);
//   - 13: 50 wakes 60 onto its own CPU 0 and is switched out runnable
//     for it at 13.1: the waker's CPU, 0.1, by preemption (the one at 4.2
//     came after 10 blocked);
//   - 14: 60 wakes 70 onto CPU 1, where 10 runs; 14.2: 10 is switched
//     out runnable for 20 (20's turn, no wakeup of its own); 14.9: 20 is
//     switched out runnable for 70: another busy CPU, 0.9, by
//     preemption, but not at CPU 1's first switch after the wakeup (the
//     one at 12.6 was).
//
// idle: 0.4 and 0.5 ms (p50 0.4, p95 0.5 by nearest rank); waker: 0.1
// and 0.2, of which preempting 0.1 and after a block 0.2; other busy:
// 0.3, 0.6 and 0.9, of which preempting 0.6 and 0.9 (at the first
// switch 0.6) and after a block 0.3.
func TestWakePlaceByHand(t *testing.T) {
	evs := []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10), nSwitch(1*ms, 1, 0, "R", 20),
		nSwitch(2*ms, 1, 20, "S", 0),
		nWaking(3*ms, 0, 10, 30, 1), nSwitch(3500000, 1, 0, "R", 30),
		nWaking(4*ms, 0, 10, 40, 0), nSwitch(4200000, 0, 10, "S", 40),
		nWaking(5*ms, 0, 40, 10, 1), nSwitch(5300000, 1, 30, "S", 10),
		nLost(6*ms, 0),
		nWaking(6500000, 0, 40, 20, 1), nSwitch(7*ms, 1, 10, "S", 20),
		nWaking(7500000, 0, 0, 40, 0), nSwitch(8*ms, 0, 40, "S", 0),
		nWaking(9*ms, 1, 20, 40, 0), nSwitch(9400000, 0, 0, "R", 40),
		nSwitch(10*ms, 0, 40, "S", 0),
		nSwitch(11*ms, 0, 0, "R", 50),
		nWaking(12*ms, 0, 50, 10, 1), nSwitch(12600000, 1, 20, "R", 10),
		nWaking(13*ms, 0, 50, 60, 0), nSwitch(13100000, 0, 50, "R", 60),
		nWaking(14*ms, 0, 60, 70, 1), nSwitch(14200000, 1, 10, "R", 20),
		nSwitch(14900000, 1, 20, "R", 70),
	}
	mt := measureEvents(t, 2, evs)
	want := map[string]PlaceStats{
		"idle_cpu":                     {Count: 2, P50NS: 400000, P95NS: 500000},
		"waker_cpu":                    {Count: 2, P50NS: 100000, P95NS: 200000},
		"waker_cpu.preempt":            {Count: 1, P50NS: 100000, P95NS: 100000},
		"waker_cpu.block":              {Count: 1, P50NS: 200000, P95NS: 200000},
		"other_busy_cpu":               {Count: 3, P50NS: 600000, P95NS: 900000},
		"other_busy_cpu.preempt":       {Count: 2, P50NS: 600000, P95NS: 900000},
		"other_busy_cpu.preempt.first": {Count: 1, P50NS: 600000, P95NS: 600000},
		"other_busy_cpu.block":         {Count: 1, P50NS: 300000, P95NS: 300000},
	}
	if !reflect.DeepEqual(mt.WakeupByPlace, want) {
		t.Errorf("wakeups by place %+v, want %+v", mt.WakeupByPlace, want)
	}
	if n := mt.WakeupByPlace["idle_cpu"].Count + mt.WakeupByPlace["waker_cpu"].Count + mt.WakeupByPlace["other_busy_cpu"].Count; n != mt.WakeupCount {
		t.Errorf("places hold %d wakeups, the latency %d", n, mt.WakeupCount)
	}
}

// BenchmarkWakePlace measures the placement tally's cost per event on the
// largest real fixture (what it adds to measuring a trace or a replay).
func BenchmarkWakePlace(b *testing.B) {
	benchEvents(b, func() func(*timeline.Event) {
		p := newPlaceTally()
		return func(e *timeline.Event) { p.before(e); p.after(e) }
	})
}

// TestForkNumaIdleDiff: find_idlest_group's NUMA allowance for a new task
// on a machine whose imb_numa_nr is large (spr-2s56c: two nodes of 112
// CPUs). With k of node 0's CPUs running one task each (util 1024, so
// each CPU busy but the node has spare capacity) and node 1 idle, the
// fork from CPU 0 stays on node 0 while k + 1 <= imb_numa_nr; from v6.0
// only while the idle counts differ by at most 2 as well: k = 2 stays, k
// = 4 goes to node 1 (idle 108 < 112). Before v6.0 (numa-float) k = 4
// stays too.
func TestForkNumaIdleDiff(t *testing.T) {
	for _, c := range []struct {
		policy string
		k      int
		remote bool
	}{{"v6.1", 2, false}, {"v6.1", 4, true}, {"numa-float", 4, false}} {
		b := newBuilder(t, "spr-2s56c")
		var ids []int32
		for i := 0; i <= c.k; i++ {
			ids = append(ids, b.task(string(rune('a'+i)), 120, int32(i), true, CauseStart, ms))
		}
		cfg := testConfig()
		cfg.Policy = mustPolicy(t, c.policy)
		s, _ := newSim(t, b.done(t), cfg)
		var sd *model.SchedDomain
		for _, d := range s.domains(0) {
			if d.Flags&model.SDNUMA != 0 {
				sd = d
			}
		}
		if sd == nil || sd.ImbNUMANr <= c.k+1 {
			t.Fatalf("spr-2s56c: NUMA domain %v, imb_numa_nr too small for k=%d", sd != nil, c.k)
		}
		for i := 0; i < c.k; i++ {
			r := s.cpus[i]
			r.curr, r.nrCFS = s.tasks[ids[i]], 1
			r.avg.utilAvg, r.avg.runnableAvg, r.avg.loadAvg = 1024, 1024, 1024
		}
		g := findIdlestGroup(simFork{s, s.tasks[ids[c.k]]}, sd, 0)
		if got := g != nil && !inSpan(g.Span, 0); got != c.remote {
			t.Errorf("%s, %d busy on node 0 (imb_numa_nr %d): remote %v, want %v", c.policy, c.k, sd.ImbNUMANr, got, c.remote)
		}
	}
}

// measureEvents runs a simulated schedule's measurer over evs on ncpu
// CPUs (no domain levels) and returns its metrics.
func measureEvents(t *testing.T, ncpu int, evs []timeline.Event) *Metrics {
	t.Helper()
	m := NewMeasurer(nil, ncpu)
	for i := range evs {
		if err := m.Emit(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	mt, _, err := m.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return mt
}
