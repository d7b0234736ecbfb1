package whatif

import (
	"path/filepath"

	"github.com/schedreplay/replay/timeline"
)

// The recording window.
//
// A trace that perf recorded around a command (`perf sched record --
// CMD`) ends when perf stops: perf waits for its command, is woken by its
// exit, disables the events and exits; nothing after that is in the
// trace. The replay runs every activation to its end, and work not tied
// to the command can drift past that point: a timer-driven kernel thread
// (rcu_preempt, a kworker) is replayed a recorded sleep after its block,
// so each of its waits that is longer than the trace's pushes the rest of
// its chain later, and the replayed machine then idles for tens of
// milliseconds after the workload (FIDELITY.md round 27: 60 ms with 8
// CPUs idle after guest-D's hackbench). Measured over that stretch, idle
// time and makespan compare a longer window than the trace's.
//
// So the replay's output ends where the trace's did, at the same causal
// point: once the recorder's last activation has run and every task the
// trace saw forked (the command's process tree, which perf waits for) has
// finished its last activation, or been cut at its exit deadline. The
// recorder is the perf task whose last activation was the last to start
// among those running at the trace's end (perf woken by its command's
// exit). Events after that point are not written (Stats.EventsAfterRecording
// counts them, Stats.RecordingEndNS says where the window ends); the
// simulation itself runs on to its end, so its invariants hold and its
// statistics count everything. Config.FullWindow keeps the whole replay,
// and so does a trace without such a recorder (its command line names
// another program, or no perf task runs at its end). A trace that names
// no command line (perf script's text has no header, nor has a workload
// file saved from it) is taken for perf's when a perf task runs at its
// end: without the window a 15 s hackbench recording's text replayed
// 1.0 s past the trace's end, idle (FIDELITY.md round 120).
//
// The recorder's own wakeups from interrupt context (perf record woken as
// its ring buffers pass their watermark) are replayed at their recorded
// times whatever Config.Arrivals says (scheduleArrival): the recorded
// workload paced them, not a sleep of perf's, and replayed a recorded
// sleep after each block they drift by every wait perf has in the replay,
// which delays the activation the command's exit starts and so the
// window's end (0.87 s of idle machine after a 15 s hackbench recording,
// FIDELITY.md round 119).

// recordingPlan returns the recorder task (-1: none) and, per task, whether
// the window waits for its last activation.
func recordingPlan(w *Workload) (recorder int32, wait []bool) {
	recorder = -1
	if len(w.Cmdline) > 0 && filepath.Base(w.Cmdline[0]) != "perf" {
		return -1, nil
	}
	best := int64(0)
	for i := range w.Tasks {
		t := &w.Tasks[i]
		if len(t.Activations) == 0 || t.Comm != "perf" {
			continue
		}
		a := &t.Activations[len(t.Activations)-1]
		if a.End == EndTraceEnd && a.CPU >= 0 && (recorder < 0 || a.ReleaseNS > best) {
			recorder, best = int32(i), a.ReleaseNS
		}
	}
	if recorder < 0 {
		return -1, nil
	}
	wait = make([]bool, len(w.Tasks))
	wait[recorder] = true
	for i := range w.Tasks {
		if w.Tasks[i].Forked && len(w.Tasks[i].Activations) > 0 {
			wait[i] = true
		}
	}
	return recorder, wait
}

// initRecording sets up the window (Run).
func (s *Sim) initRecording() {
	rec, wait := recordingPlan(s.w)
	s.recorder = rec
	if s.cfg.FullWindow || rec < 0 {
		return
	}
	s.recWait = wait
	for _, b := range wait {
		if b {
			s.recLeft++
		}
	}
}

// recordingDone: t has finished its last activation (or was cut at its
// exit deadline); the window ends when the last task it waits for has.
func (s *Sim) recordingDone(t *simTask) {
	if s.recWait == nil || !s.recWait[t.id] {
		return
	}
	s.recWait[t.id] = false
	s.recLeft--
	if s.recLeft == 0 {
		s.stats.RecordingEndNS = s.now
		s.endRunOns()
	}
}

// afterRecording reports whether e falls after the window's end (and
// counts it).
func (s *Sim) afterRecording(e *timeline.Event) bool {
	if s.recWait == nil || s.recLeft > 0 || e.Time <= s.stats.RecordingEndNS {
		return false
	}
	s.stats.EventsAfterRecording++
	return true
}
