package whatif

import (
	"bytes"
	"math"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// metricsOf builds Metrics from latencies the way Measurer does:
// nearest-rank percentiles (analysis.nearestRank) of the sorted sample.
func metricsOf(lat []int64) *Metrics {
	xs := append([]int64(nil), lat...)
	sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	rank := func(pm int) int64 {
		r := (pm*len(xs) + 999) / 1000
		if r < 1 {
			r = 1
		}
		return xs[r-1]
	}
	return &Metrics{WakeupP50NS: rank(500), WakeupP95NS: rank(950), WakeupP99NS: rank(990),
		WakeupCount: int64(len(xs)), latencies: xs}
}

func msRange(lo, hi int64) []int64 {
	var xs []int64
	for v := lo; v <= hi; v++ {
		xs = append(xs, v*1e6)
	}
	return xs
}

// TestGoalBandsByHand works the bands out for 20 latencies of 1..20 ms
// observed and 5..24 ms simulated.
func TestGoalBandsByHand(t *testing.T) {
	obs, sim := metricsOf(msRange(1, 20)), metricsOf(msRange(5, 24))
	f := Compare("v6.1", obs, sim, nil)
	want := []GoalBand{
		// p50 = 10 ms (rank 10); band 8.5..11.5 ms: 1..8 below (40 %),
		// 1..11 up to it (55 %); simulated 5..8 (4 of 20), 5..11 (7).
		{Metric: "wakeup_p50_ns", Permille: 500, LowNS: 8_500_000, HighNS: 11_500_000,
			ObservedBelow: 40, ObservedUpTo: 55, SimulatedBelow: 20, SimulatedUpTo: 35},
		// p95 = 19 ms (rank 19); band 16.15..21.85 ms: 1..16 below, all
		// up to it; simulated 5..16 (12), 5..21 (17).
		{Metric: "wakeup_p95_ns", Permille: 950, LowNS: 16_150_000, HighNS: 21_850_000,
			ObservedBelow: 80, ObservedUpTo: 100, SimulatedBelow: 60, SimulatedUpTo: 85},
		// p99 = 20 ms (rank 20); band 15..25 ms (±25 %): 1..14 below;
		// simulated 5..14 (10), all up to it.
		{Metric: "wakeup_p99_ns", Permille: 990, LowNS: 15_000_000, HighNS: 25_000_000,
			ObservedBelow: 70, ObservedUpTo: 100, SimulatedBelow: 50, SimulatedUpTo: 100},
	}
	if len(f.GoalBands) != len(want) {
		t.Fatalf("got %d bands, want %d", len(f.GoalBands), len(want))
	}
	for i, w := range want {
		if f.GoalBands[i] != w {
			t.Errorf("band %d:\n got %+v\nwant %+v", i, f.GoalBands[i], w)
		}
	}
	// The simulated p50 (14 ms) misses: 7 of 20 up to the band's top is
	// below rank 10; p95 (23 ms) misses above it; p99 (24 ms) is within.
	var b bytes.Buffer
	if err := f.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"goal bands:", "wakeup_p50_ns          p50     8.500..11.500 ms   observed  40.0.. 55.0%   simulated  20.0.. 35.0%"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	if got := goalBands(obs, &Metrics{}); got != nil {
		t.Errorf("no simulated wakeups: bands %+v, want none", got)
	}
}

// TestGoalBandsAgreeWithGoals: over many random pairs of samples, a
// latency goal is met exactly when the simulated count below the band is
// under the percentile's rank and the count up to its top reaches it
// (the reading the table gives), except where rel_error's rounding to
// four decimals sits on the limit.
func TestGoalBandsAgreeWithGoals(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	sample := func() []int64 {
		n := 5 + rng.Intn(300)
		xs := make([]int64, n)
		// Two modes, as hackbench's latencies have (0.1 ms and a few ms).
		fast := rng.Float64()
		for i := range xs {
			if rng.Float64() < fast {
				xs[i] = 50_000 + rng.Int63n(250_000)
			} else {
				xs[i] = 1_000_000 + rng.Int63n(5_000_000)
			}
		}
		return xs
	}
	checked := 0
	for trial := 0; trial < 2000; trial++ {
		obs, sim := metricsOf(sample()), metricsOf(sample())
		f := Compare("v6.1", obs, sim, nil)
		for i, g := range latencyGoals {
			b := f.GoalBands[i]
			x := obs.value(g.metric)
			// The counts by the goal's definition, independently.
			var nb, nu int
			for _, v := range sim.latencies {
				if 100*v < (100-g.tolPct)*x {
					nb++
				}
				if 100*v <= (100+g.tolPct)*x {
					nu++
				}
			}
			n := len(sim.latencies)
			rank := (g.permille*n + 999) / 1000
			inBand := nb < rank && rank <= nu
			goal := f.Goals[i]
			if goal.Metric != g.metric {
				t.Fatalf("goal %d is %s, band %s", i, goal.Metric, g.metric)
			}
			if math.Abs(goal.Value-float64(g.tolPct)/100) < 2e-4 {
				continue
			}
			checked++
			if goal.Met != inBand {
				t.Fatalf("trial %d %s: goal met %v, band says %v (below %d, up to %d, rank %d of %d; %+v)",
					trial, g.metric, goal.Met, inBand, nb, nu, rank, n, b)
			}
			if b.SimulatedBelow != share(nb, n) || b.SimulatedUpTo != share(nu, n) {
				t.Fatalf("trial %d %s: shares %v..%v, counts %d..%d of %d", trial, g.metric, b.SimulatedBelow, b.SimulatedUpTo, nb, nu, n)
			}
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d goals checked", checked)
	}
}
