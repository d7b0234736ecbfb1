package whatif

import "slices"

// The wake overhead of an activation.
//
// A trace's activation begins with a wakeup and ends with a block, and its
// demand includes what both cost the task: the return from schedule() and
// from the call that slept, and at the end the call that finds nothing to
// do and schedules away. When the replay's wakeup for a task's next
// activation comes before the task has blocked (its waker ran ahead), the
// kernel's try_to_wake_up finds the task still runnable (ttwu_runnable)
// and only marks it running: the task goes on into its next piece of work
// without blocking, being woken or switched in. Replaying that activation's
// whole demand charges it for a block and a wakeup it never went through.
//
// Measured on the kernel (fixtures/kernels/syscalls: guest-P's hackbench
// recorded with its read system calls), a receiver's activation costs
// 0.11 ms plus 0.02 ms per message it reads, and three in four read one
// message (`go run ./scripts/dataflow -cost` on that recording): the
// block-and-wake cycle is most of a short activation (FIDELITY.md round
// 54). A sched trace shows no system calls, so the
// replay can take each task's median activation demand as its wake
// overhead (for a task with at least minWakeOverheadActs of them): with
// Config.SkipWakeOverhead (--set wake_overhead=skip, the default) a
// continued activation starts that far into its demand
// (Stats.WakeOverheadSkips), never past its own demand, its first wakeup
// or its first host stall, which stay where they were in its work. Off
// by default from round 54 (it met more goals on the recordings it was
// found on, and no more on the kernel's repeat and holdout recordings),
// on since round 122, when the recordings made after it (6.12, the
// same-day pairs) and LISA's text met more goals with it (FIDELITY.md).

// minWakeOverheadActs: a task needs this many activations started by a
// wakeup for their median to stand for its wake overhead; with fewer, one
// activation's own work would be taken for it, and none is skipped.
const minWakeOverheadActs = 8

// wakeOverheadOf is a task's wake overhead: the median demand of its
// activations started by a wakeup (0 with fewer than
// minWakeOverheadActs).
func wakeOverheadOf(t *Task) int64 {
	var d []int64
	for i := range t.Activations {
		if a := &t.Activations[i]; a.Cause == CauseWake {
			d = append(d, a.DemandNS)
		}
	}
	if len(d) < minWakeOverheadActs {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)-1)/2]
}

// skipWakeOverhead starts t's current activation, which it continued into
// without blocking, past its wake overhead.
func (s *Sim) skipWakeOverhead(t *simTask) {
	if !s.cfg.SkipWakeOverhead || t.wakeOverheadNS <= 0 {
		return
	}
	a := &t.w.Activations[t.act]
	f := min(t.wakeOverheadNS, a.DemandNS)
	if a.EdgeLo < a.EdgeHi {
		f = min(f, s.w.Edges[a.EdgeLo].OffsetNS)
	}
	if a.StallLo < a.StallHi {
		f = min(f, s.w.HostStalls[a.StallLo].OffsetNS)
	}
	if f <= 0 {
		return
	}
	t.progress = f
	t.skippedNS += f
	s.stats.WakeOverheadSkips++
	s.stats.WakeOverheadNS += f
}
