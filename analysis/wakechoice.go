package analysis

import "github.com/schedreplay/replay/timeline"

// What the wakeup path chose: where select_task_rq sent each sleeping
// wakee, against the CPU it last ran on. It is what a wake_affine or
// select_idle_sibling difference changes first (whatif's fidelity report
// sets a replay's beside the trace's). A trace shows the choice
// directly: sched_waking names the wakee's CPU before the choice
// (task_cpu, its target_cpu field), and a move is the sched_migrate_task
// try_to_wake_up writes next on the waking CPU. Each wakeup of a sleeping
// task is booked by where its previous CPU lay:
//   - on another CPU than the waking one: kept there, pulled to the waking
//     CPU (wake_affine's choice, or select_idle_sibling finding it idle),
//     or sent to a third;
//   - on the waking CPU itself: stayed, or moved away (to an idle CPU).
//
// A task still running or queued when woken (ttwu_runnable: no choice
// made) and a task whose state the stream has not shown yet (since lost
// records) are left out, as are forks (sched_wakeup_new: the fork path)
// and a stream without sched_waking (sched_wakeup is written after the
// choice, on the target CPU when an IPI queued it there).
//
// FIDELITY.md round 88: on guest-P's hackbench the kernel kept on their
// own CPU 325 of the 365 wakees whose previous CPU was not the waker's
// (89 %), the replays (seeds 0–9) 66 % of about 150, pulling about as
// many as the kernel's 40: the replay's wakees sit on their waker's CPU
// far more often to begin with.

// WakeChoices counts the wakeup path's choices (wakechoice.go).
type WakeChoices struct {
	// Kept, Pulled, Elsewhere: wakees whose previous CPU was another than
	// the waking CPU, left there, moved to the waking CPU, moved to a
	// third CPU.
	Kept      int64 `json:"kept"`
	Pulled    int64 `json:"pulled"`
	Elsewhere int64 `json:"elsewhere"`
	// Stayed, Moved: wakees whose previous CPU was the waking CPU.
	Stayed int64 `json:"stayed"`
	Moved  int64 `json:"moved"`
}

// choiceTally follows the tasks' states and books each choice.
type choiceTally struct {
	// state per pid: what the stream last showed of the task.
	state map[int32]uint8
	// open: the wakee whose sched_waking was a CPU's last event (its
	// move, if any, is that CPU's next event), -1 none; prev its CPU
	// before the choice.
	open, prev []int32
	waking     bool
	p          WakeChoices
}

const (
	selUnknown uint8 = iota
	selAsleep
	selOnRQ // running or queued
)

func newChoiceTally() *choiceTally {
	return &choiceTally{state: map[int32]uint8{}}
}

func (s *choiceTally) grow(c int32) {
	for int(c) >= len(s.open) {
		s.open = append(s.open, -1)
		s.prev = append(s.prev, -1)
	}
}

// observe feeds one event, in time order.
func (s *choiceTally) observe(e *timeline.Event) {
	if e.Kind == timeline.Lost {
		// The records lost may hold an open choice's move: it is not
		// booked, and no task's state is known any more.
		for i := range s.open {
			s.open[i] = -1
		}
		clear(s.state)
		return
	}
	if !e.IsSet(timeline.CPU) || timeline.CheckCPUs(e) != nil {
		return
	}
	c := e.Int32(timeline.CPU)
	s.grow(c)
	if e.Kind == timeline.SchedMigrateTask && s.open[c] >= 0 && e.Int32(timeline.PID) == s.open[c] && e.IsSet(timeline.DestCPU) {
		s.settle(c, e.Int32(timeline.DestCPU))
	} else {
		s.settle(c, -1)
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		if prev := e.Int32(timeline.PrevPID); prev != 0 {
			if st := e.Str(timeline.PrevState); len(st) > 0 && st[0] == 'R' {
				s.state[prev] = selOnRQ
			} else {
				s.state[prev] = selAsleep
			}
		}
		if next := e.Int32(timeline.NextPID); next != 0 {
			s.state[next] = selOnRQ
		}
	case timeline.SchedWakeupNew:
		if p := e.Int32(timeline.PID); p != 0 {
			s.state[p] = selOnRQ
		}
	case timeline.SchedWakeup:
		if p := e.Int32(timeline.PID); p != 0 {
			s.state[p] = selOnRQ
		}
	case timeline.SchedWaking:
		s.waking = true
		p := e.Int32(timeline.PID)
		if p == 0 {
			return
		}
		st := s.state[p]
		s.state[p] = selOnRQ
		if st != selAsleep || !e.IsSet(timeline.TargetCPU) {
			return
		}
		s.open[c], s.prev[c] = p, e.Int32(timeline.TargetCPU)
	}
}

// settle books CPU c's open choice: dest the CPU its move names, -1 no
// move (the wakee stays on its previous CPU).
func (s *choiceTally) settle(c, dest int32) {
	p := s.open[c]
	if p < 0 {
		return
	}
	prev := s.prev[c]
	s.open[c] = -1
	if dest < 0 {
		dest = prev
	}
	switch {
	case prev == c && dest == c:
		s.p.Stayed++
	case prev == c:
		s.p.Moved++
	case dest == prev:
		s.p.Kept++
	case dest == c:
		s.p.Pulled++
	default:
		s.p.Elsewhere++
	}
}

// result returns the counts, nil for a stream without sched_waking.
func (s *choiceTally) result() *WakeChoices {
	if !s.waking {
		return nil
	}
	for i := range s.open {
		s.settle(int32(i), -1)
	}
	p := s.p
	return &p
}
