package whatif

import (
	"cmp"
	"slices"
)

// Timer slack. A task's nanosleep, poll or futex timeout is an hrtimer
// with a soft and a hard expiry: the hard one the task's timer_slack_ns
// (50 µs by default; 0 for a real-time task, whose sleeps are exact)
// after the soft one. The CPU's clock event is programmed for the earliest
// hard expiry, and hrtimer_interrupt then expires, in order, every timer
// whose soft expiry has passed. So a sleeper's wakeup comes early, in the
// same interrupt, when another timer on its CPU fires within its slack
// before its own hard expiry: stress-ng's switch stressors, rate-limited
// by nanosleep, wake in the interrupt of the cyclic stressor's real-time
// timer on the guests' 6.1 kernel (fixtures/kernels/crosskernel/v6.1:
// 17–68 % of their timer wakeups come within 0.1 ms after one of the
// cyclic task's, against 4–19 % in replays without this rule), and then
// wait for that real-time task to run first (FIDELITY.md round 139).
//
// The trace shows when each timer fired, not its expiries. The replay
// takes an hrtimer arrival's recorded sleep, measured to its firing, as
// the sleep to its hard expiry (a timer that fired alone fired there) and
// lets another hrtimer arrival's interrupt on the same CPU, or that CPU's
// tick (tick_sched_timer is an hrtimer too), fire it up to
// Config.TimerSlackNS earlier. An hrtimer arrival is one whose waking the
// trace shows in hard-interrupt context on the CPU its task slept on: the
// timer is armed on the CPU the task blocked on (get_nohz_timer_target
// keeps it there: that CPU is busy, running the task, when it arms it).

// DefaultTimerSlackNS is the kernel's default timer_slack_ns (init's,
// which every task inherits unless it sets its own: PR_SET_TIMERSLACK).
const DefaultTimerSlackNS = 50000

// isHrtimer: the activation, an arrival, was woken by an hrtimer on the
// CPU its task slept on, as far as the trace says.
func isHrtimer(a *Activation) bool {
	return a.Cause == CauseArrival && a.IRQ == IRQHard && a.IRQCPUPlus1 == 0 && !a.TickSoftIRQ && !a.Untraced
}

// armTimer books t's arrival k, a relative one (the recorded sleep after
// the replay's block: scheduleArrival), due at at on the CPU t blocked
// on, as a timer another interrupt there may fire early, when it is an
// hrtimer of a task outside the real-time class.
func (s *Sim) armTimer(t *simTask, k int32, at int64) {
	if s.cfg.TimerSlackNS <= 0 || t.rt || t.stop {
		return
	}
	if !isHrtimer(&t.w.Activations[k]) {
		return
	}
	t.timerK, t.timerDue, t.timerCPU = k, at, t.cpu
	r := s.cpus[t.cpu]
	r.timers = append(r.timers, t.id)
}

// disarmTimer forgets t's booked timer.
func (s *Sim) disarmTimer(t *simTask) {
	r := s.cpus[t.timerCPU]
	if i := slices.Index(r.timers, t.id); i >= 0 {
		r.timers = slices.Delete(r.timers, i, i+1)
	}
	t.timerK = -1
}

// fireArrival is the evArrival of t's activation k: void when a timer
// interrupt fired it already; an hrtimer arrival then expires the timers
// on its CPU whose slack reaches back to now.
func (s *Sim) fireArrival(t *simTask, k int32) {
	if s.coalesced != nil && s.coalesced[s.actBase[t.id]+k] {
		return
	}
	cpu := int(t.cpu)
	if t.timerK == k {
		// Where the timer was armed, should the task have moved since
		// (a delayed dequeue's migration).
		cpu = int(t.timerCPU)
		s.disarmTimer(t)
	}
	lead := s.cfg.TimerSlackNS > 0 && isHrtimer(&t.w.Activations[k])
	s.arrive(t, k)
	if lead && len(s.cpus[cpu].timers) > 0 {
		s.expireTimers(cpu)
	}
}

// arrive wakes t for its arrival k, counted once (the invariant check).
func (s *Sim) arrive(t *simTask, k int32) {
	s.arrivals[s.actBase[t.id]+k]++
	s.stats.Arrivals++
	s.wake(t, k, nil, -1)
}

// expireTimers is hrtimer_interrupt's run on cpu at now for the timers
// booked there: each due within the slack fires now, in the order of
// their hard expiries (then of task, for a total order).
func (s *Sim) expireTimers(cpu int) {
	r := s.cpus[cpu]
	due := s.timersDue[:0]
	for _, id := range r.timers {
		if u := s.tasks[id]; u.timerDue > s.now && u.timerDue-s.now <= s.cfg.TimerSlackNS {
			due = append(due, u)
		}
	}
	s.timersDue = nil // a nested run (none is known) takes its own
	slices.SortFunc(due, func(a, b *simTask) int {
		return cmp.Or(cmp.Compare(a.timerDue, b.timerDue), cmp.Compare(a.id, b.id))
	})
	for _, u := range due {
		k := u.timerK
		s.disarmTimer(u)
		if s.coalesced == nil {
			s.coalesced = make([]bool, len(s.arrivals))
		}
		s.coalesced[s.actBase[u.id]+k] = true
		s.stats.TimersCoalesced++
		s.arrive(u, k)
	}
	s.timersDue = due[:0]
}
