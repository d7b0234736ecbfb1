package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

//go:embed report.html.tmpl
var pageTemplate string

var page = template.Must(template.New("report").Funcs(template.FuncMap{"dur": fmtDur}).Parse(pageTemplate))

// view is what the template renders: Data turned into display strings
// and pre-rendered SVG. Everything that comes from the trace reaches the
// page through html/template's escaping or template.HTMLEscapeString.
type view struct {
	Title      string
	Summary    []kv
	Topology   string
	CDF        template.HTML
	CDFNote    string
	CDFError   string
	Worst      []worstRow
	Timeline   timelineView
	TLRuns     []string
	IdleBars   template.HTML
	MigrBars   template.HTML
	MigrSource string
	NoSim      string
	Fidelity   *fidelityView
	Deltas     []deltaView
	Runs       int
	Method     string
	Seed       uint64
	Simulated  bool
	HasPolicy  bool
}

type kv struct{ K, V string }

// worstRow is one of the observed longest wakeups.
type worstRow struct {
	Latency, Woken string
	analysis.WorstCells
}

type fidelityView struct {
	Policy string
	Rows   []fidelityRow
	KS     string
	Goals  []goalRow
	// RepeatSwitchIns: the observed side measured that many wakeups to
	// their task's first switch-in where the latency section, as
	// timehist, measures to a later one (whatif.Metrics.RepeatSwitchIns).
	RepeatSwitchIns int64
	// Affinity: where the replay's CPU masks came from
	// (whatif.AffinityNote), one line each.
	Affinity []string
}

type fidelityRow struct{ Metric, Observed, Simulated, RelError string }

type goalRow struct {
	Metric, Limit, Value string
	Met, NotCompared     bool
}

type deltaView struct {
	Policy string
	Rows   []deltaRow
}

type deltaRow struct {
	Metric, Baseline, Policy, Delta, CI, Verdict, Class string
}

// Write renders the report as one self-contained HTML page: inline CSS,
// SVG and script, nothing fetched when it is viewed.
func Write(w io.Writer, d *Data) error {
	v := view{Title: "replay report: " + d.Input, Seed: d.Seed, NoSim: d.NoSimulation, Simulated: d.Baseline != nil, HasPolicy: len(d.Policies) > 0}
	v.Summary = summary(d)
	v.Topology = d.Topology
	runs := d.Runs()

	var series []Series
	for _, r := range runs {
		series = append(series, Series{Name: r.Name, Latencies: r.Schedule.Latencies})
	}
	if svg, err := cdfSVG(series); err != nil {
		v.CDFError = err.Error()
	} else {
		v.CDF = template.HTML(svg)
	}
	v.CDFNote = fmt.Sprintf("Latencies under %s are drawn at %s (a log axis has no zero).", fmtDur(floorNS), fmtDur(floorNS))
	if n, m := int64(len(d.Observed.Schedule.Latencies)), d.Observed.Report.WakeupLatency.Count; n != m {
		v.CDFNote += fmt.Sprintf(" The observed curve has %d of the %d wakeups `replay latency` counts: slices whose window spans lost events are left out.", n, m)
	}

	for i := range d.Observed.Report.Worst {
		w := &d.Observed.Report.Worst[i]
		v.Worst = append(v.Worst, worstRow{fmtDur(w.LatencyNS), fmt.Sprintf("%.6f s", float64(w.WokenNS)/1e9), w.Cells()})
	}

	var lanes []laneRun
	for _, r := range runs {
		lanes = append(lanes, laneRun{Label: shortName(r.Name), S: r.Schedule})
		v.TLRuns = append(v.TLRuns, r.Name)
	}
	v.Timeline = renderTimeline(lanes, d.MaxRects)

	levels := d.Observed.Report.Levels
	var idle, migr []barSeries
	for _, r := range runs {
		idle = append(idle, barSeries{r.Name, perLevel(levels, r.Report.Levels, r.Report.IdleWhileRunnable, 1e6)})
		migr = append(migr, barSeries{r.Name, perLevel(levels, r.Report.Levels, r.Report.Migrations, 1)})
	}
	v.IdleBars = renderBars("Idle while runnable, by domain level", "ms", levels, idle, func(x float64) string { return trimFloat(x, 2) })
	v.MigrBars = renderBars("Migrations, by domain level", "count", levels, migr, func(x float64) string { return trimFloat(x, 0) })
	v.MigrSource = d.Observed.Report.MigrationsSource

	if f := d.Fidelity; f != nil {
		fv := &fidelityView{Policy: f.Policy, KS: fmt.Sprintf("%.4f", f.KS)}
		if f.Observed != nil {
			fv.RepeatSwitchIns = f.Observed.RepeatSwitchIns
		}
		for _, n := range f.Affinity {
			fv.Affinity = append(fv.Affinity, n.String())
		}
		for _, m := range fidelityMetrics {
			fv.Rows = append(fv.Rows, fidelityRow{m.key, fmtMetric(float64(m.get(f.Observed)), m.unit), fmtMetric(float64(m.get(f.Simulated)), m.unit), fmt.Sprintf("%+.1f%%", 100*f.RelError[m.key])})
		}
		for _, g := range f.Goals {
			fv.Goals = append(fv.Goals, goalRow{g.Metric, fmt.Sprintf("%.0f%%", 100*g.Limit), fmt.Sprintf("%.1f%%", 100*g.Value), g.Met, g.NotCompared})
		}
		v.Fidelity = fv
	}
	if c := d.Comparison; c != nil {
		v.Runs, v.Method = c.Runs, c.Method
		for _, res := range c.Results {
			dv := deltaView{Policy: res.Policy}
			for _, k := range whatif.CompareMetricKeys {
				unit := ""
				if strings.HasSuffix(k, "_ns") {
					unit = "ns"
				}
				ci := res.CI95[k]
				cls := ""
				switch res.Verdict[k] {
				case whatif.VerdictBetter:
					cls = "better"
				case whatif.VerdictWorse:
					cls = "worse"
				}
				dv.Rows = append(dv.Rows, deltaRow{k, fmtMetric(c.Baseline.Metrics[k], unit), fmtMetric(res.Metrics[k], unit),
					fmtSigned(res.Delta[k], unit), "[" + fmtSigned(ci[0], unit) + ", " + fmtSigned(ci[1], unit) + "]", res.Verdict[k], cls})
			}
			v.Deltas = append(v.Deltas, dv)
		}
	}
	return page.Execute(w, v)
}

// shortName is a lane label: "obs", "base", or the policy.
func shortName(name string) string {
	switch {
	case name == "observed":
		return "obs"
	case strings.HasPrefix(name, "baseline "):
		return "base"
	}
	return name
}

// perLevel maps values given for levels `have` onto `want` (NaN where a
// level is missing), scaled down by div.
func perLevel(want, have []string, vals []int64, div float64) []float64 {
	out := make([]float64, len(want))
	for i, l := range want {
		out[i] = math.NaN()
		for j, h := range have {
			if h == l && j < len(vals) {
				out[i] = float64(vals[j]) / div
			}
		}
	}
	return out
}

func summary(d *Data) []kv {
	var s []kv
	add := func(k, f string, a ...any) { s = append(s, kv{k, fmt.Sprintf(f, a...)}) }
	add("input", "%s", d.Input)
	if m := d.Meta; m != nil {
		src := m.Source
		add("source", "%s", src.Format)
		for _, x := range []kv{{"host", src.Hostname}, {"kernel", src.OSRelease}, {"arch", src.Arch}, {"perf", src.PerfVersion}, {"cpu", src.CPUDesc}} {
			if x.V != "" {
				add(x.K, "%s", x.V)
			}
		}
		if len(src.Cmdline) > 0 {
			add("cmdline", "%s", strings.Join(src.Cmdline, " "))
		}
	}
	r := d.Observed.Report
	add("time", "%.6f .. %.6f s (%s)", float64(r.StartNS)/1e9, float64(r.EndNS)/1e9, fmtDur(r.EndNS-r.StartNS))
	add("events", "%d", d.Events)
	cpus := make([]int, 0, len(r.CPUs))
	var busy, idle int64
	for _, c := range r.CPUs {
		cpus = append(cpus, c.CPU)
		busy += c.BusyNS
		idle += c.IdleNS
	}
	sort.Ints(cpus)
	add("CPUs", "%s (%d); busy %s, idle %s", model.FormatCPUList(cpus), len(cpus), fmtDur(busy), fmtDur(idle))
	add("tasks", "%d", len(r.Tasks))
	add("run slices", "%d", r.Slices)
	wl := r.WakeupLatency
	add("wakeup latency", "%d wakeups; p50 %s, p95 %s, p99 %s, p99.9 %s, max %s", wl.Count, fmtDur(wl.P50NS), fmtDur(wl.P95NS), fmtDur(wl.P99NS), fmtDur(wl.P999NS), fmtDur(wl.MaxNS))
	add("idle while runnable", "%s", fmtDur(r.IdleWhileRunnableTotal))
	add("migrations", "%d (from %s)", r.MigrationsTotal, r.MigrationsSource)
	add("involuntary switches", "%d", r.InvoluntarySwitches)
	add("lost events", "%d (in %d gaps)", r.LostEvents, r.LostRows)
	if len(r.Dropped) > 0 {
		add("not read", "%s (the trace's reader could not use these; the report covers the rest)", timeline.DroppedText(r.Dropped))
	}
	return s
}

func fmtMetric(x float64, unit string) string {
	if unit == "ns" {
		return fmtDur(int64(math.Round(x)))
	}
	return trimFloat(x, 1)
}

func fmtSigned(x float64, unit string) string {
	s := fmtMetric(x, unit)
	if x >= 0 {
		s = "+" + s
	}
	return s
}

func trimFloat(x float64, prec int) string {
	s := fmt.Sprintf("%.*f", prec, x)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
