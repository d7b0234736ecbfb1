package whatif

import "testing"

// capacity_of() is the CPU's capacity less the RT class's running-time
// average (scale_rt_capacity), and wake_affine_weight scales each side's
// load by the other CPU's capacity_of. State set by hand on 2 CPUs (one
// MC domain, imbalance_pct 117, so prev's bias is 100 + 17/2 = 108): CPU 0
// runs the waker W (load 300) with another task queued, cpu_load 1400;
// CPU 1, the wakee P's previous CPU (P's load 300), runs a task, cpu_load
// 1300; no WF_SYNC.
//   - Both at 1024: this_eff = (1400 + 300) × 100 × 1024 = 174,080,000,
//     prev_eff = (1300 − 300) × 108 × 1024 = 110,592,000: prev (CPU 1).
//   - capacity_of(1) = 600 (an RT util of 424 taken off): this_eff =
//     1700 × 100 × 600 = 102,000,000 < 110,592,000: the waker's CPU 0.
//   - capacity_of(0) = 600 instead: prev_eff = 1000 × 108 × 600 =
//     64,800,000 < this_eff: prev.
func TestWakeAffineWeightRTPressure(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	wk := b.task("w", 120, 0, true, CauseStart, ms)
	b.task("o", 120, 0, false, CauseStart, ms)
	q := b.task("q", 120, 1, true, CauseStart, ms)
	p := b.task("p", 120, 1, false, CauseWake, ms)
	b.edge(wk, 0, ms/2, p, 0)
	w := b.done(t)
	s, _ := newSim(t, w, testConfig())
	sd := s.domains(0)[0]
	if sd.ImbalancePct != 117 {
		t.Fatalf("imbalance_pct %d, the hand computation assumes 117", sd.ImbalancePct)
	}
	r0, r1 := s.cpus[0], s.cpus[1]
	r0.curr, r0.nrCFS, r0.avg.loadAvg = s.tasks[wk], 2, 1400
	r1.curr, r1.nrCFS, r1.avg.loadAvg = s.tasks[q], 1, 1300
	s.tasks[wk].avg.loadAvg, s.tasks[p].avg.loadAvg = 300, 300
	s.syncWake = false
	for _, c := range []struct {
		name       string
		cap0, cap1 uint64
		want       int
	}{
		{"no RT pressure", 1024, 1024, 1},
		{"RT on the wakee's previous CPU", 1024, 600, 0},
		{"RT on the waker's CPU", 600, 1024, 1},
	} {
		r0.cpuCapacity, r1.cpuCapacity = c.cap0, c.cap1
		if got := s.wakeAffine(sd, s.tasks[p], 0, 1, s.tasks[wk]); got != c.want {
			t.Errorf("%s: wake_affine chose CPU %d, want %d", c.name, got, c.want)
		}
	}
}

// rq->avg_rt follows the RT class's running time, not the stopper's
// (migration/N: the stop class, above RT), and capacity_of() changes only
// when the CPU refreshes it (update_cpu_capacity, from its own load
// balancing). By hand: a signal that was 0 and is fed 1 for 32 whole
// PELT periods (32 × 1024 × 1024 ns, from a period boundary) sums 1024 ×
// (y + y² + … + y³²) = LOAD_AVG_MAX − decay(LOAD_AVG_MAX, 32) − 1024 +
// 1024·y³² = 47,742 − 23,871 − 1,024 + 512 = 23,359 (y³² = 1/2 exactly in
// the decay table), over the divider LOAD_AVG_MAX − 1024 = 46,718: util
// 1024 × 23,359 / 46,718 = 512, so capacity_of 512.
func TestCPUCapacityFromRTAverage(t *testing.T) {
	const period = 1024 * 1024
	for _, c := range []struct {
		comm           string
		prio           int32
		utilLo, utilHi uint64
	}{
		{"rtx", 50, 512, 512},
		{"migration/1", 0, 0, 0},
	} {
		t.Run(c.comm, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=2,threads=1")
			x := b.task(c.comm, c.prio, 1, true, CauseStart, 100*ms)
			w := b.done(t)
			s, _ := newSim(t, w, testConfig())
			r := s.cpus[1]
			s.now = t0
			s.updateRT(r) // idle so far: the signal starts at t0
			r.curr = s.tasks[x]
			s.now = t0 + 32*period
			s.updateRT(r)
			if r.cpuCapacity != 1024 {
				t.Fatalf("capacity_of before the CPU refreshed it: %d, want 1024", r.cpuCapacity)
			}
			u := r.avgRT.utilAvg
			if u < c.utilLo || u > c.utilHi {
				t.Fatalf("avg_rt util %d, want %d..%d", u, c.utilLo, c.utilHi)
			}
			s.updateCPUCapacity(r)
			if want := 1024 - u; r.cpuCapacity != want {
				t.Errorf("capacity_of %d, want 1024 − %d = %d", r.cpuCapacity, u, want)
			}
		})
	}
}

// check_cpu_capacity(): a capacity for the fair class more than the
// domain's imbalance_pct below the original is reduced. With 117: 875 ×
// 117 = 102,375 < 102,400 = 1024 × 100 is reduced, 876 × 117 = 102,492
// is not.
func TestCheckCPUCapacity(t *testing.T) {
	for _, c := range []struct {
		capacity uint64
		want     bool
	}{{875, true}, {876, false}, {1024, false}, {1, true}} {
		r := &rq{capacity: 1024, cpuCapacity: c.capacity}
		if got := checkCPUCapacity(r, 117); got != c.want {
			t.Errorf("capacity_of %d: reduced %v, want %v", c.capacity, got, c.want)
		}
	}
}

// reducedCapacityCPU1 is two CPUs of one MC domain under policy, CPU 1
// running task 0 (comm, prio) with its capacity cut to 600 by RT pressure
// (load 1024, util and runnable 600), CPU 0 idle; task 1, "y", sleeps on
// CPU 1.
func reducedCapacityCPU1(t *testing.T, policy, comm string, prio int32) *Sim {
	t.Helper()
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	x := b.task(comm, prio, 1, true, CauseStart, 10*ms)
	b.task("y", 120, 1, false, CauseStart, 10*ms)
	cfg := testConfig()
	cfg.Policy = mustPolicy(t, policy)
	s, _ := newSim(t, b.done(t), cfg)
	r1 := s.cpus[1]
	r1.curr, r1.nrCFS, r1.cpuCapacity = s.tasks[x], 1, 600
	r1.avg.loadAvg, r1.avg.utilAvg, r1.avg.runnableAvg = 1024, 600, 600
	return s
}

// A CPU running one CFS task whose capacity RT pressure has reduced by
// more than imbalance_pct (capacity_of 600: 600 × 117 < 1024 × 100) is a
// misfit group for an idle balancer (sched_reduced_capacity, v6.0): its
// cpu_load (1024) becomes the group's misfit load, the group is the
// busiest, and v6.1 asks for migrate_load of that load. A busy balancer
// (CPU_NOT_IDLE) does not look for it; nor does llc-nr-running (v5.10),
// which has no reduced-capacity misfit. On two sockets of two CPUs, the
// same CPU 2 beside an idle CPU 3 is a misfit group for CPU 0 (idle)
// even with the local group fully busy (CPU 1 runs two tasks, runnable
// 2,500 > 2,048 × 1.17): the "misfit we can't help" test, which wants a
// has_spare local group, is for asymmetric domains only from v6.0.
func TestReducedCapacityMisfit(t *testing.T) {
	for _, c := range []struct {
		policy string
		idle   IdleType
		misfit bool
	}{{"v6.1", CPUIdle, true}, {"v6.1", CPUNotIdle, false}, {"llc-nr-running", CPUIdle, false}} {
		s := reducedCapacityCPU1(t, c.policy, "x", 120)
		e := s.newLBRun(s.cpus[0].sd[0], 0, c.idle)
		sds, _ := s.findBusiestGroup(e)
		got := sds != nil && sds.Busiest != nil && sds.Busiest.GroupType == GroupMisfitTask
		if got != c.misfit {
			t.Errorf("%s idle %v: misfit busiest %v, want %v", c.policy, c.idle, got, c.misfit)
			continue
		}
		if got && (e.MigrationType != MigrateLoad || e.Imbalance != 1024) {
			t.Errorf("%s: %v imbalance %d, want migrate_load 1024", c.policy, e.MigrationType, e.Imbalance)
		}
	}
}

func TestReducedCapacityMisfitBusyLocal(t *testing.T) {
	b := newBuilder(t, "sockets=2,cores=2,threads=1")
	x := b.task("x", 120, 1, true, CauseStart, 10*ms)
	y := b.task("y", 120, 1, false, CauseStart, 10*ms)
	z := b.task("z", 120, 2, true, CauseStart, 10*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	r1, r2 := s.cpus[1], s.cpus[2]
	r1.curr, r1.nrCFS = s.tasks[x], 2
	r1.avg.loadAvg, r1.avg.utilAvg, r1.avg.runnableAvg = 2048, 1024, 2500
	_ = y
	r2.curr, r2.nrCFS, r2.cpuCapacity = s.tasks[z], 1, 600
	r2.avg.loadAvg, r2.avg.utilAvg, r2.avg.runnableAvg = 1024, 600, 600
	sds0 := s.cpus[0].sd
	e := s.newLBRun(sds0[len(sds0)-1], 0, CPUIdle)
	sds, _ := s.findBusiestGroup(e)
	if sds == nil || sds.Local == nil || sds.Local.GroupType != GroupFullyBusy {
		t.Fatalf("local group: %+v, want fully busy", sds)
	}
	if sds.Busiest == nil || sds.Busiest.GroupType != GroupMisfitTask || e.MigrationType != MigrateLoad || e.Imbalance != 1024 {
		t.Errorf("busiest %+v, %v %d; want the misfit group, migrate_load 1024", sds.Busiest, e.MigrationType, e.Imbalance)
	}
}

// find_busiest_queue starts from load 0 over capacity 1 (and util 0): a
// CPU with tasks but cpu_load 0 (or cpu_util 0) is never the busiest, so
// load_balance goes out balanced; with load 1 it is chosen.
func TestFindBusiestQueueZeroLoad(t *testing.T) {
	for _, c := range []struct {
		mt   MigrationType
		load uint64
		want int
	}{{MigrateLoad, 0, -1}, {MigrateLoad, 1, 1}, {MigrateUtil, 0, -1}, {MigrateUtil, 5, 1}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("x", 120, 1, true, CauseStart, 10*ms)
		s, _ := newSim(t, b.done(t), testConfig())
		r1 := s.cpus[1]
		r1.nrCFS = 2
		r1.avg.loadAvg, r1.avg.utilAvg = c.load, c.load
		st := s.cpus[0].sd[0]
		e := s.newLBRun(st, 0, CPUIdle)
		e.MigrationType, e.Imbalance = c.mt, 1<<20
		if got := s.findBusiestQueue(e, st.groups[1]); got != c.want {
			t.Errorf("%v, load/util %d: busiest %d, want %d", c.mt, c.load, got, c.want)
		}
	}
}

// rebalance_domains sets the CPU's next_balance only; nohz.next_balance
// is the idle balancer's (6.1; older kernels lowered it here too). An idle
// CPU balancing from its own tick leaves a later nohz.next_balance as it
// is.
func TestRebalanceLeavesNohzNext(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	b.task("x", 120, 1, true, CauseStart, 10*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	s.now = 100 * ms
	far := s.jiffies() + 1000
	s.nohz.nextBalance = far
	r := s.cpus[0]
	s.rebalanceDomains(r, CPUIdle, MigrationSourcePeriodic)
	if r.nextBalance >= far {
		t.Fatalf("CPU next_balance %d, want before %d", r.nextBalance, far)
	}
	if s.nohz.nextBalance != far {
		t.Errorf("nohz.next_balance lowered to %d", s.nohz.nextBalance)
	}
}

// nohz_balancer_kick: a busy CPU running one CFS task whose capacity RT
// pressure reduced (600 × 117 < 1024 × 100) kicks the idle balancer to
// balance (STATS | BALANCE) when nohz.next_balance is due, though it runs
// a single task and the LLC has one busy CPU; at full capacity it does not.
func TestNohzKickReducedCapacity(t *testing.T) {
	for _, c := range []struct {
		capacity uint64
		want     int
	}{{600, kickStats | kickBalance}, {1024, 0}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		x := b.task("x", 120, 0, true, CauseStart, 10*ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.now = 100 * ms
		r := s.cpus[0]
		r.curr, r.nrCFS, r.cpuCapacity = s.tasks[x], 1, c.capacity
		s.nohz.idle[1], s.nohz.nrCPUs = true, 1
		s.nohz.nextBalance = s.jiffies()
		s.nohz.hasBlocked = false
		s.nohzBalancerKick(r)
		if got := s.nohz.kickFlags[1]; got != c.want {
			t.Errorf("capacity %d: kick flags %#x, want %#x", c.capacity, got, c.want)
		}
	}
}

// load_balance sends the stopper only for a current task that may run on
// dst: busiest (CPU 1) runs its only CFS task, its capacity reduced by RT
// pressure, and the idle CPU 0 balances. A task free to move is pushed
// (one active balance, the interval back to min_interval, 2 ms for this
// two-CPU MC domain); a kworker pinned to CPU 1 sends load_balance out by
// out_one_pinned (no kick, the failure it counted kept, the interval
// doubled): LBF_ALL_PINNED, set before the nr_running test since v5.12
// and never cleared with one task on CPU 1, lets it pass max_interval (4
// ms) up to MAX_PINNED_INTERVAL (512 ms); before v5.12 (v6.1 without
// 8a41dfcda7a3) out_one_pinned set the flag itself on that path, so the
// same. An RT task running over
// a cache-hot queued CFS task (not movable while nr_balance_failed is
// within cache_nice_tries) is preempted by the stopper like any other, so
// it kicks too.
func TestActiveBalancePinnedCurr(t *testing.T) {
	for _, c := range []struct {
		policy          string
		comm            string
		prio            int32
		start, interval int64
		kick            bool
	}{
		{"v6.1", "x", 120, 4, 2, true},
		{"v6.1", "kworker/1:0", 120, 2, 4, false},
		{"v6.1", "kworker/1:0", 120, 4, 8, false},
		{"v6.1", "kworker/1:0", 120, 512, 512, false},
		{"v6.1~8a41dfcda7a3", "kworker/1:0", 120, 4, 8, false},
		{"v6.1", "rt", 50, 4, 2, true},
	} {
		s := reducedCapacityCPU1(t, c.policy, c.comm, c.prio)
		s.now = 100 * ms
		r1 := s.cpus[1]
		if y := s.tasks[1]; c.prio < 100 {
			// CFS: y queued behind the RT task, having just run.
			r1.treeInsert(y)
			y.execStart = s.now - 1000
		}
		st := s.cpus[0].sd[0]
		st.balanceInterval = c.start
		cont := true
		moved := s.loadBalance(s.cpus[0], st, CPUIdle, &cont, MigrationSourcePeriodic)
		if moved != 0 || r1.activeBalance != c.kick || (s.stats.ActiveBalances == 1) != c.kick {
			t.Errorf("%s %s: moved %d, active balance %v (%d); want 0, %v", c.policy, c.comm, moved, r1.activeBalance, s.stats.ActiveBalances, c.kick)
		}
		if st.balanceInterval != c.interval || st.nrBalanceFailed != 1 {
			t.Errorf("%s %s: interval %d ms, nr_balance_failed %d; want %d, 1", c.policy, c.comm, st.balanceInterval, st.nrBalanceFailed, c.interval)
		}
	}
}

// nohz_csd_func balances only if the kicked CPU is still idle when the
// IPI lands: CPU 0's tick kicks the idle CPU 1 for the idle CPUs'
// blocked load, due for a refresh; if a task reached CPU 1 meanwhile, the
// kick's flags are dropped and nothing is refreshed (nohz.has_blocked
// stays set, next_blocked as it was).
func TestNohzKickDroppedWhenBusy(t *testing.T) {
	for _, busy := range []bool{false, true} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		x := b.task("x", 120, 0, true, CauseStart, 10*ms)
		y := b.task("y", 120, 1, false, CauseStart, 10*ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.now = 100 * ms
		r0, r1 := s.cpus[0], s.cpus[1]
		r0.curr, r0.nrCFS = s.tasks[x], 1
		s.nohz.idle[1], s.nohz.nrCPUs = true, 1
		s.nohz.nextBalance = s.jiffies() + 100
		s.nohz.hasBlocked, s.nohz.nextBlocked = true, s.now-ms
		s.nohzBalancerKick(r0)
		if got := s.nohz.kickFlags[1]; got != kickStats {
			t.Fatalf("kick flags %#x, want STATS", got)
		}
		if busy {
			r1.curr, r1.nrCFS = s.tasks[y], 1
		}
		s.now += s.cfg.IPILatencyNS
		s.nohzCSD(1)
		if s.nohz.kickFlags[1] != 0 {
			t.Errorf("busy %v: flags %#x left, want none", busy, s.nohz.kickFlags[1])
		}
		dropped := s.stats.NohzKicksDropped == 1
		refreshed := !s.nohz.hasBlocked && s.nohz.nextBlocked == s.now+32*ms
		if dropped != busy || refreshed == busy || busy && (!s.nohz.hasBlocked || s.nohz.nextBlocked != s.now-s.cfg.IPILatencyNS-ms) {
			t.Errorf("busy %v: dropped %v, blocked load refreshed %v (has_blocked %v)", busy, dropped, refreshed, s.nohz.hasBlocked)
		}
	}
}

// A balance pass whose busiest CPU runs only tasks pinned there tries
// again without it (load_balance's redo) while CPUs outside the local
// group remain. By hand, three CPUs in one MC domain (groups of one
// CPU): CPU 1 runs two per-CPU kworkers (load 3000, util 1000), CPU 2
// two free tasks (load 2000, util 900); both overloaded, CPU 1 busiest by
// load. The idle CPU 0 (local group, has spare: migrate_util, imbalance
// 1024) finds every task of CPU 1 pinned, drops CPU 1 and redoes: CPU 2
// is busiest and its queued task (util 400, never run: not cache hot)
// moves to CPU 0. The redo's statistics are its own: SIS_UTIL's scan
// budget comes from the second pass's sum_util alone (CPU 0's 0 and CPU
// 2's 900: x = 900/3 = 300, 300² × 117² / (10000 × 1024) = 120, (1024 −
// 120) × 3 / 1024 = 2 CPUs; the first pass's 1,900 had given 1, and the
// two summed, 2,800, none). With CPU 2 also pinned-only, the redo finds
// nothing left outside the local group and goes out all-pinned: the
// failure count reset, the interval doubling up to 512 ms.
func TestAllPinnedRedo(t *testing.T) {
	for _, pinned2 := range []bool{false, true} {
		b := newBuilder(t, "sockets=1,cores=3,threads=1")
		names := []string{"kworker/1:0", "kworker/1:1", "a", "b"}
		if pinned2 {
			names[2], names[3] = "kworker/2:0", "kworker/2:1"
		}
		for i, n := range names {
			b.task(n, 120, int32(1+i/2), i%2 == 0, CauseStart, 10*ms)
		}
		s, _ := newSim(t, b.done(t), testConfig())
		s.now = t0
		for i, p := range s.tasks {
			r := s.cpus[1+i/2]
			p.trig[0] = true
			s.startActivation(p, 0)
			p.avg.lastUpdate = s.now
			p.avg.utilAvg = 400
			s.enqueue(r, p, enqStart)
			if i%2 == 0 {
				s.switchTo(r, p, "")
			}
		}
		r1, r2 := s.cpus[1], s.cpus[2]
		r1.avg.loadAvg, r1.avg.utilAvg, r1.avg.runnableAvg = 3000, 1000, 2000
		r2.avg.loadAvg, r2.avg.utilAvg, r2.avg.runnableAvg = 2000, 900, 1800
		st := s.cpus[0].sd[0]
		st.balanceInterval, st.nrBalanceFailed = 12, 3
		cont := true
		moved := s.loadBalance(s.cpus[0], st, CPUIdle, &cont, MigrationSourcePeriodic)
		want, wantInterval := 1, int64(3) // min_interval: the span's weight
		if pinned2 {
			want, wantInterval = 0, 24
		}
		if moved != want || st.balanceInterval != wantInterval {
			t.Errorf("CPU 2 pinned %v: moved %d, interval %d ms; want %d, %d", pinned2, moved, st.balanceInterval, want, wantInterval)
		}
		if r0 := s.cpus[0]; !pinned2 && (r0.curr != s.tasks[3] || len(r0.tree) != 0) {
			t.Errorf("CPU 0 runs %v with %d queued, want b alone", r0.curr, len(r0.tree))
		}
		if !pinned2 && s.llc[0].nrIdleScan != 2 {
			t.Errorf("nr_idle_scan %d after the redo, want 2", s.llc[0].nrIdleScan)
		}
		if st.nrBalanceFailed != 0 {
			t.Errorf("CPU 2 pinned %v: nr_balance_failed %d, want 0", pinned2, st.nrBalanceFailed)
		}
	}
}
