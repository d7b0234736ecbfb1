package whatif

import "github.com/schedreplay/replay/model"

// IdleByBusy splits the CPUs' idle time, and the idle ticks taken in it,
// by how many CPUs ran a task then: fewer than half, or half or more (an
// idle vCPU's chance to take its tick under light and heavy host
// contention, FIDELITY.md round 102). A CPU counts from its first switch:
// idle from a switch to its idle task until its next switch, busy from a
// switch to a task until its next switch to idle. The replay keeps one
// (Stats.IdleTicksFewBusy and the rest, under Config.IdleTicks) and
// scripts/idlepulls reads a trace's with the same type, so the two sides
// are split by one rule.
type IdleByBusy struct {
	// NCPU is the machine's CPU count; 0 takes the CPUs seen switching.
	NCPU int
	// FewNS, ManyNS: idle time while fewer than half the CPUs were busy,
	// and while half or more were.
	FewNS, ManyNS int64
	// FewTicks, ManyTicks: the idle ticks (Tick) on each side.
	FewTicks, ManyTicks int64

	state      []int8 // per CPU: 0 not yet switched, 1 idle, 2 busy
	idle, busy int
	since      int64 // the last change
}

// few: fewer than half the CPUs are busy.
func (b *IdleByBusy) few() bool { return 2*b.busy < max(b.NCPU, b.idle+b.busy) }

// Advance adds the idle time up to t to its side.
func (b *IdleByBusy) Advance(t int64) {
	if d := (t - b.since) * int64(b.idle); d > 0 {
		if b.few() {
			b.FewNS += d
		} else {
			b.ManyNS += d
		}
	}
	b.since = t
}

// Switched notes that CPU c switched at t to its idle task (idle) or to a
// task. A CPU number no machine model has is not counted.
func (b *IdleByBusy) Switched(c int32, t int64, idle bool) {
	if c < 0 || c >= model.MaxCPUs {
		return
	}
	b.Advance(t)
	for int(c) >= len(b.state) {
		b.state = append(b.state, 0)
	}
	switch b.state[c] {
	case 1:
		b.idle--
	case 2:
		b.busy--
	}
	if idle {
		b.state[c] = 1
		b.idle++
	} else {
		b.state[c] = 2
		b.busy++
	}
}

// Tick counts an idle tick of CPU c (nothing queued) if c is idle since a
// switch.
func (b *IdleByBusy) Tick(c int32) {
	if c < 0 || int(c) >= len(b.state) || b.state[c] != 1 {
		return
	}
	if b.few() {
		b.FewTicks++
	} else {
		b.ManyTicks++
	}
}

// PerJiffy is the idle ticks per tick period (tickNS) of idle time on
// each side, "-" for a side with none.
func (b *IdleByBusy) PerJiffy(tickNS int64) (few, many string) {
	return perPeriod(b.FewTicks, float64(b.FewNS)/float64(tickNS)), perPeriod(b.ManyTicks, float64(b.ManyNS)/float64(tickNS))
}

// noteCPU records that r is now idle or busy (Config.IdleTicks only).
func (s *Sim) noteCPU(r *rq, idle bool) {
	if s.cfg.IdleTicks == 0 {
		return
	}
	b := &s.idleByBusy
	b.NCPU = s.ncpu // the machine's CPUs, not just those seen switching
	b.Switched(int32(r.cpu), s.now, idle)
}

// addIdleTime adds the idle time since the last change to its side and
// copies the split into the replay's statistics, the idle time in tick
// periods (at the replay's end: Run).
func (s *Sim) addIdleTime() {
	b := &s.idleByBusy
	b.Advance(s.now)
	s.stats.IdlePeriodsFewBusy = float64(b.FewNS) / float64(s.tickNS)
	s.stats.IdlePeriodsManyBusy = float64(b.ManyNS) / float64(s.tickNS)
	s.stats.IdleTicksFewBusy, s.stats.IdleTicksManyBusy = b.FewTicks, b.ManyTicks
}

// noteIdleTick counts r's idle tick (nothing queued) by the CPUs busy
// then, if r's idle time counts (it went idle by a switch).
func (s *Sim) noteIdleTick(r *rq) { s.idleByBusy.Tick(int32(r.cpu)) }
