package whatif

import (
	"strings"
	"testing"
)

// TestNewSpreadByHand: three recordings whose medians are 100, 110 and
// 130 µs. Scored as Compare scores a replay (|other − observed| /
// observed ≤ 0.15), the ordered pairs give 0.10 (100 against 110) and
// 0.0909 (110 against 100), met; 0.30, 0.1818, 0.2308 and 0.1538,
// missed: 2 of 6. Idle 10 ms of 100 ms of CPU time in each, so every
// pair meets the idle goal and the range is one share, 1/11.
func TestNewSpreadByHand(t *testing.T) {
	rec := func(p50 int64) *Metrics {
		return &Metrics{WakeupCount: 100, WakeupP50NS: p50, WakeupP95NS: 1e6, WakeupP99NS: 2e6, IdleNS: 10e6, CPUTimeNS: 100e6}
	}
	obs := []*Metrics{rec(100e3), rec(110e3), rec(130e3)}
	for _, tc := range []struct {
		sim    int64
		within bool
	}{{120e3, true}, {100e3, true}, {140e3, false}, {99e3, false}} {
		sp := NewSpread(obs, rec(tc.sim))
		if sp.Recordings != 3 || sp.Pairs != 6 || len(sp.Goals) != 4 {
			t.Fatalf("%d recordings, %d pairs, %d goals", sp.Recordings, sp.Pairs, len(sp.Goals))
		}
		g := sp.Goals[0]
		if g.Metric != "wakeup_p50_ns" || g.Low != 100e3 || g.High != 130e3 || g.Simulated != float64(tc.sim) || g.Within != tc.within || g.KernelMet != 2 {
			t.Errorf("sim %d: p50 goal %+v; want 100000..130000, within %v, 2 of 6 pairs", tc.sim, g, tc.within)
		}
		for _, g := range sp.Goals[1:] {
			if g.KernelMet != 6 || !g.Within {
				t.Errorf("sim %d: %s %+v; want every pair met, the replay within", tc.sim, g.Metric, g)
			}
		}
		if idle := sp.Goals[3]; idle.Low != 1.0/11 || idle.High != 1.0/11 {
			t.Errorf("idle share range %v..%v, want 1/11", idle.Low, idle.High)
		}
	}
}

// TestSpreadBandByHand: three recordings of 20 wakeups, 1..20, 2..21 and
// 5..24 ms; the first's p50 is 10 ms, so its band starts at 8.5 ms, and
// 40, 35 and 20 % of the recordings' wakeups lie below it. A replay of
// 0.5..10 ms in 0.5 ms steps has 16 of 20 below (80 %, outside); one of
// 3..22 ms has 6 (30 %, within). The p95 band starts at 16.15 ms (0.85 ×
// 19): 80, 75, 60 %; the replays 100 and 70 %. The p99 band at 15 ms
// (0.75 × 20): 70, 65, 50 %; the replays 100 and 60 %. The idle goal has
// no band.
func TestSpreadBandByHand(t *testing.T) {
	obs := []*Metrics{metricsOf(msRange(1, 20)), metricsOf(msRange(2, 21)), metricsOf(msRange(5, 24))}
	var half []int64
	for v := int64(1); v <= 20; v++ {
		half = append(half, v*500_000)
	}
	for _, tc := range []struct {
		sim  *Metrics
		want [3]SpreadBand
	}{
		{metricsOf(half), [3]SpreadBand{{20, 40, 80, false}, {60, 80, 100, false}, {50, 70, 100, false}}},
		{metricsOf(msRange(3, 22)), [3]SpreadBand{{20, 40, 30, true}, {60, 80, 70, true}, {50, 70, 60, true}}},
	} {
		sp := NewSpread(obs, tc.sim)
		for i, w := range tc.want {
			if g := sp.Goals[i]; g.Band == nil || *g.Band != w {
				t.Errorf("%s: band %+v, want %+v", g.Metric, g.Band, w)
			}
		}
		if sp.Goals[3].Band != nil {
			t.Errorf("idle goal has a band: %+v", sp.Goals[3].Band)
		}
	}
	// Without latencies (a recording measured elsewhere) there is no band.
	if sp := NewSpread([]*Metrics{{WakeupP50NS: 1}, {WakeupP50NS: 2}}, metricsOf(msRange(1, 20))); sp.Goals[0].Band != nil {
		t.Errorf("band without the recordings' latencies: %+v", sp.Goals[0].Band)
	}
}

// A recording with no wakeups scored as the observed side compares no
// latency goal: of three recordings, one without wakeups, the two ordered
// pairs that observe it are not compared (neither met nor missed); the
// two that score it as the replay miss (its percentiles 0 against the
// other's), and the two between the others meet (equal percentiles). The
// idle goal is compared, and met, in all six.
func TestSpreadNotComparedPairs(t *testing.T) {
	rec := func(n int64) *Metrics {
		return &Metrics{WakeupCount: n, WakeupP50NS: 100e3, WakeupP95NS: 1e6, WakeupP99NS: 2e6, IdleNS: 10e6, CPUTimeNS: 100e6}
	}
	none := rec(0)
	none.WakeupP50NS, none.WakeupP95NS, none.WakeupP99NS = 0, 0, 0
	sp := NewSpread([]*Metrics{rec(50), rec(60), none}, rec(55))
	for _, g := range sp.Goals {
		met, nc := 2, 2
		if g.Metric == "idle_ns/total_cpu_time" {
			met, nc = 6, 0
		}
		if g.KernelMet != met || g.KernelNotCompared != nc {
			t.Errorf("%s: kernel met %d, not compared %d; want %d and %d", g.Metric, g.KernelMet, g.KernelNotCompared, met, nc)
		}
	}
	var b strings.Builder
	sp.writeTable(&b)
	if !strings.Contains(b.String(), "the kernel meets the goal in 2 of 6 pairs (2 not compared: no wakeups on the observed side)") {
		t.Errorf("table:\n%s", b.String())
	}
}
