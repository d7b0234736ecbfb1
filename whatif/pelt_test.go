package whatif

import "testing"

// TestInitTaskPELT checks post_init_entity_util_avg by hand: a new task's
// util_avg (and runnable_avg) is cap = (1024 - cfs util) / 2, or, from
// v6.10 (72bffbf57c52), cfs util × weight / (cfs load + 1) when smaller.
// Before the fix the weight was the 64-bit kernel's scaled one (× 1024),
// so the cap won whenever the cfs_rq had any util.
func TestInitTaskPELT(t *testing.T) {
	for _, c := range []struct {
		name         string
		util, load   uint64
		nice         int
		before, v610 uint64
	}{
		// cap 312; 400 × 1024 / 3001 = 136.5; × 1024 more = 139,762.
		{"busy CPU", 400, 3000, 0, 312, 136},
		// util 0: the cap, 512, either way.
		{"idle CPU", 0, 0, 0, 512, 512},
		// no spare capacity: 0.
		{"full CPU", 1024, 5000, 0, 0, 0},
		// cap 462 below 100 × 1024 / 101 = 1,013: the cap either way.
		{"light load", 100, 100, 0, 462, 462},
		// nice 19 (weight 15): cap 212; 600 × 15 / 2001 = 4.5.
		{"nice 19", 600, 2000, 19, 212, 4},
	} {
		for _, fixed := range []bool{false, true} {
			s := &Sim{}
			s.knobs.InitUtilTrueWeight = fixed
			r := &rq{}
			r.avg.utilAvg, r.avg.loadAvg = c.util, c.load
			tk := &simTask{weight: weightOfNice(c.nice)}
			s.initTaskPELT(tk, r)
			want := c.before
			if fixed {
				want = c.v610
			}
			if tk.avg.utilAvg != want || tk.avg.runnableAvg != want {
				t.Errorf("%s (v6.10 fix %v): util %d runnable %d, want %d", c.name, fixed, tk.avg.utilAvg, tk.avg.runnableAvg, want)
			}
			if tk.avg.loadAvg != tk.weight {
				t.Errorf("%s: load_avg %d, want the weight %d", c.name, tk.avg.loadAvg, tk.weight)
			}
		}
	}
}

// TestPELTKnobsByPolicy: 72bffbf57c52 is in v6.10 and later policies only
// (the 6.1.y and 6.6.y stable series did not take it: no stable tag, and
// their fair.c at 6.1.166 and 6.6.150 still multiplies by se->load.weight).
func TestPELTKnobsByPolicy(t *testing.T) {
	for name, want := range map[string]bool{"v6.1": false, "v6.6": false, "v6.10": true, "v6.12": true, "latest": true} {
		p, err := LookupPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		rp, ok := asRules(p)
		if !ok {
			t.Fatalf("%s: not a rule-set policy", name)
		}
		if rp.knobs.InitUtilTrueWeight != want {
			t.Errorf("%s: InitUtilTrueWeight %v, want %v", name, rp.knobs.InitUtilTrueWeight, want)
		}
		// util_est: 6.1.y's two fields without the runnable skip, 6.6.y's
		// with it, v6.9's single EWMA from v6.10 on.
		if k := rp.knobs; k.UtilEstSingle != want || k.UtilEstRunnableSkip != (name != "v6.1") {
			t.Errorf("%s: util_est knobs single %v runnable skip %v", name, k.UtilEstSingle, k.UtilEstRunnableSkip)
		}
	}
}

// TestYInvTable: the decay factors equal the kernel's runnable_avg_yN_inv
// (kernel/sched/sched-pelt.h, the same in v6.1 and later), checked at two
// entries where truncating 2^32 × y^n instead gives one more ([1], [27]),
// at two where it does not ([9], [16]) and at the ends.
func TestYInvTable(t *testing.T) {
	for n, want := range map[int]uint64{0: 0xffffffff, 1: 0xfa83b2da, 9: 0xd2a81d91, 16: 0xb504f333, 27: 0x8ea4398a, 31: 0x82cd8698} {
		if yInv[n] != want {
			t.Errorf("yInv[%d] = %#x, want %#x", n, yInv[n], want)
		}
	}
}

// TestAttachLoadSum: attach_entity_load_avg rebuilds load_sum as load_avg
// × divider / weight, and 1 when that product is not above the weight.
func TestAttachLoadSum(t *testing.T) {
	var rq avg
	se := avg{loadAvg: 1024}
	rq.attach(&se, 1024)
	if want := uint64(peltMinDivider); se.loadSum != want {
		t.Errorf("load_sum %d, want %d", se.loadSum, want)
	}
	se = avg{loadAvg: 0}
	rq.attach(&se, 1024)
	if se.loadSum != 1 {
		t.Errorf("load_avg 0: load_sum %d, want 1", se.loadSum)
	}
}

// TestUtilEstUpdate works util_est_update by hand through a task's sleeps
// (capacity 1024, margin 10): 6.1's two fields, 6.6.y's runnable skip and
// v6.9's single EWMA.
func TestUtilEstUpdate(t *testing.T) {
	type step struct {
		util, runnable uint64
		changed        bool // PELT averages changed since the last sample
		ewma, enq      uint64
	}
	for _, c := range []struct {
		name  string
		knobs Knobs
		steps []step
	}{
		{"v6.1", Knobs{}, []step{
			{300, 300, true, 300, 300},  // a rise: EWMA reset
			{300, 300, false, 300, 300}, // unchanged: no sample
			{295, 295, true, 300, 300},  // within 1 % of the EWMA and of the last sample: nothing
			{200, 900, true, 275, 200},  // (300*4 - 100) >> 2 = 275; runnable ignored
			{271, 271, true, 275, 271},  // -4 from the EWMA (kept), 71 from the last sample: the sample is recorded
			{1030, 1030, true, 1030, 1030},
		}},
		{"6.6.y", Knobs{UtilEstRunnableSkip: true}, []step{
			{300, 300, true, 300, 300},
			{200, 900, true, 300, 200}, // starved: sample kept, EWMA not moved
			{199, 199, true, 274, 199}, // (1200 - 101) >> 2 = 274 (floor of 274.75)
		}},
		{"v6.9", Knobs{UtilEstSingle: true}, []step{
			{300, 300, true, 300, 0},
			{295, 295, true, 300, 0}, // under 1 %: kept
			{200, 900, true, 300, 0}, // starved: kept
			{200, 200, true, 275, 0}, // (1200 - 100) >> 2
			{201, 201, true, 256, 0}, // (1100 - 74) >> 2 = 256.5 -> 256
		}},
	} {
		s := &Sim{knobs: c.knobs}
		tk := &simTask{weight: 1024}
		for i, st := range c.steps {
			tk.avg.utilAvg, tk.avg.runnableAvg = st.util, st.runnable
			if st.changed {
				tk.ueUnchanged = false
			}
			s.utilEstUpdate(tk, 1024)
			if tk.ueEwma != st.ewma || tk.ueEnqueued != st.enq {
				t.Errorf("%s step %d: ewma %d enqueued %d, want %d %d", c.name, i, tk.ueEwma, tk.ueEnqueued, st.ewma, st.enq)
			}
		}
	}
}

// TestTaskHLoad: task_h_load with the root group's h_load cached for a
// jiffy. CPU load 2048 from two tasks of 1024: each weighs 1024 × 2048 /
// 2049 = 1023; after one is detached (load 1024) within the same jiffy
// the other weighs 1024 × 2048 / 1025 = 2046; in the next jiffy h_load is
// 1024 again: 1024 × 1024 / 1025 = 1023.
func TestTaskHLoad(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, ms)
	y := b.task("y", 120, 0, false, CauseStart, ms)
	s, _ := newSim(t, b.done(t), testConfig())
	r := s.cpus[0]
	s.tasks[x].avg.loadAvg, s.tasks[y].avg.loadAvg, r.avg.loadAvg = 1024, 1024, 2048
	s.tasks[x].cpu, s.tasks[y].cpu = 0, 0
	if got := s.taskHLoad(s.tasks[x]); got != 1023 {
		t.Errorf("first: %d, want 1023", got)
	}
	r.avg.loadAvg = 1024
	if got := s.taskHLoad(s.tasks[y]); got != 2046 {
		t.Errorf("same jiffy after a detach: %d, want 2046", got)
	}
	s.now += s.tickNS
	if got := s.taskHLoad(s.tasks[y]); got != 1023 {
		t.Errorf("next jiffy: %d, want 1023", got)
	}
}

// TestTimeSharedUtil: two CPU hogs sharing one CPU each run half the time,
// so each one's util_avg is about half the CPU's (512, within the ripple
// of a slice: the last sample falls at a task's exit, after its own run).
// The kernel updates a task's load before it becomes current
// (set_next_entity) and before it leaves (dequeue_entity, still queued and
// current): waiting counts as runnable, not running, and the last run
// before a sleep or exit counts as running. Ordered the other way round
// (the model before round 55) each hog showed about 940.
func TestTimeSharedUtil(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 1000*ms)
	y := b.task("y", 120, 0, false, CauseStart, 1000*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{x, y} {
		if u := s.tasks[id].avg.utilAvg; u < 430 || u > 620 {
			t.Errorf("task %d: util_avg %d at its exit, want about 512", id, u)
		}
		if r := s.tasks[id].avg.runnableAvg; r < 1000 {
			t.Errorf("task %d: runnable_avg %d, want about 1024 (always queued)", id, r)
		}
	}
}

// TestDequeueCountsLastRun: a task that ran 3 ms from util 0 and blocks is
// charged those 3 ms as running by dequeue_entity's update (it is still
// queued and current there), whatever state the caller set: util_avg =
// 1024 × (1 − y^n) over the periods crossed, about 60, not 0.
func TestDequeueCountsLastRun(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 10*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	r, tk := s.cpus[0], s.tasks[x]
	s.now = 100 * ms
	s.startActivation(tk, 0)
	s.enqueue(r, tk, enqStart)
	s.takeCurr(r, tk)
	tk.avg = avg{lastUpdate: s.now}
	s.now += 3 * ms
	s.updateCurr(r) // the run's progress, charged before the block
	tk.state = tsSleeping
	s.dequeue(r, tk, true)
	if u := tk.avg.utilAvg; u < 50 || u > 75 {
		t.Errorf("util_avg %d after 3 ms running, want about 60", u)
	}
}

// TestRemovedLoadDeferred: a task leaving a CPU asleep or dead is queued
// in cfs_rq->removed and taken off at the CPU's next PELT update, each
// sum by its average × the divider at that update, kept at least the
// average × PELT_MIN_DIVIDER.
func TestRemovedLoadDeferred(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 10*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	r, tk := s.cpus[0], s.tasks[x]
	s.now = 100 * ms
	div := uint64(peltMinDivider)
	r.avg = avg{lastUpdate: s.now, loadAvg: 2048, loadSum: 2048 * div, utilAvg: 900, utilSum: 900 * div, runnableAvg: 1500, runnableSum: 1500 * div}
	tk.avg = avg{lastUpdate: s.now, loadAvg: 1024, utilAvg: 1000, runnableAvg: 600}
	s.removeLoad(r, tk, false)
	if r.avg.loadAvg != 2048 || r.removedNr != 1 {
		t.Fatalf("removed at once: load %d, queued %d", r.avg.loadAvg, r.removedNr)
	}
	s.updateRQLoad(r)
	a := r.avg
	if a.loadAvg != 1024 || a.loadSum != 1024*div || a.utilAvg != 0 || a.utilSum != 0 || a.runnableAvg != 900 || a.runnableSum != 900*div || r.removedNr != 0 {
		t.Errorf("after the update: %+v (queued %d); want load 1024, util 0 (floored), runnable 900", a, r.removedNr)
	}
}

// TestRepickKeepsSlice: under CFS with group scheduling, a task picked
// again after a reschedule keeps its slice's start (prev_sum_exec_runtime)
// and the buddies (set_next_entity is skipped for the same task).
func TestRepickKeepsSlice(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 100*ms)
	y := b.task("y", 120, 0, false, CauseStart, 100*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	r, a, o := s.cpus[0], s.tasks[x], s.tasks[y]
	s.now = 100 * ms
	for _, tk := range []*simTask{a, o} {
		s.startActivation(tk, 0)
		s.enqueue(r, tk, enqStart)
	}
	r.treeRemove(o)
	o.vruntime = r.minVruntime + 50*ms // far right: a stays leftmost
	r.treeInsert(o)
	s.switchTo(r, a, "")
	a.prevSumExec = -7 * ms // the slice began before this test's clock
	r.last = a
	s.now += ms
	s.schedule(r, "")
	if r.curr != a {
		t.Fatalf("picked %v, want the same task", r.curr)
	}
	if a.prevSumExec != -7*ms || r.last != a {
		t.Errorf("repick: prev_sum_exec %d, last buddy kept %v; want -7 ms, true", a.prevSumExec, r.last == a)
	}
}

// TestNohzHasBlockedKept: a stats pass of the idle load balancer clears
// nohz.has_blocked and sets it again when a CPU it refreshed still has
// blocked load (rq->has_blocked_load), so refreshes go on every 32 ms
// until the idle CPUs' signals have decayed to 0.
func TestNohzHasBlockedKept(t *testing.T) {
	for _, left := range []uint64{0, 300} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("x", 120, 0, true, CauseStart, 10*ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.now = 100 * ms
		for c := 0; c < 2; c++ {
			s.nohz.idle[c] = true
			s.cpus[c].avg = avg{lastUpdate: s.now}
		}
		s.nohz.nrCPUs = 2
		s.cpus[1].avg.utilAvg = left
		s.nohz.hasBlocked = true
		s.nohz.kickFlags[0] = kickStats
		s.nohzIdleBalance(0)
		if s.nohz.hasBlocked != (left != 0) {
			t.Errorf("util %d left on CPU 1: has_blocked %v", left, s.nohz.hasBlocked)
		}
	}
}

// TestNewidleRefreshesBlocked: a CPU going idle whose newidle pass pulls
// nothing, with avg_idle at least sysctl_sched_migration_cost (500 µs) and
// the idle CPUs' blocked load due (nohz.has_blocked, next_blocked passed),
// refreshes that load itself as it enters idle (nohz_newidle_balance,
// nohz_run_idle_balance): CPU 1's util 512, last updated 32 periods of
// 1024 µs before, decays to 255 (half the sum, less one by the table's
// y^0 = 0xffffffff, over the divider). With avg_idle under 500 µs it is left.
func TestNewidleRefreshesBlocked(t *testing.T) {
	for _, c := range []struct {
		avgIdle int64
		want    uint64
	}{{ms, 255}, {ms / 4, 512}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("x", 120, 0, true, CauseStart, 10*ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.now = 200 * ms
		r0, r1 := s.cpus[0], s.cpus[1]
		r0.avgIdle = c.avgIdle
		r0.avg = avg{lastUpdate: s.now}
		then := s.now - 32*1024*1024
		r1.avg = avg{lastUpdate: then, utilAvg: 512, utilSum: 512 * peltMinDivider}
		s.nohz.idle[1], s.nohz.nrCPUs = true, 1
		s.nohz.hasBlocked, s.nohz.nextBlocked = true, 0
		s.rdOverload = false // the newidle pass itself is skipped
		s.newidleBalance(r0)
		s.enterIdle(r0)
		if r1.avg.utilAvg != c.want {
			t.Errorf("avg_idle %d: CPU 1 util %d, want %d", c.avgIdle, r1.avg.utilAvg, c.want)
		}
	}
}

// A task running or runnable at the trace start begins with the PELT
// averages its running and runnable shares of the trace's first 64 ms
// give, worked by hand, or with Config.StartPELTHeavy its whole weight
// and half the capacity. K (nice -20, weight 88761) runs 4 ms at the
// start and 4 ms from 20 ms (blocking at 24 ms), then at 80 ms, past the
// window: runnable and running 8 of 64 ms, 128/1024, load 88761 × 128 /
// 1024 = 11095. Q, queued at the start, runs 2 ms by the time it blocks
// at 10 ms, then 1 ms from 30 ms (its last activation: runnable for its
// demand): runnable 11 ms, 176, running 3 ms, 48, load 176. H runs 200 ms
// from the start: everything full. On a trace of 32 ms, K's 8 ms are 256
// and Q's 11 and 3 ms 352 and 96.
func TestStartPELTFromTheTrace(t *testing.T) {
	build := func(end int64) *Workload {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		k := b.task("kworker/0:1H", 100, 0, true, CauseStart, 4*ms, 4*ms, ms)
		q := b.task("q", 120, 0, false, CauseStart, 2*ms, ms)
		b.task("h", 120, 1, true, CauseStart, 200*ms)
		ka := b.w.Tasks[k].Activations
		ka[0].ReleaseNS = t0
		ka[1].ReleaseNS, ka[1].SleepNS, ka[1].Cause = t0+20*ms, 16*ms, CauseArrival
		ka[2].ReleaseNS, ka[2].SleepNS, ka[2].Cause = t0+80*ms, 56*ms, CauseArrival
		qa := b.w.Tasks[q].Activations
		qa[0].ReleaseNS = t0
		qa[1].ReleaseNS, qa[1].SleepNS, qa[1].Cause = t0+30*ms, 20*ms, CauseArrival
		b.w.Tasks[2].Activations[0].ReleaseNS = t0
		b.w.EndNS = end
		return b.done(t)
	}
	type want struct{ load, runnable, util uint64 }
	for _, c := range []struct {
		name  string
		end   int64
		heavy bool
		want  [3]want
	}{
		{"the trace's first 64 ms", t0 + 300*ms, false, [3]want{{11095, 128, 128}, {176, 176, 48}, {1024, 1024, 1024}}},
		{"a 32 ms trace", t0 + 32*ms, false, [3]want{{88761 * 256 / 1024, 256, 256}, {352, 352, 96}, {1024, 1024, 1024}}},
		{"heavy", t0 + 300*ms, true, [3]want{{88761, 512, 512}, {1024, 512, 512}, {1024, 512, 512}}},
	} {
		cfg := testConfig()
		cfg.StartPELTHeavy = c.heavy
		s, _ := newSim(t, build(c.end), cfg)
		for i, w := range c.want {
			tk := s.tasks[i]
			s.startPELT(tk)
			if got := (want{tk.avg.loadAvg, tk.avg.runnableAvg, tk.avg.utilAvg}); got != w {
				t.Errorf("%s: %s load/runnable/util %v, want %v", c.name, tk.w.Comm, got, w)
			}
		}
	}
}

// Capacity invariance: a task that runs 1 s without a break tends to
// util_avg equal to its CPU's original capacity, as accumulate_sum's
// scale_cpu makes it (446 on an A53 of the Juno, 1024 on a big CPU);
// load_avg tends to the weight either way. (Within 1 %: after 1 s the
// sums are 1 − y^1000 of the way there, y^32 = 1/2.) The task may run on
// its CPU only, or a misfit on the A53 would move to an A57.
func TestUtilCapacityInvariant(t *testing.T) {
	for _, tc := range []struct {
		cpu  int32
		want uint64
	}{{0, 446}, {1, 1024}} {
		b := newBuilder(t, "juno-r0")
		x := b.task("x", 120, tc.cpu, true, CauseStart, 1000*ms)
		w := b.done(t)
		w.Tasks[0].Allowed = []int{int(tc.cpu)}
		s, _ := newSim(t, w, testConfig())
		if _, err := s.Run(); err != nil {
			t.Fatal(err)
		}
		a := s.tasks[x].avg
		if a.utilAvg*100 < tc.want*99 || a.utilAvg > tc.want {
			t.Errorf("cpu%d: util_avg %d after 1 s running, want about %d", tc.cpu, a.utilAvg, tc.want)
		}
		if a.loadAvg < 1014 {
			t.Errorf("cpu%d: load_avg %d, want about 1024 whatever the capacity", tc.cpu, a.loadAvg)
		}
	}
}
