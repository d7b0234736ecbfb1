package whatif

import (
	"cmp"
	"fmt"
	"slices"
)

// Long switch charges: the run the kernel charged to the task switched in
// after a block, where the trace shows it a quarter tick or more.
//
// A block's __schedule reads the run queue's clock once; after a wakeup
// preemption it does not read it at all (check_preempt_curr's
// rq_clock_skip_update), so the leaving task was last charged at the
// enqueue's update_curr, and everything it ran from there to its switch
// is the next task's first charge (switchcharge.go). Most such gaps are
// tens of microseconds, and the replay draws them from the trace's pools.
// A gap of a quarter tick or more is that same charge where something
// long fell inside it: a host stall of the vCPU between the waking and
// the block (eight vCPUs on two host cores are stalled 64–85 % of their
// busy time), or a run on with the reschedule pending. The kernel
// charged that too to the task switched in, and it decides who preempts
// whom for a long while: on guest-D's stress-ng (r2), a 16 ms stall
// between a switch task's waking of its partner and its block went to
// the partner, whose vruntime then stood 21 ms ahead of the task's, so
// the task preempted it at each of the partner's next 16 wakings of it.
// Drawn into the pools such a gap would land at arbitrary switches; the
// replay charges it at the activation end the trace shows it at
// (LongSwitchCharge), where the replay blocks the task too. FIDELITY.md
// round 96.

// LongSwitchCharge is an activation whose block the kernel charged the
// task switched in after it NS of the leaving task's run: the trace's gap
// from the task's last sched_stat_runtime to its switch-out, a quarter
// tick or more.
type LongSwitchCharge struct {
	Task, Act int32
	NS        int64
}

// longCharge records, at a block of t's current activation, the gap the
// switch-charge tally measured at that switch-out (now): kept when it is
// a quarter tick or more, dropped otherwise (an activation woken as it
// blocked goes on, and only its last block ends it).
func (x *extractor) longCharge(t *extTask, prev int32, now int64) {
	k := actKey{int32(t.idx), int32(len(x.w.Tasks[t.idx].Activations) - 1)}
	if g := x.swCharge.gapAt(prev, now); g >= x.swCharge.tickNS/4 {
		if x.longCharges == nil {
			x.longCharges = map[actKey]int64{}
		}
		x.longCharges[k] = g
		return
	}
	delete(x.longCharges, k)
}

// longChargesResult lists the recorded long charges in (task, activation)
// order (deterministic, whatever the map's), of the activations that
// still end in a block (one woken as it blocked may have gone on to exit,
// or to the trace's end).
func (x *extractor) longChargesResult() []LongSwitchCharge {
	var out []LongSwitchCharge
	for k, ns := range x.longCharges {
		if x.w.Tasks[k.task].Activations[k.act].End == EndSleep {
			out = append(out, LongSwitchCharge{Task: k.task, Act: k.act, NS: ns})
		}
	}
	slices.SortFunc(out, func(a, b LongSwitchCharge) int {
		return cmp.Or(cmp.Compare(a.Task, b.Task), cmp.Compare(a.Act, b.Act))
	})
	return out
}

// longChargeKeys checks LongSwitchCharges' references (each activation
// listed once, its charge positive and at most MaxSpanNS) and indexes the
// rows by activation, for Validate and the streaming writer to check each
// against its activation (checkLongChargeAct) and find any whose
// activation does not exist (longChargeMissing).
func (w *Workload) longChargeKeys() (map[actKey]int, error) {
	return actRows("long_switch_charge", w.LongSwitchCharges, int32(len(w.Tasks)), longChargeKey, func(i int, c *LongSwitchCharge) error {
		if c.NS <= 0 || c.NS > MaxSpanNS {
			return fmt.Errorf("workload long_switch_charge %d: charge %d ns (positive, at most a week)", i, c.NS)
		}
		return nil
	})
}

func longChargeKey(c *LongSwitchCharge) actKey { return actKey{c.Task, c.Act} }

// checkLongChargeAct checks the activation row i of LongSwitchCharges
// names: one that ends in a block.
func checkLongChargeAct(i int, c LongSwitchCharge, a *Activation) error {
	if a.End != EndSleep {
		return fmt.Errorf("workload long_switch_charge %d: task %d activation %d ends in %s, not a block", i, c.Task, c.Act, a.End)
	}
	return nil
}

// longChargeMissing reports the first LongSwitchCharges row left in
// keys: one whose activation the workload does not have.
func (w *Workload) longChargeMissing(keys map[actKey]int) error {
	return actRowsMissing("long_switch_charge", w.LongSwitchCharges, longChargeKey, keys)
}

// LongSwitchChargeTotal is the number of long switch charges and their
// total length.
func (w *Workload) LongSwitchChargeTotal() (n int, ns int64) {
	for _, c := range w.LongSwitchCharges {
		ns += c.NS
	}
	return len(w.LongSwitchCharges), ns
}
