package whatif

import (
	"slices"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// Inferring the wakee_flips of the tasks alive at the trace start.
//
// wake_wide() reads the waker's and the wakee's wakee_flips, which
// record_wakee() counts over the tasks' whole lives; what they counted
// before the recording (and what perf's workload inherited from perf at
// its fork) is not in the trace. Some of the trace's placements show the
// result, though: a task-context WF_SYNC wakeup by a waker alone on its
// CPU, of a task whose previous CPU is another, busy one in a common
// SD_WAKE_AFFINE domain, lands on the waker's CPU when wake_wide() is
// false (wake_affine_idle takes this_cpu, and select_idle_sibling keeps
// it: the busy previous CPU is not idle) and stays on the previous CPU
// only when it is true. flipFit replays record_wakee over the trace's
// wakeups (interrupt-context ones on the task they interrupted, fair
// unpinned wakees only, forks inheriting the parent's count, the
// once-a-second halving from a task's first wakeup on, as Sim does) once
// per candidate starting count, and counts, per candidate, how many of
// those placements wake_wide() then explains (FIDELITY.md round 39).
//
// Where the waker is not alone, the loads tell: a wakeup whose previous
// CPU is another, busy one, where wake_affine_weight pulls by a clear
// margin, lands on the waking CPU unless wake_wide() is true. The wake
// shadow (wakeshadow.go) redoes PELT beside the same events and scores
// those for every candidate at once; on the two-vCPU guests, where a
// waker is seldom alone, they are most of the evidence (FIDELITY.md round
// 90). Both kinds add up. The replay starts the tasks alive at the trace
// start at the smallest candidate explaining within a hundredth of the
// best when that explains clearly more than a start at 0; else at 0.

// flipCandidates are the starting counts tried.
var flipCandidates = [...]uint32{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32}

const (
	nFlipCandidates = len(flipCandidates)
	// minFlipPlacements: fewer telling placements than this say nothing.
	minFlipPlacements = 10
	// flipSyncWindowNS: a wakeup counts as WF_SYNC when its waker leaves
	// its CPU within this long, with no switch between. Wider than the
	// extraction's syncWindowNS (50 µs), which is about one system call's
	// return: a hackbench sender's socket writes (all WF_SYNC) come in a
	// loop before it blocks, and under the guests' TCG emulation that
	// takes longer. Measured: from 100 µs to 400 µs the choices are the
	// same on every recording; at 50 µs guest-M's hackbench has no telling
	// placement and guest-B's falls one short of the margin.
	flipSyncWindowNS = 200000
	// fitHZ is the jiffy rate of the halving (the extraction's HZ 250).
	fitHZ     = 250
	fitTickNS = 1000000000 / fitHZ
)

// FlipFit is what the trace's placements said of the starting
// wakee_flips: the count chosen, the telling placements, how many of
// them the chosen count explains and how many a start at 0 does.
type FlipFit struct {
	WakeeFlips   uint32 `json:"wakee_flips"`
	Placements   int    `json:"placements"`
	Explained    int    `json:"explained"`
	ExplainedAt0 int    `json:"explained_at_0"`
	// WeightPlacements: wakeups wake_affine_weight pulls by a clear
	// margin, kept (wide) or pulled (not): the wake shadow's telling ones;
	// explained by the count chosen and by 0.
	WeightPlacements   int `json:"weight_placements,omitempty"`
	WeightExplained    int `json:"weight_explained,omitempty"`
	WeightExplainedAt0 int `json:"weight_explained_at_0,omitempty"`
}

type fitTask struct {
	flips [nFlipCandidates]uint32
	ts    int64 // wakee_flip_decay_ts, jiffies
	last  int32 // last_wakee (-1 none)
}

// fitPlace is a sched_waking whose placement (a sched_migrate_task of the
// wakee next on the waker's CPU, or none: it stays) is not known yet.
type fitPlace struct {
	pid, prev int32
	diag      bool
	waker     int32
	wide      uint32 // bit k: wake_wide() with candidate k
	at        int64
}

// fitSync is a telling placement waiting for its WF_SYNC evidence: the
// waker leaving its CPU within flipSyncWindowNS, with no switch between.
type fitSync struct {
	cpu, wakee int32
	switches   int64
	at         int64
	wide       uint32
	stayedOff  bool // the wakee stayed on its previous CPU (wake_wide true)
}

// fitWakee is one wakee's telling placements: pulled onto the waker's CPU,
// and stayed on its busy previous CPU where wake_wide() is false with
// each candidate (bit k of fitSync.wide clear), which WF_SYNC does not
// do (syncDenied).
type fitWakee struct {
	pulled int
	stayed [nFlipCandidates]int
}

type flipFit struct {
	llcSize  []int
	affine   [][]bool // [a][b]: a and b share an SD_WAKE_AFFINE domain
	tasks    map[int32]*fitTask
	cur      []int32 // per CPU: running pid (0 idle)
	queued   []int   // per CPU: tasks queued, not running
	where    map[int32]int32
	lastCPU  map[int32]int32
	place    []fitPlace // per CPU (pid 0: none)
	switches []int64
	sync     map[int32]fitSync
	score    [nFlipCandidates]int
	n        int
	wakees   map[int32]*fitWakee
	// shadow scores wake_affine_weight's telling pulls (wakeshadow.go):
	// the other half of the evidence, where the waker is not alone.
	shadow *wakeShadow
}

// newFlipFit prepares a fit on the traced machine's domains; nil without
// a topology (no fit: every task starts at 0).
func newFlipFit(topo *model.Topology, kernel string) *flipFit {
	return flipFitOn(tracedDomains(topo, kernel))
}

// tracedDomains are the domains the trace's kernel built on its machine,
// nil without a topology or when they cannot be built.
func tracedDomains(topo *model.Topology, kernel string) *model.Domains {
	if topo == nil {
		return nil
	}
	d, err := model.BuildDomains(topo, kernel)
	if err != nil || d.NrCPUs <= 0 {
		return nil
	}
	return d
}

// flipFitOn prepares a fit on domains d; nil without them.
func flipFitOn(d *model.Domains) *flipFit {
	if d == nil {
		return nil
	}
	f := &flipFit{tasks: map[int32]*fitTask{}, where: map[int32]int32{}, lastCPU: map[int32]int32{}, sync: map[int32]fitSync{}, wakees: map[int32]*fitWakee{}}
	n := d.NrCPUs
	f.llcSize = make([]int, n)
	f.affine = make([][]bool, n)
	for c := 0; c < n; c++ {
		f.llcSize[c] = d.CPUs[c].LLCSize
		f.affine[c] = make([]bool, n)
		for _, sd := range d.CPUs[c].Domains {
			if sd.Flags&model.SDWakeAffine == 0 {
				continue
			}
			for _, o := range sd.Span {
				if o >= 0 && o < n {
					f.affine[c][o] = true
				}
			}
		}
	}
	f.cur = make([]int32, n)
	f.queued = make([]int, n)
	f.place = make([]fitPlace, n)
	f.switches = make([]int64, n)
	f.shadow = newWakeShadow(WakeShadowOptions{ImbalancePct: 100, LLCSize: 1, HZ: fitHZ, dom: d})
	return f
}

func (f *flipFit) task(pid int32) *fitTask {
	t := f.tasks[pid]
	if t == nil {
		// Alive at the trace start: each candidate's count.
		t = &fitTask{flips: flipCandidates, last: -1}
		f.tasks[pid] = t
	}
	return t
}

// record is record_wakee() on w for wakee p at jiffy j, for every
// candidate at once.
func (f *flipFit) record(w, p int32, j int64) {
	t := f.task(w)
	halved, flipped := recordWakeeFlip(&t.flips[0], &t.ts, &t.last, p, j, fitHZ)
	flipAll(t.flips[1:], halved, flipped)
}

func (f *flipFit) enqueue(pid, c int32) {
	f.dequeue(pid)
	f.where[pid] = c
	f.queued[c]++
}

func (f *flipFit) dequeue(pid int32) {
	if c, ok := f.where[pid]; ok {
		f.queued[c]--
		delete(f.where, pid)
	}
}

// reset forgets the queues after lost records.
func (f *flipFit) reset() {
	clear(f.where)
	clear(f.sync)
	for c := range f.queued {
		f.queued[c] = 0
		f.place[c] = fitPlace{}
	}
}

func (f *flipFit) inRange(c int32) bool { return c >= 0 && int(c) < len(f.cur) }

// resolve settles CPU c's pending placement: the wakee went to dest.
func (f *flipFit) resolve(c, dest int32) {
	pl := f.place[c]
	f.place[c] = fitPlace{}
	if pl.pid == 0 || !f.inRange(dest) {
		return
	}
	f.enqueue(pl.pid, dest)
	if !pl.diag {
		return
	}
	switch dest {
	case c:
		f.sync[pl.waker] = fitSync{cpu: c, wakee: pl.pid, switches: f.switches[c], at: pl.at, wide: pl.wide}
	case pl.prev:
		f.sync[pl.waker] = fitSync{cpu: c, wakee: pl.pid, switches: f.switches[c], at: pl.at, wide: pl.wide, stayedOff: true}
	}
}

// observe feeds one event, in time order.
func (f *flipFit) observe(e *timeline.Event) {
	if f.shadow != nil {
		f.shadow.event(e)
	}
	if e.Kind == timeline.Lost {
		f.reset()
		return
	}
	if !e.IsSet(timeline.CPU) {
		return
	}
	c := e.Int32(timeline.CPU)
	if !f.inRange(c) {
		return
	}
	switch e.Kind {
	case timeline.SchedStatRuntime, timeline.SchedStatWait, timeline.SchedStatSleep, timeline.SchedStatIOWait, timeline.SchedStatBlocked:
		return // between a wakeup and its placement's migration
	case timeline.SchedMigrateTask:
		p, dest := e.Int32(timeline.PID), e.Int32(timeline.DestCPU)
		if f.place[c].pid != 0 && f.place[c].pid == p {
			f.resolve(c, dest)
			return
		}
		if _, ok := f.where[p]; ok && f.inRange(dest) {
			f.enqueue(p, dest)
		}
		return
	}
	if f.place[c].pid != 0 {
		f.resolve(c, f.place[c].prev) // no migration: it stayed
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		f.switches[c]++
		if s, ok := f.sync[prev]; ok && prev != 0 {
			delete(f.sync, prev)
			if s.cpu == c && s.switches == f.switches[c]-1 && e.Time-s.at <= flipSyncWindowNS {
				f.n++
				for k := range f.score {
					if (s.wide>>k&1 == 1) == s.stayedOff {
						f.score[k]++
					}
				}
				wk := f.wakees[s.wakee]
				if wk == nil {
					wk = &fitWakee{}
					f.wakees[s.wakee] = wk
				}
				if !s.stayedOff {
					wk.pulled++
				} else {
					for k := range wk.stayed {
						if s.wide>>k&1 == 0 {
							wk.stayed[k]++
						}
					}
				}
			}
		}
		if prev != 0 {
			f.lastCPU[prev] = c
			if st := e.Str(timeline.PrevState); st == "R" || st == "R+" {
				f.enqueue(prev, c)
			}
		}
		if next != 0 {
			f.dequeue(next)
			f.lastCPU[next] = c
		}
		f.cur[c] = next
	case timeline.SchedProcessFork:
		parent, child := e.Int32(timeline.ParentPID), e.Int32(timeline.ChildPID)
		if parent != 0 && child != 0 {
			pt := *f.task(parent)
			f.tasks[child] = &pt
		}
	case timeline.SchedWaking:
		f.waking(e, c)
	}
}

func (f *flipFit) waking(e *timeline.Event, c int32) {
	p := e.Int32(timeline.PID)
	if p == 0 {
		return
	}
	if _, runnable := f.where[p]; runnable || f.runningSomewhere(p) {
		return // ttwu_runnable: no placement, no record_wakee
	}
	prev, known := f.lastCPU[p]
	if !known && e.IsSet(timeline.TargetCPU) {
		prev, known = e.Int32(timeline.TargetCPU), true
	}
	if !known || !f.inRange(prev) {
		return
	}
	pl := fitPlace{pid: p, prev: prev}
	fair := prioOr(e, timeline.Prio) >= 100 && PinnedCPUOf(e.Str(timeline.Comm)) < 0
	cur := e.Int32(timeline.CommonPID)
	if cur < 0 {
		cur = f.cur[c] // an exiting task's sample (onWake)
	}
	if fair && cur > 0 {
		f.record(cur, p, e.Time/fitTickNS)
		irq := irqContext(e) != 0
		if !irq && f.cur[c] == cur && prev != c && f.cur[prev] > 0 && f.queued[c] == 0 && f.affine[c][prev] {
			w, t := f.task(cur), f.task(p)
			factor := uint32(max(f.llcSize[c], 1))
			for k := range flipCandidates {
				master, slave := w.flips[k], t.flips[k]
				if master < slave {
					master, slave = slave, master
				}
				if !(slave < factor || master < slave*factor) {
					pl.wide |= 1 << k
				}
			}
			pl.diag, pl.waker, pl.at = true, cur, e.Time
		}
	}
	f.place[c] = pl
}

// syncDenied says whether the telling placements of the wakee pid deny
// WF_SYNC at the starting count flips: a wakeup with the flag, its waker
// alone on its CPU and wake_wide() false, takes the waker's CPU
// (wake_affine_idle) or an idle one (select_idle_sibling), never the
// wakee's busy previous CPU; a wakee the trace shows staying there so at
// least syncPullsMin times, and more than once per syncAgainstRatio of
// its pulls, is woken without the flag (a futex: schbench's message
// threads, whose workers block at once after waking them).
func (f *flipFit) syncDenied(pid int32, flips uint32) bool {
	if f == nil {
		return false
	}
	wk := f.wakees[pid]
	if wk == nil {
		return false
	}
	k := slices.Index(flipCandidates[:], flips)
	if k < 0 {
		return false
	}
	n := wk.stayed[k]
	return n >= syncPullsMin && syncAgainstRatio*n > wk.pulled
}

func (f *flipFit) runningSomewhere(p int32) bool {
	c, ok := f.lastCPU[p]
	return ok && f.inRange(c) && f.cur[c] == p
}

// result picks the starting count: the smallest candidate explaining the
// most telling placements, if it explains clearly more than 0 does (by
// a tenth of them, and at least 5); else 0.
func (f *flipFit) result() FlipFit {
	if f == nil {
		return FlipFit{}
	}
	var sw WakeShadowResult
	if f.shadow != nil {
		f.shadow.finish()
		sw = f.shadow.res
	}
	var score [nFlipCandidates]int
	best := 0
	for k := range score {
		score[k] = f.score[k] + sw.Called[k]
		if score[k] > score[best] {
			best = k
		}
	}
	n := f.n + sw.Telling
	// Counts explaining within a hundredth of the best are as good: the
	// smallest of them, the least the trace needs.
	for k := range best {
		if score[k] >= score[best]-n/100 {
			best = k
			break
		}
	}
	r := FlipFit{Placements: f.n, ExplainedAt0: f.score[0], Explained: f.score[0],
		WeightPlacements: sw.Telling, WeightExplainedAt0: sw.Called[0], WeightExplained: sw.Called[0]}
	if n >= minFlipPlacements && score[best]-score[0] >= max(5, n/10) {
		r.WakeeFlips, r.Explained, r.WeightExplained = flipCandidates[best], f.score[best], sw.Called[best]
	}
	return r
}
