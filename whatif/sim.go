package whatif

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// ArrivalMode says when an activation started from interrupt, timer or
// idle context is replayed.
type ArrivalMode int

const (
	// ArrivalsRelative (default): the recorded sleep length after the task
	// blocked in the replay (a timer armed when the task slept). The
	// recorder's own are at their recorded times either way (recording.go).
	ArrivalsRelative ArrivalMode = iota
	// ArrivalsAbsolute: at the recorded time (an external event), or at
	// once if the task is still busy then.
	ArrivalsAbsolute
)

// Config are the simulator's knobs. Numeric zero values take the defaults
// documented on each field; DefaultConfig also turns on IdleWake and
// Preemption, the configuration `replay whatif` uses.
type Config struct {
	Policy Policy
	// BalancePhase: a periodic balance the trace shows moving tasks
	// between the two CPUs of a domain falls due at that tick in the
	// replay, on the less loaded of them (Workload.BalancePulls,
	// balancepull.go). On by default: measured, it met more goals
	// (FIDELITY.md round 82); `--set balance_phase=own` turns it off.
	BalancePhase bool
	// IRQStallAll: the stall an interrupt wakeup's preemption meets
	// (irqWakeStallEnd) is drawn from every stall the trace measured, not
	// from those its own interrupt wakeups waited through
	// (StallModel.IRQWakeStallsNS; FIDELITY.md round 97); `--set
	// irq_stall=all`.
	IRQStallAll bool
	// IRQFlip: an interrupt's wakeup counts as a wakee flip
	// (record_wakee) of the task the trace shows it interrupted
	// (Workload.IRQCurrent; none for the idle task), not of whichever
	// task the replay runs where it fires (FIDELITY.md round 83);
	// `--set irq_flip=own` turns it off.
	IRQFlip bool
	// BusyHostWait: where the trace measured host contention
	// (StallModel.HostCores), a wakeup preemption sent to another busy
	// vCPU waits, outside the running task's own host stalls, for a host
	// core at the share those stalls leave to reach the contention's
	// stalled fraction (busyHostEnd): the IPI reaches a vCPU the host has
	// descheduled only when the host runs it again, and until then its
	// task fires no wakeup. On by default: measured, it met more goals
	// (FIDELITY.md round 84); `--set busy_host_wait=off` turns it off.
	BusyHostWait bool
	// StallContention: where the trace measured host contention
	// (StallModel.HostCores), a host stall the trace shows in a task's
	// demand is shortened where the replay runs that task with fewer
	// vCPUs busy than the trace had then, to the share of it the host's
	// contention leaves (weighStalls): the host that descheduled one of
	// eight busy vCPUs would have run one of two. On by default:
	// measured, it met more goals (FIDELITY.md round 85); `--set
	// stall_contention=off` turns it off.
	StallContention bool
	// WakeStall: a wakeup the trace shows queued only after a host stall
	// of its waker inside try_to_wake_up (Edge.EnqueueAfterStall) is
	// queued after that stall in the replay too when it goes to another
	// CPU than the waker's, its sched_waking written before it
	// (wakestall.go). On by default: measured, it met more
	// goals (FIDELITY.md round 86); `--set wake_stall=off` turns it off.
	WakeStall bool
	// NohzKickIdleExit: where the trace measured host contention
	// (StallModel.HostCores), the nohz idle balancer's kick lands after an
	// idle exit drawn as a remote wakeup's (the trace's own, plus the wait
	// for a host core), not after IPILatencyNS: the kick is an IPI to an
	// idle vCPU, which runs only once its host runs it (FIDELITY.md round
	// 78). On by default; `--set nohz_kick=ipi` turns it off.
	NohzKickIdleExit bool
	// Worst keeps the simulated schedule's Worst longest wakeups with
	// their context in the result's metrics (Metrics.Worst; `--validate
	// --worst`). It measures; the replay does not depend on it.
	Worst int
	// Kernel is the release whose domain rules and tunables apply.
	Kernel string
	// EAS: energy-aware scheduling, EASAuto (where the kernel, v5.0 on,
	// and the machine have it), EASOn (a development tree that had it
	// before v5.0) or EASOff (`--set eas=`).
	EAS string
	// HZ is CONFIG_HZ (Debian's 6.1 amd64 kernel: 250).
	HZ int
	// Seed drives the only random choice: the idle-exit delay sampled from
	// the trace's own observed distribution.
	Seed     uint64
	Arrivals ArrivalMode
	// MigrationCostNS is sysctl_sched_migration_cost (500 µs).
	MigrationCostNS int64
	// NrMigrate is sysctl_sched_nr_migrate (32).
	NrMigrate int
	// Preemption: CONFIG_PREEMPTION (PREEMPT_DYNAMIC kernels): a newly idle
	// pass pulls at most one task.
	Preemption bool
	// NIRatio sets where NI_RANDOM's per-domain success ratio starts: 0,
	// at the share of newidle chances the trace's CPUs took
	// (Workload.NewidleChances; the boot value 512 when it has too few)
	// when the traced kernel's policy has NI_RANDOM; -1, at that share
	// whatever the traced kernel's policy (`newidle_ratio=share`: replaying
	// a trace under a policy with NI_RANDOM asserts that its kernel ran
	// it); N > 0, at N-1 (`--set newidle_ratio`: "boot" is 513).
	NIRatio int
	// NewidleCost: cost of one load_balance at a domain, c0 + c1 × span +
	// c2 × moved (ns); feeds max_newidle_lb_cost (§8.6).
	NewidleC0NS, NewidleC1NS, NewidleC2NS int64
	// IdleWake: wakeups onto an idle CPU take a delay sampled from the
	// workload's observed idle-wake delays (idle exit, IPI, vCPU
	// scheduling), wakeup preemptions one from its resched delays, and
	// busy CPUs stall where the trace shows their tasks' host stalls
	// (hoststall.go, noise.go); false = none of these: the machine's
	// noise off.
	IdleWake bool
	// FixedIdleWakeNS, when > 0, replaces the sampled delay.
	FixedIdleWakeNS int64
	// IdleTicks is how many of its own ticks an idle CPU takes before its
	// tick stops and it enters nohz idle: 0 stops it as the CPU goes idle.
	IdleTicks int
	// StopperLatencyNS delays active balance (5 µs); IPILatencyNS delays
	// nohz kicks (2 µs).
	StopperLatencyNS, IPILatencyNS int64
	// ExitDeadlines: a task's work is bounded by its recorded exit time
	// (Task.ExitNS) instead of fixed: a task still alive at that time in
	// the replay exits then, its remaining demand and the edges of its
	// unfinished activations cut (Stats.DeadlineCuts, DeadlineCutNS); the
	// edges of its final activation (the exit's own wakeups: the parent
	// in wait()) fire at the cut. For workloads that stop at a wall-clock
	// timeout (stress-ng --timeout), where a stressor delayed does less
	// work, not the same work later.
	ExitDeadlines bool
	// ExitDeadlineFromNS: with ExitDeadlines, only a task whose recorded
	// exit is at or after this time stops there (ExitDeadlineFrom: when
	// the command's timeout fired); one that exited before ended its own
	// work, fixed however late the replay runs it. 0: every recorded exit.
	ExitDeadlineFromNS int64
	// ReapAnyChild: a parent that waits for any child (wait(), inferred
	// from the trace: reap.go) is woken by whichever of its children exits
	// first, not by the child the trace paired with each of its wakeups.
	// Opt-in: measured, it did not pass the fidelity gate (FIDELITY.md,
	// round 10).
	ReapAnyChild bool
	// ExitPreempt lets a fork child be preempted between its exit
	// notification (forkwait.go's, with fork_wait on) and its exit, as
	// the replay did until session 44. Off, the kernel's way: from
	// exit_notify to do_task_dead there is no preemption point, so the
	// parent it woke waits for the child to exit (fireDue runs the
	// stretch to the exit; a reschedule due at its end is the exit's own
	// switch's, Sim.atRunOnEnd).
	ExitPreempt bool
	// ExitWakeLate wakes a parent waiting for a child's exit (reap.go,
	// forkwait.go) after the child's last switch, as the replay did until
	// session 45. Off, the kernel's order: exit_notify comes before
	// do_task_dead, with the child still on its CPU.
	ExitWakeLate bool
	// StartPELTHeavy starts the PELT averages of a task running or
	// runnable at the trace start at its full weight and half the CPU's
	// capacity ("heavy until proven otherwise", the replay before round
	// 75) instead of at its running and runnable shares of the trace's
	// first startPELTWindowNS (startPELT).
	StartPELTHeavy bool
	// NoForkWait turns off the waits for a child's exit before a fork
	// that the trace hid (forkwait.go; `--set fork_wait=off`).
	NoForkWait bool
	// PairedWakeups: a task's wakeup starts only the activation the trace
	// paired it with (an earlier one still asleep leaves it pending). By
	// default a wakeup starts the wakee's lowest activation still waiting
	// for a task's wakeup, whoever sends it (wakeSlot): try_to_wake_up
	// wakes a sleeper whoever calls it, and a wakee with several wakers
	// (schbench's message thread, a hackbench receiver) is woken by the
	// first of them to run in the replay, not by the one that ran first
	// in the trace (FIDELITY.md round 19).
	PairedWakeups bool
	// ReplyAwaits: a waker whose wakeup hid its wakee's reply in the
	// trace (Edge.Awaits) waits for that reply where the trace shows it
	// preempted, and a reply reaching its requester preempted on the
	// replier's CPU is not held for a block (await.go). Off by default:
	// measured, it did not pass the fidelity gate (FIDELITY.md, round 35).
	ReplyAwaits bool
	// HerdAwaits: a waker whose wakee, preempting it, woke at least three
	// tasks of the waker's command before the waker ran again (a start
	// barrier's broadcast) waits at its preemption point for the first of
	// those wakeups (await.go). On by default since FIDELITY.md round 123.
	HerdAwaits bool
	// HostStallCPU: the trace's host stalls stay on their vCPU's wall
	// clock, whatever task the replay runs there, instead of travelling
	// with the task's demand (hoststall_cpu.go). Off by default.
	HostStallCPU bool
	// TickSoftIRQ: an arrival the tick's softirq woke in the trace
	// (Activation.TickSoftIRQ) fires on the tick grid and that tick's
	// switch waits for it (onTickGrid, holdTick). Off by default:
	// measured, it met fewer goals (FIDELITY.md, round 59).
	TickSoftIRQ bool
	// TimerSlackNS: an hrtimer arrival of a task not in the real-time
	// class (its waking in hard-interrupt context on the CPU it slept on)
	// fires early, in the interrupt of another such arrival on that CPU
	// or at that CPU's tick, when its own time is at most this much
	// later: the timer slack that lets hrtimer_interrupt expire every
	// timer whose soft expiry has passed (timerslack.go). 0: each fires
	// at its own time. DefaultConfig sets DefaultTimerSlackNS
	// (FIDELITY.md round 139).
	TimerSlackNS int64
	// TickSwitch: a tick that ends the running task's slice switches a
	// delay later drawn from the trace's own (Workload.TickSwitchNS: the
	// interrupt's return through its softirqs), not at its instant.
	TickSwitch bool
	// SwitchCharge: the run from a leaving task's last update_curr to its
	// switch-out (a gap drawn from the trace's own: Workload's
	// SwitchCharge pools) is charged to the task switched in, as the
	// kernel's clock reading at the switch's start does (switchcharge.go).
	// On by default, with the machine's noise (IdleWake): measured, it
	// met more goals (FIDELITY.md round 63).
	SwitchCharge bool
	// SwitchChargePoolsOnly: with SwitchCharge, every block's charge is
	// drawn from the pools, the long gaps the trace shows at some
	// activations' ends left out (before FIDELITY.md round 96; longcharge.go).
	SwitchChargePoolsOnly bool
	// TraceEndRunOn: an activation the trace's end cut short (running or
	// runnable when it stopped: EndTraceEnd) runs on once its recorded
	// demand is done, until the replay's recording window closes (or the
	// trace's end time), as the task would have in the kernel: its
	// recorded demand is what the trace saw, a lower bound
	// (runOnToTraceEnd). Without it a busy task the replay runs
	// sooner than the trace did ends early and its CPU idles where the
	// kernel's did not. On by default: no fidelity recording has such a
	// task (seeds 0–99 byte-identical); the format sample
	// perf_sched_pipe.data, with background hogs, does.
	TraceEndRunOn bool
	// IRQCPU: an interrupt's wakeup the trace shows on another CPU than
	// the one its wakee slept on (Activation.IRQCPUPlus1) runs there in
	// the replay too, select_task_rq_fair weighing that CPU against the
	// wakee's; else every interrupt's wakeup runs where the wakee slept.
	IRQCPU bool
	// IRQIPI: such a wakeup, run where its wakee slept (IRQCPU off),
	// still comes by IPI from the CPU the trace shows (irqRaisedCPU). On
	// by default (FIDELITY.md round 104: a vCPU woken so on a contended
	// host waits for it, as the trace's RCU wakeups do).
	IRQIPI bool
	// SkipWakeOverhead: an activation a task continues into without
	// blocking (its wakeup came first) starts past the task's wake
	// overhead, the block and wakeup its recorded demand includes
	// (wakeoverhead.go). On by default since FIDELITY.md round 122: off
	// from round 54, where it met more goals on the recordings it was
	// found on and no more on the repeat and holdout ones, it meets more
	// on the recordings made since (6.12, the same-day pairs, the
	// affinity set, LISA's text: +234 and +195 goals over two seed
	// ranges).
	SkipWakeOverhead bool
	// IdleExitSplit: on a trace without measured host contention, a
	// fork's idle exit is drawn from the trace's fork idle exits
	// (Workload.IdleWakeForkNS) and a task's or interrupt's wakeup's from
	// the rest, each class that has minIdleExitClass samples; off, both
	// from the one pool. Off by default: measured in FIDELITY.md round
	// 152, it brings the idle exits and the start-up forks' placements
	// closer to the kernel's and moves the goals within chance (−86 of
	// 31,565 over seeds 0–29).
	IdleExitSplit bool
	// WakeeFlips is the wakee_flips (record_wakee's count, which
	// wake_wide reads) of every task alive at the trace start: what they
	// did before the recording, and what perf's workload inherited from
	// perf at its fork, is not in the trace. Forked tasks inherit their
	// parent's, as in the kernel; the once-a-second halving applies from
	// a task's first wakeup on. -1 (the default): the count the trace's
	// placements imply (Workload.Flips, wakeeflips.go; FIDELITY.md round
	// 39); else that count for every such task.
	WakeeFlips int64
	// RunQueue selects the per-CPU discipline: "" (the policy's),
	// "cfs" or "eevdf".
	RunQueue string
	// SliceProtection is how long EEVDF protects a task it switched to
	// from wakeup preemption and from update_curr's reschedule (vprot,
	// set_protect_slice): "" or SliceProtectDeadline, SliceProtectBase or
	// SliceProtectNone (eevdf.go). Only for the EEVDF run queue.
	SliceProtection string
	// FullWindow writes the whole replay; by default its output ends
	// where the trace's recording did (recording.go).
	FullWindow bool
	// Topology overrides the workload's.
	Topology *model.Topology
	// MaxEvents aborts a runaway simulation (0: 1<<34).
	MaxEvents int64
	// Params override per-domain tunables after the policy's (--set).
	Params Params
}

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.HZ == 0 {
		c.HZ = 250
	}
	if c.MigrationCostNS == 0 {
		c.MigrationCostNS = 500000
	}
	if c.NrMigrate == 0 {
		c.NrMigrate = 32
	}
	if c.NewidleC0NS == 0 {
		c.NewidleC0NS = 1000
	}
	if c.NewidleC1NS == 0 {
		c.NewidleC1NS = 50
	}
	if c.NewidleC2NS == 0 {
		c.NewidleC2NS = 2000
	}
	if c.StopperLatencyNS == 0 {
		c.StopperLatencyNS = 5000
	}
	if c.IPILatencyNS == 0 {
		c.IPILatencyNS = 2000
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = 1 << 34
	}
	return c
}

// DefaultConfig is the configuration `replay whatif` uses for a policy.
func DefaultConfig(p Policy) Config {
	return Config{Policy: p, IdleWake: true, Preemption: true, SwitchCharge: true, TraceEndRunOn: true, NohzKickIdleExit: true, BusyHostWait: true, StallContention: true, WakeStall: true, BalancePhase: true, IRQFlip: true, IRQIPI: true, SkipWakeOverhead: true, HerdAwaits: true, WakeeFlips: -1, TimerSlackNS: DefaultTimerSlackNS}.withDefaults()
}

// Event kinds of the discrete-event engine (§8.2).
const (
	evProgress = iota // the running task reaches its next milestone
	evArrival         // an interrupt/timer wakeup
	evIdleExit        // an idle CPU that was sent work starts running it
	evActive          // the stopper of an active balance
	evNohzKick        // the nohz idle balancer was kicked
	evResched         // a wakeup preemption takes effect
	evTick            // scheduler tick (ordered after the others at an instant, by CPU)
	evDeadline        // a task's recorded exit time (Config.ExitDeadlines)
)

type event struct {
	t    int64
	key  uint64 // order among events at the same t (see Sim.push)
	cls  uint8  // 0 regular, 1 tick
	kind uint8
	cpu  int32
	a, b int32
	gen  uint32
}

// eventQueue is a binary min-heap of events ordered by (time, class,
// CPU for ticks, insertion sequence): a total order, so the replay is
// deterministic. Everything after the time is packed into one key, and
// the sifts move a hole instead of swapping, because the queue is the
// engine's hottest code (a third of a replay's time before this).
type eventQueue []event

func (a *event) before(b *event) bool {
	return a.t < b.t || a.t == b.t && a.key < b.key
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (q *eventQueue) pop() event {
	h := *q
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].before(&h[l]) {
			m = r
		}
		if !h[m].before(&last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	if n > 0 {
		h[i] = last
	}
	*q = h
	return top
}

// Task states in the replay.
type tstate uint8

const (
	tsNotStarted tstate = iota
	tsSleeping
	tsQueued
	tsRunning
	tsDead
)

// simTask is a task_struct + sched_entity of the replay.
type simTask struct {
	id     int32
	w      *Task
	weight uint64
	rt     bool
	// stop: the CPU's stopper thread (migration/N), which traces show at
	// prio 0 but which runs in the stop class, above RT: the model queues
	// it as RT, but its time is not the RT class's (rq->avg_rt).
	stop   bool
	pinned int32
	// mask: the CPUs a task with an affinity (Task.Allowed) may run on, a
	// bit per CPU; nil: any (or only pinned, a per-CPU kthread's).
	// nrAllowed is its weight (p->nr_cpus_allowed), 0 without one.
	mask      []uint64
	nrAllowed int32

	state    tstate
	act      int32  // current (or last) activation
	trig     []bool // per activation: its wakeup (causal edge or arrival) has fired
	wakeFrom int32  // wakeSlot's scan start
	progress int64  // demand done in the current activation (ns at capacity 1024)
	nextEdge int32  // next edge of the current activation to fire
	cpu      int32  // task_cpu
	ranOn    bool   // has run in the replay (for cache-hot)
	// heldK: a reply to this task's request (isReply) that came before
	// it blocked, for activation heldK (-1 none), from heldWaker; it is
	// delivered when the task blocks.
	heldK     int32
	heldWaker *simTask
	// heldRaced: the held wakeup is an Edge.Raced one, whose sched_waking
	// was written when it fired (the wakee still on its CPU), as the
	// kernel's is.
	heldRaced bool
	// timerK, timerDue, timerCPU: an arrival of this task's scheduled as
	// an hrtimer on timerCPU that may fire early in another timer's
	// interrupt there (timerslack.go; -1 none).
	timerK, timerCPU int32
	timerDue         int64
	// moveTask, moveTo: a stopper woken by an EdgeMove: at the end of
	// this activation it moves task moveTask (-1 none) to CPU moveTo.
	moveTask, moveTo int32
	// prio: the prio it runs under now (Task.Prio, or its activation's:
	// takeActPrio), as the output's sched_switch and sched_waking show it.
	prio int32
	// delayed: blocked but still queued on its CPU (EEVDF delayed
	// dequeue): in the tree, in load and V, until picked or woken.
	delayed bool

	vruntime int64
	deadline int64 // EEVDF
	vlag     int64 // EEVDF lag at the last dequeue
	// relDeadline (EEVDF, PLACE_REL_DEADLINE): deadline holds deadline −
	// vruntime, kept across a move for the next placement.
	relDeadline bool
	vprot       int64 // EEVDF: the vruntime its slice protection ends at (set at switch-in)
	sumExec     int64
	prevSumExec int64
	// noPreemptEnd: the end (in demand) of the stretches the fired edges
	// of this activation ran through with TIF_NEED_RESCHED set
	// (Edge.NoPreemptNS): one system call waking several tasks.
	noPreemptEnd int64
	// nextStall: the first of the activation's HostStalls not yet passed
	// (hostStallEnd).
	nextStall int32
	// weighStall: the first of the activation's HostStalls the replay has
	// not yet weighed against its own contention (weighStalls).
	weighStall int32
	statExec   int64 // sumExec at its last sched_stat_runtime or switch-in
	// vrunPending: run time charged by the engine alone (a milestone),
	// not yet in vruntime: the kernel's next update_curr adds it.
	vrunPending int64
	execStart   int64 // last time it started running (task_hot); -1 after migration
	avg         avg
	// util_est (struct util_est): the EWMA of the task's util at its
	// sleeps, the util of its last sleep (enqueued), and
	// UTIL_AVG_UNCHANGED: its PELT averages have not changed since that
	// sample, so the next sleep takes none.
	ueEwma, ueEnqueued uint64
	ueUnchanged        bool
	utilEstEnq         uint64 // what enqueue added to the cfs_rq util_est

	wakeeFlips    uint32
	wakeeFlipTS   int64
	lastWakee     int32
	recentUsedCPU int32

	mru     int64 // position in cfs_tasks (higher = nearer the head: more recently enqueued or picked)
	treeSeq int64 // when it entered its CPU's tree (rq.treeSeq)
	runTime int64 // total simulated run time (invariant check)
	cutNS   int64 // demand cut by its exit deadline (ExitDeadlines)
	// wakeOverheadNS: its wake overhead (wakeOverheadOf); skippedNS: the
	// demand its continued activations skipped for it (skipWakeOverhead).
	wakeOverheadNS, skippedNS int64
	// stallCutNS: the host stall demand weighStalls took out.
	stallCutNS int64
	// heldWakes: wakeups this task made whose enqueue waits for its
	// progress past a host stall inside their try_to_wake_up
	// (wakestall.go).
	heldWakes []heldWake
	cut       bool // stopped by its exit deadline
	// spinner: with ExitDeadlines, a task that did most of its work in its
	// final run (stress-ng's --cpu workers): done with its recorded demand
	// before its recorded exit, it runs on until then (runOn) from
	// spinFrom, the progress where its exit's wakeups start; spinUntil is
	// set once it does.
	spinner   bool
	spinFrom  int64
	spinUntil int64
	// traceEndRunOn: it ran on past its trace-end demand
	// (runOnToTraceEnd), from runOnFrom (-1 once it stopped).
	traceEndRunOn bool
	runOnFrom     int64
	charged       int64 // wall time charged while current (= runTime at capacity 1024)
	// childExits: the child-exit edges of its children that fired, for a
	// parent that waits for any child (reapPlan).
	childExits int32
	// forkExits: its children's exits counted for its forks' waits
	// (forkWaitPlan); forkWaitNeed: asleep before a fork that waits for
	// that many (0: not).
	forkExits, forkWaitNeed int32
	// forkCounted: its exit was counted for its parent (forkWaitExit).
	forkCounted bool
	// waitEnd: asleep in wait() at the end of its current activation,
	// for more child exits (reapWaitEnd).
	waitEnd bool
	// awaitOn, awaitK, awaitAt: the current activation waits at progress
	// awaitAt for awaitOn to end its activation awaitK (Edge.Awaits;
	// nil: none), and is then woken with awaitSync as WF_SYNC; awaiting:
	// asleep there. waiters: the tasks awaiting one of this task's
	// activations (await.go).
	awaitOn   *simTask
	awaitK    int32
	awaitAt   int64
	awaitSync bool
	awaiting  bool
	waiters   []*simTask
}

// selectFallbackRQ is select_fallback_rq() for a task whose chosen CPU it
// may not run on: the first CPU it may use on cpu's node, else the first
// it may use.
func (s *Sim) selectFallbackRQ(t *simTask, cpu int) int {
	for c := 0; c < s.ncpu; c++ {
		if s.cpuNode[c] == s.cpuNode[cpu] && t.allowed(c) {
			return c
		}
	}
	for c := 0; c < s.ncpu; c++ {
		if t.allowed(c) {
			return c
		}
	}
	return cpu
}

// allowed is cpumask_test_cpu(cpu, p->cpus_ptr).
func (t *simTask) allowed(cpu int) bool {
	if t.pinned >= 0 {
		return int(t.pinned) == cpu
	}
	return t.mask == nil || (cpu>>6 < len(t.mask) && t.mask[cpu>>6]&(1<<(cpu&63)) != 0)
}

// setMask sets t's affinity to cpus (those below ncpu); a mask holding
// every CPU is none.
func (t *simTask) setMask(cpus []int, ncpu int) {
	t.mask, t.nrAllowed = nil, 0
	if cpus == nil {
		return
	}
	m := make([]uint64, (ncpu+63)/64)
	n := int32(0)
	for _, c := range cpus {
		if c < ncpu && m[c>>6]&(1<<(c&63)) == 0 {
			m[c>>6] |= 1 << (c & 63)
			n++
		}
	}
	if int(n) < ncpu {
		t.mask, t.nrAllowed = m, n
	}
}

// onlyCPU is the one CPU a task whose mask holds one may run on
// (cpumask_any of its mask), else -1.
func (t *simTask) onlyCPU() int {
	if t.nrAllowed != 1 {
		return -1
	}
	for i, b := range t.mask {
		if b != 0 {
			return i*64 + bits.TrailingZeros64(b)
		}
	}
	return -1
}

// Sim is one replay of a workload under a policy.
type Sim struct {
	cfg   Config
	pol   Policy
	knobs Knobs
	hook  GroupStatsHook
	// reducedCapMisfit: the policy balances a reduced-capacity misfit on
	// a symmetric domain (MisfitLoadSym, v6.0 on), so the group
	// statistics look for one.
	reducedCapMisfit bool
	w                *Workload
	dom              *model.Domains
	ncpu             int
	cpus             []*rq
	tasks            []*simTask
	q                eventQueue
	seq              uint64
	now              int64
	tickNS           int64
	tickPhase        int64
	softirqPool      []int64    // softirqSwitchDelays, derived by initPreemptPools
	stoppers         []*simTask // per CPU, the workload's migration/N (stopperOf)
	rng              uint64
	niRng            uint64           // NI_RANDOM's die: its own stream, so the other draws stay as they were
	chargeRng        uint64           // the switch charge's draws (switchcharge.go): its own stream too
	nextPull         int              // the first Workload.BalancePulls not yet reached (balancePullsDue)
	irqCurr          map[actKey]int32 // Workload.IRQCurrent by arrival: the task it interrupted (irqFlipOwner)
	longCharge       map[actKey]int64 // Workload.LongSwitchCharges by activation (longChargeOf)
	// remotePool, rtPool: the wakeup-preemption delay pools drawn from
	// for a remote CFS and a real-time wakeup (initPreemptPools).
	remotePool, rtPool []int64
	// localPool: the pool a task's wakeup on the preempted CPU itself
	// draws from; irqLocalPool: an interrupt's there (nil: the remote
	// pool). Neither holds the delays a tick fell in (initPreemptPools).
	localPool, irqLocalPool []int64
	// idleForkPool, idleWakePool: the idle-exit pools a fork and any
	// other wakeup draw from on an uncontended trace (initIdleExitPools).
	idleForkPool, idleWakePool []int64

	// Tunables scaled by 1 + ilog2(min(ncpu, 8)) (sched_update_scaling).
	latencyNS, minGranNS, wakeupGranNS int64
	maxLBInterval                      int64 // jiffies

	rdOverload bool
	// eas: energy-aware scheduling's state, nil where it does not run
	// (initEAS).
	eas *easState
	// wakeCapOn: wake_cap() runs (a v4.10-v5.7 kernel on a machine of
	// unequal capacities); maxCapOrig is rd->max_cpu_capacity.
	wakeCapOn  bool
	maxCapOrig uint64
	// misfitOn: the balancer moves misfit tasks up (misfit.go); misfitV6:
	// in the form of the reworked balancer's policies (v5.5 on).
	misfitOn, misfitV6 bool
	// niStart: NI_RANDOM's starting success ratio (niStartRatio).
	niStart int64
	nohz    nohzState
	sgcImb  map[sgcKey]bool
	// cpuNode: each CPU's NUMA node (select_fallback_rq's first choice).
	cpuNode []int
	llc     []*llcShared

	out      Sink
	meas     *Measurer // Replay's measure (emitWaking: Activation.Untraced)
	lb       lbContext // the balance moving tasks now (balancingOn)
	stats    Stats
	fired    []uint8 // per edge: times fired
	edgeCut  []bool  // per edge: not fired, its activation cut by a deadline
	reap     *reapPlan
	forkWait *forkWaitPlan
	arrivals []int32 // per (task, activation): times its arrival fired; flattened via actBase
	// coalesced: per (task, activation), via actBase: its arrival fired
	// early in a timer interrupt, its own evArrival void (timerslack.go;
	// nil until one does).
	coalesced []bool
	timersDue []*simTask // expireTimers' scratch
	actBase   []int32
	events    int64
	err       error
	ev        timeline.Event

	// idleByBusy follows which CPUs are idle or busy for the idle-tick
	// rates by contention (Stats.IdleTicksFewBusy...; with idle_tick).
	idleByBusy IdleByBusy

	// noClock: the balancer's second and later dequeues (or enqueues) of
	// a pass, whose update_curr finds no time run (moveTasks).
	noClock bool

	eevdf       bool
	protect     string // Config.SliceProtection ("": RUN_TO_PARITY)
	forking     bool   // wakeupPreempt is wake_up_new_task's (WF_FORK)
	scratchSkip []int
	stall       []stallProc // per CPU: vCPU stall process (noise.go)
	irqStall    stallProc   // draws of irqWakeStallEnd (noise.go)
	hostStall   []stallProc // per CPU: its wait for a host core after a remote IPI (noise.go)
	busyHost    []stallProc // per CPU: the same for a busy vCPU, outside its task's stalls (busyHostEnd)
	// racedWake: wake() is firing an Edge.Raced (held until the wakee
	// blocks, as a reply is).
	racedWake bool
	// wakingShown: the wakeup being placed had its sched_waking written
	// already (a raced one, held: heldRaced).
	wakingShown bool
	// deferEnq: the waker's progress the wakeup being made waits for
	// (wakeStallEnd; -1: none).
	deferEnq int64
	// heldWake: wake() is releasing a held reply (its waker sent it from
	// another CPU before the requester blocked, as the trace has it).
	heldWake bool
	// enqFlags: while a wakeup's enqueue runs in interrupt context (an
	// arrival's own, or the wakelist IPI's), the common_flags of the
	// sched_stat_runtime its update_curr writes on CPU enqCPU
	// (enqueueContext); 0 otherwise. enqCPU: the CPU a wakeup's or a
	// fork's enqueue is updating, -1 outside one.
	enqFlags int64
	enqCPU   int
	// enqOn: while a wakeup's or a fork's enqueue onto CPU enqCPU runs
	// on another CPU (try_to_wake_up takes the remote queue's lock and
	// activates the wakee itself when the two share a cache and the
	// target is busy: ttwu_queue_cond; ttwu_runnable always;
	// wake_up_new_task from the parent's CPU), that CPU: the record of
	// its update_curr of enqCPU's running task is written there, as the
	// task running there (the waker, the parent, or the task an arrival's
	// interrupt found), as the kernel's trace buffers have it. -1: enqCPU
	// runs it.
	enqOn int
	smtOn bool
	// cluster: some CPU has a domain flagged SD_CLUSTER (v6.7+ domains).
	cluster bool
	smtSib  [][]int
	// asymCap is sched_asym_cpucap_active(): some CPU has a domain with
	// SD_ASYM_CPUCAPACITY (set with smtSib, by initSMT).
	asymCap bool

	// During a task wakeup: its inferred WF_SYNC, and the waker's CPU + 1
	// (a resched there is local: no IPI, no stall).
	syncWake  bool
	wakerCPU1 int
	// irqCPU1 is the CPU (plus one) running the interrupt or timer whose
	// wakeup wake() is placing (0: none): try_to_wake_up runs there, so
	// when that is the target the enqueue is local (ttwu_queue_cond is
	// false for the current CPU) and resched_curr sends no IPI.
	irqCPU1 int
	// The recording window (recording.go): per task, whether it waits for
	// the task's last activation (nil: no window), and how many it still
	// waits for (0: ended, at Stats.RecordingEndNS).
	recWait []bool
	recLeft int
	// recorder: the recorder task's id (-1: none); runOnOver: the window
	// closed, run-ons end (runOnToTraceEnd).
	recorder  int32
	runOnOver bool
	// lbScratch[:lbDepth] are the load_balance passes under way.
	lbScratch []*lbScratch
	lbDepth   int
	// wakeSGS and wakeEnv are find_idlest_group's arguments to the
	// policy's Classify.
	wakeSGS SGStats
	wakeEnv LBEnv
	// swapperComm[c] is the idle task's comm on CPU c, made once.
	swapperComm []string

	// tickDeferring: inside Sim.tick before its softirq's balance, where
	// a reschedule due at once waits for that balance (rq.tickDue).
	tickDeferring bool
}

type sgcKey struct{ level, id int }

type llcShared struct {
	hasIdleCores bool
	nrIdleScan   int
	weight       int
}

type nohzState struct {
	idle        []bool
	nrCPUs      int
	hasBlocked  bool
	nextBalance int64 // jiffies
	nextBlocked int64 // ns
	// needsUpdate: a CPU entered nohz idle since nohz.next_balance was
	// last computed (nohz.needs_update).
	needsUpdate bool
	kickFlags   []int // per ILB: the kick flags pending (nohz_flags)
}

// Stats are the replay's own counters (kernel-lb.md §8.8).
type Stats struct {
	Events             int64 `json:"events"`
	MigrationsWakeup   int64 `json:"migrations_wakeup"`
	MigrationsFork     int64 `json:"migrations_fork"`
	MigrationsPeriodic int64 `json:"migrations_periodic"`
	MigrationsNewidle  int64 `json:"migrations_newidle"`
	MigrationsNohz     int64 `json:"migrations_nohz"`
	MigrationsActive   int64 `json:"migrations_active"`
	// MigrationsAffinity: tasks moved by the stopper they woke (EdgeMove).
	MigrationsAffinity int64 `json:"migrations_affinity"`
	// PrioChanges: wakeups that gave a task another class or weight
	// (Activation.OwnPrio).
	PrioChanges int64 `json:"prio_changes"`
	LBAttempts  int64 `json:"lb_count"`
	// LBNewidle: the passes newidle balancing ran, summed over the
	// domains (schedstat's lb_count[CPU_NEWLY_IDLE]).
	LBNewidle int64 `json:"lb_count_newidle"`
	// LBIdle, LBGainedIdle: the passes periodic balancing of idle CPUs
	// (own tick or nohz ILB) ran and the tasks they moved
	// (lb_count[CPU_IDLE], lb_gained[CPU_IDLE]).
	LBIdle       int64 `json:"lb_count_idle"`
	LBGainedIdle int64 `json:"lb_gained_idle"`
	// IdleTicks: the ticks an idle CPU took with nothing queued on it
	// (Config.IdleTicks: none by default). IdleTickPasses,
	// IdleTickChances, IdleTickPulls: the SCHED softirqs those raised,
	// those with a task waiting behind a running one on another CPU, and
	// those that pulled a task onto the idle CPU; scripts/idlepulls
	// counts the same in a kernel trace with the timer and softirq events
	// (FIDELITY.md round 100).
	IdleTicks int64 `json:"idle_ticks,omitempty"`
	// IdleMidPeriods, IdleMidTicked (with Config.IdleTicks): the idle
	// periods of 4 to 16 ms, and those with an idle tick (nothing
	// queued), as scripts/idlepulls counts a kernel trace's (FIDELITY.md
	// round 101).
	IdleMidPeriods int64 `json:"idle_mid_periods,omitempty"`
	IdleMidTicked  int64 `json:"idle_mid_ticked,omitempty"`
	// IdleTickPasses, IdleTickChances, IdleTickPulls: see IdleTicks.
	IdleTickPasses  int64 `json:"idle_tick_passes,omitempty"`
	IdleTickChances int64 `json:"idle_tick_chances,omitempty"`
	IdleTickPulls   int64 `json:"idle_tick_pulls,omitempty"`
	// IdleTicksFewBusy, IdleTicksManyBusy (with Config.IdleTicks): the
	// idle ticks taken while fewer than half the CPUs were busy, and while
	// half or more were; IdlePeriodsFewBusy, IdlePeriodsManyBusy: the
	// CPUs' idle time then (from a switch to idle to the next switch), in
	// tick periods. Their ratios are an idle vCPU's chance to take the
	// tick at each jiffy under light and heavy host contention, as
	// scripts/idlepulls measures a kernel trace's (FIDELITY.md round 102).
	IdleTicksFewBusy    int64   `json:"idle_ticks_few_busy,omitempty"`
	IdleTicksManyBusy   int64   `json:"idle_ticks_many_busy,omitempty"`
	IdlePeriodsFewBusy  float64 `json:"idle_periods_few_busy,omitempty"`
	IdlePeriodsManyBusy float64 `json:"idle_periods_many_busy,omitempty"`
	// TTWUMoveAffine: wakeups wake_affine sent to the waker's CPU
	// (schedstat's ttwu_move_affine).
	TTWUMoveAffine int64 `json:"ttwu_move_affine"`
	// EASPrev, EASMoved: wakeups energy-aware placement (eas.go) kept on
	// the wakee's previous CPU and sent elsewhere; EASOverutilized: the
	// times the root domain became overutilized, handing placement and
	// balancing back to the ordinary paths. Absent without EAS.
	EASPrev         int64 `json:"eas_prev,omitempty"`
	EASMoved        int64 `json:"eas_moved,omitempty"`
	EASOverutilized int64 `json:"eas_overutilized,omitempty"`
	// TTWULocal, TTWUWakeRemote: wakeups placed on the CPU that ran
	// them, and the others by the lowest domain of that CPU spanning the
	// chosen one (schedstat's ttwu_local and per-domain
	// ttwu_wake_remote, keyed by domain name).
	TTWULocal      int64            `json:"ttwu_local"`
	TTWUWakeRemote map[string]int64 `json:"ttwu_wake_remote"`
	LBBalanced     int64            `json:"lb_balanced"`
	LBFailed       int64            `json:"lb_failed"`
	LBMoved        int64            `json:"lb_gained"`
	NewidleSkipped int64            `json:"newidle_skipped"`
	// NIRatioStart: NI_RANDOM's success ratio (of 1024) every domain
	// started at (Config.NIRatio); absent when the policy has no
	// NI_RANDOM.
	NIRatioStart *int64 `json:"ni_ratio_start,omitempty"`
	// WakeeFlipsStart: the wakee_flips the tasks alive at the trace start
	// began with (Config.WakeeFlips); WakeeFlipsFit: the trace's evidence
	// (Workload.Flips), when it had telling placements.
	WakeeFlipsStart uint32 `json:"wakee_flips_start"`
	// StartPELTTasks: the tasks running or runnable at the trace start,
	// whose PELT averages startPELT set; StartPELTLoad their load_avg
	// summed, StartPELTWeight their weights (the loads the heavy start
	// gives them); StartPELTHeavy: that start was the heavy one.
	StartPELTTasks  int64    `json:"start_pelt_tasks,omitempty"`
	StartPELTLoad   int64    `json:"start_pelt_load,omitempty"`
	StartPELTWeight int64    `json:"start_pelt_weight,omitempty"`
	StartPELTHeavy  bool     `json:"start_pelt_heavy,omitempty"`
	WakeeFlipsFit   *FlipFit `json:"wakee_flips_fit,omitempty"`
	ActiveBalances  int64    `json:"active_balances"`
	NohzKicks       int64    `json:"nohz_kicks"`
	// NohzKicksDropped: kicks whose ILB had work when the IPI landed.
	NohzKicksDropped int64 `json:"nohz_kicks_dropped,omitempty"`
	// BusyHostWaits: wakeup preemptions sent to another busy vCPU held
	// for a host core (busyHostEnd); BusyHostWaitNS: the holds' lengths
	// (how much later the switch was due), summed.
	BusyHostWaits  int64 `json:"busy_host_waits,omitempty"`
	BusyHostWaitNS int64 `json:"busy_host_wait_ns,omitempty"`
	// HostStallsShortened: the trace's host stalls the replay reached
	// with fewer vCPUs busy (weighStalls); HostStallShortenedNS: the
	// demand taken out of them, summed.
	HostStallsShortened  int64 `json:"host_stalls_shortened,omitempty"`
	HostStallShortenedNS int64 `json:"host_stall_shortened_ns,omitempty"`
	// LongSwitchCharges: blocks whose charge to the next task was the
	// trace's own long gap at that activation's end (longcharge.go);
	// LongSwitchChargeNS: what they moved, summed (at most what the
	// leaving task ran since its last update).
	LongSwitchCharges  int64 `json:"long_switch_charges,omitempty"`
	LongSwitchChargeNS int64 `json:"long_switch_charge_ns,omitempty"`
	// IRQWakeStalls: interrupt wakeups' preemptions that met a stall
	// before their switch (irqWakeStallEnd); IRQWakeStallNS: the stalls
	// drawn, summed.
	IRQWakeStalls  int64 `json:"irq_wake_stalls,omitempty"`
	IRQWakeStallNS int64 `json:"irq_wake_stall_ns,omitempty"`
	// WakesAfterStall: wakeups whose enqueue waited for their waker's
	// host stall (wakestall.go); WakeAfterStallNS: from their wakings to
	// their enqueues, summed.
	WakesAfterStall  int64 `json:"wakes_after_stall,omitempty"`
	WakeAfterStallNS int64 `json:"wake_after_stall_ns,omitempty"`
	EdgesFired       int64 `json:"edges_fired"`
	EdgesRedundant   int64 `json:"edges_redundant"`
	EdgesPending     int64 `json:"edges_pending"`
	// EdgesPendingBy splits EdgesPending by where the wakee was when its
	// edge fired (nil: none pending).
	EdgesPendingBy *PendingEdges `json:"edges_pending_by,omitempty"`
	Arrivals       int64         `json:"arrivals"`
	// TimersCoalesced: hrtimer arrivals fired early in another timer's
	// interrupt on their CPU (Config.TimerSlackNS).
	TimersCoalesced       int64 `json:"timers_coalesced,omitempty"`
	ContinuedWithoutSleep int64 `json:"continued_without_sleep"`
	// WakeOverheadSkips: continued activations started past their task's
	// wake overhead; WakeOverheadNS: the demand that skipped, summed
	// (wakeoverhead.go).
	WakeOverheadSkips int64 `json:"wake_overhead_skips,omitempty"`
	WakeOverheadNS    int64 `json:"wake_overhead_ns,omitempty"`
	RepliesHeld       int64 `json:"replies_held"`
	// RacedHeld: wakeups that raced their wakee's block in the trace
	// (Edge.Raced), found it running in the replay and were held until
	// it blocked (one that finds it queued is a pending wakeup).
	RacedHeld int64 `json:"raced_held"`
	// RepliesAwaited: a waker that reached its await point before its
	// wakee's reply and slept there (await.go); AwaitsStranded: such a
	// sleeper woken at the end because the reply never came (0 on an
	// extracted workload; awaits marked by hand can wait in a circle).
	RepliesAwaited int64 `json:"replies_awaited,omitempty"`
	// Delay: the blocks of fair tasks with another runnable task under
	// DELAY_DEQUEUE, those it kept queued and those a waking requeued:
	// what DelayedDequeues reads from a trace's schedstats.
	Delay          DelayStats `json:"delayed_dequeue,omitzero"`
	AwaitsStranded int64      `json:"awaits_stranded,omitempty"`
	// A parent waiting for any child (reap.go): its children's exits, the
	// ones that woke it, and the reap activations it continued into
	// without sleeping (a zombie child at hand).
	ChildExits        int64 `json:"child_exits,omitempty"`
	ReapWakeups       int64 `json:"reap_wakeups,omitempty"`
	ReapsWithoutSleep int64 `json:"reaps_without_sleep,omitempty"`
	// ReapWaits: a parent that had run an activation's demand slept
	// for more child exits before ending it (reapWaitEnd).
	ReapWaits int64 `json:"reap_waits,omitempty"`
	// ForkWaits: a parent reached a fork before as many of its children
	// had exited as the trace shows by then, and slept in the wait the
	// trace hid (forkwait.go).
	ForkWaits int64 `json:"fork_waits,omitempty"`
	// ForkWaitsStranded: such a wait ended with nothing else left to run.
	ForkWaitsStranded int64 `json:"fork_waits_stranded,omitempty"`
	EndNS             int64 `json:"end_ns"`
	// Config.ExitDeadlines: tasks stopped at their recorded exit time,
	// the demand and the edges that cut.
	DeadlineCuts  int64 `json:"deadline_cuts,omitempty"`
	DeadlineCutNS int64 `json:"deadline_cut_ns,omitempty"`
	EdgesCut      int64 `json:"edges_cut,omitempty"`
	// RunOnTasks: time-bounded spinners that were done with their demand
	// before their recorded exit and ran on to it (runOn); RunOnNS: the
	// time from the end of their demand to that exit, summed.
	RunOnTasks int64 `json:"run_on_tasks,omitempty"`
	RunOnNS    int64 `json:"run_on_ns,omitempty"`
	// TraceEndRunOnTasks: tasks done with their trace-end activation's
	// demand that ran on (Config.TraceEndRunOn); TraceEndRunOnNS: the
	// wall time from each one's demand done to its stop, summed.
	TraceEndRunOnTasks int64 `json:"trace_end_run_on_tasks,omitempty"`
	TraceEndRunOnNS    int64 `json:"trace_end_run_on_ns,omitempty"`
	// StrandedCuts: tasks left asleep at the end for a wakeup a cut task
	// would have sent, cut from there (strandCut).
	StrandedCuts int64 `json:"stranded_cuts,omitempty"`
	// RecordingEndNS: where the replay's recording window ends (the
	// recorder's last activation and the command's process tree done;
	// recording.go), 0 without one; EventsAfterRecording: the events
	// after it, not written.
	RecordingEndNS       int64 `json:"recording_end_ns,omitempty"`
	EventsAfterRecording int64 `json:"events_after_recording,omitempty"`
}

// New prepares a replay of w.
func New(w *Workload, cfg Config, out Sink) (*Sim, error) {
	cfg = cfg.withDefaults()
	if cfg.Policy == nil {
		return nil, fmt.Errorf("whatif: no policy")
	}
	topo := cfg.Topology
	if topo == nil {
		topo = w.Topology
	}
	if topo == nil {
		return nil, fmt.Errorf("whatif: the workload has no CPU topology; give one with --topology")
	}
	kernel := cfg.Kernel
	if kernel == "" {
		kernel = w.Kernel
	}
	d, err := model.BuildDomains(topo, kernel)
	if err != nil {
		return nil, err
	}
	if cfg.ReplyAwaits || cfg.HerdAwaits {
		w = w.withReplyEdges(cfg.ReplyAwaits, cfg.HerdAwaits)
	}
	var cpuStalls [][]stallSpan
	if cfg.HostStallCPU {
		if w, cpuStalls, err = w.withStallsOnCPUs(d.NrCPUs); err != nil {
			return nil, err
		}
	}
	s := &Sim{cfg: cfg, pol: cfg.Policy, knobs: cfg.Policy.Knobs(), w: w, dom: d, ncpu: d.NrCPUs, out: out, sgcImb: map[sgcKey]bool{}, deferEnq: -1, enqCPU: -1, enqOn: -1}
	s.hook, _ = cfg.Policy.(GroupStatsHook)
	s.cpuNode = make([]int, d.NrCPUs)
	for _, n := range topo.Nodes {
		for _, c := range n.CPUs {
			if c >= 0 && c < d.NrCPUs {
				s.cpuNode[c] = n.ID
			}
		}
	}
	if rp, ok := asRules(cfg.Policy); ok {
		s.reducedCapMisfit = rp.r.MisfitLoadSym
		s.misfitV6 = true
	}
	s.initSMT()
	s.wakeCapOn = s.asymCap && d.Kernel.HasWakeCap()
	s.misfitOn = s.asymCap && (s.misfitV6 || d.Kernel.AtLeast(4, 20))
	for _, c := range d.Online {
		s.maxCapOrig = max(s.maxCapOrig, uint64(d.Capacity[c]))
	}
	if why := s.initEAS(topo); why != "" && cfg.EAS == EASOn {
		return nil, fmt.Errorf("whatif: eas=on, but %s", why)
	}
	applyDomainKnobs(d, s.knobs)
	if err := applyParams(d, cfg.Params); err != nil {
		return nil, err
	}
	switch cfg.RunQueue {
	case "":
		s.eevdf = s.knobs.EEVDF
	case "cfs":
	case "eevdf":
		s.eevdf = true
	default:
		return nil, fmt.Errorf("whatif: run queue discipline %q: want cfs or eevdf", cfg.RunQueue)
	}
	switch cfg.SliceProtection {
	case "", SliceProtectDeadline:
	case SliceProtectBase, SliceProtectNone:
		if !s.eevdf {
			return nil, fmt.Errorf("whatif: slice_protection=%s: only the EEVDF run queue (v6.6+) protects slices; policy %s runs CFS", cfg.SliceProtection, cfg.Policy.Name())
		}
		s.protect = cfg.SliceProtection
	default:
		return nil, fmt.Errorf("whatif: slice_protection %q: want %s", cfg.SliceProtection, strings.Join(SliceProtections, ", "))
	}
	if s.out == nil {
		s.out = discard{}
	}
	for _, t := range w.Tasks {
		for _, a := range t.Activations {
			if a.CPU >= int32(s.ncpu) {
				return nil, fmt.Errorf("whatif: the workload uses CPU %d but the topology has %d CPUs", a.CPU, s.ncpu)
			}
		}
		if t.StartCPU >= int32(s.ncpu) || t.Pinned >= int32(s.ncpu) {
			return nil, fmt.Errorf("whatif: task %d (%s) uses a CPU beyond the topology's %d", t.TID, t.Comm, s.ncpu)
		}
		for _, c := range t.Allowed {
			if c < 0 || c >= s.ncpu {
				return nil, fmt.Errorf("whatif: task %d (%s) is allowed CPU %d, beyond the topology's %d", t.TID, t.Comm, c, s.ncpu)
			}
		}
		if t.Allowed != nil && len(t.Allowed) == 0 {
			return nil, fmt.Errorf("whatif: task %d (%s) is allowed no CPU", t.TID, t.Comm)
		}
	}
	s.tickNS = 1000000000 / int64(cfg.HZ)
	s.tickPhase = w.TickPhaseNS % s.tickNS
	f := TunableFactor(s.ncpu)
	s.latencyNS, s.minGranNS, s.wakeupGranNS = 6000000*f, 750000*f, 1000000*f
	s.maxLBInterval = int64(cfg.HZ) * int64(s.ncpu) / 10
	if s.maxLBInterval < 1 {
		s.maxLBInterval = 1
	}
	s.rng = cfg.Seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
	s.niRng = cfg.Seed*0x9e3779b97f4a7c15 + 0x6a09e667f3bcc909
	s.chargeRng = cfg.Seed*0x9e3779b97f4a7c15 + 0x3c6ef372fe94f82b
	s.niStart = niStartRatio(cfg, w)
	s.stats.WakeeFlipsStart = w.Flips.WakeeFlips
	if cfg.IRQFlip && len(w.IRQCurrent) > 0 {
		s.irqCurr = make(map[actKey]int32, len(w.IRQCurrent))
		for _, q := range w.IRQCurrent {
			s.irqCurr[actKey{q.Task, q.Act}] = q.Curr
		}
	}
	if cfg.SwitchCharge && !cfg.SwitchChargePoolsOnly && len(w.LongSwitchCharges) > 0 {
		s.longCharge = make(map[actKey]int64, len(w.LongSwitchCharges))
		for _, c := range w.LongSwitchCharges {
			s.longCharge[actKey{c.Task, c.Act}] = c.NS
		}
	}
	if cfg.WakeeFlips >= 0 {
		s.stats.WakeeFlipsStart = uint32(cfg.WakeeFlips)
	}
	if w.Flips.Placements > 0 || w.Flips.WeightPlacements > 0 {
		fl := w.Flips
		s.stats.WakeeFlipsFit = &fl
	}
	if s.knobs.NIRandom {
		v := s.niStart
		s.stats.NIRatioStart = &v
	}
	s.nohz.idle = make([]bool, s.ncpu)
	s.nohz.kickFlags = make([]int, s.ncpu)
	s.llc = make([]*llcShared, s.ncpu)
	llcByID := map[int]*llcShared{}
	for c := 0; c < s.ncpu; c++ {
		cd := &d.CPUs[c]
		sh := llcByID[cd.LLCID]
		if sh == nil {
			sh = &llcShared{weight: cd.LLCSize, nrIdleScan: cd.LLCSize}
			llcByID[cd.LLCID] = sh
		}
		s.llc[c] = sh
	}
	s.cpus = make([]*rq, s.ncpu)
	for c := 0; c < s.ncpu; c++ {
		s.cpus[c] = s.newRQ(c)
		if cpuStalls != nil {
			s.cpus[c].stalls = cpuStalls[c]
		}
	}
	s.tasks = make([]*simTask, len(w.Tasks))
	s.actBase = make([]int32, len(w.Tasks)+1)
	for i := range w.Tasks {
		t := &w.Tasks[i]
		st := &simTask{id: int32(i), w: t, rt: t.RT(), pinned: t.Pinned, act: -1, cpu: t.StartCPU, trig: make([]bool, len(t.Activations)),
			heldK: -1, timerK: -1, lastWakee: -1, recentUsedCPU: t.StartCPU, execStart: -1, moveTask: -1, prio: t.Prio}
		st.stop = st.rt && isStopper(t.Comm)
		if s.cfg.SkipWakeOverhead {
			st.wakeOverheadNS = wakeOverheadOf(t)
		}
		if !t.Forked {
			st.wakeeFlips = s.stats.WakeeFlipsStart
		}
		st.weight = weightOfPrio(t.Prio)
		if st.pinned >= 0 {
			st.cpu = st.pinned
		} else {
			st.setMask(t.Allowed, s.ncpu)
		}
		s.tasks[i] = st
		s.actBase[i+1] = s.actBase[i] + int32(len(t.Activations))
	}
	s.fired = make([]uint8, len(w.Edges))
	s.lb.cpu = -1
	s.edgeCut = make([]bool, len(w.Edges))
	s.arrivals = make([]int32, s.actBase[len(w.Tasks)])
	s.reap = newReapPlan(w, s.actBase, cfg.ReapAnyChild)
	s.forkWait = newForkWaitPlan(w, !cfg.NoForkWait)
	s.initPreemptPools()
	s.initIdleExitPools()
	return s, nil
}

// IdleMidMinNS, IdleMidMaxNS bound the idle periods Stats.IdleMidPeriods
// counts, and scripts/idlepulls in a kernel trace: 4 to 16 ms, each
// spanning at least one jiffy boundary of HZ 250, so a tick that stays on
// comes in it unless the host holds the vCPU back.
const (
	IdleMidMinNS = 4000000
	IdleMidMaxNS = 16000000
)

// push queues e. Its key orders events of one instant: regular events
// before ticks, ticks by CPU, then insertion order. The sequence takes the
// low 43 bits (a replay stops at MaxEvents, far below 2^43 pushes) and a
// tick's CPU the 20 above.
func (s *Sim) push(e event) {
	s.seq++
	e.key = s.seq & (1<<43 - 1)
	if e.cls == 1 {
		e.key |= 1<<63 | uint64(uint32(e.cpu)&(1<<20-1))<<43
	}
	s.q.push(e)
}

// rand returns the next number of a SplitMix64 stream (deterministic).
func (s *Sim) rand() uint64 { return splitMix64(&s.rng) }

// splitMix64 advances a SplitMix64 state and returns its next number.
func splitMix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// niRand is rand for NI_RANDOM's die, on its own stream.
func (s *Sim) niRand() uint64 { return splitMix64(&s.niRng) }

func (s *Sim) jiffies() int64 { return floorDiv(s.now-s.tickPhase, s.tickNS) }

// nextJiffy is the first jiffy boundary after now.
func (s *Sim) nextJiffy() int64 { return s.tickPhase + (s.jiffies()+1)*s.tickNS }

// onTickGrid is the tick whose softirq wakes a tick-softirq arrival
// (Activation.TickSoftIRQ) if its task blocks now. A timer-wheel timer
// expires at a jiffy, counted from when it was armed (schedule_timeout, a
// workqueue's delayed work, RCU's grace-period waits), and its callback
// runs in the softirq as the tick's interrupt returns: after the tick's
// update_curr, before the switch the tick may have asked for
// (tickResched). The replay keeps the count: as many tick boundaries
// after the block as the trace's waking came after its block (the
// waking's own tick taken as the boundary nearest it: a late tick on a
// vCPU the host descheduled counts as its boundary). The waking itself
// comes the recorded time after that tick (the tick's own work), and the
// tick's switch waits for it (holdTick): so a waking that finds the
// running task's slice just renewed is picked at that switch, as in the
// trace. Taken as a plain sleep after a block elsewhere in the tick it
// would land off the grid, after the switch, and wait a tick for EEVDF's
// protected run. With no boundary since the block (ok false) the sleep
// is kept.
func (s *Sim) onTickGrid(a *Activation) (boundary int64, ok bool) {
	block := a.ReleaseNS - a.SleepNS
	ticks := floorDiv(s.nearestTick(a.ReleaseNS)-s.tickPhase, s.tickNS) - floorDiv(block-s.tickPhase, s.tickNS)
	if ticks <= 0 {
		return 0, false
	}
	return s.tickPhase + (s.jiffies()+ticks)*s.tickNS, true
}

// nearestTick is the tick boundary nearest t.
func (s *Sim) nearestTick(t int64) int64 {
	return s.tickPhase + floorDiv(t-s.tickPhase+s.tickNS/2, s.tickNS)*s.tickNS
}

// msecsToJiffies rounds up, as the kernel's does.
func (s *Sim) msecsToJiffies(ms int64) int64 {
	return (ms*int64(s.cfg.HZ) + 999) / 1000
}

// Run replays the workload to the end: every activation's demand run,
// every edge fired. It returns the replay's statistics.
func (s *Sim) Run() (*Stats, error) {
	s.now = s.w.StartNS
	s.initRecording()
	// Tasks running or runnable at the trace start, on the CPU they were on.
	for _, t := range s.tasks {
		if len(t.w.Activations) == 0 {
			continue
		}
		a0 := &t.w.Activations[0]
		switch a0.Cause {
		case CauseStart:
			t.trig[0] = true
			s.startActivation(t, 0)
			s.takeActPrio(t)
			r := s.cpus[t.cpu]
			t.avg.lastUpdate = s.now
			s.startPELT(t)
			s.enqueue(r, t, enqStart)
			if t.w.StartRunning && r.curr == nil {
				s.switchTo(r, t, "")
			}
		case CauseArrival:
			s.scheduleArrival(t, 0)
		}
	}
	if s.cfg.ExitDeadlines {
		for _, t := range s.tasks {
			if t.w.ExitNS > 0 && t.w.ExitNS >= s.cfg.ExitDeadlineFromNS && len(t.w.Activations) > 0 {
				s.push(event{t: t.w.ExitNS, kind: evDeadline, a: t.id})
				s.markSpinner(t)
			}
		}
	}
	for _, r := range s.cpus {
		if r.curr == nil && r.nrRunning() > 0 {
			s.schedule(r, "")
		}
		if r.curr == nil {
			s.enterIdle(r)
		}
	}
	for len(s.q) > 0 || s.releaseStranded() {
		e := s.q.pop()
		if e.t < s.now {
			return nil, fmt.Errorf("whatif: internal error: time went backwards (%d < %d)", e.t, s.now)
		}
		s.now = e.t
		s.events++
		if s.events > s.cfg.MaxEvents {
			return nil, fmt.Errorf("whatif: more than %d events; the replay does not terminate", s.cfg.MaxEvents)
		}
		switch e.kind {
		case evProgress:
			r := s.cpus[e.cpu]
			if e.gen == r.gen && r.curr != nil {
				s.progress(r)
			}
		case evArrival:
			s.fireArrival(s.tasks[e.a], e.b)
		case evIdleExit:
			r := s.cpus[e.cpu]
			if e.gen == r.idleGen && r.waking {
				r.waking = false
				if r.curr == nil {
					s.schedule(r, "")
				}
			}
		case evResched:
			r := s.cpus[e.cpu]
			if e.gen == r.reschedGen && r.reschedPending && r.curr != nil {
				if e.b == 0 && s.atRunOnEnd(r) {
					// Due at the activation's end, queued at this
					// instant already.
					s.reschedBehindRunOnEnd(r)
					break
				}
				r.reschedPending = false
				s.preempt(r)
			}
		case evActive:
			s.activeBalanceStop(int(e.cpu), int(e.a))
		case evNohzKick:
			s.nohzCSD(int(e.cpu))
		case evTick:
			if r := s.cpus[e.cpu]; e.b == 0 || e.gen == r.lateTickGen {
				s.tick(r, e.b == 1)
			}
		case evDeadline:
			s.deadline(s.tasks[e.a])
		}
		if s.err != nil {
			return nil, s.err
		}
	}
	s.stats.Events = s.events
	s.stats.EndNS = s.now
	if s.idleByBusy.state != nil {
		s.addIdleTime() // the idle stretches still open
	}
	s.strandCut()
	return &s.stats, s.checkInvariants()
}

// strandCut: with exit deadlines, a task whose next activation waits for
// a wakeup that a cut task would have sent (schbench's message thread,
// whose worker stopped at its recorded exit, when the trace does not show
// the message thread's own exit) sleeps for ever, and so does a task
// waiting for it. At the end of the replay nothing more can run, so such
// tasks are cut too, from their next activation on: their demand and
// edges are the stopped work's, as deadline's are (Stats.StrandedCuts).
// With the trace's pairing the wakeup is the one paired with that
// activation; otherwise any wakeup of the task still to come. A task stuck
// with no cut task upstream is left to checkInvariants (an engine fault).
func (s *Sim) strandCut() {
	if !s.cfg.ExitDeadlines {
		return
	}
	var causeOf []int32 // per (task, activation): its causal edge, -1 none
	for changed := true; changed; {
		changed = false
		var fromCut []bool // per task: a wakeup still to come from a cut task
		for _, t := range s.tasks {
			next := t.act + 1
			if t.cut || t.state != tsSleeping && t.state != tsNotStarted || int(next) >= len(t.w.Activations) || t.trig[next] {
				continue
			}
			if !s.cfg.PairedWakeups && t.w.Activations[next].Cause == CauseWake {
				if fromCut == nil {
					fromCut = make([]bool, len(s.tasks))
					for i, e := range s.w.Edges {
						if e.Causal && e.Kind == EdgeWake && s.fired[i] == 0 && s.tasks[e.Waker].cut {
							fromCut[e.Wakee] = true
						}
					}
				}
				if !fromCut[t.id] {
					continue
				}
			} else {
				if causeOf == nil {
					causeOf = make([]int32, s.actBase[len(s.tasks)])
					for i := range causeOf {
						causeOf[i] = -1
					}
					for i, e := range s.w.Edges {
						if e.Causal {
							causeOf[s.actBase[e.Wakee]+e.WakeeAct] = int32(i)
						}
					}
				}
				ei := causeOf[s.actBase[t.id]+next]
				if ei < 0 || s.fired[ei] != 0 || !s.tasks[s.w.Edges[ei].Waker].cut {
					continue
				}
			}
			var cut int64
			for j := next; int(j) < len(t.w.Activations); j++ {
				a := &t.w.Activations[j]
				cut += a.DemandNS
				for i := a.EdgeLo; i < a.EdgeHi; i++ {
					if s.fired[i] == 0 {
						s.edgeCut[i] = true
						s.stats.EdgesCut++
					}
				}
			}
			t.cut, t.cutNS = true, cut
			// Never to exit: its parent's count takes it (the parent,
			// whose edge to it was cut, is stopped too: no wakeup).
			s.countForkExit(t)
			s.stats.StrandedCuts++
			s.stats.DeadlineCutNS += cut
			changed = true
		}
	}
}

// progress handles the running task reaching a milestone: fire the edges
// due at its progress point, then end the activation if its demand is done.
func (s *Sim) progress(r *rq) {
	t := r.curr
	s.chargeCurr(r, false)
	if t.spinner && s.runOn(r, t) {
		return
	}
	s.weighStalls(t)
	s.releaseWakes(t, false)
	if s.fireDue(r, t) || r.curr != t {
		// Held for a host core: the pending reschedule's evResched
		// switches the task out, and it goes on when it runs again.
		return
	}
	if t.awaitOn != nil && t.progress >= t.awaitAt {
		s.awaitPoint(r, t)
		return
	}
	a := &t.w.Activations[t.act]
	if t.progress >= a.DemandNS && t.nextEdge >= a.EdgeHi {
		if s.preemptedBeforeBlock(r, t) {
			s.preempt(r)
			return
		}
		if s.runOnToTraceEnd(r, t) {
			return
		}
		s.endActivation(r, t)
		return
	}
	s.armProgress(r)
}

// runOnToTraceEnd keeps a task whose trace-end activation has done its
// recorded demand running (Config.TraceEndRunOn), as it would have in the
// kernel: the trace stopped it, not its work. It runs on until the
// replay's recording window closes (recording.go: the recorder done, which
// is what stopped the trace), or without a window until the trace's end
// time; a window still open then holds it at most as long again. The
// demand's clock stops, so its run time stays the demand, as a spinner's
// does (runOn). Not the recorder itself (its own work is what ended the
// trace), nor a task the window waits for (the command's process tree,
// which perf waited for: its end is the window's), nor an activation
// that ran less than a tenth of the time from its release to the trace's
// end: the trace missed its switch-out (this machine's 6.18 leaves a
// task "running" for seconds with 0.04 ms of demand) or it never ran at
// all, and its demand says nothing of what it would have done. It
// reports whether the task runs on; when it stops, the activation ends.
func (s *Sim) runOnToTraceEnd(r *rq, t *simTask) bool {
	if !s.cfg.TraceEndRunOn || int(t.act) != len(t.w.Activations)-1 || t.id == s.recorder || (s.recWait != nil && s.recWait[t.id]) {
		return false
	}
	a := &t.w.Activations[t.act]
	if a.End != EndTraceEnd || 10*a.DemandNS < s.w.EndNS-max(a.ReleaseNS, s.w.StartNS) {
		return false
	}
	until := s.w.EndNS
	if s.recWait != nil {
		until = s.w.EndNS + (s.w.EndNS - s.w.StartNS)
	}
	if s.runOnOver || s.now >= until {
		if t.runOnFrom >= 0 && t.traceEndRunOn {
			s.stats.TraceEndRunOnNS += s.now - t.runOnFrom
			t.runOnFrom = -1
		}
		return false
	}
	if !t.traceEndRunOn {
		t.traceEndRunOn, t.runOnFrom = true, s.now
		s.stats.TraceEndRunOnTasks++
	}
	r.gen++
	s.push(event{t: until, kind: evProgress, cpu: int32(r.cpu), gen: r.gen})
	return true
}

// endRunOns stops the tasks running on past their trace-end demand when
// the recording window closes (runOnToTraceEnd): each running one
// reaches its milestone now; a queued one ends when it next runs.
func (s *Sim) endRunOns() {
	s.runOnOver = true
	for _, r := range s.cpus {
		if t := r.curr; t != nil && t.traceEndRunOn && t.runOnFrom >= 0 {
			r.gen++
			s.push(event{t: s.now, kind: evProgress, cpu: int32(r.cpu), gen: r.gen})
		}
	}
}

// markSpinner marks a time-bounded task whose final run, ending in its
// exit, holds at least half of its demand: a loop that works until the
// deadline, not a fixed amount of work (Config.ExitDeadlines). Its exit's
// wakeups (the final run's edges within exitNotifyMaxNS of its end) wait
// for the run-on.
func (s *Sim) markSpinner(t *simTask) {
	acts := t.w.Activations
	a := &acts[len(acts)-1]
	if t.rt || a.End != EndExit {
		return
	}
	var total int64
	for i := range acts {
		total += acts[i].DemandNS
	}
	if 2*a.DemandNS < total || a.DemandNS == 0 {
		return
	}
	t.spinner, t.spinFrom = true, a.DemandNS
	for i := a.EdgeLo; i < a.EdgeHi; i++ {
		if o := s.w.Edges[i].OffsetNS; o >= a.DemandNS-exitNotifyMaxNS && o < t.spinFrom {
			t.spinFrom = o
		}
	}
}

// runOn keeps a spinner that reached spinFrom in its final run before its
// recorded exit running until then: in the kernel it would have gone on
// working to the deadline, whatever work it had done by then (the
// demand's clock stops: run time stays the demand). It reports whether
// the task is running on; at the exit time the held edges fire and the
// run ends, or when the task next runs if it is preempted then, as a
// loop that checks the time does.
func (s *Sim) runOn(r *rq, t *simTask) bool {
	if int(t.act) != len(t.w.Activations)-1 || t.progress < t.spinFrom {
		return false
	}
	if t.spinUntil == 0 {
		if t.w.ExitNS <= s.now {
			return false
		}
		t.spinUntil = t.w.ExitNS
		s.stats.RunOnTasks++
		s.stats.RunOnNS += t.spinUntil - s.now
	}
	if s.now >= t.spinUntil {
		return false
	}
	r.gen++
	s.push(event{t: t.spinUntil, kind: evProgress, cpu: int32(r.cpu), gen: r.gen})
	return true
}

// fireDue fires the current activation's edges whose offset has been
// reached, in order, stopping if the task is preempted by one of them. It
// reports whether a due edge is held for a host core (busyHostEnd): then
// nothing more happens until the pending reschedule switches the task.
func (s *Sim) fireDue(r *rq, t *simTask) bool {
	for r.curr == t {
		a := &t.w.Activations[t.act]
		if t.nextEdge >= a.EdgeHi {
			return false
		}
		e := &s.w.Edges[t.nextEdge]
		// An edge past the activation's demand is due when the demand is
		// met; waiting for its offset would re-arm progress at the same
		// instant forever. Validate refuses such edges in files and
		// extraction does not make them, but a workload built in code
		// (or a wrong edge range) must not hang the replay.
		if e.OffsetNS > t.progress && t.progress < a.DemandNS {
			return false
		}
		if t.awaitOn != nil && e.OffsetNS >= t.awaitAt {
			// After the reply this task waits for (progress blocks).
			return false
		}
		if r.reschedPending && r.reschedHostWait && e.OffsetNS >= t.noPreemptEnd && s.now < r.reschedAt {
			// A reschedule sent from another CPU is held for a host
			// core (busyHostEnd): the vCPU is descheduled, its task
			// does nothing it could be seen doing until the host runs
			// it again and the IPI switches it out. Its demand still
			// passes (the trace's host stalls the estimator could not
			// see lie in the demand: this is where one falls), and the
			// edge fires when the task runs again.
			return true
		}
		if r.reschedPending && r.reschedOwn && e.OffsetNS >= t.noPreemptEnd {
			// The wakeup is a new system call: the return to user space
			// from the one that set TIF_NEED_RESCHED came first, and
			// switched. The edge fires when the task runs again.
			r.reschedPending = false
			s.preempt(r)
			return false
		}
		if e.Kind == EdgeFork && s.forkWaits(r, t, int(t.nextEdge)) {
			return false
		}
		idx := t.nextEdge
		t.nextEdge++
		t.noPreemptEnd = max(t.noPreemptEnd, e.OffsetNS+e.NoPreemptNS)
		if !s.cfg.ExitPreempt && s.forkWait.notify[idx] && a.End == EndExit {
			// From exit_notify to do_task_dead a child has no preemption
			// point (its trace shows it leaving in Z, not R): the parent
			// it woke waits for its exit.
			t.noPreemptEnd = max(t.noPreemptEnd, a.DemandNS)
		}
		s.fired[idx]++
		s.stats.EdgesFired++
		if e.Charged && !t.rt {
			// The kernel's update_curr the trace shows before this
			// waking (Edge.Charged).
			s.updateCurr(r)
		}
		wakee := s.tasks[e.Wakee]
		if s.forkWait.notify[idx] {
			s.forkWaitExit(t, r.cpu)
		}
		if e.Kind == EdgeReply {
			s.reply(t, wakee, r.cpu)
			continue
		}
		if s.reap.edge[idx] {
			s.syncWake = e.Sync
			s.childExit(t, wakee, r.cpu)
			s.syncWake = false
			continue
		}
		if !e.Causal {
			// A wakeup of a task that was already runnable in the trace:
			// try_to_wake_up finds nothing to do.
			s.stats.EdgesRedundant++
			continue
		}
		if e.Kind == EdgeFork {
			s.fork(r, t, wakee)
		} else {
			s.syncWake, s.racedWake = e.Sync, e.Raced
			s.deferEnq = s.wakeStallEnd(t, e)
			k := s.wake(wakee, e.WakeeAct, t, r.cpu)
			s.syncWake, s.racedWake, s.deferEnq = false, false, -1
			if e.Awaits && k >= 0 {
				s.awaitReply(t, wakee, k, e)
			}
			if e.Kind == EdgeMove && k >= 0 {
				wakee.moveTask, wakee.moveTo = t.id, e.Target
				if int(wakee.cpu) == r.cpu && r.curr == t {
					// stop_one_cpu: the waker waits for its stopper, which
					// preempts it at once (the trace's R+), and goes on only
					// once moved: no drawn resched delay, no further edge.
					s.preempt(r)
					return false
				}
			}
		}
	}
	return false
}

// sleepMidActivation: t, running on r, blocks (S) inside its activation,
// in a wait the trace's activations do not end at (an await point, a
// wait() for a child's exit); whoever ends the wait wakes it back into
// the same activation.
func (s *Sim) sleepMidActivation(r *rq, t *simTask) {
	s.takeSwitchCharge(r, t, true, 0)
	t.state = tsSleeping
	s.dequeue(r, t, true)
	s.schedule(r, "S")
}

// endActivation: the task's demand for this activation is done. It
// blocks (dequeue with DEQUEUE_SLEEP, then schedule()), exits, or, when
// a wakeup for its next activation already arrived, continues at once.
func (s *Sim) endActivation(r *rq, t *simTask) {
	s.releaseWakes(t, true)
	if t.moveTask >= 0 {
		s.stopperMove(r, t)
	}
	// The reply a waker awaits comes before this task blocks.
	s.releaseWaiters(t, t.act, false, r.cpu)
	a := &t.w.Activations[t.act]
	next := t.act + 1
	hasNext := int(next) < len(t.w.Activations)
	if s.reapWaitEnd(t, t.act) {
		// wait() with children left and no zombie: it sleeps until a
		// child exits (childExit), then ends the activation.
		t.waitEnd = true
		s.stats.ReapWaits++
		s.sleepMidActivation(r, t)
		return
	}
	if !hasNext {
		s.recordingDone(t)
	}
	if a.End == EndExit {
		late := s.cfg.ExitWakeLate
		if !late {
			// exit_notify wakes a parent waiting in wait() before
			// do_task_dead's switch: the child still holds its CPU, so a
			// parent placed there finds it busy (select_idle_sibling
			// looks for an idle CPU), and any reschedule its wakeup asks
			// for is the exit's own switch's (Sim.atRunOnEnd): there is no
			// preemption point left.
			t.noPreemptEnd = max(t.noPreemptEnd, a.DemandNS)
			s.emitExit(r, t)
			s.exitWakes(r, t)
		}
		t.state = tsDead
		s.dequeue(r, t, true)
		if late {
			s.emitExit(r, t)
		}
		s.schedule(r, exitState(a))
		// task_dead_fair, after the switch (finish_task_switch).
		if !t.rt {
			s.removeLoad(r, t, false)
		}
		if late {
			s.exitWakes(r, t)
		}
		return
	}
	if hasNext && !t.trig[next] && s.reapReady(t, next) {
		// A wait for any child with a zombie child at hand (do_wait
		// reaps it without sleeping).
		t.trig[next] = true
		s.stats.ReapsWithoutSleep++
	}
	if hasNext && t.trig[next] {
		// Its wakeup (a causal edge: arrivals are only scheduled once the
		// previous activation ended) came while it still ran.
		s.stats.ContinuedWithoutSleep++
		s.startActivation(t, next)
		s.skipWakeOverhead(t)
		s.armProgress(r)
		return
	}
	s.takeSwitchCharge(r, t, true, s.longChargeOf(t))
	t.state = tsSleeping
	s.dequeue(r, t, true)
	if hasNext && t.w.Activations[next].Cause == CauseArrival {
		s.scheduleArrival(t, next)
	}
	st := a.EndState
	if st == "" || st[0] == 'R' {
		st = "S"
	}
	s.schedule(r, st)
	if t.heldK == next {
		// The reply that came before the block (wake: isReply), now
		// that the task sleeps, from where its waker runs (or ran last).
		w := t.heldWaker
		s.wakingShown = t.heldRaced
		t.heldK, t.heldWaker, t.heldRaced = -1, nil, false
		s.heldWake = true
		s.wake(t, next, w, int(w.cpu))
		s.heldWake, s.wakingShown = false, false
	}
}

// exitWakes: t, exiting on r, counts its exit for the parent that waits
// for it (reap.go with --reap-any-child, forkwait.go) and wakes it if it
// sleeps on that count.
func (s *Sim) exitWakes(r *rq, t *simTask) {
	if s.reap.atExit[t.id] {
		s.childExit(t, s.tasks[s.reap.parent[t.id]], r.cpu)
	}
	s.forkWaitExit(t, r.cpu)
}

// takeActPrio gives t, not queued, the class and weight the trace shows
// it ran its current activation under (Activation.OwnPrio): a policy or
// nice change (sched_setscheduler, setpriority) between activations. A
// stopper stays what it is.
func (s *Sim) takeActPrio(t *simTask) {
	if t.act < 0 || int(t.act) >= len(t.w.Activations) || t.stop {
		return
	}
	a := &t.w.Activations[t.act]
	if !a.OwnPrio {
		return
	}
	rt, w := a.Prio < 100, weightOfPrio(a.Prio)
	t.prio = a.Prio
	if rt == t.rt && w == t.weight {
		return
	}
	if rt != t.rt {
		// switched_from_fair / switched_to_fair on the task's CPU: its
		// PELT contribution leaves that CPU's cfs_rq or joins it, its
		// vruntime made relative to min_vruntime (after place_entity) or
		// absolute again.
		r := s.cpus[t.cpu]
		s.updateRQLoad(r)
		if rt {
			t.updateAvg(s.now, 0, false)
			r.avg.detach(&t.avg, t.weight)
			if !s.eevdf {
				t.vruntime = max(t.vruntime, r.minVruntime-s.latencyNS/2) - r.minVruntime
			}
		} else {
			if !s.eevdf {
				t.vruntime += r.minVruntime
			}
			if t.avg.update(s.now, 0, 0, false, w, capacityScale) {
				t.ueUnchanged = false
			}
			r.avg.attach(&t.avg, w)
		}
	}
	if s.eevdf && !rt && !t.rt {
		// reweight_entity of a sleeping task: vlag is V − v, its lag
		// over its weight, so the lag kept scales by old/new weight
		// (eab03c23c2a1, v6.7; in the 6.6 stable series too).
		t.vlag = t.vlag * int64(t.weight) / int64(w)
	}
	t.rt, t.weight = rt, w
	s.stats.PrioChanges++
}

// stopperMove is migration_cpu_stop for an EdgeMove: the stopper st, on
// r, moves the task that asked (preempted by st, so queued on r) to
// st.moveTo. A task no longer queued there (the replay ran it elsewhere,
// or it blocked) stays: the kernel's stopper then finds it off its
// runqueue and leaves it too.
func (s *Sim) stopperMove(r *rq, st *simTask) {
	p := s.tasks[st.moveTask]
	dst := int(st.moveTo)
	st.moveTask = -1
	if p.state != tsQueued || int(p.cpu) != r.cpu || p.rt || p.delayed || dst < 0 || dst >= s.ncpu || dst == r.cpu || !p.allowed(dst) {
		return
	}
	defer s.endBalancing(s.balancingOn(r.cpu, st))
	s.migrateQueued(p, r, s.cpus[dst], MigrationSourceAffinity)
}

// preemptedBeforeBlock: t, on r, is done with its activation's demand
// and would now block, with a reschedule its own wakeup raised on r still
// pending (its drawn delay not yet over). The wakeup's system call
// returns to user space before t makes the call that blocks, and the
// return switches it out: t is preempted here, runnable, and blocks when
// it runs again. Not when the trace shows t ran on to its block with the
// reschedule pending (Edge.NoPreemptNS up to the activation's end: the
// block is in the same call), nor when t goes on into its next
// activation without sleeping.
func (s *Sim) preemptedBeforeBlock(r *rq, t *simTask) bool {
	a := &t.w.Activations[t.act]
	if !r.reschedPending || !r.reschedOwn || a.End != EndSleep || t.noPreemptEnd >= a.DemandNS {
		return false
	}
	next := t.act + 1
	return int(next) >= len(t.trig) || !t.trig[next]
}

// isReply: a wakeup of t by waker, for t's next activation, is the reply
// to t's request when t's current activation woke waker (the activation
// that, in the trace, blocked before this wakeup came: a causal wakeup
// always finds its wakee blocked). schbench's worker adds itself to the
// message thread's list, posts the message thread's futex and waits on
// its own; the message thread wakes the workers on its list. In the
// kernel the reply cannot overtake the request, and whether it overtakes
// the requester's block (then the requester's futex_wait returns at once,
// no wakeup) depends on how soon the replier runs, which in the trace
// was after the block. The replay keeps that order: a reply that, in the
// replay, comes while its requester is still running or runnable in the
// activation that sent the request is held until the requester blocks,
// and then wakes it (Stats.RepliesHeld). The test is structural, so a
// flow-control wakeup (a hackbench receiver making room for the sender
// whose write woke it) counts as a reply too. A wakeup with no request
// from its wakee (a producer's write to a consumer) stays pending as
// before: the consumer finds its data and does not sleep.
func (s *Sim) isReply(t, waker *simTask) bool {
	a := &t.w.Activations[t.act]
	for i := a.EdgeLo; i < a.EdgeHi; i++ {
		if s.w.Edges[i].Wakee == waker.id {
			return true
		}
	}
	return false
}

func (s *Sim) scheduleArrival(t *simTask, k int32) {
	a := &t.w.Activations[k]
	at := s.now + a.SleepNS
	relative := true
	switch {
	case s.cfg.Arrivals == ArrivalsAbsolute || k == 0 || t.id == s.recorder:
		at, relative = a.ReleaseNS, false
		if a.TickSoftIRQ && s.cfg.TickSoftIRQ {
			s.holdTick(t, s.nearestTick(a.ReleaseNS), at)
		}
	case a.TickSoftIRQ && s.cfg.TickSoftIRQ:
		if b, ok := s.onTickGrid(a); ok {
			at = b + max(a.ReleaseNS-s.nearestTick(a.ReleaseNS), 0)
			s.holdTick(t, b, at)
		}
	}
	if at < s.now {
		at = s.now
	}
	if relative {
		// (A tick-softirq arrival is no hrtimer: armTimer leaves it.)
		s.armTimer(t, k, at)
	}
	s.push(event{t: at, kind: evArrival, a: t.id, b: k})
}

func (s *Sim) startActivation(t *simTask, k int32) {
	t.waitEnd = false
	t.awaitOn, t.awaiting = nil, false
	t.act = k
	t.progress = 0
	t.nextEdge = t.w.Activations[k].EdgeLo
	t.nextStall = t.w.Activations[k].StallLo
	t.weighStall = t.w.Activations[k].StallLo
	t.noPreemptEnd = 0
}

// PendingEdges: where the wakees of pending edges were (Stats): still
// running their previous activation on the waker's CPU (an interrupt's
// CPU for an arrival) or another, queued there or on another, or
// anything else (asleep with an earlier activation still to come, not
// started, waiting for a reply). The replay runs the waker ahead of its
// wakee in all of them; where says how (FIDELITY.md round 92).
type PendingEdges struct {
	RunningHere int64 `json:"running_on_waker_cpu"`
	Running     int64 `json:"running_elsewhere"`
	QueuedHere  int64 `json:"queued_on_waker_cpu"`
	Queued      int64 `json:"queued_elsewhere"`
	Other       int64 `json:"other"`
}

// countPending books a pending edge of t's, fired on wakerCPU.
func (s *Sim) countPending(t *simTask, wakerCPU int) {
	p := s.stats.EdgesPendingBy
	if p == nil {
		p = &PendingEdges{}
		s.stats.EdgesPendingBy = p
	}
	here := int(t.cpu) == wakerCPU
	switch {
	case t.state == tsRunning && here:
		p.RunningHere++
	case t.state == tsRunning:
		p.Running++
	case t.state == tsQueued && here:
		p.QueuedHere++
	case t.state == tsQueued:
		p.Queued++
	default:
		p.Other++
	}
}

// wake is try_to_wake_up() for activation k of t, from waker (nil: an
// interrupt, timer or idle-context arrival) running on wakerCPU; a task's
// wakeup is first moved to t's next activation still waiting for one
// (wakeSlot), unless Config.PairedWakeups. Each
// activation has exactly one such wakeup (its cause in the trace); if it
// comes before t finished activation k-1 (the replay ran the waker
// faster), it is pending: t continues into k without sleeping, as a task
// finding its wake condition already true does; unless it is the reply
// to t's own request (isReply), which is held until t blocks. A task
// asleep inside activation k-1 (at an await point, or before a fork
// that waits for its children's exits) has not finished it either: the
// wakeup is pending, and the rest of k-1, its fork among it, runs first.
func (s *Sim) wake(t *simTask, k int32, waker *simTask, wakerCPU int) int32 {
	if waker != nil && !s.cfg.PairedWakeups {
		k = s.wakeSlot(t, k)
	}
	if int(k) >= len(t.trig) || t.trig[k] || t.state == tsDead {
		s.stats.EdgesRedundant++
		return -1
	}
	t.trig[k] = true
	if !(t.state == tsSleeping && t.act == k-1 && !t.awaiting && t.forkWaitNeed == 0) && !(t.state == tsNotStarted && k == 0) {
		if waker != nil && t.act == k-1 && (t.state == tsRunning || t.state == tsQueued) {
			// A reply to the wakee's own request, or a wakeup that in the
			// trace raced the wakee's block (Edge.Raced): held until it
			// blocks. A raced one only while the wakee runs: one that
			// finds it queued, woken and not yet run, is try_to_wake_up
			// on a TASK_RUNNING task, which writes no sched_waking and
			// does nothing: the wakee's activations merge, as for any
			// pending wakeup (FIDELITY.md round 114).
			raced := s.racedWake && t.heldK < 0 && t.state == tsRunning
			if raced || s.isReply(t, waker) && !s.replyFindsRunnable(t, wakerCPU) {
				t.trig[k] = false
				t.heldK, t.heldWaker, t.heldRaced = k, waker, raced
				if raced {
					s.stats.RacedHeld++
					s.emitWaking(t, waker, wakerCPU, int(t.cpu))
				} else {
					s.stats.RepliesHeld++
				}
				return k
			}
		}
		s.stats.EdgesPending++
		s.countPending(t, wakerCPU)
		return k
	}
	// Held for its waker's host stall (wakestall.go); not a wakeup that
	// changes the task's prio (takeActPrio comes before select_task_rq)
	// nor an EEVDF delayed task's requeue.
	if s.deferEnq >= 0 && waker != nil && !t.delayed && !(t.w.Activations[k].OwnPrio && t.w.Activations[k].Prio != t.prio) {
		s.holdWake(t, k, waker, wakerCPU, s.deferEnq)
		return k
	}
	s.startActivation(t, t.act+1)
	s.placeWoken(t, waker, wakerCPU)
	return k
}

// wakeSlot is the activation of t that a task's wakeup paired with
// activation k starts: the lowest one after t's current that waits for a
// task's wakeup (CauseWake), has not had one and is not held for a reply
// (heldK). k itself when k is not such an activation (the wakeup then
// finds its own, or nothing), when there is none, and for a parent that
// waits for any child (reap.go pairs its wakeups itself).
func (s *Sim) wakeSlot(t *simTask, k int32) int32 {
	if int(k) >= len(t.trig) || t.w.Activations[k].Cause != CauseWake || s.reap.exits[t.id] > 0 {
		return k
	}
	// wakeFrom: no activation below it (and after the current one) is
	// still free; activations only become triggered, so it only moves up.
	m := max(t.wakeFrom, t.act+1)
	for int(m) < len(t.trig) && (t.trig[m] || t.w.Activations[m].Cause != CauseWake) {
		m++
	}
	t.wakeFrom = m
	for ; int(m) < len(t.trig); m++ {
		if !t.trig[m] && m != t.heldK && t.w.Activations[m].Cause == CauseWake {
			return m
		}
	}
	return k
}

// placeWoken is the rest of try_to_wake_up for t, woken by waker (nil: an
// interrupt or timer) running on wakerCPU: select_task_rq, the enqueue
// and the wakeup preemption.
func (s *Sim) placeWoken(t *simTask, waker *simTask, wakerCPU int) {
	if t.delayed {
		s.requeueDelayed(t, waker, wakerCPU)
		return
	}
	s.takeActPrio(t)
	src, prev, cpu := s.selectWoken(t, waker, wakerCPU)
	s.queueWoken(t, waker, wakerCPU, src, prev, cpu)
}

// selectWoken is try_to_wake_up up to select_task_rq and set_task_cpu's
// record for t, woken by waker (nil: an interrupt or timer) running on
// wakerCPU: its sched_waking (unless written already), the CPU it goes
// to, and the sched_migrate_task when that is not prev, the CPU it slept
// on. src is the CPU the wakeup runs on (for an interrupt's the trace
// shows on another CPU, that one: irqRaisedCPU).
func (s *Sim) selectWoken(t *simTask, waker *simTask, wakerCPU int) (src, prev, cpu int) {
	prev = int(t.cpu)
	cpu = prev
	src = wakerCPU
	if waker == nil {
		src = s.arrivalCPU(t)
	}
	switch {
	case t.pinned >= 0:
		cpu = int(t.pinned)
	case t.nrAllowed == 1:
		// select_task_rq: a task allowed one CPU goes there, without
		// select_task_rq_fair (no record_wakee).
		cpu = t.onlyCPU()
	case t.rt:
		cpu = prev
	case s.wakingShown && (!s.cpusShareCache(src, prev) || prev != src && s.cpus[prev].nrRunning() == 0):
		// A released raced wakeup (wakingShown is set for those alone:
		// the waking, written when the edge fired, found the wakee
		// still on its CPU, p->on_cpu):
		// ttwu_queue_cond queues it on that CPU's wake list, without
		// select_task_rq (no record_wakee, no recent_used_cpu), when
		// the waker does not share its cache or that CPU has nothing
		// else to run.
		cpu = prev
	default:
		// record_wakee is select_task_rq_fair's (not called for a
		// real-time or pinned wakee) and runs on current: in interrupt
		// context the task interrupted, whose children inherit the flip
		// (hackbench's parent, flipping on softirq wakeups of rcu_preempt
		// while it forks, hands wake_wide's slave flips to its receivers;
		// FIDELITY.md rounds 36 and 83: the trace says which task that
		// was). wake_wide itself only matters for a task's wakeup: an
		// interrupt's is on the wakee's own CPU.
		cur := waker
		if cur == nil {
			cur = s.irqFlipOwner(t, src)
		}
		if cur != nil {
			s.recordWakee(cur, t)
		}
		cpu = s.selectTaskRqFair(t, prev, src, waker, false)
	}
	if !t.allowed(cpu) {
		cpu = s.selectFallbackRQ(t, prev)
	}
	// The records (and ttwu_stat's local or remote count) are where the
	// wakeup ran: for an interrupt's that the trace shows on another CPU,
	// there (irqRaisedCPU); so are the enqueue and the IPI (queueWoken).
	src = s.irqRaisedCPU(t, waker, src)
	if !s.wakingShown {
		s.emitWaking(t, waker, src, prev)
	}
	s.ttwuStat(src, cpu)
	if cpu != prev {
		s.stats.MigrationsWakeup++
		s.emitMigrate(t, prev, cpu, src, s.cpus[src].curr)
	}
	return src, prev, cpu
}

// queueWoken is the rest of try_to_wake_up for t, placed on cpu by
// selectWoken: the move from prev, the enqueue and the wakeup preemption.
func (s *Sim) queueWoken(t, waker *simTask, wakerCPU, src, prev, cpu int) {
	r := s.cpus[cpu]
	if cpu != prev {
		s.migrateSleeping(t, s.cpus[prev], r)
	}
	s.enqFlags, s.enqCPU = s.enqueueContext(t, waker, src, cpu), cpu
	if cpu != src && s.cpusShareCache(src, cpu) {
		s.enqOn = src
	}
	s.enqueue(r, t, enqWakeup)
	s.enqFlags, s.enqCPU, s.enqOn = 0, -1, -1
	s.noteWakeOnIdle(r)
	s.wakeupPreemptFrom(r, t, waker, wakerCPU, src)
}

// irqRaisedCPU is the CPU whose interrupt raises arrival t's wakeup (its
// sched_waking is written there), for the IPI it sends (src: where the
// replay ran the wakeup; a task's wakeup, waker not nil: src). With
// Config.IRQIPI an arrival the trace shows raised on another CPU
// (Activation.IRQCPUPlus1: RCU's grace-period kthread, woken from the
// softirq of the CPU that ended the grace period) reaches its CPU as an
// IPI from there although irq_cpu=own placed it as its own timer's: an
// idle target then waits for its host as for any remote wakeup
// (kickIdle), a busy one takes the IPI as from another vCPU
// (reschedAfter).
func (s *Sim) irqRaisedCPU(t, waker *simTask, src int) int {
	if waker != nil || !s.cfg.IRQIPI || s.cfg.IRQCPU || int(t.act) >= len(t.w.Activations) {
		return src
	}
	if c := int(t.w.Activations[t.act].IRQCPUPlus1) - 1; c >= 0 && c < len(s.cpus) {
		return c
	}
	return src
}

// arrivalIRQ is the interrupt context of the waking that starts t's
// current activation (Activation.IRQ; IRQNone for a task's wakeup).
func (s *Sim) arrivalIRQ(t *simTask) IRQContext {
	if a := currentArrival(t); a != nil {
		return a.IRQ
	}
	return IRQNone
}

// currentArrival is t's current activation when an interrupt, timer or
// idle-context arrival started it, else nil.
func currentArrival(t *simTask) *Activation {
	if t.act >= 0 && int(t.act) < len(t.w.Activations) {
		if a := &t.w.Activations[t.act]; a.Cause == CauseArrival {
			return a
		}
	}
	return nil
}

// enqueueContext is the common_flags of the context try_to_wake_up's
// enqueue of t on cpu runs in, as its update_curr's sched_stat_runtime
// records it: the target's hard IRQ when the waking ran on a CPU that
// shares no cache with it (ttwu_queue_cond: the wakelist IPI enqueues
// it there), else the waking's own (an arrival's interrupt; a task's
// wakeup none). Workload extraction reads the same rule back
// (irqenqueue.go).
func (s *Sim) enqueueContext(t, waker *simTask, src, cpu int) int64 {
	if cpu != src && !s.cpusShareCache(src, cpu) {
		return flagHardIRQ
	}
	if waker == nil {
		return int64(s.arrivalIRQ(t))
	}
	return 0
}

// arrivalCPU is where the interrupt that wakes t for its current
// activation runs: the CPU the trace shows it on when that was not the
// one t slept on (Activation.IRQCPUPlus1, with Config.IRQCPU), else t's
// own CPU (a timer fires where the task slept).
func (s *Sim) arrivalCPU(t *simTask) int {
	if s.cfg.IRQCPU && int(t.act) < len(t.w.Activations) {
		if c := int(t.w.Activations[t.act].IRQCPUPlus1) - 1; c >= 0 && c < len(s.cpus) {
			return c
		}
	}
	return int(t.cpu)
}

// ttwuStat is ttwu_stat()'s placement counts: src ran the wakeup, cpu
// is where the wakee went.
func (s *Sim) ttwuStat(src, cpu int) {
	if cpu == src {
		s.stats.TTWULocal++
		return
	}
	for _, sd := range s.domains(src) {
		if inSpan(sd.Span, cpu) {
			if s.stats.TTWUWakeRemote == nil {
				s.stats.TTWUWakeRemote = map[string]int64{}
			}
			s.stats.TTWUWakeRemote[sd.Name]++
			return
		}
	}
}

// wakeupPreemptFrom is wakeupPreempt for a wakeup raised by waker on
// wakerCPU, or (waker nil) by an interrupt on src: where it was raised
// picks the resched delay's pool and whether it waits for a stall.
func (s *Sim) wakeupPreemptFrom(r *rq, t, waker *simTask, wakerCPU, src int) {
	if waker != nil {
		s.wakerCPU1 = wakerCPU + 1
	} else {
		s.irqCPU1 = src + 1
	}
	s.wakeupPreempt(r, t)
	s.wakerCPU1, s.irqCPU1 = 0, 0
}

// fork is wake_up_new_task() for child, started by parent running on r.
func (s *Sim) fork(r *rq, parent, child *simTask) {
	if child.state != tsNotStarted || child.trig[0] {
		s.stats.EdgesRedundant++
		return
	}
	child.trig[0] = true
	// dup_task_struct copies the parent's wakee_flips, their decay stamp
	// and last_wakee, and sched_fork leaves them: a child of a one-to-many
	// waker starts as one, which is what lets wake_wide see hackbench's
	// wakees as flipping.
	child.wakeeFlips, child.wakeeFlipTS, child.lastWakee = parent.wakeeFlips, parent.wakeeFlipTS, parent.lastWakee
	// wake_up_new_task: recent_used_cpu is the CPU the child was forked
	// on (the replay's, not the trace's).
	child.recentUsedCPU = int32(r.cpu)
	s.startActivation(child, 0)
	s.takeActPrio(child)
	// task_fork_fair's update_curr on the parent's CPU, gone with
	// c40dd90ac045 (v6.12). Under EEVDF it ends with the reschedule rule,
	// the child not yet counted; its TIF_NEED_RESCHED is acted on at the
	// return from fork, after the child's enqueue.
	s.chargeCurr(r, !s.knobs.ForkHalfDeadline)
	forkResched := s.eevdf && !s.knobs.ForkHalfDeadline && s.eevdfReschedCurr(r, r.nrCFS+r.nrDelayed)
	cpu := r.cpu
	switch {
	case child.pinned >= 0:
		cpu = int(child.pinned)
	case child.nrAllowed == 1:
		cpu = child.onlyCPU()
	case !child.rt:
		child.cpu = int32(r.cpu)
		cpu = s.selectTaskRqFair(child, r.cpu, r.cpu, parent, true)
	}
	if !child.allowed(cpu) {
		cpu = s.selectFallbackRQ(child, r.cpu)
	}
	child.cpu = int32(cpu)
	// task_fork_fair: the child starts from the parent's vruntime,
	// relative to the parent's queue. Under CFS (v6.1) it is placed
	// there too, before the CPU is chosen: START_DEBIT puts it one
	// virtual slice (of the forking CPU's queue, with the child added)
	// after that queue's min_vruntime, and not before the parent; the
	// enqueue on the chosen CPU only adds that CPU's min_vruntime.
	child.vruntime = parent.vruntime - r.minVruntime
	if !s.eevdf {
		v := r.minVruntime + s.schedSlice(r, child, false)*capacityScale/int64(child.weight)
		child.vruntime = max(parent.vruntime, v) - r.minVruntime
	}
	child.vlag = 0
	s.initTaskPELT(child, s.cpus[cpu])
	s.emitFork(r, parent, child)
	if cpu != r.cpu {
		// wake_up_new_task places the child with __set_task_cpu, which
		// traces no sched_migrate_task: counted, not emitted.
		s.stats.MigrationsFork++
	}
	dst := s.cpus[cpu]
	if cpu != r.cpu {
		// wake_up_new_task takes the child's queue lock from the
		// parent's CPU: the enqueue's update there is written here.
		s.enqCPU, s.enqOn = cpu, r.cpu
	}
	s.enqueue(dst, child, enqNew)
	s.enqCPU, s.enqOn = -1, -1
	s.emitWakeupNew(r, parent, child, cpu)
	if forkResched && r.curr == parent {
		// A reschedule whose pick is the parent again switches nothing;
		// an RT child on this CPU is picked before it.
		if dst == r && child.rt || s.eevdfPick(r) != parent {
			s.tickResched(r, 0)
		}
		if dst == r {
			// check_preempt_wakeup returns on need_resched.
			r.enqResched = false
			return
		}
	}
	s.forking = true
	s.wakeupPreempt(dst, child)
	s.forking = false
}

// TunableFactor is sched_update_scaling's log factor for ncpu CPUs, 1 +
// ilog2(min(ncpu, 8)): the scheduler's latency, granularities and (under
// EEVDF) base slice are their defaults times it.
func TunableFactor(ncpu int) int64 {
	f := int64(1)
	for n := min(ncpu, 8); n > 1; n >>= 1 {
		f++
	}
	return f
}

// startPELTWindowNS is the span of the trace from its start over which a
// task already running or runnable then has its running and runnable
// shares taken (startPELT): about PELT's reach (a 32 ms half-life: 64 ms
// hold three quarters of an average's weight).
const startPELTWindowNS = 64_000_000

// startPELT gives t, running or runnable at the trace start, the PELT
// averages the kernel's would have had: the trace cannot show its past,
// so its first startPELTWindowNS stand for it: runnable from each
// activation's release to its block (to the trace's end or the task's
// exit for an activation that ends so), running its demand spread evenly
// over that span (a task time-sharing a CPU runs a share of it). A task
// that is hardly ever runnable no longer starts with its whole weight on
// its CPU: a nice -20 kworker so started carried 88,761 of load on a
// mostly idle CPU for a hundred milliseconds, and every placement weighing
// that CPU's load (wake_affine_weight, find_idlest_group, the balancer)
// avoided it. A workload without the trace's span (one made by hand or by
// a generator: EndNS not after StartNS), or Config.StartPELTHeavy, keeps
// the old start: load at the full weight, util and runnable at half the
// capacity.
func (s *Sim) startPELT(t *simTask) {
	heavy := s.cfg.StartPELTHeavy || s.w.EndNS <= s.w.StartNS
	if heavy {
		t.avg.loadAvg, t.avg.utilAvg, t.avg.runnableAvg = t.weight, capacityScale/2, capacityScale/2
	} else {
		t.avg.runnableAvg, t.avg.utilAvg = s.startShares(t)
		t.avg.loadAvg = t.weight * t.avg.runnableAvg / capacityScale
	}
	s.stats.StartPELTTasks++
	s.stats.StartPELTWeight += int64(t.weight)
	s.stats.StartPELTLoad += int64(t.avg.loadAvg)
	s.stats.StartPELTHeavy = s.stats.StartPELTHeavy || heavy
}

// startShares is t's runnable and running shares (of capacityScale) of
// the trace's first startPELTWindowNS, for startPELT.
func (s *Sim) startShares(t *simTask) (runnable, running uint64) {
	from, to := s.w.StartNS, min(s.w.StartNS+startPELTWindowNS, s.w.EndNS)
	acts := t.w.Activations
	var rnbl, run int64
	for k := range acts {
		a := &acts[k]
		if a.ReleaseNS >= to {
			break
		}
		end := a.ReleaseNS + a.DemandNS
		switch {
		case k+1 < len(acts):
			end = max(end, acts[k+1].ReleaseNS-acts[k+1].SleepNS)
		case a.End == EndTraceEnd:
			end = max(end, s.w.EndNS)
		case a.End == EndExit && t.w.ExitNS > 0:
			end = max(end, t.w.ExitNS)
		}
		in := min(end, to) - max(a.ReleaseNS, from)
		if in <= 0 {
			continue
		}
		rnbl += in
		if span := end - a.ReleaseNS; span > 0 && a.DemandNS > 0 {
			// demand × in / span, in 128 bits: in ≤ span.
			run += scaleNS(a.DemandNS, in, span)
		}
	}
	span := uint64(to - from)
	return min(uint64(rnbl)*capacityScale/span, capacityScale), min(uint64(run)*capacityScale/span, capacityScale)
}

// initTaskPELT is init_entity_runnable_average + post_init_entity_util_avg
// (§2.4): full load, util half of the spare capacity of the CPU (scaled by
// the task's share of its load from v6.10; before, the share was taken
// with the 64-bit kernel's scaled weight, 1024 times too large, so the
// half always applied).
func (s *Sim) initTaskPELT(t *simTask, r *rq) {
	t.avg = avg{lastUpdate: s.now}
	t.avg.loadAvg = t.weight
	ua := initUtil(r.avg.utilAvg, r.avg.loadAvg, t.weight, s.knobs.InitUtilTrueWeight)
	t.avg.utilAvg = ua
	t.avg.runnableAvg = ua
}

// initUtil is post_init_entity_util_avg's util_avg (and runnable_avg) of
// a task of weight w starting on a CFS run queue with util_avg u and
// load_avg load: half the spare capacity, or less by the task's share of
// the queue's load (trueWeight: weighed as v6.10 does; before, with the
// scaled weight). The engine's and the fork shadow's.
func initUtil(u, load, w uint64, trueWeight bool) uint64 {
	capc := uint64(capacityScale)
	if u >= capc {
		return 0
	}
	half := (capc - u) / 2
	if u == 0 {
		return half
	}
	if !trueWeight {
		w <<= 10 // se->load.weight: scale_load() on 64-bit
	}
	return min(u*w/(load+1), half)
}

// deadline stops t at its recorded exit time (Config.ExitDeadlines) if
// the replay has not run it to its exit yet: the task exits now, from
// wherever it is (running, queued, asleep or not yet forked); the demand
// left in its current and later activations is cut (simTask.cutNS) and
// so are the edges of those activations before the final one (edgeCut:
// a wakeup the stopped work would have sent); the final activation's
// edges, the exit's own wakeups (a parent waiting in wait()), fire now.
// A fork edge is never fired this way: its child, never started, is
// stopped with it.
func (s *Sim) deadline(t *simTask) {
	if t.state == tsDead || t.spinUntil > 0 {
		// A spinner running on ends its run itself (runOn).
		return
	}
	r := s.cpus[t.cpu]
	if t.state == tsRunning {
		s.updateCurr(r)
	}
	// The wakeups it made are queued before it stops.
	s.releaseWakes(t, true)
	// Stopped for good: whoever awaits its reply is released, and its
	// own wait ends.
	s.releaseWaiters(t, 0, true, int(t.cpu))
	t.awaitOn, t.awaiting = nil, false
	acts := t.w.Activations
	last := int32(len(acts) - 1)
	k, next := t.act, int32(-1)
	if k < 0 {
		k = 0
	}
	var cut int64
	for j := k; j <= last; j++ {
		d := acts[j].DemandNS
		lo := acts[j].EdgeLo
		if j == t.act {
			d -= t.progress
			lo = t.nextEdge
		}
		cut += d
		if j == last {
			next = lo
			break
		}
		for i := lo; i < acts[j].EdgeHi; i++ {
			s.edgeCut[i] = true
			s.stats.EdgesCut++
		}
	}
	switch t.state {
	case tsRunning, tsQueued:
		t.state = tsDead
		s.dequeue(r, t, true)
		s.emitExit(r, t)
		if r.curr == t {
			s.schedule(r, exitState(&acts[last]))
		}
		if !t.rt {
			s.removeLoad(r, t, false)
		}
	case tsSleeping:
		t.state = tsDead
		if t.delayed {
			s.finishDelayed(r, t)
		}
		if !t.rt {
			s.removeLoad(r, t, false)
		}
		s.emitExit(r, t)
	default:
		t.state = tsDead
	}
	t.cut, t.cutNS = true, cut
	s.recordingDone(t)
	s.stats.DeadlineCuts++
	s.stats.DeadlineCutNS += cut
	for i := next; next >= 0 && i < acts[last].EdgeHi; i++ {
		e := &s.w.Edges[i]
		wakee := s.tasks[e.Wakee]
		if s.reap.edge[i] {
			s.fired[i]++
			s.stats.EdgesFired++
			s.childExit(t, wakee, int(t.cpu))
			continue
		}
		if e.Kind == EdgeFork || !e.Causal {
			if e.Kind == EdgeFork && e.Causal {
				s.deadline(wakee)
			}
			s.edgeCut[i] = true
			s.stats.EdgesCut++
			continue
		}
		s.fired[i]++
		s.stats.EdgesFired++
		s.wake(wakee, e.WakeeAct, t, int(t.cpu))
	}
	if s.reap.atExit[t.id] {
		s.childExit(t, s.tasks[s.reap.parent[t.id]], int(t.cpu))
	}
	s.forkWaitExit(t, int(t.cpu))
}

// checkInvariants verifies what every replay must satisfy: each task ran
// exactly its demand, every edge and arrival fired once, every activation
// ran. With Config.ExitDeadlines a task stopped at its exit time ran its
// demand less what was cut (simTask.cutNS), an edge its stop cut never
// fired, and an arrival of an activation after the one it was stopped in
// fired at most once.
func (s *Sim) checkInvariants() error {
	for i, n := range s.fired {
		if n == 0 && s.edgeCut[i] {
			continue
		}
		if n != 1 {
			e := s.w.Edges[i]
			return fmt.Errorf("whatif invariant: edge %d (%s %d->%d) fired %d times", i, e.Kind, s.w.Tasks[e.Waker].TID, s.w.Tasks[e.Wakee].TID, n)
		}
	}
	for ti, t := range s.tasks {
		var demand int64
		for k, a := range t.w.Activations {
			demand += a.DemandNS
			want := int32(0)
			if a.Cause == CauseArrival {
				want = 1
			}
			got := s.arrivals[s.actBase[ti]+int32(k)]
			if t.cut && int32(k) > t.act && got <= want {
				continue
			}
			if got != want {
				return fmt.Errorf("whatif invariant: task %d activation %d: arrival fired %d times, want %d", t.w.TID, k, got, want)
			}
		}
		if len(t.w.Activations) > 0 && int(t.act) != len(t.w.Activations)-1 && !t.cut {
			return fmt.Errorf("whatif invariant: task %d (%s) reached activation %d of %d", t.w.TID, t.w.Comm, t.act, len(t.w.Activations))
		}
		if t.runTime+t.cutNS+t.skippedNS+t.stallCutNS != demand {
			return fmt.Errorf("whatif invariant: task %d (%s) ran %d ns, was cut %d ns, skipped %d ns of wake overhead and %d ns of host stalls; its demand is %d ns", t.w.TID, t.w.Comm, t.runTime, t.cutNS, t.skippedNS, t.stallCutNS, demand)
		}
		if t.state == tsRunning || t.state == tsQueued {
			return fmt.Errorf("whatif invariant: task %d still runnable at the end", t.w.TID)
		}
		if t.forkExits != s.forkWait.exits[ti] {
			return fmt.Errorf("whatif invariant: task %d (%s) counted %d child exits for its forks, its children have %d", t.w.TID, t.w.Comm, t.forkExits, s.forkWait.exits[ti])
		}
		if t.childExits != s.reap.exits[ti] {
			return fmt.Errorf("whatif invariant: task %d (%s) saw %d child exits, its children have %d", t.w.TID, t.w.Comm, t.childExits, s.reap.exits[ti])
		}
	}
	return nil
}

func (s *Sim) fail(format string, a ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("whatif: internal error at %d ns: "+format, append([]any{s.now}, a...)...)
	}
}

// exitState is the prev_state an exiting task's last switch-out shows:
// the trace's, Z for a process its parent has yet to reap, X for one
// reaped at once (a thread, or a parent ignoring SIGCHLD); X where the
// trace did not show the exit.
func exitState(a *Activation) string {
	if a.End == EndExit && a.EndState != "" && (a.EndState[0] == 'Z' || a.EndState[0] == 'X') {
		return a.EndState[:1]
	}
	return "X"
}
