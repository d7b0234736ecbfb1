package whatif

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
)

// Policy comparison (`replay whatif --policy A --policy B [--baseline P]
// --runs N`): every policy, the baseline included, replays the same
// workload with the same N seeds; the seeds perturb the replay within the
// trace's own noise (the idle-exit and wakeup-preemption delays sampled
// from the delays the trace shows). For each metric and seed the
// difference policy - baseline is taken on that seed (a paired design:
// both replays drew their noise from the same stream), and the delta is
// the mean of those N differences with a 95% paired t interval,
//
//	mean(d) ± t(0.975, N-1) · sd(d) / √N.
//
// Assumptions: the N per-seed differences are independent and roughly
// normal (or N large enough for the mean to be); the interval covers the
// seed-to-seed noise of the model, not how faithful the model is (that is
// --validate's FIDELITY), nor the noise of a different recording of the
// workload. All metrics are costs (lower is better): a delta whose
// interval lies below 0 is "better", above 0 "worse", and an interval
// containing 0 is "no significant change".

// CompareMethod describes the interval, for reports.
const CompareMethod = "paired t interval over seeds: delta = mean over seeds of (policy - baseline) on the same seed, 95% CI = mean ± t(0.975, n-1)·sd/√n; lower is better for every metric"

// CompareMetricKeys are the compared metrics, in report order.
var CompareMetricKeys = []string{"wakeup_p50_ns", "wakeup_p95_ns", "wakeup_p99_ns", "wakeup_p999_ns", "wakeup_max_ns",
	"idle_ns", "idle_while_runnable_ns", "migrations", "involuntary_switches", "makespan_ns"}

// Verdicts.
const (
	VerdictBetter = "better"
	VerdictWorse  = "worse"
	VerdictNone   = "no significant change"
)

// PolicyCompareConfig configures ComparePolicies.
type PolicyCompareConfig struct {
	// Base is the replay configuration; its Policy and Seed are replaced.
	Base     Config
	Baseline Policy
	Policies []Policy
	// Runs is the number of seeds (>= 2).
	Runs int
	// Seed derives the run seeds (CompareSeeds).
	Seed uint64
	// Workers bounds the parallel replays (0: GOMAXPROCS). The result does
	// not depend on it.
	Workers int
	// Progress, when set, is called after each replay with the number done
	// and the total (from the worker goroutines, serialised).
	Progress func(done, total int)
}

// PolicyMetrics is one policy's metrics: the mean over the seeds, and
// each run's values (JSON: metrics only).
type PolicyMetrics struct {
	Policy  string             `json:"policy"`
	Kernels string             `json:"kernels"`
	Metrics map[string]float64 `json:"metrics"`
	Runs    []*Metrics         `json:"-"`
}

// PolicyDelta is a policy's comparison with the baseline, per metric.
type PolicyDelta struct {
	PolicyMetrics
	Delta    map[string]float64    `json:"delta"`
	DeltaPct map[string]float64    `json:"delta_pct"`
	CI95     map[string][2]float64 `json:"ci95"`
	Verdict  map[string]string     `json:"verdict"`
}

// PolicyComparison is ComparePolicies' result.
type PolicyComparison struct {
	Method   string         `json:"method"`
	Runs     int            `json:"runs"`
	Seeds    []uint64       `json:"seeds"`
	Baseline PolicyMetrics  `json:"baseline"`
	Results  []*PolicyDelta `json:"results"`
}

// CompareSeeds derives n run seeds from seed: the first n outputs of the
// SplitMix64 stream started at seed.
func CompareSeeds(seed uint64, n int) []uint64 {
	out := make([]uint64, n)
	x := seed
	for i := range out {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		out[i] = z ^ (z >> 31)
	}
	return out
}

// ComparePolicies replays w under the baseline and each policy with the
// same seeds (in parallel; the result is deterministic) and compares them.
func ComparePolicies(w *Workload, cfg PolicyCompareConfig) (*PolicyComparison, error) {
	if cfg.Runs < 2 {
		return nil, fmt.Errorf("whatif: a comparison needs at least 2 runs (seeds), got %d", cfg.Runs)
	}
	if cfg.Baseline == nil {
		return nil, fmt.Errorf("whatif: no baseline policy")
	}
	pols := append([]Policy{cfg.Baseline}, cfg.Policies...)
	seeds := CompareSeeds(cfg.Seed, cfg.Runs)
	runs := make([][]*Metrics, len(pols))
	for i := range runs {
		runs[i] = make([]*Metrics, len(seeds))
	}
	type job struct{ p, s int }
	jobs := make(chan job)
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	total := len(pols) * len(seeds)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		done     int
	)
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				c := cfg.Base
				c.Policy, c.Seed = pols[j.p], seeds[j.s]
				res, err := Replay(w, c, nil)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("policy %s, seed %d: %w", pols[j.p].Name(), seeds[j.s], err)
				}
				if err == nil {
					runs[j.p][j.s] = res.Metrics
				}
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	for p := range pols {
		for s := range seeds {
			jobs <- job{p, s}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	pm := func(i int) PolicyMetrics {
		m := PolicyMetrics{Policy: pols[i].Name(), Kernels: pols[i].Kernels(), Metrics: map[string]float64{}, Runs: runs[i]}
		for _, k := range CompareMetricKeys {
			m.Metrics[k] = mean(values(runs[i], k))
		}
		return m
	}
	out := &PolicyComparison{Method: CompareMethod, Runs: cfg.Runs, Seeds: seeds, Baseline: pm(0)}
	for i := 1; i < len(pols); i++ {
		d := &PolicyDelta{PolicyMetrics: pm(i), Delta: map[string]float64{}, DeltaPct: map[string]float64{},
			CI95: map[string][2]float64{}, Verdict: map[string]string{}}
		for _, k := range CompareMetricKeys {
			b, p := values(runs[0], k), values(runs[i], k)
			diff := make([]float64, len(b))
			for j := range b {
				diff[j] = p[j] - b[j]
			}
			m, lo, hi := pairedT(diff)
			d.Delta[k], d.CI95[k] = m, [2]float64{lo, hi}
			if bm := out.Baseline.Metrics[k]; bm != 0 {
				d.DeltaPct[k] = 100 * m / bm
			}
			d.Verdict[k] = verdict(lo, hi)
		}
		out.Results = append(out.Results, d)
	}
	return out, nil
}

func values(ms []*Metrics, k string) []float64 {
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = float64(m.value(k))
	}
	return v
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// pairedT is the mean of d and its 95% t interval.
func pairedT(d []float64) (m, lo, hi float64) {
	n := len(d)
	m = mean(d)
	ss := 0.0
	for _, x := range d {
		ss += (x - m) * (x - m)
	}
	sd := math.Sqrt(ss / float64(n-1))
	h := tQuantile975(n-1) * sd / math.Sqrt(float64(n))
	return m, m - h, m + h
}

// verdict: lower is better; an interval containing 0 is no change.
func verdict(lo, hi float64) string {
	switch {
	case hi < 0:
		return VerdictBetter
	case lo > 0:
		return VerdictWorse
	}
	return VerdictNone
}

// t975 are the 0.975 quantiles of Student's t for 1..30 degrees of
// freedom.
var t975 = []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is t(0.975, df): the table up to 30, then the
// Cornish-Fisher expansion around the normal quantile 1.95996.
func tQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	if df <= len(t975) {
		return t975[df-1]
	}
	z, n := 1.959964, float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n)
}

// metricLabel and metricIsNS format the table.
func metricLabel(k string) string {
	return strings.TrimSuffix(strings.ReplaceAll(strings.TrimSuffix(k, "_ns"), "_", " "), " ")
}

func fmtMetric(k string, v float64, signed bool) string {
	f := "%.1f"
	if signed {
		f = "%+.1f"
	}
	if strings.HasSuffix(k, "_ns") {
		f = strings.Replace(f, ".1f", ".3f ms", 1)
		v /= 1e6
	}
	return fmt.Sprintf(f, v)
}

// WriteTable writes the comparison as text: per policy, each metric's
// baseline and policy means, the delta with its 95% CI, and the verdict.
func (c *PolicyComparison) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "baseline %s (%s); %d runs per policy, seeds derived from --seed\n", c.Baseline.Policy, c.Baseline.Kernels, c.Runs)
	fmt.Fprintf(w, "delta: %s\n", c.Method)
	for _, r := range c.Results {
		fmt.Fprintf(w, "\n%s (%s) vs %s\n", r.Policy, r.Kernels, c.Baseline.Policy)
		fmt.Fprintf(w, "  %-22s %16s %16s %14s %8s  %-29s %s\n", "metric", "baseline", "policy", "delta", "delta%", "95% CI", "verdict")
		for _, k := range CompareMetricKeys {
			ci := r.CI95[k]
			pct := "-"
			if c.Baseline.Metrics[k] != 0 {
				pct = fmt.Sprintf("%+.1f%%", r.DeltaPct[k])
			}
			fmt.Fprintf(w, "  %-22s %16s %16s %14s %8s  %-29s %s\n", metricLabel(k),
				fmtMetric(k, c.Baseline.Metrics[k], false), fmtMetric(k, r.Metrics[k], false), fmtMetric(k, r.Delta[k], true), pct,
				"["+fmtMetric(k, ci[0], true)+", "+fmtMetric(k, ci[1], true)+"]", r.Verdict[k])
		}
	}
	return nil
}
