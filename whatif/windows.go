package whatif

import (
	"slices"
	"sort"
	"sync"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/timeline"
)

// Bootstrap over time windows. The seed interval (pairedT) says how much
// the model's own sampled noise moves a delta; it says nothing about how
// much the delta depends on which stretch of the workload happened to be
// recorded: a policy may help in the trace's bursty second half only. To
// show that, the trace's span [Workload.StartNS, Workload.EndNS] is cut
// into W equal windows (default 10) and every wakeup latency of every
// replay is assigned to the window holding its wakeup (a wakeup after
// EndNS — the replay ran longer than the trace — goes to the last). One
// bootstrap resample draws W windows with replacement (a SplitMix64 stream
// from a fixed seed, so the interval is reproducible) and computes, for
// each seed, the nearest-rank percentile of the baseline's and of the
// policy's latencies in the drawn windows (a window drawn twice counts
// twice) and their difference; the resample's delta is the mean of those
// differences over the seeds, the statistic the seed delta uses, so the
// resample that draws every window once reproduces it. The 95% interval
// is the 2.5th and 97.5th percentiles of the resampled deltas (percentile
// bootstrap, B = 1000 by default).
//
// Assumptions: windows are exchangeable and independent — the workload's
// behaviour varies over time but without long-range dependence beyond a
// window (so windows should be long against the workload's phases; with
// 10 windows over a 0.5 s trace each is 50 ms); the same windows are drawn
// for the baseline and the policy (paired: both replayed the same
// workload and their wakeups fall in the same stretches of it); with few
// latencies per window a tail percentile is lumpy and the interval
// coarse. A policy compared with itself gives identical latencies per
// window, so every resampled delta is 0 and the interval is [0, 0].

// WindowMetricKeys are the metrics the window bootstrap covers.
var WindowMetricKeys = []string{"wakeup_p95_ns", "wakeup_p99_ns"}

var windowPermille = map[string]int{"wakeup_p95_ns": 950, "wakeup_p99_ns": 990}

// windowBootstrapSeed seeds the resampling; fixed so the interval is the
// same on every run.
const windowBootstrapSeed = 0x77696e646f7773 // "windows"

// DefaultWindows and DefaultWindowResamples are the CLI's defaults.
const (
	DefaultWindows         = 10
	DefaultWindowResamples = 1000
)

// timedLats are one replay's wakeup latencies with their wakeup times.
type timedLats struct {
	t, d []int64
}

// latCollector measures a replay's wakeup latencies with the same
// analysis and filter as Measurer, keeping when each wakeup happened
// (Measurer keeps only the sorted values).
type latCollector struct {
	a *analysis.Analyzer
	l timedLats
}

func newLatCollector() *latCollector {
	c := &latCollector{}
	c.a = analysis.New(analysis.Options{PreferWaking: true, Slices: c})
	return c
}

func (c *latCollector) Emit(e *timeline.Event) error { return c.a.Add(e) }

func (c *latCollector) WriteSlice(s *analysis.Slice) error {
	if s.Wakeup >= 0 && !s.Idle && s.Start >= 0 && !s.SpansLoss {
		c.l.t = append(c.l.t, s.Wakeup)
		c.l.d = append(c.l.d, s.SchDelay)
	}
	return nil
}

func (c *latCollector) finish() (*timedLats, error) {
	if _, err := c.a.Finish(); err != nil {
		return nil, err
	}
	return &c.l, nil
}

// timedLatsOfFile measures a timeline file (a replay written by
// ReplayToFile) as latCollector does.
func timedLatsOfFile(path string) (*timedLats, error) {
	r, err := timeline.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c := newLatCollector()
	for r.Next() {
		if err := c.Emit(r.Event()); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return c.finish()
}

// windowed are one replay's latencies per window, each window sorted, and
// all of them sorted (the candidates for a percentile).
type windowed struct {
	win [][]int64
	all []int64
}

func splitWindows(l *timedLats, start, end int64, n int) *windowed {
	w := &windowed{win: make([][]int64, n), all: slices.Clone(l.d)}
	span := end - start
	for i, t := range l.t {
		k := 0
		if span > 0 {
			k = int((t - start) * int64(n) / span)
		}
		k = min(max(k, 0), n-1)
		w.win[k] = append(w.win[k], l.d[i])
	}
	for _, x := range w.win {
		slices.Sort(x)
	}
	slices.Sort(w.all)
	return w
}

// percentile is the nearest-rank per-mille pm percentile of the multiset
// union of the drawn windows (analysis' definition; 0 when empty): the
// smallest candidate whose count of values <= it reaches the rank.
func (w *windowed) percentile(draw []int, pm int) int64 {
	n := 0
	for _, k := range draw {
		n += len(w.win[k])
	}
	if n == 0 {
		return 0
	}
	rank := max((pm*n+999)/1000, 1)
	i := sort.Search(len(w.all), func(i int) bool {
		x, c := w.all[i], 0
		for _, k := range draw {
			c += sort.Search(len(w.win[k]), func(j int) bool { return w.win[k][j] > x })
		}
		return c >= rank
	})
	return w.all[i]
}

// windowDraws are the bootstrap's resamples: b draws of n window indices.
func windowDraws(n, b int) [][]int {
	x := uint64(windowBootstrapSeed)
	out := make([][]int, b)
	for r := range out {
		d := make([]int, n)
		for i := range d {
			x += 0x9e3779b97f4a7c15
			z := x
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
			z = (z ^ (z >> 27)) * 0x94d049bb133111eb
			z ^= z >> 31
			d[i] = int(z % uint64(n))
		}
		out[r] = d
	}
	return out
}

// windowCI is the percentile-bootstrap 95% interval of the delta of
// metric k between policy and baseline (per-seed windowed latencies,
// paired by seed and by the drawn windows).
func windowCI(base, pol []*windowed, draws [][]int, k string) [2]float64 {
	pm := windowPermille[k]
	deltas := make([]float64, len(draws))
	for r, d := range draws {
		s := 0.0
		for i := range base {
			s += float64(pol[i].percentile(d, pm) - base[i].percentile(d, pm))
		}
		deltas[r] = s / float64(len(base))
	}
	slices.Sort(deltas)
	q := func(p float64) float64 {
		// Nearest rank on the sorted resampled deltas.
		i := max(int(p*float64(len(deltas))+0.999999)-1, 0)
		return deltas[min(i, len(deltas)-1)]
	}
	return [2]float64{q(0.025), q(0.975)}
}

// WindowMethod describes CI95Windows, for reports.
const WindowMethod = "bootstrap over time windows: the trace's span cut into equal windows, windows resampled with replacement (fixed-seed RNG, same draws for baseline and policy), delta = mean over seeds of (policy - baseline) percentile of the drawn windows' latencies; 95% CI = 2.5th-97.5th percentiles of the resampled deltas"

// addWindowCIs fills CI95Windows of every result of c (the policies'
// bootstraps run in parallel; each is deterministic).
func addWindowCIs(w *Workload, cfg PolicyCompareConfig, c *PolicyComparison, res []replayOut) {
	b := cfg.WindowResamples
	if b <= 0 {
		b = DefaultWindowResamples
	}
	c.WindowMethod, c.Windows, c.WindowResamples = WindowMethod, cfg.Windows, b
	draws := windowDraws(cfg.Windows, b)
	n := len(c.Seeds)
	split := func(p int) []*windowed {
		out := make([]*windowed, n)
		for s := range out {
			out[s] = splitWindows(res[p*n+s].lats, w.StartNS, w.EndNS, cfg.Windows)
		}
		return out
	}
	base := split(0)
	type task struct {
		r   *PolicyDelta
		k   string
		pol []*windowed
		ci  [2]float64
	}
	var tasks []*task
	for i, r := range c.Results {
		r.CI95Windows = map[string][2]float64{}
		pol := split(i + 1)
		for _, k := range WindowMetricKeys {
			tasks = append(tasks, &task{r: r, k: k, pol: pol})
		}
	}
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.ci = windowCI(base, t.pol, draws, t.k)
		}()
	}
	wg.Wait()
	for _, t := range tasks {
		t.r.CI95Windows[t.k] = t.ci
	}
}
