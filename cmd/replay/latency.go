package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/report"
)

// latencyCommand is `replay latency`: what the trace (or a simulated
// schedule) shows. The measuring is analysis.Run; this only wires flags,
// input, domains and output.
func latencyCommand() *cli.Command {
	return &cli.Command{
		Name:      "latency",
		ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
		Usage:     "wakeup latency, per-task delays (as perf sched), CPU time, idle while runnable, migrations",
		Description: "wakeup_latency is perf sched timehist's \"sch delay\" (first wakeup to switch-in) over all switch-ins;\n" +
			"tasks are perf sched latency's per-thread delays (--task-delays chooses perf 6.1's or 6.7's definition).\n" +
			"Domain levels come from the trace's topology or --topology. Definitions: docs/latency.md.",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table, json or csv"},
			&cli.StringFlag{Name: "by", Value: analysis.ByTask, Usage: "rows of the table or csv: task, comm (threads merged by name, as perf sched latency), cpu, domain, or wakeup (the --worst longest wakeups: who woke the task from where, what ran on its CPU, what it followed, and the longest idle stretch of another CPU of each domain level during its wait; json adds them as worst_wakeups)"},
			&cli.IntFlag{Name: "worst", Value: 20, Usage: "with --by wakeup: how many of the longest wakeups to list"},
			&cli.StringFlag{Name: "slices", Usage: "also write every run slice (one row per sched_switch, as perf sched timehist) to this Arrow file"},
			&cli.StringFlag{Name: "task-delays", Value: "6.7", Usage: "the perf sched latency whose per-task delays to reproduce: 6.7 and later (counts sched_waking and waits after preemption) or 6.1 (ignores both, as perf 6.1 does)"},
			&cli.StringFlag{Name: "plot", Usage: "also write the wakeup-latency CDF chart to this .svg or .png file"},
			&cli.BoolFlag{Name: "first-switch-in", Usage: "measure each wakeup to its task's first switch-in, as whatif --validate does, where the trace shows the task switched in again with no switch-out between (a lost record, or a CPU's buffer closed first at the recording's end); timehist measures to the later one"},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "the machine, when the trace has no topology or to override it: " + model.SpecUsage()},
			&cli.StringFlag{Name: "kernel", Usage: "kernel release whose domain rules apply (default: the trace's)"},
		},
		Action: func(c *cli.Context) error {
			in, err := inputPath(c, "latency")
			if err != nil {
				return err
			}
			format, by := c.String("format"), c.String("by")
			switch format {
			case "table", "json", "csv":
			default:
				return usagef("--format %q: want table, json or csv", format)
			}
			if !analysis.ValidBy(by) {
				return usagef("--by %q: want task, comm, cpu, domain or wakeup", by)
			}
			opts := analysis.Options{FirstSwitchIn: c.Bool("first-switch-in")}
			if by == analysis.ByWakeup {
				if opts.Worst = c.Int("worst"); opts.Worst < 1 || opts.Worst > 100000 {
					return usagef("--worst %d: want 1 to 100000", opts.Worst)
				}
			}
			switch c.String("task-delays") {
			case "6.1":
				opts.TaskDelays = analysis.PerfLatency61
			case "6.7":
				opts.TaskDelays = analysis.PerfLatency67
			default:
				return usagef("--task-delays %q: want 6.1 or 6.7", c.String("task-delays"))
			}
			if p := c.String("plot"); p != "" {
				if err := report.CheckPlotPath(p); err != nil {
					return usagef("%v", err)
				}
			}
			r, err := openInput(in, c.App.ErrWriter)
			if err != nil {
				return err
			}
			defer r.Close()
			if opts.Levels, err = inputDomains(r.Meta(), c); err != nil {
				return err
			}
			var slices *analysis.SliceFile
			if p := c.String("slices"); p != "" {
				if slices, err = analysis.CreateSliceFile(p); err != nil {
					return err
				}
				opts.Slices = slices
			}
			rep, err := analysis.Run(r, opts)
			if slices != nil {
				if err != nil {
					slices.Abort()
				} else if err = slices.Close(); err == nil {
					fmt.Fprintf(c.App.ErrWriter, "replay: wrote %d run slices to %s\n", rep.Slices, c.String("slices"))
				}
			}
			if err != nil {
				return err
			}
			if p := c.String("plot"); p != "" {
				if err := report.WriteCDFPlot(p, report.Series{Name: "observed", Latencies: rep.WakeupLatencies()}); err != nil {
					return err
				}
			}
			w := c.App.Writer
			switch format {
			case "json":
				return rep.WriteJSON(w, by)
			case "csv":
				return rep.WriteCSV(w, by)
			}
			return rep.WriteTable(w, by)
		},
	}
}
