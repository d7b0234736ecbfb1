package whatif

import (
	"math"
	"slices"
	"sort"
)

// vCPU stalls: the host deschedules the guest's vCPUs.
//
// The fixtures are 8-vCPU guests under QEMU TCG on a 2-core host. A vCPU
// the host is not running cannot take an interrupt: a resched IPI or a
// scheduler tick sent to it waits until the host runs it again. The guest's
// clock is wall time, so the running task's recorded run time (the
// workload's demand) already includes these stretches; what the replay
// lacks is that a busy CPU does not react to a wakeup preemption or a tick
// while it is stalled.
//
// Estimator (from the trace alone, so a bare-metal trace gets no stalls):
// on a CPU running the same task without a switch, the scheduler tick calls
// update_curr in hard-IRQ context, which the trace shows as a
// sched_stat_runtime of the running task with the hard-IRQ flag. With the
// tick period T (HZ 250: 4 ms) an available CPU shows these at most T apart.
// For two consecutive tick records t_i < t_j of one uninterrupted run, the
// tick due at t_i + T was not taken before t_j, so the vCPU did not run on
// [max(t_i + T, last event of that CPU before t_j), t_j]: a stall, kept
// when it is longer than a tolerance (jitter of the timer). This is a lower
// bound of each stall (it may have begun before t_i + T, and stalls shorter
// than the tolerance or between two on-time ticks are not seen). Over all
// such runs, the stall fraction f = Σ stall / Σ (t_j − t_i).
//
// Model: each CPU alternates between available and stalled stretches; a
// stall's length is drawn from the measured stalls, an available stretch's
// from an exponential whose mean makes the long-run stalled fraction f
// (mean stall × (1 − f) / f). Since round 20 (FIDELITY.md) a busy CPU's
// wakeup preemptions and ticks wait for the stalls of its running task's
// demand instead (hoststall.go: the stalls at the points of the task's
// progress where the trace shows them); this process now only prices a
// newly idle balance pass run in a stall (balance.go). Wakeups onto idle
// CPUs keep their sampled idle-exit delays, which include the host's. The
// stalled fraction is measured per number of busy CPUs (the host shares
// its cores among the busy vCPUs); the stalls of different CPUs are drawn
// independently. An idle vCPU woken from another CPU waits for a host core
// as hostEnd models, and an interrupt's wakeup on a busy CPU for a stall
// with the measured probability (irqWakeStallEnd); both use the measured
// stall lengths.
type StallModel struct {
	// TickNS is the tick period the estimator assumed.
	TickNS int64 `json:"tick_ns"`
	// Fraction of a busy CPU's time measured stalled (lower bound).
	Fraction float64 `json:"fraction"`
	// FractionByBusy[k-1] is the stalled fraction measured while k CPUs
	// were busy (the host shares its cores among the busy vCPUs), bins
	// with too little data merged with their neighbours (see model).
	FractionByBusy []float64 `json:"fraction_by_busy"`
	// StallsNS are the measured stall lengths, sorted.
	StallsNS []int64 `json:"stalls_ns"`
	// MeanStallNS is the mean measured stall.
	MeanStallNS int64 `json:"mean_stall_ns"`
	// ObservedNS is the run time the estimator saw (Σ t_j − t_i).
	ObservedNS int64 `json:"observed_ns"`
	// HostCores is how many of the busy vCPUs the host ran at once, on
	// average, while at least hostMinBusy were busy: Σ k (obs_k − stall_k)
	// / Σ obs_k over those busy counts k, obs_k the busy CPU time and
	// stall_k the host stalls (hoststall.go) found while k were busy. 0:
	// not measured, or under hostMinObsTicks tick periods of such busy
	// time (then the replay's idle exits come from the one pool; see
	// hostEnd).
	HostCores float64 `json:"host_cores,omitempty"`
	// IRQWakeStall is the fraction of the trace's wakeups of a real-time
	// task raised by an interrupt or timer on the busy CPU they woke it
	// onto, that waited for their switch-in across a stretch of at least
	// stallToleranceNS with no event on that CPU: the host descheduled the
	// vCPU between the wakeup and the switch. A real-time wakee switches
	// in at the next preemption point, so a silence that long is a stall;
	// a CFS wakee may wait for the running task's slice (FIDELITY.md
	// round 42: counting them made 4.4 % of guest-P's stress-ng wakeups
	// look stalled, where its real-time ones show 0.14 %). It applies to
	// every such wakeup preemption in the replay (irqWakeStallEnd). 0:
	// under minSamples such wakeups (no real-time timer task).
	IRQWakeStall float64 `json:"irq_wake_stall,omitempty"`
	// IRQWakeStallsNS are those stalled wakeups' stalls (each one's
	// longest event-free stretch before the switch-in), sorted; nil under
	// minIRQStalls of them. irqWakeStallEnd draws from them rather than
	// StallsNS: on the eight-vCPU guests' stress-ng the stalls across an
	// interrupt's wakeup run about half the late ticks' (medians 2.1–7.7
	// ms, 3.9 on the typical recording, against 6.0–10.9 ms), many ending
	// near the next tick (FIDELITY.md round 97).
	IRQWakeStallsNS []int64 `json:"irq_wake_stalls_ns,omitempty"`
}

// IRQWakeStallSummary is what --validate reports of StallModel's
// interrupt wakeup stalls: the share of the real-time interrupt wakeups
// that met one, how many the lengths come from and their median, beside
// the median of every stall the trace measured.
type IRQWakeStallSummary struct {
	Share    float64 `json:"share"`
	Stalls   int     `json:"stalls"`
	P50NS    int64   `json:"p50_ns,omitempty"`
	AllP50NS int64   `json:"all_p50_ns"`
}

// IRQWakeStallSummary summarises the stall model's interrupt wakeup
// stalls; nil when it measured no share.
func (w *Workload) IRQWakeStallSummary() *IRQWakeStallSummary {
	m := w.Stalls
	if m == nil || m.IRQWakeStall <= 0 || len(m.StallsNS) == 0 {
		return nil
	}
	s := &IRQWakeStallSummary{Share: m.IRQWakeStall, Stalls: len(m.IRQWakeStallsNS), AllP50NS: m.StallsNS[len(m.StallsNS)/2]}
	if n := len(m.IRQWakeStallsNS); n > 0 {
		s.P50NS = m.IRQWakeStallsNS[n/2]
	}
	return s
}

// minIRQStalls is the fewest stalled interrupt wakeups whose stalls make
// IRQWakeStallsNS; fewer leave the draw to StallsNS.
const minIRQStalls = 5

// minSamples is the fewest measurements the model takes as an estimate of
// a distribution (a delay pool, initPreemptPools) or of a fraction
// (IRQWakeStall: own-CPU interrupt wakeups onto a busy CPU ending in the
// wakee's switch-in). Fewer say nothing: stress-ng's timer wakeups on
// this machine's 6.18 recording gave two delays, 26 µs and 3.95 ms.
const minSamples = 20

// hostMinBusy: from this many busy vCPUs a 2-core host is oversubscribed,
// so the stalled fraction there tells how many it runs at once.
const hostMinBusy = 3

// hostMinObsTicks: HostCores needs this many tick periods (1 s at HZ 250)
// of busy CPU time with hostMinBusy or more CPUs busy. (It was first
// measured from late ticks inside uninterrupted runs, which hackbench's
// short runs hardly have: 0.28–0.47 s of them, and estimates of 3.5–5.7
// cores on the 2-core host; FIDELITY.md round 26.)
const hostMinObsTicks = 250

// stallToleranceNS: a tick later than T + this is a missed tick.
const stallToleranceNS = 500000

// stallEstimator measures stalls from a CPU-ordered event stream.
type stallEstimator struct {
	tickNS   int64
	cur      []int32 // per CPU: running tid (0 idle, -1 unknown)
	lastTick []int64 // per CPU: last tick record of the current run, -1
	lastEv   []int64 // per CPU: last event of any kind
	stalls   []int64
	observed int64
	// per number of busy CPUs at the closing tick: Σ run, Σ stall
	obsBy, stallBy []int64
	// irqWait: per CPU, the interrupt wakeup onto it (raised on it while
	// busy) still waiting for its switch-in, and the longest event-free
	// stretch of the CPU since (irqWake); irqN / irqStalled count those
	// that ended in the wakee's switch-in, and those with a stall, whose
	// stretches irqStalls keeps.
	irqWait          []irqWait
	irqN, irqStalled int
	irqStalls        []int64
}

type irqWait struct {
	pid    int32 // 0: none
	maxGap int64
}

func newStallEstimator(tickNS int64) *stallEstimator {
	return &stallEstimator{tickNS: tickNS}
}

func (s *stallEstimator) grow(c int32) {
	for int(c) >= len(s.cur) {
		s.cur = append(s.cur, -1)
		s.lastTick = append(s.lastTick, -1)
		s.lastEv = append(s.lastEv, -1)
		s.irqWait = append(s.irqWait, irqWait{})
	}
}

// seen notes an event on CPU c at t for a pending interrupt wakeup's
// longest event-free stretch.
func (s *stallEstimator) seen(c int32, t int64) {
	if w := &s.irqWait[c]; w.pid != 0 && s.lastEv[c] >= 0 && t-s.lastEv[c] > w.maxGap {
		w.maxGap = t - s.lastEv[c]
	}
}

// event: any event on CPU c at t (the vCPU was running then).
func (s *stallEstimator) event(c int32, t int64) {
	s.grow(c)
	s.seen(c, t)
	s.lastEv[c] = t
}

// switchTo: CPU c switched to next at t. It settles the pending interrupt
// wakeup of c: counted if this switch-in is its wakee's.
func (s *stallEstimator) switchTo(c int32, t int64, next int32) {
	s.event(c, t)
	if w := &s.irqWait[c]; w.pid != 0 {
		if w.pid == next {
			s.irqN++
			if w.maxGap >= stallToleranceNS {
				s.irqStalled++
				s.irqStalls = append(s.irqStalls, w.maxGap)
			}
		}
		*w = irqWait{}
	}
	s.cur[c], s.lastTick[c] = next, -1
}

// irqWake: an interrupt or timer on CPU c woke pid at t onto c, which was
// running a task (a wakeup preemption without IPI: the vCPU was running).
// Only a real-time wakee (rt) is followed (IRQWakeStall).
func (s *stallEstimator) irqWake(c int32, t int64, pid int32, rt bool) {
	s.grow(c)
	if rt && s.irqWait[c].pid == 0 {
		s.irqWait[c] = irqWait{pid: pid}
	}
}

// runtime: a sched_stat_runtime of pid on CPU c at t; hardIRQ: recorded in
// hard-IRQ context (the tick).
func (s *stallEstimator) runtime(c int32, t int64, pid int32, hardIRQ bool) {
	s.grow(c)
	s.seen(c, t)
	if hardIRQ && pid > 0 && s.cur[c] == pid {
		if lt := s.lastTick[c]; lt >= 0 && t > lt {
			busy := 0
			for _, p := range s.cur {
				if p > 0 {
					busy++
				}
			}
			for len(s.obsBy) < busy {
				s.obsBy, s.stallBy = append(s.obsBy, 0), append(s.stallBy, 0)
			}
			s.observed += t - lt
			s.obsBy[busy-1] += t - lt
			start := lt + s.tickNS
			if s.lastEv[c] > start {
				start = s.lastEv[c]
			}
			if t-start > stallToleranceNS {
				s.stalls = append(s.stalls, t-start)
				s.stallBy[busy-1] += t - start
			}
		}
		s.lastTick[c] = t
	}
	s.lastEv[c] = t
}

// lost: records were lost on CPU c (all CPUs if c < 0). A tick interval
// or an event-free stretch across the loss says nothing of a stall, so
// the run's last tick, the last event and a pending interrupt wakeup's
// longest stretch are forgotten (as hostStallFinder.lost does).
func (s *stallEstimator) lost(c int32) {
	for i := range s.cur {
		if c < 0 || int32(i) == c {
			s.lastTick[i], s.lastEv[i] = -1, -1
			s.irqWait[i] = irqWait{}
		}
	}
}

// model returns the estimate, nil when no stall was seen.
func (s *stallEstimator) model() *StallModel {
	if len(s.stalls) == 0 || s.observed <= 0 {
		return nil
	}
	m := &StallModel{TickNS: s.tickNS, ObservedNS: s.observed, StallsNS: append([]int64(nil), s.stalls...)}
	sort.Slice(m.StallsNS, func(i, j int) bool { return m.StallsNS[i] < m.StallsNS[j] })
	var sum int64
	for _, d := range m.StallsNS {
		sum += d
	}
	m.Fraction = float64(sum) / float64(s.observed)
	if s.irqN >= minSamples {
		m.IRQWakeStall = float64(s.irqStalled) / float64(s.irqN)
		if len(s.irqStalls) >= minIRQStalls {
			m.IRQWakeStallsNS = slices.Clone(s.irqStalls)
			slices.Sort(m.IRQWakeStallsNS)
		}
	}
	m.MeanStallNS = sum / int64(len(m.StallsNS))
	// Busy-count bins: consecutive k merged from k = 1 up until a group
	// has observed at least stallMinBinTicks tick periods; a short last
	// group joins the one before.
	minObs := stallMinBinTicks * s.tickNS
	type grp struct{ lo, hi int64 }
	var groups [][2]int // [first, last] k-1
	var acc []grp
	for i := range s.obsBy {
		if len(groups) == 0 || acc[len(acc)-1].lo >= minObs {
			groups = append(groups, [2]int{i, i})
			acc = append(acc, grp{})
		}
		groups[len(groups)-1][1] = i
		acc[len(acc)-1].lo += s.obsBy[i]
		acc[len(acc)-1].hi += s.stallBy[i]
	}
	if n := len(groups); n > 1 && acc[n-1].lo < minObs {
		groups[n-2][1] = groups[n-1][1]
		acc[n-2].lo += acc[n-1].lo
		acc[n-2].hi += acc[n-1].hi
		groups, acc = groups[:n-1], acc[:n-1]
	}
	m.FractionByBusy = make([]float64, len(s.obsBy))
	for g, r := range groups {
		f := 0.0
		if acc[g].lo > 0 {
			f = float64(acc[g].hi) / float64(acc[g].lo)
		}
		for k := r[0]; k <= r[1]; k++ {
			m.FractionByBusy[k] = f
		}
	}
	return m
}

// stallMinBinTicks: a busy-count bin needs this many tick periods of
// observed run time (25 × 4 ms = 100 ms) to stand alone.
const stallMinBinTicks = 25

// fraction returns the stalled fraction with busy CPUs busy.
func (m *StallModel) fraction(busy int) float64 {
	if busy < 1 {
		busy = 1
	}
	if len(m.FractionByBusy) == 0 {
		return m.Fraction
	}
	if busy > len(m.FractionByBusy) {
		busy = len(m.FractionByBusy)
	}
	return m.FractionByBusy[busy-1]
}

// stallProc is one CPU's alternating available/stalled process, generated
// lazily from its own SplitMix64 stream (so the draws of one CPU do not
// depend on when the others are asked).
type stallProc struct {
	rng        uint64
	start, end int64 // current or next stall [start, end)
}

func (p *stallProc) rand() uint64 { return splitMix64(&p.rng) }

// unit draws a uniform number in (0, 1), never 0 (a logarithm takes it).
func (p *stallProc) unit() float64 { return (float64(p.rand()>>11) + 0.5) / (1 << 53) }

// next draws the available stretch from `from` and the stall after it; f
// is the stalled fraction to reproduce (0: no stall before far future).
func (p *stallProc) next(m *StallModel, from int64, f float64) {
	u := p.unit()
	d := p.rand() % uint64(len(m.StallsNS))
	if f <= 0 {
		p.start, p.end = math.MaxInt64/2, math.MaxInt64/2
		return
	}
	if f > 0.99 {
		f = 0.99
	}
	avail := int64(-math.Log(u) * float64(m.MeanStallNS) * (1 - f) / f)
	p.start = from + avail
	p.end = p.start + m.StallsNS[d]
}

// resume restarts p at t in the steady state of stalled fraction f: t
// falls inside a stall with probability f, else an available stretch
// begins there (exponential, so the rest of one under way is distributed
// alike). A stall found under way is drawn by its length, t uniform
// within it: a point of the stalled time picked uniformly. Restarting
// outside a stall every time, as next does, made the first wakeup after
// contention began never wait (FIDELITY.md round 141).
func (p *stallProc) resume(m *StallModel, t int64, f float64) {
	u := p.unit()
	var total int64
	for _, l := range m.StallsNS {
		total += l
	}
	if f <= 0 || u >= min(f, 0.99) || total <= 0 {
		p.next(m, t, f)
		return
	}
	r := int64(p.rand() % uint64(total))
	for _, l := range m.StallsNS {
		if r < l {
			p.start, p.end = t, t+l-r
			return
		}
		r -= l
	}
}

// stallEnd returns when CPU cpu can next act on an interrupt raised at t:
// t, or the end of the stall t falls in. t must not decrease between calls
// for one CPU (the engine's time is monotonic).
func (s *Sim) stallEnd(cpu int, t int64) int64 {
	m := s.w.Stalls
	if m == nil || !s.cfg.IdleWake || len(m.StallsNS) == 0 {
		return t
	}
	f := m.fraction(s.busyCPUs())
	if s.stall == nil {
		s.stall = s.newStallProcs(f, func(c int) uint64 {
			return (s.cfg.Seed+1)*0xd1342543de82ef95 + uint64(c)*0x9e3779b97f4a7c15
		})
	}
	return s.stall[cpu].endAt(m, t, f)
}

// stallWithin is the length of the stall of cpu's stall process that
// begins within (t, t+d]: a newidle pass running from t for d is
// descheduled by the host for that long. A stall the process has in
// progress at t does not count: the vCPU is running the pass, and the
// process is a statistical stand-in for when it is not (charging the rest
// of such stalls made every pass cost milliseconds and gated newidle
// balancing 3–7 times more often than the guests' schedstat shows,
// FIDELITY.md round 23). 0 without a stall model.
func (s *Sim) stallWithin(cpu int, t, d int64) int64 {
	if s.stallEnd(cpu, t) > t || s.stall == nil {
		return 0
	}
	p := &s.stall[cpu]
	if p.start > t && p.start <= t+d {
		return p.end - p.start
	}
	return 0
}

// newStallProcs starts one alternating stall process per CPU at the
// trace's start, each on its own random stream (seed(cpu)).
func (s *Sim) newStallProcs(f float64, seed func(cpu int) uint64) []stallProc {
	ps := make([]stallProc, s.ncpu)
	for c := range ps {
		ps[c].rng = seed(c)
		ps[c].next(s.w.Stalls, s.w.StartNS, f)
	}
	return ps
}

// endAt advances p past t at stalled fraction f and returns the end of
// the stall t falls in, or t when it falls in none.
func (p *stallProc) endAt(m *StallModel, t int64, f float64) int64 {
	if p.start >= math.MaxInt64/2 && f > 0 {
		// No stall was due at the last draw (no stalls measured at that
		// load): start afresh from now, in the process's steady state.
		p.resume(m, t, f)
	}
	for p.end <= t {
		p.next(m, p.end, f)
	}
	if t >= p.start {
		return p.end
	}
	return t
}

// reschedDelays is the pool the wakeup-preemption delay is drawn from: for
// a wakeup on the target CPU itself, the trace's local delays (if any),
// for one an interrupt raised there the trace's interrupts' (if enough);
// otherwise the remote ones (initPreemptPools).
func (s *Sim) reschedDelays(local, irqLocal bool) []int64 {
	switch {
	case local && len(s.localPool) > 0:
		return s.localPool
	case irqLocal && len(s.irqLocalPool) > 0:
		return s.irqLocalPool
	}
	return s.remotePool
}

// initPreemptPools derives, once, the pools reschedDelays and reschedRT
// draw from (and, with Config.TickSoftIRQ, tickResched's softirqPool).
// The remote one is the trace's remote delays without those longer than
// the stall tolerance when stalls are modelled (those waited for a
// descheduled vCPU: the replay adds the host stalls of the running
// task's demand itself, hostStallEnd). A remote pool of fewer than
// minSamples delays (stress-ng's timer wakeups: 2 on this
// machine's 6.18 recording, 26 µs and 3.95 ms) says nothing of their
// distribution; the draw then comes from every CFS wakeup preemption of
// the trace, local and remote. The real-time pool is cut at the stall
// tolerance too, and left empty (an immediate switch) below minSamples;
// so is the interrupts' local pool (the remote pool's draw instead).
func (s *Sim) initPreemptPools() {
	// The delays with a tick between the wakeup and the switch are the
	// tick's decisions, which the replay takes itself
	// (Workload.PreemptWakeTickNS): no draw.
	pool, local := s.w.PreemptWakeNS, s.w.PreemptWakeLocalNS
	s.localPool = local
	if len(s.w.PreemptWakeLocalIRQNS) >= minSamples {
		s.irqLocalPool = s.w.PreemptWakeLocalIRQNS
	}
	if len(pool) < minSamples && len(local) > 0 {
		pool = append(append([]int64{}, pool...), local...)
		slices.Sort(pool)
	}
	if s.w.Stalls != nil {
		if n := belowStallTolerance(pool); n > 0 {
			pool = pool[:n]
		}
	}
	s.remotePool = pool
	rt := s.w.PreemptWakeRTNS
	if s.w.Stalls != nil {
		rt = rt[:belowStallTolerance(rt)]
	}
	if len(rt) < minSamples {
		rt = nil
	}
	s.rtPool = rt
	if s.cfg.TickSoftIRQ {
		s.softirqPool = softirqSwitchDelays(mergeSorted(local, s.w.PreemptWakeLocalTickNS), s.tickNS)
	}
}

// minIdleExitClass: a class of idle exits (the forks', the rest) is drawn
// from alone with at least this many samples; with fewer it draws from
// the one pool. Eight keep the trace's own class on the recordings whose
// forks are few (a hackbench run has 80, a stress-ng one a handful).
const minIdleExitClass = 8

// initIdleExitPools sets the idle-exit pools of an uncontended trace: the
// one pool for both classes, or with Config.IdleExitSplit the forks'
// (Workload.IdleWakeForkNS) and the rest, each where it has
// minIdleExitClass samples. A fork traces sched_wakeup_new after
// wake_up_new_task has enqueued the child; a wakeup traces sched_waking
// before select_task_rq, and onto an idle CPU its wake-list IPI makes the
// target enqueue it: the two delays differ (FIDELITY.md round 152).
func (s *Sim) initIdleExitPools() {
	s.idleForkPool, s.idleWakePool = s.w.IdleWakeNS, s.w.IdleWakeNS
	if !s.cfg.IdleExitSplit || len(s.w.IdleWakeForkNS) == 0 {
		return
	}
	if len(s.w.IdleWakeForkNS) >= minIdleExitClass {
		s.idleForkPool = s.w.IdleWakeForkNS
	}
	if rest := sortedMinus(s.w.IdleWakeNS, s.w.IdleWakeForkNS); len(rest) >= minIdleExitClass {
		s.idleWakePool = rest
	}
}

// sortedMinus is sorted a less the samples of sorted b, each taken out
// once (a multiset difference; b's samples a lacks are ignored).
func sortedMinus(a, b []int64) []int64 {
	out := make([]int64, 0, len(a))
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			j++
			continue
		}
		out = append(out, x)
	}
	return out
}

// mergeSorted is the sorted union of two sorted pools (a itself when b is
// empty): with tick_softirq, the local delays with and without a tick
// between, as the trace had them.
func mergeSorted(a, b []int64) []int64 {
	if len(b) == 0 {
		return a
	}
	out := make([]int64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i] <= b[j] {
			out, i = append(out, a[i]), i+1
		} else {
			out, j = append(out, b[j]), j+1
		}
	}
	return append(append(out, a[i:]...), b[j:]...)
}

// softirqSwitchDelays are the delays a held tick's switch comes after its
// softirq's last waking (Sim.tickResched): of the trace's wakeup
// preemptions raised on the preempted CPU itself (local), those that
// switched within a quarter tick of the waking (the interrupt's return).
// The rest waited for a later tick (3.6 ms and more: a quarter of
// guest-N r1's 6.12 schbench pool), which a tick's own switch does not.
func softirqSwitchDelays(local []int64, tickNS int64) []int64 {
	var out []int64
	for _, d := range local {
		if d < tickNS/4 {
			out = append(out, d)
		}
	}
	return out
}

// belowStallTolerance is how many of the sorted delays are within the
// stall tolerance.
func belowStallTolerance(sorted []int64) int {
	return sort.Search(len(sorted), func(i int) bool { return sorted[i] > stallToleranceNS })
}

// Host contention: the host runs about HostCores (H) of the vCPUs that
// want to run at once, so their stalls are not independent. A vCPU sending
// an IPI is running: it holds one of the host's cores, and the target, one
// of the other n − 1 vCPUs that want to run (the busy ones and the woken
// idle vCPU itself), finds a core with probability (H − 1)/(n − 1) when the
// host shares its H cores evenly among the n. hostWaitFraction is the
// stalled fraction of the target's host-wait process (hostEnd) at that
// load: 0 while the host has a core for it. The trace's remote idle exits
// follow this (schbench: ~0.1 ms median with one CPU busy, 3–5 ms with six
// or more; FIDELITY.md round 11). A wakeup preemption's IPI to a busy
// vCPU finds it descheduled at the same rate, but the running task's own
// host stalls (hoststall.go) already hold part of it: busyHostEnd draws
// the rest (round 84; taken whole, on top of those stalls, the waits
// overshot the trace's, rounds 11 and 32).
func (m *StallModel) hostWaitFraction(n int) float64 {
	h := m.HostCores
	if n <= 1 || h <= 1 {
		return 0
	}
	f := 1 - (h-1)/float64(n-1)
	if f < 0 {
		return 0
	}
	return f
}

// hostEnd returns when CPU cpu, sent an IPI at t by another running vCPU
// while n vCPUs want to run (itself included), is run by the host: t, or
// the end of the stall t falls in on the CPU's host-wait process, an
// alternating process like stallEnd's (stall lengths from the measured
// ones) whose stalled fraction is hostWaitFraction(n), so a wait is the
// rest of a stall. Its own SplitMix64 stream per CPU.
func (s *Sim) hostEnd(cpu int, t int64, n int) int64 {
	m := s.w.Stalls
	if m == nil || !s.cfg.IdleWake || len(m.StallsNS) == 0 || m.HostCores <= 0 {
		return t
	}
	f := m.hostWaitFraction(n)
	if s.hostStall == nil {
		s.hostStall = s.newStallProcs(f, func(c int) uint64 {
			return (s.cfg.Seed+1)*0x9e3779b97f4a7c15 + uint64(c)*0xd1342543de82ef95 + 0x632be59bd9b4e019
		})
	}
	return s.hostStall[cpu].endAt(m, t, f)
}

// busyHostWaitFraction is the share of wakeup preemptions sent to a busy
// vCPU outside its running task's host stalls that must wait for a host
// core, with n vCPUs busy (the target and the sender among them), for
// the contention's stalled fraction f = hostWaitFraction(n) to hold over
// all of them: the task's own stalls (hoststall.go) already catch about
// the share s_n of its busy time the trace measured stalled with n busy
// (fraction), so the rest is q = (f − s_n)/(1 − s_n), 0 where s_n ≥ f.
// Without it the trace's remote wakeup preemptions on the eight-vCPU
// guests' hackbench waited over 1 ms at 57–91 % of them, the replay's at
// 30–61 % (FIDELITY.md round 84).
func (m *StallModel) busyHostWaitFraction(n int) float64 {
	f, sn := m.hostWaitFraction(n), m.fraction(n)
	if f <= sn || sn >= 1 {
		return 0
	}
	return (f - sn) / (1 - sn)
}

// busyHostEnd returns when busy CPU cpu, sent a wakeup preemption's IPI at
// t by another running vCPU while its task is outside its own host
// stalls, is run by the host: t, or the end of the stall t falls in on the
// CPU's busy host-wait process (an alternating process like hostEnd's, its
// stalled fraction busyHostWaitFraction(busy CPUs); own SplitMix64 stream
// per CPU). t without Config.BusyHostWait or a measured HostCores. Until
// then the vCPU is descheduled: its task fires no wakeup (fireDue).
func (s *Sim) busyHostEnd(cpu int, t int64) int64 {
	m := s.w.Stalls
	if !s.cfg.BusyHostWait || m == nil || !s.cfg.IdleWake || len(m.StallsNS) == 0 || m.HostCores <= 0 {
		return t
	}
	q := m.busyHostWaitFraction(s.busyCPUs())
	if q <= 0 {
		return t
	}
	if s.busyHost == nil {
		s.busyHost = s.newStallProcs(q, func(c int) uint64 {
			return (s.cfg.Seed+1)*0xd1342543de82ef95 + uint64(c)*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
		})
	}
	return s.busyHost[cpu].endAt(m, t, q)
}

// busyCPUs is the number of CPUs running a task.
func (s *Sim) busyCPUs() int {
	n := 0
	for _, r := range s.cpus {
		if r.curr != nil {
			n++
		}
	}
	return n
}

// hostUncontended: with at most this many CPUs busy at a wakeup (the
// waker's among them) the 2-core host has a core for the woken vCPU, so
// such a remote idle exit's delay is the IPI and idle exit alone
// (Workload.IdleWakeRemoteNS).
const hostUncontended = 2

// irqWakeStallEnd is when a wakeup preemption raised by an interrupt on
// the target CPU itself, due at `at`, switches: the vCPU runs when it
// takes the interrupt, but the host may deschedule it before the switch
// on the interrupt's return. With the measured probability
// (StallModel.IRQWakeStall) a stall comes in between and the switch waits
// for its end: one the trace's interrupt wakeups themselves waited through
// (IRQWakeStallsNS), or with too few of those or Config.IRQStallAll, one
// of all the measured stalls. Its own random stream, so the other draws
// are unchanged.
func (s *Sim) irqWakeStallEnd(at int64) int64 {
	m := s.w.Stalls
	if m == nil || m.IRQWakeStall <= 0 || !s.cfg.IdleWake || len(m.StallsNS) == 0 {
		return at
	}
	p := &s.irqStall
	if p.rng == 0 {
		p.rng = (s.cfg.Seed+1)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	}
	u := float64(p.rand()>>11) / (1 << 53)
	if u >= m.IRQWakeStall {
		return at
	}
	pool := m.StallsNS
	if len(m.IRQWakeStallsNS) > 0 && !s.cfg.IRQStallAll {
		pool = m.IRQWakeStallsNS
	}
	d := pool[p.rand()%uint64(len(pool))]
	s.stats.IRQWakeStalls++
	s.stats.IRQWakeStallNS += d
	return at + d
}
