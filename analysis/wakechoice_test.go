package analysis

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// `replay latency` reports the wakeup path's choices of a real trace: the
// counts of an independent reader of perf's own `perf script -F
// comm,tid,cpu,time,event,trace` output (scripts/wakechoice/check.py),
// in the table and the JSON. (whatif's TestWakeChoicesByHand works every
// case by hand through the same tally.)
func TestWakeChoicesOnARealTrace(t *testing.T) {
	for _, c := range []struct {
		path string
		want WakeChoices
		line string
	}{
		{"../fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data", WakeChoices{Kept: 325, Pulled: 40, Stayed: 456, Moved: 6},
			"Wakeup placement (sleeping wakees, against the CPU each last ran on): last on another CPU than the waking one 365: kept there 325, pulled to the waking CPU 40, elsewhere 0; last on the waking CPU 462: stayed 456, moved 6"},
		{"../fixtures/kernels/repeats/guest-N-2s1c1t-2numa/r6/hackbench.perf.data.gz", WakeChoices{Kept: 671, Pulled: 14, Stayed: 679}, ""},
	} {
		rep := runPerfFixture(t, c.path)
		if rep.WakeChoices == nil || *rep.WakeChoices != c.want {
			t.Errorf("%s: wake choices %+v, want %+v", c.path, rep.WakeChoices, c.want)
			continue
		}
		var text, js strings.Builder
		if err := rep.WriteTable(&text, ByTask); err != nil {
			t.Fatal(err)
		}
		if c.line != "" && !strings.Contains(text.String(), c.line+"\n") {
			t.Errorf("%s: table without %q", c.path, c.line)
		}
		if err := rep.WriteJSON(&js, ByTask); err != nil {
			t.Fatal(err)
		}
		var got struct {
			WakeChoices WakeChoices `json:"wake_choices"`
		}
		if err := json.Unmarshal([]byte(js.String()), &got); err != nil || got.WakeChoices != c.want {
			t.Errorf("%s: JSON wake_choices %+v (%v), want %+v", c.path, got.WakeChoices, err, c.want)
		}
	}
}

// A trace without sched_waking cannot show the choice (sched_wakeup is
// written after it): no counts, no table line, no JSON key.
func TestWakeChoicesNeedWaking(t *testing.T) {
	evs := []timeline.Event{
		sw(100, 0, 0, "R", 10), sw(100, 1, 0, "R", 11), sw(200, 1, 11, "S", 0),
		ev(300, timeline.SchedWakeup, 0, func(e *timeline.Event) {
			e.SetInt(timeline.PID, 11)
			e.SetInt(timeline.TargetCPU, 1)
		}),
	}
	rep, err := Run(&timeline.SliceReader{Events: evs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, js strings.Builder
	if err := rep.WriteTable(&text, ByTask); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js, ByTask); err != nil {
		t.Fatal(err)
	}
	if rep.WakeChoices != nil || strings.Contains(text.String(), "Wakeup placement") || strings.Contains(js.String(), "wake_choices") {
		t.Errorf("choices %+v shown without sched_waking", rep.WakeChoices)
	}
}

// BenchmarkWakeChoices measures the choice tally's cost per event on the
// analysis benchmark's synthetic stream (16 CPUs, 64 tasks).
func BenchmarkWakeChoices(b *testing.B) {
	s := newSynthStream(b.N, 16, 64)
	c := newChoiceTally()
	b.ReportAllocs()
	b.ResetTimer()
	for s.Next() {
		c.observe(s.Event())
	}
}
