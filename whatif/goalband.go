package whatif

import (
	"fmt"
	"io"
	"math"
	"sort"
)

// GoalBand places a latency goal's tolerance band in both wakeup-latency
// distributions. The band is [(1−tol)·x, (1+tol)·x] around the observed
// percentile x; a nearest-rank percentile of n latencies (rank ⌈q·n⌉)
// lies in it exactly when fewer than rank latencies are below the band and
// at least rank are up to its top. The shares below and up to the band
// therefore say how many wakeups a replay has on the wrong side of the
// goal, and the observed pair how narrow the goal is in the trace itself:
// a median between a fast and a slow mode has few wakeups within ±15 %
// of it, so a few per cent of wakeups moving between the modes decides
// the goal (FIDELITY.md round 53).
type GoalBand struct {
	Metric string `json:"metric"`
	// Permille is the percentile (500 for p50).
	Permille int `json:"permille"`
	// LowNS, HighNS are the band's edges.
	LowNS  int64 `json:"low_ns"`
	HighNS int64 `json:"high_ns"`
	// Shares in per cent of each side's wakeups: below LowNS, and at or
	// below HighNS.
	ObservedBelow  float64 `json:"observed_below_low"`
	ObservedUpTo   float64 `json:"observed_up_to_high"`
	SimulatedBelow float64 `json:"simulated_below_low"`
	SimulatedUpTo  float64 `json:"simulated_up_to_high"`
}

// latencyGoal is one of the goals on a wakeup-latency
// percentile: its metric, percentile (permille) and tolerance (per cent).
type latencyGoal struct {
	metric   string
	permille int
	tolPct   int64
}

// latencyGoals are the latency goals. Compare scores them,
// goalBands and spreadBand place their bands.
var latencyGoals = []latencyGoal{{"wakeup_p50_ns", 500, 15}, {"wakeup_p95_ns", 950, 15}, {"wakeup_p99_ns", 990, 25}}

// lookupLatencyGoal is the latency goal on metric, if it is one.
func lookupLatencyGoal(metric string) (latencyGoal, bool) {
	for _, g := range latencyGoals {
		if g.metric == metric {
			return g, true
		}
	}
	return latencyGoal{}, false
}

// countBelow is how many of the sorted latencies xs lie below the band
// around x: 100·v < (100−tol)·x, in integers (|v−x| ≤ tol·x is the goal's
// own test).
func (g latencyGoal) countBelow(xs []int64, x int64) int {
	return sort.Search(len(xs), func(i int) bool { return 100*xs[i] >= (100-g.tolPct)*x })
}

// countUpTo is how many lie at or below the band's top: 100·v ≤ (100+tol)·x.
func (g latencyGoal) countUpTo(xs []int64, x int64) int {
	return sort.Search(len(xs), func(i int) bool { return 100*xs[i] > (100+g.tolPct)*x })
}

// goalBands computes the bands of the latency goals around the observed
// percentiles (none when either side has no wakeups). obs and sim hold
// sorted latencies.
func goalBands(obs, sim *Metrics) []GoalBand {
	if len(obs.latencies) == 0 || len(sim.latencies) == 0 {
		return nil
	}
	var bands []GoalBand
	for _, g := range latencyGoals {
		x := obs.value(g.metric)
		no, ns := len(obs.latencies), len(sim.latencies)
		bands = append(bands, GoalBand{Metric: g.metric, Permille: g.permille,
			LowNS: ceilDiv((100-g.tolPct)*x, 100), HighNS: (100 + g.tolPct) * x / 100,
			ObservedBelow: share(g.countBelow(obs.latencies, x), no), ObservedUpTo: share(g.countUpTo(obs.latencies, x), no),
			SimulatedBelow: share(g.countBelow(sim.latencies, x), ns), SimulatedUpTo: share(g.countUpTo(sim.latencies, x), ns)})
	}
	return bands
}

// share is k of n in per cent, rounded to 0.1.
func share(k, n int) float64 { return math.Round(1000*float64(k)/float64(n)) / 10 }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// writeGoalBands prints the bands under the goals.
func writeGoalBands(w io.Writer, bands []GoalBand) {
	if len(bands) == 0 {
		return
	}
	fmt.Fprintln(w, "goal bands: the share of wakeups below each latency goal's band and up to its top (the goal holds when its percentile falls between)")
	for _, b := range bands {
		fmt.Fprintf(w, "  %-22s p%-4s %7.3f..%.3f ms   observed %5.1f..%5.1f%%   simulated %5.1f..%5.1f%%\n",
			b.Metric, permilleName(b.Permille), float64(b.LowNS)/1e6, float64(b.HighNS)/1e6,
			b.ObservedBelow, b.ObservedUpTo, b.SimulatedBelow, b.SimulatedUpTo)
	}
}

// permilleName is "50", "95", "99.9".
func permilleName(pm int) string {
	if pm%10 == 0 {
		return fmt.Sprint(pm / 10)
	}
	return fmt.Sprintf("%d.%d", pm/10, pm%10)
}
