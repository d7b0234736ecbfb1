package whatif

import (
	"fmt"
	"math"
	"slices"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// WakeShadow redoes the PELT load tracking beside a timeline, from the
// timeline alone, and evaluates wake_affine_weight (the load half of
// wake_affine) at every wakeup of a sleeping task whose previous CPU is
// busy and another than the waking CPU, against what the timeline shows
// the wakeup path chose (analysis.WakeChoices' kept and pulled). It is a
// diagnostic: where the kernel keeps wakees the formula would pull, by
// margins the loads' uncertainty cannot explain, something else decided,
// and on the two-vCPU guests' hackbench that is wake_wide, from the
// wakee_flips hackbench's children inherit from perf (FIDELITY.md round
// 89).
//
// The loads: a task's at its switches, enqueues and sched_stat_runtime
// records (each update_curr), with the model's PELT arithmetic (pelt.go);
// a CPU's from the summed weights of its runnable tasks; a new task starts
// at its full weight; a woken task moved to another CPU leaves its load as
// removed load and attaches it on the new one; an exiting task's load
// leaves. Read at a wakeup as the kernel reads them: the CPUs' as last
// updated, the wakee's as of its block, through task_h_load's per-jiffy
// h_load. On a replay's output, where every choice followed this
// formula, it calls 94–97 % of the engine's own choices as the engine
// made them (TestWakeShadowAgreesWithTheEngine). What it cannot know is left out:
// WF_SYNC (both variants are scored) and tasks' wakee_flips before the
// timeline began (WakeShadowOptions.StartFlips; the telling wakeups are
// scored for every start in FlipCandidates, which is how the extraction
// fits it, wakeeflips.go).
type WakeShadowOptions struct {
	// ImbalancePct is the imbalance_pct of the domain both CPUs first
	// share (117 for MC, 110 for SMT): prev's side is weighed with
	// 100 + (pct − 100) / 2.
	ImbalancePct int
	// LLCSize is sd_llc_size, wake_wide's factor.
	LLCSize int
	// StartFlips is the wakee_flips of the tasks the timeline shows
	// before it shows them forked; children inherit their parent's.
	StartFlips uint64
	// HZ sets the jiffy task_h_load caches h_load for, and wakee_flips'
	// once-a-second decay (default 250).
	HZ int
	// InitUtilTrueWeight is the traced kernel's Knobs().InitUtilTrueWeight:
	// how post_init_entity_util_avg weighs a new task's share of its run
	// queue's load when it sets the task's first util_avg.
	InitUtilTrueWeight bool
	// dom, when set (the extraction's fit, wakeeflips.go), gives each
	// pair of CPUs its own SD_WAKE_AFFINE domain's imbalance_pct and the
	// waking CPU's LLC size, in place of ImbalancePct and LLCSize; pairs
	// with no such domain are not scored.
	dom *model.Domains
	// Each, when set, is called with every scored wakeup as the timeline
	// settles it (scripts/wakeshadow -list).
	Each func(WakeShadowWakeup)
}

// WakeShadowWakeup is one scored wakeup: a sleeping task woken from a
// CPU running another task, its previous CPU another, busy one.
type WakeShadowWakeup struct {
	// Time is the sched_waking's; CPU the waking CPU, Prev the wakee's
	// previous one; Waker the task current on CPU (record_wakee's, in
	// interrupt context the one interrupted), Wakee the woken.
	Time         int64
	CPU, Prev    int32
	Waker, Wakee int32
	// WakerFlips, WakeeFlips: the shadow's wakee_flips for the two
	// (from WakeShadowOptions.StartFlips), after record_wakee; Wide:
	// wake_wide on them.
	WakerFlips, WakeeFlips uint32
	Wide                   bool
	// Margin: the formula's without WF_SYNC (prev's biased effective
	// load over this CPU's, less 1: above 0 it pulls).
	Margin float64
	// Pulled: the timeline moved the wakee onto CPU.
	Pulled bool
}

// WakeShadowBand counts the wakeups whose formula margin fell in one
// band: Low is the band's lower edge in per cent (the margin is prev's
// biased effective load over this CPU's, less 1: above 0 the formula
// pulls), Kept and Pulled what the timeline shows.
type WakeShadowBand struct {
	Low          int
	Kept, Pulled int
}

// WakeShadowResult is the shadow's verdict over a timeline.
type WakeShadowResult struct {
	// Bands by margin, 10 points wide, the first and last open-ended
	// (below −30 %, 30 % and above), of the wakeups wake_wide let
	// through (not wide by the shadow's flips).
	Bands []WakeShadowBand
	// Compared: the wakeups scored; Agree, AgreeSync: how many of them
	// the formula without and with WF_SYNC's adjustments (and
	// wake_affine_idle's sync case) called as the timeline shows, a
	// wakeup the shadow's flips make wide counted as a keep.
	Compared, Agree, AgreeSync int
	// Wide: the scored wakeups the shadow's wake_wide called wide.
	// WidePulled: of those, the ones the timeline pulled onto the waking
	// CPU, which only wake_affine does (select_idle_sibling from a busy
	// previous CPU takes an idle CPU or stays): wake_wide was false
	// there, so each is a pair of flip counts the shadow got wrong
	// (FIDELITY.md round 154).
	Wide, WidePulled int
	// Telling: the scored wakeups the formula pulls by at least
	// tellingMargin without WF_SYNC (and so with it), kept or pulled;
	// there the choice is wake_wide's: kept when wide, pulled when not.
	// Called[k]: how many of them wake_wide with every task alive at the
	// start at FlipCandidates[k] flips calls as the timeline chose them
	// (the loads do not depend on the flips: one pass scores them all).
	// TellingCalled: of the telling wakeups, how many the shadow's own
	// flips (from StartFlips) call as chosen: Called's entry for a start
	// of StartFlips, the way the engine counts (TestWakeShadowCandidates).
	Telling       int
	Called        [nFlipCandidates]int
	TellingCalled int
}

// FlipCandidates are the start wakee_flips the shadow and the
// extraction's fit try (WakeShadowResult.Called).
func FlipCandidates() []uint32 { return flipCandidates[:] }

// tellingMargin: a wakeup is telling when the formula pulls by this much
// (prev's biased effective load over this CPU's, less 1). On replays the
// shadow's margins are off by less than a tenth for most wakeups
// (FIDELITY.md round 89's bands).
const tellingMargin = 0.1

type shadowTask struct {
	avg avg
	w   uint64
	// rt: the task's last record gave it a real-time (or deadline or
	// stopper) priority: it is not on the fair class's run queue, so
	// neither its weight nor its averages count in the CPU's cfs_rq
	// (only in nr_running), and while it runs the fair class's util does
	// not grow (the CPU's RT average does, unless it is the stopper:
	// capacity_of() subtracts that average).
	rt   bool
	pid  int32
	cpu  int32
	onRQ bool
	// delayed: blocked but kept on its CPU's queue by DELAY_DEQUEUE
	// (DelayedDequeues), until the time in until (untilRequeue: until a
	// waking requeues it).
	delayed bool
	until   int64
	seen    bool
	flips   uint32
	last    int32
	decay   int64
	// cand: flips from each of FlipCandidates (decay stamp and last
	// wakee are the same for all).
	cand [nFlipCandidates]uint32
}

type shadowRQ struct {
	avg avg
	// nr is rq->nr_running (every class), nrFair the fair class's
	// runnable tasks (h_nr_runnable), nrDelayed its blocked ones
	// DELAY_DEQUEUE keeps queued (in nr and h_nr_queued), loadW the fair
	// tasks' weight, delayed ones included.
	loadW, nr, nrFair, nrDelayed uint64
	curr                         int32
	// currFair: curr is a fair-class task; currRT a real-time one
	// (rq->avg_rt's input, not the stopper's).
	currFair, currRT bool
	// avgRT is rq->avg_rt: capacity_of() is the CPU's capacity less its
	// util.
	avgRT                         avg
	remLoad, remUtil, remRunnable uint64
	remN                          int
	hLoad                         uint64
	hJiffy                        int64
}

// shadowWake is a wakeup awaiting its choice (the waking CPU's next
// record: the task's sched_migrate_task if it moved).
type shadowWake struct {
	pid    int32
	prev   int32
	scored bool
	ns, sy bool
	margin float64
	wide   bool
	// telling: the formula pulls by tellingMargin; wideK bit k: wide
	// from FlipCandidates[k].
	telling bool
	wideK   uint32
	// at, waker, flips: for WakeShadowOptions.Each.
	at                     int64
	waker                  int32
	wakerFlips, wakeeFlips uint32
}

type wakeShadow struct {
	opt WakeShadowOptions
	// dq: the trace's delayed dequeues (nil: none); pending, the delayed
	// tasks whose final dequeue has a time, due the earliest of those.
	dq      *DelayedDequeues
	pending []int32
	due     int64
	// countDelayed: the balancer's task counts (sum_h_nr_running) keep
	// the delayed tasks (cfs.h_nr_queued, before v6.14: HNrRunnable off).
	countDelayed bool
	tasks        map[int32]*shadowTask
	rqs          []*shadowRQ
	open         []*shadowWake
	res          WakeShadowResult
	bands        map[int]*WakeShadowBand
	jiffyN       int64
}

// WakeShadow runs the shadow over r's events.
func WakeShadow(r timeline.EventReader, opt WakeShadowOptions) (*WakeShadowResult, error) {
	if opt.ImbalancePct < 100 {
		return nil, fmt.Errorf("wake shadow: imbalance_pct %d, want at least 100", opt.ImbalancePct)
	}
	if opt.LLCSize < 1 {
		return nil, fmt.Errorf("wake shadow: LLC size %d, want at least 1", opt.LLCSize)
	}
	switch {
	case opt.HZ == 0:
		opt.HZ = 250
	case opt.HZ < 0:
		return nil, fmt.Errorf("wake shadow: HZ %d", opt.HZ)
	}
	s := newWakeShadow(opt)
	for r.Next() {
		s.event(r.Event())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	s.finish()
	return &s.res, nil
}

func newWakeShadow(opt WakeShadowOptions) *wakeShadow {
	return &wakeShadow{opt: opt, tasks: map[int32]*shadowTask{}, bands: map[int]*WakeShadowBand{}, jiffyN: 1e9 / int64(opt.HZ)}
}

// finish settles the wakeups still open (no move) and lists the bands.
func (s *wakeShadow) finish() {
	for c := range s.open {
		s.settle(int32(c), -1, 0) // no move: now is not read
	}
	s.res.Bands = s.res.Bands[:0]
	for lo := -40; lo <= 30; lo += 10 {
		if b := s.bands[lo]; b != nil {
			s.res.Bands = append(s.res.Bands, *b)
		}
	}
}

func (s *wakeShadow) task(p int32, prio int64) *shadowTask {
	t := s.tasks[p]
	if t == nil {
		t = &shadowTask{pid: p, w: weightOfPrio(int32(prio)), cpu: -1, flips: uint32(min(s.opt.StartFlips, math.MaxUint32)), cand: flipCandidates}
		s.tasks[p] = t
	}
	return t
}

func (s *wakeShadow) rq(c int32) *shadowRQ {
	for int(c) >= len(s.rqs) {
		s.rqs = append(s.rqs, &shadowRQ{hJiffy: noJiffy})
		s.open = append(s.open, nil)
	}
	return s.rqs[c]
}

func (s *wakeShadow) updRQ(r *shadowRQ, now int64) {
	if r.remN > 0 {
		r.avg.takeRemoved(r.remLoad, r.remUtil, r.remRunnable)
		r.remLoad, r.remUtil, r.remRunnable, r.remN = 0, 0, 0, 0
	}
	if r.avg.lastUpdate == 0 {
		r.avg.lastUpdate = now
	}
	r.avg.update(now, r.loadW, r.nrFair, r.currFair, 1, capacityScale)
	if r.avgRT.lastUpdate == 0 {
		r.avgRT.lastUpdate = now
	}
	var b uint64
	if r.currRT {
		b = 1
	}
	r.avgRT.update(now, b, b, r.currRT, 1, capacityScale)
}

// capacityOf is capacity_of() for a CPU of original capacity orig: less
// the real-time class's average (scale_rt_capacity), at least 1.
func (r *shadowRQ) capacityOf(orig uint64) uint64 {
	if u := r.avgRT.utilAvg; u < orig {
		return orig - u
	}
	return 1
}

// add and sub count t in or out of r's queue.
func (r *shadowRQ) add(t *shadowTask) {
	r.nr++
	switch {
	case t.rt:
		return
	case t.delayed:
		r.nrDelayed++
	default:
		r.nrFair++
	}
	r.loadW += t.w
}

func (r *shadowRQ) sub(t *shadowTask) {
	r.nr--
	switch {
	case t.rt:
		return
	case t.delayed:
		r.nrDelayed--
	default:
		r.nrFair--
	}
	r.loadW -= t.w
}

// attachAvg and detachAvg move a fair task's averages onto or off r's
// cfs_rq (a real-time task's are not on it).
func (r *shadowRQ) attachAvg(t *shadowTask) {
	if !t.rt {
		r.avg.attach(&t.avg, t.w)
	}
}

func (r *shadowRQ) detachAvg(t *shadowTask) {
	if !t.rt {
		r.avg.detach(&t.avg, t.w)
	}
}

// setClass follows a task's priority from its records: crossing into a
// real-time priority is switched_from_fair (its averages, brought up to
// now, running if it was its CPU's current task, leave the cfs_rq:
// detach_task_cfs_rq), back out switched_to_fair (they are attached
// again, decayed meanwhile).
func (s *wakeShadow) setClass(t *shadowTask, prio int64, now int64, running bool) {
	rt := prio < 100
	if rt == t.rt {
		return
	}
	if !rt {
		t.w = weightOfPrio(int32(prio))
	}
	if t.seen && t.cpu >= 0 {
		r := s.rq(t.cpu)
		s.updRQ(r, now)
		if t.onRQ {
			r.sub(t)
		}
		if rt {
			s.updTask(t, now, running)
			r.detachAvg(t)
			t.rt = true
		} else {
			t.rt = false
			s.updTask(t, now, false)
			r.attachAvg(t)
		}
		if t.onRQ {
			r.add(t)
		}
		return
	}
	t.rt = rt
}

func (s *wakeShadow) updTask(t *shadowTask, now int64, running bool) {
	if t.avg.lastUpdate == 0 {
		t.avg.lastUpdate = now
	}
	var l, rn uint64
	if t.onRQ && !t.rt {
		l = 1
		if !t.delayed {
			rn = 1 // se_runnable: a delayed entity is on_rq, not runnable
		}
	}
	t.avg.update(now, l, rn, running && !t.rt, t.w, capacityScale)
}

// delay keeps t, blocking on r at now, queued there as DELAY_DEQUEUE does
// until `until` (untilRequeue: its next waking).
func (s *wakeShadow) delay(t *shadowTask, r *shadowRQ, now, until int64) {
	s.updTask(t, now, true)
	s.updRQ(r, now)
	r.sub(t)
	t.delayed, t.until = true, until
	r.add(t)
	if until != untilRequeue {
		if len(s.pending) == 0 || until < s.due {
			s.due = until
		}
		s.pending = append(s.pending, t.pid)
	}
}

// keptQueued delays t's block on its CPU at now where the trace's sleep
// statistics show the kernel kept it queued (DelayedDequeues).
func (s *wakeShadow) keptQueued(t *shadowTask, now int64) bool {
	until, ok := s.dq.delayedUntil(t.pid, now)
	if !ok {
		return false
	}
	s.delay(t, s.rq(t.cpu), now, until)
	return true
}

// requeue is requeue_delayed_entity: t, kept queued, is runnable again
// (a waking's ttwu_runnable, or a switch-in the trace shows).
func (s *wakeShadow) requeue(t *shadowTask, now int64) {
	r := s.rq(t.cpu)
	s.updTask(t, now, false)
	s.updRQ(r, now)
	r.sub(t)
	t.delayed, t.until = false, 0
	r.add(t)
}

// settleDelayed makes the final dequeues due by now, each at its own time
// (the pick that met the delayed task), earliest first.
func (s *wakeShadow) settleDelayed(now int64) {
	for len(s.pending) > 0 && s.due <= now {
		// Drop the tasks a waking requeued meanwhile, find the earliest.
		s.pending = slices.DeleteFunc(s.pending, func(p int32) bool {
			t := s.tasks[p]
			return t == nil || !t.delayed || t.until == untilRequeue
		})
		k := -1
		for i, p := range s.pending {
			if k < 0 || s.tasks[p].until < s.tasks[s.pending[k]].until {
				k = i
			}
		}
		if k < 0 {
			return
		}
		t := s.tasks[s.pending[k]]
		if s.due = t.until; s.due > now {
			return
		}
		s.pending = slices.Delete(s.pending, k, k+1)
		r := s.rq(t.cpu)
		at := max(t.until, r.avg.lastUpdate, t.avg.lastUpdate)
		s.updTask(t, at, false)
		s.updRQ(r, at)
		r.sub(t)
		t.delayed, t.until, t.onRQ = false, 0, false
		s.due = math.MinInt64 // look again
	}
}

// remove queues t's load to leave r (remove_entity_load_avg).
func (s *wakeShadow) remove(r *shadowRQ, t *shadowTask) {
	if t.rt {
		return
	}
	if r.avg.lastUpdate > t.avg.lastUpdate {
		s.updTask(t, r.avg.lastUpdate, false)
	}
	r.remN++
	r.remLoad += t.avg.loadAvg
	r.remUtil += t.avg.utilAvg
	r.remRunnable += t.avg.runnableAvg
}

// enqueue puts t on c at now, moving its load there if it lived elsewhere.
func (s *wakeShadow) enqueue(t *shadowTask, c int32, now int64) {
	r := s.rq(c)
	switch {
	case t.seen && t.cpu >= 0 && t.cpu != c:
		s.remove(s.rq(t.cpu), t)
		s.updRQ(r, now)
		r.attachAvg(t)
	case t.seen:
		s.updTask(t, now, false)
		s.updRQ(r, now)
	default:
		s.updRQ(r, now)
		r.attachAvg(t)
	}
	t.seen, t.cpu, t.onRQ = true, c, true
	r.add(t)
}

func (s *wakeShadow) dequeue(t *shadowTask, r *shadowRQ, now int64) {
	s.updTask(t, now, true)
	s.updRQ(r, now)
	if t.onRQ {
		// Off the queue that counts it (another than r only where the
		// trace lost the task's move).
		t.onRQ = false
		if t.cpu >= 0 {
			r = s.rq(t.cpu)
		}
		r.sub(t)
	}
}

// hload is task_h_load(t) read on CPU c: t's load by c's h_load, cached
// for the jiffy, over c's load now.
func (s *wakeShadow) hload(c int32, t *shadowTask, now int64) uint64 {
	r := s.rq(c)
	if j := now / s.jiffyN; r.hJiffy != j {
		r.hLoad, r.hJiffy = r.avg.loadAvg, j
	}
	return t.avg.loadAvg * r.hLoad / (r.avg.loadAvg + 1)
}

func (s *wakeShadow) event(e *timeline.Event) {
	if e.Kind == timeline.Lost {
		// What the lost records held is not known: forget the waits.
		for c := range s.open {
			s.open[c] = nil
		}
		return
	}
	if !e.IsSet(timeline.CPU) || timeline.CheckCPUs(e) != nil || e.Time == 0 {
		return
	}
	c := e.Int32(timeline.CPU)
	r := s.rq(c)
	now := e.Time
	s.settleDelayed(now)
	if e.Kind == timeline.SchedMigrateTask && s.open[c] != nil && e.Int32(timeline.PID) == s.open[c].pid && e.IsSet(timeline.DestCPU) {
		s.settle(c, e.Int32(timeline.DestCPU), now)
		return
	}
	s.settle(c, -1, now)
	switch e.Kind {
	case timeline.SchedSwitch:
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		if prev > 0 {
			pt := s.task(prev, prioOr(e, timeline.PrevPrio))
			s.setClass(pt, prioOr(e, timeline.PrevPrio), now, r.curr == prev)
			if !pt.seen {
				pt.seen, pt.cpu, pt.onRQ = true, c, true
				r.add(pt)
			}
			st := e.Str(timeline.PrevState)
			switch {
			case len(st) > 0 && st[0] == 'R':
				s.updTask(pt, now, true)
				s.updRQ(r, now)
			case !pt.rt && pt.onRQ && !pt.delayed && blockedState(st) && s.keptQueued(pt, now):
			default:
				s.dequeue(pt, r, now)
				if exiting(st) {
					// task_dead_fair: its load leaves.
					s.remove(r, pt)
					pt.seen, pt.cpu = false, -1
				}
			}
		}
		r.curr, r.currFair, r.currRT = 0, false, false
		if next > 0 {
			nt := s.task(next, prioOr(e, timeline.NextPrio))
			s.setClass(nt, prioOr(e, timeline.NextPrio), now, false)
			if nt.delayed {
				s.requeue(nt, now) // its waking was lost
			}
			if !nt.onRQ || nt.cpu != c {
				if nt.onRQ && nt.cpu >= 0 {
					s.rq(nt.cpu).sub(nt)
					nt.onRQ = false
				}
				s.enqueue(nt, c, now)
			}
			s.updTask(nt, now, false)
			s.updRQ(r, now)
			r.curr = next
			r.currFair = !nt.rt
			r.currRT = nt.rt && !isStopper(e.Str(timeline.NextComm))
		}
	case timeline.SchedStatRuntime:
		if p := e.Int32(timeline.PID); p > 0 && p == r.curr {
			s.updTask(s.task(p, 120), now, true)
			s.updRQ(r, now)
		}
	case timeline.SchedProcessFork:
		if e.IsSet(timeline.ParentPID) && e.IsSet(timeline.ChildPID) {
			parent := s.task(e.Int32(timeline.ParentPID), 120)
			child := s.task(e.Int32(timeline.ChildPID), 120)
			child.flips, child.last, child.decay, child.cand = parent.flips, parent.last, parent.decay, parent.cand
		}
	case timeline.SchedWakeupNew:
		// init_entity_runnable_average and post_init_entity_util_avg on
		// the CPU fork balancing chose: full load, util (and runnable)
		// from that CPU's spare capacity, as the engine's.
		nt := s.task(e.Int32(timeline.PID), prioOr(e, timeline.Prio))
		s.setClass(nt, prioOr(e, timeline.Prio), now, false)
		tr := s.rq(e.Int32(timeline.TargetCPU))
		s.updRQ(tr, now)
		u := initUtil(tr.avg.utilAvg, tr.avg.loadAvg, nt.w, s.opt.InitUtilTrueWeight)
		nt.avg = avg{loadAvg: nt.w, runnableAvg: u, utilAvg: u}
		if nt.onRQ && nt.cpu >= 0 {
			// A new task on no queue yet (the trace lost the old one's
			// exit, its pid reused).
			s.rq(nt.cpu).sub(nt)
		}
		nt.seen, nt.onRQ, nt.delayed = false, false, false
		s.enqueue(nt, e.Int32(timeline.TargetCPU), now)
	case timeline.SchedMigrateTask:
		// The balancer's or the stopper's move of a queued task.
		pt := s.tasks[e.Int32(timeline.PID)]
		if pt == nil || !pt.onRQ || pt.cpu < 0 || !e.IsSet(timeline.DestCPU) {
			return
		}
		src, dst := s.rq(pt.cpu), s.rq(e.Int32(timeline.DestCPU))
		s.updTask(pt, now, false)
		s.updRQ(src, now)
		src.detachAvg(pt)
		src.sub(pt)
		s.updRQ(dst, now)
		dst.attachAvg(pt)
		dst.add(pt)
		pt.cpu = e.Int32(timeline.DestCPU)
	case timeline.SchedWaking:
		s.waking(e, c, r, now)
	}
}

// waking: select_task_rq runs for a sleeping wakee (a running or queued
// one is ttwu_runnable's, no choice); record_wakee counts the flip, and
// the formula is scored when the wakee's previous CPU is busy and another.
func (s *wakeShadow) waking(e *timeline.Event, c int32, r *shadowRQ, now int64) {
	p := e.Int32(timeline.PID)
	if p <= 0 || !e.IsSet(timeline.TargetCPU) {
		return
	}
	pt := s.task(p, prioOr(e, timeline.Prio))
	s.setClass(pt, prioOr(e, timeline.Prio), now, false)
	prev := e.Int32(timeline.TargetCPU)
	if pt.delayed {
		s.requeue(pt, now) // ttwu_runnable: still queued, no choice
		return
	}
	if pt.onRQ {
		return
	}
	// A task the timeline has not shown before is taken as asleep, as
	// the extraction's fit takes it (wakeeflips.go): its waking counts in
	// its waker's flips, but with its loads unknown it is not scored.
	seen := pt.seen
	var w *shadowWake
	if seen {
		w = &shadowWake{pid: p, prev: prev}
		s.open[c] = w
	}
	defer s.enqueue(pt, prev, now) // moved at settle if the choice moved it
	if r.curr <= 0 {
		return // an idle CPU's interrupt: no current task's flips
	}
	if prioOr(e, timeline.Prio) < 100 || PinnedCPUOf(e.Str(timeline.Comm)) >= 0 {
		return // select_task_rq_fair is not called: no record_wakee
	}
	waker := s.task(r.curr, 120)
	j := now / s.jiffyN
	halved, flipped := recordWakeeFlip(&waker.flips, &waker.decay, &waker.last, p, j, int64(s.opt.HZ))
	flipAll(waker.cand[:], halved, flipped)
	if !seen {
		return
	}
	pr := s.rq(prev)
	if prev == c || pr.curr <= 0 && pr.nr == 0 {
		return // local, or prev idle (wake_affine_idle keeps it)
	}
	pct, llc := s.opt.ImbalancePct, s.opt.LLCSize
	if d := s.opt.dom; d != nil {
		if pct = affinePct(d, c, prev); pct == 0 {
			return // no SD_WAKE_AFFINE domain spans both
		}
		llc = max(d.CPUs[c].LLCSize, 1)
	}
	w.wide = wideFlips(waker.flips, pt.flips, uint32(llc))
	w.at, w.waker, w.wakerFlips, w.wakeeFlips = now, waker.pid, waker.flips, pt.flips
	thisL, prevL := int64(r.avg.loadAvg), int64(pr.avg.loadAvg)
	tl := int64(s.hload(prev, pt, now))
	cur := int64(s.hload(c, waker, now))
	w.ns = wakeAffineWeightPulls(thisL, prevL, tl, 0, pct, capacityScale, capacityScale, false)
	w.sy = r.nr == 1 || wakeAffineWeightPulls(thisL, prevL, tl, cur, pct, capacityScale, capacityScale, true)
	bias := int64(100 + (pct-100)/2)
	w.margin = float64((prevL-tl)*bias)/float64(max(1, (thisL+tl)*100)) - 1
	w.scored = true
	if w.ns && w.margin >= tellingMargin {
		w.telling = true
		for k := range waker.cand {
			if wideFlips(waker.cand[k], pt.cand[k], uint32(llc)) {
				w.wideK |= 1 << k
			}
		}
	}
}

// affinePct is the imbalance_pct of the lowest SD_WAKE_AFFINE domain of
// CPU c that spans prev (select_task_rq_fair's wake_affine domain); 0
// when none does or a CPU is out of range.
func affinePct(d *model.Domains, c, prev int32) int {
	if c < 0 || int(c) >= len(d.CPUs) {
		return 0
	}
	for _, sd := range d.CPUs[c].Domains {
		if sd.Flags&model.SDWakeAffine == 0 {
			continue
		}
		for _, o := range sd.Span {
			if int32(o) == prev {
				return sd.ImbalancePct
			}
		}
	}
	return 0
}

// settle books CPU c's open wakeup: dest the CPU its move names, -1 none;
// a wakee moved leaves its previous CPU, where the waking queued it, at
// now (the move's record, right after the waking's).
func (s *wakeShadow) settle(c, dest int32, now int64) {
	w := s.open[c]
	if w == nil {
		return
	}
	s.open[c] = nil
	if dest < 0 {
		dest = w.prev
	}
	if t := s.tasks[w.pid]; t != nil && dest != w.prev && t.onRQ && t.cpu == w.prev {
		// Queued on its previous CPU at the waking; the move takes its
		// load there as removed load and attaches it here.
		src, dst := s.rq(w.prev), s.rq(dest)
		src.sub(t)
		s.remove(src, t)
		s.updRQ(dst, now)
		dst.attachAvg(t)
		dst.add(t)
		t.cpu = dest
	}
	if !w.scored || dest != w.prev && dest != c {
		return
	}
	pulled := dest == c
	if w.telling {
		s.res.Telling++
		if pulled != w.wide {
			s.res.TellingCalled++
		}
		for k := range s.res.Called {
			if pulled == (w.wideK>>k&1 == 0) {
				s.res.Called[k]++
			}
		}
	}
	s.res.Compared++
	if w.wide {
		s.res.Wide++
		if pulled {
			s.res.WidePulled++
		}
	}
	if s.opt.Each != nil {
		s.opt.Each(WakeShadowWakeup{Time: w.at, CPU: c, Prev: w.prev, Waker: w.waker, Wakee: w.pid,
			WakerFlips: w.wakerFlips, WakeeFlips: w.wakeeFlips, Wide: w.wide, Margin: w.margin, Pulled: pulled})
	}
	if pulled == (w.ns && !w.wide) {
		s.res.Agree++
	}
	if pulled == (w.sy && !w.wide) {
		s.res.AgreeSync++
	}
	if w.wide {
		return
	}
	lo := min(max(int(math.Floor(w.margin*10))*10, -40), 30)
	b := s.bands[lo]
	if b == nil {
		b = &WakeShadowBand{Low: lo}
		s.bands[lo] = b
	}
	if pulled {
		b.Pulled++
	} else {
		b.Kept++
	}
}
