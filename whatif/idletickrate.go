package whatif

// busySplit accumulates the CPUs' idle time by how many CPUs are busy, for
// Stats.IdlePeriodsFewBusy and IdlePeriodsManyBusy. A CPU counts from its
// first switch: idle from a switch to its idle task (enterIdle) until its
// next switch, busy from a switch to a task until its next switch to
// idle, as scripts/idlepulls reads a trace's.
type busySplit struct {
	state      []int8 // per CPU: 0 not yet switched, 1 idle, 2 busy (nil: no switch yet)
	idle, busy int
	since      int64 // the last change
	few, many  int64 // idle ns with fewer than half the CPUs busy, and with half or more
}

// noteCPU records that r is now idle or busy (Config.IdleTicks only).
func (s *Sim) noteCPU(r *rq, idle bool) {
	if s.cfg.IdleTicks == 0 {
		return
	}
	b := &s.busySplit
	if b.state == nil {
		b.state = make([]int8, s.ncpu)
	}
	s.addIdleTime()
	st := int8(2)
	if idle {
		st = 1
	}
	switch b.state[r.cpu] {
	case 1:
		b.idle--
	case 2:
		b.busy--
	}
	b.state[r.cpu] = st
	if idle {
		b.idle++
	} else {
		b.busy++
	}
}

// addIdleTime adds the idle time since the last change to its side.
func (s *Sim) addIdleTime() {
	b := &s.busySplit
	d := (s.now - b.since) * int64(b.idle)
	b.since = s.now
	if d <= 0 {
		return
	}
	if s.fewBusy() {
		b.few += d
	} else {
		b.many += d
	}
	s.stats.IdlePeriodsFewBusy = float64(b.few) / float64(s.tickNS)
	s.stats.IdlePeriodsManyBusy = float64(b.many) / float64(s.tickNS)
}

// fewBusy: fewer than half the CPUs are busy.
func (s *Sim) fewBusy() bool { return 2*s.busySplit.busy < s.ncpu }

// noteIdleTick counts r's idle tick (nothing queued) by the CPUs busy
// then, if r's idle time counts (it went idle by a switch).
func (s *Sim) noteIdleTick(r *rq) {
	if s.busySplit.state == nil || s.busySplit.state[r.cpu] != 1 {
		return
	}
	if s.fewBusy() {
		s.stats.IdleTicksFewBusy++
	} else {
		s.stats.IdleTicksManyBusy++
	}
}
