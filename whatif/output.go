package whatif

import "github.com/schedreplay/replay/timeline"

// Sink receives the simulated schedule as timeline events, in time order.
// The event is reused between calls.
type Sink interface {
	Emit(e *timeline.Event) error
}

type discard struct{}

func (discard) Emit(*timeline.Event) error { return nil }

// Tee sends each event to several sinks.
type Tee []Sink

func (t Tee) Emit(e *timeline.Event) error {
	for _, s := range t {
		if err := s.Emit(e); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sim) emit(e *timeline.Event) {
	if s.err != nil || s.afterRecording(e) {
		return
	}
	if err := s.out.Emit(e); err != nil {
		s.err = err
	}
}

// newEvent starts a record written on cpu in cur's context (nil: the idle
// task, or no task the model knows: common_pid 0): common_pid and, where
// the trace gave cur's thread group, common_tgid, as perf's sample pid
// and tid (the idle task's 0/0).
func (s *Sim) newEvent(kind timeline.Kind, cpu int, cur *simTask) *timeline.Event {
	e := &s.ev
	e.Reset()
	e.Time = s.now
	e.Kind = kind
	e.Name = kind.String()
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.CommonPID, int64(tidOf(cur)))
	switch {
	case cur == nil:
		e.SetInt(timeline.CommonTGID, 0)
	case cur.w.PID >= 0:
		e.SetInt(timeline.CommonTGID, int64(cur.w.PID))
	}
	return e
}

func tidOf(t *simTask) int32 {
	if t == nil {
		return 0
	}
	return t.w.TID
}

func (s *Sim) commOf(t *simTask, cpu int) string {
	if t == nil {
		if cpu < 0 || cpu >= s.ncpu {
			return "swapper/" + itoa(cpu)
		}
		if s.swapperComm == nil {
			s.swapperComm = make([]string, s.ncpu)
			for c := range s.swapperComm {
				s.swapperComm[c] = "swapper/" + itoa(c)
			}
		}
		return s.swapperComm[cpu]
	}
	return t.w.Comm
}

func prioOf(t *simTask) int64 {
	if t == nil {
		return 120
	}
	return int64(t.prio)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// emitSwitch writes sched_switch (nil = the idle task; a CPU left to its
// stopper by preemptForStopper switches from the stopper instead, in state
// S).
func (s *Sim) emitSwitch(r *rq, prev, next *simTask, prevState string) {
	if prev == nil && r.stopperShown != nil {
		prev, prevState = r.stopperShown, "S"
	}
	r.stopperShown = nil
	if prev == nil {
		prevState = "R"
	}
	if prevState == "" {
		prevState = "R"
	}
	if prev != nil {
		s.emitStatRuntime(r, prev, 0)
	}
	e := s.newEvent(timeline.SchedSwitch, r.cpu, prev)
	e.SetStr(timeline.CommonComm, s.commOf(prev, r.cpu))
	e.SetStr(timeline.PrevComm, s.commOf(prev, r.cpu))
	e.SetInt(timeline.PrevPID, int64(tidOf(prev)))
	e.SetInt(timeline.PrevPrio, prioOf(prev))
	e.SetStr(timeline.PrevState, prevState)
	e.SetStr(timeline.NextComm, s.commOf(next, r.cpu))
	e.SetInt(timeline.NextPID, int64(tidOf(next)))
	e.SetInt(timeline.NextPrio, prioOf(next))
	s.emit(e)
}

// emitStatRuntime writes the sched_stat_runtime of the time t ran since
// its last one (or its switch-in), as the kernel's update_curr does;
// flags is its common_flags (the tick's hard-IRQ context), 0 for none.
func (s *Sim) emitStatRuntime(r *rq, t *simTask, flags int64) {
	s.emitStatRuntimeOn(r, t, flags, -1, nil)
}

// emitStatRuntimeOn is emitStatRuntime written on CPU on, as the task
// running there (as, or, when nil, the task running on `on` in the
// replay): an update of r's task that another CPU runs (a remote
// wakeup's or fork's enqueue, Sim.enqOn; a balance, Sim.lb). on < 0: on
// r's CPU, as t.
func (s *Sim) emitStatRuntimeOn(r *rq, t *simTask, flags int64, on int, as *simTask) {
	if t.rt && !s.knobs.StatRuntimeAllClasses && (!s.knobs.StatRuntimeRT || isStopper(t.w.Comm)) {
		return
	}
	d := t.sumExec - t.statExec
	if d <= 0 {
		return
	}
	t.statExec = t.sumExec
	cpu, cur := r.cpu, t
	if on >= 0 && on != r.cpu {
		cpu, cur = on, as
		if as == nil {
			cur = s.cpus[on].curr
		}
	}
	e := s.newEvent(timeline.SchedStatRuntime, cpu, cur)
	if flags != 0 {
		e.SetInt(timeline.CommonFlags, flags)
	}
	e.SetStr(timeline.CommonComm, s.commOf(cur, cpu))
	e.SetStr(timeline.Comm, t.w.Comm)
	e.SetInt(timeline.PID, int64(t.w.TID))
	e.SetInt(timeline.Runtime, d)
	switch {
	case s.knobs.StatRuntimeAllClasses:
	case t.rt:
		e.SetInt(timeline.Vruntime, 0)
	default:
		e.SetInt(timeline.Vruntime, t.vruntime)
	}
	s.emit(e)
}

// emitWaking writes sched_waking on the waker's CPU. An arrival's is
// written in its interrupt's context (Activation.IRQ: the hard-IRQ or
// softirq flag) as the task that interrupt found running there
// (common_pid, 0 on an idle CPU), as the kernel's is; one whose context
// the trace did not give, with common_pid 0 and no flags. Its target_cpu
// is the wakee's CPU when the wakeup starts, as the kernel's tracepoint
// records task_cpu(p) before select_task_rq: the placement is the
// sched_migrate_task that follows (or that CPU).
func (s *Sim) emitWaking(t, waker *simTask, cpu, target int) {
	cur, flags := waker, int64(0)
	if waker == nil && cpu >= 0 && cpu < s.ncpu {
		if ctx := s.arrivalIRQ(t); ctx != IRQNone {
			cur, flags = s.cpus[cpu].curr, int64(ctx)
		}
	}
	e := s.newEvent(timeline.SchedWaking, cpu, cur)
	if flags != 0 {
		e.SetInt(timeline.CommonFlags, flags)
	}
	e.SetStr(timeline.CommonComm, s.commOf(cur, cpu))
	e.SetStr(timeline.Comm, t.w.Comm)
	e.SetInt(timeline.PID, int64(t.w.TID))
	e.SetInt(timeline.Prio, int64(t.prio))
	e.SetInt(timeline.TargetCPU, int64(target))
	// An arrival the trace has no waking for: Replay's measure leaves it
	// out (Activation.Untraced); the output has it.
	a := currentArrival(t)
	skip := s.meas != nil && waker == nil && a != nil && a.Untraced
	if skip {
		s.meas.skipWaking = true
	}
	s.emit(e)
	if skip {
		s.meas.skipWaking = false
	}
}

// lbContext is where a balance that moves tasks runs: the CPU and its
// current task, which its sched_migrate_task records carry as the
// kernel's do (cpu -1: none noted, the destination's CPU as idle).
type lbContext struct {
	cpu int
	cur *simTask
}

// balancingOn notes that a balance runs on cpu with cur as its current
// task, until endBalancing restores the note it returns. The kernel's
// set_task_cpu traces sched_migrate_task on the CPU that moves the task:
// the balancing CPU (periodic and newly-idle balancing, the latter inside
// the leaving task's schedule()), the nohz idle balancer for the idle
// CPUs it balances, the stopper on the source CPU (active balance, an
// affinity change); a wakeup's on the waker's CPU.
func (s *Sim) balancingOn(cpu int, cur *simTask) (was lbContext) {
	was, s.lb = s.lb, lbContext{cpu, cur}
	return was
}

func (s *Sim) endBalancing(was lbContext) { s.lb = was }

// emitMigrate writes sched_migrate_task on cpu, cur running there.
func (s *Sim) emitMigrate(t *simTask, from, to, cpu int, cur *simTask) {
	e := s.newEvent(timeline.SchedMigrateTask, cpu, cur)
	e.SetStr(timeline.Comm, t.w.Comm)
	e.SetInt(timeline.PID, int64(t.w.TID))
	e.SetInt(timeline.Prio, int64(t.prio))
	e.SetInt(timeline.OrigCPU, int64(from))
	e.SetInt(timeline.DestCPU, int64(to))
	s.emit(e)
}

// emitFork writes sched_process_fork.
func (s *Sim) emitFork(r *rq, parent, child *simTask) {
	e := s.newEvent(timeline.SchedProcessFork, r.cpu, parent)
	e.SetStr(timeline.CommonComm, parent.w.Comm)
	e.SetStr(timeline.ParentComm, parent.w.Comm)
	e.SetInt(timeline.ParentPID, int64(parent.w.TID))
	e.SetStr(timeline.ChildComm, child.w.Comm)
	e.SetInt(timeline.ChildPID, int64(child.w.TID))
	s.emit(e)
}

// emitWakeupNew writes sched_wakeup_new, after the child's enqueue (and
// its update_curr's sched_stat_runtime) as wake_up_new_task traces it.
func (s *Sim) emitWakeupNew(r *rq, parent, child *simTask, target int) {
	e := s.newEvent(timeline.SchedWakeupNew, r.cpu, parent)
	e.SetStr(timeline.CommonComm, parent.w.Comm)
	e.SetStr(timeline.Comm, child.w.Comm)
	e.SetInt(timeline.PID, int64(child.w.TID))
	e.SetInt(timeline.Prio, int64(child.prio))
	e.SetInt(timeline.TargetCPU, int64(target))
	s.emit(e)
}

// emitExit writes sched_process_exit.
func (s *Sim) emitExit(r *rq, t *simTask) {
	e := s.newEvent(timeline.SchedProcessExit, r.cpu, t)
	e.SetStr(timeline.CommonComm, t.w.Comm)
	e.SetStr(timeline.Comm, t.w.Comm)
	e.SetInt(timeline.PID, int64(t.w.TID))
	e.SetInt(timeline.Prio, int64(t.prio))
	s.emit(e)
}

// TimelineSink writes the schedule to a timeline file.
type TimelineSink struct{ W *timeline.Writer }

func (t TimelineSink) Emit(e *timeline.Event) error { return t.W.Write(e) }
