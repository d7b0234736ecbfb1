package analysis

import (
	"cmp"
	"slices"

	"github.com/schedreplay/replay/timeline"
)

// The longest wakeups, with what surrounded each (Options.Worst): a
// percentile says how long the tail is, these rows say what it is made
// of. For each: who woke the task and from where, what ran on its CPU
// when it woke, what it finally preempted or followed, and how long a
// CPU near it sat idle meanwhile (the regression this tool exists for:
// an idle CPU in the same LLC that never pulled the waiting task).

// WorstWakeup is one wakeup among the longest: timehist's scheduling delay
// (the task's first wakeup since its last switch-out, to its switch-in)
// and its context.
type WorstWakeup struct {
	TID  int32  `json:"tid"` // the woken task
	PID  int32  `json:"pid"` // its thread group, -1 unknown
	Comm string `json:"comm"`
	// LatencyNS is SwitchInNS less WokenNS: the wakeup event's time to
	// the switch-in's.
	LatencyNS  int64 `json:"latency_ns"`
	WokenNS    int64 `json:"woken_ns"`
	SwitchInNS int64 `json:"switch_in_ns"`
	// Event is the wakeup's event name (sched_waking, sched_wakeup or
	// sched_wakeup_new).
	Event string `json:"event"`
	// The waker: the task running where the wakeup event was written (TID
	// 0: the idle task, an interrupt on an idle CPU), on WakerCPU, and the
	// context from the event's common_flags: "task", "softirq" or
	// "hardirq" ("" when the trace has no flags).
	WakerTID  int32  `json:"waker_tid"`
	WakerComm string `json:"waker_comm"`
	WakerCPU  int32  `json:"waker_cpu"`
	Context   string `json:"context"`
	// TargetCPU is the event's target_cpu (sched_waking writes the task's
	// previous CPU, the choice comes after it; sched_wakeup the chosen
	// one), -1 when absent. RunningAtWake is the task running on
	// TargetCPU at the wakeup (0 idle, -1 unknown), RunningComm its name.
	TargetCPU     int32  `json:"target_cpu"`
	RunningAtWake int32  `json:"running_at_wake_tid"`
	RunningComm   string `json:"running_at_wake_comm"`
	// CPU is where the task was switched in; Prev the task switched out
	// there (0: the CPU was idle) and PrevState its state.
	CPU       int32  `json:"cpu"`
	PrevTID   int32  `json:"prev_tid"`
	PrevComm  string `json:"prev_comm"`
	PrevState string `json:"prev_state"`
	// IdleNearby is, per domain level of CPU (Report.Levels; one level
	// "machine" without topology), the longest stretch another CPU of
	// that level's span spent idle within the wait, and which CPU; a CPU
	// that flipped between idle and busy more often than the history
	// kept (idleHistory stretches) may have had a longer one (Partial).
	IdleNearby []IdleStretch `json:"idle_nearby"`
}

// IdleStretch is the longest idle stretch of a CPU near a waiting task.
type IdleStretch struct {
	Level   string `json:"level"`
	CPU     int32  `json:"cpu"` // -1: no CPU of the span idled during the wait
	NS      int64  `json:"idle_ns"`
	Partial bool   `json:"partial"`
}

// idleHistory is how many completed idle stretches each CPU keeps for
// IdleNearby: the memory is per CPU, not per event.
const idleHistory = 32

// idleRing holds a CPU's latest completed idle stretches and the current
// one.
type idleRing struct {
	start, end [idleHistory]int64
	n, next    int   // stretches held, slot of the next
	since      int64 // the current stretch's start, -1 busy or unknown
	dropped    bool  // a stretch was overwritten
}

func (r *idleRing) add(from, to int64) {
	if r.n == idleHistory {
		r.dropped = true
	} else {
		r.n++
	}
	r.start[r.next], r.end[r.next] = from, to
	r.next = (r.next + 1) % idleHistory
}

// longest is the CPU's longest idle time within [from, to], and whether
// older stretches it no longer holds could have fallen in that window.
func (r *idleRing) longest(from, to int64) (int64, bool) {
	best := int64(0)
	oldest := to
	for i := 0; i < r.n; i++ {
		s, e := r.start[i], r.end[i]
		oldest = min(oldest, s)
		best = max(best, min(e, to)-max(s, from))
	}
	if r.since >= 0 {
		best = max(best, to-max(r.since, from))
	}
	return best, r.dropped && oldest > from
}

// wakeCtx is what a task's counted wakeup (the one timehist measures
// from) saw, kept until its switch-in.
type wakeCtx struct {
	event         string
	wakerTID      int32
	wakerComm     string
	wakerCPU      int32
	context       string
	targetCPU     int32
	runningAtWake int32
	runningComm   string
}

// noteWake records the context of the wakeup e that made t ready.
func (a *Analyzer) noteWake(t *task, e *timeline.Event) {
	w := wakeCtx{event: e.Name, wakerTID: -1, wakerCPU: -1, targetCPU: -1, runningAtWake: -1}
	if e.IsSet(timeline.CommonPID) {
		w.wakerTID = e.Int32(timeline.CommonPID)
		w.wakerComm = a.nameOf(w.wakerTID)
		if e.IsSet(timeline.CommonComm) && w.wakerTID != 0 {
			w.wakerComm = e.Str(timeline.CommonComm)
		}
	}
	if e.IsSet(timeline.CPU) {
		w.wakerCPU = e.Int32(timeline.CPU)
	}
	if e.IsSet(timeline.CommonFlags) {
		switch f := e.Int(timeline.CommonFlags); {
		case f&0x08 != 0: // TRACE_FLAG_HARDIRQ
			w.context = "hardirq"
		case f&0x10 != 0: // TRACE_FLAG_SOFTIRQ
			w.context = "softirq"
		default:
			w.context = "task"
		}
	}
	if e.IsSet(timeline.TargetCPU) {
		w.targetCPU = e.Int32(timeline.TargetCPU)
		if c := int(w.targetCPU); c >= 0 && c < len(a.cpus) && a.cpus[c].seen {
			w.runningAtWake = a.cpus[c].cur
			w.runningComm = a.nameOf(w.runningAtWake)
		}
	}
	t.wk = w
}

// nameOf is a thread's name as the report prints it ("<idle>" for 0).
func (a *Analyzer) nameOf(tid int32) string {
	if tid == 0 {
		return "<idle>"
	}
	if t, ok := a.tasks[tid]; ok {
		return t.name()
	}
	return ""
}

// offerWorst keeps t's wakeup, measured at its switch-in on cpu (lat ns),
// if it is among the Options.Worst longest so far. A wakeup measured again
// (a later switch-in replacing the first, wakeAt) replaces its row.
func (a *Analyzer) offerWorst(t *task, cpu int, prev *task, prevState string, now, lat int64, remeasured bool) {
	n := a.opts.Worst
	ready := now - lat
	if remeasured {
		// Drop the earlier measurement of this same wakeup.
		a.worst = slices.DeleteFunc(a.worst, func(w WorstWakeup) bool { return w.TID == t.tid && w.WokenNS == ready })
	}
	if len(a.worst) >= n && !worseThan(lat, ready, &a.worst[len(a.worst)-1]) {
		return
	}
	w := WorstWakeup{TID: t.tid, PID: t.tgid, Comm: t.name(), WokenNS: ready, SwitchInNS: now, LatencyNS: lat,
		Event: t.wk.event, WakerTID: t.wk.wakerTID, WakerComm: t.wk.wakerComm, WakerCPU: t.wk.wakerCPU,
		Context: t.wk.context, TargetCPU: t.wk.targetCPU, RunningAtWake: t.wk.runningAtWake,
		RunningComm: t.wk.runningComm, CPU: int32(cpu), PrevState: prevState}
	if prev != nil {
		w.PrevTID, w.PrevComm = prev.tid, prev.name()
	} else {
		w.PrevComm = "<idle>"
	}
	w.IdleNearby = a.idleNearby(cpu, ready, now)
	// Rows stay sorted worst first; the new one goes before the first
	// row it is worse than.
	i, _ := slices.BinarySearchFunc(a.worst, w, func(x, y WorstWakeup) int {
		if worseThan(x.LatencyNS, x.WokenNS, &y) {
			return -1
		}
		return 1
	})
	a.worst = slices.Insert(a.worst, i, w)
	if len(a.worst) > n {
		a.worst = a.worst[:n]
	}
}

// worseThan orders the rows: longer first, then earlier.
func worseThan(lat, woken int64, w *WorstWakeup) bool {
	if c := cmp.Compare(lat, w.LatencyNS); c != 0 {
		return c > 0
	}
	return woken < w.WokenNS
}

// idleNearby is, per level of cpu's domains, the longest idle stretch of
// another CPU of that span within [from, to].
func (a *Analyzer) idleNearby(cpu int, from, to int64) []IdleStretch {
	var out []IdleStretch
	scan := func(level string, span []int) {
		s := IdleStretch{Level: level, CPU: -1}
		for _, c := range span {
			if c == cpu || c < 0 || c >= len(a.idle) {
				continue
			}
			d, partial := a.idle[c].longest(from, to)
			s.Partial = s.Partial || partial
			if d > s.NS {
				s.CPU, s.NS = int32(c), d
			}
		}
		out = append(out, s)
	}
	if a.opts.Levels == nil || a.nLev == 0 {
		all := make([]int, len(a.idle))
		for i := range all {
			all[i] = i
		}
		scan("machine", all)
		return out
	}
	names := a.opts.Levels.Levels()
	for l := 0; l < a.nLev && l < len(names); l++ {
		span := a.opts.Levels.Span(cpu, l)
		if span == nil {
			continue
		}
		scan(names[l], span)
	}
	return out
}

// trackIdle follows CPU c's idle stretches at a switch at now. A task
// switched out of a CPU the trace showed idle had a switch-in the trace
// lost: the stretch ends where the task's own runtime dates it (lostFrom,
// lost), else it is dropped rather than claimed.
func (a *Analyzer) trackIdle(c int, firstSwitch, prevIdle, nextIdle bool, now int64, lost bool, lostFrom int64) {
	for len(a.idle) <= c {
		a.idle = append(a.idle, idleRing{since: -1})
	}
	r := &a.idle[c]
	if firstSwitch && prevIdle {
		r.since = a.start // idle since the trace began
	}
	if r.since >= 0 {
		end := now
		if !prevIdle {
			end = r.since
			if lost {
				end = min(max(lostFrom, r.since), now)
			}
		}
		if end > r.since {
			r.add(r.since, end)
		}
		r.since = -1
	}
	if nextIdle {
		r.since = now
	}
}
