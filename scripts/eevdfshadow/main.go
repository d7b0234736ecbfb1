// Command eevdfshadow redoes EEVDF's bookkeeping (v6.12's rules: lag
// placement, RUN_TO_PARITY, delayed dequeue with DELAY_ZERO,
// PLACE_REL_DEADLINE) beside a timeline, from the timeline alone, and says
// how often its pick_eevdf names the task the timeline switched to. Every
// sched_stat_runtime is an update_curr with its exact delta, so on a
// timeline that has one per update_curr (a v6.12 trace, a replay's output
// since session 33) the shadow's vruntimes, deadlines and lags follow the
// scheduler's; where it agrees with the switches, its lags are the
// scheduler's lags, which no trace records. It also tabulates the wakeups
// onto a CPU running a CFS task: whether pick_eevdf names the wakee at
// the wakeup check (a preemption predicted), whether the timeline's next
// switch there preempted for it, and the wakee's and the running task's
// lags (FIDELITY.md round 61); the picks that follow a delayed block, by
// how the delay ended (a waking requeued the task, or a pick dequeued it
// first), and each block's sleep to the task's next waking (round 151):
//
//	replay whatif -i fixtures/kernels/v6.12/guest-M-1s1c2t/r3/schbench.perf.data.gz --seed 0 -o /tmp/m3.arrow
//	go run ./scripts/eevdfshadow fixtures/kernels/v6.12/guest-M-1s1c2t/r3/schbench.perf.data.gz vs /tmp/m3.arrow
//
// Files before "vs" add up in the first column, those after it in the
// second.
//
// What the timeline does not show is taken as follows. A task first seen
// queued or running (before the trace began), or woken before the shadow
// saw it leave a queue, has an unknown lag: it is placed with lag 0, and
// picks made while it is queued count apart ("unverified"). A wakeup's
// enqueue is placed at its sched_stat_sleep when the timeline has
// schedstats (a trace: written right at the placement, after the
// enqueue's update_curr; however late it comes, a waker stalled by the
// host inside try_to_wake_up), else right after a sched_stat_runtime of the
// target CPU's running task at the waking's own time (a replay), else
// before the next event on that CPU. A task the balancer moves is placed
// on its new CPU the same way, after the switch that ends the running
// task there if one comes first (a newly idle CPU's pull; before that
// switch's pick where the CPU still has a runnable task: a tick's softirq
// balance, which a pending reschedule of that tick waits for), a balance
// pass's moves (written one after another on the pulling CPU, at one
// instant in a replay, each at its own in a trace) together and in
// attach_tasks' order (the last detached first). A wakeup that comes
// while its wakee is still on a queue is taken for one that raced its
// block if a block follows (placed after that switch), unless the
// timeline wakes the task again after that block before it runs. With
// schedstats, a block they show the kernel kept queued is a delayed
// dequeue, and one whose sleep they date from the block a dequeue with
// a lag of at least 1 ns, whatever the shadow's own V says (FIDELITY.md
// rounds 127 and 130); a block whose sleep they date from before a
// balancer's move onto its CPU written there, or a remote wakeup's
// placement there, both before the switch and no other task runnable
// there, was dequeued before them, in the schedule() whose newly idle
// balance ran meanwhile (round 146). The base slice is the timeline's machine's
// (0.70 ms × (1 + ilog2 of its CPUs, up to 8)) unless -slice says. A pick
// that the timeline does not show (schedule() keeping the running task)
// is redone where it must have happened: after the tick's update that
// asked for it (one in hard-interrupt context that no waking onto the CPU
// waits for: a remote wakeup's enqueue from the wake list's IPI is in
// that context too, and its reschedule waits like any other), or at the
// running task's next update that is no enqueue's; the delayed tasks it
// met leave then.
//
// -no-parity, -no-delay, -no-inflate and -no-delay-zero switch one rule
// off, -own-delay the trace's evidence of delayed dequeues and
// -wake-at-switch the late placement of remote wakeups, to see how much
// of a trace another rule would explain.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

// ent is a task's sched_entity as the shadow knows it.
type ent struct {
	pid     int32
	comm    string
	w       int64
	v, d    int64 // vruntime, deadline
	vlag    int64
	cpu     int32
	onRQ    bool
	delayed bool
	prot    bool // RUN_TO_PARITY: not renewed since its pick
	relDL   bool // deadline kept relative across a balancer move
	guessed bool // its place in the queue rests on a guess
	// lagKnown: its lag came from a dequeue the shadow saw, of an entity
	// placed from known state (or it was forked in the trace).
	lagKnown bool
	// clipped: its saved lag is DELAY_ZERO's 0 for a positive one (its
	// delayed dequeue's), not a lag it had.
	clipped bool
	held    bool // woken while on a queue: its next block is a wakeup
	// outEarly: it blocked in a schedule() that moved or placed tasks
	// onto its CPU before the switch (a newly idle balance ran): dequeued
	// before them (blockEarly), its switch's block skips the dequeue.
	outEarly bool
	spec     bool // placed at its block for a held wakeup, no waking since
	specLag  int64
	rt       bool
	seq      int64 // tree insertion order (ties of deadline)
	// dlFrom: what set its deadline: "wakeup", "fork", "renewal",
	// "move".
	dlFrom  string
	pickLag int64 // its lag at its last pick
	// delayAt, delayWoken, delayEnd: when its last delayed block came,
	// its first waking since (0 none yet), and how that delay ended
	// (delayPending and the others; "" while none is pending): tallied
	// at its next pick (results.afterDelay).
	delayAt, delayWoken int64
	delayEnd            string
	// sleepStats, sleepFrom: the tally its last block went into and that
	// block's time, until a waking or its next switch-in (nil then).
	sleepStats *blockStats
	sleepFrom  int64
	// pickUsed: how much of its request (virtual ns) it had used at its
	// last pick; lastEnd: how its run before that pick ended.
	pickUsed                     int64
	lastEnd, pickEnd, pickDL     string
	lastDV                       [len(dvCauses)]int64 // V's moves during it, by cause
	charged, lastCharged         int64                // its runtime since its pick; at its last block
	outLag, outAt                int64                // its lag at its last switch-out, and when
	pickOutLag, pickWait         int64                // at its last pick: the two above, and the wait since
	pickAgreed                   bool                 // the shadow's pick was its
	outCum                       [len(dvCauses)]int64 // its CPU's cum at its last switch-out
	outCPU                       int32
	outRan, outPickLag           int64                // the run that switch-out ended, and its lag at that run's pick
	pickWaitDV                   [len(dvCauses)]int64 // V's moves on its CPU during that wait, by cause
	pickWaitKnown                bool                 // ... on the CPU it left, not moved since
	pickPrevRan, pickPrevPickLag int64                // at its last pick: outRan and outPickLag
}

// cfsRQ is one CPU's cfs_rq.
type cfsRQ struct {
	q     []*ent // on_rq entities: queued, running, delayed
	curr  *ent   // cfs_rq->curr (nil: idle or another class)
	lastV int64  // V when the queue last emptied
	since int64  // when the running task was switched in
	// charged: when the running task's time was last charged (its
	// switch-in or its latest sched_stat_runtime).
	charged int64
	// resched: an update_curr asked for a reschedule not yet seen;
	// reschedTick: the tick's, written at reschedAt.
	resched, reschedTick bool
	reschedAt            int64
	// dv: V's change since the running task's pick, by cause; cum: since
	// the start, by cause (a waiting task's share is the change since its
	// switch-out).
	dv, cum [len(dvCauses)]int64
	// comp: time × entities queued beside the running task since its
	// pick, by group (delayed apart).
	comp map[string]int64
}

// params are the kernel's constants the rules use.
type params struct {
	sliceNS, tickNS int64
	// Rule switches, to test how far another rule explains a trace.
	noParity, noDelay, noInflate bool
	// wakeAtSwitch: place every pending wakeup onto a CPU before its
	// switch, even a remote one whose sched_stat_sleep has not come.
	wakeAtSwitch bool
	// ownDelay: decide every block's delayed dequeue by the shadow's own
	// eligibility, not also by the trace's evidence (blockEvidence).
	ownDelay bool
	// noDelayZero: DELAY_ZERO off (a delayed entity keeps a positive
	// lag when it leaves, and a woken one stays where it is).
	noDelayZero bool
}

func (r *cfsRQ) has(e *ent) bool {
	for _, x := range r.q {
		if x == e {
			return true
		}
	}
	return false
}

func (r *cfsRQ) remove(e *ent) {
	for i, x := range r.q {
		if x == e {
			r.q = append(r.q[:i], r.q[i+1:]...)
			break
		}
	}
	if len(r.q) == 0 {
		r.lastV = e.v
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// sums are avg_vruntime's sums relative to ref (the first entity's).
func (r *cfsRQ) sums() (ref, avg, load int64) {
	if len(r.q) == 0 {
		return r.lastV, 0, 0
	}
	ref = r.q[0].v
	for _, e := range r.q {
		avg += e.w * (e.v - ref)
		load += e.w
	}
	return ref, avg, load
}

// V is avg_vruntime.
func (r *cfsRQ) V() int64 {
	ref, avg, load := r.sums()
	if load == 0 {
		return ref
	}
	return ref + floorDiv(avg, load)
}

// eligible is entity_eligible: V ≥ v, without the division.
func (r *cfsRQ) eligible(e *ent) bool {
	ref, avg, load := r.sums()
	return avg >= (e.v-ref)*load
}

func (p params) vslice(e *ent) int64 { return p.sliceNS * 1024 / e.w }

// updateLag is update_entity_lag, e still queued.
func (p params) updateLag(r *cfsRQ, e *ent) {
	lim := max(2*p.sliceNS, p.tickNS) * 1024 / e.w
	e.vlag = min(max(r.V()-e.v, -lim), lim)
	e.lagKnown = !e.guessed
}

var seq int64

// place is place_entity and the insertion.
func (p params) place(r *cfsRQ, e *ent, initial bool) {
	V := r.V()
	lag := int64(0)
	if len(r.q) > 0 && e.vlag != 0 {
		_, _, load := r.sums()
		lag = e.vlag * (load + e.w) / load
		if p.noInflate {
			lag = e.vlag
		}
	}
	e.v = V - lag
	if e.relDL {
		e.d += e.v
		e.relDL = false
	} else {
		vs := p.vslice(e)
		if initial {
			vs /= 2
		}
		e.d = e.v + vs
	}
	seq++
	e.seq = seq
	e.onRQ = true
	r.q = append(r.q, e)
}

// dequeue takes e off r (update_entity_lag first); delayed: the final
// dequeue of a delayed entity (DELAY_ZERO clips a positive lag); moved:
// a balancer's move (PLACE_REL_DEADLINE keeps the deadline relative).
func (p params) dequeue(r *cfsRQ, e *ent, delayed, moved bool) {
	p.updateLag(r, e)
	r.remove(e)
	e.onRQ = false
	e.clipped = false
	if delayed || e.delayed && !moved {
		e.delayed = false
		if e.vlag > 0 && !p.noDelayZero {
			e.vlag, e.clipped = 0, true
		}
	}
	if moved {
		e.d -= e.v
		e.relDL = true
	}
}

// pick is pick_eevdf.
func (p params) pick(r *cfsRQ) *ent {
	if len(r.q) == 0 {
		return nil
	}
	if len(r.q) == 1 {
		return r.q[0]
	}
	// entity_eligible for each candidate, the sums taken once.
	ref, avg, load := r.sums()
	eligible := func(e *ent) bool { return avg >= (e.v-ref)*load }
	curr := r.curr
	if curr != nil && (!curr.onRQ || !eligible(curr)) {
		curr = nil
	}
	if curr != nil && curr.prot && !p.noParity {
		return curr
	}
	var best *ent
	for _, e := range r.q {
		if e == r.curr || !eligible(e) {
			continue
		}
		if best == nil || e.d < best.d || e.d == best.d && e.seq < best.seq {
			best = e
		}
	}
	if best == nil || curr != nil && curr.d < best.d {
		best = curr
	}
	return best
}

// pickNext is pick_task_fair's loop: a delayed entity picked leaves.
func (p params) pickNext(r *cfsRQ) *ent {
	for {
		e := p.pick(r)
		if e == nil || !e.delayed {
			return e
		}
		p.dequeue(r, e, true, false)
		e.delayEnd = delayPicked
	}
}

// updateCurr is update_curr with the delta a sched_stat_runtime gives;
// resched: it ends asking for a reschedule (a request used up, or
// PREEMPT_SHORT's: past its protection and no longer eligible, with
// others queued).
func (p params) updateCurr(r *cfsRQ, e *ent, delta int64) (resched bool) {
	e.v += delta * 1024 / e.w
	renewed := e.v >= e.d
	if renewed {
		e.d = e.v + p.vslice(e)
		e.prot = false
		e.dlFrom = "renewal"
	}
	return len(r.q) > 1 && (renewed || !e.prot && !r.eligible(e))
}

// statWindowNS is how long after its sched_waking (or
// sched_migrate_task) a wakeup's enqueue is awaited in a trace with
// schedstats where the trace shows no sleep statistics for it before the
// task runs (one that does is awaited for as long as it takes,
// pending.stat): the guests' traces show up to about 0.2 ms between the
// two. A replay's enqueue has the waking's own timestamp.
const statWindowNS = 300000

// pending is an enqueue the shadow has not placed yet.
type pending struct {
	pid     int32
	cpu     int32
	at      int64
	moved   bool  // a balancer's move (else a wakeup)
	initial bool  // a new task's first enqueue
	spec    bool  // a wakeup that came while its wakee was on a queue
	waker   int32 // the task running where the waking was written
	from    int32 // the CPU the waking was written on
	pass    int   // a move's balance pass (movePass)
	// stat: the trace writes this wakeup's enqueue (its sleep
	// statistics) before the task runs (blockEvidence): placed there,
	// however late.
	stat bool
	// held: a replay's remote wakeup onto a CPU running a fair task whose
	// enqueue did not come at its waking (whatif's wake_stall: the waker
	// stalled by its host inside try_to_wake_up enqueues it when its
	// stall ends): placed at the update of the target's running task that
	// the waker writes then (heldEnqueue), or at the wakee's switch-in.
	held bool
}

// wakeRec is a wakeup placed on a CPU running a CFS task: the shadow's
// view at the placement, and what the timeline did next on that CPU.
type wakeRec struct {
	wakee, curr        string
	wakeeLag, currLag  int64
	currProt, currElig bool
	predicted          bool // pick_eevdf names the wakee at the check
	at                 int64
	tick               bool // a tick's update came before the next switch
	preempted, decided bool
	wakeePID, currPID  int32
	ran                int64 // how long the running task had run since its switch-in
	pickLag            int64 // the running task's lag when it was picked
	nq                 int   // entities on the queue before the placement
	// timer: woken from the running task's own context (by it, or in an
	// interrupt it took, such as its CPU's hrtimer: the trace names it
	// the waker) or by none (a replay's interrupt), not by another task.
	timer bool
	// currUsed: how much of its request the running task had used when
	// it was picked; currAfter: how its run before that pick ended.
	currUsed          int64
	currAfter, currDL string
	// others: the lags of the other entities queued there (not the
	// running task, not the wakee), lowest first.
	others []int64
	// wakeeRan, wakeePickLag...: the wakee's last run, its lag at that
	// run's pick, V's moves during it, its lag at the block and the lag
	// saved; currOutLag, currWait: the running task's lag at its last
	// switch-out before its pick, and the wait from there; currAgreed:
	// the shadow made the running task's pick.
	wakeeRan, wakeePickLag       int64
	wakeeDV                      [len(dvCauses)]int64
	wakeeBlockLag, wakeeVlag     int64
	wakeeCharged                 int64
	currOutLag, currWait         int64
	currAgreed                   bool
	currWaitDV                   [len(dvCauses)]int64
	currWaitKnown                bool
	currPrevRan, currPrevPickLag int64
	// wakeeSaved: the lag the wakee's placement starts from (savedLag),
	// and whether the running task was alone on its queue.
	wakeeSaved string
}

type shadow struct {
	// cpuSeq: events written on each CPU so far, indexed by CPU (every
	// event counts, so a slice, not a map); lastMove, passes: movePass's
	// state.
	cpuSeq   []int64
	lastMove map[int32]lastMove
	passes   int
	p        params
	ents     map[int32]*ent
	rqs      map[int32]*cfsRQ
	pend     []*pending
	gotRun   map[int32]bool // pid -> runtime of its target's curr seen
	watch    map[int32]*wakeRec
	col      int
	res      *results
	verbose  bool
	// autoSlice: the base slice is each timeline's own (baseSliceNS).
	autoSlice bool
	path      string
	// statMode: the timeline has sched_stat_sleep; window: how long a
	// pending enqueue waits for its update and placement events.
	statMode bool
	// kept: the blocks after which the trace shows the kernel kept the
	// task queued, delayed (blockEvidence; with schedstats only).
	kept map[blockKey]bool
	// rewoken: the blocks after which the trace shows a waking of the
	// task before it ran again; dequeued: those whose sleep statistics
	// date the sleep from the block (blockEvidence; with schedstats
	// only).
	rewoken, dequeued map[blockKey]bool
	// enqueueStat: the wakings (pid, time) whose enqueue the trace's
	// sleep statistics show before the task runs (blockEvidence).
	enqueueStat map[blockKey]bool
	// early: per task, the blocks whose sleep statistics date the sleep
	// well before the switch, [sleep start, switch] (blockEvidence).
	early  map[int32][][2]int64
	window int64
	trace  *traceWindow
	lastT  int64
}

// traceWindow: print the shadow's queue at every switch on cpu in
// [from, to] (ns).
type traceWindow struct {
	cpu      int32
	from, to int64
}

func (s *shadow) rq(c int32) *cfsRQ {
	r := s.rqs[c]
	if r == nil {
		r = &cfsRQ{}
		s.rqs[c] = r
	}
	return r
}

func group(comm string) string {
	if i := strings.IndexByte(comm, '/'); i > 0 {
		return comm[:i]
	}
	return comm
}

// prioOf is the event's field f, -1 when unset.
func prioOf(e *timeline.Event, f timeline.Col) int64 {
	if !e.IsSet(f) {
		return -1
	}
	return e.Int(f)
}

func (s *shadow) ent(pid int32, comm string, prio int64) *ent {
	e := s.ents[pid]
	if e == nil {
		e = &ent{pid: pid, w: 1024, cpu: -1, guessed: true}
		s.ents[pid] = e
	}
	if comm != "" {
		e.comm = comm
	}
	if prio >= 0 {
		rt := prio < 100
		if rt && !e.rt && e.onRQ {
			s.leaveFair(e)
		}
		e.rt = rt
		e.w = int64(whatif.WeightOfPrio(int32(prio)))
	}
	return e
}

// leaveFair takes e off its cfs_rq when the trace first shows it under a
// real-time priority while the shadow still has it there: a task that
// switched itself to SCHED_FIFO or SCHED_RR (stress-ng's cyclic stressor
// does, mid-run). __sched_setscheduler dequeues it from the fair class
// (its lag saved, the deadline kept relative, as for any dequeue that is
// not a sleep), or ends a delayed dequeue (DEQUEUE_DELAYED). Left there,
// it would hold V back for as long as it stays real-time.
func (s *shadow) leaveFair(e *ent) {
	r := s.rq(e.cpu)
	if e.delayed {
		s.p.dequeue(r, e, true, false)
	} else {
		s.p.dequeue(r, e, false, true)
	}
	if r.curr == e {
		r.curr = nil
	}
	s.pend = slices.DeleteFunc(s.pend, func(pd *pending) bool { return pd.pid == e.pid })
	s.res.leftFair[s.col]++
}

// placedBy reports whether pending wakeup pd is enqueued by the time of
// an event on CPU c (a switch there to nextPID, or another waking written
// there onto pd's CPU; nextPID -1): always without schedstats (a replay
// enqueues at the waking, unless it held the enqueue: pending.held) or
// with -wake-at-switch; else when pd's waking was written on c too (its
// enqueue followed it there at once) or its wakee is the task switched
// in. A remote waking's enqueue is its sched_stat_sleep, placed then.
func (s *shadow) placedBy(pd *pending, c, nextPID int32) bool {
	if pd.held {
		return pd.pid == nextPID
	}
	return !s.statMode || s.p.wakeAtSwitch || pd.from == c || pd.pid == nextPID
}

func (s *shadow) placePending(pd *pending) {
	if pd.stat && s.lastT-pd.at > s.window {
		s.res.late[s.col]++
	}
	e := s.ents[pd.pid]
	delete(s.gotRun, pd.pid)
	if e == nil || e.onRQ {
		return
	}
	if !pd.moved && pd.from != pd.cpu {
		s.blockEarly(pd.cpu, s.lastT)
	}
	r := s.rq(pd.cpu)
	if !pd.moved {
		// Wakeups do not carry PLACE_REL_DEADLINE.
		e.relDL = false
	}
	e.spec, e.specLag = pd.spec, e.vlag
	nq := len(r.q)
	saved := savedLag(e)
	s.track(r, "placements", func() { s.p.place(r, e, pd.initial) })
	switch {
	case pd.moved:
		if e.dlFrom == "" {
			e.dlFrom = "move"
		}
	case pd.initial:
		e.dlFrom = "fork"
	default:
		e.dlFrom = "wakeup"
	}
	e.cpu = pd.cpu
	// Its lag is known once the shadow has seen it leave a queue (or be
	// forked); before, a wakeup places it with a guessed lag of 0.
	e.guessed = !e.lagKnown
	if pd.moved || pd.initial || r.curr == nil || !r.curr.onRQ || r.curr == e {
		return
	}
	// check_preempt_wakeup_fair: the update_curr was the runtime above.
	V := r.V()
	w := &wakeRec{wakee: group(e.comm), curr: group(r.curr.comm), wakeeLag: V - e.v, currLag: V - r.curr.v,
		currProt: r.curr.prot, currElig: r.eligible(r.curr), predicted: s.p.pick(r) == e, at: pd.at,
		wakeePID: e.pid, currPID: r.curr.pid, ran: pd.at - r.since, pickLag: r.curr.pickLag, nq: nq,
		timer: pd.waker == 0 || pd.waker == r.curr.pid && pd.cpu == r.curr.cpu, currUsed: r.curr.pickUsed, currAfter: r.curr.pickEnd, currDL: r.curr.pickDL,
		wakeeRan: e.outRan, wakeePickLag: e.pickLag, wakeeDV: e.lastDV, wakeeBlockLag: e.outLag, wakeeCharged: e.lastCharged, wakeeVlag: e.specLag, currOutLag: r.curr.pickOutLag, currWait: r.curr.pickWait, currAgreed: r.curr.pickAgreed,
		currWaitDV: r.curr.pickWaitDV, currWaitKnown: r.curr.pickWaitKnown,
		currPrevRan: r.curr.pickPrevRan, currPrevPickLag: r.curr.pickPrevPickLag, wakeeSaved: saved}
	if nq == 1 {
		w.wakeeSaved += ", the running task alone"
	}
	for _, x := range r.q {
		if x != e && x != r.curr && !x.delayed {
			w.others = append(w.others, V-x.v)
		}
	}
	slices.Sort(w.others)
	s.watch[pd.cpu] = w
}

// savedLag says what lag a wakee is placed with, before the placement:
// one the shadow does not know (placed as 0), DELAY_ZERO's clip of a
// positive one, or the sign of the lag its dequeue saved.
func savedLag(e *ent) string {
	switch {
	case !e.lagKnown:
		return "unknown"
	case e.clipped:
		return "clipped to 0 by DELAY_ZERO"
	case e.vlag > 0:
		return "positive"
	case e.vlag < 0:
		return "negative"
	}
	return "0"
}

// movePass numbers the balance pass a sched_migrate_task belongs to:
// that of the event written just before it on the same CPU if that was
// a move between the same two CPUs (detach_tasks writes one per task
// under both queues' locks, nothing between them: a trace gives each
// its own instant, a replay the same), else a new one.
func (s *shadow) movePass(e *timeline.Event) int {
	c := e.Int32(timeline.CPU)
	k := [2]int32{e.Int32(timeline.OrigCPU), e.Int32(timeline.DestCPU)}
	seq := s.seqOf(c)
	if last, ok := s.lastMove[c]; ok && last.seq == seq-1 && last.cpus == k {
		s.lastMove[c] = lastMove{seq, k, last.pass}
		return last.pass
	}
	s.passes++
	s.lastMove[c] = lastMove{seq, k, s.passes}
	return s.passes
}

// lastMove: the last sched_migrate_task written on a CPU, by its event
// number in the timeline, the CPUs it moved between, and its pass.
type lastMove struct {
	seq  int64
	cpus [2]int32
	pass int
}

// settle runs the schedule() an update_curr asked for on CPU c before
// anything else happens there.
func (s *shadow) settle(c int32) {
	if r := s.rqs[c]; r != nil && r.resched && r.reschedTick {
		s.settleNow(c)
	}
}

// settleFrom is settle for an enqueue or move onto CPU c written on CPU
// w at time t. One written on c itself at the instant of its tick's
// update that asked for the reschedule comes from inside that interrupt
// (the tick's softirq: its balance's pulls, its timers' wakeups), which
// irq_exit runs before returning to schedule(): the pick comes after it,
// as a replay's does (FIDELITY.md round 111). A trace's softirq comes
// microseconds after its tick's update and is not told apart.
func (s *shadow) settleFrom(c, w int32, t int64) {
	if r := s.rqs[c]; r != nil && c == w && r.reschedAt == t {
		return
	}
	s.settle(c)
}

func (s *shadow) settleNow(c int32) {
	r := s.rq(c)
	r.resched = false
	s.track(r, "purges", func() { s.p.pickNext(r) })
}

// track runs f, a change to r, and adds what it did to V to the running
// task's tally under cause (the blocks table: where V went during a run)
// and to the waiting tasks' (cum).
func (s *shadow) track(r *cfsRQ, cause string, f func()) { s.trackV(r, cause, true, f) }

// trackCum is track for the moves a running task's own tally leaves out
// (its own block, the purges at its switch-out): they count for the tasks
// waiting (cum) only.
func (s *shadow) trackCum(r *cfsRQ, cause string, f func()) { s.trackV(r, cause, false, f) }

func (s *shadow) trackV(r *cfsRQ, cause string, own bool, f func()) {
	if len(r.q) == 0 || own && r.curr == nil {
		f()
		return
	}
	v0 := r.V()
	f()
	if len(r.q) > 0 {
		d := r.V() - v0
		if own {
			r.dv[causeIndex(cause)] += d
		}
		r.cum[causeIndex(cause)] += d
	}
}

// dvCauses name what moves V while a task runs (blocks: a running task's
// own, in the waiting tasks' tally only).
var dvCauses = [...]string{"own run", "placements", "requeues", "departures", "purges", "blocks"}

func causeIndex(c string) int {
	for i, x := range dvCauses {
		if x == c {
			return i
		}
	}
	panic(c)
}

// seqOf is CPU c's event count (0 for a CPU not seen, or none).
func (s *shadow) seqOf(c int32) int64 {
	if c < 0 || int(c) >= len(s.cpuSeq) {
		return 0
	}
	return s.cpuSeq[c]
}

func (s *shadow) event(e *timeline.Event) {
	c := e.Int32(timeline.CPU)
	if c >= 0 {
		for int(c) >= len(s.cpuSeq) {
			s.cpuSeq = append(s.cpuSeq, 0)
		}
		s.cpuSeq[c]++
	}
	if s.lastT > 0 && e.Time > s.lastT {
		dt := e.Time - s.lastT
		for _, r := range s.rqs {
			if r.curr == nil || r.curr.guessed {
				continue
			}
			q := &s.res.queue[s.col]
			q.busy += dt
			if r.comp == nil {
				r.comp = map[string]int64{}
			}
			for _, x := range r.q {
				if x.delayed {
					q.delayed += dt
				} else {
					q.runnable += dt
				}
				if x != r.curr {
					k := group(x.comm)
					if x.delayed {
						k += " (delayed)"
					}
					r.comp[k] += dt
				}
			}
		}
	}
	s.lastT = e.Time
	// A placement pending past its window is made before anything at a
	// later instant (a replay's, whose window is 0, before the next event
	// that is not at its own instant: its enqueue's update had nothing
	// to charge), unless a replay held its enqueue (holdLate).
	s.holdLate(e.Time)
	s.flushIf(func(pd *pending) bool { return s.overdue(pd, e.Time) }, e.Time)
	switch e.Kind {
	case timeline.SchedSwitch:
		s.rq(c).resched = false
	case timeline.SchedWaking, timeline.SchedWakeupNew:
		s.settleFrom(e.Int32(timeline.TargetCPU), c, e.Time)
	case timeline.SchedMigrateTask:
		s.settleFrom(e.Int32(timeline.OrigCPU), c, e.Time)
		s.settleFrom(e.Int32(timeline.DestCPU), c, e.Time)
	}
	switch e.Kind {
	case timeline.SchedStatRuntime:
		pid := e.Int32(timeline.PID)
		t := s.ents[pid]
		if t == nil || t.rt || t.cpu < 0 || s.rq(t.cpu).curr != t {
			s.res.notCur[s.col]++

			return
		}
		s.settle(t.cpu)
		// Pending placements onto another CPU than t's are untouched;
		// ones onto t's CPU wait for this update (the enqueue's).
		tc := t.cpu
		// An update too long after a pending wakeup's waking is not its
		// enqueue's (that one had nothing to charge), nor a second one:
		// placed before it.
		s.flushIf(func(pd *pending) bool {
			return pd.cpu == tc && (s.overdue(pd, e.Time) || s.gotRun[pd.pid] && !pd.stat)
		}, e.Time)
		claimed := false
		for _, pd := range s.pend {
			claimed = claimed || pd.cpu == tc && !s.gotRun[pd.pid]
		}
		r := s.rq(tc)
		r.charged = e.Time
		var resched bool
		s.track(r, "own run", func() { resched = s.p.updateCurr(r, t, e.Int(timeline.Runtime)) })
		t.charged += e.Int(timeline.Runtime)
		if resched {
			// schedule() follows; a pick of the running task again is
			// not traced, but the delayed tasks it met have left
			// (settle). The tick's comes at once (the return from the
			// interrupt); another's after the enqueue this update is
			// part of, when the CPU gets to it: also an enqueue's in
			// hard-interrupt context (a remote wakeup's IPI), which a
			// replay's switch may follow much later (the guest-N r2
			// hackbench replay: a waking by the running task came
			// between, its placement must see the delayed tasks the
			// pick has not yet purged).
			r.resched = true
			r.reschedTick = e.Int(timeline.CommonFlags)&0x08 != 0 && !claimed
			r.reschedAt = e.Time
		} else if !claimed && r.resched && !r.reschedTick {
			// This update is the schedule()'s own (pick_task_fair's
			// update_curr).
			s.settleNow(tc)
		}
		if w := s.watch[tc]; w != nil && e.Int(timeline.CommonFlags)&0x08 != 0 {
			w.tick = true
		}
		for _, pd := range s.pend {
			if pd.cpu == tc && (!pd.held || s.heldEnqueue(pd, tc, c)) {
				s.gotRun[pd.pid] = true
			}
		}
		// Placed right after the enqueue's update_curr (with schedstats,
		// at the sched_stat_sleep that follows it).
		if !s.statMode {
			s.flushIf(func(pd *pending) bool { return pd.cpu == tc && s.gotRun[pd.pid] }, e.Time)
		}
	case timeline.SchedStatSleep, timeline.SchedStatBlocked, timeline.SchedStatIOWait:
		pid := e.Int32(timeline.PID)
		s.flushIf(func(pd *pending) bool { return pd.pid == pid }, e.Time)
	case timeline.SchedWaking:
		pid := e.Int32(timeline.PID)
		t := s.ent(pid, e.Str(timeline.Comm), prioOf(e, timeline.Prio))
		if t.rt {
			return
		}
		if t.delayEnd != "" && t.delayWoken == 0 {
			t.delayWoken = e.Time
		}
		if b := t.sleepStats; b != nil {
			b.woken = append(b.woken, e.Time-t.sleepFrom)
			t.sleepStats = nil
		}
		if t.onRQ {
			if t.delayed {
				// requeue_delayed_entity: where it is; DELAY_ZERO.
				r := s.rq(t.cpu)
				s.p.updateLag(r, t)
				t.delayEnd = delayRequeuedKept
				if t.vlag > 0 && !s.p.noDelayZero {
					t.delayEnd = delayRequeuedPlaced
					s.track(r, "requeues", func() {
						r.remove(t)
						t.vlag = 0
						t.relDL = false
						s.p.place(r, t, false)
					})
				}
				t.delayed = false
			} else if t.spec {
				// The held wakeup was not one: this is (a wakeup raced
				// with the block shows no second waking).
				r := s.rq(t.cpu)
				if r.curr != t {
					r.remove(t)
					t.onRQ, t.vlag = false, t.specLag
					s.res.undone[s.col]++
					t.spec = false
					s.pend = append(s.pend, &pending{pid: pid, cpu: e.Int32(timeline.TargetCPU), at: e.Time, from: c, stat: s.enqueueStat[blockKey{pid, e.Time}]})
					return
				}
			} else {
				// ttwu_runnable; or, if it blocks next, a wakeup that
				// found it dequeued but still switching out.
				t.held = true
			}
			return
		}
		for _, pd := range s.pend {
			if pd.pid == pid {
				return
			}
		}
		tc := e.Int32(timeline.TargetCPU)
		s.flushIf(func(pd *pending) bool { return pd.cpu == tc && !pd.moved && s.placedBy(pd, c, -1) }, 0)
		s.pend = append(s.pend, &pending{pid: pid, cpu: tc, at: e.Time, waker: e.Int32(timeline.CommonPID), from: c, stat: s.enqueueStat[blockKey{pid, e.Time}]})
	case timeline.SchedWakeupNew:
		pid := e.Int32(timeline.PID)
		t := s.ent(pid, e.Str(timeline.Comm), prioOf(e, timeline.Prio))
		if t.rt || t.onRQ {
			return
		}
		t.vlag, t.relDL, t.lagKnown = 0, false, true
		tc := e.Int32(timeline.TargetCPU)
		s.flushIf(func(pd *pending) bool { return pd.cpu == tc && !pd.moved && s.placedBy(pd, c, -1) }, 0)
		s.placePending(&pending{pid: pid, cpu: tc, at: e.Time, initial: true})
	case timeline.SchedMigrateTask:
		pid := e.Int32(timeline.PID)
		dest := e.Int32(timeline.DestCPU)
		if c == dest {
			s.blockEarly(dest, e.Time)
		}
		for _, pd := range s.pend {
			if pd.pid == pid {
				pd.cpu = dest
				return
			}
		}
		t := s.ent(pid, e.Str(timeline.Comm), prioOf(e, timeline.Prio))
		if t.rt || !t.onRQ || t.cpu < 0 {
			if !t.onRQ {
				t.cpu = dest
			}
			return
		}
		// A balance detaching from this CPU comes after the attach of an
		// earlier one's moves onto it (attach_tasks holds that queue's
		// lock until all are attached): two ticks' balances at one
		// instant of a replay, pulling each way. In a timeline without
		// schedstats (a replay's, which enqueues at the waking), also
		// after the placement of a wakeup written before it: the guest-N
		// r2 hackbench replay with wake_overhead=skip, a waking at a
		// switch-in and another CPU's tick pulling from that queue at
		// the same instant (FIDELITY.md round 122); not one the replay
		// enqueues later (pending.held).
		src := s.rq(t.cpu)
		s.flushIf(func(pd *pending) bool { return pd.cpu == t.cpu && (pd.moved || !s.statMode && !pd.held) }, e.Time)
		if src.curr == t {
			src.curr = nil
		}
		delayed := t.delayed
		s.track(src, "departures", func() { s.p.dequeue(src, t, false, true) })
		t.delayed = delayed
		t.lastEnd += ", moved"
		s.pend = append(s.pend, &pending{pid: pid, cpu: dest, at: e.Time, moved: true, pass: s.movePass(e)})
	case timeline.SchedProcessExit:
		// A replay stops a task at its recorded exit wherever it is
		// (whatif's ExitDeadlines): a queued one leaves its queue.
		pid := e.Int32(timeline.PID)
		if t := s.ents[pid]; t != nil && t.onRQ && s.rq(t.cpu).curr != t {
			s.track(s.rq(t.cpu), "departures", func() { s.p.dequeue(s.rq(t.cpu), t, true, false) })
		}
		// ... or a wakeup not yet placed.
		s.pend = slices.DeleteFunc(s.pend, func(pd *pending) bool { return pd.pid == pid })
	case timeline.SchedSwitch:
		s.onSwitch(c, e)
	}
	// Pending placements left for long are made now.
	s.flushIf(func(pd *pending) bool { return s.overdue(pd, e.Time) }, e.Time)
}

// overdue: pd's window has run out, and its enqueue is not one the trace
// shows coming later (pending.stat).
func (s *shadow) overdue(pd *pending, now int64) bool {
	return now-pd.at > s.window && !pd.stat && !pd.held
}

// holdLate marks the pending wakeups that, in a timeline without
// schedstats (a replay), reached the end of their waking's instant
// without their enqueue's update: remote ones onto a CPU running a fair
// task, not switched in or charged at that instant, whose enqueue would
// have updated that task there and then. The replay enqueued them later
// (pending.held).
func (s *shadow) holdLate(now int64) {
	if s.statMode {
		return
	}
	for _, pd := range s.pend {
		if pd.held || pd.moved || pd.initial || pd.from == pd.cpu || pd.waker <= 0 || now-pd.at <= s.window || s.gotRun[pd.pid] {
			continue
		}
		// (An enqueue right after the running task was switched in or
		// charged had nothing to charge: no update written.)
		if r := s.rq(pd.cpu); r.curr != nil && !r.curr.rt && !r.curr.guessed && r.charged < pd.at {
			pd.held = true
			s.res.heldEnqueues[s.col]++
		}
	}
}

// heldEnqueue: a sched_stat_runtime of CPU tc's running task written on
// CPU c is held wakeup pd's enqueue: written on another CPU, where pd's
// waker runs.
func (s *shadow) heldEnqueue(pd *pending, tc, c int32) bool {
	if c == tc {
		return false
	}
	w := s.rq(c).curr
	return w != nil && w.pid == pd.waker
}

func (s *shadow) flushIf(f func(*pending) bool, now int64) {
	// A move goes with the rest of its balance pass (attach_tasks
	// attaches them all): one whose window ran out takes the pass's
	// later moves along.
	if len(s.pend) == 0 {
		return
	}
	var passes map[[2]int]bool
	for _, pd := range s.pend {
		if pd.moved && f(pd) {
			if passes == nil {
				passes = map[[2]int]bool{}
			}
			passes[[2]int{pd.pass, int(pd.cpu)}] = true
		}
	}
	keep := s.pend[:0]
	var out []*pending
	for _, pd := range s.pend {
		if f(pd) || pd.moved && passes[[2]int{pd.pass, int(pd.cpu)}] {
			out = append(out, pd)
		} else {
			keep = append(keep, pd)
		}
	}
	s.pend = keep
	// A balancer's pass detaches its tasks (each sched_migrate_task) onto
	// a list that attach_tasks empties from the head: the last detached
	// is placed first.
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[i].moved && out[j].moved && out[j].pass == out[i].pass && out[j].cpu == out[i].cpu {
			j++
		}
		slices.Reverse(out[i:j])
		if j-i >= 2 {
			s.res.passes[s.col]++
			s.res.passMoves[s.col] += j - i
		}
		i = j
	}
	for _, pd := range out {
		s.placePending(pd)
	}
}

func runnable(state string) bool { return state == "R" || state == "R+" || state == "" }

func special(state string) bool {
	return state != "" && strings.ContainsAny(state[:1], "XZTt")
}

// blockEarly dequeues c's running task at t, a balancer's move onto c
// written on c or a remote wakeup's placement onto c, where the trace
// dates that task's next block from before t (its sleep statistics) and
// c has no other runnable task: the schedule() that dequeued it was
// still on its way to the switch, a newly idle balance (or a host stall)
// between. The kernel saved its lag there, before the moves and
// placements, and before the update_curr of an attach charged the
// balance's time to it (still cfs_rq->curr); delayed instead if not
// eligible, and the pick that found nothing runnable purged the delayed
// tasks. The guest-M r3 6.12 hackbench at 5.876132: 375's sleep dated
// from 5.875985, two pulls between; placed at the switch, 375 kept a lag
// of +95 µs it never had and took picks the kernel gave others 95 ms
// later (FIDELITY.md round 146). Not with another task runnable there: a
// wakeup preemption's skipped clock update (rq_clock_skip_update) dates a
// sleep from that wakeup's update, the task then still running (guest-M
// r1's hackbench: 11 picks more disagree with the kernel's).
func (s *shadow) blockEarly(c int32, t int64) {
	r := s.rq(c)
	p := r.curr
	if !s.statMode || p == nil || !p.onRQ || p.rt || p.delayed {
		return
	}
	if slices.ContainsFunc(r.q, func(x *ent) bool { return x != p && !x.delayed }) {
		return
	}
	for _, iv := range s.early[p.pid] {
		if iv[0] <= t && t <= iv[1] {
			s.res.early[s.col]++
			if s.p.noDelay || r.eligible(p) {
				s.trackCum(r, "blocks", func() { s.p.dequeue(r, p, false, false) })
			} else {
				p.delayed = true
				p.delayAt, p.delayWoken, p.delayEnd = t, 0, delayPending
			}
			s.trackCum(r, "purges", func() { s.p.pickNext(r) })
			p.outEarly = true
			return
		}
	}
}

func (s *shadow) onSwitch(c int32, e *timeline.Event) {
	r := s.rq(c)
	// Wakeups onto c were enqueued before this schedule: with schedstats,
	// those written on c and the one switched in; a remote waking's
	// enqueue (sched_stat_sleep) may come after the pick. The waker takes
	// c's run-queue lock 5–25 µs after its waking on the guests (select_
	// task_rq and the records between), and the pick holds it meanwhile;
	// placed at the switch all the same, a remote wakee with a lag kept
	// from its sleep took the pick the kernel gave another (FIDELITY.md
	// round 126).
	prevPID, nextPID := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
	s.flushIf(func(pd *pending) bool { return pd.cpu == c && !pd.moved && s.placedBy(pd, c, nextPID) }, 0)
	state := e.Str(timeline.PrevState)
	how := "block"
	agreed := false
	var heldWake, heldDelayed *ent
	if w := s.watch[c]; w != nil {
		w.decided = true
		w.preempted = nextPID == w.wakeePID && runnable(state) && !w.tick
		s.record(w)
		delete(s.watch, c)
	}
	var prev *ent
	if prevPID != 0 {
		prev = s.ent(prevPID, e.Str(timeline.PrevComm), prioOf(e, timeline.PrevPrio))
	}
	if prev != nil && !prev.rt && r.curr == prev {
		prev.outLag, prev.outAt, prev.outCum, prev.outCPU = r.V()-prev.v, e.Time, r.cum, c
		prev.outRan, prev.outPickLag = e.Time-r.since, prev.pickLag
		if runnable(state) {
			how = "preempt"
			prev.lastEnd = "preempted by " + group(e.Str(timeline.NextComm))
			if prev.d != 0 && !prev.prot {
				how = "renewed"
				prev.lastEnd = "renewed"
				if !prev.guessed {
					b := tally(s.res.renewals, group(prev.comm), s.col)
					b.pickLag = append(b.pickLag, prev.pickLag)
					b.lag = append(b.lag, r.V()-prev.v)
					b.ran = append(b.ran, e.Time-r.since)
					b.used = append(b.used, s.p.vslice(prev)-(prev.d-prev.v))
				}
			}
		} else if prev.onRQ || prev.outEarly {
			ran := e.Time - r.since
			lagNow := r.V() - prev.v
			if prev.outEarly {
				lagNow = prev.vlag
			}
			prev.lastEnd = "block"
			prev.lastDV = r.dv
			prev.lastCharged = prev.charged
			delay := !prev.outEarly && !r.eligible(prev)
			raise := false
			if delay && s.dequeued[blockKey{prevPID, e.Time}] && !special(state) {
				// The trace dates its sleep from the block: the kernel
				// dequeued it there, eligible, where the shadow's V,
				// off by a few µs, finds it not. Counted, and followed
				// unless -own-delay, with the least lag eligibility
				// allows.
				s.res.dequeued[s.col]++
				if !s.p.ownDelay {
					delay, raise = false, true
				}
			}
			if s.kept[blockKey{prevPID, e.Time}] && !special(state) && !prev.outEarly {
				// The trace shows the kernel kept it queued: its V
				// found the task not eligible where the shadow's,
				// off by a few µs, may not. Counted, and followed
				// unless -own-delay.
				s.res.kept[s.col]++
				if !delay {
					s.res.keptEligible[s.col]++
					delay = !s.p.ownDelay
				}
			}
			if prev.outEarly {
				// Dequeued before the moves (blockEarly).
			} else if !special(state) && !s.p.noDelay && delay {
				prev.delayed = true
				prev.lastEnd = "delayed block"
				prev.delayAt, prev.delayWoken, prev.delayEnd = e.Time, 0, delayPending
			} else {
				s.trackCum(r, "blocks", func() { s.p.dequeue(r, prev, false, false) })
				if raise {
					prev.vlag = max(prev.vlag, 1)
				}
			}
			if !prev.guessed {
				k := group(prev.comm) + " ran under 0.1 ms"
				if ran >= 100000 {
					k = group(prev.comm) + " ran 0.1 ms or more"
				}
				b := tally(s.res.blocks, k, s.col)
				b.pickLag = append(b.pickLag, prev.pickLag)
				b.lag = append(b.lag, lagNow)
				prev.sleepStats, prev.sleepFrom = b, e.Time
				b.ran = append(b.ran, ran)
				for i, d := range r.dv {
					b.dv[i] = append(b.dv[i], d)
				}
				if b.comp == nil {
					b.comp = map[string]int64{}
				}
				for g, t := range r.comp {
					b.comp[g] += t
				}
				b.time += ran
				if prev.delayed {
					b.delayed++
				}
			}
			if prev.held && s.rewoken[blockKey{prevPID, e.Time}] {
				// The trace wakes it again before it runs: the held
				// waking ended an earlier wait while it ran on.
				s.res.heldNot[s.col]++
				prev.held = false
			}
			if prev.held && !special(state) {
				// The wakeup came while it was switching out: its
				// enqueue follows the switch (the wake list), undone
				// if a waking follows all the same. A delayed one is
				// requeued where it is (ttwu_runnable), after the pick
				// (the rq lock's order), unless the pick purged it.
				if prev.delayed {
					heldDelayed = prev
				} else {
					heldWake = prev
				}
			}
			prev.held = false
			prev.outEarly = false
		}
	} else if prevPID == 0 {
		how = "idle"
	} else {
		how = "other"
	}
	next := s.ent(nextPID, e.Str(timeline.NextComm), prioOf(e, timeline.NextPrio))
	nextCFS := nextPID != 0 && !next.rt
	// A replay whose workload lacks the CPU's stopper writes its
	// preemption of a task (active balancing) as a switch to idle with
	// that task still runnable; the kernel's idle is never picked over
	// one. No pick to check.
	stopper := nextPID == 0 && prev != nil && !prev.rt && runnable(state) && prev.onRQ
	if (nextCFS || nextPID == 0) && !stopper {
		// A newly idle CPU's pulls come after its pick found nothing.
		// Moves onto a CPU that still has a runnable task were not
		// such pulls: made before this schedule() (its tick's softirq
		// balance), they are placed before its pick meets the
		// delayed tasks.
		placeBeforePick := func() {
			s.flushIf(func(pd *pending) bool { return pd.cpu == c && (pd.moved || s.placedBy(pd, c, nextPID)) }, 0)
		}
		if slices.ContainsFunc(r.q, func(x *ent) bool { return !x.delayed }) {
			placeBeforePick()
		}
		s.trackCum(r, "purges", func() { s.p.pickNext(r) })
		placeBeforePick()
		var got *ent
		s.trackCum(r, "purges", func() { got = s.p.pickNext(r) })
		if tr := s.trace; tr != nil && c == tr.cpu && e.Time >= tr.from && e.Time <= tr.to {
			V := r.V()
			fmt.Fprintf(os.Stderr, "%d.%06d %d(%s)->%d pick %d:", e.Time/1e9, e.Time%1e9/1e3, prevPID, state, nextPID, pidOf(got))
			for _, x := range r.q {
				d := ""
				if x.delayed {
					d = " delayed"
				}
				fmt.Fprintf(os.Stderr, " %d[lag %d dl %d %s%s]", x.pid, (V-x.v)/1000, (x.d-V)/1000, x.dlFrom, d)
			}
			fmt.Fprintln(os.Stderr)
		}
		unverified := false
		agreed = false
		for _, x := range r.q {
			unverified = unverified || x.guessed
		}
		if nextPID != 0 {
			unverified = unverified || !r.has(next)
		}
		pk := tally(s.res.picks, how, s.col)
		switch {
		case unverified:
			pk.unverified++
		case (got == nil && nextPID == 0) || (got != nil && got.pid == nextPID):
			pk.agree++
			agreed = true
		default:
			pk.disagree++
			if s.verbose {
				fmt.Fprintf(os.Stderr, "%s: %d.%06d cpu %d %s: shadow picks %v, switch %d(%s) -> %d(%s)\n", s.path, e.Time/1e9, e.Time%1e9/1e3, c, how, pidOf(got), prevPID, state, nextPID, e.Str(timeline.NextComm))
				V := r.V()
				for _, x := range []*ent{got, next} {
					if x != nil && r.has(x) {
						fmt.Fprintf(os.Stderr, "  %s %d: lag %d dl-V %d eligible %v deadline from %s\n", map[bool]string{true: "shadow's", false: "timeline's"}[x == got], x.pid, V-x.v, x.d-V, r.eligible(x), x.dlFrom)
					}
				}
				for _, x := range r.q {
					fmt.Fprintf(os.Stderr, "\t%d %s lag %d dl-V %d elig %v delayed %v prot %v curr %v\n", x.pid, x.comm, r.V()-x.v, x.d-r.V(), r.eligible(x), x.delayed, x.prot, x == r.curr)
				}
			}
		}
	}
	if prev != nil && r.curr == prev && prev.onRQ && prev != next {
		// put_prev_entity puts it back in the tree: last among equal
		// deadlines.
		seq++
		prev.seq = seq
	}
	r.curr = nil
	r.since, r.charged = e.Time, e.Time
	r.dv = [len(dvCauses)]int64{}
	r.comp = nil
	if nextCFS {
		if !r.has(next) {
			if next.onRQ {
				s.p.dequeue(s.rq(next.cpu), next, false, true)
				next.relDL = false
			}
			next.vlag = 0
			s.p.place(r, next, false)
			next.guessed = true
		}
		next.delayed, next.spec = false, false
		next.cpu = c
		next.prot = true
		r.curr = next
		next.pickLag = r.V() - next.v
		next.sleepStats = nil
		if next.delayEnd != "" {
			s.afterDelay(next, e.Time)
		}
		next.pickUsed = s.p.vslice(next) - (next.d - next.v)
		next.pickEnd = next.lastEnd
		next.pickDL = next.dlFrom
		next.pickOutLag, next.pickWait = next.outLag, e.Time-next.outAt
		next.pickAgreed = agreed
		next.charged = 0
		next.pickPrevRan, next.pickPrevPickLag = next.outRan, next.outPickLag
		next.pickWaitKnown = next.outCPU == c && next.outAt > 0 && !strings.HasSuffix(next.lastEnd, "moved")
		for i := range r.cum {
			next.pickWaitDV[i] = r.cum[i] - next.outCum[i]
		}
		if !next.guessed {
			k := group(next.comm) + " from " + next.dlFrom
			rs := tally(s.res.requests, k, s.col)
			V := r.V()
			rs.left = append(rs.left, next.d-next.v)
			rs.lag = append(rs.lag, V-next.v)
		}
	}
	if x := heldDelayed; x != nil {
		if x.onRQ && x.delayed {
			x.delayed = false
			x.delayEnd = delayRequeuedKept
		} else if !x.onRQ {
			heldWake = x
		}
	}
	if heldWake != nil {
		s.res.held[s.col]++
		// Its waking came from a CPU the switch does not name: its
		// enqueue is its sched_stat_sleep (from -1).
		s.pend = append(s.pend, &pending{pid: heldWake.pid, cpu: c, at: e.Time, spec: true, from: -1})
	}
}

func pidOf(e *ent) int32 {
	if e == nil {
		return 0
	}
	return e.pid
}

// begin starts a timeline: a fresh machine, its results added to column
// col; stat: it has schedstats' sched_stat_sleep.
func (s *shadow) begin(path string, col int, stat bool) {
	s.ents, s.rqs, s.pend, s.gotRun, s.watch = map[int32]*ent{}, map[int32]*cfsRQ{}, nil, map[int32]bool{}, map[int32]*wakeRec{}
	s.cpuSeq, s.lastMove = s.cpuSeq[:0], map[int32]lastMove{}
	s.col, s.path, s.statMode = col, path, stat
	s.lastT = 0
	s.window = 0
	if stat {
		s.window = statWindowNS
	}
}

func newShadow(p params, verbose bool) *shadow {
	return &shadow{p: p, verbose: verbose, res: &results{picks: map[string]*[2]picks{}, wakes: map[string]*[2]wakeStats{}, requests: map[string]*[2]pickStats{}, blocks: map[string]*[2]blockStats{}, renewals: map[string]*[2]blockStats{}, afterDelay: map[string]*[2]delayStats{}}}
}

func (s *shadow) file(path string, col int) error {
	stat, err := hasStatSleep(path)
	if err != nil {
		return err
	}
	// The rules are v6.12's: say so when the timeline's kernel is not
	// one they describe (CFS before v6.6; EEVDF without delayed dequeue
	// before v6.12: -no-delay).
	warn := func(m *timeline.Meta) error {
		if s.autoSlice {
			s.p.sliceNS = baseSliceNS(m)
		}
		if rel := m.Source.OSRelease; rel != "" {
			if kv, err := model.ParseKernelVersion(rel); err == nil && !kv.AtLeast(6, 12) {
				fmt.Fprintf(os.Stderr, "eevdfshadow: %s: kernel %s: the shadow's rules are v6.12's (EEVDF from v6.6, delayed dequeue from v6.12)\n", path, rel)
			}
		}
		return nil
	}
	s.begin(path, col, stat)
	if stat {
		w, err := blockEvidence(path)
		if err != nil {
			return err
		}
		s.kept, s.rewoken, s.dequeued, s.enqueueStat, s.early = w.kept, w.rewoken, w.dequeued, w.enqueueStat, w.early
	}
	return scriptutil.ReadEvents(path, warn, func(e *timeline.Event) error {
		s.event(e)
		return nil
	})
}

// baseSliceNS is sysctl_sched_base_slice on the timeline's machine: 0.70
// ms scaled by 1 + ilog2(min(CPUs, 8)) (sched_update_scaling's log
// scaling; the guests' debugfs reads 1.4 ms on two vCPUs, 2.1 ms on
// four), as the engine's policy for v6.12 has it. A timeline that names
// no CPU count is taken for two CPUs.
func baseSliceNS(m *timeline.Meta) int64 {
	n := m.Source.NrCPUsOnline
	if n == 0 {
		n = m.Source.NrCPUs
	}
	if n == 0 {
		n = 2
	}
	return 700000 * whatif.TunableFactor(n)
}

// blockKey is a task's block: its pid and its switch-out's time.
type blockKey struct {
	pid int32
	at  int64
}

// keptSlackNS: how far after the block the wait a sched_stat_wait
// measures may start and still be dated from that block (the switch is
// written a few µs after put_prev_entity on the guests).
const keptSlackNS = 50000

// blockEvidence reads a timeline with schedstats for the blocks after
// which the kernel kept the task on its queue (DELAY_DEQUEUE keeps one
// that is not eligible): no sleep statistics before its next switch-in
// (every enqueue of a task that left its queue asleep writes
// sched_stat_sleep, _blocked or _iowait; a delayed task's requeue writes
// none) and that switch-in's sched_stat_wait dating the wait from the
// block (put_prev_entity starts it for a task still queued). The
// shadow's own eligibility at a block can miss by a few µs of V, and a
// delayed task keeps its old deadline where a dequeued one gets a new
// one at its wakeup: the error lasts until it runs (FIDELITY.md round
// 127).
//
// Conversely, sleep statistics dated from the block show the dequeue
// there (a delayed task's final dequeue at a later pick dates its sleep
// from that pick): the kernel found the task eligible, its lag not
// negative. Dequeued with the shadow's own negative lag, the picks agree
// less (messaging 75 → 68 %, round 127); with the least positive lag,
// 1 ns, more (round 130): the kernel's wakeup checks show such a wakee
// preempting a waker alone on its queue, which a lag of 0 cannot.
//
// It also gives the blocks after which a waking of the task comes before
// it runs again (any sleep a wakeup ends): where a waking came while the
// task still ran before such a block (ttwu_runnable ending an earlier
// wait, the task running on), that waking was not a wakeup racing this
// block, which would have enqueued it with no second waking.
func blockEvidence(path string) (*blockWatch, error) {
	w := newBlockWatch()
	err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		w.event(e)
		return nil
	})
	return w, err
}

// sleptBeforeNS, sleptAfterNS: how far before and after a block's switch
// the start of a sleep that sleep statistics measure may fall and still
// be the block's own dequeue (update_stats_dequeue_fair stamps it with
// the rq clock of that __schedule, 1–8 µs before the switch is written
// on the guests; a delayed task's final dequeue at a later pick stamps
// that pick's).
const (
	sleptBeforeNS = 15000
	sleptAfterNS  = 5000
	// earlyMaxNS: how far before the switch a block's sleep may start
	// and still be that schedule()'s dequeue, a newly idle balance
	// between (blockEarly; 147 µs on the guest-M r3 6.12 hackbench).
	earlyMaxNS = 2000000
)

// blockWatch gathers blockEvidence's blocks from a timeline's events.
type blockWatch struct {
	kept, rewoken, dequeued, enqueueStat map[blockKey]bool
	early                                map[int32][][2]int64
	blocked                              map[int32]*openBlock
	// waking: each task's last waking not yet followed by its sleep
	// statistics or its switch-in.
	waking map[int32]int64
}

// openBlock: a task blocked at `block`, not switched in since; waitFrom:
// when the wait its last sched_stat_wait measured began (-1: none yet);
// slept: sleep statistics came.
type openBlock struct {
	block, waitFrom int64
	slept           bool
}

func newBlockWatch() *blockWatch {
	return &blockWatch{kept: map[blockKey]bool{}, rewoken: map[blockKey]bool{}, dequeued: map[blockKey]bool{}, enqueueStat: map[blockKey]bool{}, early: map[int32][][2]int64{}, blocked: map[int32]*openBlock{}, waking: map[int32]int64{}}
}

func (w *blockWatch) event(e *timeline.Event) {
	switch e.Kind {
	case timeline.SchedSwitch:
		next := e.Int32(timeline.NextPID)
		delete(w.waking, next)
		if b := w.blocked[next]; b != nil {
			if !b.slept && b.waitFrom >= 0 && b.waitFrom <= b.block+keptSlackNS {
				w.kept[blockKey{next, b.block}] = true
			}
			delete(w.blocked, next)
		}
		if prev, st := e.Int32(timeline.PrevPID), e.Str(timeline.PrevState); prev != 0 && !runnable(st) && !special(st) {
			w.blocked[prev] = &openBlock{block: e.Time, waitFrom: -1}
		}
	case timeline.SchedStatSleep, timeline.SchedStatBlocked, timeline.SchedStatIOWait:
		pid := e.Int32(timeline.PID)
		if at := w.waking[pid]; at != 0 {
			w.enqueueStat[blockKey{pid, at}] = true
			delete(w.waking, pid)
		}
		if b := w.blocked[pid]; b != nil {
			b.slept = true
			if from := e.Time - e.Int(timeline.Delay); from >= b.block-sleptBeforeNS && from <= b.block+sleptAfterNS {
				w.dequeued[blockKey{pid, b.block}] = true
			} else if from < b.block-sleptBeforeNS && from >= b.block-earlyMaxNS {
				w.early[pid] = append(w.early[pid], [2]int64{from, b.block})
			}
		}
	case timeline.SchedStatWait:
		if b := w.blocked[e.Int32(timeline.PID)]; b != nil {
			b.waitFrom = e.Time - e.Int(timeline.Delay)
		}
	case timeline.SchedWaking:
		pid := e.Int32(timeline.PID)
		if w.blocked[pid] != nil {
			w.rewoken[blockKey{pid, w.blocked[pid].block}] = true
		}
		w.waking[pid] = e.Time
	}
}

// hasStatSleep says whether the timeline has schedstats' sched_stat_sleep
// (a kernel trace recorded by perf sched record; a replay has none).
func hasStatSleep(path string) (bool, error) {
	found := false
	err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		if e.Kind == timeline.SchedStatSleep {
			found = true
			return scriptutil.ErrStop
		}
		return nil
	})
	return found, err
}

func main() {
	slice := flag.Int64("slice", 0, "base slice, ns (sysctl_sched_base_slice; default: from each timeline's CPU count, 0.70 ms × (1 + log2 of up to 8): the guests' 6.12 1.4 ms on two vCPUs, 2.1 ms on four)")
	hz := flag.Int64("hz", 250, "the kernel's HZ (the lag clamp's tick)")
	verbose := flag.Bool("v", false, "print every disagreement with the shadow's queue")
	trace := flag.String("trace", "", "CPU,FROM,TO: print the shadow's queue (lag, deadline − V in µs, what set the deadline, delayed for a delayed dequeue's entity) at every switch on CPU between FROM and TO seconds")
	var p params
	flag.BoolVar(&p.noParity, "no-parity", false, "rule test: no RUN_TO_PARITY")
	flag.BoolVar(&p.noDelay, "no-delay", false, "rule test: no DELAY_DEQUEUE")
	flag.BoolVar(&p.noInflate, "no-inflate", false, "rule test: place_entity keeps the lag as it is")
	flag.BoolVar(&p.noDelayZero, "no-delay-zero", false, "rule test: no DELAY_ZERO (a delayed entity leaves, or is woken, with its positive lag)")
	flag.BoolVar(&p.ownDelay, "own-delay", false, "rule test: decide each block's delayed dequeue by the shadow's eligibility alone, not by the trace's evidence of what the kernel did")
	flag.BoolVar(&p.wakeAtSwitch, "wake-at-switch", false, "rule test: with schedstats, a remote wakeup is placed before a switch on its CPU although its sched_stat_sleep comes after")
	flag.Parse()
	p.sliceNS, p.tickNS = *slice, 1000000000 / *hz
	s := newShadow(p, *verbose)
	s.autoSlice = *slice == 0
	if *trace != "" {
		var from, to float64
		s.trace = &traceWindow{}
		if _, err := fmt.Sscanf(*trace, "%d,%g,%g", &s.trace.cpu, &from, &to); err != nil {
			fmt.Fprintln(os.Stderr, "eevdfshadow: -trace CPU,FROM,TO (seconds):", err)
			os.Exit(2)
		}
		s.trace.from, s.trace.to = int64(from*1e9), int64(to*1e9)
	}
	cols, err := scriptutil.ForEachFile(flag.Args(), 2, func(col int, p string) error { return s.file(p, col) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "eevdfshadow:", err)
		os.Exit(1)
	}
	s.res.print(os.Stdout, cols)
}
