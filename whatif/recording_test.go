package whatif

import (
	"slices"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// The recording window, by hand on 2 CPUs without machine noise (t0 is
// the trace start), for a trace recorded by `perf sched record -- cmd`:
//   - perf runs 1 ms on CPU 0 and sleeps; its last activation (0.5 ms,
//     still running at the trace's end) is started by cmd's exit;
//   - cmd (forked in the trace) runs 5 ms on CPU 1 and exits, waking perf:
//     perf runs t0+5 to t0+5.5 ms on CPU 0;
//   - late, also forked, arrives at t0+6 ms and runs 1 ms (on CPU 0, where
//     it slept, idle then): the window waits for it, to t0+7 ms;
//   - bg, a timer-driven daemon, arrives at t0+2 ms (CPU 0, idle since
//     t0+1), runs 0.1 ms, and again a recorded 10 ms sleep later: t0+12.1
//     to t0+12.2 ms, after the window, so its four events there (waking,
//     switch in, runtime, switch out) are not written.
//
// With the window the measured makespan is 7 ms and 4 events are counted
// after it; with FullWindow, 12.2 ms and none. With another program on
// the command line there is no recorder: the whole replay, 12.2 ms. A
// trace with no command line (perf script's text, which has no header)
// takes the perf task running at its end for the recorder: 7 ms. Without late, and
// with exit deadlines and cmd's recorded exit at 3 ms, cmd is cut there,
// its exit wakes perf at once (the final activation's edges fire at the
// cut), perf runs to 3.5 ms and the window ends there: bg's second run is
// after it again (4 events).
func TestRecordingWindow(t *testing.T) {
	build := func(withLate bool, cmdline ...string) *Workload {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		b.w.Cmdline = cmdline
		perf := b.task("perf", 120, 0, true, CauseStart, ms, ms/2)
		b.w.Tasks[perf].Activations[1].End = EndTraceEnd
		cmd := b.task("cmd", 120, 1, true, CauseStart, 5*ms)
		b.w.Tasks[cmd].Forked = true
		b.w.Tasks[cmd].Activations[0].End = EndExit
		b.edge(cmd, 0, 5*ms, perf, 1)
		b.w.Tasks[cmd].ExitNS = t0 + 3*ms
		if withLate {
			late := b.task("late", 120, 0, false, CauseArrival, ms)
			b.w.Tasks[late].Forked = true
			b.w.Tasks[late].Activations[0].ReleaseNS = t0 + 6*ms
			b.w.Tasks[late].Activations[0].End = EndExit
		}
		bg := b.task("bg", 120, 0, false, CauseArrival, ms/10, ms/10)
		b.w.Tasks[bg].Activations[0].ReleaseNS = t0 + 2*ms
		b.w.Tasks[bg].Activations[1].Cause = CauseArrival
		b.w.Tasks[bg].Activations[1].SleepNS = 10 * ms
		b.w.Tasks[bg].Activations[1].ReleaseNS = t0 + 12*ms
		return b.done(t)
	}
	perfCmd := []string{"perf", "sched", "record", "--", "cmd"}
	for _, c := range []struct {
		name     string
		cmdline  []string
		late     bool
		deadline bool
		full     bool
		makespan int64
		recEnd   int64
		after    int64
	}{
		{"window", perfCmd, true, false, false, 7 * ms, t0 + 7*ms, 4},
		{"full window", perfCmd, true, false, true, 12*ms + ms/5, 0, 0},
		{"no recorder", []string{"cmd"}, true, false, false, 12*ms + ms/5, 0, 0},
		{"no command line", nil, true, false, false, 7 * ms, t0 + 7*ms, 4},
		{"exit deadline", perfCmd, false, true, false, 3*ms + ms/2, t0 + 3*ms + ms/2, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.FullWindow = c.full
			cfg.ExitDeadlines = c.deadline
			res, err := Replay(build(c.late, c.cmdline...), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Metrics.MakespanNS != c.makespan {
				t.Errorf("makespan %d ns, want %d", res.Metrics.MakespanNS, c.makespan)
			}
			if res.Stats.RecordingEndNS != c.recEnd || res.Stats.EventsAfterRecording != c.after {
				t.Errorf("recording end %d, %d events after; want %d, %d", res.Stats.RecordingEndNS, res.Stats.EventsAfterRecording, c.recEnd, c.after)
			}
			// The simulation itself runs to its end either way (its last
			// engine event may be a later tick).
			if res.Stats.EndNS < t0+12*ms+ms/5 {
				t.Errorf("replay ended at t0%+d ns, before bg's last run ends (t0+12.2 ms)", res.Stats.EndNS-t0)
			}
		})
	}
}

// The recorder's own wakeups are replayed at their recorded times, by
// hand on 2 CPUs without machine noise: perf (on CPU 0) runs 1.5 ms from
// t0, an RT task there (watchdog/0) takes CPU 0 from t0+1 to t0+4 ms, so
// perf's run ends at t0+4.5 ms where the trace's ended at t0+1.5 ms; its
// next activation, an interrupt's wakeup recorded 1 ms after that block
// (t0+2.5 ms), comes at once (t0+4.5 ms), not a recorded sleep after the
// replay's block (t0+5.5 ms): perf record is woken as its ring buffers
// fill, which the recorded workload paces, not a sleep of perf's own, and
// a chain of such sleeps drifts by every wait perf has in the replay
// (0.87 s over a 15 s hackbench recording, all of it idle machine at the
// window's end, BENCHMARKS.md session 76). cmd (CPU 1) exits at t0+8 ms,
// waking perf's last activation. Without perf on the command line there
// is no recorder: the relative sleep.
func TestRecorderArrivalsAtRecordedTimes(t *testing.T) {
	for _, c := range []struct {
		name    string
		cmdline []string
		want    int64 // perf's second activation switched in
	}{
		{"recorder", []string{"perf", "sched", "record", "--", "cmd"}, t0 + 4*ms + ms/2},
		{"no recorder", []string{"cmd"}, t0 + 5*ms + ms/2},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=2,threads=1")
			b.w.Cmdline = c.cmdline
			perf := b.task("perf", 120, 0, true, CauseStart, ms+ms/2, ms/2, ms/2)
			b.w.Tasks[perf].Allowed = []int{0}
			a := &b.w.Tasks[perf].Activations[1]
			a.Cause, a.SleepNS, a.ReleaseNS = CauseArrival, ms, t0+2*ms+ms/2
			b.w.Tasks[perf].Activations[2].End = EndTraceEnd
			rt := b.task("watchdog/0", 49, 0, false, CauseArrival, 3*ms)
			b.w.Tasks[rt].Activations[0].ReleaseNS = t0 + ms
			cmd := b.task("cmd", 120, 1, true, CauseStart, 8*ms)
			b.w.Tasks[cmd].Allowed = []int{1}
			b.w.Tasks[cmd].Forked = true
			b.w.Tasks[cmd].Activations[0].End = EndExit
			b.edge(cmd, 0, 8*ms, perf, 2)
			w := b.done(t)
			sw := collectKinds(timeline.SchedSwitch)
			if _, err := Replay(w, testConfig(), Tee{newChecker(t), sw}); err != nil {
				t.Fatal(err)
			}
			var ins []int64
			for _, e := range sw.ev {
				if e.Int32(timeline.NextPID) == w.Tasks[perf].TID {
					ins = append(ins, e.Time)
				}
			}
			want := []int64{t0, t0 + 4*ms, c.want, t0 + 8*ms}
			if !slices.Equal(ins, want) {
				t.Errorf("perf switched in at %v, want %v", ins, want)
			}
		})
	}
}

// A perf script text has no header, so no command line: the perf task
// running at its end is its recorder. fixtures/text/perf_script_ns_fields.txt
// (perf_sched_pipe.data's `perf script`, `perf sched record -- sh -c ...`):
// the replay's window closes where perf 13085 is switched in by sh's
// exit (its last activation, which it ran on to the trace's end), and
// only the events of the replay's timer-driven tasks after it are left
// out. Before, the whole replay was measured: 53 ms of idle machine past
// where the replay's command had ended (the trace: none).
func TestRecordingWindowOfPerfScriptText(t *testing.T) {
	r, err := ingest.Open("../fixtures/text/perf_script_ns_fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	topo, err := model.ParseSpec("sockets=1,cores=2,threads=1")
	if err != nil {
		t.Fatal(err)
	}
	w, err := ExtractWith(r, ExtractOptions{Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Cmdline) != 0 {
		t.Fatalf("command line %q: a perf script text names none", w.Cmdline)
	}
	rec, _ := recordingPlan(w)
	if rec < 0 || w.Tasks[rec].TID != 13085 {
		t.Fatalf("recorder %d, want perf 13085", rec)
	}
	sw := collectKinds(timeline.SchedSwitch)
	res, err := Replay(w, testConfig(), Tee{newChecker(t), sw})
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, e := range sw.ev {
		if e.Int32(timeline.NextPID) == 13085 && e.Time <= res.Stats.RecordingEndNS {
			last = e.Time
		}
	}
	if res.Stats.RecordingEndNS == 0 || res.Stats.EventsAfterRecording == 0 || last == 0 {
		t.Errorf("recording end %d, %d events after, perf's last switch-in %d: want a window closing after perf's last run", res.Stats.RecordingEndNS, res.Stats.EventsAfterRecording, last)
	}
	if res.Metrics.IdleNS != 0 {
		t.Errorf("idle %d ns in the window, want none (the trace's)", res.Metrics.IdleNS)
	}
}
