package whatif

import (
	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/timeline"
)

// Where wakeups land, for the fidelity report.
//
// The goal metrics pool every wakeup latency; where a replay departs from
// the trace shows first in which kind of CPU the wakees ran on: one idle
// at the wakeup (its latency is the idle exit, on a guest the host's wait
// for a core), the waker's own busy CPU (the wakee waits for the waker to
// block or be preempted), or another busy CPU (a remote wakeup preemption,
// or a wait behind that CPU's tasks). FIDELITY.md's rounds 24–28 split the
// guests' misses this way with throw-away readers; placeTally makes it
// part of every `--validate`: count, p50 and p95 per place, observed beside
// simulated. The latency is the analysis's own (perf sched timehist's
// "sch delay": a task's first wakeup since its last switch-out to its
// switch-in, none spanning lost records), so the counts add up to the goal
// metrics' wakeups, less those onto a CPU whose state at the wakeup the
// trace does not give (before the CPU's first switch, or since lost
// records until its next).
//
// A busy CPU's wakeups, the waker's own or another, are split once more
// by how the wakee got the CPU (the prev_state of its switch-in): by
// switching out a runnable task (a wakeup preemption, or the tick's), or
// after the task there blocked or exited. On the 8-vCPU guests the two
// differ the most on another CPU: a remote wakeup preemption is an IPI,
// which a vCPU the host has descheduled takes only when it runs again
// (the guests' hackbench traces: p50 3.2–4.4 ms; this machine's 6.18 one:
// 21 µs), while the wait behind a task about to block can be short
// (guest-A: 0.29 ms); FIDELITY.md round 32. On the waker's CPU the split
// counts how often a wakee preempted its waker (FIDELITY.md round 128:
// where 6.12's hackbench senders share a CPU with their receivers, each
// is preempted by the receiver it wakes within a write or two).
//
// The preempting wakeups onto another busy CPU are split once more: those
// whose switch-in was that CPU's first switch after the wakeup, the
// wakeup's own preemption (the IPI's). The rest waited through other
// tasks' turns there and got in when a tick (or another wakeup) switched
// a runnable task out: on the two-vCPU guests' hackbench, where a CPU
// holds a dozen runnable tasks, they are most of the class (guest-P's
// committed recording: 16 of its 57 at the first switch, p50 0.19 ms,
// the class's 24.9 ms; FIDELITY.md round 147).

// Wakeup places. Each busy place is followed by its split: by preempting
// a runnable task, after a block; the last splits another busy CPU's
// preempting ones (the report prints it under them).
const (
	placeIdle = iota
	placeWaker
	placeWakerPreempt
	placeWakerBlock
	placeOtherBusy
	placeOtherBusyPreempt
	placeOtherBusyBlock
	// placeOtherBusyFirst: of placeOtherBusyPreempt, those at the CPU's
	// first switch after the wakeup.
	placeOtherBusyFirst
	nPlaces
)

// PlaceNames are the JSON keys of Metrics.WakeupByPlace.
var PlaceNames = [nPlaces]string{"idle_cpu", "waker_cpu", "waker_cpu.preempt", "waker_cpu.block", "other_busy_cpu", "other_busy_cpu.preempt", "other_busy_cpu.block", "other_busy_cpu.preempt.first"}

// PlaceStats is the wakeup latency of the wakeups of one place.
type PlaceStats struct {
	Count int64 `json:"count"`
	P50NS int64 `json:"p50_ns"`
	P95NS int64 `json:"p95_ns"`
}

type placeTally struct {
	curr []int32 // per CPU: running pid, 0 idle, -1 unknown
	// waking: the wakeups are sched_waking (set from the first one, or
	// up front for a simulated schedule or a trace listing it); until
	// then sched_wakeup, as the analysis takes them (on such a trace a
	// wakeup the target's IPI enqueued is written on the target CPU, so
	// it counts as raised there).
	waking bool
	// pend: a task's first wakeup since its last switch-out (the
	// analysis's ready time); lastOut: its last switch-out.
	pend     map[int32]*placeWake
	lastOut  map[int32]int64
	lastLoss int64 // the last lost-records mark (-1 none)
	free     []*placeWake
	lats     [nPlaces][]int64
	// seq numbers the events seen; lastSwitch: per CPU, the seq of its
	// last switch (0: none seen).
	seq        int64
	lastSwitch []int64
}

// placeWake is a wakeup: when (and its event's seq), the CPU that
// raised it, and which CPUs were idle and which busy then (bit sets;
// neither: not known).
type placeWake struct {
	t, seq     int64
	cpu        int32
	idle, busy []uint64
}

func newPlaceTally() *placeTally {
	return &placeTally{pend: map[int32]*placeWake{}, lastOut: map[int32]int64{}, lastLoss: -1}
}

func (p *placeTally) grow(c int32) {
	for int(c) >= len(p.curr) {
		p.curr = append(p.curr, -1)
		p.lastSwitch = append(p.lastSwitch, 0)
	}
}

func (p *placeTally) drop(pid int32) {
	if w := p.pend[pid]; w != nil {
		p.free = append(p.free, w)
		delete(p.pend, pid)
	}
}

// before sees an event before the analysis does: a wakeup the analysis
// times (sched_waking, sched_wakeup_new; sched_wakeup on a trace without
// sched_waking) is noted with the CPUs' states; lost records make every
// CPU's state unknown.
func (p *placeTally) before(e *timeline.Event) {
	p.seq++
	if e.Kind == timeline.Lost {
		for i := range p.curr {
			p.curr[i] = -1
		}
		p.lastLoss = e.Time
		return
	}
	switch e.Kind {
	case timeline.SchedWaking:
		p.waking = true
	case timeline.SchedWakeupNew:
	case timeline.SchedWakeup:
		if p.waking {
			return
		}
	default:
		return
	}
	if !e.IsSet(timeline.CPU) || timeline.CheckCPUs(e) != nil {
		return
	}
	pid := e.Int32(timeline.PID)
	if pid == 0 || p.pend[pid] != nil {
		return
	}
	c := e.Int32(timeline.CPU)
	p.grow(c)
	var w *placeWake
	if n := len(p.free); n > 0 {
		w, p.free = p.free[n-1], p.free[:n-1]
	} else {
		w = &placeWake{}
	}
	words := (len(p.curr) + 63) / 64
	w.t, w.seq, w.cpu = e.Time, p.seq, c
	w.idle, w.busy = resetBits(w.idle, words), resetBits(w.busy, words)
	for i, cur := range p.curr {
		switch {
		case cur == 0:
			w.idle[i/64] |= 1 << (i % 64)
		case cur > 0:
			w.busy[i/64] |= 1 << (i % 64)
		}
	}
	p.pend[pid] = w
}

// resetBits returns b as words zero words, reusing its array.
func resetBits(b []uint64, words int) []uint64 {
	if cap(b) < words {
		return make([]uint64, words)
	}
	b = b[:words]
	clear(b)
	return b
}

// after sees a switch after the analysis: the task switched in has its
// wakeup's latency classified where the analysis counts it (its wakeup,
// and its last switch-out, after the last loss).
func (p *placeTally) after(e *timeline.Event) {
	if e.Kind != timeline.SchedSwitch || !e.IsSet(timeline.CPU) || timeline.CheckCPUs(e) != nil {
		return
	}
	c := e.Int32(timeline.CPU)
	p.grow(c)
	now := e.Time
	prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
	if prev != 0 {
		// A wakeup while it ran is before this switch-out: the analysis
		// times the next one.
		p.drop(prev)
		p.lastOut[prev] = now
	}
	if next != 0 {
		if w := p.pend[next]; w != nil && w.t <= now {
			from, ok := p.lastOut[next]
			if !ok || from == 0 {
				from = w.t
			}
			if p.lastLoss < from {
				st := e.Str(timeline.PrevState)
				p.classify(w, c, now-w.t, prev != 0 && len(st) > 0 && st[0] == 'R', p.lastSwitch[c] < w.seq)
			}
		}
		p.drop(next)
	}
	p.curr[c] = next
	p.lastSwitch[c] = p.seq
}

// classify books a wakeup latency by the state at the wakeup of cpu, the
// CPU the wakee ran on, and on a busy CPU by whether its switch-in
// preempted a runnable task (and on another busy CPU, whether that was
// the CPU's first switch since the wakeup: first).
func (p *placeTally) classify(w *placeWake, cpu int32, delay int64, preempt, first bool) {
	if int(cpu)/64 >= len(w.idle) {
		return
	}
	bit := uint64(1) << (cpu % 64)
	switch {
	case w.idle[cpu/64]&bit != 0:
		p.lats[placeIdle] = append(p.lats[placeIdle], delay)
	case w.busy[cpu/64]&bit == 0:
		// The CPU's state at the wakeup is not known.
	case cpu == w.cpu:
		p.book(placeWaker, delay, preempt)
	default:
		p.book(placeOtherBusy, delay, preempt)
		if preempt && first {
			p.lats[placeOtherBusyFirst] = append(p.lats[placeOtherBusyFirst], delay)
		}
	}
}

// book adds delay to busy place k and to its split (k+1 preempting, k+2
// after a block).
func (p *placeTally) book(k int, delay int64, preempt bool) {
	p.lats[k] = append(p.lats[k], delay)
	if preempt {
		p.lats[k+1] = append(p.lats[k+1], delay)
	} else {
		p.lats[k+2] = append(p.lats[k+2], delay)
	}
}

// stats returns the per-place statistics (the analysis's percentiles).
func (p *placeTally) stats() map[string]PlaceStats {
	out := map[string]PlaceStats{}
	for k, l := range p.lats {
		d := analysis.Distribution(l)
		out[PlaceNames[k]] = PlaceStats{Count: d.Count, P50NS: d.P50NS, P95NS: d.P95NS}
	}
	return out
}
