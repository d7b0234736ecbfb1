// Package whatif replays the workload a scheduler trace shows through a
// discrete-event model of the Linux scheduler (CFS run queues, PELT,
// select_task_rq_fair wakeup placement, periodic/newly-idle/nohz load
// balancing with a swappable calculate_imbalance policy) and writes the
// simulated schedule as a timeline, so the same analysis measures observed
// and simulated schedules. The design follows
// ../shared/design/kernel-lb.md; README.md in this directory says what is
// modelled and what is not.
package whatif

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// Cause says what started an activation.
type Cause uint8

const (
	// CauseStart: the task was running or runnable when the trace began.
	CauseStart Cause = iota
	// CauseFork: the first activation of a task forked in the trace
	// (sched_wakeup_new); started by a fork edge.
	CauseFork
	// CauseWake: woken by another task (a wake edge at the waker's
	// progress point; causal).
	CauseWake
	// CauseArrival: woken from interrupt, softirq (timers) or idle context,
	// or by nobody the trace shows: replayed as an arrival.
	CauseArrival
)

var causeNames = []string{"start", "fork", "wake", "arrival"}

// IRQContext is the interrupt context a waking ran in, as the trace's
// common_flags bit of it (include/linux/trace_events.h): the values are
// those bits, so the replay writes them back as they were read.
type IRQContext uint8

const (
	IRQNone IRQContext = 0
	IRQHard IRQContext = flagHardIRQ
	IRQSoft IRQContext = flagSoftIRQ
	IRQNMI  IRQContext = flagNMI
)

// irqContextOf is the innermost context in common_flags: an NMI can
// interrupt a hard IRQ, and a hard IRQ a softirq (both bits set).
func irqContextOf(flags int64) IRQContext {
	switch {
	case flags&flagNMI != 0:
		return IRQNMI
	case flags&flagHardIRQ != 0:
		return IRQHard
	case flags&flagSoftIRQ != 0:
		return IRQSoft
	}
	return IRQNone
}

// String is the workload file's irq_context value ("" for IRQNone).
func (c IRQContext) String() string {
	switch c {
	case IRQHard:
		return "hardirq"
	case IRQSoft:
		return "softirq"
	case IRQNMI:
		return "nmi"
	case IRQNone:
		return ""
	}
	return fmt.Sprintf("IRQContext(%#x)", uint8(c))
}

func parseIRQContext(s string) (IRQContext, error) {
	for _, c := range []IRQContext{IRQNone, IRQHard, IRQSoft, IRQNMI} {
		if c.String() == s {
			return c, nil
		}
	}
	return IRQNone, fmt.Errorf("unknown irq_context %q (hardirq, softirq, nmi or null)", s)
}

func (c Cause) String() string { return causeNames[c] }

// End says how an activation ended.
type End uint8

const (
	// EndSleep: switched out blocked (S, D, I, ...).
	EndSleep End = iota
	// EndExit: the task exited.
	EndExit
	// EndTraceEnd: the trace ended while the activation was running or
	// runnable.
	EndTraceEnd
)

var endNames = []string{"sleep", "exit", "trace_end"}

func (e End) String() string { return endNames[e] }

// EdgeKind distinguishes wake edges.
type EdgeKind uint8

const (
	// EdgeWake is a task-to-task wakeup (sched_waking from task context).
	EdgeWake EdgeKind = iota
	// EdgeFork is a fork (sched_wakeup_new): the parent starts the child.
	EdgeFork
	// EdgeReply is a reply the trace hid (await.go), added by the replay
	// with Config.ReplyAwaits, never in a workload file: the point of the
	// waker's activation where it answers the task awaiting it (Wakee,
	// whose Awaits edge started this activation), estimated from the
	// pair's replies the trace shows. Never causal: it wakes the wakee only
	// if it sleeps at its await point.
	EdgeReply
	// EdgeMove is a wakeup of the waker's own CPU's stopper (migration/N)
	// after which the stopper moved the waker, preempted and queued, to
	// CPU Target: sched_setaffinity or sched_exec (stop_one_cpu with
	// migration_cpu_stop). perf record hops through every CPU this way as
	// it opens its events, and sits on the last one while the workload
	// runs; the workload's first task moves where sched_exec sent it. The
	// replay wakes the stopper as for EdgeWake (the waker preempted at
	// once: it waits for the stopper), and the stopper, at the end of the
	// activation this edge woke, moves the waker to Target if it is still
	// queued on the stopper's CPU. Target is the trace's: sched_exec's
	// choice (find_idlest_cpu with SD_BALANCE_EXEC, at the trace's start)
	// is taken as recorded, like a task's starting CPU.
	EdgeMove
	numEdgeKinds
)

var edgeKindNames = []string{"wake", "fork", "reply", "move"}

func (k EdgeKind) String() string {
	if int(k) < len(edgeKindNames) {
		return edgeKindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// Task is one thread of the workload.
type Task struct {
	// TID is the thread's id; PID its thread group's (the process), from
	// the trace's own-context records (perf's sample pid), -1 if the
	// trace does not say (no switch-out of it, or a format without it).
	TID, PID int32
	Comm     string
	// Prio is the kernel prio (120 = nice 0; below 100: real-time).
	Prio int32
	// Pinned is the CPU a per-CPU kernel thread is bound to, -1 if the
	// task may run anywhere. Inferred from the name (see PinnedCPUOf).
	Pinned int32
	// Allowed is the task's CPU affinity (p->cpus_ptr), sorted; nil: every
	// CPU. A trace does not record affinity: it comes from the recorded
	// command line (taskset, numactl) or the user (affinity.go). Unlike a
	// per-CPU kthread's Pinned, a task restricted so is balanced by the
	// kernel's affinity rules (LBF_SOME_PINNED, LBF_DST_PINNED, the
	// group's imbalance flag).
	Allowed []int
	// Command: the task belongs to the recorded command's process tree
	// (perf's workload child, named perf-exec until it execs, and every
	// task the trace shows it and its descendants forking).
	Command bool
	// StartCPU is where the task was first seen: the CPU it ran or was
	// queued on at the start of the trace, the target_cpu of its first
	// wakeup (its previous CPU is not in the trace), or for a forked task
	// the parent's CPU.
	StartCPU int32
	// Forked is true when the trace shows the task's creation.
	Forked bool
	// StartRunning: the task was running on StartCPU when the trace
	// began (its first activation has CauseStart); otherwise a CauseStart
	// activation was queued there.
	StartRunning bool
	// ExitNS is when the task exited in the trace (its switch-out in
	// state X/Z); 0 if it did not exit there. A replay with
	// Config.ExitDeadlines stops the task's work at this time.
	ExitNS      int64
	Activations []Activation
}

// Nice is the nice value from Prio (0 for real-time tasks, which the model
// treats as SCHED_FIFO).
func (t *Task) Nice() int { return niceOf(t.Prio) }

// RT reports a real-time task (prio < 100).
func (t *Task) RT() bool { return t.Prio < 100 }

// DemandNS is the CPU time all its activations ask for, at capacity 1024.
func (t *Task) DemandNS() int64 {
	var d int64
	for _, a := range t.Activations {
		d += a.DemandNS
	}
	return d
}

// maxPrio is the largest kernel prio (nice 19).
const maxPrio = 139

func niceOf(prio int32) int {
	if prio < 100 || prio > maxPrio {
		return 0
	}
	return int(prio) - 120
}

// Activation is one stretch of a task between becoming runnable and
// blocking: preemptions (switch-out in state R/R+) do not end it.
type Activation struct {
	// The fields the replay reads at every wakeup and switch come first,
	// and the order packs the struct into 72 bytes (88 before): a large
	// trace's workload is that much smaller in memory.

	// DemandNS is the CPU time it ran, scaled to capacity 1024
	// (run time × capacity_orig / 1024 of each CPU it ran on).
	DemandNS int64
	// EdgeLo, EdgeHi index Workload.Edges issued during this activation
	// (sorted by offset).
	EdgeLo, EdgeHi int32
	// StallLo, StallHi index Workload.HostStalls inside this activation's
	// demand (sorted by offset).
	StallLo, StallHi int32
	// CPU is where it first ran in the trace (-1 if it never ran).
	CPU int32
	// Prio, OwnPrio: the prio the task ran under in this activation (the
	// prev_prio of its switch-outs, the one it ran under longest), when
	// the trace shows one (OwnPrio). A task's policy can change
	// (sched_setscheduler: stress-ng's cyclic stressor runs its first
	// activations under CFS and the rest SCHED_FIFO); the replay takes an
	// activation's class and weight when it wakes the task for it (a task
	// going on without sleeping keeps its class until its next wakeup).
	// Without OwnPrio (older workload files) the task's Prio holds.
	Prio    int32
	OwnPrio bool
	Cause   Cause
	End     End
	// TickSoftIRQ: an arrival woken by the tick's softirq: its waking ran
	// in softirq context (the trace's common_flags) shortly after a tick
	// (tickSoftIRQ). That is a timer-wheel expiry: such timers count
	// jiffies, and their softirq runs as the tick's interrupt returns,
	// before the reschedule the tick may have asked for. With
	// Config.TickSoftIRQ (off by default) the replay fires them on its
	// own tick grid (Sim.onTickGrid), not a sleep's length after the
	// block.
	TickSoftIRQ bool
	// IRQ: the interrupt context an arrival's waking ran in (the trace's
	// common_flags, the innermost of NMI, hard IRQ and softirq); IRQNone
	// for a task's waking, one from the idle task, or a trace that does
	// not say. The replay writes the waking so: in that context, as the
	// task it interrupted (common_pid), and the enqueue's update_curr
	// record that follows on the same CPU too.
	IRQ IRQContext
	// Untraced: the trace recorded neither the waking nor the switch-in
	// that started this arrival (a kernel that leaves switches out of
	// idle untraced, and the idle task's wakeups with them; extraction
	// released it when its run began, the latest its wakeup can have
	// been). The replay writes both; the measure `--validate` compares
	// leaves its wakeup out, as the trace's has none.
	Untraced bool
	// IRQCPUPlus1: an arrival whose waking ran in interrupt context on
	// another CPU than the one the task slept on (the trace's
	// sched_waking: the CPU it is written on against its target_cpu, the
	// task's CPU then): that CPU + 1. RCU's grace-period kthread is woken
	// so, from the softirq of whichever CPU ended the grace period, and
	// select_task_rq_fair then weighs that CPU (wake_affine) against the
	// one it slept on. 0: the interrupt ran where the task slept (its
	// own timer's), which the replay assumes for every other arrival.
	// An int16 (MaxCPUs fits) so that IRQ fits in the 72 bytes.
	IRQCPUPlus1 int16
	// ReleaseNS is when it became runnable in the trace (the wakeup, the
	// fork, or the trace start).
	ReleaseNS int64
	// SleepNS is the time from the previous activation's end (block) to
	// ReleaseNS; 0 for the first activation.
	SleepNS int64
	// EndState is the prev_state letters of the blocking switch-out.
	EndState string
}

// Edge is a wakeup or fork issued by a task at a point of its own progress
// (Offset ns of CPU demand into its activation WakerAct). When the waker
// reaches that point in the replay the edge fires: if Wakee is blocked
// before activation WakeeAct it starts it; if it already started it the
// edge is redundant (a second wakeup of a runnable task, as in the
// kernel); if the wakee has not yet blocked, the wakeup is pending and the
// wakee continues without sleeping.
type Edge struct {
	// (Fields ordered so that an Edge fills one 64-byte cache line.)
	Kind EdgeKind
	// Causal: this wakeup started activation WakeeAct (the first wakeup
	// after the wakee blocked). Other edges woke a task already runnable
	// and do nothing in the replay.
	Causal          bool
	Waker, WakerAct int32 // task index, activation index
	OffsetNS        int64
	Wakee, WakeeAct int32
	TimeNS          int64 // when it happened in the trace
	// NoPreemptNS > 0: this wakeup preempted its waker on the waker's own
	// CPU in the trace (the wakee was placed there and switched in when
	// the waker was switched out runnable, with no switch between), and
	// the waker ran on for NoPreemptNS of demand after it before that
	// switch: with TIF_NEED_RESCHED set, so without a preemption point
	// (a wake_up loop under a wait-queue lock, the rest of a system
	// call). The replay does not preempt the waker inside
	// [OffsetNS, OffsetNS+NoPreemptNS) of its activation either.
	NoPreemptNS      int64
	WakerCPU, Target int32 // the CPU it fired on and the target_cpu the kernel chose
	// Sync: inferred WF_SYNC (the waker left its CPU, blocking or
	// preempted, within syncWindowNS of this wakeup with no switch in
	// between: what the flag asserts), unless the wakee's wakeups show
	// placements WF_SYNC would not have made more often than ones it
	// would (extractor.notSync: a futex wake whose waker blocks at once
	// looks synchronous but is not), or stays on a busy previous CPU
	// where wake_wide() is false more than a few times
	// (flipFit.syncDenied); also every wakeup of a wakee the
	// trace shows pulled as only WF_SYNC pulls, and of an exclusive pair
	// most of whose wakeups left at the trace's own pace (wfsync.go).
	// The trace has no wake flags.
	Sync bool
	// Awaits: the waker needs its wakee's reply to go on (await.go). In
	// the trace the wakee preempted the waker at this wakeup and ended
	// its activation before the waker ran again, so the reply found the
	// waker runnable and left no wakeup; and when this pair's wakeups do
	// not preempt, the waker blocks right after and the wakee's reply
	// wakes it. With Config.ReplyAwaits the replay makes the waker wait
	// for that reply at its preemption point (OffsetNS+NoPreemptNS).
	Awaits bool
	// Charged: the trace shows an update_curr of the waker at most
	// chargedWindowNS before this waking (a sched_stat_runtime in its own
	// context on its CPU, no switch between) that no path the model has
	// explains (extractor.ownUpd: not a tick's, not a local enqueue's
	// after a waking of its own; a fork's wakeup_new, traced after its
	// enqueue, is never Charged). The kernel runs update_curr from paths
	// the model does not: the exit path before it wakes the parent,
	// task_sched_runtime for a CPU-time clock. A delayed wakee's requeue
	// takes its lag against the running task's vruntime as last updated
	// (requeue_delayed_entity has no update_curr of its own), so the
	// replay updates the waker there too (Sim.fireDue).
	Charged bool
	// Raced: this wakeup came while its wakee was still on its CPU,
	// blocking (its sched_waking before its switch-out in S or D): the
	// kernel's try_to_wake_up waited for the switch and queued it again at
	// once (extractor.wakeRaced). The replay, finding the wakee still
	// running at this edge, holds the wakeup until it blocks and wakes it
	// then, rather than letting it run on without sleeping (one that finds
	// it queued is a no-op, as try_to_wake_up on a runnable task is).
	Raced bool
	// EnqueueAfterStall: the waker's vCPU was descheduled inside this
	// try_to_wake_up: the trace shows a host stall of the waker ending at
	// the enqueue's first record (the wakee's sleep statistics, or the
	// target's update_curr, in the waker's context), right after the
	// waking or its migration. The wakee was queued only after the stall,
	// its latency counting from the waking (wakestall.go).
	EnqueueAfterStall bool
}

// raceWindowNS: a waking of a running task this soon before its
// switch-out asleep can have raced its schedule() (wakeRaced): the kernel
// dequeues the task a little before the switch records it (µs; 0–104 µs
// on the guests' emulated vCPUs, guest-D and guest-P schbench). A waking
// long before that block is one the task took without blocking
// (ttwu_runnable), and a switch-in without a waking after the block is
// then something else: a pending signal keeps the task queued while its
// switch-out still records S (guest-D schbench's workers: wakings 7–12
// ms before such blocks), or records the trace lost.
const raceWindowNS = 200000

// chargedWindowNS: a waker's update_curr this soon before its waking, no
// switch between, is one the replay makes at the waking (Edge.Charged):
// a few µs of kernel code on this machine's vCPUs (the exit path's, 3–10
// µs on the 6.18 fork recording), tens of µs on the guests' emulated ones.
const chargedWindowNS = 50000

// syncWindowNS: a waker switched out this soon after its wakeup, on the
// same CPU with no other switch between, is taken as a WF_SYNC waker.
const syncWindowNS = 50000

// Workload is what a trace shows about the work, independent of where and
// when the scheduler ran it.
type Workload struct {
	StartNS, EndNS int64
	Tasks          []Task
	// Edges sorted by (Waker, WakerAct, OffsetNS, TimeNS).
	Edges []Edge
	// IdleWakeNS are the observed delays from a wakeup to the switch-in
	// when the target CPU was idle (the idle-exit and IPI latency of the
	// machine), sorted; the simulator samples from them.
	IdleWakeNS []int64
	// IdleWakeLocalNS: the subset of IdleWakeNS whose wakeup ran on the
	// idle CPU itself (its timer or an interrupt it took: no IPI, no wait
	// for a host core), sorted. With a StallModel that measured the
	// host's cores, the replay draws such idle exits from it, and those
	// raised elsewhere from IdleWakeRemoteNS plus the wait for a host
	// core (noise.go, hostEnd).
	IdleWakeLocalNS []int64
	// IdleWakeRemoteNS: those raised on another CPU while at most
	// hostUncontended CPUs were busy (the IPI and idle exit without a
	// wait for a host core), sorted.
	IdleWakeRemoteNS []int64
	// IdleWakeForkNS: the subset of IdleWakeNS whose wakeup was a fork's
	// (sched_wakeup_new), sorted. Its path differs from a task's wakeup:
	// wake_up_new_task enqueues the child itself and traces after the
	// enqueue, where try_to_wake_up traces sched_waking before
	// select_task_rq and, onto an idle CPU, leaves the enqueue to the
	// target's wake-list IPI; the trace's fork idle exits are the shorter
	// (the 26 two-vCPU hackbench recordings: 123 µs at the median against
	// 196 µs for a task's wakeup from another CPU; FIDELITY.md round 152,
	// `just forkidle`). With Config.IdleExitSplit the replay draws a
	// fork's idle exit from it and any other wakeup's from the rest
	// (initIdleExitPools).
	IdleWakeForkNS []int64
	// PreemptWakeNS are the observed delays from a wakeup to the switch-in
	// that preempted the target CPU's running task (R+): the resched
	// latency (IPI, return to user) the simulator applies to wakeup
	// preemption; sorted.
	PreemptWakeNS []int64
	// PreemptWakeLocalNS: the same for wakeups issued on the target CPU
	// itself (the waker is preempted: no IPI, no vCPU stall), sorted.
	PreemptWakeLocalNS []int64
	// PreemptWakeLocalIRQNS: those of PreemptWakeLocalNS an interrupt
	// raised (a wakeup with no waker task: an arrival), sorted. Their
	// switch comes at the interrupt's return or the interrupted task's
	// next preemption point, which this machine's vCPUs reach in 4–8 µs
	// (ksoftirqd, rcu_preempt, a kworker woken on a busy CPU), the 6.1
	// guests' emulated ones in about 0.1 ms (FIDELITY.md round 17); the
	// replay draws an interrupt's wakeup on its own CPU from them
	// (Sim.reschedDelays). Files written before round 144 lack them: the
	// replay then draws from the remote pool, as it did.
	PreemptWakeLocalIRQNS []int64
	// PreemptWakeTickNS, PreemptWakeLocalTickNS: the delays of those
	// two kinds with a tick of the target CPU between the wakeup and the
	// switch, kept apart (sorted): the tick made the switch, a decision
	// the replay takes itself, so no replay draws from them (an EEVDF
	// wakee that finds the running task protected waits for the tick that
	// ends its request, 95 % of them with TIF_NEED_RESCHED still clear at
	// that tick, FIDELITY.md round 64; a CFS wakee within the wakeup
	// granularity likewise, round 65). A tick here is a hard-IRQ
	// update_curr of the running task that is neither an enqueue's
	// (irqEnqueues) nor the tick a host stall held back (lateTickNS).
	// Files written before these pools hold every delay in the pools
	// above.
	PreemptWakeTickNS, PreemptWakeLocalTickNS []int64
	// PreemptWakeRTNS: the delays from a real-time task's wakeup to its
	// switch-in preempting a CFS task (the interrupt's or system call's
	// exit path, the vCPU's stalls), not in the two pools above; sorted.
	PreemptWakeRTNS []int64
	// TickSwitchNS: after a tick that ended the running task's slice,
	// the run the kernel charged the task before its switch-out (the
	// interrupt's return through its softirqs, less the part from the
	// task's last update to the switch, which the next task is charged;
	// tickswitch.go), sorted.
	TickSwitchNS []int64
	// SwitchChargeBlockNS, SwitchChargeBlockIRQNS, SwitchChargePreemptNS:
	// at a switch-out after a block (one another task's wakeup ends, or
	// one an interrupt's does) or a preemption, the run from the leaving
	// task's last update to its switch, which the kernel charges to the
	// task switched in (switchcharge.go), sorted.
	SwitchChargeBlockNS, SwitchChargeBlockIRQNS, SwitchChargePreemptNS []int64
	// LongSwitchCharges: the activations whose block the kernel charged
	// the next task a quarter tick or more of the leaving task's run, the
	// gaps the pools above leave out (longcharge.go), in (Task, Act)
	// order.
	LongSwitchCharges []LongSwitchCharge
	// HostStalls are the stretches of the activations' demand during which
	// the trace shows the task's vCPU descheduled by the host
	// (hoststall.go), sorted by (Task, Act, OffsetNS); none on bare metal.
	HostStalls []HostStall
	// BalancePulls are the periodic balances the trace shows moving tasks
	// (balancepull.go), in time order: the balancer's phase, which no
	// other record reveals.
	BalancePulls []BalancePull
	// IRQCurrent are the arrivals whose waking the trace shows
	// interrupting a task, and that task (irqcurrent.go), in the order
	// of the wakings: whose wakee_flips the wakeup counts on.
	IRQCurrent []IRQCurrent
	// Stalls is the vCPU stall model measured from the trace's tick
	// records (noise.go); nil: none seen (bare metal, or no
	// sched_stat_runtime events in the trace).
	Stalls   *StallModel
	Topology *model.Topology
	Kernel   string
	Source   string
	// NewidleChances, NewidlePulls: the trace's chances for a newly idle
	// CPU to pull a waiting task and how many it took (pullrate.go); the
	// replay starts NI_RANDOM's success ratio at their share.
	NewidleChances, NewidlePulls int
	// Flips is the wakee_flips the tasks alive at the trace start begin
	// with, inferred from the trace's placements (wakeeflips.go), and the
	// evidence for it.
	Flips FlipFit
	// TickPhaseNS is where the traced kernel's ticks fell on the trace's
	// clock, modulo the tick period: the jiffy grid's phase, from the
	// trace's tick records (hostStallFinder; 0 without enough of them).
	// Every CPU ticks on that one grid (no skew_tick), so the replay's
	// ticks, jiffies and the balance intervals counted in them keep the
	// traced kernel's timing relative to the workload's own events.
	TickPhaseNS int64
	// Cmdline is the recorded command line (perf.data CMDLINE), when the
	// trace has one: TimeBounded reads the workload's nature from it.
	Cmdline []string
	// AffinityNotes say where the tasks' masks (Task.Allowed) came from,
	// as ApplyAffinity set them; not kept in a workload file (the masks
	// are).
	AffinityNotes []AffinityNote
	// LostSwitchIns counts the switches to a task that the trace did not
	// record and extraction inferred: the task switched out, or woke
	// another, on a CPU whose switches the trace had shown it did not
	// run on. Not kept in workload files.
	LostSwitchIns int
	// LostSwitchOuts counts the switches to idle the trace did not record
	// and extraction inferred (extractor.lostSwitchOut): a CPU showed its
	// idle task while a task was believed running there. Not kept in
	// workload files.
	LostSwitchOuts int
	// DisplacedWoken counts the tasks a lost switch left runnable that
	// were woken before they ran again (extractor.wokeDisplaced): taken
	// as blocked there. Not kept in workload files.
	DisplacedWoken int
	// NoWakeContext: none of the trace's wakings carry common_flags
	// (perf script's text, trace-cmd report's without its latency
	// columns), so a wakeup raised in an interrupt cannot be told from
	// one by the task it interrupted: it is taken for that task's, a wake
	// edge where the kernel's was an arrival
	// (fixtures/text/perf_script_ns_fields.txt: 41 wake edges, its
	// perf.data 13). Not kept in workload files.
	NoWakeContext bool
}

// delayPool is one of the workload's measured delay pools, named by its
// table in workload files; idle: its column there is idle_wake_ns, else
// preempt_wake_ns.
type delayPool struct {
	table string
	idle  bool
	ns    *[]int64
}

// delayPools lists the workload's measured delay pools, in the order
// workload files hold them: sorting, validating, saving and loading them
// all go through it.
func (w *Workload) delayPools() []delayPool {
	return []delayPool{
		{"idle_wake", true, &w.IdleWakeNS},
		{"idle_wake_local", true, &w.IdleWakeLocalNS},
		{"idle_wake_remote", true, &w.IdleWakeRemoteNS},
		{"idle_wake_fork", true, &w.IdleWakeForkNS},
		{"preempt_wake", false, &w.PreemptWakeNS},
		{"preempt_wake_local", false, &w.PreemptWakeLocalNS},
		{"preempt_wake_local_irq", false, &w.PreemptWakeLocalIRQNS},
		{"preempt_wake_tick", false, &w.PreemptWakeTickNS},
		{"preempt_wake_local_tick", false, &w.PreemptWakeLocalTickNS},
		{"preempt_wake_rt", false, &w.PreemptWakeRTNS},
		{"tick_switch", false, &w.TickSwitchNS},
		{"switch_charge_block", false, &w.SwitchChargeBlockNS},
		{"switch_charge_block_irq", false, &w.SwitchChargeBlockIRQNS},
		{"switch_charge_preempt", false, &w.SwitchChargePreemptNS},
	}
}

// isStopper reports the per-CPU stopper thread, which the kernel names
// "migration/<cpu>" (cpu_stop_threads).
func isStopper(comm string) bool { return strings.HasPrefix(comm, "migration/") }

// PinnedCPUOf infers that a task is a per-CPU kernel thread from its name,
// the only evidence a trace gives (it does not record affinity): the
// threads the kernel creates per CPU are named "<kind>/<cpu>" (ksoftirqd/3,
// migration/3, cpuhp/3, rcuc/3, ...) and bound workqueue workers
// "kworker/<cpu>:<id>[H]" (unbound ones are kworker/u<pool>:<id>). It
// returns that CPU or -1.
func PinnedCPUOf(comm string) int32 {
	kind, rest, ok := strings.Cut(comm, "/")
	if !ok {
		return -1
	}
	switch kind {
	case "kworker":
		cpu, _, ok := strings.Cut(rest, ":")
		if !ok {
			return -1
		}
		return atoiCPU(cpu)
	case "ksoftirqd", "migration", "cpuhp", "idle_inject", "watchdog", "rcuc", "ktimers", "ktimersoftd", "posixcputmr":
		return atoiCPU(rest)
	}
	return -1
}

func atoiCPU(s string) int32 {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 8191 || s == "" || s[0] == '+' {
		return -1
	}
	return int32(n)
}

// trace_entry common_flags bits (include/linux/trace_events.h, v6.1).
const (
	flagNeedResched = 0x04 // the current task's TIF_NEED_RESCHED
	flagHardIRQ     = 0x08
	flagSoftIRQ     = 0x10
	flagNMI         = 0x40
)

// irqContext is the part of an event's common_flags that says it was
// written in interrupt context (hard or soft IRQ, NMI): a waking written
// there is no task's, whatever task the CPU was running.
func irqContext(e *timeline.Event) int64 {
	return e.Int(timeline.CommonFlags) & (flagHardIRQ | flagSoftIRQ | flagNMI)
}

type extState uint8

const (
	stUnseen extState = iota
	stSleeping
	stRunnable
	stRunning
	stDead
)

type extTask struct {
	idx      int32
	state    extState
	runStart int64
	runCPU   int32
	blockAt  int64
	exiting  bool
	seenPrio bool
	lastSeen int64 // last switch-out runnable or wakeup
	qcpu     int32 // the CPU it is queued on while runnable
	// rtFrom, rtCPU: while the trace does not show it running, its
	// first sched_stat_runtime (on rtCPU) dates a switch-in the trace
	// lost: update_curr's delta runs from exec_start, which the switch-in
	// set, so the run began at the record's time minus its runtime
	// (rtCPU -1: none since it was last seen switched).
	rtFrom int64
	rtCPU  int32
	// runByPrio: run time per prio, from each slice's switch-out
	// (prev_prio), in order of first appearance.
	runByPrio []prioRun
	// awaitEdge: this task, runnable, was preempted by the wakee of this
	// wake edge on its own CPU, and has not run since (-1: none).
	// replyTo, replyEdge: on that wakee, the waker's TID (0: none) and
	// the edge; the wakee ending its activation first marks the edge's
	// Awaits candidate.
	awaitEdge int32
	replyTo   int32
	replyEdge int32
	// actRunByPrio: run time per prio in the open activation (its
	// Activation.Prio when it ends).
	actRunByPrio []prioRun
	// raceWake: a sched_waking of this task came at raceAt while it ran
	// (the last since its switch-in; raceEdge the wake edge, -1 from an
	// interrupt). raceBlocked: the switch-out that followed within
	// raceWindowNS blocked it, and no waking has come since: if it is
	// switched in without one, that wakeup raced its schedule() and
	// started its next activation (wakeRaced).
	raceWake, raceBlocked bool
	raceEdge              int32
	raceAt                int64
	// displacedAt: when a lost switch (displace) last took it off its
	// CPU as runnable, valid while it is still runnable since then
	// (lastSeen equal; 0: never). A waking before it runs again says it
	// had blocked there instead (wokeDisplaced).
	displacedAt int64
}

type prioRun struct {
	prio int32
	ns   int64
}

type pendWake struct {
	at   int64
	curr int32
	cpu  int32
	seq  int64
	from int32 // the CPU the wakeup ran on
	edge int32 // the wake edge's index (-1: none, an interrupt)
	busy int32 // CPUs running a task at the wakeup
	fork bool  // a fork's (sched_wakeup_new)
}

type extractor struct {
	w      *Workload
	stalls *stallEstimator
	// newidle counts the trace's newidle chances and pulls.
	newidle  *newidleTally
	tickSw   *tickSwitchTally
	swCharge *switchChargeTally
	// longCharges: the long switch charges by activation (longcharge.go).
	longCharges map[actKey]int64
	// flips infers the starting wakee_flips from the placements.
	flips *flipFit
	// hostStalls finds the stretches a busy CPU's vCPU was descheduled
	// (hoststall.go).
	hostStalls *hostStallFinder
	byTID      map[int32]*extTask
	cur        []int32 // per CPU: tid running (-1 unknown)
	curSince   []int64 // per CPU: since when (for idle-wake measurement)
	capOf      []int64
	waking     bool // the trace has sched_waking: ignore sched_wakeup
	// creation: the trace records task creation (sched_wakeup_new or
	// sched_process_fork). Without it a task first seen at its switch-in
	// may have been created just before, not have waited since the trace
	// start: unseenIn lists those switch-ins, made arrivals at finish.
	creation bool
	unseenIn []unseenSwitchIn
	pendIdle map[int32]pendWake
	switches []int64
	pendBusy map[int32]pendWake
	// lastWake per waker tid: its last wake edge (index into edges) and
	// where and when it fired, for the WF_SYNC inference.
	lastWake map[int32]pendWake
	edges    []Edge
	// WF_SYNC's evidence (Edge.Sync). runnable holds the tasks made
	// runnable (stale entries are dropped when read); wakerAlone[i]: when
	// edge i fired, nothing else was queued on its waker's CPU; notSync
	// and pulled count per wakee (task index) the wakeups placed on a busy
	// CPU not the waker's, though the waker was alone (WF_SYNC would have
	// stacked them: wake_affine_idle), and those moved onto the waker's CPU.
	runnable        map[int32]*extTask
	wakerAlone      []bool
	notSync, pulled map[int32]int
	// pulledAlone: of pulled, those whose waker ran alone on its CPU
	// (wakerAlone): WF_SYNC's signature (syncByPulls).
	pulledAlone map[int32]int
	// wakerExiting[i]: edge i's waker had passed sched_process_exit or
	// perf's exit record (PF_EXITING is set before both): select_task_rq_fair ignores
	// WF_SYNC from an exiting task, so the edge is not sync and its
	// placement is no evidence for the flag.
	wakerExiting []bool
	// syncGap[i]: how long after edge i fired its waker left that CPU,
	// blocking or preempted with no switch between (WF_SYNC's evidence,
	// wfsync.go); -1 when it did not so.
	syncGap []int64
	comms   map[int32]string
	// perfExec: threads seen named perf-exec, perf's workload child
	// before its exec (the recorded command's root: markCommand).
	perfExec map[int32]bool
	// Per CPU, since its last switch: the tick records (hard-IRQ
	// sched_stat_runtime) and the first event showing the running
	// task's TIF_NEED_RESCHED set since an event last showed it clear
	// (-1: none; a schedule() that picks the same task clears it without
	// a sched_switch).
	ticks   [][]int64
	firstNR []int64
	// lastPull[c]: the time of CPU c's last BalancePull (-1 none).
	lastPull []int64
	// lastBusyWake[c]: the latest wakeup that placed its wakee on CPU c
	// while a task ran there; nrCause[c]: that wakeup, when the record
	// that set firstNR[c] was the running task's next sched_waking (a
	// wake-up loop's first preempting wakeup, whatever the pick switches
	// to at the loop's end); else none.
	lastBusyWake, nrCause []pendWake
	// enq tells the enqueue's hard-IRQ update_curr from a tick's.
	enq irqEnqueues
	// wakings, wakingsFlagged: the trace's sched_waking records, and
	// those with common_flags (Workload.NoWakeContext).
	wakings, wakingsFlagged int
	// stallEnd per CPU: the event that ended its last host stall (the
	// vCPU running again), -1 none.
	stallEnd []int64
	// softWakes are the arrivals woken in softirq context, classified
	// once the tick grid is known (tickSoftIRQ).
	softWakes []softWake
	// wokeOn per CPU: the task its last sched_waking woke (0 after a
	// switch there): a sched_migrate_task of it that follows on the same
	// CPU is that wakeup's placement (sched_waking's target_cpu is the
	// task's previous CPU, read before select_task_rq).
	wokeOn []int32
	// ownUpd per CPU: the last update_curr of the task running there
	// since its switch-in that no modelled path explains (-1: none), for
	// Edge.Charged: a sched_stat_runtime of it in its own context, not
	// the first since a waking it made there (that one is the wakee's
	// enqueue, a local wakeup's, which the replay makes itself where it
	// places the wakee so). wokeSince: such a waking came since its last
	// update.
	ownUpd    []int64
	wokeSince []bool
	// lastOwn per CPU: the last record in the context of the task running
	// there (its switch-in at least), where a run whose switch to idle
	// the trace lost ends (lostSwitchOut).
	lastOwn []int64
	// ttwuOpen per CPU: the edge whose try_to_wake_up the CPU's last
	// records belong to (its waking, its migration), -1: none; ttwuDest
	// the CPU that wakeup's migration record sent the wakee to (-1: none
	// yet).
	ttwuOpen, ttwuDest []int32
	// onIRQRecord: ExtractOptions.HardIRQRecord.
	onIRQRecord func(cpu int32, at int64, tick bool)
}

// Extract reads a timeline's events and builds the workload. Per-CPU
// state follows sched_switch; wakeups are sched_waking (sched_wakeup when
// the trace lacks sched_waking) and sched_wakeup_new; sched_process_exit
// marks exits. Kernel-chosen placement (sched_migrate_task, target_cpu) is
// not part of the workload. The result is deterministic.
func Extract(r timeline.EventReader) (*Workload, error) {
	return ExtractWith(r, ExtractOptions{})
}

// ExtractOptions holds what an extraction takes besides its trace.
type ExtractOptions struct {
	// HardIRQRecord, when set, sees each hard-IRQ sched_stat_runtime of
	// the task running on its CPU as the extractor classes it: a tick's
	// (tick true) or an enqueue's update_curr (irqenqueue.go), and again,
	// with tick false, when a sleeper's statistics take a tick back. The
	// classes feed the replay's tick pools and stall estimates, and only
	// the trace's tick grid checks them (TickGridClasses), so they are
	// offered for that check (scripts/tickgrid).
	HardIRQRecord func(cpu int32, at int64, tick bool)
	// Topology is the machine the trace was recorded on when the trace
	// itself names none (a text trace given --topology): its capacities
	// scale each run into demand at capacity 1024, as the trace's own
	// topology's would. A trace that carries a topology keeps its own.
	Topology *model.Topology
}

// ExtractWith is Extract with options.
func ExtractWith(r timeline.EventReader, o ExtractOptions) (*Workload, error) {
	m := r.Meta()
	w := &Workload{StartNS: -1}
	if m != nil {
		w.Topology = m.Topology
		w.Kernel = m.Source.OSRelease
		w.Source = m.Source.Path
		w.Cmdline = m.Source.Cmdline
	}
	if w.Topology == nil {
		w.Topology = o.Topology
	}
	dom := tracedDomains(w.Topology, w.Kernel)
	x := &extractor{w: w, byTID: map[int32]*extTask{}, pendIdle: map[int32]pendWake{}, pendBusy: map[int32]pendWake{}, comms: map[int32]string{}, perfExec: map[int32]bool{},
		lastWake: map[int32]pendWake{}, runnable: map[int32]*extTask{}, notSync: map[int32]int{}, pulled: map[int32]int{}, pulledAlone: map[int32]int{},
		newidle:     newNewidleTally(),
		tickSw:      newTickSwitchTally(4000000),
		swCharge:    newSwitchChargeTally(4000000),
		flips:       flipFitOn(dom),
		stalls:      newStallEstimator(4000000), // HZ 250, the default Config.HZ
		onIRQRecord: o.HardIRQRecord,
		hostStalls:  newHostStallFinder(4000000)}
	if m != nil {
		x.waking = m.Source.Records("sched_waking")
		x.creation = m.Source.Records("sched_wakeup_new") || m.Source.Records("sched_process_fork")
	}
	if dom != nil {
		for _, cd := range dom.CPUs {
			x.enq.llc = append(x.enq.llc, cd.LLCID)
		}
	}
	if w.Topology != nil {
		for _, c := range w.Topology.CPUs {
			x.growCPU(int32(c.ID))
			if c.Capacity > 0 {
				x.capOf[c.ID] = int64(c.Capacity)
			}
		}
	}
	minT := int64(-1)
	for row := int64(0); r.Next(); row++ {
		e := r.Event()
		// CPU numbers index per-CPU state (the readers ingest.Open
		// returns check them too; this reader may be any).
		if err := timeline.CheckCPUs(e); err != nil {
			return nil, fmt.Errorf("whatif: event %d at %d ns: %w", row, e.Time, err)
		}
		if e.Time == 0 && (e.Kind == timeline.PerfComm || e.Kind == timeline.PerfFork || e.Kind == timeline.KindOther) {
			if e.Kind == timeline.PerfComm {
				x.comms[e.Int32(timeline.CommonPID)] = e.Str(timeline.Comm)
				if e.Str(timeline.Comm) == perfExecComm {
					x.perfExec[e.Int32(timeline.CommonPID)] = true
				}
			}
			continue
		}
		// The trace spans its tracepoint events, as the analysis takes it:
		// perf's side-band records and lost rows aside.
		if e.Time != 0 && e.Kind != timeline.Lost && !strings.HasPrefix(e.Name, "perf:") {
			if w.StartNS < 0 {
				w.StartNS = e.Time
			}
			if minT < 0 || e.Time < minT {
				minT = e.Time
			}
			if e.Time > w.EndNS {
				w.EndNS = e.Time
			}
		}
		if e.Kind == timeline.Lost {
			lc := int32(-1)
			if e.IsSet(timeline.CPU) {
				lc = e.Int32(timeline.CPU)
			}
			x.hostStalls.lost(lc)
			x.stalls.lost(lc)
			x.tickSw.lost()
			x.swCharge.lost()
			x.newidle.observe(e)
			if x.flips != nil {
				x.flips.observe(e)
			}
		} else if e.IsSet(timeline.CPU) && e.Time != 0 && !strings.HasPrefix(e.Name, "perf:") {
			c := e.Int32(timeline.CPU)
			x.growCPU(c)
			if pid := e.Int32(timeline.PID); e.Kind == timeline.SchedStatRuntime && pid > 0 {
				// update_curr of a task from any CPU (task_sched_runtime
				// reading its time) shows it its rq's current task.
				if x.cur[c] == pid {
					x.lastOwn[c] = e.Time
				} else if t := x.byTID[pid]; t != nil && t.state == stRunning && t.runCPU >= 0 && int(t.runCPU) < len(x.cur) && x.cur[t.runCPU] == pid {
					x.lastOwn[t.runCPU] = max(x.lastOwn[t.runCPU], e.Time)
				}
			}
			if x.cur[c] > 0 {
				// Idle switching out, or a record in the idle task's own
				// context, while a task is believed running there: that
				// task's switch to idle was lost. (Not an interrupt's
				// record, nor a migration's: this project's own replays and
				// hand-made tests write those with common_pid 0 on a busy
				// CPU; a real trace's name the task interrupted.)
				switch {
				case e.IsSet(timeline.CommonPID) && e.Int32(timeline.CommonPID) == x.cur[c]:
					x.lastOwn[c] = e.Time
				case e.IsSet(timeline.CommonPID) && e.Int32(timeline.CommonPID) == 0 && irqContext(e) == 0 && e.Kind != timeline.SchedMigrateTask,
					e.Kind == timeline.SchedSwitch && e.Int32(timeline.PrevPID) == 0:
					x.lostSwitchOut(c)
				}
			}
			// A tick: c's own task updated in hard IRQ, not by an enqueue
			// (irqenqueue.go). The stall estimators time the late ones;
			// the tick list leaves them out.
			of, tick := int32(-1), false
			if e.Kind == timeline.SchedStatRuntime {
				x.hostStalls.runtimes = true
				of = x.runningOn(c, e.Int32(timeline.PID))
				hard := e.Int(timeline.CommonFlags)&flagHardIRQ != 0
				tick = !x.enq.runtime(c, of, hard, e.Time) && hard
				if x.onIRQRecord != nil && hard && of == c {
					x.onIRQRecord(c, e.Time, tick)
				}
			}
			x.newidle.observe(e)
			x.tickSw.observe(e, c, tick)
			x.swCharge.observe(e, c)
			if x.flips != nil {
				x.flips.observe(e)
			}
			if last, ok := x.hostStalls.gap(c, e.Time); ok {
				x.hostStallGap(c, last, e.Time)
				x.growCPU(c)
				x.stallEnd[c] = e.Time
			}
			x.ttwuStep(e, c)
			switch e.Kind {
			case timeline.SchedStatRuntime:
				x.stalls.runtime(c, e.Time, e.Int32(timeline.PID), tick)
				if t := x.byTID[e.Int32(timeline.PID)]; t != nil && (t.state != stRunning || t.runCPU != c) && t.rtCPU < 0 && e.IsSet(timeline.Runtime) {
					t.rtFrom, t.rtCPU = e.Time-e.Int(timeline.Runtime), c
				}
				if tick {
					x.hostStalls.tick(c, e.Time)
				}
				if tick && of == c && e.Time-x.stallEnd[c] > lateTickNS {
					x.ticks[c] = append(x.ticks[c], e.Time)
				}
				if pid := e.Int32(timeline.PID); x.cur[c] > 0 && pid == x.cur[c] && e.Int32(timeline.CommonPID) == pid && irqContext(e) == 0 {
					x.ownUpd[c] = e.Time
					if x.wokeSince[c] {
						x.ownUpd[c], x.wokeSince[c] = -1, false
					}
				}
			case timeline.SchedSwitch:
				if next := e.Int32(timeline.NextPID); next > 0 {
					x.enq.ran(next)
				}
				x.stalls.switchTo(c, e.Time, e.Int32(timeline.NextPID))
				next := e.Int(timeline.NextPID) > 0
				x.hostStalls.switchTo(c, next, next && (!e.IsSet(timeline.NextPrio) || e.Int(timeline.NextPrio) >= 100))
			case timeline.SchedWaking:
				x.wakings++
				if e.IsSet(timeline.CommonFlags) {
					x.wakingsFlagged++
				}
				x.stalls.event(c, e.Time)
				target := c
				if e.IsSet(timeline.TargetCPU) {
					target = e.Int32(timeline.TargetCPU)
				}
				x.enq.waking(e.Int32(timeline.PID), c, target, e.Int(timeline.CommonFlags)&flagHardIRQ != 0, prioOr(e, timeline.Prio) < 100, e.Time)
			case timeline.SchedMigrateTask:
				x.stalls.event(c, e.Time)
				x.balancePull(e, c)
				if e.IsSet(timeline.DestCPU) {
					x.enq.migrate(e.Int32(timeline.PID), e.Int32(timeline.DestCPU))
				}
			case timeline.SchedStatSleep, timeline.SchedStatIOWait, timeline.SchedStatBlocked:
				x.stalls.event(c, e.Time)
				if e.Int(timeline.CommonFlags)&flagHardIRQ != 0 {
					x.enqueueInIRQ(c, e.Int32(timeline.PID), e.Time)
				}
			default:
				x.stalls.event(c, e.Time)
			}
			if e.Kind != timeline.SchedSwitch && e.IsSet(timeline.CommonFlags) {
				x.growCPU(c)
				if e.Int(timeline.CommonFlags)&flagNeedResched == 0 {
					// The flag is clear again: a schedule() since it was
					// set picked the same task (no sched_switch).
					x.firstNR[c] = -1
				} else if x.firstNR[c] < 0 {
					x.firstNR[c] = e.Time
					// A wake-up loop: the running task's next waking is
					// the first record to show the flag its previous
					// wakeup there set.
					x.nrCause[c] = pendWake{seq: -1, edge: -1}
					if e.Kind == timeline.SchedWaking && e.Int32(timeline.CommonPID) == x.cur[c] {
						x.nrCause[c] = x.lastBusyWake[c]
					}
				}
			}
		}
		switch e.Kind {
		case timeline.SchedSwitch, timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew, timeline.SchedProcessExit, timeline.PerfExit, timeline.SchedProcessFork, timeline.SchedMigrateTask:
		default:
			continue
		}
		if !e.IsSet(timeline.CPU) {
			continue
		}
		c := e.Int32(timeline.CPU)
		x.growCPU(c)
		switch e.Kind {
		case timeline.SchedSwitch:
			if p := e.Int32(timeline.PrevPID); p != 0 && p == e.Int32(timeline.NextPID) {
				// Damaged: the kernel switches between two tasks
				// (timeline.Checked counts it, AnomalySwitchSelf).
				continue
			}
			x.onSwitch(e, c)
		case timeline.SchedWaking:
			x.waking = true
			n := len(x.edges)
			x.onWake(e, c, false)
			if len(x.edges) > n && x.edges[n].Kind == EdgeWake && x.edges[n].Causal && irqContext(e) == 0 {
				x.growCPU(c)
				x.ttwuOpen[c], x.ttwuDest[c] = int32(n), -1
			}
		case timeline.SchedWakeup:
			if !x.waking {
				x.onWake(e, c, false)
			}
		case timeline.SchedWakeupNew:
			x.creation = true
			x.onWake(e, c, true)
		case timeline.SchedProcessExit, timeline.PerfExit:
			// perf sched record has no sched_process_exit; perf's own
			// exit record (perf_event_exit_task, later in do_exit but
			// before exit_notify wakes the parent) marks it as well.
			if t := x.byTID[e.Int32(timeline.PID)]; t != nil {
				t.exiting = true
			} else if t := x.byTID[e.Int32(timeline.CommonPID)]; t != nil {
				t.exiting = true
			}
		case timeline.SchedProcessFork:
			x.creation = true
			x.comms[e.Int32(timeline.ChildPID)] = e.Str(timeline.ChildComm)
		case timeline.SchedMigrateTask:
			x.onMigrate(e, c)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if w.StartNS < 0 {
		return nil, fmt.Errorf("whatif: the trace has no scheduler events (sched_switch, sched_waking)")
	}
	if w.EndNS-minT > MaxSpanNS {
		return nil, fmt.Errorf("whatif: the trace's events span %.0f s (%d to %d ns), more than a week: damaged timestamps?", float64(w.EndNS-minT)/1e9, minT, w.EndNS)
	}
	// The starting wakee_flips first: inferSync reads the placements
	// at that count.
	w.Flips = x.flips.result()
	x.finish()
	w.Stalls = x.stalls.model()
	if w.Stalls != nil {
		// Host contention from the dated stalls: the late-tick estimator
		// misses a stall with no tick record before it in the same run,
		// which on hackbench's short runs is most of them.
		w.Stalls.HostCores = x.hostStalls.hostCores()
	}
	w.NewidleChances, w.NewidlePulls = x.newidle.Chances, x.newidle.Pulls
	w.TickSwitchNS = x.tickSw.charged
	slices.Sort(w.TickSwitchNS)
	w.SwitchChargeBlockNS, w.SwitchChargeBlockIRQNS, w.SwitchChargePreemptNS = x.swCharge.block, x.swCharge.blockIRQ, x.swCharge.preempt
	slices.Sort(w.SwitchChargeBlockNS)
	slices.Sort(w.SwitchChargeBlockIRQNS)
	slices.Sort(w.SwitchChargePreemptNS)
	w.LongSwitchCharges = x.longChargesResult()
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("whatif: internal error extracting the workload: %w", err)
	}
	return w, nil
}

func (x *extractor) growCPU(c int32) {
	for int(c) >= len(x.cur) {
		x.cur = append(x.cur, -1)
		x.curSince = append(x.curSince, -1)
		x.switches = append(x.switches, 0)
		x.capOf = append(x.capOf, 1024)
		x.ticks = append(x.ticks, nil)
		x.firstNR = append(x.firstNR, -1)
		x.lastPull = append(x.lastPull, -1)
		x.lastBusyWake = append(x.lastBusyWake, pendWake{seq: -1, edge: -1})
		x.nrCause = append(x.nrCause, pendWake{seq: -1, edge: -1})
		x.stallEnd = append(x.stallEnd, -1)
		x.wokeOn = append(x.wokeOn, 0)
		x.ownUpd = append(x.ownUpd, -1)
		x.wokeSince = append(x.wokeSince, false)
		x.lastOwn = append(x.lastOwn, -1)
		x.ttwuOpen = append(x.ttwuOpen, -1)
		x.ttwuDest = append(x.ttwuDest, -1)
	}
}

// task returns the extraction state of tid, creating the task.
func (x *extractor) task(tid int32, comm string, prio int32, cpu int32) *extTask {
	t := x.byTID[tid]
	if t == nil {
		t = &extTask{idx: int32(len(x.w.Tasks)), runCPU: -1, rtCPU: -1, awaitEdge: -1, replyEdge: -1}
		x.byTID[tid] = t
		x.w.Tasks = append(x.w.Tasks, Task{TID: tid, PID: -1, Comm: comm, Prio: prio, Pinned: -1, StartCPU: cpu})
	}
	wt := &x.w.Tasks[t.idx]
	if comm != "" {
		wt.Comm = comm
		if comm == perfExecComm {
			x.perfExec[tid] = true
		}
	}
	if !t.seenPrio && prio > 0 {
		wt.Prio, t.seenPrio = prio, true
	}
	if wt.StartCPU < 0 {
		wt.StartCPU = cpu
	}
	return t
}

func (t *extTask) addPrioRun(prio int32, ns int64) {
	if ns < 0 {
		ns = 0
	}
	t.runByPrio = addPrioRun(t.runByPrio, prio, ns)
	t.actRunByPrio = addPrioRun(t.actRunByPrio, prio, ns)
}

func addPrioRun(rs []prioRun, prio int32, ns int64) []prioRun {
	for i := range rs {
		if rs[i].prio == prio {
			rs[i].ns += ns
			return rs
		}
	}
	return append(rs, prioRun{prio, ns})
}

// mainPrio is the prio with the most run time (the first seen on a tie).
func (t *extTask) mainPrio() (int32, bool) { return longestPrio(t.runByPrio) }

func longestPrio(rs []prioRun) (int32, bool) {
	if len(rs) == 0 {
		return 0, false
	}
	best := rs[0]
	for _, r := range rs[1:] {
		if r.ns > best.ns {
			best = r
		}
	}
	return best.prio, true
}

// closeActPrio sets the open activation's Prio from the prios it ran
// under (none seen: the task's holds) and starts a new tally.
func (x *extractor) closeActPrio(t *extTask) {
	if a := x.act(t); a != nil {
		if p, ok := longestPrio(t.actRunByPrio); ok && p >= 0 && p <= maxPrio {
			a.Prio, a.OwnPrio = p, true
		}
	}
	t.actRunByPrio = t.actRunByPrio[:0]
}

// hostStallGap: CPU c shows no event from last to end while running a CFS
// task; the task running there, if the extraction has it running on c, is
// charged the stretch (hoststall.go), from its run's start if later.
func (x *extractor) hostStallGap(c int32, last, end int64) {
	if int(c) >= len(x.cur) {
		return
	}
	t := x.byTID[x.cur[c]]
	if t == nil || t.state != stRunning || t.runCPU != c {
		return
	}
	a := x.act(t)
	if a == nil {
		return
	}
	from := max(last, t.runStart)
	if end <= from {
		return
	}
	capc := x.capacity(c)
	x.hostStalls.add(rawGap{task: t.idx, act: int32(len(x.w.Tasks[t.idx].Activations) - 1), cpu: c,
		offset: a.DemandNS + (from-t.runStart)*capc/1024, capc: capc, from: from, last: last, end: end, nBusy: x.hostStalls.nBusy})
}

// capacity is CPU c's capacity_orig (1024 when the topology gives none or
// c is unknown): demand is run time scaled by it.
func (x *extractor) capacity(c int32) int64 {
	if c >= 0 && int(c) < len(x.capOf) {
		return x.capOf[c]
	}
	return 1024
}

func (x *extractor) act(t *extTask) *Activation {
	as := x.w.Tasks[t.idx].Activations
	if len(as) == 0 {
		return nil
	}
	return &as[len(as)-1]
}

func (x *extractor) newAct(t *extTask, cause Cause, at int64) *Activation {
	x.closeActPrio(t)
	t.raceBlocked = false // whatever started this activation, not that waking
	wt := &x.w.Tasks[t.idx]
	if n := len(wt.Activations); n > 0 && wt.Activations[n-1].End == EndExit {
		// The trace shows the task again after its exit (records lost,
		// or its TID reused without a fork record): one task per TID,
		// so that exit was not the end.
		wt.Activations[n-1].End = EndSleep
		wt.ExitNS = 0
		t.exiting = false
	}
	sleep := int64(0)
	if len(wt.Activations) > 0 && t.blockAt > 0 {
		sleep = at - t.blockAt
	}
	wt.Activations = append(wt.Activations, Activation{Cause: cause, ReleaseNS: at, SleepNS: sleep, CPU: -1, End: EndTraceEnd})
	return &wt.Activations[len(wt.Activations)-1]
}

// accrue books the run time since runStart into the open activation.
func (x *extractor) accrue(t *extTask, now int64) {
	if t.state != stRunning {
		return
	}
	a := x.act(t)
	if a == nil {
		return
	}
	capc := x.capacity(t.runCPU)
	if now <= t.runStart {
		// Booked up to a later point already (a displacement dated
		// before the task's last event): demand never shrinks, or an
		// edge would lie past it.
		return
	}
	a.DemandNS += (now - t.runStart) * capc / 1024
	t.runStart = now
}

func (x *extractor) onSwitch(e *timeline.Event, c int32) {
	now := e.Time
	prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
	if lw, ok := x.lastWake[prev]; ok && prev != 0 {
		if lw.cpu == c && lw.seq == x.switches[c] {
			x.syncGap[lw.curr] = now - lw.at
		}
		delete(x.lastWake, prev)
	}
	if prev != 0 {
		t := x.task(prev, e.Str(timeline.PrevComm), e.Int32(timeline.PrevPrio), c)
		if wt := &x.w.Tasks[t.idx]; wt.PID < 0 && e.Int32(timeline.CommonPID) == prev && e.Int32(timeline.CommonTGID) > 0 {
			// Its thread group, from the switch written in its own
			// context (perf's sample pid).
			wt.PID = e.Int32(timeline.CommonTGID)
		}
		if t.state != stRunning {
			// Running since before the trace (its first switch on this
			// CPU) or since a switch-in the trace lost: since the trace
			// start, or since it was last seen switched out, woken or
			// blocking (perf's own start-up hops between CPUs, a wakeup
			// the trace lost too), but not before this CPU's last switch:
			// until then the CPU ran another task or idled (perf sched
			// timehist starts such a run there too). Some kernels leave
			// the switch out of idle untraced.
			since := max(x.w.StartNS, t.lastSeen)
			if t.state == stSleeping || t.state == stDead {
				since = max(since, t.blockAt)
			}
			if t.rtCPU == c && t.rtFrom > since && t.rtFrom <= now && t.state != stUnseen && x.act(t) != nil {
				// (A task running since before the trace: its first
				// record's delta runs from an earlier update, not from a
				// switch-in.)
				since = t.rtFrom
			}
			if int(c) < len(x.switches) && x.switches[c] > 0 {
				// This CPU's switches are in the trace: the one to this
				// task is missing, and the task the trace showed here left
				// unrecorded too.
				since = x.displace(c, prev, max(since, x.curSince[c]))
				x.w.LostSwitchIns++
			}
			if x.act(t) == nil || t.state == stSleeping || t.state == stUnseen || t.state == stDead {
				switch {
				case x.act(t) == nil:
					x.newAct(t, CauseStart, x.w.StartNS)
					x.w.Tasks[t.idx].StartRunning = true
					x.w.Tasks[t.idx].StartCPU = c
				case x.wakeRaced(t):
					// Woken as it blocked (its switch-in lost too).
				default:
					// Woken, and switched in, without a record (or running
					// again after its exit record: newAct, that exit was
					// not the end): released when its run began, the
					// latest its wakeup can have been, so that the replay
					// sleeps it as long as the trace can have. (Released
					// at the trace start, the replay took the sleep as
					// negative and ran it again at once.)
					x.newAct(t, CauseArrival, since).Untraced = true
				}
			}
			t.state, t.runStart, t.runCPU = stRunning, since, c
			if x.act(t).CPU < 0 {
				x.act(t).CPU = c
			}
		}
		t.rtCPU = -1
		if e.IsSet(timeline.PrevPrio) {
			t.addPrioRun(e.Int32(timeline.PrevPrio), now-t.runStart)
		}
		x.accrue(t, now)
		st := e.Str(timeline.PrevState)
		a := x.act(t)
		switch {
		case strings.HasPrefix(st, "R"):
			t.state = stRunnable
			t.lastSeen = now
			t.qcpu = c
			x.runnable[prev] = t
		case exiting(st) ||
			t.exiting && !strings.HasPrefix(st, "S") && !strings.HasPrefix(st, "D"):
			// An exiting task can still sleep inside do_exit (S or D)
			// and be woken to finish it.
			a.End, a.EndState = EndExit, st
			t.state = stDead
			x.w.Tasks[t.idx].ExitNS = now
			x.replied(t)
		default:
			a.End, a.EndState = EndSleep, st
			x.longCharge(t, prev, now)
			t.state, t.blockAt = stSleeping, now
			x.replied(t)
			t.raceBlocked = t.raceWake && now-t.raceAt <= raceWindowNS
		}
		t.raceWake = false
	}
	if next != 0 {
		t := x.task(next, e.Str(timeline.NextComm), e.Int32(timeline.NextPrio), c)
		switch t.state {
		case stUnseen:
			x.newAct(t, CauseStart, x.w.StartNS)
			x.unseenIn = append(x.unseenIn, unseenSwitchIn{t.idx, now})
		case stSleeping, stDead:
			// Switched in without a wakeup the trace shows.
			if !x.wakeRaced(t) {
				x.newAct(t, CauseArrival, now)
			}
		}
		t.state, t.runStart, t.runCPU = stRunning, now, c
		t.rtCPU = -1
		t.awaitEdge = -1
		if a := x.act(t); a.CPU < 0 {
			a.CPU = c
		}
		// Where the wakeup placed the wakee (pw.cpu, after the wakeup's
		// migration): WF_SYNC's evidence, for and against.
		for _, pm := range [2]map[int32]pendWake{x.pendIdle, x.pendBusy} {
			pw, ok := pm[next]
			if !ok || pw.edge < 0 || x.wakerExiting[pw.edge] {
				continue
			}
			e := &x.edges[pw.edge]
			if c == e.WakerCPU && e.Target != e.WakerCPU {
				x.pulled[e.Wakee]++
				if x.wakerAlone[pw.edge] {
					x.pulledAlone[e.Wakee]++
				}
			} else if c == pw.cpu && pw.cpu != e.WakerCPU && pw.curr != 0 && x.wakerAlone[pw.edge] {
				x.notSync[e.Wakee]++
			}
		}
		if pw, ok := x.pendIdle[next]; ok {
			// The idle target CPU's first switch since the wakeup, to the
			// wakee: the machine's idle-exit delay (later or elsewhere is a
			// scheduling delay, which the model produces itself).
			if prev == 0 && c == pw.cpu && x.switches[c] == pw.seq {
				x.w.IdleWakeNS = append(x.w.IdleWakeNS, now-pw.at)
				if pw.fork {
					x.w.IdleWakeForkNS = append(x.w.IdleWakeForkNS, now-pw.at)
				}
				if pw.from == c {
					x.w.IdleWakeLocalNS = append(x.w.IdleWakeLocalNS, now-pw.at)
				} else if pw.busy <= hostUncontended {
					x.w.IdleWakeRemoteNS = append(x.w.IdleWakeRemoteNS, now-pw.at)
				}
			}
			delete(x.pendIdle, next)
		}
		stretch := false
		if pb, ok := x.pendBusy[next]; ok {
			// The waker, on its own CPU, switched out (preempted, or
			// blocking) straight to this wakee, having run on with
			// TIF_NEED_RESCHED set since the wakeup: no preemption point
			// in between.
			local := prev == pb.curr && c == pb.cpu && x.switches[c] == pb.seq && pb.from == c
			if local && x.reschedByWakeup(c, pb.at) {
				x.noPreempt(prev, pb.edge)
				stretch = true
			}
			// A wakeup preemption: the task running at the wakeup is
			// switched out runnable for the wakee on the target CPU, with
			// no switch in between, within a tick (a longer wait is a
			// slice expiry, which the model times itself).
			preempted := prev == pb.curr && c == pb.cpu && x.switches[c] == pb.seq && strings.HasPrefix(e.Str(timeline.PrevState), "R")
			if preempted && pb.from == c {
				x.preemptedWaker(prev, t, pb.edge)
			}
			if preempted && e.Int(timeline.NextPrio) < 100 && e.Int(timeline.PrevPrio) >= 100 {
				// A real-time wakee takes the CPU from a CFS task at the
				// first preemption point, however long that is: the whole
				// delay is the machine's and the kernel's exit path.
				x.w.PreemptWakeRTNS = append(x.w.PreemptWakeRTNS, now-pb.at)
			} else if preempted && now-pb.at < 4000000 {
				tick := x.tickBetween(c, pb.at, now)
				switch {
				case pb.from == c && tick:
					x.w.PreemptWakeLocalTickNS = append(x.w.PreemptWakeLocalTickNS, now-pb.at)
				case pb.from == c:
					x.w.PreemptWakeLocalNS = append(x.w.PreemptWakeLocalNS, now-pb.at)
					if pb.edge < 0 {
						x.w.PreemptWakeLocalIRQNS = append(x.w.PreemptWakeLocalIRQNS, now-pb.at)
					}
				case tick:
					x.w.PreemptWakeTickNS = append(x.w.PreemptWakeTickNS, now-pb.at)
				default:
					x.w.PreemptWakeNS = append(x.w.PreemptWakeNS, now-pb.at)
				}
			}
			delete(x.pendBusy, next)
		}
		if nc := x.nrCause[c]; !stretch && prev > 0 && nc.edge >= 0 && nc.curr == prev && nc.cpu == c && nc.from == c && nc.seq == x.switches[c] && x.reschedByWakeup(c, nc.at) {
			// The waker switched out (to whichever task the pick chose)
			// having run on since one of its own wakeups on its CPU set
			// TIF_NEED_RESCHED: a wake-up loop under a wait-queue lock
			// (hackbench's herd: one write wakes every reader) has no
			// preemption point until it ends.
			x.noPreempt(prev, nc.edge)
		}
	}
	x.switchedTo(c, next, now, now)
}

// switchedTo keeps CPU c's switch, recorded or inferred: tid runs there
// from since (0: idle), its last record at lastOwn; the per-CPU state
// kept since the last switch starts again, so that the CPU's pending
// wakeups no longer find the task they were aimed past.
func (x *extractor) switchedTo(c, tid int32, since, lastOwn int64) {
	x.cur[c], x.curSince[c], x.lastOwn[c] = tid, since, lastOwn
	x.switches[c]++
	x.wokeOn[c] = 0
	x.ticks[c], x.firstNR[c] = x.ticks[c][:0], -1
	x.ownUpd[c], x.wokeSince[c] = -1, false
}

// wakeRaced: task t, asleep, is switched in with no waking since it
// blocked, but one came while it still ran, shortly before that block
// (raceBlocked). try_to_wake_up then found it dequeued but still on the
// CPU (p->on_cpu), waited for the switch to finish and queued it again,
// which no later waking record shows. (Found still queued, before
// schedule() dequeued it, the task would not have blocked: a switch-out
// in R; a task woken so that blocks again later, on another condition,
// is woken again, and that waking clears raceBlocked.) So that waking
// starts its next activation: the waker's edge is made causal for it
// (released at the block) and marked Edge.Raced. Taken as an arrival at
// the switch-in, the replay lost the causality (guest-P schbench: 10 of
// its 209 wakings; hackbench about 2 %). Reports whether it applied.
func (x *extractor) wakeRaced(t *extTask) bool {
	if !t.raceBlocked {
		return false
	}
	t.raceBlocked = false
	cause := CauseArrival
	if t.raceEdge >= 0 {
		cause = CauseWake
	}
	x.newAct(t, cause, t.blockAt)
	if t.raceEdge >= 0 {
		e := &x.edges[t.raceEdge]
		e.Causal, e.Raced, e.WakeeAct = true, e.Kind == EdgeWake, int32(len(x.w.Tasks[t.idx].Activations)-1)
	}
	return true
}

// lostSwitchIn: task t acts on CPU c (a wakeup from its context) while
// the trace shows c idle or running another task: the switch to t was
// not recorded (this project's 6.18 VM leaves many untraced; perf can
// lose them). t has run there since the CPU's last switch at the
// earliest, or since it was last seen; the switch is counted so that the
// CPU's pending wakeups are not taken as idle exits or preemptions, and
// t's own wakeup delay is not measured.
func (x *extractor) lostSwitchIn(t *extTask, c int32, now int64) {
	from := max(t.lastSeen, x.curSince[c], x.w.StartNS)
	if t.state == stSleeping {
		from = max(from, t.blockAt)
	}
	if t.rtCPU == c && t.rtFrom > from {
		from = t.rtFrom
	}
	t.rtCPU = -1
	since := x.displace(c, x.w.Tasks[t.idx].TID, from)
	if t.state == stSleeping && !x.wakeRaced(t) {
		// Released when its run began, as onSwitch does.
		x.newAct(t, CauseArrival, since).Untraced = true
	}
	t.state, t.runStart, t.runCPU = stRunning, since, c
	if a := x.act(t); a.CPU < 0 {
		a.CPU = c
	}
	tid := x.w.Tasks[t.idx].TID
	delete(x.pendIdle, tid)
	delete(x.pendBusy, tid)
	x.switchedTo(c, tid, since, now)
	x.w.LostSwitchIns++
}

// displace ends the run of the task the trace shows on CPU c when another
// (tid) turns out to run there from `at`: its switch-out was not recorded.
// It is taken as preempted (a later wakeup or switch says more); left
// running it would be charged until the trace's end. It returns when the
// displaced run ended: `at`, or the displaced task's last sign of running
// there if later (a wakeup it issued, which booked its run up to then),
// which is where the other task's run starts at the earliest.
func (x *extractor) displace(c, tid int32, at int64) int64 {
	if x.cur[c] <= 0 || x.cur[c] == tid {
		return at
	}
	if p := x.byTID[x.cur[c]]; p != nil && p.state == stRunning && p.runCPU == c {
		at = max(at, p.runStart)
		x.accrue(p, at)
		p.state, p.lastSeen = stRunnable, at
		p.qcpu = c
		x.runnable[x.cur[c]] = p
		p.displacedAt = at
	}
	return at
}

// wokeDisplaced: a sched_waking of t, which a lost switch left runnable
// (displace) and which has not run since. try_to_wake_up traces only a
// task whose state is not TASK_RUNNING, and a preempted task's is, so t
// had blocked at that switch (a nice -10 agent on this machine's 6.18.44
// build, whose switches out go untraced, is woken so again and again):
// its activation ends there, a sleep, and this waking starts the next.
// (A task preempted between setting its sleep state and schedule() is
// woken so too, but stays queued: replayed as a short sleep instead.)
func (x *extractor) wokeDisplaced(t *extTask) {
	if t.state != stRunnable || t.displacedAt == 0 || t.lastSeen != t.displacedAt {
		return
	}
	if a := x.act(t); a != nil {
		a.End, a.EndState = EndSleep, "S"
	}
	t.state, t.blockAt = stSleeping, t.displacedAt
	x.replied(t)
	x.w.DisplacedWoken++
}

// lostSwitchOut: CPU c shows its idle task (a record in idle's context,
// or idle switching out) while the task the trace last switched in there
// is believed running: its switch to idle was not recorded (the machine's
// 6.18.44 build loses some, fixtures/local-6.18/README.md). The task
// blocked there (a running task leaves a CPU for idle only by blocking or
// exiting; a preempted or migrated one leaves for another task): its run
// ends as a sleep at its last record on c, the least the trace shows it
// ran, and a waking that came while it was believed running is taken as
// racing that block (wakeRaced), so what woke it stays causal. perf sched
// timehist books the same stretch to idle.
func (x *extractor) lostSwitchOut(c int32) {
	tid := x.cur[c]
	x.switchedTo(c, 0, x.lastOwn[c], x.lastOwn[c])
	x.w.LostSwitchOuts++
	t := x.byTID[tid]
	if t == nil || t.state != stRunning || t.runCPU != c {
		return
	}
	at := max(t.runStart, x.lastOwn[c])
	x.accrue(t, at)
	if a := x.act(t); a != nil {
		a.End, a.EndState = EndSleep, "S"
	}
	t.state, t.blockAt, t.lastSeen = stSleeping, at, at
	x.replied(t)
	t.raceBlocked, t.raceWake = t.raceWake, false
}

// busyCPUs is the number of CPUs the trace shows running a task.
func (x *extractor) busyCPUs() int32 {
	n := int32(0)
	for _, p := range x.cur {
		if p > 0 {
			n++
		}
	}
	return n
}

// softWake is an arrival whose waking ran in softirq context: task
// (extractor index), activation, the waking's time, and the time since
// the waking CPU's last tick record (-1: its CPU was idle; noTickSince:
// busy, with no tick record since its last switch).
type softWake struct {
	task, act     int32
	at, sinceTick int64
}

// noTickSince marks a softirq waking on a busy CPU that has recorded no
// tick since its last switch: not the tick's softirq (ksoftirqd's, or an
// interrupt's right after a switch).
const noTickSince = -2

// tickSoftIRQ marks the softirq arrivals that the tick's softirq ran
// (Activation.TickSoftIRQ): on a busy CPU, within a quarter tick of that
// CPU's tick record, which dates the tick as the CPU took it (a vCPU's
// tick can be late: on the eight-vCPU guests their softirq wakings sit
// 0.1-0.3 or 0.7-0.8 ms after the grid); on an idle CPU (no tick
// record: the timer's interrupt woke it), within a quarter tick after
// the grid (phase; -1: unknown, none marked). A softirq waking elsewhere
// in the tick is another softirq (a device's), and one on a busy CPU
// with no tick record since its switch (run from ksoftirqd, after the
// tick's reschedule): both keep their sleep. The window is a guess wide
// enough for what the recordings show (15-65 µs after the tick on this
// machine's kernel, 50-550 µs in the TCG guests). The tick is the
// host-stall finder's, which dates the grid.
func (x *extractor) tickSoftIRQ(keep []int32, phase int64) {
	tickNS := x.hostStalls.tickNS
	window := tickNS / 4
	for _, sw := range x.softWakes {
		ok := sw.sinceTick >= 0 && sw.sinceTick < window
		if sw.sinceTick == -1 && phase >= 0 {
			ok = ((sw.at-phase)%tickNS+tickNS)%tickNS < window
		}
		if ti := keep[sw.task]; ok && ti >= 0 {
			x.w.Tasks[ti].Activations[sw.act].TickSoftIRQ = true
		}
	}
}

// reschedByWakeup: the task running on c had TIF_NEED_RESCHED set, as
// the trace's flags show, after the wakeup at `at` (its sched_waking,
// written before the wakeup's check_preempt, showed it clear) and before
// any tick since: so the wakeup set it, not a slice expiry.
func (x *extractor) reschedByWakeup(c int32, at int64) bool {
	nr := x.firstNR[c]
	return nr > at && !x.tickBetween(c, at, nr)
}

// lateTickNS: a hard-IRQ update_curr this soon after a host stall ended
// on its CPU is the tick the vCPU missed while descheduled, delivered as
// it runs again: the stall's end, not a slice decision at a tick.
const lateTickNS = 100000

// runningOn is the CPU whose running task a sched_stat_runtime of pid
// written on c updated: c when pid runs there (or c's task is not known
// yet), else the CPU pid runs on (a remote wakeup's enqueue updates the
// target CPU's task from the waker's CPU), -1 none.
func (x *extractor) runningOn(c, pid int32) int32 {
	if x.cur[c] == pid || x.cur[c] < 0 {
		return c
	}
	for d, p := range x.cur {
		if p == pid && pid > 0 {
			return int32(d)
		}
	}
	return -1
}

// enqueueInIRQ: a sleeper's enqueue statistics (sched_stat_sleep,
// _blocked, _iowait) of pid written on CPU c in hard-IRQ context at `at`:
// the enqueue ran in an interrupt, a remote wakeup's IPI (the waker shares
// no cache with c: ttwu_queue_wakelist) or an hrtimer's, and the hard-IRQ
// sched_stat_runtime just before it, if it came after pid's waking, was
// that enqueue's update_curr of the running task, not a tick's: it leaves
// c's ticks. It corrects the pending wakings (irqEnqueues) where a tick
// came between a waking and its IPI and was taken for the enqueue's, or
// the IPI came after the lapse (a vCPU the host held back). A record
// before the waking is the tick's own: the tick and an hrtimer's wakeup
// often share one interrupt, whose enqueue then writes no record of its
// own (Debian's 6.12 on the two-vCPU guests).
func (x *extractor) enqueueInIRQ(c, pid int32, at int64) {
	if n := len(x.ticks[c]); n > 0 && at-x.ticks[c][n-1] <= irqEnqueueNS && x.ticks[c][n-1] > x.enq.since(pid) {
		if x.onIRQRecord != nil {
			x.onIRQRecord(c, x.ticks[c][n-1], false)
		}
		x.ticks[c] = x.ticks[c][:n-1]
	}
}

// irqEnqueueNS bounds the time from an enqueue's update_curr to its
// sleeper's statistics (12–35 µs on the 6.12 guests).
const irqEnqueueNS = 50000

// tickBetween: a tick record of CPU c came after `from` and before `to`,
// both since c's last switch (the ticks it keeps).
func (x *extractor) tickBetween(c int32, from, to int64) bool {
	for _, t := range x.ticks[c] {
		if t > from && t < to {
			return true
		}
	}
	return false
}

// onMigrate: a wakeup's placement on another CPU than the wakee's
// previous one moves its pending delay measurement to that CPU.
func (x *extractor) onMigrate(e *timeline.Event, c int32) {
	pid := e.Int32(timeline.PID)
	if t := x.byTID[pid]; t != nil && t.state == stRunnable && e.IsSet(timeline.DestCPU) {
		t.qcpu = e.Int32(timeline.DestCPU)
		x.stopperMove(t, c, e.Int32(timeline.DestCPU))
	}
	if pid == 0 || x.wokeOn[c] != pid {
		return
	}
	x.wokeOn[c] = 0
	dest := e.Int32(timeline.DestCPU)
	if dest < 0 || !e.IsSet(timeline.DestCPU) {
		return
	}
	x.growCPU(dest)
	pw, ok := x.pendIdle[pid]
	if !ok {
		pw, ok = x.pendBusy[pid]
	}
	delete(x.pendIdle, pid)
	delete(x.pendBusy, pid)
	if !ok {
		return
	}
	if lb := &x.lastBusyWake[pw.cpu]; lb.at == pw.at && lb.edge == pw.edge && lb.seq >= 0 {
		// That wakeup left pw.cpu: it cannot have set the flag there.
		*lb = pendWake{seq: -1, edge: -1}
	}
	pw.cpu, pw.seq = dest, x.switches[dest]
	if x.cur[dest] == 0 {
		pw.curr = 0
		x.pendIdle[pid] = pw
	} else if x.cur[dest] > 0 {
		pw.curr = x.cur[dest]
		x.pendBusy[pid] = pw
		x.lastBusyWake[dest] = pw
	}
}

// stopperMove: runnable task t is moved to dest by the task running on
// CPU c. When that is c's stopper (migration/c) and t's latest wakeup,
// in its current activation, was of that stopper, t asked to be moved
// (sched_setaffinity, sched_exec): that wake edge becomes an EdgeMove.
// A stopper t did not wake (active balance, another CPU's
// sched_setaffinity) is left to the model.
func (x *extractor) stopperMove(t *extTask, c, dest int32) {
	if int(c) >= len(x.cur) || dest < 0 || dest == c {
		return
	}
	st := x.byTID[x.cur[c]]
	if st == nil || st == t {
		return
	}
	if comm := x.w.Tasks[st.idx].Comm; !strings.HasPrefix(comm, "migration/") || PinnedCPUOf(comm) != c {
		return
	}
	act := int32(len(x.w.Tasks[t.idx].Activations) - 1)
	for i := len(x.edges) - 1; i >= 0 && i >= len(x.edges)-stopperMoveScan; i-- {
		e := &x.edges[i]
		if e.Waker != t.idx {
			continue
		}
		if e.Wakee == st.idx && e.WakerAct == act && e.Kind == EdgeWake && e.Causal {
			e.Kind, e.Target, e.Raced = EdgeMove, dest, false
		}
		return
	}
}

// stopperMoveScan bounds stopperMove's look back over the latest edges:
// the stopper runs right after its waker's wakeup, so that edge is among
// the last few (other CPUs' wakeups in between).
const stopperMoveScan = 64

// noPreempt records on wake edge ei of the waker prev, just switched out
// runnable for that edge's wakee on its own CPU, how far the waker ran
// on after the wakeup (its demand since the edge's offset).
func (x *extractor) noPreempt(prev int32, ei int32) {
	t := x.byTID[prev]
	if ei < 0 || int(ei) >= len(x.edges) || t == nil {
		return
	}
	e := &x.edges[ei]
	a := x.act(t)
	if e.Waker != t.idx || a == nil || e.WakerAct != int32(len(x.w.Tasks[t.idx].Activations)-1) {
		return
	}
	if d := a.DemandNS - e.OffsetNS; d > 0 {
		e.NoPreemptNS = d
	}
}

// preemptedWaker: the waker prev, switched out runnable on its own CPU
// for wakee, the task its wake edge ei woke: if the wakee ends its
// activation before prev runs again, the edge is an Awaits candidate
// (replied).
func (x *extractor) preemptedWaker(prev int32, wakee *extTask, ei int32) {
	t := x.byTID[prev]
	if ei < 0 || int(ei) >= len(x.edges) || t == nil {
		return
	}
	if e := &x.edges[ei]; e.Waker != t.idx || e.Wakee != wakee.idx || !e.Causal || e.Kind != EdgeWake {
		return
	}
	t.awaitEdge = ei
	wakee.replyTo, wakee.replyEdge = prev, ei
}

// replied: t blocked or exited, ending its activation; if it had
// preempted its waker, which has not run since, that wakeup is an Awaits
// candidate.
func (x *extractor) replied(t *extTask) {
	if t.replyTo == 0 {
		return
	}
	if w := x.byTID[t.replyTo]; w != nil && w.state == stRunnable && w.awaitEdge == t.replyEdge {
		x.edges[t.replyEdge].Awaits = true
	}
	t.replyTo, t.replyEdge = 0, -1
}

func (x *extractor) onWake(e *timeline.Event, c int32, isNew bool) {
	now := e.Time
	wakee := e.Int32(timeline.PID)
	if wakee == 0 {
		return
	}
	target := e.Int32(timeline.TargetCPU)
	if !e.IsSet(timeline.TargetCPU) {
		target = c
	}
	x.growCPU(target) // a CPU with no event of its own yet
	t := x.task(wakee, e.Str(timeline.Comm), e.Int32(timeline.Prio), target)
	if isNew && len(x.w.Tasks[t.idx].Activations) > 0 {
		// A fork of a task the trace already showed (records lost, or a
		// TID reused after an exit): one task per TID, so it is taken as
		// a wakeup of that task.
		isNew = false
	}
	wakerTID := e.Int32(timeline.CommonPID)
	if wakerTID < 0 {
		// perf's sample of a task past exit_notify, whose pid no longer
		// resolves (perf script prints ":-1 -1"): the exiting task the
		// switches show on c, e.g. a child waking its parent's wait().
		wakerTID = max(x.cur[c], 0)
	}
	irqFlags := irqContext(e)
	irq := irqFlags != 0
	var waker *extTask
	if wakerTID != 0 && !irq && wakerTID != wakee {
		waker = x.byTID[wakerTID]
		if waker == nil || waker.state != stRunning || waker.runCPU != c {
			// The waker is running here; make it so if the trace has not
			// shown its switch-in yet (it ran since before the trace).
			switch {
			case waker == nil || waker.state == stUnseen:
				waker = x.task(wakerTID, e.Str(timeline.CommonComm), 0, c)
				x.newAct(waker, CauseStart, x.w.StartNS)
				x.w.Tasks[waker.idx].StartRunning = true
				x.w.Tasks[waker.idx].StartCPU = c
				waker.state, waker.runStart, waker.runCPU = stRunning, x.w.StartNS, c
				x.act(waker).CPU = c
			case x.cur[c] >= 0 && waker.state != stRunning && waker.state != stDead,
				x.cur[c] < 0 && waker.state == stRunnable && waker.qcpu == c:
				// The trace has shown what c ran (before its first switch
				// it has not, unless the waker was seen queued on c: perf's
				// start-up hops through the CPUs, each moved by the stopper
				// it woke, stopperMove).
				x.lostSwitchIn(waker, c, now)
			default:
				waker = nil // inconsistent: treat as an arrival
			}
		}
	}
	if e.Kind == timeline.SchedWaking {
		x.wokeDisplaced(t)
	}
	var act int32
	causal := false
	switch t.state {
	case stSleeping, stUnseen, stDead:
		t.raceBlocked = false // this waking, not one before the block
		cause := CauseArrival
		if isNew {
			cause = CauseFork
			x.w.Tasks[t.idx].Forked = true
			if waker != nil {
				x.w.Tasks[t.idx].StartCPU = c
			}
		} else if waker != nil {
			cause = CauseWake
		}
		if isNew && waker == nil {
			cause = CauseArrival
		}
		a := x.newAct(t, cause, now)
		if cause == CauseArrival && (irq || wakerTID == 0) && e.Kind == timeline.SchedWaking && e.IsSet(timeline.TargetCPU) && c != target && c < model.MaxCPUs {
			a.IRQCPUPlus1 = int16(c + 1)
		}
		if cause == CauseArrival {
			a.IRQ = irqContextOf(irqFlags)
			if irq {
				x.irqCurrent(t, len(x.w.Tasks[t.idx].Activations)-1, wakerTID)
			}
		}
		if cause == CauseArrival && irqFlags == flagSoftIRQ {
			since := int64(-1) // idle: the timer's interrupt woke the CPU
			if x.cur[c] != 0 {
				since = noTickSince // ksoftirqd, or a task that has taken no tick
				if n := len(x.ticks[c]); n > 0 {
					since = now - x.ticks[c][n-1]
				}
			}
			x.softWakes = append(x.softWakes, softWake{t.idx, int32(len(x.w.Tasks[t.idx].Activations) - 1), now, since})
		}
		t.state = stRunnable
		t.qcpu = target
		x.runnable[wakee] = t
		t.lastSeen = now
		causal = true
		act = int32(len(x.w.Tasks[t.idx].Activations) - 1)
		edge := int32(-1)
		if waker != nil {
			edge = int32(len(x.edges)) // appended below
		}
		if x.cur[target] == 0 {
			x.pendIdle[wakee] = pendWake{now, 0, target, x.switches[target], c, edge, x.busyCPUs(), isNew}
		} else if x.cur[target] > 0 {
			x.pendBusy[wakee] = pendWake{now, x.cur[target], target, x.switches[target], c, edge, x.busyCPUs(), isNew}
			x.lastBusyWake[target] = x.pendBusy[wakee]
			if irq && target == c {
				x.stalls.irqWake(c, now, wakee, e.IsSet(timeline.Prio) && e.Int(timeline.Prio) < 100)
			}
		}
		if !isNew {
			x.wokeOn[c] = wakee
		}
	default:
		act = int32(len(x.w.Tasks[t.idx].Activations) - 1)
		if t.state == stRunning {
			t.raceWake, t.raceEdge, t.raceAt = true, -1, now
			if waker != nil {
				t.raceEdge = int32(len(x.edges)) // appended below
			}
		}
	}
	if waker == nil {
		return
	}
	x.accrue(waker, now)
	wa := x.act(waker)
	kind := EdgeWake
	if isNew {
		kind = EdgeFork
	}
	switch {
	case isNew:
	case waker.exiting:
		// Its last wakeup is this one, and not sync: an earlier one is
		// not the wakeup the waker left its CPU after.
		delete(x.lastWake, wakerTID)
	default:
		x.lastWake[wakerTID] = pendWake{now, int32(len(x.edges)), c, x.switches[c], c, -1, 0, false}
	}
	x.wakerExiting = append(x.wakerExiting, waker.exiting)
	alone := false
	if causal && !isNew {
		alone = true
		for tid, r := range x.runnable {
			if r.state != stRunnable {
				delete(x.runnable, tid)
				continue
			}
			if tid != wakee && r.qcpu == c {
				alone = false
			}
		}
	}
	x.wakerAlone = append(x.wakerAlone, alone)
	x.syncGap = append(x.syncGap, -1)
	x.edges = append(x.edges, Edge{Kind: kind, Causal: causal, Waker: waker.idx, WakerAct: int32(len(x.w.Tasks[waker.idx].Activations) - 1),
		OffsetNS: wa.DemandNS, Wakee: t.idx, WakeeAct: act, TimeNS: now, WakerCPU: c, Target: target,
		Charged: !isNew && x.cur[c] == wakerTID && x.ownUpd[c] >= 0 && now-x.ownUpd[c] <= chargedWindowNS})
	if x.cur[c] == wakerTID {
		x.wokeSince[c] = true
	}
}

// unseenSwitchIn: task idx's first event was its switch-in at `at`.
type unseenSwitchIn struct {
	idx int32
	at  int64
}

func (x *extractor) finish() {
	w := x.w
	w.NoWakeContext = x.wakings > 0 && x.wakingsFlagged == 0
	if !x.creation {
		// A trace that does not record task creation: a task first seen
		// at a switch-in is released there (an arrival), the first the
		// trace knows of it, rather than queued from the trace start
		// (LISA's rt-app and trace-cmd text examples: forked shell
		// commands, which the replay otherwise ran from the start).
		for _, u := range x.unseenIn {
			if a := &w.Tasks[u.idx].Activations[0]; a.Cause == CauseStart && u.at > w.StartNS {
				a.Cause, a.ReleaseNS = CauseArrival, u.at
			}
		}
	}
	x.inferSync()
	for _, t := range x.byTID {
		x.accrue(t, w.EndNS)
		// A task's policy can change in the trace (sched_setscheduler:
		// stress-ng's cyclic stressor forks at prio 120 and runs SCHED_FIFO
		// from its second activation on; PI boosting briefly): the model
		// has one class and weight per task, so it takes the prio the task
		// ran under the longest (the first seen if it never switched out).
		if p, ok := t.mainPrio(); ok {
			w.Tasks[t.idx].Prio = p
		}
		x.closeActPrio(t)
	}
	for i := range w.Tasks {
		wt := &w.Tasks[i]
		if c, ok := x.comms[wt.TID]; ok && wt.Comm == "" {
			wt.Comm = c
		}
		wt.Pinned = PinnedCPUOf(wt.Comm)
		if wt.StartCPU < 0 {
			wt.StartCPU = 0
		}
	}
	// Drop tasks that never ran nor were woken (nothing to replay), keeping
	// indices dense.
	keep := make([]int32, len(w.Tasks))
	var tasks []Task
	for i := range w.Tasks {
		if len(w.Tasks[i].Activations) == 0 {
			keep[i] = -1
			continue
		}
		keep[i] = int32(len(tasks))
		tasks = append(tasks, w.Tasks[i])
	}
	w.Tasks = tasks
	var edges []Edge
	for _, e := range x.edges {
		if keep[e.Waker] < 0 || keep[e.Wakee] < 0 {
			continue
		}
		e.Waker, e.Wakee = keep[e.Waker], keep[e.Wakee]
		edges = append(edges, e)
	}
	w.Edges = edges
	x.markCommand()
	// A stall past its activation's final demand (a run whose end the
	// extraction dated earlier: an inferred displacement) is cut there, and
	// one overlapping the one before (the same) starts at its end.
	stalls := x.hostStalls.resolve(keep)
	w.TickPhaseNS = max(x.hostStalls.global, 0)
	x.tickSoftIRQ(keep, x.hostStalls.global)
	w.HostStalls = stalls[:0]
	for _, h := range stalls {
		if n := len(w.HostStalls); n > 0 {
			if p := w.HostStalls[n-1]; p.overlaps(&h) {
				end := h.OffsetNS + h.LenNS
				h.OffsetNS = p.OffsetNS + p.LenNS
				h.cutFront(end - h.OffsetNS)
			}
		}
		if d := w.Tasks[h.Task].Activations[h.Act].DemandNS; h.OffsetNS < d && h.LenNS > 0 {
			h.cutBack(min(h.LenNS, d-h.OffsetNS))
			w.HostStalls = append(w.HostStalls, h)
		}
	}
	for _, pool := range w.delayPools() {
		slices.Sort(*pool.ns)
	}
	w.Index()
	w.keepRequestReplyAwaits()
}

// Index sorts the edges (by waker, activation, offset) and links each
// activation to its edges and host stalls (EdgeLo/EdgeHi, StallLo/StallHi,
// which the replay reads). A program that builds or edits a workload's tasks, edges or stalls (a
// generator, a transformation of an extracted workload) calls it before
// Validate and Replay; extraction and LoadWorkload already have.
func (w *Workload) Index() {
	sort.SliceStable(w.Edges, func(i, j int) bool {
		a, b := &w.Edges[i], &w.Edges[j]
		if a.Waker != b.Waker {
			return a.Waker < b.Waker
		}
		if a.WakerAct != b.WakerAct {
			return a.WakerAct < b.WakerAct
		}
		if a.OffsetNS != b.OffsetNS {
			return a.OffsetNS < b.OffsetNS
		}
		return a.TimeNS < b.TimeNS
	})
	for i := range w.Tasks {
		for j := range w.Tasks[i].Activations {
			a := &w.Tasks[i].Activations[j]
			a.EdgeLo, a.EdgeHi, a.StallLo, a.StallHi = 0, 0, 0, 0
		}
	}
	for i := 0; i < len(w.Edges); {
		e := w.Edges[i]
		j := i
		for j < len(w.Edges) && w.Edges[j].Waker == e.Waker && w.Edges[j].WakerAct == e.WakerAct {
			j++
		}
		a := &w.Tasks[e.Waker].Activations[e.WakerAct]
		a.EdgeLo, a.EdgeHi = int32(i), int32(j)
		i = j
	}
	for i := 0; i < len(w.HostStalls); {
		h := w.HostStalls[i]
		j := i
		for j < len(w.HostStalls) && w.HostStalls[j].Task == h.Task && w.HostStalls[j].Act == h.Act {
			j++
		}
		if h.Task >= 0 && int(h.Task) < len(w.Tasks) && h.Act >= 0 && int(h.Act) < len(w.Tasks[h.Task].Activations) {
			a := &w.Tasks[h.Task].Activations[h.Act]
			a.StallLo, a.StallHi = int32(i), int32(j)
		}
		i = j
	}
}

// MaxSpanNS bounds a workload's time span, and each demand and sleep
// (a week): the engine's work grows with simulated time (ticks), and
// demand × capacity must not overflow, so a damaged timestamp (a trace
// "spanning" decades) is refused rather than simulated for hours.
const MaxSpanNS = 7 * 24 * 3600 * int64(1e9)

// validateMeasures checks the trace's measures a workload header carries
// (shared by Validate and WorkloadWriter.Finish, which gets the header
// without its activations).
func (w *Workload) validateMeasures() error {
	if w.NewidlePulls < 0 || w.NewidlePulls > w.NewidleChances {
		return fmt.Errorf("workload newidle pulls %d of %d chances", w.NewidlePulls, w.NewidleChances)
	}
	if w.TickPhaseNS < 0 || w.TickPhaseNS >= maxTickPhaseNS {
		return fmt.Errorf("workload tick phase %d ns: want [0, %d)", w.TickPhaseNS, maxTickPhaseNS)
	}
	for _, pool := range w.delayPools() {
		for _, d := range *pool.ns {
			if d < 0 || d > MaxSpanNS {
				return fmt.Errorf("workload %s delay %d ns: out of range", pool.table, d)
			}
		}
	}
	if m := w.Stalls; m != nil {
		// Drawn and added to times as they stand (noise.go).
		for _, pool := range [][]int64{m.StallsNS, m.IRQWakeStallsNS} {
			for _, d := range pool {
				if d < 0 || d > MaxSpanNS {
					return fmt.Errorf("workload stall model: a stall of %d ns", d)
				}
			}
		}
		if !(m.IRQWakeStall >= 0 && m.IRQWakeStall <= 1) {
			return fmt.Errorf("workload stall model: interrupt wakeup stall share %v: want [0, 1]", m.IRQWakeStall)
		}
	}
	if fl := w.Flips; fl.WakeeFlips > maxWakeeFlips || !countsIn(fl.Placements, fl.Explained, fl.ExplainedAt0) || !countsIn(fl.WeightPlacements, fl.WeightExplained, fl.WeightExplainedAt0) {
		return fmt.Errorf("workload wakee_flips %d explaining %d (at 0: %d) of %d placements and %d (at 0: %d) of %d weight pulls: out of range",
			fl.WakeeFlips, fl.Explained, fl.ExplainedAt0, fl.Placements, fl.WeightExplained, fl.WeightExplainedAt0, fl.WeightPlacements)
	}
	return nil
}

// countsIn: parts of n, none below 0 or above n.
func countsIn(n int, parts ...int) bool {
	for _, p := range parts {
		if p < 0 || p > n {
			return false
		}
	}
	return n >= 0
}

// Validate checks the workload's internal references (a file read back may
// come from elsewhere).
func (w *Workload) Validate() error {
	n := int32(len(w.Tasks))
	if w.EndNS-w.StartNS > MaxSpanNS {
		return fmt.Errorf("workload span %d to %d ns: more than a week", w.StartNS, w.EndNS)
	}
	if err := w.validateMeasures(); err != nil {
		return err
	}
	if err := w.validateBalancePulls(); err != nil {
		return err
	}
	for i, e := range w.Edges {
		if e.Kind >= numEdgeKinds {
			return fmt.Errorf("workload edge %d: unknown kind %d", i, e.Kind)
		}
		if e.Kind == EdgeReply && (e.Causal || e.Awaits) {
			return fmt.Errorf("workload edge %d: a reply edge cannot be causal or awaited", i)
		}
		if e.Awaits && (e.Kind != EdgeWake || !e.Causal) {
			return fmt.Errorf("workload edge %d: only a causal wakeup can await a reply", i)
		}
		if e.Raced && (e.Kind != EdgeWake || !e.Causal) {
			return fmt.Errorf("workload edge %d: only a causal wakeup can race its wakee's block", i)
		}
		if e.Kind == EdgeMove && (e.Target < 0 || e.Target >= model.MaxCPUs) {
			return fmt.Errorf("workload edge %d: a move to CPU %d", i, e.Target)
		}
		if e.Waker < 0 || e.Waker >= n || e.Wakee < 0 || e.Wakee >= n {
			return fmt.Errorf("workload edge %d: task index out of range", i)
		}
		if e.WakerAct < 0 || int(e.WakerAct) >= len(w.Tasks[e.Waker].Activations) {
			return fmt.Errorf("workload edge %d: waker activation %d out of range", i, e.WakerAct)
		}
		if e.WakeeAct < 0 || int(e.WakeeAct) >= len(w.Tasks[e.Wakee].Activations) {
			return fmt.Errorf("workload edge %d: wakee activation %d out of range", i, e.WakeeAct)
		}
		if e.OffsetNS < 0 || e.OffsetNS > w.Tasks[e.Waker].Activations[e.WakerAct].DemandNS {
			return fmt.Errorf("workload edge %d: offset %d outside the waker's demand", i, e.OffsetNS)
		}
		if e.NoPreemptNS < 0 || e.OffsetNS+e.NoPreemptNS > w.Tasks[e.Waker].Activations[e.WakerAct].DemandNS {
			return fmt.Errorf("workload edge %d: no-preemption stretch %d outside the waker's demand", i, e.NoPreemptNS)
		}
	}
	for i, h := range w.HostStalls {
		if h.Task < 0 || h.Task >= n || h.Act < 0 || int(h.Act) >= len(w.Tasks[h.Task].Activations) {
			return fmt.Errorf("workload host stall %d: task %d activation %d out of range", i, h.Task, h.Act)
		}
		if h.OffsetNS < 0 || h.LenNS <= 0 || h.OffsetNS+h.LenNS > w.Tasks[h.Task].Activations[h.Act].DemandNS {
			return fmt.Errorf("workload host stall %d: [%d, +%d) outside the activation's demand", i, h.OffsetNS, h.LenNS)
		}
		if err := h.checkWall(w); err != nil {
			return fmt.Errorf("workload host stall %d: %v", i, err)
		}
		if i > 0 {
			p := &w.HostStalls[i-1]
			if p.Task > h.Task || p.Task == h.Task && p.Act > h.Act || p.overlaps(&h) {
				return fmt.Errorf("workload host stall %d: not after stall %d (sorted by task, activation, offset; no overlap)", i, i-1)
			}
		}
	}
	causes := make([][]int, len(w.Tasks))
	for i := range w.Tasks {
		causes[i] = make([]int, len(w.Tasks[i].Activations))
	}
	for _, e := range w.Edges {
		if e.Causal {
			causes[e.Wakee][e.WakeeAct]++
		}
	}
	long, err := w.longChargeKeys()
	if err != nil {
		return err
	}
	irq, err := w.irqCurrentKeys()
	if err != nil {
		return err
	}
	for i := range w.Tasks {
		if al := w.Tasks[i].Allowed; al != nil {
			if len(al) == 0 {
				return fmt.Errorf("workload task %d: allowed no CPU", i)
			}
			for k, c := range al {
				if c < 0 || c >= model.MaxCPUs || (k > 0 && c <= al[k-1]) {
					return fmt.Errorf("workload task %d: allowed CPUs %v: want ascending CPU numbers below %d", i, al, model.MaxCPUs)
				}
			}
		}
		for j, a := range w.Tasks[i].Activations {
			if err := checkActivation(i, j, &a); err != nil {
				return err
			}
			if qi, ok := irq[actKey{int32(i), int32(j)}]; ok {
				if err := checkIRQCurrentAct(qi, w.IRQCurrent[qi], &a); err != nil {
					return err
				}
				delete(irq, actKey{int32(i), int32(j)})
			}
			if li, ok := long[actKey{int32(i), int32(j)}]; ok {
				if err := checkLongChargeAct(li, w.LongSwitchCharges[li], &a); err != nil {
					return err
				}
				delete(long, actKey{int32(i), int32(j)})
			}
			if a.DemandNS > MaxSpanNS || a.SleepNS > MaxSpanNS || -a.SleepNS > MaxSpanNS || a.ReleaseNS-w.StartNS > MaxSpanNS || w.StartNS-a.ReleaseNS > MaxSpanNS {
				return fmt.Errorf("workload task %d activation %d: demand %d, sleep %d or release %d ns more than a week", i, j, a.DemandNS, a.SleepNS, a.ReleaseNS)
			}
			want := 0
			if a.Cause == CauseWake || a.Cause == CauseFork {
				want = 1
			}
			if causes[i][j] != want {
				return fmt.Errorf("workload task %d activation %d (cause %s): %d causal edges, want %d", i, j, a.Cause, causes[i][j], want)
			}
		}
	}
	if err := w.irqCurrentMissing(irq); err != nil {
		return err
	}
	return w.longChargeMissing(long)
}

// checkActivation checks what activation j of task i says of itself (not
// its edges or times): Validate's checks and the streaming writer's.
func checkActivation(i, j int, a *Activation) error {
	switch {
	case a.DemandNS < 0:
		return fmt.Errorf("workload task %d activation %d: negative demand", i, j)
	case j > 0 && (a.Cause == CauseStart || a.Cause == CauseFork):
		return fmt.Errorf("workload task %d activation %d: cause %s is only valid for the first activation", i, j, a.Cause)
	case a.IRQCPUPlus1 < 0 || a.IRQCPUPlus1 > model.MaxCPUs || a.IRQCPUPlus1 > 0 && a.Cause != CauseArrival:
		return fmt.Errorf("workload task %d activation %d: interrupt CPU %d (an arrival's, 0 to %d)", i, j, a.IRQCPUPlus1-1, model.MaxCPUs-1)
	case a.IRQ != IRQNone && (a.Cause != CauseArrival || irqContextOf(int64(a.IRQ)) != a.IRQ):
		return fmt.Errorf("workload task %d activation %d: interrupt context %v (an arrival's: hardirq, softirq or nmi)", i, j, a.IRQ)
	case a.OwnPrio && (a.Prio < 0 || a.Prio > maxPrio):
		return fmt.Errorf("workload task %d activation %d: prio %d outside 0-%d", i, j, a.Prio, maxPrio)
	}
	return nil
}

// HostStallTotal is the number of host stalls and their total length.
func (w *Workload) HostStallTotal() (n int, ns int64) {
	for _, h := range w.HostStalls {
		ns += h.LenNS
	}
	return len(w.HostStalls), ns
}

// IRQElsewhereTotal is the number of arrivals whose interrupt the trace
// shows on another CPU than their wakee's (Activation.IRQCPUPlus1): the
// wakeups whose IPI the replay sends from there (Config.IRQIPI).
func (w *Workload) IRQElsewhereTotal() (n int) {
	for i := range w.Tasks {
		for _, a := range w.Tasks[i].Activations {
			if a.IRQCPUPlus1 > 0 {
				n++
			}
		}
	}
	return n
}

// Stats summarises the workload for people.
func (w *Workload) Stats() (tasks, acts, edges, arrivals int, demand int64) {
	for i := range w.Tasks {
		for _, a := range w.Tasks[i].Activations {
			acts++
			demand += a.DemandNS
			if a.Cause == CauseArrival {
				arrivals++
			}
		}
	}
	return len(w.Tasks), acts, len(w.Edges), arrivals, demand
}

// ttwuStep follows a try_to_wake_up on CPU c through its records: its
// waking (block 2 opens it), its migration, then the enqueue's records
// (the target's update_curr, the wakee's sched_stat_sleep). A host stall
// that ended at the first enqueue record, right after the waking or its
// migration, fell inside the try_to_wake_up: the wakee was queued only
// after it.
func (x *extractor) ttwuStep(e *timeline.Event, c int32) {
	x.growCPU(c)
	ei := x.ttwuOpen[c]
	if ei < 0 {
		return
	}
	switch e.Kind {
	case timeline.SchedMigrateTask:
		if t := x.byTID[e.Int32(timeline.PID)]; t != nil && t.idx == x.edges[ei].Wakee {
			if e.IsSet(timeline.DestCPU) {
				x.ttwuDest[c] = e.Int32(timeline.DestCPU)
			}
			return
		}
	case timeline.SchedStatRuntime, timeline.SchedStatSleep, timeline.SchedStatIOWait, timeline.SchedStatBlocked:
		// The enqueue's own records, in the waker's context: the
		// wakee's sleep statistics, or update_curr of the target's
		// running task (enqueue_entity's).
		ed := &x.edges[ei]
		pid := e.Int32(timeline.PID)
		mine := false
		if t := x.byTID[pid]; t != nil && t.idx == ed.Wakee && e.Kind != timeline.SchedStatRuntime {
			mine = true
		}
		dest := ed.Target
		if x.ttwuDest[c] >= 0 {
			dest = x.ttwuDest[c]
		}
		if e.Kind == timeline.SchedStatRuntime && dest >= 0 && int(dest) < len(x.cur) && x.cur[dest] == pid {
			mine = true
		}
		if mine && irqContext(e) == 0 && x.stallEnd[c] == e.Time {
			ed.EnqueueAfterStall = true
		}
	}
	x.ttwuOpen[c] = -1
}
