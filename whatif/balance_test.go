package whatif

import (
	"fmt"
	"testing"
)

// should_we_balance by hand on two sockets of two cores of two SMT
// threads (cores {0,1} {2,3} | {4,5} {6,7}): at the top level CPU 0's
// local group is its socket, {0,1,2,3}. Which of its CPUs balances the
// level at the tick, with busy CPUs marked b and idle ones i:
//
//   - b i i i: v6.1 takes the first idle CPU, 1; v6.6's b1bfeab9b002
//     skips 1 (its sibling 0 is busy) for the first CPU of the idle core
//     {2,3}, 2.
//   - b i i b: no core is idle; both take 1, the first idle CPU, and
//     with 6d7e4782bcf5 not the group's first CPU 0 as well (the bug it
//     fixed: b1bfeab9b002 alone let 0 and 1 both balance).
//   - b b b b: no CPU is idle; the group's first, 0.
//   - i i i i: every core idle; the first, 0.
//
// At the MC level CPU 0's local group is its core, {0,1}: with b i its
// only idle CPU, 1, balances under both rules (the core rule finds no
// idle core and takes the first idle CPU with a busy sibling).
func TestShouldWeBalanceIdleCore(t *testing.T) {
	for _, c := range []struct {
		policy, busy string
		top, mc      int // the CPU of {0,1,2,3} that balances each level
	}{
		{"v6.1", "b i i i", 1, 1},
		{"v6.6", "b i i i", 2, 1},
		{"v6.12", "b i i i", 2, 1},
		{"v6.1", "b i i b", 1, 1},
		{"v6.6", "b i i b", 1, 1},
		{"v6.6", "b b b b", 0, 0},
		{"v6.6", "i i i i", 0, 0},
	} {
		t.Run(c.policy+"/"+c.busy, func(t *testing.T) {
			s := handSim(t, "sockets=2,cores=2,threads=2", c.policy, "a", "b", "c", "d")
			if sib := s.smtSiblings(0); len(sib) != 2 || sib[1] != 1 {
				t.Fatalf("CPU 0's siblings %v, want [0 1]", sib)
			}
			if sib := s.smtSiblings(2); len(sib) != 2 || sib[0] != 2 || sib[1] != 3 {
				t.Fatalf("CPU 2's siblings %v, want [2 3]", sib)
			}
			k := 0
			for cpu, f := range []byte{c.busy[0], c.busy[2], c.busy[4], c.busy[6]} {
				if f == 'b' {
					handSet(s, s.cpus[cpu], s.tasks[k], 0, 0, tsRunning)
					k++
				}
			}
			for _, lv := range []struct {
				span, want int
				cpus       []int // the CPUs of CPU 0's local group
			}{{4, c.mc, []int{0, 1}}, {8, c.top, []int{0, 1, 2, 3}}} {
				var got []int
				for _, cpu := range lv.cpus {
					e := s.newLBRun(domainOfSpan(t, s, cpu, lv.span), cpu, CPUIdle)
					if s.shouldWeBalance(e) {
						got = append(got, cpu)
					}
					s.endLBRun()
				}
				if len(got) != 1 || got[0] != lv.want {
					t.Errorf("the %d-CPU level: CPUs %v balance, want [%d]", lv.span, got, lv.want)
				}
			}
		})
	}
}

// domainOfSpan is CPU cpu's domain of n CPUs.
func domainOfSpan(t *testing.T, s *Sim, cpu, n int) *sdState {
	t.Helper()
	var names []string
	for _, st := range s.cpus[cpu].sd {
		if st.sd.SpanWeight == n {
			return st
		}
		names = append(names, fmt.Sprintf("%s%v", st.sd.Name, st.sd.Span))
	}
	t.Fatalf("CPU %d has no domain of %d CPUs: %v", cpu, n, names)
	return nil
}

// The balancer's count of a CPU's CFS tasks, by hand on two sockets of two
// CPUs: the top level's busiest group is {2,3}, CPU 2 with one runnable
// task and one delayed-dequeue task (blocked, kept queued), CPU 3 with two
// runnable. Until v6.14 (cfs.h_nr_running) the delayed task counts: the
// group's sum_h_nr_running is 4 and find_busiest_queue's migrate_task
// takes the first of the two CPUs with two, 2. With 1a49104496d3
// (h_nr_runnable: latest) the sum is 3 and CPU 3, the only one with two,
// is the busiest. sum_nr_running (rq->nr_running) counts the delayed task
// under both.
func TestBalancerCountsDelayedTasks(t *testing.T) {
	for _, c := range []struct {
		policy        string
		sumH, busiest int
	}{{"v6.12", 4, 2}, {"latest~1a49104496d3", 4, 2}, {"latest", 3, 3}} {
		t.Run(c.policy, func(t *testing.T) {
			s := handSim(t, "sockets=2,cores=2,threads=1", c.policy, "x")
			r2, r3 := s.cpus[2], s.cpus[3]
			r2.nrCFS, r2.nrDelayed = 1, 1
			r3.nrCFS = 2
			for _, r := range []*rq{r2, r3} {
				r.avg.loadAvg, r.avg.utilAvg = 1024, 1024
			}
			st := domainOfSpan(t, s, 0, 4)
			e := s.newLBRun(st, 0, CPUIdle)
			defer s.endLBRun()
			g := st.groups[1]
			if len(g.Span) != 2 || g.Span[0] != 2 {
				t.Fatalf("the other group is %v, want [2 3]", g.Span)
			}
			var sgs SGStats
			s.updateSGLBStats(e, g, &sgs, false)
			if int(sgs.SumHNrRunning) != c.sumH || sgs.SumNrRunning != 4 {
				t.Errorf("sum_h_nr_running %d, sum_nr_running %d; want %d, 4", sgs.SumHNrRunning, sgs.SumNrRunning, c.sumH)
			}
			e.MigrationType, e.Imbalance = MigrateTask, 1
			if got := s.findBusiestQueue(e, g); got != c.busiest {
				t.Errorf("busiest queue %d, want %d", got, c.busiest)
			}
		})
	}
}

// find_busiest_queue's migrate_util by hand (the top level of two sockets
// of two CPUs, busiest group {2,3}): CPU 2 runs three tasks that share it
// (util_avg 600, runnable_avg 1,500: contention), CPU 3 two (util_avg and
// runnable_avg 900). By cpu_util_cfs (v6.1) CPU 3 is the busier, 900
// against 600; by the runnable-boosted utilisation (v6.6 on, 7d0583cf9ec7)
// CPU 2, min(1,500, capacity 1,024) against 900.
func TestMigrateUtilRunnableBoost(t *testing.T) {
	for _, c := range []struct {
		policy  string
		busiest int
	}{{"v6.1", 3}, {"v6.6", 2}, {"v6.12", 2}, {"latest", 2}, {"v6.12~7d0583cf9ec7", 3}, {"v6.1+7d0583cf9ec7", 2}} {
		t.Run(c.policy, func(t *testing.T) {
			s := handSim(t, "sockets=2,cores=2,threads=1", c.policy, "x")
			r2, r3 := s.cpus[2], s.cpus[3]
			r2.nrCFS, r3.nrCFS = 3, 2
			r2.avg.utilAvg, r2.avg.runnableAvg = 600, 1500
			r3.avg.utilAvg, r3.avg.runnableAvg = 900, 900
			st := domainOfSpan(t, s, 0, 4)
			e := s.newLBRun(st, 0, CPUIdle)
			defer s.endLBRun()
			e.MigrationType, e.Imbalance = MigrateUtil, 1024
			if got := s.findBusiestQueue(e, st.groups[1]); got != c.busiest {
				t.Errorf("busiest queue %d, want %d", got, c.busiest)
			}
		})
	}
}

// can_migrate_task's eligibility rule (v6.14, 873199d27bb2), by hand on
// two CPUs under EEVDF, vruntimes in ms: CPU 1 runs X at 0 with A queued
// at 0 and B at 3, equal weights, so V = 1: A is eligible, B is not. CPU 0
// runs D. With the domain's nr_balance_failed 0 latest leaves B where it
// is and may move A; v6.12 (and latest without the commit) may move both.
// With a failure counted, or with CPU 0 idle (nothing queued there), B may
// move under latest too. The tasks last ran long ago (not cache-hot).
func TestMigrateEligibleFirst(t *testing.T) {
	for _, c := range []struct {
		policy       string
		failed       int
		dstIdle      bool
		moveA, moveB bool
	}{
		{"v6.12", 0, false, true, true},
		{"latest", 0, false, true, false},
		{"latest~873199d27bb2", 0, false, true, true},
		{"latest", 1, false, true, true},
		{"latest", 0, true, true, true},
	} {
		name := fmt.Sprintf("%s/failed=%d/dstIdle=%v", c.policy, c.failed, c.dstIdle)
		t.Run(name, func(t *testing.T) {
			s := handSim(t, "sockets=1,cores=2,threads=1", c.policy, "x", "a", "b", "d")
			x, a, b, d := s.tasks[0], s.tasks[1], s.tasks[2], s.tasks[3]
			r0, r1 := s.cpus[0], s.cpus[1]
			handSet(s, r1, x, 0, 2*ms, tsRunning)
			handSet(s, r1, a, 0, 2*ms, tsQueued)
			handSet(s, r1, b, 3*ms, 5*ms, tsQueued)
			if !c.dstIdle {
				handSet(s, r0, d, 0, 2*ms, tsRunning)
			}
			if !r1.eligible(a) || r1.eligible(b) {
				t.Fatalf("eligible: A %v, B %v; want true, false", r1.eligible(a), r1.eligible(b))
			}
			for _, p := range []*simTask{a, b} {
				p.execStart = -1
			}
			st := r0.sd[0]
			st.nrBalanceFailed = c.failed
			e := s.newLBRun(st, 0, CPUIdle)
			defer s.endLBRun()
			e.src = 1
			if got := s.canMigrateTask(e, a, r1); got != c.moveA {
				t.Errorf("A movable %v, want %v", got, c.moveA)
			}
			if got := s.canMigrateTask(e, b, r1); got != c.moveB {
				t.Errorf("B movable %v, want %v", got, c.moveB)
			}
		})
	}
}
