package whatif

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The multiset percentile by hand: windows {1,5}, {2,3,9}; drawing the
// second twice gives 1,2,2,3,3,5,9,9 (n 8): p50 rank 4 → 3, p95 rank
// ceil(7.6) = 8 → 9; drawing the first only: rank ceil(1.9) = 2 → 5.
func TestWindowPercentile(t *testing.T) {
	w := splitWindows(&timedLats{t: []int64{0, 10, 60, 70, 80}, d: []int64{5, 1, 2, 9, 3}}, 0, 100, 2)
	if got := w.percentile([]int{0, 1, 1}, 500); got != 3 {
		t.Errorf("p50 %d, want 3", got)
	}
	if got := w.percentile([]int{0, 1, 1}, 950); got != 9 {
		t.Errorf("p95 %d, want 9", got)
	}
	if got := w.percentile([]int{0, 0}, 950); got != 5 {
		t.Errorf("p95 of the first window %d, want 5", got)
	}
	if got := (&windowed{win: make([][]int64, 2)}).percentile([]int{0, 1}, 990); got != 0 {
		t.Errorf("empty %d", got)
	}
}

func windowCompare(t *testing.T, workers int, pols ...string) *PolicyComparison {
	t.Helper()
	w, _ := extractFixture(t, "../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data")
	var ps []Policy
	for _, n := range pols {
		ps = append(ps, mustPolicy(t, n))
	}
	c, err := ComparePolicies(w, PolicyCompareConfig{Base: DefaultConfig(nil), Baseline: mustPolicy(t, "v6.1"), Policies: ps, Runs: 3, Seed: 11,
		Workers: workers, Windows: 10, WindowResamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The window bootstrap: the same with any parallelism; a policy against
// itself gives [0, 0]; the latencies it resamples are the ones the
// metrics were computed from (all windows once reproduce each seed's p95
// and p99), and the interval is a real interval around a delta.
func TestWindowBootstrap(t *testing.T) {
	enc := func(c *PolicyComparison) string {
		var b bytes.Buffer
		_ = json.NewEncoder(&b).Encode(c)
		return b.String()
	}
	a, b := windowCompare(t, 1, "v6.1", "llc-nr-running"), windowCompare(t, 2, "v6.1", "llc-nr-running")
	if enc(a) != enc(b) {
		t.Fatal("window bootstrap depends on the number of workers")
	}
	for _, k := range WindowMetricKeys {
		if ci := a.Results[0].CI95Windows[k]; ci != [2]float64{} {
			t.Errorf("self-comparison %s: window CI %v, want [0, 0]", k, ci)
		}
		ci := a.Results[1].CI95Windows[k]
		if !(ci[0] < ci[1]) {
			t.Errorf("llc-nr-running %s: window CI %v", k, ci)
		}
	}
	// All windows once = the seed's own percentile.
	w, _ := extractFixture(t, "../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data")
	cfg := DefaultConfig(mustPolicy(t, "rework"))
	cfg.Seed = 3
	lc := newLatCollector()
	res, err := Replay(w, cfg, lc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lc.finish()
	if err != nil {
		t.Fatal(err)
	}
	win := splitWindows(l, w.StartNS, w.EndNS, 10)
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if int64(len(l.d)) != res.Metrics.WakeupCount || win.percentile(all, 950) != res.Metrics.WakeupP95NS || win.percentile(all, 990) != res.Metrics.WakeupP99NS {
		t.Errorf("collector: %d latencies p95 %d p99 %d; metrics %d, %d, %d", len(l.d), win.percentile(all, 950), win.percentile(all, 990),
			res.Metrics.WakeupCount, res.Metrics.WakeupP95NS, res.Metrics.WakeupP99NS)
	}
}
