package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/report"
	"github.com/schedreplay/replay/whatif"
)

// whatifCommand is `replay whatif`: extract the workload a trace shows,
// replay it through the scheduler model under a load-balancer policy, and
// (with --validate) compare the simulated schedule with the observed one.
// The work is whatif.Extract / whatif.Replay / whatif.Compare; this wires
// flags, input, topology and output.
func whatifCommand() *cli.Command {
	return &cli.Command{
		Name:      "whatif",
		ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
		Usage:     "replay a trace's workload through a model of the Linux scheduler under a load-balancer policy",
		Description: "The input is a trace/timeline (its workload is extracted) or a workload file written by --save-workload.\n" +
			"With several --policy values (or --baseline, or --runs), each policy and the baseline replay the workload with the same\n" +
			"--runs seeds and each metric's delta against the baseline is reported with a 95% paired t interval over the seeds.\n" +
			"--validate replays under the policy matching the trace's kernel and compares simulated with observed\n" +
			"(wakeup latency percentiles, idle, idle while runnable, migrations, involuntary switches, makespan, KS distance).\n" +
			"Same input, policy and seed give byte-identical output. What is modelled: docs/whatif.md.",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "load-balancer policy (default: the one matching the kernel); repeat (or comma-separate) to compare policies against --baseline; POLICY~ID / POLICY+ID names one with a switchable commit reverted / applied (so --validate --policy v6.1~33cf66d88306 validates it); known: " + fmt.Sprint(whatif.PolicyNames())},
			&cli.StringFlag{Name: "baseline", Usage: "policy the others are compared with (default: the one matching the trace's kernel); implies a comparison"},
			&cli.IntFlag{Name: "runs", Aliases: []string{"seeds"}, Value: 10, Usage: "comparison: replays per policy, with seeds derived from --seed (same seeds for every policy)"},
			&cli.StringFlag{Name: "numa-rule", Usage: "replace the policies' NUMA imbalance allowance: " + strings.Join(whatif.NumaRuleNames(), ", ")},
			&cli.StringSliceFlag{Name: "revert", Usage: "take an upstream change out of each --policy (not the baseline); implies a comparison: " + commitIDs()},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "comparison progress on stderr: auto (when a terminal), always, never"},
			&cli.BoolFlag{Name: "list-policies", Usage: "list the policies (name, kernels and commits, switchable commits, NUMA rule) and exit; --format json"},
			&cli.StringSliceFlag{Name: "apply", Usage: "add an upstream change to each --policy (not the baseline); implies a comparison"},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "the machine, when the trace has no topology or to replay on another: " + model.SpecUsage()},
			&cli.StringFlag{Name: "kernel", Usage: "kernel release whose domain rules and policy apply (default: the trace's)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the replay's noise (idle-exit and resched delays drawn from the trace's own)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the simulated schedule as a timeline (Arrow) to this file; in a comparison a directory receiving <policy>.arrow for the baseline and each policy (first seed)"},
			&cli.StringFlag{Name: "save-workload", Usage: "write the extracted workload (tasks, activations, wake edges) as Arrow to this file"},
			&cli.BoolFlag{Name: "validate", Usage: "compare the simulated schedule with the observed one (in a comparison: the baseline's first seed, JSON key fidelity)"},
			&cli.IntFlag{Name: "worst", Usage: "with --validate: also list the trace's and the replay's N longest wakeups with their context, as replay latency --by wakeup does (table, and JSON key worst)"},
			&cli.GenericFlag{Name: "spread", Value: &repeated{}, Usage: "with --validate: another recording of the same workload on the same machine and kernel (repeatable); the report adds the range each goal's quantity spans over the recordings, whether the replay lies in it, and how many ordered pairs of recordings meet the goal against each other (table and JSON key spread)"},
			&cli.StringFlag{Name: "work", Value: "auto", Usage: "a task's work: fixed (its recorded CPU time, however late it runs), until-exit (bounded by its recorded exit time, for workloads that stop at a wall-clock timeout such as stress-ng --timeout: a task still running then exits, its remaining work cut; only exits after the timeout the command line gives fired, so a child that exited on its own keeps its work), or auto: until-exit when the trace's recorded command line runs such a program (stress-ng -t, schbench, cyclictest -D, timeout), else fixed"},
			&cli.BoolFlag{Name: "paired-wakeups", Usage: "a task's wakeup starts only the activation the trace paired it with (the replay before round 19); by default it starts the wakee's next activation that waits for a task's wakeup, whoever sends it (FIDELITY.md round 19)"},
			&cli.BoolFlag{Name: "full-window", Usage: "write and measure the whole replay; by default its output ends where the trace's recording did: once perf, woken by its command's exit, has run its last activation and the command's process tree has finished (the count of events after that is in the replay statistics; FIDELITY.md round 27)"},
			&cli.BoolFlag{Name: "reap-any-child", Usage: "a parent that waits for any child (inferred: its child-exit wakeups in the trace are not in fork order, as hackbench's) is woken by whichever child exits first, not by the one the trace paired with each wakeup (opt-in; see FIDELITY.md round 10)"},
			&cli.StringFlag{Name: "arrivals", Value: "relative", Usage: "interrupt/timer wakeups: relative (recorded sleep after the task blocks) or absolute (recorded time); the recording perf's own are at their recorded times either way"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table, json or csv (a comparison: one row per policy and metric)"},
			&cli.StringFlag{Name: "plot", Usage: "also write the wakeup-latency CDFs (simulated; observed with --validate; baseline and each policy, first seed, in a comparison) to this .svg or .png file"},
			&cli.GenericFlag{Name: "affinity", Value: &repeated{}, Usage: "CPU affinity, which traces do not record (repeatable): WHO=CPUS restricts the tasks WHO names (command: the recorded command's process tree; a thread id; or a command name) to CPUS (e.g. 0-3,8), as taskset would; by default a command recorded under taskset or numactl (perf's command line) gives its process tree that mask; off: not (a workload file keeps the masks it was saved with unless --affinity is given)"},
			&cli.GenericFlag{Name: "set", Value: &repeated{}, Usage: "set a scheduler parameter (repeatable), for the baseline and every policy alike: " + whatif.ParamUsage()},
			&cli.GenericFlag{Name: "sweep", Value: &repeated{}, Usage: "run the comparison at each value (repeat for a grid): key=v1,v2,... with the --set keys; one row per point and policy; implies a comparison"},
			&cli.IntFlag{Name: "windows", Value: whatif.DefaultWindows, Usage: "comparison: also a bootstrap over this many time windows of the trace for the wakeup p95/p99 deltas (ci95_windows; 0: off)"},
			&cli.IntFlag{Name: "window-resamples", Value: whatif.DefaultWindowResamples, Usage: "comparison: bootstrap resamples of the time windows (fixed RNG seed)"},
			&cli.StringFlag{Name: "runqueue", Usage: "per-CPU discipline, overriding the policy's: cfs (<= v6.5) or eevdf (v6.6+)"},
		},
		Action: runWhatif,
	}
}

func runWhatif(c *cli.Context) error {
	in, err := inputPath(c, "whatif")
	if err != nil {
		return err
	}
	if p := c.String("plot"); p != "" {
		if err := report.CheckPlotPath(p); err != nil {
			return usagef("%v", err)
		}
	}
	format := c.String("format")
	if format != "table" && format != "json" && format != "csv" {
		return usagef("--format %q: want table, json or csv", format)
	}
	if c.Bool("list-policies") {
		if format == "csv" {
			return usagef("--list-policies: --format table or json")
		}
		return listPolicies(c.App.Writer, format)
	}
	arr, err := whatif.ParseArrivals(c.String("arrivals"))
	if err != nil {
		return usagef("%v", err)
	}
	work := c.String("work")
	switch work {
	case "", "auto", "fixed", "until-exit":
	default:
		return usagef("--work %q: want auto, fixed or until-exit", work)
	}
	settings, err := parseSettings(repeatedValues(c, "set"))
	if err != nil {
		return err
	}
	var axes []whatif.SweepAxis
	for _, sw := range repeatedValues(c, "sweep") {
		a, err := whatif.ParseSweepAxis(sw)
		if err != nil {
			return usagef("--sweep %v", err)
		}
		for _, b := range axes {
			if b.Key == a.Key {
				return usagef("--sweep %s given twice", a.Key)
			}
		}
		axes = append(axes, a)
	}
	if len(axes) > 0 && c.String("plot") != "" {
		return usagef("--sweep does not take --plot (compare one point with --set)")
	}
	spec := c.String("topology")
	spreadFiles := repeatedValues(c, "spread")
	if len(spreadFiles) > 0 && !c.Bool("validate") {
		return usagef("--spread goes with --validate (it scores the trace's own recordings against each other)")
	}
	if len(spreadFiles) > 0 && format == "csv" {
		return usagef("--spread reports in the table or JSON (--format table|json), not CSV")
	}
	worst := c.Int("worst")
	switch {
	case !c.IsSet("worst"):
	case !c.Bool("validate"):
		return usagef("--worst goes with --validate (it lists the trace's longest wakeups beside the replay's)")
	case worst < 1 || worst > 100000:
		return usagef("--worst %d: want 1 to 100000", worst)
	case format == "csv":
		return usagef("--worst reports in the table or JSON (--format table|json), not CSV")
	}
	traceRelease := ""
	var (
		w      *whatif.Workload
		obs    *whatif.Metrics
		topo   *model.Topology
		kernel = c.String("kernel")
	)
	if whatif.IsWorkloadFile(in) {
		if c.Bool("validate") {
			return usagef("--validate needs the trace (a workload file has no observed schedule)")
		}
		if w, err = whatif.LoadWorkload(in); err != nil {
			return err
		}
		if topo, err = model.Resolve(spec, w.Topology); err != nil {
			return err
		}
		if kernel == "" {
			kernel = w.Kernel
		}
	} else {
		r, err := openInput(in, c.App.ErrWriter)
		if err != nil {
			return err
		}
		defer r.Close()
		meta := r.Meta()
		if topo, err = model.Resolve(spec, meta.Topology); err != nil {
			return err
		}
		traceRelease = meta.Source.OSRelease
		if kernel == "" {
			kernel = meta.Source.OSRelease
		}
		if c.Bool("validate") {
			w, obs, err = whatif.ExtractAndMeasureWorst(r, topo, kernel, worst)
		} else {
			w, err = whatif.ExtractWith(r, whatif.ExtractOptions{Topology: topo})
		}
		if err != nil {
			return err
		}
		if w.NoWakeContext {
			fmt.Fprintf(c.App.ErrWriter, "replay: %s records no wakeup's context (no common_flags: perf script's text, trace-cmd report's without its latency columns): a wakeup raised in an interrupt (a timer's, an IPI's) is taken for the task it interrupted, a wake edge of that task's work where the kernel's was an arrival; the perf.data or trace.dat it came from carries the flags\n", in)
		}
	}
	if err := applyAffinity(c, w, topo, whatif.IsWorkloadFile(in)); err != nil {
		return err
	}
	if topo != nil && topo.CapacitiesDiffer() {
		fmt.Fprintf(c.App.ErrWriter, "replay: the machine's CPUs differ in capacity; the model scales demand by it, sends a wakee that does not fit to the slow path (wake_cap, v4.10-v5.7) or takes idle CPUs it fits first (select_idle_capacity, v5.10 on), places by energy where the topology carries an Energy Model (EAS, v5.0 on, or --set eas=on) and moves misfit tasks up (v4.20 on), but runs every CPU at its top frequency and has none of Android's EAS variants, so its placements depart where the kernel's used those\n")
	}
	numaRule := -1
	if r := c.String("numa-rule"); r != "" {
		nr, ok := whatif.ParseNumaRule(r)
		if !ok {
			return usagef("--numa-rule %q: want one of %s", r, strings.Join(whatif.NumaRuleNames(), ", "))
		}
		numaRule = int(nr)
	}
	revert, apply := c.StringSlice("revert"), c.StringSlice("apply")
	lookupBase := func(name string) (whatif.Policy, error) {
		var p whatif.Policy
		var err error
		if name == "" {
			if p, err = whatif.PolicyForKernel(kernel); err != nil {
				return nil, err
			}
		} else if p, err = whatif.LookupPolicy(name); err != nil {
			return nil, usagef("%v", err)
		}
		if numaRule >= 0 {
			q, ok := whatif.WithNumaRule(p, whatif.NumaRule(numaRule))
			if !ok {
				return nil, usagef("--numa-rule: policy %s has no NUMA allowance knob", p.Name())
			}
			p = q
		}
		return p, nil
	}
	lookup := func(name string) (whatif.Policy, error) {
		p, err := lookupBase(name)
		if err != nil {
			return nil, err
		}
		if p, err = whatif.WithCommits(p, revert, apply); err != nil {
			return nil, usagef("%v", err)
		}
		return p, nil
	}
	var names []string
	for _, n := range c.StringSlice("policy") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	if len(names) > 1 || c.IsSet("baseline") || c.IsSet("runs") || c.IsSet("seeds") || len(revert) > 0 || len(apply) > 0 || len(axes) > 0 {
		if len(spreadFiles) > 0 {
			return usagef("--spread goes with the --validate of a single replay, not a comparison")
		}
		if worst > 0 {
			return usagef("--worst goes with the --validate of a single replay, not a comparison")
		}
		return runCompare(c, w, obs, kernel, topo, arr, settings, axes, names, lookupBase, lookup, format)
	}
	name := ""
	if len(names) == 1 {
		name = names[0]
	}
	pol, err := lookup(name)
	if err != nil {
		return err
	}
	// The other recordings are measured before the replay, so that a bad
	// one fails at once.
	var spread []*whatif.Metrics
	for _, p := range spreadFiles {
		m, err := measureRecording(p, spec, topo, kernel, traceRelease, c.App.ErrWriter)
		if err != nil {
			return err
		}
		spread = append(spread, m)
	}
	if p := c.String("save-workload"); p != "" {
		if err := whatif.SaveWorkload(p, w); err != nil {
			return err
		}
		nt, na, ne, _, _ := w.Stats()
		fmt.Fprintf(c.App.ErrWriter, "replay: wrote the workload (%d tasks, %d activations, %d wake edges) to %s\n", nt, na, ne, p)
	}
	cfg := whatif.DefaultConfig(pol)
	cfg.Seed, cfg.Arrivals, cfg.Topology, cfg.Kernel = c.Uint64("seed"), arr, topo, kernel
	cfg.Worst = worst
	untilExit, workNote := workMode(c, w)
	cfg.SetWork(w, untilExit)
	cfg.ReapAnyChild = c.Bool("reap-any-child")
	cfg.FullWindow = c.Bool("full-window")
	cfg.PairedWakeups = c.Bool("paired-wakeups")
	for _, st := range settings {
		_ = st.Apply(&cfg) // checked by parseSettings
	}
	switch rq := c.String("runqueue"); rq {
	case "", "cfs", "eevdf":
		cfg.RunQueue = rq
	default:
		return usagef("--runqueue %q: want cfs or eevdf", rq)
	}
	var res *whatif.Result
	if p := c.String("output"); p != "" {
		if res, err = whatif.ReplayToFile(p, w, cfg); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "replay: wrote the simulated schedule (%d scheduler events) to %s\n", res.Stats.Events, p)
	} else if res, err = whatif.Replay(w, cfg, nil); err != nil {
		return err
	}
	if p := c.String("plot"); p != "" {
		series := []report.Series{{Name: pol.Name() + " (simulated)", Latencies: res.Metrics.Latencies()}}
		if obs != nil {
			series = append([]report.Series{{Name: "observed", Latencies: obs.Latencies()}}, series...)
		}
		if err := report.WriteCDFPlot(p, series...); err != nil {
			return err
		}
	}
	out := c.App.Writer
	if obs != nil {
		f := whatif.Compare(pol.Name(), obs, res.Metrics, res.Stats)
		traceNotes(f, w, workNote, cfg.SwitchCharge && cfg.IdleWake)
		if len(spread) > 0 {
			f.Spread = whatif.NewSpread(append([]*whatif.Metrics{obs}, spread...), res.Metrics)
		}
		if format == "json" {
			return writeJSON(out, map[string]any{"fidelity": f})
		}
		if format == "csv" {
			return writeFidelityCSV(out, f)
		}
		return f.WriteTable(out)
	}
	if format == "json" {
		return writeJSON(out, map[string]any{"policy": pol.Name(), "metrics": res.Metrics, "replay_stats": res.Stats})
	}
	if format == "csv" {
		return writeMetricsCSV(out, pol.Name(), res.Metrics)
	}
	return writeWhatifTable(out, pol.Name(), res)
}

// measureRecording measures the observed schedule of another recording
// of the validated trace's workload (--spread), with the trace's machine
// and kernel rules. A recording of another kernel release or CPU count
// is refused: its spread would not be the kernel's own.
func measureRecording(path, spec string, topo *model.Topology, kernel, release string, warn io.Writer) (*whatif.Metrics, error) {
	r, err := openInput(path, warn)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	meta := r.Meta()
	if rel := meta.Source.OSRelease; rel != "" && release != "" && rel != release {
		return nil, usagef("--spread %s: recorded on kernel %s, the trace on %s", path, rel, release)
	}
	t, err := model.Resolve(spec, meta.Topology)
	if err != nil {
		return nil, err
	}
	if topo != nil && t != nil && t.NrCPUs != topo.NrCPUs {
		return nil, usagef("--spread %s: %d CPUs, the trace %d", path, t.NrCPUs, topo.NrCPUs)
	}
	_, m, err := whatif.ExtractAndMeasure(r, topo, kernel)
	return m, err
}

// workMode resolves --work for workload w: whether tasks stop at their
// recorded exit time, and a note saying which mode and why. The note goes
// to stderr whenever auto picked until-exit, so a replay's work model is
// never a surprise.
func workMode(c *cli.Context, w *whatif.Workload) (untilExit bool, note string) {
	switch c.String("work") {
	case "fixed":
		return false, "fixed"
	case "until-exit":
		return true, "until-exit"
	}
	why, _, ok := whatif.TimeBounded(w.Cmdline)
	note = whatif.AutoWorkNote(ok, why)
	if !ok {
		return false, note
	}
	fmt.Fprintf(c.App.ErrWriter, "replay: work %s; --work fixed replays recorded CPU time instead\n", note)
	return true, note
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// csvMetricKeys are the single replay's CSV rows: the compared metrics,
// then the CPU time and the wakeup count they come from.
var csvMetricKeys = append(append([]string{}, whatif.CompareMetricKeys...), "cpu_time_ns", "wakeup_count")

func metricCSVValue(m *whatif.Metrics, k string) string {
	if k == "wakeup_count" {
		return strconv.FormatInt(m.WakeupCount, 10)
	}
	return strconv.FormatInt(whatif.MetricValue(m, k), 10)
}

// writeMetricsCSV is a single replay as CSV (RFC 4180): policy, metric,
// value, one row per metric.
func writeMetricsCSV(w io.Writer, policy string, m *whatif.Metrics) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"policy", "metric", "value"})
	for _, k := range csvMetricKeys {
		_ = cw.Write([]string{policy, k, metricCSVValue(m, k)})
	}
	cw.Flush()
	return cw.Error()
}

// applyAffinity sets the tasks' CPU masks from the recorded command line
// and --affinity (whatif.ApplyAffinity) and says so on stderr. A workload
// file keeps the masks it was saved with unless --affinity is given.
func applyAffinity(c *cli.Context, w *whatif.Workload, topo *model.Topology, workloadFile bool) error {
	specs := repeatedValues(c, "affinity")
	if workloadFile && len(specs) == 0 {
		return nil
	}
	infer := true
	var rules []whatif.AffinityRule
	for _, s := range specs {
		if s == "off" {
			infer = false
			continue
		}
		r, err := whatif.ParseAffinityRule(s)
		if err != nil {
			return usagef("%v", err)
		}
		rules = append(rules, r)
	}
	notes, err := whatif.ApplyAffinity(w, topo, rules, infer)
	if err != nil {
		return err
	}
	// Said on stderr whatever the report: a comparison's table has no
	// trace notes, and a mask changes every replay.
	for _, n := range notes {
		fmt.Fprintf(c.App.ErrWriter, "replay: %s\n", n)
	}
	return nil
}

// traceNotes adds to a fidelity report what the workload says about the
// trace itself: how its work was bounded, the switches and wake flags
// extraction had to infer, and the host stalls it keeps in the tasks'
// demand.
// charged: the replay moved the switch charge (Config.SwitchCharge with
// the machine's noise), so its pools are reported.
func traceNotes(f *whatif.Fidelity, w *whatif.Workload, workNote string, charged bool) {
	f.Affinity = w.AffinityNotes
	f.Work, f.LostSwitchIns, f.LostSwitchOuts, f.DisplacedWoken = workNote, w.LostSwitchIns, w.LostSwitchOuts, w.DisplacedWoken
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.Raced {
			f.RacedWakeups++
		}
		if e.EnqueueAfterStall {
			f.EnqueueAfterStall++
		}
		if e.Charged {
			f.ChargedWakeups++
		}
		if e.NoPreemptNS > 0 {
			f.NoPreemptWakeups++
			f.NoPreemptNS += e.NoPreemptNS
		}
		if e.Kind == whatif.EdgeWake {
			f.Wakeups++
			if e.Sync {
				f.SyncWakeups++
			}
		}
	}
	f.BalancePulls = len(w.BalancePulls)
	f.IRQCurrent = len(w.IRQCurrent)
	f.IRQElsewhere = w.IRQElsewhereTotal()
	f.HostStalls, f.HostStallNS = w.HostStallTotal()
	f.IRQWakeStall = w.IRQWakeStallSummary()
	if charged {
		f.SwitchCharge = w.SwitchChargeSummary()
	}
	_, _, _, _, f.DemandNS = w.Stats()
}

// writeFidelityCSV is --validate as CSV: observed, simulated and the
// relative error per metric, and on the rows a goal judges (the latency
// percentiles, idle_ns) the goal's value, limit and verdict: met, missed
// or not_compared (whatif.Goal).
func writeFidelityCSV(w io.Writer, f *whatif.Fidelity) error {
	goals := map[string]whatif.Goal{}
	for _, g := range f.Goals {
		row := g.Metric
		if row == whatif.IdleGoalMetric {
			row = "idle_ns"
		}
		goals[row] = g
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"policy", "metric", "observed", "simulated", "rel_error", "goal_value", "goal_limit", "goal"})
	for _, k := range csvMetricKeys {
		re := ""
		if v, ok := f.RelError[k]; ok {
			re = num(v)
		}
		gv, gl, verdict := "", "", ""
		if g, ok := goals[k]; ok {
			gv, gl, verdict = num(g.Value), num(g.Limit), "missed"
			switch {
			case g.NotCompared:
				verdict = "not_compared"
			case g.Met:
				verdict = "met"
			}
		}
		_ = cw.Write([]string{f.Policy, k, metricCSVValue(f.Observed, k), metricCSVValue(f.Simulated, k), re, gv, gl, verdict})
	}
	_ = cw.Write([]string{f.Policy, "ks", "", "", num(f.KS), "", "", ""})
	cw.Flush()
	return cw.Error()
}

func writeWhatifTable(w io.Writer, policy string, res *whatif.Result) error {
	m := res.Metrics
	ms := func(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }
	fmt.Fprintf(w, "simulated under policy %s\n", policy)
	fmt.Fprintf(w, "wakeup latency   p50 %s  p95 %s  p99 %s  p99.9 %s  max %s  (%d wakeups)\n",
		ms(m.WakeupP50NS), ms(m.WakeupP95NS), ms(m.WakeupP99NS), ms(m.WakeupP999NS), ms(m.WakeupMaxNS), m.WakeupCount)
	fmt.Fprintf(w, "idle             %s of %s CPU time\n", ms(m.IdleNS), ms(m.IdleNS+m.CPUTimeNS))
	fmt.Fprintf(w, "idle while runnable %s", ms(m.IdleWhileRunnableNS))
	printLevels(w, m.IdleWhileRunnableByLevel, ms)
	fmt.Fprintf(w, "migrations       %d", m.Migrations)
	printLevels(w, m.MigrationsByLevel, func(n int64) string { return fmt.Sprint(n) })
	fmt.Fprintf(w, "involuntary switches %d, makespan %s\n", m.InvoluntarySwitches, ms(m.MakespanNS))
	st := res.Stats
	_, err := fmt.Fprintf(w, "migrations by source: wakeup %d, fork %d, periodic %d, newidle %d, nohz %d, active %d\n",
		st.MigrationsWakeup, st.MigrationsFork, st.MigrationsPeriodic, st.MigrationsNewidle, st.MigrationsNohz, st.MigrationsActive)
	return err
}

func printLevels(w io.Writer, m map[string]int64, f func(int64) string) {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for i, k := range ks {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(w, "%s%s %s", sep, k, f(m[k]))
	}
	if len(ks) > 0 {
		fmt.Fprint(w, ")")
	}
	fmt.Fprintln(w)
}

// runCompare is `replay whatif --policy A --policy B [--baseline P] [--runs
// N]`: the baseline and each policy replay w with the same N seeds;
// whatif.ComparePolicies computes the deltas and intervals.
func runCompare(c *cli.Context, w *whatif.Workload, obs *whatif.Metrics, kernel string, topo *model.Topology, arr whatif.ArrivalMode, settings []whatif.Setting, axes []whatif.SweepAxis,
	names []string, lookupBase, lookup func(string) (whatif.Policy, error), format string) error {
	base, err := lookupBase(c.String("baseline"))
	if err != nil {
		return err
	}
	var pols []whatif.Policy
	seen := map[string]bool{}
	for _, n := range names {
		p, err := lookup(n)
		if err != nil {
			return err
		}
		if seen[p.Name()] {
			continue
		}
		seen[p.Name()] = true
		pols = append(pols, p)
	}
	if len(pols) == 0 {
		// The baseline against itself, or with --revert/--apply the
		// baseline changed against the baseline.
		p, err := lookup(c.String("baseline"))
		if err != nil {
			return err
		}
		pols = []whatif.Policy{p}
	}
	if c.Int("runs") < 2 {
		return usagef("--runs %d: a comparison needs at least 2", c.Int("runs"))
	}
	cfg := whatif.DefaultConfig(base)
	cfg.Arrivals, cfg.Topology, cfg.Kernel = arr, topo, kernel
	untilExit, workNote := workMode(c, w)
	cfg.SetWork(w, untilExit)
	cfg.ReapAnyChild = c.Bool("reap-any-child")
	cfg.FullWindow = c.Bool("full-window")
	cfg.PairedWakeups = c.Bool("paired-wakeups")
	// --set applies to the baseline and every policy alike.
	for _, st := range settings {
		_ = st.Apply(&cfg)
	}
	switch rq := c.String("runqueue"); rq {
	case "", "cfs", "eevdf":
		cfg.RunQueue = rq
	default:
		return usagef("--runqueue %q: want cfs or eevdf", rq)
	}
	if c.Int("windows") < 0 || c.Int("windows") == 1 || c.Int("window-resamples") < 1 {
		return usagef("--windows %d --window-resamples %d: want 0 (off) or >= 2 windows and >= 1 resample", c.Int("windows"), c.Int("window-resamples"))
	}
	show, err := wantProgress(c.String("progress"))
	if err != nil {
		return err
	}
	pc := whatif.PolicyCompareConfig{Base: cfg, Baseline: base, Policies: pols, Runs: c.Int("runs"), Seed: c.Uint64("seed"), TimelineDir: c.String("output"),
		Windows: c.Int("windows"), WindowResamples: c.Int("window-resamples")}
	if dir := pc.TimelineDir; dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	var bar *progressbar.ProgressBar
	if show {
		bar = progressbar.NewOptions(len(whatif.SweepGrid(axes))*(len(pols)+1)*c.Int("runs"),
			progressbar.OptionSetWriter(c.App.ErrWriter),
			progressbar.OptionSetDescription("replaying"),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
		pc.Progress = func(done, total int) { _ = bar.Set(done) }
	}
	if len(axes) > 0 {
		cmps, err := whatif.Sweep(w, pc, axes)
		if bar != nil {
			_ = bar.Finish()
		}
		if err != nil {
			return err
		}
		for _, cmp := range cmps {
			for _, st := range settings {
				cmp.Settings = append(cmp.Settings, st.String())
			}
			if obs != nil {
				cmp.AddFidelity(obs)
				traceNotes(cmp.Fidelity, w, workNote, cfg.SwitchCharge && cfg.IdleWake)
			}
		}
		if pc.TimelineDir != "" {
			fmt.Fprintf(c.App.ErrWriter, "replay: wrote the first seed's simulated schedules to %s/<point>/<policy>.arrow\n", pc.TimelineDir)
		}
		switch format {
		case "json":
			return writeJSON(c.App.Writer, cmps)
		case "csv":
			return whatif.WriteSweepCSV(c.App.Writer, cmps)
		}
		return whatif.WriteSweepTable(c.App.Writer, cmps)
	}
	cmp, err := whatif.ComparePolicies(w, pc)
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return err
	}
	for _, st := range settings {
		cmp.Settings = append(cmp.Settings, st.String())
	}
	if obs != nil {
		cmp.AddFidelity(obs)
		traceNotes(cmp.Fidelity, w, workNote, cfg.SwitchCharge && cfg.IdleWake)
	}
	if dir := pc.TimelineDir; dir != "" {
		files := whatif.TimelineFiles(dir, base, pols)
		fmt.Fprintf(c.App.ErrWriter, "replay: wrote the first seed's simulated schedules to %s\n", strings.Join(files, ", "))
	}
	if p := c.String("plot"); p != "" {
		series := []report.Series{{Name: cmp.Baseline.Policy + " (baseline)", Latencies: cmp.Baseline.Runs[0].Latencies()}}
		for _, r := range cmp.Results {
			series = append(series, report.Series{Name: r.Policy, Latencies: r.Runs[0].Latencies()})
		}
		if err := report.WriteCDFPlot(p, series...); err != nil {
			return err
		}
	}
	switch format {
	case "json":
		return writeJSON(c.App.Writer, cmp)
	case "csv":
		return cmp.WriteCSV(c.App.Writer)
	}
	return cmp.WriteTable(c.App.Writer)
}

// repeated is a repeatable string flag whose values are kept whole (a
// StringSliceFlag would split --sweep key=v1,v2 at the commas).
type repeated []string

func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
func (r *repeated) String() string     { return strings.Join(*r, " ") }

func repeatedValues(c *cli.Context, name string) []string {
	if r, ok := c.Generic(name).(*repeated); ok && r != nil {
		return *r
	}
	return nil
}

// parseSettings checks every --set key=value (a usage error names the
// valid keys).
func parseSettings(kvs []string) ([]whatif.Setting, error) {
	var out []whatif.Setting
	for _, kv := range kvs {
		st, err := whatif.ParseSetting(kv)
		if err != nil {
			return nil, usagef("--set %v", err)
		}
		out = append(out, st)
	}
	return out, nil
}

func commitIDs() string {
	var ids []string
	for _, ci := range whatif.Commits() {
		ids = append(ids, ci.ID+" ("+ci.Kernel+")")
	}
	return strings.Join(ids, ", ")
}

// listPolicies is `replay whatif --list-policies`.
func listPolicies(w io.Writer, format string) error {
	type row struct {
		Name       string   `json:"name"`
		Kernels    string   `json:"kernels"`
		Switchable []string `json:"switchable_commits"`
		NumaRule   string   `json:"numa_rule,omitempty"`
	}
	var rows []row
	for _, n := range whatif.PolicyNames() {
		p, err := whatif.LookupPolicy(n)
		if err != nil {
			return err
		}
		r := row{Name: n, Kernels: p.Kernels(), Switchable: whatif.PolicyCommits(p)}
		if nr, ok := p.(whatif.NumaRuled); ok {
			r.NumaRule = nr.NumaRule().String()
		} else if n == "v6.1" {
			r.NumaRule = whatif.NumaImbNrDst.String()
		}
		rows = append(rows, r)
	}
	if format == "json" {
		return writeJSON(w, map[string]any{"policies": rows, "commits": whatif.Commits()})
	}
	for _, r := range rows {
		numa := r.NumaRule
		if numa == "" {
			numa = "-"
		}
		fmt.Fprintf(w, "%-17s %s\n%-17s NUMA rule %s; switchable: %s\n", r.Name, r.Kernels, "", numa, strings.Join(r.Switchable, " "))
	}
	return nil
}

// policiesCommand is `replay policies`: the load-balancer policies the
// replay can run, with their kernels, commits and switchable changes.
func policiesCommand() *cli.Command {
	return &cli.Command{
		Name:  "policies",
		Usage: "list the load-balancer policies: name, kernel range and commits, what changes, switchable commits",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
		},
		Action: func(c *cli.Context) error {
			if f := c.String("format"); f != "table" && f != "json" {
				return usagef("--format %q: want table or json", f)
			}
			return listPolicies(c.App.Writer, c.String("format"))
		},
	}
}
