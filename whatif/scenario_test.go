package whatif

import (
	"fmt"
	"slices"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// checker is a Sink that verifies, on every replay, what must hold of any
// schedule: time never goes backwards, and no CPU runs two tasks at once
// (each sched_switch switches out the task the CPU was running, and no
// task is switched in on two CPUs at the same time). Every
// sched_stat_runtime is of the CPU's running task and covers exactly the
// time since its previous one or the switch-in (update_curr charges the
// time since it last ran), and a CFS task's switch-out follows one, so
// they sum to the slice's length (perf sched latency's runtime column
// sums them). It also records the run slices and wakeups for the
// scenario assertions.
type checker struct {
	t       testing.TB
	last    int64
	cur     map[int64]int64 // cpu -> tid
	on      map[int64]int64 // tid -> cpu
	since   map[int64]int64
	runs    []run
	wakings []timeline.Event
	migr    int
	fails   int
	stat    map[int64]timeline.Event // cpu -> its last sched_stat_runtime, until the switch
	statSum map[int64]int64          // cpu -> the runtimes since the switch-in
	// The switch charge (switchcharge.go, on with the machine's noise):
	// a task's updates from the last before its switch-out may charge it
	// less than the time since its previous one, and the task switched in
	// next on that CPU, if CFS, is charged the shortfall on top at its
	// first update. Run time is conserved across the switch: short (cpu
	// -> the shortfall so far) goes to carry (cpu -> what the running
	// task's first update adds), or back to the same task if it is picked
	// again (its next update adds it). With charged false (the default)
	// every update is exact.
	charged      bool
	short, carry map[int64]int64
	// maxCharge bounds what one switch may move (maxSwitchChargeNS, or
	// more for a workload with long charges: checkerFor).
	maxCharge int64
	// allowed: tid -> the CPUs its affinity allows (Task.Allowed, from
	// checkerFor); once a task has run on one of them it never runs
	// elsewhere (inside: it has).
	allowed map[int64][]int
	inside  map[int64]bool
}

// maxSwitchChargeNS bounds what a switch may move from one task's charge
// to the next's: the pools keep gaps under a quarter tick (2.5 ms at HZ
// 100).
const maxSwitchChargeNS = 2500000

type run struct {
	tid, cpu   int64
	start, end int64
}

func newChecker(t testing.TB) *checker {
	return &checker{t: t, cur: map[int64]int64{}, on: map[int64]int64{}, since: map[int64]int64{}, stat: map[int64]timeline.Event{}, statSum: map[int64]int64{},
		short: map[int64]int64{}, carry: map[int64]int64{}, last: -1 << 62, maxCharge: maxSwitchChargeNS,
		allowed: map[int64][]int{}, inside: map[int64]bool{}}
}

// checkerFor is a checker for a replay of w under cfg: the switch
// charge's conservation rule where cfg moves charges between tasks, a
// switch moving at most the pools' bound or w's longest long charge
// (longcharge.go).
func checkerFor(t testing.TB, cfg Config, w *Workload) *checker {
	c := newChecker(t)
	c.charged = cfg.SwitchCharge && cfg.IdleWake
	if w != nil {
		for _, tk := range w.Tasks {
			if tk.Allowed != nil {
				c.allowed[int64(tk.TID)] = tk.Allowed
			}
		}
	}
	if c.charged && !cfg.SwitchChargePoolsOnly && w != nil {
		for _, l := range w.LongSwitchCharges {
			c.maxCharge = max(c.maxCharge, l.NS)
		}
	}
	return c
}

func (c *checker) failf(format string, a ...any) {
	c.fails++
	if c.fails < 10 {
		c.t.Errorf(format, a...)
	}
}

func (c *checker) Emit(e *timeline.Event) error {
	if e.Time < c.last {
		c.failf("time went backwards: %d after %d", e.Time, c.last)
	}
	c.last = e.Time
	switch e.Kind {
	case timeline.SchedSwitch:
		cpu := e.Int(timeline.CPU)
		prev, next := e.Int(timeline.PrevPID), e.Int(timeline.NextPID)
		if cur, ok := c.cur[cpu]; ok && cur != prev {
			c.failf("cpu %d switched out %d at %d but was running %d", cpu, prev, e.Time, cur)
		}
		since, seen := c.since[cpu]
		// What the leaving task was not charged: the shortfall of its
		// updates, and the time since its last one.
		short := c.short[cpu]
		delete(c.short, cpu)
		if st, ok := c.stat[cpu]; ok {
			short += e.Time - st.Time
			if st.Int(timeline.PID) != prev || (seen && c.statSum[cpu]+short != e.Time-since+c.carry[cpu]) || (!c.charged && short != 0) {
				c.failf("cpu %d: sched_stat_runtimes of %d (%d ns to %d, %d ns short, %d carried in) before the switch-out of %d at %d after a slice from %d", cpu, st.Int(timeline.PID), c.statSum[cpu], st.Time, short, c.carry[cpu], prev, e.Time, since)
			}
			delete(c.stat, cpu)
			delete(c.statSum, cpu)
		} else if prev != 0 && seen && e.Int(timeline.PrevPrio) >= 100 {
			if !c.charged && e.Time > since {
				c.failf("cpu %d: CFS task %d switched out at %d after a %d ns slice with no sched_stat_runtime", cpu, prev, e.Time, e.Time-since)
			}
			short += e.Time - since + c.carry[cpu]
		}
		delete(c.carry, cpu)
		if short < 0 || short > c.maxCharge {
			c.failf("cpu %d: the switch-out of %d at %d leaves %d ns of its run uncharged", cpu, prev, e.Time, short)
		}
		if next != 0 && e.Int(timeline.NextPrio) >= 100 && short > 0 && c.charged {
			c.carry[cpu] = short
		}
		if prev != 0 {
			c.runs = append(c.runs, run{prev, cpu, c.since[cpu], e.Time})
			delete(c.on, prev)
		}
		if next != 0 {
			if other, ok := c.on[next]; ok {
				c.failf("task %d switched in on cpu %d at %d while running on cpu %d", next, cpu, e.Time, other)
			}
			c.on[next] = cpu
			if al, ok := c.allowed[next]; ok {
				if slices.Contains(al, int(cpu)) {
					c.inside[next] = true
				} else if c.inside[next] {
					c.failf("task %d switched in on cpu %d at %d, outside its allowed CPUs %v", next, cpu, e.Time, al)
				}
			}
		}
		c.cur[cpu] = next
		c.since[cpu] = e.Time
	case timeline.SchedStatRuntime:
		cpu := e.Int(timeline.CPU)
		if pid := e.Int(timeline.PID); c.cur[cpu] != pid {
			if other, ok := c.on[pid]; ok && other != cpu {
				// A wakeup's enqueue onto a busy CPU of the same cache
				// runs on the waker's CPU (Sim.enqOn): the update of
				// the task running there is written here, as the task
				// running here.
				if e.Int(timeline.CommonPID) != c.cur[cpu] {
					c.failf("cpu %d: sched_stat_runtime of %d (running on cpu %d) at %d written as %d while running %d", cpu, pid, other, e.Time, e.Int(timeline.CommonPID), c.cur[cpu])
				}
				cpu = other
			}
		}
		from, seen := c.since[cpu]
		if st, ok := c.stat[cpu]; ok {
			from = st.Time
		}
		// (seen: unit tests that make a task current by hand write no
		// switch-in.)
		// Its first update adds what the switch carried in; a task
		// picked again after a short update is charged that shortfall at
		// its next.
		want := e.Time - from + c.short[cpu]
		if _, ok := c.stat[cpu]; !ok {
			want += c.carry[cpu]
		}
		delete(c.short, cpu)
		if cur := c.cur[cpu]; seen && cur != e.Int(timeline.PID) {
			c.failf("cpu %d: sched_stat_runtime of %d (%d ns at %d) while running %d, its last update at %d", cpu, e.Int(timeline.PID), e.Int(timeline.Runtime), e.Time, cur, from)
		} else if got := e.Int(timeline.Runtime); seen && got != want {
			if c.charged && got < want && want-got <= c.maxCharge {
				c.short[cpu] = want - got
			} else {
				c.failf("cpu %d: sched_stat_runtime of %d (%d ns at %d, %d ns since its last update at %d, %d carried in)", cpu, e.Int(timeline.PID), got, e.Time, e.Time-from, from, c.carry[cpu])
			}
		}
		c.stat[cpu] = *e
		c.statSum[cpu] += e.Int(timeline.Runtime)
	case timeline.SchedWaking:
		c.wakings = append(c.wakings, *e)
	case timeline.SchedMigrateTask:
		c.migr++
	}
	return nil
}

// namedRuns lists the runs as name@start-end, in 0.1 ms from t0, each
// task by its name in names (keyed by TID), for comparing with a schedule
// worked out by hand.
func (c *checker) namedRuns(names map[int64]string) []string {
	var got []string
	for _, r := range c.runs {
		got = append(got, fmt.Sprintf("%s@%d-%d", names[r.tid], (r.start-t0)/100000, (r.end-t0)/100000))
	}
	return got
}

// namedCPURuns is namedRuns with each run's CPU: name@cpuN:start-end.
func (c *checker) namedCPURuns(names map[int64]string) []string {
	var got []string
	for _, r := range c.runs {
		got = append(got, fmt.Sprintf("%s@cpu%d:%d-%d", names[r.tid], r.cpu, (r.start-t0)/100000, (r.end-t0)/100000))
	}
	return got
}

// runStarts lists when task tid's runs started, in ns from t0.
func (c *checker) runStarts(tid int64) []int64 {
	var got []int64
	for _, r := range c.runs {
		if r.tid == tid {
			got = append(got, r.start-t0)
		}
	}
	return got
}

// firstRunAfter is the first run of task tid that starts after `after`
// (nil if none).
func (c *checker) firstRunAfter(tid, after int64) *run {
	for i, r := range c.runs {
		if r.tid == tid && r.start > after {
			return &c.runs[i]
		}
	}
	return nil
}

// build makes a workload by hand on a topology spec.
type builder struct {
	w *Workload
}

func newBuilder(t testing.TB, spec string) *builder {
	topo, err := model.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Start at 1 s: the analysis takes time-0 rows for perf's synthesized
	// records.
	return &builder{w: &Workload{StartNS: t0, Topology: topo, Kernel: "6.1.0"}}
}

// task adds a task; acts are its demands (ns); cause of the first.
func (b *builder) task(comm string, prio int32, cpu int32, running bool, first Cause, demands ...int64) int32 {
	t := Task{TID: int32(100 + len(b.w.Tasks)), PID: 100, Comm: comm, Prio: prio, Pinned: PinnedCPUOf(comm), StartCPU: cpu, StartRunning: running}
	for i, d := range demands {
		c := CauseWake
		if i == 0 {
			c = first
		}
		t.Activations = append(t.Activations, Activation{DemandNS: d, Cause: c, End: EndSleep, EndState: "S", CPU: cpu})
	}
	b.w.Tasks = append(b.w.Tasks, t)
	return int32(len(b.w.Tasks) - 1)
}

// edge adds a wakeup; the first one for an activation caused by a wakeup
// is its cause, later ones are redundant (the wakee is already runnable).
func (b *builder) edge(waker, wakerAct int32, off int64, wakee, wakeeAct int32) {
	causal := b.w.Tasks[wakee].Activations[wakeeAct].Cause == CauseWake
	for _, e := range b.w.Edges {
		if e.Wakee == wakee && e.WakeeAct == wakeeAct && e.Causal {
			causal = false
		}
	}
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeWake, Causal: causal, Waker: waker, WakerAct: wakerAct, OffsetNS: off, Wakee: wakee, WakeeAct: wakeeAct})
}

func (b *builder) done(t testing.TB) *Workload {
	if err := b.w.Validate(); err != nil {
		t.Fatal(err)
	}
	b.w.Index()
	return b.w
}

func testConfig() Config {
	p, _ := LookupPolicy("v6.1")
	c := DefaultConfig(p)
	c.IdleWake = false // immediate idle exit: answers worked out without machine noise
	return c
}

// newSim is New with a checker as the sink, for tests that set the
// engine's state by hand before Run.
func newSim(t *testing.T, w *Workload, cfg Config) (*Sim, *checker) {
	t.Helper()
	ch := newChecker(t)
	s, err := New(w, cfg, ch)
	if err != nil {
		t.Fatal(err)
	}
	return s, ch
}

func replayChecked(t *testing.T, w *Workload, cfg Config) (*Result, *checker) {
	t.Helper()
	ch := newChecker(t)
	res, err := Replay(w, cfg, ch)
	if err != nil {
		t.Fatal(err)
	}
	return res, ch
}

const (
	ms = int64(1000000)
	t0 = 1000 * ms
)

// Two tasks ping-pong on 2 CPUs: A (running on CPU 0) runs 1 ms and wakes
// B, then blocks; B runs 1 ms and wakes A; 10 rounds. By hand: A's wakeup
// of B (prev CPU 1, idle) is not affine: wake_affine_idle returns prev
// because it is idle, and select_idle_sibling keeps the idle target; the
// same for B waking A. So nobody migrates, every wakeup runs at once
// (latency 0 with no idle-exit delay), the chain is serial: makespan
// 20 ms, CPU time 20 ms, idle 2×20 − 20 = 20 ms.
func TestPingPong(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	const n = 10
	da := make([]int64, n)
	db := make([]int64, n)
	for i := range da {
		da[i], db[i] = ms, ms
	}
	a := b.task("ping", 120, 0, true, CauseStart, da...)
	bb := b.task("pong", 120, 1, false, CauseWake, db...)
	for i := int32(0); i < n; i++ {
		b.edge(a, i, ms, bb, i)
		if i+1 < n {
			b.edge(bb, i, ms, a, i+1)
		}
	}
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	m := res.Metrics
	if m.MakespanNS != 20*ms || m.CPUTimeNS != 20*ms || m.IdleNS != 20*ms {
		t.Errorf("makespan %d cpu %d idle %d, want 20/20/20 ms", m.MakespanNS, m.CPUTimeNS, m.IdleNS)
	}
	if ch.migr != 0 || m.Migrations != 0 {
		t.Errorf("migrations %d, want 0", ch.migr)
	}
	if m.WakeupCount != 2*n-1 || m.WakeupMaxNS != 0 {
		t.Errorf("wakeups %d max %d, want %d wakeups of latency 0", m.WakeupCount, m.WakeupMaxNS, 2*n-1)
	}
	for _, r := range ch.runs {
		want := int64(0)
		if r.tid == int64(w.Tasks[bb].TID) {
			want = 1
		}
		if r.cpu != want {
			t.Errorf("task %d ran on cpu %d, want %d", r.tid, r.cpu, want)
		}
	}
}

// Four CPU hogs (200 ms each) start queued on CPU 0 of a 4-core LLC. By
// hand (v6.1, HZ 250): at the first tick (4 ms) CPU 0 has 4 tasks, so
// nohz_balancer_kick kicks the first idle CPU (1) as ILB, which runs
// rebalance_domains for the idle CPUs from ilb+1, the ILB last: 2, 3, 1
// (CPU_IDLE, their next_balance is due). MC is an LLC domain: busiest
// overloaded, local has spare, single-CPU groups -> migrate_task,
// imbalance (nr_busiest − nr_local) >> 1: CPU 2 pulls (4−0)>>1 = 2 from
// CPU 0 (CPU_IDLE passes take up to the imbalance), CPU 3 pulls
// (2−0)>>1 = 1 from CPU 0 or 2 (both have 2), CPU 1 pulls 1 from the one
// left with 2. So 4 migrations and one task per CPU from 4 ms + the IPI
// latency (2 µs); each task then runs alone, so the makespan is below
// 4 ms + 200 ms + 4 ms (the time shared on CPU 0 before the spread is
// made up after it).
func TestHogsSpread(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=4,threads=1")
	for i := 0; i < 4; i++ {
		b.task(fmt.Sprintf("hog%d", i), 120, 0, i == 0, CauseStart, 200*ms)
	}
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	if ch.migr != 4 {
		t.Errorf("migrations %d, want 4", ch.migr)
	}
	if res.Stats.MigrationsNohz != 4 {
		t.Errorf("nohz-balance migrations %d, want 4 (stats %+v)", res.Stats.MigrationsNohz, res.Stats)
	}
	first := map[int64]int64{}
	for _, r := range ch.runs {
		if _, ok := first[r.cpu]; !ok && r.cpu != 0 {
			first[r.cpu] = r.start
		}
	}
	for c := int64(1); c < 4; c++ {
		if first[c] != t0+4*ms+2000 {
			t.Errorf("cpu %d first ran at %d, want at the first tick + IPI (%d)", c, first[c], t0+4*ms+2000)
		}
	}
	// After the spread (by 4 ms + 2 µs) each CPU runs one task.
	spread := t0 + 4*ms + 2000
	busy := map[int64]int64{}
	for _, r := range ch.runs {
		if r.end > spread {
			if prev, ok := busy[r.cpu]; ok && prev != r.tid {
				t.Errorf("cpu %d ran %d and %d after the spread", r.cpu, prev, r.tid)
			}
			busy[r.cpu] = r.tid
		}
	}
	if len(busy) != 4 {
		t.Errorf("%d CPUs busy after the spread, want 4", len(busy))
	}
	if res.Metrics.MakespanNS > 208*ms {
		t.Errorf("makespan %d ns, want <= 208 ms", res.Metrics.MakespanNS)
	}
}

// A per-CPU kthread (kworker/1:0, pinned by its name) and a hog share
// CPU 1 while CPU 0 is idle. By hand: the balancer may only move the hog:
// the kthread is rejected by can_migrate_task (kthread_is_per_cpu), the
// hog while it runs; when the kthread runs, the hog is queued and
// movable. So the kthread runs only on CPU 1, the hog ends on CPU 0, and
// each runs exactly its demand.
func TestPinnedStays(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	hog := b.task("hog", 120, 1, true, CauseStart, 100*ms)
	kw := b.task("kworker/1:0", 120, 1, false, CauseStart, 50*ms)
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	hogCPU0 := false
	for _, r := range ch.runs {
		if r.tid == int64(w.Tasks[kw].TID) && r.cpu != 1 {
			t.Errorf("pinned kworker/1:0 ran on cpu %d", r.cpu)
		}
		if r.tid == int64(w.Tasks[hog].TID) && r.cpu == 0 {
			hogCPU0 = true
		}
	}
	if !hogCPU0 {
		t.Errorf("the hog never moved to the idle CPU 0 (stats %+v)", res.Stats)
	}
}

// SMT: 3 cores × 2 threads (CPUs 0-1, 2-3, 4-5). Hogs run on CPUs 0 and
// 2; W (prev CPU 0) is woken by a timer at 1 ms. By hand: target = prev
// = 0 is busy; prev == target; recent_used_cpu is 0; the LLC has an idle
// core (CPUs 4 and 5 went idle with their sibling idle), so
// select_idle_cpu scans cores from target+1: core {0,1} is not idle
// (remember CPU 1 as fallback), core {2,3} is not, core {4,5} is: W runs
// on CPU 4, not on the idle siblings 1 or 3.
func TestSMTIdleCore(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=3,threads=2")
	b.task("hogA", 120, 0, true, CauseStart, 10*ms)
	b.task("hogB", 120, 2, true, CauseStart, 10*ms)
	wt := b.task("w", 120, 0, false, CauseArrival, ms)
	b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + ms
	w := b.done(t)
	_, ch := replayChecked(t, w, testConfig())
	if len(ch.wakings) != 1 {
		t.Fatalf("%d wakings, want 1", len(ch.wakings))
	}
	// sched_waking's target_cpu is W's CPU when the wakeup starts (the
	// kernel's task_cpu(p) before select_task_rq); where it ran says the
	// placement.
	if got := ch.wakings[0].Int(timeline.TargetCPU); got != 0 {
		t.Errorf("sched_waking target_cpu %d, want W's previous CPU 0", got)
	}
	placed := int64(-1)
	for _, r := range ch.runs {
		if r.tid == int64(w.Tasks[wt].TID) {
			placed = r.cpu
			break
		}
	}
	if placed != 4 {
		t.Errorf("W placed on cpu %d, want 4 (the idle core)", placed)
	}
}

// A wakee woken twice before it runs: on one CPU, X (2 ms) wakes W (nice
// 19) at 0.5 ms and again at 0.6 ms. By hand: W (weight 15) cannot
// preempt X (wakeup_gran × 1024/15 is far beyond any vruntime lead), so it
// waits until X blocks at 2 ms. The second wakeup finds W runnable and is
// a no-op (no sched_waking, as try_to_wake_up of a queued task). W runs
// once, its latency is from the first wakeup: 1.5 ms; both edges fired
// exactly once.
func TestWokenTwice(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 2*ms)
	wt := b.task("w", 139, 0, false, CauseWake, ms)
	b.edge(x, 0, ms/2, wt, 0)
	b.edge(x, 0, ms*6/10, wt, 0)
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	if len(ch.wakings) != 1 {
		t.Errorf("%d sched_waking, want 1", len(ch.wakings))
	}
	if res.Stats.EdgesFired != 2 || res.Stats.EdgesRedundant != 1 {
		t.Errorf("edges fired %d redundant %d, want 2 and 1", res.Stats.EdgesFired, res.Stats.EdgesRedundant)
	}
	if res.Metrics.WakeupCount != 1 || res.Metrics.WakeupMaxNS != 1500000 {
		t.Errorf("wakeups %d latency %d, want 1 of 1.5 ms", res.Metrics.WakeupCount, res.Metrics.WakeupMaxNS)
	}
}

// A wakeup that arrives before the wakee blocked is not lost: the wakee
// continues into its next activation without sleeping (y did not wake x:
// the wakeup is no reply to a request of y's, see
// TestReplyHeldUntilRequesterBlocks).
func TestWakeBeforeSleep(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, ms)
	y := b.task("y", 120, 1, true, CauseStart, 5*ms, 3*ms)
	b.edge(x, 0, ms/2, y, 1)
	w := b.done(t)
	res, _ := replayChecked(t, w, testConfig())
	if res.Stats.ContinuedWithoutSleep != 1 || res.Metrics.MakespanNS != 8*ms {
		t.Errorf("continued %d makespan %d, want 1 and 8 ms", res.Stats.ContinuedWithoutSleep, res.Metrics.MakespanNS)
	}
}

// A reply that arrives before its requester blocked is held until it
// blocks (schbench: a worker posts the message thread, then waits on its
// own futex; the message thread wakes it). Two CPUs, no idle-exit delay.
// W runs on CPU 0 (2 ms) and wakes M at 1 ms (its request); M (asleep on
// CPU 1) runs 0.5 ms and wakes W at 0.2 ms into it (the reply, for W's
// next activation of 1 ms). By hand: M's wakeup at 1 ms: wake_affine_idle
// keeps the idle prev CPU 1, M runs 1.0–1.5 ms there; its reply at 1.2 ms
// finds W still running the activation that sent the request, so it is
// held; W blocks at 2 ms and the reply then wakes it from CPU 1 (idle,
// like W's prev CPU 0: wake_affine_idle returns prev 0, idle), so W runs
// again on CPU 0 2–3 ms. Two sched_waking, latency 0, nothing continues
// without sleeping, makespan 3 ms. Before, the reply was pending and W ran
// on from 0 to 3 ms without blocking, with one wakeup (M's).
func TestReplyHeldUntilRequesterBlocks(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	wt := b.task("w", 120, 0, true, CauseStart, 2*ms, ms)
	m := b.task("m", 120, 1, false, CauseWake, ms/2)
	b.edge(wt, 0, ms, m, 0)
	b.edge(m, 0, ms/5, wt, 1)
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	tw, tm := w.Tasks[wt].TID, w.Tasks[m].TID
	got := ch.namedCPURuns(map[int64]string{int64(tw): fmt.Sprint(tw), int64(tm): fmt.Sprint(tm)})
	want := []string{fmt.Sprintf("%d@cpu1:10-15", tm), fmt.Sprintf("%d@cpu0:0-20", tw), fmt.Sprintf("%d@cpu0:20-30", tw)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs (tid@cpu:start-end in 0.1 ms) %v, want %v", got, want)
	}
	if len(ch.wakings) != 2 || res.Metrics.WakeupCount != 2 || res.Metrics.WakeupMaxNS != 0 {
		t.Errorf("%d sched_waking, %d wakeups, max latency %d; want 2, 2, 0", len(ch.wakings), res.Metrics.WakeupCount, res.Metrics.WakeupMaxNS)
	}
	if res.Stats.RepliesHeld != 1 || res.Stats.ContinuedWithoutSleep != 0 || res.Metrics.MakespanNS != 3*ms {
		t.Errorf("replies held %d, continued %d, makespan %d; want 1, 0, 3 ms", res.Stats.RepliesHeld, res.Stats.ContinuedWithoutSleep, res.Metrics.MakespanNS)
	}
}

// Two CPU hogs on one CPU with HZ 1000. By hand: CFS (1 CPU: latency
// 6 ms, min_granularity 0.75 ms) gives each a 3 ms slice, detected at a
// tick only when exceeded: check_preempt_tick switches at the 4th tick, so
// every run slice but the last is 4 ms. EEVDF (base_slice 0.75 ms): at the
// first tick the running task's vruntime (1 ms) passed its deadline, so it
// gets a new request and pick_eevdf chooses the other, eligible (vruntime
// 0 <= V = 0.5 ms); at the next tick both have vruntime 1 ms = V and
// deadline 1.75 ms, and on a tie pick_eevdf keeps the queued entity over
// curr (curr wins only with a strictly earlier deadline); so it alternates:
// every run slice but the last is 1 ms.
func TestCFSvsEEVDFSlices(t *testing.T) {
	for _, c := range []struct {
		rq    string
		slice int64
	}{{"cfs", 4 * ms}, {"eevdf", ms}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 20*ms)
		b.task("b", 120, 0, false, CauseStart, 20*ms)
		w := b.done(t)
		cfg := testConfig()
		cfg.HZ = 1000
		cfg.RunQueue = c.rq
		_, ch := replayChecked(t, w, cfg)
		n := 0
		for i, r := range ch.runs {
			if i >= len(ch.runs)-2 {
				break // the tail, once one task is done
			}
			n++
			if r.end-r.start != c.slice {
				t.Errorf("%s: run slice %d of task %d is %d ns, want %d", c.rq, i, r.tid, r.end-r.start, c.slice)
			}
		}
		if n < 5 {
			t.Errorf("%s: only %d run slices", c.rq, n)
		}
	}
}

// The EEVDF discipline keeps every invariant on the real fixtures too.
func TestEEVDFFixtures(t *testing.T) {
	for _, f := range fixtures(t) {
		w, _ := extractFixture(t, f)
		cfg := DefaultConfig(newV61())
		cfg.RunQueue = "eevdf"
		if _, err := Replay(w, cfg, checkerFor(t, cfg, w)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Two tasks already running when the trace starts, each waking its own
// sleeper: the second one's edges are not at index 0 of the workload's
// edge list, and must still be the only ones it fires (a starting task
// once began at edge 0 and fired the first task's edges again). By hand:
// each wake edge fires once, two sched_waking, and both sleepers run.
func TestStartingTasksFireOwnEdges(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	a := b.task("a", 120, 0, true, CauseStart, 2*ms)
	c := b.task("c", 120, 1, true, CauseStart, 2*ms)
	sa := b.task("sa", 120, 0, false, CauseWake, ms)
	sc := b.task("sc", 120, 1, false, CauseWake, ms)
	b.edge(a, 0, ms, sa, 0)
	b.edge(c, 0, ms/2, sc, 0)
	w := b.done(t)
	res, ch := replayChecked(t, w, testConfig())
	if res.Stats.EdgesFired != 2 || len(ch.wakings) != 2 {
		t.Errorf("edges fired %d, sched_waking %d; want 2 and 2", res.Stats.EdgesFired, len(ch.wakings))
	}
}

// An edge whose offset lies beyond its activation's demand fires when the
// demand is met instead of stalling the replay at that instant forever
// (how the starting-task edge bug above showed itself on a large trace).
func TestEdgePastDemandFires(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	a := b.task("a", 120, 0, true, CauseStart, ms)
	s := b.task("s", 120, 1, false, CauseWake, ms)
	b.edge(a, 0, 3*ms, s, 0)
	// Validate (for files and builders) refuses such an edge, so index
	// the workload directly, as a workload built in code could be.
	w := b.w
	w.Index()
	cfg := testConfig()
	cfg.MaxEvents = 10000 // a livelock fails fast instead of hanging
	res, ch := replayChecked(t, w, cfg)
	if res.Stats.EdgesFired != 1 || len(ch.wakings) != 1 {
		t.Errorf("edges fired %d, sched_waking %d; want 1 and 1", res.Stats.EdgesFired, len(ch.wakings))
	}
}

// A wakeup preemption on the waker's own CPU waits for the waker's next
// preemption point (here the end of the run-on the trace shows after this
// wakeup, X running on 60 µs with TIF_NEED_RESCHED set, Edge.NoPreemptNS;
// the pool's 100 µs delay is not drawn on top of it since round 41); the
// waker reaching a milestone meanwhile (a second, redundant wakeup in the
// same system call, at 50 µs) does not cancel it: TIF_NEED_RESCHED stays
// set until __schedule(). One CPU (latency 6 ms, wakeup_gran 1 ms), X runs
// 3 ms and wakes W (never run, vruntime 0) at 1.5 ms, then W again
// (redundant) at 1.55 ms. By hand: X's vruntime 1.5 ms, W placed at
// max(0, 1.5 − 3) = 0, lead 1.5 ms > 1 ms: resched at 1.56 ms. W runs
// 1.56–2.56 ms (latency 60 µs), X is preempted once and resumes 2.56–4.0
// ms. (The milestone at 1.55 ms used to drop the resched: W then waited
// for X to block at 3 ms.)
func TestLocalReschedSurvivesMilestone(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 3*ms)
	wt := b.task("w", 120, 0, false, CauseWake, ms)
	b.edge(x, 0, 3*ms/2, wt, 0)
	b.edge(x, 0, 3*ms/2+ms/20, wt, 0)
	b.w.Edges[0].NoPreemptNS = 60000
	b.w.PreemptWakeLocalNS = []int64{100000}
	w := b.done(t)
	cfg := testConfig()
	cfg.IdleWake = true // the resched delay pool above; no idle-exit or stall samples
	res, ch := replayChecked(t, w, cfg)
	if res.Metrics.WakeupCount != 1 || res.Metrics.WakeupMaxNS != 60000 {
		t.Errorf("wakeups %d latency %d, want 1 of 60 µs", res.Metrics.WakeupCount, res.Metrics.WakeupMaxNS)
	}
	if res.Metrics.InvoluntarySwitches != 1 || res.Metrics.MakespanNS != 4*ms {
		t.Errorf("involuntary %d makespan %d, want 1 and 4 ms (runs %+v)", res.Metrics.InvoluntarySwitches, res.Metrics.MakespanNS, ch.runs)
	}
}

// check_preempt_wakeup returns early while curr already has
// TIF_NEED_RESCHED: a second wakeup before the pending switch neither
// reschedules again nor moves the next buddy. One CPU, X runs 3 ms and
// wakes W1 at 1.5 ms and W2 at 1.55 ms in one system call (the trace shows
// X ran on 60 µs with TIF_NEED_RESCHED set after the first, NoPreemptNS)
// (both never run: vruntime 0, as max(0, min_vruntime − 3 ms)); the
// switch comes at the end of that run-on (the pool's 100 µs is not drawn
// on top of it). By hand: W1's wakeup sets the next buddy W1 and the
// resched at 1.56 ms; W2's returns early. At 1.56 ms the leftmost is W1
// (equal keys: first inserted) and the next buddy W1: W1 runs 1.56–2.56
// ms, then W2 (2.56–3.56), then X. Before, W2's wakeup moved the next
// buddy to W2, which ran first.
func TestNeedReschedKeepsNextBuddy(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 3*ms)
	w1 := b.task("w1", 120, 0, false, CauseWake, ms)
	w2 := b.task("w2", 120, 0, false, CauseWake, ms)
	b.edge(x, 0, 3*ms/2, w1, 0)
	b.edge(x, 0, 3*ms/2+ms/20, w2, 0)
	b.w.Edges[0].NoPreemptNS = 60000
	b.w.PreemptWakeLocalNS = []int64{100000}
	w := b.done(t)
	cfg := testConfig()
	cfg.IdleWake = true
	_, ch := replayChecked(t, w, cfg)
	var order []int64
	for _, r := range ch.runs {
		if r.tid != int64(w.Tasks[x].TID) {
			order = append(order, r.tid, r.start)
		}
	}
	want := []int64{int64(w.Tasks[w1].TID), t0 + 1560000, int64(w.Tasks[w2].TID), t0 + 2560000}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("wakee runs (tid, start) %v, want %v", order, want)
	}
}

// A wakeup preemption waits for the running task's next preemption point:
// where the trace shows the task ran on with TIF_NEED_RESCHED set after a
// wakeup (Edge.NoPreemptNS, e.g. the rest of a wake_up loop under a
// lock), the replay does not preempt it before the stretch ends. One CPU,
// X runs 3 ms and wakes W1 at 1.5 ms (the trace: X ran on 0.5 ms with the
// reschedule pending) and W2 at 1.8 ms; local resched delay 100 µs. By
// hand: W1 (vruntime 0) preempts X (1.5 ms ahead > wakeup_gran 1 ms); the
// switch would come at 1.6 ms, inside X's stretch [1.5, 2.0) ms of
// demand, so at 2.0 ms. W2's wakeup at 1.8 ms happens before it (and
// returns early: the reschedule is pending). At 2.0 ms W1 runs (next
// buddy and leftmost), 2.0–3.0; then W2 (vruntime 0 < X's 2 ms),
// 3.0–4.0; then X, 4.0–5.0. Without the stretch W1 would start at 1.6 ms
// and X would run again before waking W2.
func TestNoPreemptStretch(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 3*ms)
	w1 := b.task("w1", 120, 0, false, CauseWake, ms)
	w2 := b.task("w2", 120, 0, false, CauseWake, ms)
	b.edge(x, 0, 3*ms/2, w1, 0)
	b.w.Edges[len(b.w.Edges)-1].NoPreemptNS = ms / 2
	b.edge(x, 0, 18*ms/10, w2, 0)
	b.w.PreemptWakeLocalNS = []int64{100000}
	w := b.done(t)
	cfg := testConfig()
	cfg.IdleWake = true
	res, ch := replayChecked(t, w, cfg)
	var got []string
	for _, r := range ch.runs {
		got = append(got, fmt.Sprintf("%d@%d-%d", r.tid, (r.start-t0)/100000, (r.end-t0)/100000))
	}
	tx, t1, t2 := w.Tasks[x].TID, w.Tasks[w1].TID, w.Tasks[w2].TID
	want := []string{fmt.Sprintf("%d@0-20", tx), fmt.Sprintf("%d@20-30", t1), fmt.Sprintf("%d@30-40", t2), fmt.Sprintf("%d@40-50", tx)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs (tid@start-end in 0.1 ms) %v, want %v", got, want)
	}
	if res.Metrics.MakespanNS != 5*ms {
		t.Errorf("makespan %d, want 5 ms", res.Metrics.MakespanNS)
	}
}

// check_preempt_tick's clear_buddies(cfs_rq, curr) clears only the buddies
// that are curr: a next buddy set by a wakeup preemption still pending
// survives a slice-expiry tick. One CPU, HZ 1000 (latency 6 ms, min
// granularity 0.75 ms, wakeup granularity 1 ms): X runs, L is queued,
// both from the start (vruntime 0); X wakes W at 2.5 ms (W: vruntime
// max(0, 0 − 3 ms) = 0; X is 2.5 ms ahead > 1 ms: next buddy W, the
// reschedule after the local delay of 1 ms, at 3.5 ms). The tick at 3 ms
// finds X's 3 ms over its slice (6 ms × 1/3 = 2 ms) and preempts; the pick
// sees leftmost L (vruntime 0, inserted first) and next buddy W, not
// ahead of L: W runs at 3 ms. Before, the tick cleared every buddy and L
// ran first.
func TestTickKeepsOtherNextBuddy(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	x := b.task("x", 120, 0, true, CauseStart, 10*ms)
	b.task("l", 120, 0, false, CauseStart, 5*ms)
	wt := b.task("w", 120, 0, false, CauseWake, ms)
	b.edge(x, 0, 5*ms/2, wt, 0)
	b.w.PreemptWakeLocalNS = []int64{ms}
	w := b.done(t)
	cfg := testConfig()
	cfg.HZ = 1000
	cfg.IdleWake = true
	_, ch := replayChecked(t, w, cfg)
	var first run
	for _, r := range ch.runs {
		if r.tid != int64(w.Tasks[x].TID) {
			first = r
			break
		}
	}
	if first.tid != int64(w.Tasks[wt].TID) || first.start != t0+3*ms {
		t.Errorf("first run after X: tid %d at %d, want W (%d) at %d (runs %+v)", first.tid, first.start-t0, w.Tasks[wt].TID, 3*ms, ch.runs)
	}
}

// BASE_SLICE (on in the fixtures' debugfs sched features): sched_slice is
// at least sysctl_sched_min_granularity. One CPU, HZ 1000 (latency 6 ms,
// min granularity 0.75 ms): Y (nice 0) runs from the start and blocks at
// 0.5 ms; X (nice 19, weight 15) and Z (nice 0), queued from the start
// (vruntime 0, X first), follow: X from 0.5 ms. At the 1 ms tick X has run
// 0.5 ms; its slice is 6 ms × 15/1039 = 87 µs, raised to 0.75 ms: not
// expired, and under the minimum granularity, so no preemption. At 2 ms
// (1.5 ms run) it is: Z runs from 2 ms. Without BASE_SLICE (the kernels
// before v5.13, e.g. legacy's) X's 87 µs slice has expired at the 1 ms
// tick and Z runs from 1 ms.
func TestBaseSlice(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   int64
	}{{"v6.1", 2 * ms}, {"legacy", 1 * ms}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("y", 120, 0, true, CauseStart, ms/2)
		b.task("x", 139, 0, false, CauseStart, 5*ms)
		z := b.task("z", 120, 0, false, CauseStart, 5*ms)
		w := b.done(t)
		cfg := testConfig()
		p, err := LookupPolicy(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Policy = p
		cfg.HZ = 1000
		_, ch := replayChecked(t, w, cfg)
		found := false
		for _, r := range ch.runs {
			if r.tid == int64(w.Tasks[z].TID) {
				if r.start != t0+c.want {
					t.Errorf("%s: Z first runs at %d, want %d (runs %+v)", c.policy, r.start-t0, c.want, ch.runs)
				}
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%s: Z never ran", c.policy)
		}
	}
}

// wake_affine_weight with WF_SYNC adds 1 to prev_eff_load, so that equal
// loads stack the wakee on the waker's CPU (v6.1: "if prev_eff ==
// this_eff ... consider stacking the wakee on top of the waker"); the
// loads are task_h_load's (with group scheduling, a task's load_avg ×
// h_load / (cfs_rq load_avg + 1): one less than load_avg at best). State
// set by hand on 2 CPUs: CPU 0 runs the waker W (load 500) with another
// task queued (nr_running 2: not wake_affine_idle's sync case), cpu_load
// L0; CPU 1 (the wakee's prev) runs a task, cpu_load 0 (stale); the wakee
// P has load 0. L0 = 500, sync: current_load = 500 × 500 / 501 = 499,
// this_eff = (500 − 499 + 0) × 100 × 1024 = 102,400 against prev_eff =
// (0 − 0) × 108 × 1024 + 1 = 1: prev (with load_avg itself it was 0
// against 1, this CPU). Without sync: this_eff = 500 × 100 × 1024 >
// prev_eff = 0: prev. L0 = 400 (stale, below the waker's own load):
// current_load = 500 × 400 / 401 = 498 > 400, sync takes this CPU at once
// ("current_load > this_eff_load"); without sync, prev. L0 = 600, sync:
// current_load = 500 × 600 / 601 = 499, this_eff = 101 × 100 × 1024 > 1:
// prev. Each choice of this CPU counts one ttwu_move_affine, the early
// one too.
func TestWakeAffineWeightSyncTie(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	wk := b.task("w", 120, 0, true, CauseStart, ms)
	o := b.task("o", 120, 0, false, CauseStart, ms)
	q := b.task("q", 120, 1, true, CauseStart, ms)
	p := b.task("p", 120, 1, false, CauseWake, ms)
	b.edge(wk, 0, ms/2, p, 0)
	w := b.done(t)
	s, _ := newSim(t, w, testConfig())
	r0, r1 := s.cpus[0], s.cpus[1]
	r0.curr, r0.nrCFS, r0.avg.loadAvg = s.tasks[wk], 2, 500
	_ = o
	r1.curr, r1.nrCFS, r1.avg.loadAvg = s.tasks[q], 1, 0
	s.tasks[wk].avg.loadAvg, s.tasks[p].avg.loadAvg = 500, 0
	sd := s.domains(0)[0]
	for _, c := range []struct {
		sync  bool
		load0 uint64
		want  int
	}{{true, 500, 1}, {false, 500, 1}, {true, 400, 0}, {false, 400, 1}, {true, 600, 1}} {
		s.syncWake = c.sync
		r0.avg.loadAvg = c.load0
		r0.hLoadJiffy = noJiffy // h_load taken afresh: a new jiffy
		before := s.stats.TTWUMoveAffine
		if got := s.wakeAffine(sd, s.tasks[p], 0, 1, s.tasks[wk]); got != c.want {
			t.Errorf("sync %v, cpu_load %d: wake_affine chose CPU %d, want %d", c.sync, c.load0, got, c.want)
		}
		if moved := s.stats.TTWUMoveAffine - before; moved != int64(1-c.want) {
			t.Errorf("sync %v, cpu_load %d: ttwu_move_affine +%d, want +%d", c.sync, c.load0, moved, 1-c.want)
		}
	}
}

// newidle_balance measures each pass in wall time (sched_clock_cpu before
// and after load_balance), so on a guest a host deschedule of the vCPU
// during the pass is part of the cost it records in max_newidle_lb_cost,
// and the next newly idle CPU whose avg_idle is below that skips the
// balance. The engine takes a stall of the CPU's stall process that
// begins within the pass, for its whole length; one in progress when the
// pass starts does not count (the vCPU is running the pass). By hand on 2
// CPUs (nothing to pull; NI_RANDOM off so every pass runs): CPU 0 goes
// newly idle at 10 ms with avg_idle 1 ms and the root domain overloaded.
// The pass costs c0 + c1 × span = 1,000 + 50 × 2 = 1,100 ns, plus
//   - a stall [10 ms + 500 ns, 13 ms): 2,999,500 ns, so 3,000,600 ns, and
//     at the next newly idle moment avg_idle 1 ms < 3.0006 ms skips it;
//   - a stall [9, 13) ms, in progress: nothing (1,100 ns; the next runs);
//   - a stall from 10 ms + 2,000 ns, after the pass: nothing.
func TestNewidleCostIncludesStall(t *testing.T) {
	for _, c := range []struct {
		name       string
		start, end int64
		cost       int64
		skipped    bool
	}{
		{"begins in the pass", t0 + 10*ms + 500, t0 + 13*ms, 3000600, true},
		{"in progress", t0 + 9*ms, t0 + 13*ms, 1100, false},
		{"after the pass", t0 + 10*ms + 2000, t0 + 13*ms, 1100, false},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("a", 120, 0, true, CauseStart, ms)
		b.task("b", 120, 1, true, CauseStart, ms)
		w := b.done(t)
		w.Stalls = &StallModel{TickNS: 4 * ms, Fraction: 0.5, FractionByBusy: []float64{0.5, 0.5}, StallsNS: []int64{4 * ms}, MeanStallNS: 4 * ms}
		cfg := testConfig()
		cfg.IdleWake = true
		s, _ := newSim(t, w, cfg)
		s.knobs.NIRandom = false
		s.now = t0 + 10*ms
		s.stall = make([]stallProc, s.ncpu)
		for i := range s.stall {
			s.stall[i] = stallProc{start: 1 << 62, end: 1<<62 + 1}
		}
		s.stall[0] = stallProc{start: c.start, end: c.end}
		r := s.cpus[0]
		s.rdOverload = true
		r.avgIdle = ms
		s.newidleBalance(r)
		if got := r.sd[0].maxNewidleLbCost; got != c.cost {
			t.Errorf("%s: max_newidle_lb_cost %d, want %d", c.name, got, c.cost)
			continue
		}
		before := s.stats.NewidleSkipped
		s.now = t0 + 20*ms
		r.avgIdle = ms
		s.rdOverload = true // the first pass found nothing overloaded
		s.newidleBalance(r)
		if got := s.stats.NewidleSkipped == before+1; got != c.skipped {
			t.Errorf("%s: next newidle balance skipped %v, want %v (max_newidle_lb_cost %d)", c.name, got, c.skipped, r.sd[0].maxNewidleLbCost)
		}
	}
}

// v6.17's 155213a2aed4: a newidle pass that pulls nothing is booked at
// 3/2 of the domain's max_newidle_lb_cost, which is capped at
// sysctl_sched_migration_cost + 200 ns. By hand on 2 CPUs (one MC domain,
// nothing to pull), the cost at 1,100 ns: three failing passes raise it
// to 1,650, 2,475, 3,712 ns; from 400 µs one raises it to the cap,
// 500,200 ns, and an avg_idle of 400 µs then skips the next. Without the
// change the failing passes leave it at 1,100.
func TestNewidleBumpOnFail(t *testing.T) {
	for _, bump := range []bool{true, false} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("a", 120, 0, true, CauseStart, ms)
		b.task("b", 120, 1, true, CauseStart, ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.knobs.NIRandom = false
		s.knobs.NewidleBumpOnFail = bump
		r := s.cpus[0]
		st := r.sd[0]
		st.maxNewidleLbCost = 1100
		want := []int64{1650, 2475, 3712}
		if !bump {
			want = []int64{1100, 1100, 1100}
		}
		for i, w := range want {
			s.now = t0 + int64(i+1)*ms
			s.rdOverload = true
			r.avgIdle = ms
			s.newidleBalance(r)
			if st.maxNewidleLbCost != w {
				t.Errorf("bump %v: pass %d: max_newidle_lb_cost %d, want %d", bump, i+1, st.maxNewidleLbCost, w)
			}
		}
		if !bump {
			continue
		}
		st.maxNewidleLbCost = 400000
		s.now = t0 + 10*ms
		s.rdOverload = true
		r.avgIdle = ms
		s.newidleBalance(r)
		if st.maxNewidleLbCost != 500200 {
			t.Errorf("from 400 µs: max_newidle_lb_cost %d, want the cap 500200", st.maxNewidleLbCost)
		}
		before := s.stats.NewidleSkipped
		s.now = t0 + 11*ms
		s.rdOverload = true
		r.avgIdle = 400000
		s.newidleBalance(r)
		if s.stats.NewidleSkipped != before+1 {
			t.Error("avg_idle 400 µs under the 500.2 µs cost: pass not skipped")
		}
	}
}

// newidle_balance moves the CPU's next periodic balance forward to when
// the idle balance interval of each domain it looked at next falls due
// (update_next_balance), also when its gate skips the pass (then only the
// lowest domain). By hand on 2 CPUs (one MC domain, nothing to pull),
// HZ 250: the domain last balanced at jiffy j0 − 1 with balance_interval
// 8 ms (2 jiffies), the CPU's next_balance at j0 + 100. Going newly idle
// at jiffy j0, with the gate shut (root domain not overloaded) or open,
// next_balance becomes j0 − 1 + 2 = j0 + 1; one already sooner (j0) stays.
func TestNewidleMovesNextBalance(t *testing.T) {
	for _, c := range []struct {
		name       string
		overload   bool
		next, want int64 // relative to j0
	}{
		{"gate shut", false, 100, 1},
		{"pass run", true, 100, 1},
		{"already sooner", true, 0, 0},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("a", 120, 0, true, CauseStart, ms)
		b.task("b", 120, 1, true, CauseStart, ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.knobs.NIRandom = false
		s.now = t0 + 10*ms
		j0 := s.jiffies()
		r := s.cpus[0]
		st := r.sd[0]
		st.lastBalance, st.balanceInterval = j0-1, 8
		r.nextBalance = j0 + c.next
		s.rdOverload = c.overload
		r.avgIdle = ms
		s.newidleBalance(r)
		if got := r.nextBalance - j0; got != c.want {
			t.Errorf("%s: next_balance j0%+d, want j0%+d", c.name, got, c.want)
		}
	}
}

// A CPU entering nohz idle sets nohz.needs_update; the next busy CPU's
// tick kicks the ILB with NOHZ_NEXT_KICK even when no balance is due, and
// the ILB sets nohz.next_balance to the earliest next_balance of the idle
// CPUs, which lets the following ticks kick a balance for them in time.
// A kick while one is pending adds its flags to the ILB's and sends no
// second IPI (kick_ilb's atomic_fetch_or). By hand on 2 CPUs:
// nohz.next_balance at j0 + 1000 (no balance due), CPU 1 idle with
// next_balance j0 + 2, CPU 0 busy at its tick. A first kick without the
// update pending carries STATS only (CPU 1's blocked load); a second,
// with it pending, adds NEXT to the same kick; the ILB then sets
// nohz.next_balance to j0 + 2 and clears needs_update.
func TestNohzNextKick(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	b.task("a", 120, 0, true, CauseStart, 100*ms)
	s, _ := newSim(t, b.done(t), testConfig())
	s.now = t0 + 10*ms
	j0 := s.jiffies()
	r0, r1 := s.cpus[0], s.cpus[1]
	s.enterIdle(r1) // CPU 1 (nothing to run) enters nohz idle
	if !s.nohz.needsUpdate {
		t.Fatal("entering nohz idle did not set needs_update")
	}
	r1.nextBalance = j0 + 2
	s.nohz.nextBalance = j0 + 1000
	s.nohz.needsUpdate = false
	s.nohzBalancerKick(r0)
	if got := s.nohz.kickFlags[1]; got != kickStats || s.stats.NohzKicks != 1 {
		t.Fatalf("first kick: flags %d, kicks %d; want STATS (%d), 1", got, s.stats.NohzKicks, kickStats)
	}
	s.nohz.needsUpdate = true
	s.nohzBalancerKick(r0)
	if got := s.nohz.kickFlags[1]; got != kickStats|kickNext || s.stats.NohzKicks != 1 {
		t.Fatalf("second kick: flags %d, kicks %d; want STATS|NEXT (%d), 1", got, s.stats.NohzKicks, kickStats|kickNext)
	}
	s.nohzIdleBalance(1)
	if s.nohz.nextBalance != j0+2 || s.nohz.needsUpdate || s.nohz.kickFlags[1] != 0 {
		t.Errorf("after the ILB: nohz.next_balance j0%+d, needs_update %v, flags %d; want j0+2, false, 0", s.nohz.nextBalance-j0, s.nohz.needsUpdate, s.nohz.kickFlags[1])
	}
}

// An idle CPU whose tick goes on (Config.IdleTicks: the 6.1 stable
// series' idle loop without a cpuidle driver keeps the tick for the first
// idle iteration, f4c31b07b136; pending RCU callbacks keep it longer)
// stays out of nohz.idle_cpus_mask and balances itself on its own ticks,
// CPU_IDLE, until its tick stops. Worked by hand on two cores (one MC
// domain): CPU 1 goes idle at a jiffy with its tick running; with N = 0
// it joins the mask at once; with N = 1 its next tick runs one CPU_IDLE
// load_balance (the MC domain, due) and then the CPU joins the mask with
// its tick stopped; with N = 2 the first tick balances and keeps the tick,
// the second stops it (the domain's idle interval, 2 ms, is one jiffy, so
// it balances on both).
func TestIdleTicksBeforeNohz(t *testing.T) {
	for _, tc := range []struct {
		n            int
		passes       []int64 // LBIdle after each idle tick
		nohzAfterNth int     // the tick after which the CPU is in the mask (0: at idle entry)
	}{
		{0, nil, 0},
		{1, []int64{1}, 1},
		{2, []int64{1, 2}, 2},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("a", 120, 0, true, CauseStart, 100*ms)
		cfg := testConfig()
		cfg.IdleTicks = tc.n
		s, _ := newSim(t, b.done(t), cfg)
		s.now = s.nextJiffy()
		r1 := s.cpus[1]
		r1.tickOn = true // it ran a task until now
		r1.nextBalance = s.jiffies()
		s.enterIdle(r1)
		if got := s.nohz.idle[1]; got != (tc.nohzAfterNth == 0) {
			t.Fatalf("N=%d: in the nohz mask at idle entry: %v", tc.n, got)
		}
		for i, want := range tc.passes {
			s.now += s.tickNS
			s.tick(r1, false)
			if s.stats.LBIdle != want {
				t.Errorf("N=%d: CPU_IDLE passes after idle tick %d: %d, want %d", tc.n, i+1, s.stats.LBIdle, want)
			}
			in := i+1 >= tc.nohzAfterNth
			if s.nohz.idle[1] != in || r1.tickOn == in {
				t.Errorf("N=%d: after idle tick %d: in the mask %v, tick on %v; want %v, %v", tc.n, i+1, s.nohz.idle[1], r1.tickOn, in, !in)
			}
		}
		if s.nohz.nrCPUs != 1 || !s.nohz.needsUpdate {
			t.Errorf("N=%d: nohz.nr_cpus %d, needs_update %v; want 1, true", tc.n, s.nohz.nrCPUs, s.nohz.needsUpdate)
		}
		// --validate's idle_tick row: each of those ticks raised the
		// softirq; nothing waited anywhere, nothing was pulled.
		if st := s.stats; st.IdleTicks != int64(len(tc.passes)) || st.IdleTickPasses != int64(len(tc.passes)) || st.IdleTickChances != 0 || st.IdleTickPulls != 0 {
			t.Errorf("N=%d: idle_tick tick/pass/wait/pull %d/%d/%d/%d, want %d/%d/0/0", tc.n, st.IdleTicks, st.IdleTickPasses, st.IdleTickChances, st.IdleTickPulls, len(tc.passes), len(tc.passes))
		}
	}
}

// idleTickSim is a replay with idle_tick=idleTicks on topo, at a jiffy,
// of one task per entry of cpus (named a, b, ...; nice 0, 100 ms each,
// arrivals), started on that CPU.
func idleTickSim(t *testing.T, topo string, idleTicks int, cpus ...int32) *Sim {
	t.Helper()
	b := newBuilder(t, topo)
	for i, c := range cpus {
		b.task(string(rune('a'+i)), 120, c, false, CauseArrival, 100*ms)
	}
	cfg := testConfig()
	cfg.IdleTicks = idleTicks
	s, _ := newSim(t, b.done(t), cfg)
	s.now = s.nextJiffy()
	return s
}

// An idle CPU's own-tick pass that finds a task waiting behind a running
// one elsewhere pulls it, and --validate's idle_tick row counts the pass,
// the chance and the pull. Two cores (one MC domain, single-CPU groups):
// a runs on CPU 0 with b queued behind it, b last ran 10 ms ago (not
// cache hot); CPU 1 goes idle with its tick on and IdleTicks = 1. Its
// tick's CPU_IDLE pass sees CPU 0 with two tasks against none: an
// imbalance of one task (calculate_imbalance's nr_running halves), and
// detach_tasks takes b, the only one not running.
func TestIdleTickPassPulls(t *testing.T) {
	s := idleTickSim(t, "sockets=1,cores=2,threads=1", 1, 0, 0)
	r0, r1 := s.cpus[0], s.cpus[1]
	for _, p := range s.tasks {
		s.startActivation(p, 0)
		p.avg.lastUpdate = s.now
		s.enqueue(r0, p, enqWakeup)
	}
	s.switchTo(r0, s.tasks[0], "")
	s.tasks[1].execStart = s.now - 10*ms
	r1.tickOn = true
	r1.nextBalance = s.jiffies()
	s.enterIdle(r1)
	s.now += s.tickNS
	s.tick(r1, false)
	if st := s.stats; st.IdleTicks != 1 || st.IdleTickPasses != 1 || st.IdleTickChances != 1 || st.IdleTickPulls != 1 {
		t.Errorf("idle_tick tick/pass/wait/pull %d/%d/%d/%d, want 1/1/1/1", st.IdleTicks, st.IdleTickPasses, st.IdleTickChances, st.IdleTickPulls)
	}
	if r1.curr != s.tasks[1] {
		t.Errorf("CPU 1 runs %v, want b", r1.curr)
	}
}

// --validate's `idle 4-16ms ticked/all` row (with IdleTicks): an idle
// period counts when it lasts 4 to 16 ms, as ticked when an idle tick
// (nothing queued) came in it. CPU 1 goes idle at a jiffy and runs a
// task again after 5 ms with its tick taken at 4 ms (counted, ticked),
// after 3 ms (too short), after 5 ms with its tick off (counted, not
// ticked), after 17 ms (too long).
func TestIdleMidPeriods(t *testing.T) {
	for _, c := range []struct {
		lenNS           int64
		tickOn          bool
		periods, ticked int64
	}{{5 * ms, true, 1, 1}, {3 * ms, true, 0, 0}, {5 * ms, false, 1, 0}, {17 * ms, true, 0, 0}} {
		s := idleTickSim(t, "sockets=1,cores=2,threads=1", 1, 1)
		r1, p := s.cpus[1], s.tasks[0]
		r1.tickOn = c.tickOn
		r1.nextBalance = s.jiffies()
		s.enterIdle(r1)
		start := s.now
		if c.tickOn {
			s.now = start + s.tickNS
			s.tick(r1, false)
		}
		s.now = start + c.lenNS
		s.startActivation(p, 0)
		p.avg.lastUpdate = s.now
		s.enqueue(r1, p, enqWakeup)
		s.switchTo(r1, p, "")
		if st := s.stats; st.IdleMidPeriods != c.periods || st.IdleMidTicked != c.ticked {
			t.Errorf("idle %d ns, tick on %v: ticked/all %d/%d, want %d/%d", c.lenNS, c.tickOn, st.IdleMidTicked, st.IdleMidPeriods, c.ticked, c.periods)
		}
	}
}

// The idle ticks by contention (--validate's idle tick/jiffy row), by
// hand on four CPUs: at a jiffy t0 CPU 0 runs a, CPUs 1 and 2 go idle,
// CPU 3 has not switched yet (its time and ticks do not count). One CPU
// of four busy is fewer than half: CPU 1's tick at t0+4 ms counts there,
// CPU 3's not. At t0+6 ms CPU 2 runs b: two of four busy is half. CPU 1's
// tick at t0+8 ms counts there. Idle time: 6 ms on two CPUs with one busy
// (3 tick periods), then 4 ms on one with two busy to t0+10 ms (1).
func TestIdleTickRateByBusy(t *testing.T) {
	s := idleTickSim(t, "sockets=1,cores=4,threads=1", 16, 0, 2)
	t0 := s.now
	run := func(r *rq, p *simTask) {
		s.startActivation(p, 0)
		p.avg.lastUpdate = s.now
		s.enqueue(r, p, enqWakeup)
		s.switchTo(r, p, "")
	}
	run(s.cpus[0], s.tasks[0])
	s.enterIdle(s.cpus[1])
	s.enterIdle(s.cpus[2])
	s.cpus[1].tickOn, s.cpus[3].tickOn = true, true
	s.now = t0 + 4*ms
	s.tick(s.cpus[1], false)
	s.tick(s.cpus[3], false)
	s.now = t0 + 6*ms
	run(s.cpus[2], s.tasks[1])
	s.now = t0 + 8*ms
	s.tick(s.cpus[1], false)
	s.now = t0 + 10*ms
	s.addIdleTime()
	st := s.stats
	if st.IdleTicksFewBusy != 1 || st.IdlePeriodsFewBusy != 3 || st.IdleTicksManyBusy != 1 || st.IdlePeriodsManyBusy != 1 {
		t.Errorf("idle ticks %d in %v periods with few busy, %d in %v with many; want 1 in 3, 1 in 1",
			st.IdleTicksFewBusy, st.IdlePeriodsFewBusy, st.IdleTicksManyBusy, st.IdlePeriodsManyBusy)
	}
	if got := perPeriod(st.IdleTicksFewBusy, st.IdlePeriodsFewBusy) + "|" + perPeriod(0, 0); got != "0.33|-" {
		t.Errorf("row values %q, want 0.33|-", got)
	}
}

// idleTickHostSim is the replay of b's workload with one idle tick and a
// host of one core (HostCores 1): idle exits of 50 µs, 300 µs for an
// idle CPU's own wakeups and remote for those sent from another, host
// stalls of 5 ms. It starts at a jiffy.
func idleTickHostSim(t *testing.T, b *builder, remote int64) *Sim {
	t.Helper()
	w := b.done(t)
	w.IdleWakeNS = []int64{50000}
	w.IdleWakeLocalNS = []int64{300000}
	w.IdleWakeRemoteNS = []int64{remote}
	w.Stalls = &StallModel{TickNS: 4 * ms, FractionByBusy: []float64{0, 0, 0}, StallsNS: []int64{5 * ms}, MeanStallNS: 5 * ms, HostCores: 1}
	cfg := testConfig()
	cfg.IdleWake = true
	cfg.IdleTicks = 1
	s, _ := newSim(t, w, cfg)
	s.now = s.nextJiffy()
	return s
}

// On a host that runs fewer vCPUs than want to run, an idle vCPU's own
// tick is a timer interrupt that waits for the host like its other timers
// (a draw from the trace's idle exits of an idle CPU's own wakeups, here
// the single 300 µs one, after the wait for a host core, none here: no
// other vCPU wants one, TestIdleTickWaitsForHostCore has some): the tick
// due at a jiffy balances 300 µs later, and a busy vCPU's tick is not
// moved by it.
func TestIdleTickWaitsForHost(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	b.task("a", 120, 0, true, CauseStart, 100*ms)
	s := idleTickHostSim(t, b, 100000)
	r1 := s.cpus[1]
	r1.tickOn, r1.tickArmed = true, true
	r1.nextBalance = s.jiffies()
	s.enterIdle(r1)
	s.now += s.tickNS
	due := s.now
	s.tick(r1, false)
	if s.stats.LBIdle != 0 || !r1.tickOn {
		t.Fatalf("the idle tick balanced at the jiffy (%d passes, tick on %v); want it after the host runs the vCPU", s.stats.LBIdle, r1.tickOn)
	}
	e := s.q.pop()
	if e.kind != evTick || e.cpu != 1 || e.t != due+300000 || e.b != 1 {
		t.Fatalf("queued %+v; want CPU 1's late tick at the jiffy + 300 µs", e)
	}
	s.now = e.t
	s.tick(r1, true)
	if s.stats.LBIdle != 1 || r1.tickOn || !s.nohz.idle[1] {
		t.Errorf("after the late tick: %d passes, tick on %v, in the mask %v; want 1, false, true", s.stats.LBIdle, r1.tickOn, s.nohz.idle[1])
	}
}

// An idle vCPU's tick waits, like an IPI to it, for the host to run the
// vCPU: an idle exit of its own timers (the local pool's 300 µs) after
// the stall of its host-wait process the jiffy falls in (hostEnd; set by
// hand here: CPU 1's runs from 1 ms before the jiffy to 2 ms after), so
// 2.3 ms after the jiffy. The host runs the vCPU once for all its
// interrupts, so whichever came first sets when:
//   - a wakeup sent from another CPU while that tick waits ends its idle
//     exit with the tick, whatever its own draw (the remote pool's 100 or
//     500 µs after the stall's rest: 2.1 or 2.5 ms), the wakee queued
//     before the tick (its IPI's higher vector), so the tick finds the
//     CPU busy and raises no idle balance;
//   - a wakeup raised on the vCPU itself (its timer, at the trace's time)
//     shows the host running it then: the tick comes with that wakeup's
//     exit (1 ms + 300 µs after the jiffy), the one queued before dropped;
//   - a tick due while an idle exit is in progress (a wakeup sent half a
//     millisecond before the jiffy, in the stall: its exit the stall's end
//     plus the remote draw) comes at that exit.
func TestIdleTickWaitsForHostCore(t *testing.T) {
	setup := func(t *testing.T, remote int64) (*Sim, *rq, int64) {
		b := newBuilder(t, "sockets=1,cores=3,threads=1")
		b.task("a", 120, 0, false, CauseArrival, 100*ms)
		b.task("b", 120, 1, false, CauseArrival, 100*ms)
		s := idleTickHostSim(t, b, remote)
		a := s.tasks[0]
		s.startActivation(a, 0)
		s.enqueue(s.cpus[0], a, enqWakeup)
		s.switchTo(s.cpus[0], a, "")
		r1 := s.cpus[1]
		r1.tickOn, r1.tickArmed = true, true
		r1.nextBalance = s.jiffies()
		s.enterIdle(r1)
		due := s.now + s.tickNS
		s.hostStall = make([]stallProc, 3)
		for c := range s.hostStall {
			s.hostStall[c] = stallProc{start: 1 << 62, end: 1 << 62}
		}
		s.hostStall[1] = stallProc{start: due - ms, end: due + 2*ms}
		return s, r1, due
	}
	// wake queues b on r, woken from CPU from (its wakeup's CPU).
	wake := func(s *Sim, r *rq, from int) {
		p := s.tasks[1]
		s.startActivation(p, 0)
		p.avg.lastUpdate = s.now
		s.enqueue(r, p, enqWakeup)
		s.wakerCPU1 = from + 1
		s.kickIdle(r)
		s.wakerCPU1 = 0
	}
	// run plays the queue until CPU 1 has taken a tick, and returns when.
	run := func(t *testing.T, s *Sim, r1 *rq) int64 {
		for len(s.q) > 0 {
			e := s.q.pop()
			s.now = e.t
			switch {
			case e.kind == evIdleExit && e.gen == r1.idleGen && r1.waking:
				r1.waking = false
				s.schedule(r1, "")
			case e.kind == evTick && e.cpu == 1 && e.b == 1 && e.gen == r1.lateTickGen:
				s.tick(r1, true)
				return e.t
			}
		}
		t.Fatal("CPU 1 took no tick")
		return 0
	}
	for _, tc := range []struct {
		name       string
		remote     int64
		wakeAt     int64 // after the jiffy
		from       int   // the wakeup's CPU
		exit, tick int64 // after the jiffy
	}{
		{"tick first, remote wakeup drawing less", 100000, ms, 0, 2300000, 2300000},
		{"tick first, remote wakeup drawing more", 500000, ms, 0, 2300000, 2300000},
		{"tick first, local wakeup", 500000, ms, 1, 1300000, 1300000},
		{"exit first, remote draw 100 µs", 100000, -ms / 2, 0, 2100000, 2100000},
		{"exit first, remote draw 500 µs", 500000, -ms / 2, 0, 2500000, 2500000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r1, due := setup(t, tc.remote)
			if tc.wakeAt < 0 {
				s.now = due + tc.wakeAt
				wake(s, r1, tc.from)
				s.now = due
				s.tick(r1, false)
			} else {
				s.now = due
				s.tick(r1, false)
				if r1.lateTickAt != due+2300000 {
					t.Fatalf("late tick at %d ns after the jiffy, want 2,300,000", r1.lateTickAt-due)
				}
				s.now = due + tc.wakeAt
				wake(s, r1, tc.from)
			}
			if !r1.waking || r1.idleExitAt != due+tc.exit {
				t.Fatalf("idle exit in progress %v, ending %d ns after the jiffy; want true, %d", r1.waking, r1.idleExitAt-due, tc.exit)
			}
			if at := run(t, s, r1); at != due+tc.tick {
				t.Errorf("CPU 1's tick at %d ns after the jiffy, want %d", at-due, tc.tick)
			}
			if r1.curr != s.tasks[1] || s.stats.IdleTicks != 0 || s.stats.IdleTickPasses != 0 {
				t.Errorf("CPU 1 runs %v, idle ticks %d, idle passes %d; want b, 0, 0", r1.curr, s.stats.IdleTicks, s.stats.IdleTickPasses)
			}
		})
	}
}

// rebalance_domains decays max_newidle_lb_cost on its regular visit
// (update_newidle_cost(sd, 0)), at most once per HZ jiffies, and resets
// max_idle_balance_cost to max(sysctl_sched_migration_cost, the sum of the
// domains' maxima). A CPU whose newidle passes are all skipped by the gate
// therefore still sees its maximum decay; before, only a newidle pass that
// ran decayed it. Worked by hand: a 3,000,000 ns maximum raised at t0, a
// periodic balance 1.5 s later (375 jiffies > HZ = 250): 3,000,000 × 253 /
// 256 = 2,964,843 ns, and max_idle_balance_cost (3 ms) becomes 2,964,843;
// another visit 100 ms later (25 jiffies after the decay) leaves both.
func TestRebalanceDomainsDecaysNewidleCost(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	b.task("a", 120, 0, true, CauseStart, ms)
	b.task("b", 120, 1, true, CauseStart, ms)
	w := b.done(t)
	s, _ := newSim(t, w, testConfig())
	r := s.cpus[0]
	s.now = t0
	r.sd[0].maxNewidleLbCost = 3 * ms
	r.sd[0].lastDecayMaxLbCost = s.jiffies()
	r.maxIdleBalanceCost = 3 * ms
	s.now = t0 + 1500*ms
	s.rebalanceDomains(r, CPUNotIdle, MigrationSourcePeriodic)
	if got, want := r.sd[0].maxNewidleLbCost, int64(2964843); got != want {
		t.Fatalf("max_newidle_lb_cost %d after 1.5 s, want %d", got, want)
	}
	if got, want := r.maxIdleBalanceCost, int64(2964843); got != want {
		t.Errorf("max_idle_balance_cost %d, want %d", got, want)
	}
	s.now += 100 * ms
	s.rebalanceDomains(r, CPUNotIdle, MigrationSourcePeriodic)
	if got, want := r.sd[0].maxNewidleLbCost, int64(2964843); got != want {
		t.Errorf("max_newidle_lb_cost %d 100 ms after the decay, want %d (once per HZ)", got, want)
	}
}

// task_fork_fair (v6.1, CFS) places a forked child on the forking CPU's
// queue before select_task_rq: START_DEBIT is one virtual slice of that
// queue with the child added, after its min_vruntime. 8 CPUs (latency
// 6 ms × (1 + log2 8) = 24 ms); the parent runs alone on CPU 0 at
// min_vruntime: the slice is 24 ms × 1024 / 2048 = 12 ms, so the child
// starts 12 ms after the min_vruntime of whichever (idle) CPU takes it.
// Placed on the chosen idle queue instead it got a whole period, 24 ms.
func TestForkStartDebitOnForkingQueue(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=8,threads=1")
	p := b.task("p", 120, 0, true, CauseStart, 10*ms)
	c := b.task("c", 120, 0, false, CauseFork, ms)
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: ms, Wakee: c, WakeeAct: 0})
	w := b.done(t)
	s, _ := newSim(t, w, testConfig())
	if s.latencyNS != 24*ms {
		t.Fatalf("latency %d, want 24 ms", s.latencyNS)
	}
	r0, parent, child := s.cpus[0], s.tasks[p], s.tasks[c]
	r0.curr, r0.nrCFS, r0.loadWeight = parent, 1, parent.weight
	parent.state = tsRunning
	parent.vruntime = r0.minVruntime
	s.fork(r0, parent, child)
	dst := s.cpus[child.cpu]
	if dst == r0 {
		t.Fatalf("child stayed on the busy CPU 0")
	}
	if got := child.vruntime - dst.minVruntime; got != 12*ms {
		t.Errorf("child starts %d after its CPU's min_vruntime, want %d", got, 12*ms)
	}
}

// exitTimes records each task's sched_process_exit.
type exitTimes map[int32]int64

func (x exitTimes) Emit(e *timeline.Event) error {
	if e.Kind == timeline.SchedProcessExit {
		x[e.Int32(timeline.PID)] = e.Time
	}
	return nil
}

// replayExits is replayChecked that also collects every task's exit time.
func replayExits(t *testing.T, w *Workload, cfg Config) (*Result, exitTimes, *checker) {
	t.Helper()
	ex, ch := exitTimes{}, newChecker(t)
	res, err := Replay(w, cfg, Tee{ch, ex})
	if err != nil {
		t.Fatal(err)
	}
	return res, ex, ch
}

// Work bounded by the recorded exit time (Config.ExitDeadlines), worked by
// hand on one CPU: a parent runs 1 ms and waits; two 10 ms hogs, both
// recorded exiting at 12 ms, share the CPU from 1 ms; the first hog's exit
// wakes the parent (the edge at the end of its final activation). At 12 ms
// both hogs have run 11 ms between them, so both are stopped and 20 − 11 =
// 9 ms of their demand is cut; the cut fires the exit wakeup, and the
// parent runs its last 1 ms from 12 to 13 ms. With fixed work (the
// default) nothing is cut: 22 ms of work on one CPU that never idles, the
// last exit at 22 ms.
func TestExitDeadlineCutsWork(t *testing.T) {
	build := func() *Workload {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		p := b.task("parent", 120, 0, true, CauseStart, ms, ms)
		ha := b.task("hog-a", 120, 0, false, CauseStart, 10*ms)
		hb := b.task("hog-b", 120, 0, false, CauseStart, 10*ms)
		b.w.Tasks[p].Activations[1].End = EndExit
		for _, h := range []int32{ha, hb} {
			b.w.Tasks[h].Activations[0].End = EndExit
			b.w.Tasks[h].ExitNS = t0 + 12*ms
		}
		b.edge(ha, 0, 10*ms, p, 1)
		return b.done(t)
	}
	cfg := testConfig()
	cfg.ExitDeadlines = true
	res, ex, _ := replayExits(t, build(), cfg)
	if res.Stats.DeadlineCuts != 2 || res.Stats.DeadlineCutNS != 9*ms {
		t.Errorf("cuts %d, cut %d ns; want 2 and 9 ms", res.Stats.DeadlineCuts, res.Stats.DeadlineCutNS)
	}
	for _, h := range []int32{101, 102} {
		if ex[h] != t0+12*ms {
			t.Errorf("hog %d exits at %d ns; want 12 ms", h, ex[h]-t0)
		}
	}
	if ex[100] != t0+13*ms {
		t.Errorf("parent exits at %d ns; want 13 ms", ex[100]-t0)
	}

	// The command's deadline fired at 12 ms (ExitDeadlineFromNS): the
	// hogs' exits then are its, cut as above; had it fired at 13 ms, they
	// exited before it, on their own, and their work is fixed.
	cfg.ExitDeadlineFromNS = t0 + 12*ms
	if res, _, _ = replayExits(t, build(), cfg); res.Stats.DeadlineCuts != 2 {
		t.Errorf("deadline at 12 ms: cuts %d; want 2", res.Stats.DeadlineCuts)
	}
	cfg.ExitDeadlineFromNS = t0 + 13*ms
	res, ex, _ = replayExits(t, build(), cfg)
	if res.Stats.DeadlineCuts != 0 || max(ex[100], ex[101], ex[102]) != t0+22*ms {
		t.Errorf("deadline at 13 ms: cuts %d, exits at %d, %d, %d ns; want none cut, the last at 22 ms", res.Stats.DeadlineCuts, ex[100]-t0, ex[101]-t0, ex[102]-t0)
	}

	cfg.ExitDeadlines, cfg.ExitDeadlineFromNS = false, 0
	res, ex, _ = replayExits(t, build(), cfg)
	if res.Stats.DeadlineCuts != 0 || max(ex[100], ex[101], ex[102]) != t0+22*ms {
		t.Errorf("fixed work: cuts %d, exits at %d, %d, %d ns; want none cut, the last at 22 ms", res.Stats.DeadlineCuts, ex[100]-t0, ex[101]-t0, ex[102]-t0)
	}
}

// A time-bounded spinner runs on to its recorded exit (Config.ExitDeadlines,
// runOn), worked by hand on 2 CPUs: "spin" runs on CPU 0 from t0, one
// activation of 5 ms ending in its exit, recorded at 10 ms, whose exit
// wakes its parent 50 µs before the end (offset 4.95 ms); the parent ran 1
// ms on CPU 1 from t0 and runs 1 ms more after that wakeup, then exits.
// The spinner did all its work in its final run, so with exit deadlines
// it reaches the held wakeup at 4.95 ms and runs on: it exits at 10 ms,
// the wakeup fires then and the parent runs 10–11 ms; nothing is cut; the
// run-on is 10 − 4.95 = 5.05 ms. With fixed work it exits at 5 ms and the
// parent at 5.95 ms.
func TestSpinnerRunsOnToExit(t *testing.T) {
	build := func() *Workload {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		sp := b.task("spin", 120, 0, true, CauseStart, 5*ms)
		p := b.task("parent", 120, 1, true, CauseStart, ms, ms)
		b.w.Tasks[sp].Activations[0].End = EndExit
		b.w.Tasks[sp].ExitNS = t0 + 10*ms
		b.w.Tasks[p].Activations[1].End = EndExit
		b.edge(sp, 0, 5*ms-50000, p, 1)
		return b.done(t)
	}
	cfg := testConfig()
	cfg.ExitDeadlines = true
	res, ex, _ := replayExits(t, build(), cfg)
	if ex[100] != t0+10*ms || ex[101] != t0+11*ms {
		t.Errorf("spinner exits at %d ns, parent at %d ns; want 10 and 11 ms", ex[100]-t0, ex[101]-t0)
	}
	if st := res.Stats; st.RunOnTasks != 1 || st.RunOnNS != 5*ms+50000 || st.DeadlineCuts != 0 {
		t.Errorf("run-on %d tasks, %d ns, %d cuts; want 1, 5.05 ms, 0", st.RunOnTasks, st.RunOnNS, st.DeadlineCuts)
	}
	cfg.ExitDeadlines = false
	res, ex, _ = replayExits(t, build(), cfg)
	if ex[100] != t0+5*ms || ex[101] != t0+6*ms-50000 || res.Stats.RunOnTasks != 0 {
		t.Errorf("fixed work: spinner exits at %d ns, parent at %d ns, run-on %d; want 5 and 5.95 ms, none", ex[100]-t0, ex[101]-t0, res.Stats.RunOnTasks)
	}
}

// A timer wakeup preempting the busy CPU it fired on does not wait for a
// vCPU stall. In v6.1 the timer interrupt runs try_to_wake_up on that CPU
// (ttwu_queue_cond is false for the current CPU: the task is activated
// directly) and resched_curr on the current CPU only sets
// TIF_NEED_RESCHED, with no IPI; a vCPU taking an interrupt is running.
// One CPU: a 20 ms hog runs from t0; W, asleep on CPU 0, is woken by a
// timer at t0+5 ms; CPU 0's stall process has a stall from t0+4 ms to
// t0+9 ms. By hand: W is placed at max(0, min_vruntime − 3 ms) = 2 ms
// (half of the one-CPU 6 ms latency behind the hog's 5 ms), 3 ms behind
// the hog, more than the 1 ms wakeup_gran: it preempts, after the 100 µs
// resched delay (the only one in the pool), at t0+5.1 ms: latency 100 µs.
// Taking the remote path it waited for the stall's end (4 ms).
func TestIRQWakeupNoStallOnOwnCPU(t *testing.T) {
	got := timerWakeeOnHog(t, &StallModel{TickNS: 4 * ms, Fraction: 0.5, FractionByBusy: []float64{0.5, 0.5}, StallsNS: []int64{5 * ms}, MeanStallNS: 5 * ms})
	if want := int64(100000); got != want {
		t.Errorf("W switched in %d ns after its timer wakeup, want %d (no stall)", got, want)
	}
}

// timerWakeeOnHog replays, on one CPU, a hog running from t0 and W woken
// by its timer at t0+5 ms, with a resched delay of 100 µs, the given
// stall model and the CPU's stall process stalled over [t0+4, t0+9] ms.
// It returns how long after its wakeup W switched in.
func timerWakeeOnHog(t *testing.T, stalls *StallModel, set ...func(*Config)) int64 {
	t.Helper()
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("hog", 120, 0, true, CauseStart, 20*ms)
	wt := b.task("w", 120, 0, false, CauseArrival, ms)
	b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 5*ms
	w := b.done(t)
	w.PreemptWakeNS = []int64{100000}
	w.Stalls = stalls
	cfg := testConfig()
	cfg.IdleWake = true
	for _, f := range set {
		f(&cfg)
	}
	s, ch := newSim(t, w, cfg)
	s.stall = []stallProc{{start: t0 + 4*ms, end: t0 + 9*ms}}
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	r := ch.firstRunAfter(int64(w.Tasks[wt].TID), 0)
	if r == nil {
		t.Fatal("W never ran")
	}
	return r.start - (t0 + 5*ms)
}

// An interrupt wakeup preempting on its own CPU can meet a vCPU stall
// before the switch: with IRQWakeStall = 1 (every time) and every stall
// 2 ms, W, woken by its timer at 5 ms onto the hog's CPU, switches in
// 100 µs (the resched delay) + 2 ms after its wakeup, at 7.1 ms. The stall
// process (stalled over [4, 9] ms) is not consulted for it: its stall in
// progress would end at 9 ms (the 8 ms tick waits for it). Without the
// noise term: 100 µs (TestIRQWakeupNoStallOnOwnCPU).
func TestIRQWakeupStallBeforeSwitch(t *testing.T) {
	got := timerWakeeOnHog(t, &StallModel{TickNS: 4 * ms, Fraction: 0.5, FractionByBusy: []float64{0.5, 0.5}, StallsNS: []int64{2 * ms}, MeanStallNS: 2 * ms, IRQWakeStall: 1})
	if want := int64(100000 + 2*ms); got != want {
		t.Errorf("W switched in %d ns after its timer wakeup, want %d (resched delay + stall)", got, want)
	}
}

// The stall an interrupt wakeup meets is one of those the trace's own
// interrupt wakeups waited through when it measured any
// (IRQWakeStallsNS, here 1.5 ms), else, or with irq_stall=all, one of
// every stall it measured (StallsNS, 2 ms): W switches in 100 µs + 1.5 ms,
// or 100 µs + 2 ms, after its timer wakeup (both before the hog's 8 ms
// tick).
func TestIRQWakeupStallOwnPool(t *testing.T) {
	m := &StallModel{TickNS: 4 * ms, Fraction: 0.5, FractionByBusy: []float64{0.5, 0.5}, StallsNS: []int64{2 * ms}, MeanStallNS: 2 * ms, IRQWakeStall: 1, IRQWakeStallsNS: []int64{1500000}}
	if got, want := timerWakeeOnHog(t, m), int64(100000+1500000); got != want {
		t.Errorf("W switched in %d ns after its timer wakeup, want %d (resched delay + its own kind of stall)", got, want)
	}
	all := func(c *Config) { c.IRQStallAll = true }
	if got, want := timerWakeeOnHog(t, m, all), int64(100000+2*ms); got != want {
		t.Errorf("irq_stall=all: W switched in %d ns after its timer wakeup, want %d (resched delay + a measured stall)", got, want)
	}
}

// A waker whose wakeup asked for its own preemption switches at its next
// system call at the latest, by hand. One CPU; W runs from t0 (3 ms, edges
// at 2.1 and 2.2 ms of demand waking R's activations 0 and 1, 50 µs each);
// R, asleep from the start at vruntime 0, is 2.1 ms behind W at the first
// wakeup, more than the 1 ms wakeup_gran: each wakeup preempts W. The
// trace's resched delay is 150 µs, longer than W's 100 µs to its next
// wakeup.
//   - The first wakeup sets TIF_NEED_RESCHED; W reaches its second
//     wakeup, a new write(), at t0+2.2 ms, so the return from the first
//     has switched: W is preempted then, R runs 2.2–2.25 ms and blocks, W
//     resumes and its second wakeup fires at once; both wake R.
//   - When the trace shows W ran on with TIF_NEED_RESCHED set for 150 µs
//     after its first wakeup (NoPreemptNS, one system call waking twice),
//     the second wakeup comes inside that stretch: it finds R not yet run
//     (pending), and R first runs at the delayed switch, t0+2.25 ms.
func TestOwnPreemptionAtNextSyscall(t *testing.T) {
	for _, c := range []struct {
		noPreempt, firstRun int64
		pending             int64
	}{{0, t0 + 2200000, 0}, {150000, t0 + 2250000, 1}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		w := b.task("writer", 120, 0, true, CauseStart, 3*ms)
		r := b.task("reader", 120, 0, false, CauseWake, 50000, 50000)
		b.edge(w, 0, 2100000, r, 0)
		b.edge(w, 0, 2200000, r, 1)
		b.w.Edges[0].NoPreemptNS = c.noPreempt
		wl := b.done(t)
		wl.PreemptWakeLocalNS = []int64{150000}
		cfg := testConfig()
		cfg.IdleWake = true
		res, ch := replayChecked(t, wl, cfg)
		run := ch.firstRunAfter(int64(wl.Tasks[r].TID), 0)
		if run == nil || run.start != c.firstRun {
			t.Errorf("NoPreemptNS %d: reader first ran %+v, want at %d", c.noPreempt, run, c.firstRun)
		}
		if res.Stats.EdgesPending != c.pending {
			t.Errorf("NoPreemptNS %d: %d wakeups found the reader not yet blocked, want %d", c.noPreempt, res.Stats.EdgesPending, c.pending)
		}
		// The pending one finds R queued behind W on their one CPU.
		if by := res.Stats.EdgesPendingBy; c.pending == 0 && by != nil || c.pending == 1 && (by == nil || *by != PendingEdges{QueuedHere: 1}) {
			t.Errorf("NoPreemptNS %d: pending by where %+v", c.noPreempt, by)
		}
	}
}

// A real-time wakee's switch waits the trace's own real-time preemption
// delay, by hand: one CPU, a CFS hog from t0, an RT task woken by its
// timer at t0+1 ms. With 20 measured delays of 30 µs it switches in at
// t0+1.03 ms; with fewer than minSamples (5) the pool says nothing and it
// switches in at once.
func TestRTWakeupPreemptDelay(t *testing.T) {
	for _, c := range []struct {
		samples int
		want    int64
	}{{20, t0 + ms + 30000}, {5, t0 + ms}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("hog", 120, 0, true, CauseStart, 5*ms)
		rt := b.task("cyclic", 49, 0, false, CauseArrival, 50000)
		b.w.Tasks[rt].Activations[0].ReleaseNS = t0 + ms
		w := b.done(t)
		for range c.samples {
			w.PreemptWakeRTNS = append(w.PreemptWakeRTNS, 30000)
		}
		cfg := testConfig()
		cfg.IdleWake = true
		_, ch := replayChecked(t, w, cfg)
		if r := ch.firstRunAfter(int64(w.Tasks[rt].TID), 0); r == nil || r.start != c.want {
			t.Errorf("%d samples: RT task first ran %+v, want at %d", c.samples, r, c.want)
		}
	}
}

// A remote resched-delay pool too small to sample (fewer than
// minSamples) gives way to every CFS wakeup preemption of the trace.
// One CPU, a hog from t0, W woken by its timer at t0+5 ms (an interrupt:
// the remote pool), far behind the hog: it preempts. The local pool holds
// 20 delays of 30 µs. With no remote delay at all the switch used to be
// immediate, and with one of 3 ms always 3 ms late; now W switches in
// 30 µs after its wakeup with no remote delay, and on at least 8 of 10
// seeds with the one 3 ms delay (20 of the 21 draws are 30 µs).
func TestTinyRemotePreemptPool(t *testing.T) {
	for _, c := range []struct {
		remote []int64
		want30 int // seeds (of 10) switching in 30 µs after the wakeup
	}{{nil, 10}, {[]int64{3 * ms}, 8}} {
		n := 0
		for seed := range 10 {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			b.task("hog", 120, 0, true, CauseStart, 20*ms)
			wt := b.task("w", 120, 0, false, CauseArrival, ms)
			b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 5*ms
			w := b.done(t)
			for range 20 {
				w.PreemptWakeLocalNS = append(w.PreemptWakeLocalNS, 30000)
			}
			w.PreemptWakeNS = c.remote
			cfg := testConfig()
			cfg.IdleWake = true
			cfg.Seed = uint64(seed)
			_, ch := replayChecked(t, w, cfg)
			if r := ch.firstRunAfter(int64(w.Tasks[wt].TID), 0); r != nil && r.start == t0+5*ms+30000 {
				n++
			}
		}
		if n < c.want30 {
			t.Errorf("remote pool %v: %d of 10 seeds switched W in 30 µs after its wakeup, want at least %d", c.remote, n, c.want30)
		}
	}
}

// A task left waiting for a wakeup that a deadline-cut task would have
// sent is cut too at the end of the replay, by hand (the schbench shape: a
// worker stopped at its recorded exit, the message thread's own exit not
// in the trace). One CPU: W (worker, exits at 5 ms) runs 1 ms bursts
// woken by M (message thread, no recorded exit); each W burst ends by
// waking M's next activation; M runs 0.1 ms and wakes W. W's demand is 3
// bursts of 4 ms: the second is cut at 5 ms, so M's activation 2 (woken at
// the end of W's second burst) never comes: M is stranded with 0.1 ms of
// its demand cut, and the edge of that activation (to W's activation 2)
// is cut, not missed.
func TestStrandedByDeadlineCut(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	m := b.task("msg", 120, 0, true, CauseStart, ms/10, ms/10, ms/10)
	w := b.task("worker", 120, 0, false, CauseWake, 4*ms, 4*ms, 4*ms)
	b.w.Tasks[w].ExitNS = t0 + 5*ms
	b.w.Tasks[w].Activations[2].End = EndExit
	for i := int32(0); i < 3; i++ {
		b.edge(m, i, ms/10, w, i)
		if i < 2 {
			b.edge(w, i, 4*ms, m, i+1)
		}
	}
	wl := b.done(t)
	cfg := testConfig()
	cfg.ExitDeadlines = true
	res, err := Replay(wl, cfg, checkerFor(t, cfg, wl))
	if err != nil {
		t.Fatal(err) // before strandCut: "edge 4 (wake ...) fired 0 times"
	}
	st := res.Stats
	if st.DeadlineCuts != 1 || st.StrandedCuts != 1 {
		t.Errorf("deadline cuts %d, stranded %d; want 1 and 1", st.DeadlineCuts, st.StrandedCuts)
	}
	// W: 0.1–4.1 ms burst 0, then burst 1 from 4.2 ms cut at 5 ms (3.2 ms
	// of it and all 4 ms of burst 2 cut); M: its activation 2 (0.1 ms).
	if want := int64(3200000 + 4*ms + ms/10); st.DeadlineCutNS != want {
		t.Errorf("cut %d ns, want %d", st.DeadlineCutNS, want)
	}
}

// A wakeup starts the wakee's next activation that waits for one,
// whoever sends it, by hand. Three CPUs, each task on its own: W1 runs 6
// ms and wakes R at 5 ms (the trace paired it with R's activation 0); W2
// runs 2 ms and wakes R at 1 ms (paired with activation 1: in the trace
// W2 ran later). R's activations are 1 ms each.
//   - Default (any waker): W2's wakeup at 1 ms finds R asleep and starts
//     activation 0, run 1–2 ms; W1's at 5 ms starts activation 1, run 5–6
//     ms: two wakeups, none pending.
//   - PairedWakeups: W2's wakeup at 1 ms is for activation 1 while R has
//     not had activation 0: it is pending; W1's at 5 ms starts activation
//     0, and R runs on into 1 without sleeping: one run, 5–7 ms.
func TestWakeupStartsNextActivation(t *testing.T) {
	for _, c := range []struct {
		paired  bool
		runs    []run
		pending int64
	}{
		{false, []run{{start: t0 + ms, end: t0 + 2*ms}, {start: t0 + 5*ms, end: t0 + 6*ms}}, 0},
		{true, []run{{start: t0 + 5*ms, end: t0 + 7*ms}}, 1},
	} {
		b := newBuilder(t, "sockets=1,cores=3,threads=1")
		w1 := b.task("w1", 120, 0, true, CauseStart, 6*ms)
		w2 := b.task("w2", 120, 1, true, CauseStart, 2*ms)
		r := b.task("r", 120, 2, false, CauseWake, ms, ms)
		b.edge(w1, 0, 5*ms, r, 0)
		b.edge(w2, 0, ms, r, 1)
		w := b.done(t)
		cfg := testConfig()
		cfg.PairedWakeups = c.paired
		res, ch := replayChecked(t, w, cfg)
		var got []run
		for _, x := range ch.runs {
			if x.tid == int64(w.Tasks[r].TID) {
				got = append(got, run{start: x.start, end: x.end})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.runs) || res.Stats.EdgesPending != c.pending {
			t.Errorf("paired %v: R ran %v, pending %d; want %v, %d", c.paired, got, res.Stats.EdgesPending, c.runs, c.pending)
		}
	}
}

// A real-time wakee's switch waits for the CFS task's preemption point
// measured from its true progress, though the RT path charges nothing
// first. By hand: one CPU, a CFS hog from t0 (10 ms) whose wakeup of a
// sleeper at 1 ms ran on with TIF_NEED_RESCHED for 2 ms (NoPreemptNS:
// no preemption point before progress 3 ms); an RT task woken by its
// timer at t0+2.5 ms, with 20 measured delays of 100 µs. The switch is
// due at 2.6 ms, inside the stretch, so it comes at its end, t0+3 ms.
// Measuring the hog's progress from its last charge (1 ms, the edge) as
// if made now put it at 1.1 ms and the switch at t0+4.4 ms.
func TestRTPreemptionPointFromTrueProgress(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	hog := b.task("hog", 120, 0, true, CauseStart, 10*ms)
	sl := b.task("sleeper", 120, 0, false, CauseWake, 50000)
	b.edge(hog, 0, ms, sl, 0)
	b.w.Edges[0].NoPreemptNS = 2 * ms
	rt := b.task("cyclic", 49, 0, false, CauseArrival, 50000)
	b.w.Tasks[rt].Activations[0].ReleaseNS = t0 + 2*ms + ms/2
	w := b.done(t)
	for range 20 {
		w.PreemptWakeRTNS = append(w.PreemptWakeRTNS, 100000)
	}
	cfg := testConfig()
	cfg.IdleWake = true
	_, ch := replayChecked(t, w, cfg)
	if r := ch.firstRunAfter(int64(w.Tasks[rt].TID), 0); r == nil || r.start != t0+3*ms {
		t.Errorf("RT task first ran %+v, want at %d", r, t0+3*ms)
	}
}

// add_nr_running sets the root domain's overload flag when a queue goes
// to two tasks of any class (enqueue_top_rt_rq calls it for RT). By hand:
// a CFS task running alone on CPU 0, an RT task queued there makes two
// (overload); the same RT task queued on idle CPU 1 makes one (none).
// The replay counted only CFS enqueues, so an RT wakeup beside a CFS task
// left newidle balancing gated off (FIDELITY.md round 24).
func TestRTEnqueueSetsOverload(t *testing.T) {
	for _, c := range []struct {
		cpu  int
		want bool
	}{{0, true}, {1, false}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.task("a", 120, 0, false, CauseArrival, ms)
		b.task("fifo", 49, int32(c.cpu), false, CauseArrival, ms)
		s, _ := newSim(t, b.done(t), testConfig())
		s.now = t0
		a, rt := s.tasks[0], s.tasks[1]
		s.startActivation(a, 0)
		s.startActivation(rt, 0)
		s.enqueue(s.cpus[0], a, enqWakeup)
		s.switchTo(s.cpus[0], a, "")
		s.rdOverload = false
		s.enqueue(s.cpus[c.cpu], rt, enqWakeup)
		if s.rdOverload != c.want {
			t.Errorf("RT task queued on CPU %d: rd overload %v, want %v", c.cpu, s.rdOverload, c.want)
		}
	}
}

// A waker's own wakeup preemption comes at its return to user space,
// before the call that blocks. One CPU, v6.1 (wakeup granularity 1 ms,
// sleeper credit 3 ms), the trace's local preemptions took 0.3 ms. X runs
// 3 ms and wakes W (0.5 ms) at 2.9 ms; W, at vruntime max(0, 2.9 − 3 ms)
// = 0, is 2.9 ms behind: preempt, due at 3.2 ms. By hand: X is done at
// 3.0 ms with the reschedule still pending, so its return to user space
// switches it out runnable there (it would block in its next call); W
// runs 3.0-3.5 and at 3.4 ms replies to X (X's activation woke it).
//   - By default the reply is held until X blocks (isReply): X, run at
//     3.5 ms, blocks at once and the reply wakes it: two wakeups (W's
//     waited 0.1 ms, X's none), one involuntary switch (X's at 3.0 ms);
//     X runs 0-3.0, 3.5-3.5 and 3.5-4.5.
//   - With ReplyAwaits the reply, reaching X runnable on W's CPU, is not
//     held for a block X would not make (replyFindsRunnable): X goes on
//     into its next activation (1 ms) when it runs at 3.5 ms. One wakeup.
//
// Before, X blocked at 3.0 ms (its drawn delay ran past its demand).
func TestPreemptedBeforeBlock(t *testing.T) {
	for _, c := range []struct {
		name      string
		awaits    bool
		runs      []string // task@start-end in 0.1 ms
		wakeups   int64
		held      int64
		continued int64
	}{
		{"default", false, []string{"X@0-30", "W@30-35", "X@35-35", "X@35-45"}, 2, 1, 0},
		{"reply_awaits", true, []string{"X@0-30", "W@30-35", "X@35-45"}, 1, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			x := b.task("x", 120, 0, true, CauseStart, 3*ms, ms)
			w := b.task("w", 120, 0, false, CauseWake, ms/2)
			b.edge(x, 0, 29*ms/10, w, 0)
			b.edge(w, 0, 4*ms/10, x, 1)
			b.w.PreemptWakeLocalNS = []int64{3 * ms / 10}
			wl := b.done(t)
			cfg := testConfig()
			cfg.IdleWake = true
			cfg.ReplyAwaits = c.awaits
			res, ch := replayChecked(t, wl, cfg)
			got := ch.namedRuns(map[int64]string{int64(wl.Tasks[x].TID): "X", int64(wl.Tasks[w].TID): "W"})
			if fmt.Sprint(got) != fmt.Sprint(c.runs) {
				t.Errorf("runs %v, want %v", got, c.runs)
			}
			m := res.Metrics
			if m.WakeupCount != c.wakeups || m.WakeupMaxNS != ms/10 || m.InvoluntarySwitches != 1 {
				t.Errorf("%d wakeups (max %d ns), %d involuntary switches; want %d (100000 ns), 1", m.WakeupCount, m.WakeupMaxNS, m.InvoluntarySwitches, c.wakeups)
			}
			if res.Stats.RepliesHeld != c.held || res.Stats.ContinuedWithoutSleep != c.continued {
				t.Errorf("replies held %d, continued %d; want %d, %d", res.Stats.RepliesHeld, res.Stats.ContinuedWithoutSleep, c.held, c.continued)
			}
		})
	}
}

// The replay's ticks fall on the traced kernel's jiffy grid
// (Workload.TickPhaseNS). Two equal CFS hogs on one CPU at HZ 250 (4 ms):
// the v6.1 slice is sched_latency 6 ms / 2 = 3 ms, and check_preempt_tick
// switches at the first tick after the runner has had more than that. On
// the grid of phase 0 (ticks at t0 + 4k ms) each runs 4 ms: a 0–4, b 4–8
// (their vruntimes tie at 4 ms, and the tie goes to the queued a), a 8–12.
// With the phase at 1 ms the ticks are at t0 + 1, 5, 9, 13 ms: the tick at
// 1 ms finds a 1 ms in (no switch), so a runs 0–5; b's tick at 9 ms
// reschedules it after 4 ms but b (vruntime 4 ms) is still left of a
// (5 ms), so b runs on to the tick at 13 ms (vruntime 8 ms), then a 13–17.
func TestTickPhase(t *testing.T) {
	for _, c := range []struct {
		phase int64
		want  []string
	}{
		{0, []string{"a@0-40", "b@40-80", "a@80-120"}},
		{ms, []string{"a@0-50", "b@50-130", "a@130-170"}},
	} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 20*ms)
		b.task("b", 120, 0, false, CauseStart, 20*ms)
		b.w.TickPhaseNS = c.phase
		w := b.done(t)
		cfg := testConfig()
		cfg.HZ = 250
		_, ch := replayChecked(t, w, cfg)
		got := ch.namedRuns(map[int64]string{int64(w.Tasks[0].TID): "a", int64(w.Tasks[1].TID): "b"})
		if len(got) < len(c.want) || fmt.Sprint(got[:len(c.want)]) != fmt.Sprint(c.want) {
			t.Errorf("phase %d ns: runs %v, want them to start %v", c.phase, got, c.want)
		}
	}
}

// cfs_tasks, which detach_tasks scans from its tail, is in the order of
// each task's last enqueue or pick (account_entity_enqueue's list_add,
// pick_next_task_fair's MRU move), and detach_tasks moves a task it passes
// over to the head. By hand on 2 CPUs: a, b, c, d, e enqueued on CPU 0 in
// that order and a picked leave, tail first, b c d e a; c sleeping and
// woken again moves to the head: b d e a c. A balance of CPU 1 for one
// task (migrate_task) with b cache-hot (it ran 100 µs ago) passes over b,
// which goes to the head, and takes d: CPU 0's list is then e a c b.
// Counting picks only (the model before round 38), c would have gone.
func TestCFSTasksOrder(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		b.task(n, 120, 0, n == "a", CauseStart, 10*ms)
	}
	s, _ := newSim(t, b.done(t), testConfig())
	s.now = t0
	r := s.cpus[0]
	order := func() string {
		var o []string
		for _, p := range s.cfsTasksTailFirst(nil, r) {
			o = append(o, p.w.Comm)
		}
		return fmt.Sprint(o)
	}
	for _, p := range s.tasks {
		p.trig[0] = true
		s.startActivation(p, 0)
		p.avg.lastUpdate = s.now
		s.enqueue(r, p, enqStart)
	}
	s.switchTo(r, s.tasks[0], "")
	if got := order(); got != "[b c d e a]" {
		t.Fatalf("after the enqueues and a's pick: tail first %s, want [b c d e a]", got)
	}
	c := s.tasks[2]
	s.now += ms
	s.dequeue(r, c, true)
	c.state = tsSleeping
	s.now += ms
	s.enqueue(r, c, enqWakeup)
	if got := order(); got != "[b d e a c]" {
		t.Fatalf("after c's wakeup: tail first %s, want [b d e a c]", got)
	}
	s.tasks[1].execStart = s.now - 100000
	e := s.newLBRun(s.cpus[1].sd[0], 1, CPUIdle)
	e.src, e.loopMax = 0, 5
	e.LBEnv = LBEnv{DstCPU: 1, Idle: CPUIdle, Imbalance: 1, MigrationType: MigrateTask, CacheNiceTries: 1}
	if n := s.detachAttach(e, MigrationSourcePeriodic); n != 1 {
		t.Fatalf("detach_tasks moved %d tasks, want 1", n)
	}
	if d := s.tasks[3]; d.cpu != 1 {
		t.Errorf("d is on CPU %d, want 1 (moved)", d.cpu)
	}
	if got := order(); got != "[e a c b]" {
		t.Errorf("after the balance: CPU 0 tail first %s, want [e a c b]", got)
	}
}

// A local wakeup that preempted its waker in the trace carries the
// waker's run-on until that switch (Edge.NoPreemptNS): that is this
// wakeup's own delay, so the replay waits for it alone, and draws from the
// pool of such delays only for a wakeup without one. By hand, one CPU: x
// runs from t0 and at 1.5 ms wakes w (far behind in vruntime: it
// preempts); the pool holds one delay, 0.6 ms. With a recorded run-on of
// 0.2 ms, x is switched out at 1.7 ms (taking the later of the two, as
// before round 41, gave 2.1 ms); without one, at 1.5 + 0.6 = 2.1 ms.
func TestOwnRunOnNotDrawnAgain(t *testing.T) {
	for _, c := range []struct {
		noPreempt int64
		want      string
	}{{200000, "x@0-17"}, {0, "x@0-21"}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		x := b.task("x", 120, 0, true, CauseStart, 3*ms)
		w := b.task("w", 120, 0, false, CauseWake, ms)
		b.edge(x, 0, 3*ms/2, w, 0)
		b.w.Edges[0].NoPreemptNS = c.noPreempt
		b.w.PreemptWakeLocalNS = []int64{600000}
		wl := b.done(t)
		cfg := testConfig()
		cfg.IdleWake = true
		_, ch := replayChecked(t, wl, cfg)
		got := ch.namedRuns(map[int64]string{int64(wl.Tasks[x].TID): "x", int64(wl.Tasks[w].TID): "w"})
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("run-on %d ns: runs %v, want the first %s", c.noPreempt, got, c.want)
		}
	}
}

// attach_tasks enqueues the detached tasks on dst in the reverse of the
// order detach_tasks took them (each is list_add()ed at the head of
// env->tasks, and attach takes from the head): with equal vruntimes that
// is dst's run order. By hand: a (running), b, c, d, e queued on CPU 0 at
// one vruntime, tail first [b c d e a]; an idle CPU 1 pulls three (one
// task each): detach takes b, c, d; attach enqueues d, c, b, so CPU 1's
// queue in run order is [d c b] (the replay had attached in detach order:
// [b c d]). guest-N's hackbench shows it in the trace: CPU 0 pulls pids
// 411 down to 403 from the herd on CPU 1 and runs 403 first.
func TestAttachOrder(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		b.task(n, 120, 0, n == "a", CauseStart, 10*ms)
	}
	s, _ := newSim(t, b.done(t), testConfig())
	s.now = t0
	r := s.cpus[0]
	for _, p := range s.tasks {
		p.trig[0] = true
		s.startActivation(p, 0)
		p.avg.lastUpdate = s.now
		s.enqueue(r, p, enqStart)
	}
	s.switchTo(r, s.tasks[0], "")
	e := s.newLBRun(s.cpus[1].sd[0], 1, CPUIdle)
	e.src, e.loopMax = 0, 5
	e.LBEnv = LBEnv{DstCPU: 1, Idle: CPUIdle, Imbalance: 3, MigrationType: MigrateTask, CacheNiceTries: 1}
	if n := s.detachAttach(e, MigrationSourcePeriodic); n != 3 {
		t.Fatalf("detach_tasks moved %d tasks, want 3", n)
	}
	var o []string
	if c := s.cpus[1].curr; c != nil {
		o = append(o, c.w.Comm)
	}
	for _, p := range s.cpus[1].tree {
		o = append(o, p.w.Comm)
	}
	if got := fmt.Sprint(o); got != "[d c b]" {
		t.Errorf("CPU 1's queue in run order %s, want [d c b]", got)
	}
}

// A wakeup preemption that falls due where the waker's recorded run-on
// ends, at its activation's end, is taken by the waker's block: the trace
// shows the waker running on with TIF_NEED_RESCHED set into the call that
// blocks (Edge.NoPreemptNS up to its demand). By hand, one CPU: x runs
// 3 ms from t0 and at 2 ms wakes w (0.5 ms; placed 3 ms of sleeper credit
// behind x's vruntime, more than the 1 ms wakeup granularity: preempt).
// With the run-on to x's end (1 ms) x leaves at 3 ms in S, not R, and w
// runs 3-3.5 ms; no involuntary switch. The replay before preempted x at
// 3 ms, the reschedule's event coming before the activation's end at the
// same instant, and x ran again at 3.5 ms only to block. With a run-on of
// 0.5 ms the switch is at its end, x preempted at 2.5 ms (R) and back
// at 3 ms for its last 0.5 ms.
func TestReschedAtRunOnEndTakenByBlock(t *testing.T) {
	for _, c := range []struct {
		noPreempt int64
		runs      string
		xOut      string
		invol     int64
	}{{ms, "[x@0-30 w@30-35]", "S", 0}, {ms / 2, "[x@0-25 w@25-30 x@30-35]", "R", 1}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		x := b.task("x", 120, 0, true, CauseStart, 3*ms)
		w := b.task("w", 120, 0, false, CauseWake, ms/2)
		b.edge(x, 0, 2*ms, w, 0)
		b.w.Edges[0].NoPreemptNS = c.noPreempt
		wl := b.done(t)
		sw := switchTimes{}
		ch := newChecker(t)
		res, err := Replay(wl, testConfig(), Tee{ch, &sw})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(ch.namedRuns(map[int64]string{int64(wl.Tasks[x].TID): "x", int64(wl.Tasks[w].TID): "w"}))
		xOut := sw.firstOut(wl.Tasks[x].TID)
		if got != c.runs || xOut != c.xOut || res.Metrics.InvoluntarySwitches != c.invol {
			t.Errorf("run-on %d ns: runs %s, x first left %q, %d involuntary switches; want %s, %q, %d", c.noPreempt, got, xOut, res.Metrics.InvoluntarySwitches, c.runs, c.xOut, c.invol)
		}
	}
}

// The tick's reschedule, like a wakeup's, takes effect at the running
// task's next preemption point: inside a stretch the trace shows it ran
// on with TIF_NEED_RESCHED set (Edge.NoPreemptNS: the rest of one system
// call) that is the stretch's end. By hand, one busy CPU of two: x and y
// (pinned there) queued from t0, x running (slice 6 ms each of the 12 ms
// latency); x wakes z (pinned to the idle CPU 1: no wakeup preemption on
// CPU 0) at 7.5 ms of its work with a recorded run-on of 2 ms. The tick
// at 8 ms finds x's slice used up (the one at 4 ms did not), and x
// switches to y at 9.5 ms, the stretch's end; without the run-on, at the
// tick (the replay had switched at the tick either way, cutting
// hackbench's herd wakeup loop in two).
func TestTickReschedWaitsForPreemptionPoint(t *testing.T) {
	for _, c := range []struct {
		noPreempt int64
		wantEnd   int64
	}{{2 * ms, t0 + 95*ms/10}, {0, t0 + 8*ms}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		x := b.task("x", 120, 0, true, CauseStart, 10*ms)
		b.task("kworker/0:1", 120, 0, false, CauseStart, 10*ms)
		z := b.task("kworker/1:1", 120, 1, false, CauseWake, ms/10)
		b.edge(x, 0, 15*ms/2, z, 0)
		b.w.Edges[0].NoPreemptNS = c.noPreempt
		wl := b.done(t)
		_, ch := replayChecked(t, wl, testConfig())
		if run := ch.firstRunAfter(int64(wl.Tasks[x].TID), t0-1); run == nil || run.start != t0 || run.end != c.wantEnd {
			t.Errorf("run-on %d ns: x's first run %+v, want from %d to %d", c.noPreempt, run, t0, c.wantEnd)
		}
	}
}

// A task that wakes its own CPU's stopper to be moved (EdgeMove:
// sched_setaffinity, perf record hopping through the CPUs) is preempted
// by it at once and, queued, moved to the edge's Target when the
// stopper's activation ends. By hand, two idle CPUs but for p on CPU 0
// (3 ms of work, the wakeup at 1 ms); migration/0 runs 0.1 ms: p runs
// 0-1 ms on CPU 0, the stopper 1-1.1 ms there, then p 1.1-3.1 ms on CPU
// 1, one affinity migration. As a plain wakeup (the replay before), p
// waits out the stopper and goes on on CPU 0.
func TestStopperMove(t *testing.T) {
	for _, c := range []struct {
		kind     EdgeKind
		runs     string
		cpu      int64
		migrated int64
	}{{EdgeMove, "[p@0-10 m@10-11 p@11-31]", 1, 1}, {EdgeWake, "[p@0-10 m@10-11 p@11-31]", 0, 0}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		p := b.task("perf", 120, 0, true, CauseStart, 3*ms)
		m := b.task("migration/0", 0, 0, false, CauseWake, ms/10)
		b.edge(p, 0, ms, m, 0)
		b.w.Edges[0].Kind, b.w.Edges[0].Target = c.kind, 1
		wl := b.done(t)
		res, ch := replayChecked(t, wl, testConfig())
		got := fmt.Sprint(ch.namedRuns(map[int64]string{int64(wl.Tasks[p].TID): "p", int64(wl.Tasks[m].TID): "m"}))
		if got != c.runs {
			t.Errorf("%v: runs %s, want %s", c.kind, got, c.runs)
		}
		if r := ch.firstRunAfter(int64(wl.Tasks[p].TID), t0+ms); r == nil || r.cpu != c.cpu {
			t.Errorf("%v: p's run after the stopper %+v, want on CPU %d", c.kind, r, c.cpu)
		}
		if res.Stats.MigrationsAffinity != c.migrated {
			t.Errorf("%v: affinity migrations %d, want %d", c.kind, res.Stats.MigrationsAffinity, c.migrated)
		}
	}
}

// A wakeup gives its task the class its activation ran under
// (Activation.OwnPrio): by hand, one CPU, y a CFS hog from t0 (20 ms),
// x a CFS task (prio 120) whose one activation, an arrival at 1 ms of 10
// ms of work, the trace shows at prio 0 (SCHED_FIFO after
// sched_setscheduler). As a real-time task x takes the CPU at its
// wakeup and runs its 10 ms straight (1-11 ms). Under its task's class
// (the replay before) it is placed at vruntime 0 (its own; the floor,
// min_vruntime 1 ms less half the 6 ms latency, is lower), 1 ms behind
// y: not more than the 1 ms wakeup granularity, so no preemption; the
// 4 ms tick ends y's 3 ms slice and the two alternate a tick each (x at
// 4-8, 12-16 and 20-22 ms).
func TestActivationPrioTakenAtWakeup(t *testing.T) {
	for _, c := range []struct {
		own     bool
		xRuns   string
		changes int64
	}{{true, "[x@10-110]", 1}, {false, "[x@40-80 x@120-160 x@200-220]", 0}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		y := b.task("y", 120, 0, true, CauseStart, 20*ms)
		x := b.task("x", 120, 0, false, CauseArrival, 10*ms)
		b.w.Tasks[x].Activations[0].ReleaseNS = t0 + ms
		b.w.Tasks[x].Activations[0].Prio, b.w.Tasks[x].Activations[0].OwnPrio = 0, c.own
		wl := b.done(t)
		res, ch := replayChecked(t, wl, testConfig())
		var xr []string
		for _, r := range ch.namedRuns(map[int64]string{int64(wl.Tasks[x].TID): "x", int64(wl.Tasks[y].TID): "y"}) {
			if r[0] == 'x' {
				xr = append(xr, r)
			}
		}
		if got := fmt.Sprint(xr); got != c.xRuns || res.Stats.PrioChanges != c.changes {
			t.Errorf("own prio %v: x's runs %s, prio changes %d; want %s, %d", c.own, got, res.Stats.PrioChanges, c.xRuns, c.changes)
		}
	}
}

// wake_up_new_task sets the child's recent_used_cpu to the CPU it was
// forked on: the parent's in the replay, here CPU 3, whatever CPU the
// trace's child started on (0).
func TestForkRecentUsedCPU(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=4,threads=1")
	p := b.task("p", 120, 3, true, CauseStart, 10*ms)
	c := b.task("c", 120, 0, false, CauseFork, ms)
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: p, WakerAct: 0, OffsetNS: ms, Wakee: c, WakeeAct: 0})
	s, _ := newSim(t, b.done(t), testConfig())
	r3, parent, child := s.cpus[3], s.tasks[p], s.tasks[c]
	r3.curr, r3.nrCFS, r3.loadWeight = parent, 1, parent.weight
	parent.state = tsRunning
	s.fork(r3, parent, child)
	if child.recentUsedCPU != 3 {
		t.Errorf("child's recent_used_cpu %d, want 3", child.recentUsedCPU)
	}
}

// A task the trace's end cut short runs on past its recorded demand
// (Config.TraceEndRunOn), worked by hand on three CPUs over a 10 ms
// trace: a hog on CPU 0 (6 ms of demand, running at the end), a task on
// CPU 2 that ran 0.5 ms and stayed "running" to the end (5 % of the
// trace: its switch-out missed, not run on) and, in the second case, the
// recorder perf, released on CPU 1 at 8 ms for 1 ms, with the command
// line that makes it the recording window's. Without a window the hog
// runs on to the trace's end (4 ms past its demand; CPU 0 busy to 10
// ms); with one it runs on until the window closes at 9 ms (3 ms), and
// perf does not run on. Off, the hog ends at 6 ms.
func TestTraceEndRunOn(t *testing.T) {
	build := func(withPerf bool) *Workload {
		b := newBuilder(t, "sockets=1,cores=3,threads=1")
		h := b.task("hog", 120, 0, true, CauseStart, 6*ms)
		s := b.task("stale", 120, 2, true, CauseStart, ms/2)
		b.w.Tasks[h].Activations[0].End = EndTraceEnd
		b.w.Tasks[s].Activations[0].End = EndTraceEnd
		if withPerf {
			p := b.task("perf", 120, 1, false, CauseArrival, ms)
			b.w.Tasks[p].Activations[0].ReleaseNS = t0 + 8*ms
			b.w.Tasks[p].Activations[0].End = EndTraceEnd
			b.w.Cmdline = []string{"perf", "sched", "record", "--", "true"}
		}
		b.w.EndNS = t0 + 10*ms
		return b.done(t)
	}
	for _, c := range []struct {
		name       string
		perf, on   bool
		hogEnd     int64
		runOnTasks int64
		runOnNS    int64
	}{
		{"no window", false, true, 10 * ms, 1, 4 * ms},
		{"window", true, true, 9 * ms, 1, 3 * ms},
		{"off", false, false, 6 * ms, 0, 0},
	} {
		cfg := testConfig()
		cfg.TraceEndRunOn = c.on
		ends := lastSwitchOut{}
		res, err := Replay(build(c.perf), cfg, Tee{newChecker(t), ends})
		if err != nil {
			t.Fatal(err)
		}
		if got := ends[100] - t0; got != c.hogEnd {
			t.Errorf("%s: the hog leaves its CPU at %d ns, want %d", c.name, got, c.hogEnd)
		}
		if got := ends[101] - t0; got != ms/2 {
			t.Errorf("%s: the stale task leaves its CPU at %d ns, want 0.5 ms (not run on)", c.name, got)
		}
		if st := res.Stats; st.TraceEndRunOnTasks != c.runOnTasks || st.TraceEndRunOnNS != c.runOnNS {
			t.Errorf("%s: %d tasks ran on for %d ns; want %d, %d", c.name, st.TraceEndRunOnTasks, st.TraceEndRunOnNS, c.runOnTasks, c.runOnNS)
		}
	}
}

// lastSwitchOut records each task's last switch-out time.
type lastSwitchOut map[int32]int64

func (l lastSwitchOut) Emit(e *timeline.Event) error {
	if e.Kind == timeline.SchedSwitch && e.Int32(timeline.PrevPID) != 0 {
		l[e.Int32(timeline.PrevPID)] = e.Time
	}
	return nil
}

// The nohz kick is an IPI to an idle vCPU: where the trace measured host
// contention, the kicked CPU balances only after an idle exit drawn as a
// remote wakeup's (plus the wait for a host core, none here: 8 host cores
// for 2 vCPUs). By hand: CPU 0 runs a with b queued, CPU 1 is nohz idle;
// CPU 0's tick at 100 ms kicks CPU 1, whose kick lands at 100 ms + 700
// µs (the one remote idle-exit delay the workload has) with nohz_kick on,
// at 100 ms + the 2 µs IPI latency with it off or with no host contention
// measured.
func TestNohzKickWaitsForIdleExit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		on        bool
		hostCores float64
		want      int64
	}{
		{"idle exit", true, 8, 100*ms + 700*1000},
		{"ipi", false, 8, 100*ms + 2*1000},
		{"no host contention measured", true, 0, 100*ms + 2*1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=2,threads=1")
			x := b.task("a", 120, 0, true, CauseStart, 10*ms)
			y := b.task("b", 120, 0, true, CauseStart, 10*ms)
			w := b.done(t)
			w.Stalls = &StallModel{HostCores: tc.hostCores, StallsNS: []int64{ms}}
			w.IdleWakeLocalNS = []int64{300 * 1000}
			w.IdleWakeRemoteNS = []int64{700 * 1000}
			w.IdleWakeNS = []int64{500 * 1000}
			cfg := testConfig()
			cfg.IdleWake, cfg.NohzKickIdleExit = true, tc.on
			s, _ := newSim(t, w, cfg)
			s.now = 100 * ms
			r0 := s.cpus[0]
			r0.curr, r0.nrCFS = s.tasks[x], 2
			r0.tree = append(r0.tree, s.tasks[y])
			s.nohz.idle[1], s.nohz.nrCPUs = true, 1
			s.nohz.nextBalance = s.jiffies()
			s.q = s.q[:0]
			s.nohzBalancerKick(r0)
			var kicks []int64
			for _, e := range s.q {
				if e.kind == evNohzKick && e.cpu == 1 {
					kicks = append(kicks, e.t)
				}
			}
			if len(kicks) != 1 || kicks[0] != tc.want {
				t.Errorf("kick lands at %v, want [%d]", kicks, tc.want)
			}
		})
	}
}

// The tick's reschedule switches after the tick's softirq: the periodic
// balance raised by trigger_load_balance runs at irq_exit, before the
// interrupt returns to the preemption point, so the pick sees what it
// pulled (and the pulled task's wakeup check finds TIF_NEED_RESCHED set
// and does nothing). By hand, v6.1 on two cores (one MC domain): CPU 1
// runs a (vruntime M+2 ms, its slice long used up) with b queued at M+1
// ms; CPU 0 runs c with d, e, f, g queued, none run for 10 ms (not cache
// hot). Every task carries a full load, runnable and util average (1024),
// so both groups are overloaded (runnable 2048 and 5120 against 1,198 for
// a capacity of 1024 at imbalance_pct 117) and the migrate_load imbalance
// is min(5120 − 3584, 3584 − 2048) = 1536: one task of load 1024 moves.
// The one detached (CPU 0's cfs_tasks tail, the first queued: d at
// M0+0.1 ms) lands at M+0.1 ms, left of b, and is picked at the switch;
// with the switch before the balance the pick was b.
func TestTickSwitchAfterItsBalance(t *testing.T) {
	s := idleTickSim(t, "sockets=1,cores=2,threads=1", 1, 1, 1, 0, 0, 0, 0, 0)
	r0, r1 := s.cpus[0], s.cpus[1]
	const m1, m0 = int64(1e9), int64(5e8)
	r1.minVruntime, r0.minVruntime = m1, m0
	vr := []int64{m1 + 2*ms, m1 + ms, m0 + 2*ms, m0 + ms/10, m0 + 2*ms/10, m0 + 3*ms/10, m0 + 4*ms/10}
	for i, p := range s.tasks {
		s.startActivation(p, 0)
		p.vruntime = vr[i]
		p.avg = avg{lastUpdate: s.now, loadAvg: 1024, runnableAvg: 1024, utilAvg: 1024}
		r := s.cpus[p.cpu]
		s.enqueue(r, p, enqWakeup)
		p.execStart = s.now - 10*ms
	}
	for _, r := range []*rq{r0, r1} {
		n := uint64(r.nrRunning())
		r.avg = avg{lastUpdate: s.now, loadAvg: 1024 * n, runnableAvg: 1024 * n, utilAvg: 1024}
	}
	a, b, d := s.tasks[0], s.tasks[1], s.tasks[3]
	s.switchTo(r1, a, "")
	s.switchTo(r0, s.tasks[2], "")
	a.prevSumExec = a.sumExec - 20*ms
	for _, st := range r1.sd {
		st.lastBalance = s.jiffies() - 100
	}
	r1.nextBalance = s.jiffies()
	r1.tickOn = true
	s.tick(r1, false)
	if r1.curr != d || d.cpu != 1 {
		t.Errorf("CPU 1 runs %v after its tick (d on CPU %d), want d, pulled by the tick's balance", r1.curr.w.Comm, d.cpu)
	}
	if b.state != tsQueued || b.cpu != 1 {
		t.Errorf("b: state %d on CPU %d, want queued on CPU 1", b.state, b.cpu)
	}
}
