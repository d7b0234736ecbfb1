package whatif

import "github.com/schedreplay/replay/timeline"

// The switch's charge to the next task. __schedule() reads the run queue's
// clock once, near its start (or not at all after a wakeup preemption,
// whose enqueue read it: rq_clock_skip_update), and the leaving task's
// last update_curr charges it up to that reading. The rest of the switch
// (the dequeue, the pick, the context switch itself, and after a wakeup
// preemption the wait for the reschedule) is run time the incoming task is
// charged for at its first update_curr, since its exec_start is that same
// reading. A trace dates the run by its sched_switch, so the gap from the
// leaving task's last sched_stat_runtime to its switch-out is run time
// the kernel charged to the next task: on the 6.12 guests 16 µs (median)
// after a preemption and 41 µs after a block, some 150 µs at times, more
// before a sleep an interrupt ends (a timer's) than before one another
// task ends (FIDELITY.md round 63). A replay would charge its tasks up to the
// switch; with these pools it moves a gap drawn from the trace's own to
// the task switched in (Config.SwitchCharge, on with the machine's noise).
// Only vruntime and sum_exec_runtime move: the work done, and when each
// task runs, are as before; under EEVDF that is enough to decide a
// wakeup's preemption, whose rule is the sign of a lag.

// switchChargeTally collects those gaps from a trace: per CPU the task
// switched in and when, per task the time of its last sched_stat_runtime
// (wherever written: a remote enqueue's update_curr is written on the
// waker's CPU), and at each switch-out of a task updated since its
// switch-in the gap to the switch, by whether it was preempted or
// blocked, and a block's by what its next waking is: from interrupt
// context (hard or soft IRQ, NMI, or no task: the replay's arrivals) or
// by a task; a block no waking follows is left out. Gaps of a quarter
// tick or more stay out of the pools: something long fell inside them (a
// host stall, a run on with the reschedule pending), no typical switch's
// charge to draw at another; a block's is kept at its own activation
// (longcharge.go).
type switchChargeTally struct {
	tickNS   int64
	pid      []int32 // per CPU: the task switched in, 0: none known
	since    []int64 // per CPU: when
	last     map[int32]int64
	pending  map[int32]int64 // a blocked task's gap, until its next waking
	block    []int64
	blockIRQ []int64
	preempt  []int64
	// gapPrev, gapTime, gapNS: the last switch-out measured (its task,
	// time and gap, whatever its length), for the extractor's long
	// charges (longcharge.go).
	gapPrev int32
	gapTime int64
	gapNS   int64
}

// gapAt is the gap measured at prev's switch-out at time now, -1 if none
// was (the task not updated since its switch-in, or what the CPU ran
// unknown).
func (t *switchChargeTally) gapAt(prev int32, now int64) int64 {
	if t.gapPrev != prev || t.gapTime != now {
		return -1
	}
	return t.gapNS
}

func newSwitchChargeTally(tickNS int64) *switchChargeTally {
	return &switchChargeTally{tickNS: tickNS, last: map[int32]int64{}, pending: map[int32]int64{}}
}

func (t *switchChargeTally) grow(c int32) {
	for int(c) >= len(t.pid) {
		t.pid, t.since = append(t.pid, 0), append(t.since, 0)
	}
}

// lost forgets what every CPU runs: the records lost may have held a
// switch or an update.
func (t *switchChargeTally) lost() {
	for i := range t.pid {
		t.pid[i] = 0
	}
	t.gapPrev = 0
	clear(t.last)
	clear(t.pending)
}

// observe takes every event of a CPU, in time order.
func (t *switchChargeTally) observe(e *timeline.Event, c int32) {
	if c < 0 {
		return
	}
	t.grow(c)
	switch e.Kind {
	case timeline.SchedStatRuntime:
		if p := e.Int32(timeline.PID); p > 0 {
			t.last[p] = e.Time
		}
	case timeline.SchedWaking, timeline.SchedWakeup:
		p := e.Int32(timeline.PID)
		if d, ok := t.pending[p]; ok {
			delete(t.pending, p)
			if irqContext(e) != 0 || e.Int32(timeline.CommonPID) == 0 {
				t.blockIRQ = append(t.blockIRQ, d)
			} else {
				t.block = append(t.block, d)
			}
		}
	case timeline.SchedSwitch:
		prev := e.Int32(timeline.PrevPID)
		if prev > 0 && prev == t.pid[c] {
			if at, ok := t.last[prev]; ok && at >= t.since[c] {
				t.gapPrev, t.gapTime, t.gapNS = prev, e.Time, e.Time-at
				if d := e.Time - at; d >= 0 && d < t.tickNS/4 {
					switch e.Str(timeline.PrevState) {
					case "R", "R+":
						t.preempt = append(t.preempt, d)
					default:
						if !exiting(e.Str(timeline.PrevState)) {
							t.pending[prev] = d
						}
					}
				}
			}
		}
		t.pid[c], t.since[c] = e.Int32(timeline.NextPID), e.Time
	}
}

// exiting reports a prev_state of a task leaving for good (dead or
// zombie): extraction ends its work there, and its switch-out's charge
// goes to no pool (it matters to no one).
func exiting(state string) bool {
	return state != "" && (state[0] == 'X' || state[0] == 'Z')
}

// takeSwitchCharge is the switch's start, before its update_curr (a
// block's dequeue, a preemption's put_prev): a gap drawn from the
// trace's pool for how prev leaves (preempted; blocked until an arrival,
// its next activation's cause; blocked until a task's wakeup) comes out
// of what prev has run since its last kernel update (the kernel charged
// it up to the clock reading that far back) and is kept on r for the
// task switched in (switchTo). long, when positive, is the trace's own
// gap at this block, a long one the pools leave out (longcharge.go): it
// takes the draw's place (the draw is made all the same, so that every
// other switch draws as it would without it).
func (s *Sim) takeSwitchCharge(r *rq, prev *simTask, block bool, long int64) {
	r.switchCarry = 0
	if !s.cfg.SwitchCharge || !s.cfg.IdleWake || prev.rt || r.curr != prev {
		return
	}
	pool := s.w.SwitchChargePreemptNS
	if block {
		pool = s.w.SwitchChargeBlockNS
		if next := prev.act + 1; int(next) < len(prev.w.Activations) && prev.w.Activations[next].Cause == CauseArrival {
			pool = s.w.SwitchChargeBlockIRQNS
		}
	}
	var g int64
	if len(pool) > 0 {
		g = pool[splitMix64(&s.chargeRng)%uint64(len(pool))]
	}
	if long > 0 {
		g = long
	}
	if g <= 0 {
		return
	}
	s.chargeCurr(r, false)
	g = min(g, prev.vrunPending)
	if g <= 0 {
		return
	}
	if long > 0 {
		s.stats.LongSwitchCharges++
		s.stats.LongSwitchChargeNS += g
	}
	prev.vrunPending -= g
	prev.sumExec -= g
	r.switchCarry = g
}

// longChargeOf is the long switch charge of t's current activation's
// block (Workload.LongSwitchCharges), 0 when it has none or the replay
// draws every charge from the pools (Config.SwitchChargePoolsOnly).
func (s *Sim) longChargeOf(t *simTask) int64 {
	if s.longCharge == nil {
		return 0
	}
	return s.longCharge[actKey{t.id, t.act}]
}

// SwitchChargeSummary is what --validate reports of the switch charge's
// pools: how many gaps the trace showed and each pool's median.
type SwitchChargeSummary struct {
	Switches      int   `json:"switches"`
	PreemptP50NS  int64 `json:"preempt_p50_ns"`
	BlockP50NS    int64 `json:"block_p50_ns"`
	BlockIRQP50NS int64 `json:"block_irq_p50_ns"`
	// LongBlocks, LongNS: the blocks whose gap was a quarter tick or more
	// (Workload.LongSwitchCharges), and those gaps summed.
	LongBlocks int   `json:"long_blocks,omitempty"`
	LongNS     int64 `json:"long_ns,omitempty"`
}

// SwitchChargeSummary summarises the workload's switch-charge pools (nil
// without any).
func (w *Workload) SwitchChargeSummary() *SwitchChargeSummary {
	med := func(xs []int64) int64 {
		if len(xs) == 0 {
			return 0
		}
		return xs[len(xs)/2] // the pools are sorted
	}
	n := len(w.SwitchChargePreemptNS) + len(w.SwitchChargeBlockNS) + len(w.SwitchChargeBlockIRQNS)
	long, longNS := w.LongSwitchChargeTotal()
	if n == 0 && long == 0 {
		return nil
	}
	return &SwitchChargeSummary{Switches: n, PreemptP50NS: med(w.SwitchChargePreemptNS),
		BlockP50NS: med(w.SwitchChargeBlockNS), BlockIRQP50NS: med(w.SwitchChargeBlockIRQNS),
		LongBlocks: long, LongNS: longNS}
}
