package whatif

import "fmt"

// IRQCurrent is an arrival whose waking the trace shows in interrupt
// context while a task ran on that CPU: the wakee's arrival (Task, Act)
// and the task interrupted (Curr, the waking's common_pid).
//
// select_task_rq_fair's record_wakee() counts every wakeup on `current`,
// which in an interrupt is the task it interrupted: those wakee_flips are
// the interrupted task's, and a fork hands them to the child. hackbench's
// parent is interrupted by RCU's softirq wakeups of rcu_preempt while it
// forks, and its 80 children inherit the flips that make the kernel's
// wake_wide() keep them on their CPUs. The replay fires such a wakeup on
// the CPU its wakee slept on, at its own time, where another task (or
// none) runs: credited there, the parent forked with none and the
// replay pulled 5–10 times as many receivers onto their senders' CPUs as
// the kernel did (FIDELITY.md round 83). Which task the interrupt
// interrupted is the trace's to say.
type IRQCurrent struct {
	Task, Act int32
	Curr      int32
}

// irqCurrent records that the interrupt-context waking starting t's
// activation act interrupted the task with TID curr. The idle task (0)
// is left out: no task inherits its flips, and the replay evaluates
// wake_wide() for a task's wakeup only; so is a task the trace has not
// shown.
func (x *extractor) irqCurrent(t *extTask, act int, curr int32) {
	if curr <= 0 || curr == x.w.Tasks[t.idx].TID {
		return
	}
	c := x.byTID[curr]
	if c == nil {
		return
	}
	x.w.IRQCurrent = append(x.w.IRQCurrent, IRQCurrent{Task: int32(t.idx), Act: int32(act), Curr: int32(c.idx)})
}

// irqCurrentKeys checks IRQCurrent's task references (each arrival listed
// once, the interrupted task another) and indexes the rows by arrival, for
// Validate and the streaming writer to check each against its activation
// (checkIRQCurrentAct) and find any whose activation does not exist
// (irqCurrentMissing).
func (w *Workload) irqCurrentKeys() (map[actKey]int, error) {
	n := int32(len(w.Tasks))
	return actRows("irq_current", w.IRQCurrent, n, irqCurrentKey, func(i int, q *IRQCurrent) error {
		if q.Curr < 0 || q.Curr >= n || q.Curr == q.Task {
			return fmt.Errorf("workload irq_current %d: interrupted task %d out of range or the wakee", i, q.Curr)
		}
		return nil
	})
}

func irqCurrentKey(q *IRQCurrent) actKey { return actKey{q.Task, q.Act} }

// checkIRQCurrentAct checks the activation row i of IRQCurrent names: an
// arrival woken in interrupt context.
func checkIRQCurrentAct(i int, q IRQCurrent, a *Activation) error {
	if a.Cause != CauseArrival || a.IRQ == IRQNone {
		return fmt.Errorf("workload irq_current %d: task %d activation %d is a %s in context %s, not an interrupt's arrival", i, q.Task, q.Act, a.Cause, a.IRQ)
	}
	return nil
}

// irqCurrentMissing reports the first IRQCurrent row left in keys: one
// whose activation the workload does not have.
func (w *Workload) irqCurrentMissing(keys map[actKey]int) error {
	return actRowsMissing("irq_current", w.IRQCurrent, irqCurrentKey, keys)
}

// actRows checks a side table of the workload whose rows each name an
// activation (irq_current, long_switch_charge): the task in range, the
// activation not negative, check's own test of the row, each activation
// once; and indexes the rows by activation.
func actRows[T any](table string, rows []T, ntasks int32, key func(*T) actKey, check func(i int, r *T) error) (map[actKey]int, error) {
	keys := make(map[actKey]int, len(rows))
	for i := range rows {
		k := key(&rows[i])
		if k.task < 0 || k.task >= ntasks || k.act < 0 {
			return nil, fmt.Errorf("workload %s %d: task %d activation %d out of range", table, i, k.task, k.act)
		}
		if err := check(i, &rows[i]); err != nil {
			return nil, err
		}
		if _, dup := keys[k]; dup {
			return nil, fmt.Errorf("workload %s %d: task %d activation %d listed twice", table, i, k.task, k.act)
		}
		keys[k] = i
	}
	return keys, nil
}

// actRowsMissing reports the first of a side table's rows left in keys
// (actRows' index, less the rows found): one whose activation the
// workload does not have.
func actRowsMissing[T any](table string, rows []T, key func(*T) actKey, keys map[actKey]int) error {
	if len(keys) == 0 {
		return nil
	}
	first := len(rows)
	for _, i := range keys {
		first = min(first, i)
	}
	k := key(&rows[first])
	return fmt.Errorf("workload %s %d: task %d activation %d out of range", table, first, k.task, k.act)
}

// irqFlipOwner is whose wakee_flips an interrupt's wakeup of t counts
// on (record_wakee's current), firing on CPU src: with Config.IRQFlip
// (the default) the task the trace shows it interrupted, or nobody when
// the trace shows an interrupt of the idle task; else, and for an
// arrival the trace does not place in interrupt context, the task the
// replay runs on src.
func (s *Sim) irqFlipOwner(t *simTask, src int) *simTask {
	if s.cfg.IRQFlip && int(t.act) < len(t.w.Activations) && t.w.Activations[t.act].IRQ != IRQNone {
		if c, ok := s.irqCurr[actKey{t.id, t.act}]; ok {
			return s.tasks[c]
		}
		return nil
	}
	return s.cpus[src].curr
}
