package whatif

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/schedreplay/replay/model"
)

// Host stalls that travel with the demand.
//
// A vCPU the host has descheduled runs nothing: its task makes no progress,
// takes no tick and no IPI. The trace shows this as a stretch with no event
// on a CPU running a CFS task that is longer than a tick period: a busy
// CFS CPU records the tick's update_curr (a hard-IRQ sched_stat_runtime)
// at least every T. The run's recorded time, and so the task's demand,
// includes the stretch, at a known point of the task's progress. The
// replay keeps it there: a wakeup preemption or a tick that would land
// inside it waits for its end (Sim.hostStallEnd). The stall moves with the
// task, which is what a vCPU stall is from the task's side: the same work
// took that much more wall time at that point of it.
//
// Which part of an event-free stretch [a, b] was a stall: the ticks of a
// CPU fire on a fixed grid (NOHZ restarts the tick on it), and the first
// grid point g after a passed without a tick record, so the vCPU was not
// running from g at the latest until b. [g, b] is kept when longer than
// stallToleranceNS (timer jitter). The grid's phase is estimated per CPU
// from its tick records (the densest window of their times modulo T: the
// on-time ticks; late ones scatter), falling back to all CPUs' records,
// and to g = a + T (the latest g can be) without enough of them. This is a
// lower bound: the vCPU may have stopped anywhere in [a, g].
//
// The measure is from the trace alone: a bare-metal trace has no such
// stretches (every busy CPU ticks on time), so nothing changes there. A
// trace that does not record sched_stat_runtime shows no ticks at all,
// so its stretches say nothing about the host: it has no host stalls
// (on LISA's rt-app example, sched_switch alone, 87 % of the demand had
// been taken for stalls).
// Before this (FIDELITY.md round 20) the replay drew busy CPUs' stalls from
// an independent per-CPU process fitted to late ticks inside uninterrupted
// runs; that estimator missed a stall with no tick record before it in the
// same run, which is most of them on hackbench's short runs.

// HostStall is a stretch of one activation's demand during which the
// trace shows the task's vCPU descheduled by the host.
type HostStall struct {
	Task, Act int32
	// OffsetNS, LenNS: where the stall starts in the activation's demand
	// and how long it is, both at capacity 1024 as the demand.
	OffsetNS, LenNS int64
	// CPU, TimeNS, WallNS: the vCPU and the trace's wall-clock stretch
	// [TimeNS, TimeNS+WallNS) it was stalled in, for a replay that leaves
	// the stall on the CPU (Config.HostStallCPU). TimeNS 0: unknown (a
	// workload file written before these were kept).
	CPU            int32
	TimeNS, WallNS int64
	// Busy: the CPUs running a task (this one among them) when the trace
	// showed the stall, at its end; 0: unknown (a workload file written
	// before they were kept). The host's contention then set how likely
	// the stall was (stallcontention.go).
	Busy int32
}

// overlaps reports whether next, the stall after h in the workload's
// order, starts inside h in the same activation.
func (h *HostStall) overlaps(next *HostStall) bool {
	return h.Task == next.Task && h.Act == next.Act && h.OffsetNS+h.LenNS > next.OffsetNS
}

// maxTickPhaseNS bounds a workload's tick phase: under the longest tick
// period a kernel can have (HZ 100).
const maxTickPhaseNS = 10000000

// tickPhaseBins is the resolution of the tick-phase histogram (10 µs at
// HZ 250); tickPhaseWindowBins the width of the on-time window (200 µs).
// A CPU needs minSamples tick records for its own estimate.
const (
	tickPhaseBins       = 400
	tickPhaseWindowBins = 20
)

// rawGap is an event-free stretch of a busy CPU before the tick grid is
// known: the running task's activation and its progress at `from` (the
// gap's start, or the run's start if later).
type rawGap struct {
	task, act int32
	cpu       int32
	offset    int64 // demand at from
	capc      int64 // the CPU's capacity (demand per ns × 1024)
	from      int64
	last, end int64 // the CPU's last event before the gap, the event ending it
	nBusy     int   // CPUs running a task when the gap was found
}

// hostStallFinder collects the gaps during extraction and resolves them
// into HostStalls once the tick grid is estimated.
//
// It also measures how many vCPUs the host ran at once (hostCores): the
// busy CPU time per number of busy CPUs, and the stalls found while that
// many were busy.
type hostStallFinder struct {
	tickNS int64
	// global is the tick grid's phase from all CPUs' tick records (-1:
	// too few), set by resolve.
	global int64
	lastEv []int64 // per CPU: last event (-1: none, or lost records since)
	cfs    []bool  // per CPU: running a CFS task (switched to with prio >= 100)
	busy   []bool  // per CPU: running a task (any class)
	hist   [][]int // per CPU: tick records by phase bin
	gaps   []rawGap
	// runtimes: the trace records sched_stat_runtime (a busy CFS CPU
	// then writes one at every tick); without, no gap is a stall.
	runtimes bool
	// lastT is the time of the last event on any CPU (-1: none, or lost
	// records since); nBusy the CPUs running a task since then.
	lastT int64
	nBusy int
	// obsBy[k] is the CPU time of busy CPUs while k were busy (k × the
	// stretch), stallBy[k] the stall time of the gaps found while k were
	// busy (filled by resolve).
	obsBy, stallBy []int64
}

func newHostStallFinder(tickNS int64) *hostStallFinder {
	return &hostStallFinder{tickNS: tickNS, lastT: -1}
}

func (h *hostStallFinder) grow(c int32) {
	for int(c) >= len(h.lastEv) {
		h.lastEv = append(h.lastEv, -1)
		h.cfs = append(h.cfs, false)
		h.busy = append(h.busy, false)
		h.hist = append(h.hist, nil)
	}
}

// gap reports, for an event on CPU c at t, the event-free stretch before it
// if the CPU was running a CFS task through it and it is longer than a tick
// period plus the tolerance (the caller then adds it with add), and notes
// the event.
func (h *hostStallFinder) gap(c int32, t int64) (last int64, ok bool) {
	h.grow(c)
	if h.lastT >= 0 && t > h.lastT {
		for len(h.obsBy) <= h.nBusy {
			h.obsBy = append(h.obsBy, 0)
		}
		h.obsBy[h.nBusy] += (t - h.lastT) * int64(h.nBusy)
	}
	h.lastT = max(h.lastT, t)
	last = h.lastEv[c]
	if t > last {
		h.lastEv[c] = t
	}
	return last, last >= 0 && h.cfs[c] && t-last > h.tickNS+stallToleranceNS
}

// switchTo notes what CPU c runs from its switch on: a task or idle, a
// CFS task or not.
func (h *hostStallFinder) switchTo(c int32, busy, cfs bool) {
	h.grow(c)
	h.cfs[c] = cfs
	if busy != h.busy[c] {
		h.busy[c] = busy
		if busy {
			h.nBusy++
		} else {
			h.nBusy--
		}
	}
}

// tick notes a tick record (hard-IRQ sched_stat_runtime) on CPU c at t.
func (h *hostStallFinder) tick(c int32, t int64) {
	h.grow(c)
	if h.hist[c] == nil {
		h.hist[c] = make([]int, tickPhaseBins)
	}
	h.hist[c][int(t%h.tickNS*tickPhaseBins/h.tickNS)]++
}

// lost: records were lost on CPU c (all CPUs if c < 0): a stretch across
// the loss says nothing.
func (h *hostStallFinder) lost(c int32) {
	for i := range h.lastEv {
		if c < 0 || int32(i) == c {
			h.lastEv[i] = -1
		}
	}
	h.lastT = -1
}

func (h *hostStallFinder) add(g rawGap) { h.gaps = append(h.gaps, g) }

// phase estimates the tick grid's phase (ns after a multiple of tickNS)
// from a phase histogram: the first tick record in the densest window of
// tickPhaseWindowBins bins (circular). -1 under minSamples records.
func (h *hostStallFinder) phase(hist []int) int64 {
	n := 0
	for _, v := range hist {
		n += v
	}
	if n < minSamples {
		return -1
	}
	w := 0
	for j := range tickPhaseWindowBins {
		w += hist[j]
	}
	best, at := w, 0
	for i := 1; i < tickPhaseBins; i++ {
		w += hist[(i+tickPhaseWindowBins-1)%tickPhaseBins] - hist[i-1]
		if w > best {
			best, at = w, i
		}
	}
	for j := range tickPhaseWindowBins {
		if b := (at + j) % tickPhaseBins; hist[b] > 0 {
			return int64(b) * h.tickNS / tickPhaseBins
		}
	}
	return int64(at) * h.tickNS / tickPhaseBins
}

// resolve returns the stalls of the collected gaps, sorted by (task,
// activation, offset), with task indices mapped through keep.
func (h *hostStallFinder) resolve(keep []int32) []HostStall {
	all := make([]int, tickPhaseBins)
	phases := make([]int64, len(h.hist))
	for c, hist := range h.hist {
		phases[c] = -1
		if hist != nil {
			for i, v := range hist {
				all[i] += v
			}
			phases[c] = h.phase(hist)
		}
	}
	global := h.phase(all)
	h.global = global
	if !h.runtimes {
		return nil
	}
	var out []HostStall
	for _, g := range h.gaps {
		ph := global
		if int(g.cpu) < len(phases) && phases[g.cpu] >= 0 {
			ph = phases[g.cpu]
		}
		// The first tick due after the CPU's last event.
		due := g.last + h.tickNS
		if ph >= 0 {
			due = ph + (floorDiv(g.last-ph, h.tickNS)+1)*h.tickNS
		}
		from := max(due, g.from)
		if g.end-from <= stallToleranceNS {
			continue
		}
		for len(h.stallBy) <= g.nBusy {
			h.stallBy = append(h.stallBy, 0)
		}
		h.stallBy[g.nBusy] += g.end - from
		if keep[g.task] < 0 {
			continue
		}
		out = append(out, HostStall{Task: keep[g.task], Act: g.act,
			OffsetNS: g.offset + (from-g.from)*g.capc/1024, LenNS: (g.end - from) * g.capc / 1024,
			CPU: g.cpu, TimeNS: from, WallNS: g.end - from, Busy: int32(g.nBusy)})
	}
	slices.SortStableFunc(out, func(a, b HostStall) int {
		if a.Task != b.Task {
			return int(a.Task - b.Task)
		}
		if a.Act != b.Act {
			return int(a.Act - b.Act)
		}
		return int(min(max(a.OffsetNS-b.OffsetNS, -1), 1))
	})
	return out
}

// hostCores is how many of the busy vCPUs the host ran at once, on
// average, while at least hostMinBusy were busy: Σ k (obs_k − stall_k) /
// Σ obs_k over those counts k, from the stalls resolve found (call it
// after resolve). 0 under hostMinObsTicks tick periods of such busy CPU
// time. The stalls are lower bounds (dated from the first tick due), so
// this is an upper bound: the guests' 2-core host gives 1.9–3.2.
func (h *hostStallFinder) hostCores() float64 {
	var run, obs float64
	for k := hostMinBusy; k < len(h.obsBy); k++ {
		st := int64(0)
		if k < len(h.stallBy) {
			st = h.stallBy[k]
		}
		run += float64(k) * float64(h.obsBy[k]-st)
		obs += float64(h.obsBy[k])
	}
	if obs <= 0 || obs < hostMinObsTicks*float64(h.tickNS) {
		return 0
	}
	return run / obs
}

// cutFront shortens h to its last n ns of demand, its wall stretch in
// proportion.
func (h *HostStall) cutFront(n int64) {
	if h.LenNS > 0 && h.WallNS > 0 {
		w := scaleNS(h.WallNS, n, h.LenNS)
		h.TimeNS += h.WallNS - w
		h.WallNS = w
	}
	h.LenNS = n
}

// cutBack shortens h to its first n ns of demand, its wall stretch in
// proportion.
func (h *HostStall) cutBack(n int64) {
	if h.LenNS > 0 && h.WallNS > 0 {
		h.WallNS = scaleNS(h.WallNS, n, h.LenNS)
	}
	h.LenNS = n
}

// scaleNS is v × n / d for 0 <= n <= d (a share of a duration: a
// shortened stall's of its wall stretch, a run's of its demand) in 128
// bits: v × n overflows int64 for stretches of a few seconds
// (FuzzExtractReplay found a 5.4 s one whose wall length came out
// negative).
func scaleNS(v, n, d int64) int64 {
	switch {
	case n >= d:
		return v
	case n <= 0 || v <= 0:
		return 0
	}
	hi, lo := bits.Mul64(uint64(v), uint64(n))
	q, _ := bits.Div64(hi, lo, uint64(d))
	return int64(q)
}

// checkWall checks h's busy count (at most the CPUs a model can have) and
// its wall-clock stretch against w's span: a CPU the model can have,
// inside the trace, no longer than the trace.
func (h *HostStall) checkWall(w *Workload) error {
	if h.Busy < 0 || h.Busy > model.MaxCPUs {
		return fmt.Errorf("%d CPUs busy, want 0 (unknown) to %d", h.Busy, model.MaxCPUs)
	}
	if h.TimeNS == 0 {
		return nil
	}
	if h.CPU < 0 || h.CPU >= model.MaxCPUs || h.WallNS <= 0 || h.WallNS > MaxSpanNS || h.TimeNS-w.StartNS > MaxSpanNS || w.StartNS-h.TimeNS > MaxSpanNS {
		return fmt.Errorf("cpu %d, wall-clock stretch [%d, +%d) out of range", h.CPU, h.TimeNS, h.WallNS)
	}
	return nil
}
