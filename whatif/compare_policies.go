package whatif

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
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

// CompareMetricKeys are the compared metrics, in report order. A
// comparison adds per-level keys after them (Keys).
var CompareMetricKeys = []string{"wakeup_p50_ns", "wakeup_p95_ns", "wakeup_p99_ns", "wakeup_p999_ns", "wakeup_max_ns",
	"idle_ns", "idle_while_runnable_ns", "migrations", "involuntary_switches", "makespan_ns"}

// levelKeys are the per-domain-level keys the runs have
// ("idle_while_runnable_ns.MC", "migrations.NUMA", ...), levels sorted.
func levelKeys(runs [][]*Metrics) []string {
	iwr, mig := map[string]bool{}, map[string]bool{}
	for _, rs := range runs {
		for _, m := range rs {
			for l := range m.IdleWhileRunnableByLevel {
				iwr[l] = true
			}
			for l := range m.MigrationsByLevel {
				mig[l] = true
			}
		}
	}
	var keys []string
	for _, l := range sortedSet(iwr) {
		keys = append(keys, "idle_while_runnable_ns."+l)
	}
	for _, l := range sortedSet(mig) {
		keys = append(keys, "migrations."+l)
	}
	return keys
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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
	// TimelineDir, when set, receives each policy's simulated timeline of
	// the first seed as TimelineDir/<policy>.arrow (the baseline's too),
	// written by ReplayToFile from the very replay the comparison
	// measures, so notebooks see exactly what the first seed reported.
	TimelineDir string
	// Windows > 0 adds the bootstrap over that many time windows
	// (windows.go) to the wakeup p95/p99 deltas, with WindowResamples
	// resamples (0: DefaultWindowResamples).
	Windows, WindowResamples int
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
	// FirstStats are the first seed's replay statistics (for --validate's
	// fidelity of that replay).
	FirstStats *Stats `json:"-"`
}

// PolicyDelta is a policy's comparison with the baseline, per metric.
type PolicyDelta struct {
	PolicyMetrics
	Delta    map[string]float64    `json:"delta"`
	DeltaPct map[string]float64    `json:"delta_pct"`
	CI95     map[string][2]float64 `json:"ci95"`
	Verdict  map[string]string     `json:"verdict"`
	// CI95Windows is the bootstrap-over-time-windows 95% interval of the
	// delta (WindowMetricKeys only; with Windows > 0).
	CI95Windows map[string][2]float64 `json:"ci95_windows,omitempty"`
}

// PolicyComparison is ComparePolicies' result.
type PolicyComparison struct {
	Method string   `json:"method"`
	Runs   int      `json:"runs"`
	Seeds  []uint64 `json:"seeds"`
	// Keys are the compared metrics: CompareMetricKeys, then one per
	// domain level for idle-while-runnable and migrations.
	Keys []string `json:"metric_keys"`
	// WindowMethod, Windows and WindowResamples describe CI95Windows.
	WindowMethod    string `json:"window_method,omitempty"`
	Windows         int    `json:"windows,omitempty"`
	WindowResamples int    `json:"window_resamples,omitempty"`
	// Point is the sweep's grid point (Sweep), in axis order.
	Point []string `json:"point,omitempty"`
	// Settings are the --set parameters, applied to the baseline and
	// every policy alike.
	Settings []string       `json:"settings,omitempty"`
	Baseline PolicyMetrics  `json:"baseline"`
	Results  []*PolicyDelta `json:"results"`
	// Fidelity (--validate) is the baseline's first-seed replay compared
	// with the observed schedule: how far the model is from the kernel,
	// which the seed intervals do not cover. Set by AddFidelity.
	Fidelity *Fidelity `json:"fidelity,omitempty"`
}

// AddFidelity compares the baseline's first-seed replay with the observed
// metrics (whatif.Compare) and keeps the result in c.Fidelity.
func (c *PolicyComparison) AddFidelity(observed *Metrics) {
	c.Fidelity = Compare(c.Baseline.Policy, observed, c.Baseline.Runs[0], c.Baseline.FirstStats)
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
	jobs, err := compareJobs(cfg)
	if err != nil {
		return nil, err
	}
	res, err := runReplays(w, jobs, cfg.Workers, cfg.Progress)
	if err != nil {
		return nil, err
	}
	return buildComparison(w, cfg, res), nil
}

// replayJob is one replay of a comparison or sweep; path, when set,
// receives its timeline.
type replayJob struct {
	cfg     Config
	path    string
	windows bool // collect the timed latencies for the window bootstrap
}

// replayOut is one job's outcome.
type replayOut struct {
	res  *Result
	lats *timedLats
}

// compareJobs are cfg's replays, policy-major (baseline first), seed-minor.
func compareJobs(cfg PolicyCompareConfig) ([]replayJob, error) {
	if cfg.Runs < 2 {
		return nil, fmt.Errorf("whatif: a comparison needs at least 2 runs (seeds), got %d", cfg.Runs)
	}
	if cfg.Baseline == nil {
		return nil, fmt.Errorf("whatif: no baseline policy")
	}
	pols := append([]Policy{cfg.Baseline}, cfg.Policies...)
	seeds := CompareSeeds(cfg.Seed, cfg.Runs)
	var jobs []replayJob
	for p := range pols {
		for i, seed := range seeds {
			c := cfg.Base
			c.Policy, c.Seed = pols[p], seed
			j := replayJob{cfg: c, windows: cfg.Windows > 0}
			if i == 0 {
				j.path = timelinePath(cfg.TimelineDir, pols, p)
			}
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// runReplays runs the jobs on a pool of workers (0: GOMAXPROCS) and
// returns their results in job order, so the outcome does not depend on
// the scheduling; the first error (in completion order) is returned.
func runReplays(w *Workload, jobs []replayJob, workers int, progress func(done, total int)) ([]replayOut, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]replayOut, len(jobs))
	next := make(chan int)
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
			for i := range next {
				j := jobs[i]
				var o replayOut
				var err error
				switch {
				case j.path != "":
					if o.res, err = ReplayToFile(j.path, w, j.cfg); err == nil && j.windows {
						o.lats, err = timedLatsOfFile(j.path)
					}
				case j.windows:
					lc := newLatCollector()
					if o.res, err = Replay(w, j.cfg, lc); err == nil {
						o.lats, err = lc.finish()
					}
				default:
					o.res, err = Replay(w, j.cfg, nil)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("policy %s, seed %d: %w", j.cfg.Policy.Name(), j.cfg.Seed, err)
				}
				out[i] = o
				done++
				if progress != nil {
					progress(done, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// buildComparison computes the comparison from the results of
// compareJobs(cfg), in that order.
func buildComparison(w *Workload, cfg PolicyCompareConfig, res []replayOut) *PolicyComparison {
	pols := append([]Policy{cfg.Baseline}, cfg.Policies...)
	seeds := CompareSeeds(cfg.Seed, cfg.Runs)
	runs := make([][]*Metrics, len(pols))
	for i := range runs {
		runs[i] = make([]*Metrics, len(seeds))
		for s := range seeds {
			runs[i][s] = res[i*len(seeds)+s].res.Metrics
		}
	}
	keys := append(append([]string{}, CompareMetricKeys...), levelKeys(runs)...)
	pm := func(i int) PolicyMetrics {
		m := PolicyMetrics{Policy: pols[i].Name(), Kernels: pols[i].Kernels(), Metrics: map[string]float64{}, Runs: runs[i], FirstStats: res[i*len(seeds)].res.Stats}
		for _, k := range keys {
			m.Metrics[k] = mean(values(runs[i], k))
		}
		return m
	}
	out := &PolicyComparison{Method: CompareMethod, Runs: cfg.Runs, Seeds: seeds, Keys: keys, Baseline: pm(0)}
	for i := 1; i < len(pols); i++ {
		d := &PolicyDelta{PolicyMetrics: pm(i), Delta: map[string]float64{}, DeltaPct: map[string]float64{},
			CI95: map[string][2]float64{}, Verdict: map[string]string{}}
		for _, k := range keys {
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
	if cfg.Windows > 0 {
		addWindowCIs(w, cfg, out, res)
	}
	return out
}

// timelinePath is where policy i's first-seed timeline goes ("" for none):
// a policy named as the baseline (a self-comparison) replays identically,
// so only the baseline writes that file.
func timelinePath(dir string, pols []Policy, i int) string {
	if dir == "" || (i > 0 && pols[i].Name() == pols[0].Name()) {
		return ""
	}
	return filepath.Join(dir, pols[i].Name()+".arrow")
}

// TimelineFiles are the files TimelineDir receives for these policies, in
// the comparison's order (baseline first, duplicates once).
func TimelineFiles(dir string, baseline Policy, policies []Policy) []string {
	pols := append([]Policy{baseline}, policies...)
	var out []string
	seen := map[string]bool{}
	for i := range pols {
		if p := timelinePath(dir, pols, i); p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
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
	base, level, ok := strings.Cut(k, ".")
	l := strings.TrimSuffix(strings.ReplaceAll(strings.TrimSuffix(base, "_ns"), "_", " "), " ")
	if ok {
		l += " " + level
	}
	return l
}

func fmtMetric(k string, v float64, signed bool) string {
	k, _, _ = strings.Cut(k, ".") // a per-level key has its base metric's unit
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
	if len(c.Settings) > 0 {
		fmt.Fprintf(w, "parameters (baseline and every policy alike): %s\n", strings.Join(c.Settings, " "))
	}
	fmt.Fprintf(w, "delta: %s\n", c.Method)
	if c.Windows > 0 {
		fmt.Fprintf(w, "windows CI (p95, p99): %s; %d windows, %d resamples\n", c.WindowMethod, c.Windows, c.WindowResamples)
	}
	for _, r := range c.Results {
		fmt.Fprintf(w, "\n%s (%s) vs %s\n", r.Policy, r.Kernels, c.Baseline.Policy)
		hdr := fmt.Sprintf("  %-22s %16s %16s %14s %8s  %-29s %-21s", "metric", "baseline", "policy", "delta", "delta%", "95% CI", "verdict")
		if c.Windows > 0 {
			hdr += " 95% CI windows"
		}
		fmt.Fprintln(w, strings.TrimRight(hdr, " "))
		for _, k := range c.keys() {
			ci := r.CI95[k]
			pct := "-"
			if c.Baseline.Metrics[k] != 0 {
				pct = fmt.Sprintf("%+.1f%%", r.DeltaPct[k])
			}
			line := fmt.Sprintf("  %-22s %16s %16s %14s %8s  %-29s %-21s", metricLabel(k),
				fmtMetric(k, c.Baseline.Metrics[k], false), fmtMetric(k, r.Metrics[k], false), fmtMetric(k, r.Delta[k], true), pct,
				"["+fmtMetric(k, ci[0], true)+", "+fmtMetric(k, ci[1], true)+"]", r.Verdict[k])
			if wci, ok := r.CI95Windows[k]; ok {
				line += " [" + fmtMetric(k, wci[0], true) + ", " + fmtMetric(k, wci[1], true) + "]"
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
	if c.Fidelity != nil {
		fmt.Fprintf(w, "\nbaseline's first seed against the observed schedule (--validate):\n")
		return c.Fidelity.WriteTable(w)
	}
	return nil
}

// CSVHeader is the header of WriteCSV: one row per policy × metric, so a
// spreadsheet or a data frame reads the comparison without reshaping.
var CSVHeader = []string{"policy", "metric", "baseline", "value", "delta", "delta_pct", "ci95_low", "ci95_high", "verdict", "ci95_windows_low", "ci95_windows_high"}

// CSVRows are the comparison's rows under CSVHeader (numbers in full
// precision, strconv 'f' format, no exponent; delta_pct empty when the baseline is 0).
func (c *PolicyComparison) CSVRows() [][]string {
	var rows [][]string
	for _, r := range c.Results {
		for _, k := range c.keys() {
			pct := ""
			if c.Baseline.Metrics[k] != 0 {
				pct = fmtFloat(r.DeltaPct[k])
			}
			ci := r.CI95[k]
			wlo, whi := "", ""
			if wci, ok := r.CI95Windows[k]; ok {
				wlo, whi = fmtFloat(wci[0]), fmtFloat(wci[1])
			}
			rows = append(rows, []string{r.Policy, k, fmtFloat(c.Baseline.Metrics[k]), fmtFloat(r.Metrics[k]), fmtFloat(r.Delta[k]), pct,
				fmtFloat(ci[0]), fmtFloat(ci[1]), r.Verdict[k], wlo, whi})
		}
	}
	if f := c.Fidelity; f != nil {
		// Fidelity rows: metric "fidelity.<key>", baseline = observed,
		// value = simulated (the baseline's first seed), delta and
		// delta_pct the error.
		for _, k := range CompareMetricKeys {
			o, s := float64(f.Observed.value(k)), float64(f.Simulated.value(k))
			rows = append(rows, []string{f.Policy, "fidelity." + k, fmtFloat(o), fmtFloat(s), fmtFloat(s - o), fmtFloat(100 * f.RelError[k]), "", "", "", "", ""})
		}
		rows = append(rows, []string{f.Policy, "fidelity.ks", "", fmtFloat(f.KS), "", "", "", "", "", "", ""})
	}
	return rows
}

// WriteCSV writes the comparison as RFC 4180 CSV (encoding/csv).
func (c *PolicyComparison) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	if err := cw.WriteAll(c.CSVRows()); err != nil {
		return err
	}
	return cw.Error()
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// MetricValue is m's value for a key of CompareMetricKeys (or
// "cpu_time_ns"), for writers outside the package (CSV).
func MetricValue(m *Metrics, k string) int64 { return m.value(k) }

// keys returns the compared metrics (CompareMetricKeys for a comparison
// built before per-level keys existed).
func (c *PolicyComparison) keys() []string {
	if len(c.Keys) > 0 {
		return c.Keys
	}
	return CompareMetricKeys
}
