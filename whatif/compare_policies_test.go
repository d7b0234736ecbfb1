package whatif

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func compareFixture(t *testing.T, runs, workers int, pols ...string) *PolicyComparison {
	t.Helper()
	w, _ := extractFixture(t, "../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data")
	var ps []Policy
	for _, n := range pols {
		ps = append(ps, mustPolicy(t, n))
	}
	c, err := ComparePolicies(w, PolicyCompareConfig{Base: DefaultConfig(nil), Baseline: mustPolicy(t, "v6.1"), Policies: ps, Runs: runs, Seed: 7, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A policy compared with itself: every paired difference is 0, so every
// delta and interval is 0 and nothing is significant.
func TestComparePolicyWithItself(t *testing.T) {
	c := compareFixture(t, 3, 2, "v6.1")
	for _, k := range CompareMetricKeys {
		r := c.Results[0]
		if r.Delta[k] != 0 || r.CI95[k] != [2]float64{} || r.Verdict[k] != VerdictNone {
			t.Errorf("%s: delta %v ci %v verdict %q", k, r.Delta[k], r.CI95[k], r.Verdict[k])
		}
	}
}

// Same input and seed give the same report whatever the parallelism; CI
// widths shrink as the number of seeds grows.
func TestCompareDeterministicAndCIShrinks(t *testing.T) {
	enc := func(c *PolicyComparison) []byte {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(c); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a := enc(compareFixture(t, 4, 1, "rework", "llc-nr-running"))
	b := enc(compareFixture(t, 4, 3, "rework", "llc-nr-running"))
	if !bytes.Equal(a, b) {
		t.Fatal("comparison output depends on the number of workers")
	}
	small, large := compareFixture(t, 4, 0, "rework"), compareFixture(t, 16, 0, "rework")
	width := func(c *PolicyComparison) float64 {
		s := 0.0
		for _, k := range CompareMetricKeys {
			ci := c.Results[0].CI95[k]
			if m := c.Baseline.Metrics[k]; m != 0 {
				s += (ci[1] - ci[0]) / m
			}
		}
		return s
	}
	if ws, wl := width(small), width(large); !(wl < ws) {
		t.Errorf("summed relative CI width with 16 seeds %.4f, with 4 %.4f: want smaller", wl, ws)
	}
}

// The paired t interval by hand: d = 1, 2, 3: mean 2, sd 1, t(0.975, 2) =
// 4.303, half-width 4.303/√3 = 2.4843.
func TestPairedT(t *testing.T) {
	m, lo, hi := pairedT([]float64{1, 2, 3})
	if m != 2 || math.Abs(lo-(2-2.48434)) > 1e-4 || math.Abs(hi-(2+2.48434)) > 1e-4 {
		t.Errorf("pairedT = %v [%v, %v]", m, lo, hi)
	}
	if verdict(lo, hi) != VerdictNone || verdict(-3, -1) != VerdictBetter || verdict(0.5, 2) != VerdictWorse {
		t.Error("verdicts")
	}
	if q := tQuantile975(60); math.Abs(q-2.000) > 0.002 {
		t.Errorf("t(0.975, 60) = %v, want 2.000", q)
	}
	s := CompareSeeds(7, 3)
	if s[0] == s[1] || s[1] == s[2] || CompareSeeds(7, 3)[2] != s[2] {
		t.Errorf("seeds %v", s)
	}
}

// BenchmarkComparePolicies: 4 policies (and the baseline) × 8 seeds on the
// largest real fixture, on 1 worker and on all cores.
func BenchmarkComparePolicies(b *testing.B) {
	w, _ := extractFixture(b, "../fixtures/kernels/guest-A-2s2c2t-2numa/hackbench.perf.data")
	var ps []Policy
	for _, n := range []string{"legacy", "rework", "llc-nr-running", "v6.6"} {
		p, _ := LookupPolicy(n)
		ps = append(ps, p)
	}
	base, _ := LookupPolicy("v6.1")
	for _, workers := range []int{1, 0} {
		name := "workers=all"
		if workers == 1 {
			name = "workers=1"
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := ComparePolicies(w, PolicyCompareConfig{Base: DefaultConfig(nil), Baseline: base, Policies: ps, Runs: 8, Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
