package whatif

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Parameter sweeps (`replay whatif --sweep key=v1,v2 [--sweep ...]`): the
// comparison (baseline and every policy, same seeds) repeated at each
// point of the grid the axes span, so one can see whether a policy's
// advantage holds as a tunable moves. Every replay of every point runs on
// the one worker pool and the results are put back in grid order, so the
// output does not depend on scheduling.

// SweepAxis is one --sweep key=v1,v2,...: a parameter and its values.
type SweepAxis struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// ParseSweepAxis parses key=v1,v2,... and checks every value as --set
// would.
func ParseSweepAxis(s string) (SweepAxis, error) {
	k, vs, ok := strings.Cut(strings.TrimSpace(s), "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.TrimSpace(vs) == "" {
		return SweepAxis{}, fmt.Errorf("%q: want key=v1,v2,...; keys: %s", s, ParamUsage())
	}
	a := SweepAxis{Key: k}
	seen := map[string]bool{}
	for _, v := range strings.Split(vs, ",") {
		v = strings.TrimSpace(v)
		st, err := ParseSetting(k + "=" + v)
		if err != nil {
			return SweepAxis{}, err
		}
		if seen[st.Value] {
			return SweepAxis{}, fmt.Errorf("%q: value %s given twice", s, st.Value)
		}
		seen[st.Value] = true
		a.Values = append(a.Values, st.Value)
	}
	return a, nil
}

// SweepGrid is the Cartesian product of the axes, the first axis varying
// slowest; each point is its settings in axis order.
func SweepGrid(axes []SweepAxis) [][]Setting {
	grid := [][]Setting{nil}
	for _, a := range axes {
		var next [][]Setting
		for _, p := range grid {
			for _, v := range a.Values {
				q := append(append([]Setting{}, p...), Setting{Key: a.Key, Value: v})
				next = append(next, q)
			}
		}
		grid = next
	}
	return grid
}

// PointName is a grid point as text: its settings joined by commas.
func PointName(p []Setting) string {
	var s []string
	for _, st := range p {
		s = append(s, st.String())
	}
	return strings.Join(s, ",")
}

// Sweep runs cfg's comparison at each point of the axes' grid: the
// point's settings are applied to cfg.Base (after whatever it already
// has, e.g. --set) for the baseline and every policy. With
// cfg.TimelineDir set, each point's timelines go to TimelineDir/<point>/.
// The comparisons come back in grid order, each with Point set.
func Sweep(w *Workload, cfg PolicyCompareConfig, axes []SweepAxis) ([]*PolicyComparison, error) {
	grid := SweepGrid(axes)
	var (
		jobs []replayJob
		cfgs []PolicyCompareConfig
	)
	for _, pt := range grid {
		pc := cfg
		for _, st := range pt {
			if err := st.Apply(&pc.Base); err != nil {
				return nil, err
			}
		}
		if cfg.TimelineDir != "" {
			pc.TimelineDir = filepath.Join(cfg.TimelineDir, PointName(pt))
			if err := os.MkdirAll(pc.TimelineDir, 0o755); err != nil {
				return nil, err
			}
		}
		js, err := compareJobs(pc)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, js...)
		cfgs = append(cfgs, pc)
	}
	res, err := runReplays(w, jobs, cfg.Workers, cfg.Progress)
	if err != nil {
		return nil, err
	}
	var out []*PolicyComparison
	for i, pc := range cfgs {
		n := (len(pc.Policies) + 1) * pc.Runs
		c := buildComparison(w, pc, res[:n])
		res = res[n:]
		for _, st := range grid[i] {
			c.Point = append(c.Point, st.String())
		}
		out = append(out, c)
	}
	return out, nil
}

// SweepMetricKeys are the metrics of the sweep table (the JSON has all).
var SweepMetricKeys = []string{"wakeup_p50_ns", "wakeup_p95_ns", "wakeup_p99_ns", "idle_while_runnable_ns", "migrations", "makespan_ns"}

// WriteSweepTable writes one row per point and policy: the baseline's
// means, then each policy's means with the delta against that point's
// baseline in percent, marked * when its 95% interval excludes 0.
func WriteSweepTable(w io.Writer, cs []*PolicyComparison) error {
	if len(cs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "sweep: %d points; at each, baseline %s and every policy replayed with the same %d seeds; cells: mean (delta%% vs the point's baseline, * = 95%% CI excludes 0)\n",
		len(cs), cs[0].Baseline.Policy, cs[0].Runs)
	if len(cs[0].Settings) > 0 {
		fmt.Fprintf(w, "parameters at every point (baseline and every policy alike): %s\n", strings.Join(cs[0].Settings, " "))
	}
	pw := len("point")
	for _, c := range cs {
		pw = max(pw, len(strings.Join(c.Point, ",")))
	}
	nw := len("policy")
	for _, r := range cs[0].Results {
		nw = max(nw, len(r.Policy))
	}
	nw = max(nw, len(cs[0].Baseline.Policy)+len(" (baseline)"))
	row := func(pt, pol string, cell func(k string) string) {
		var b strings.Builder
		fmt.Fprintf(&b, "%-*s  %-*s", pw, pt, nw, pol)
		for _, k := range SweepMetricKeys {
			fmt.Fprintf(&b, "  %-22s", cell(k))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	row("point", "policy", metricLabel)
	for _, c := range cs {
		pt := strings.Join(c.Point, ",")
		row(pt, c.Baseline.Policy+" (baseline)", func(k string) string { return fmtMetric(k, c.Baseline.Metrics[k], false) })
		for _, r := range c.Results {
			row(pt, r.Policy, func(k string) string {
				d := "-"
				if c.Baseline.Metrics[k] != 0 {
					d = fmt.Sprintf("%+.1f%%", r.DeltaPct[k])
				} else if r.Delta[k] != 0 {
					d = fmtMetric(k, r.Delta[k], true)
				}
				if r.Verdict[k] != VerdictNone {
					d += "*"
				}
				return fmtMetric(k, r.Metrics[k], false) + " (" + d + ")"
			})
		}
	}
	return nil
}

// WriteSweepCSV writes the sweep as CSV: a point column, then the
// comparison's columns (CSVHeader), one row per point × policy × metric.
func WriteSweepCSV(w io.Writer, cs []*PolicyComparison) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append([]string{"point"}, CSVHeader...)); err != nil {
		return err
	}
	for _, c := range cs {
		pt := strings.Join(c.Point, ",")
		for _, r := range c.CSVRows() {
			if err := cw.Write(append([]string{pt}, r...)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
