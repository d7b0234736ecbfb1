package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/internal/atomicfile"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/report"
	"github.com/schedreplay/replay/whatif"
)

// reportCommand is `replay report`: one self-contained HTML page with the
// plots people look at in a review. The work is report.Build (measure the
// trace, replay it under the baseline and each policy) and report.Write;
// this wires flags, input, domains and policies.
func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
		Usage:     "write a self-contained HTML report: summary, topology, latency CDFs, per-CPU timeline, domain bars, fidelity and policy deltas",
		Description: "The trace is measured as `replay latency` does and its workload replayed (as `replay whatif`) under the baseline\n" +
			"(default: the policy of the traced kernel) and each --policy; the deltas against the baseline and their 95% confidence\n" +
			"intervals are whatif.ComparePolicies' over --runs seeds. The page needs no network when viewed. See docs/report.md.",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "report.html", Usage: "the HTML file to write"},
			&cli.StringSliceFlag{Name: "policy", Aliases: []string{"p"}, Usage: "a policy to compare with the baseline (repeat, or comma-separate); known: " + fmt.Sprint(whatif.PolicyNames())},
			&cli.StringFlag{Name: "baseline", Usage: "the policy the others are compared with (default: the one matching the kernel)"},
			&cli.IntFlag{Name: "runs", Value: 10, Usage: "replays per policy for the deltas' confidence intervals, with seeds derived from --seed (as whatif)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the replays drawn, and from which the comparison's seeds derive (as whatif)"},
			&cli.StringFlag{Name: "arrivals", Value: "relative", Usage: "interrupt/timer wakeups in the replay: relative or absolute (as whatif)"},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "the machine, when the trace has no topology or to override it: " + model.SpecUsage()},
			&cli.StringFlag{Name: "kernel", Usage: "kernel release whose domain rules and policy apply (default: the trace's)"},
			&cli.StringFlag{Name: "plot", Usage: "also write the wakeup-latency CDF chart alone to this .svg or .png file"},
			&cli.IntFlag{Name: "max-rects", Value: report.DefaultMaxRects, Usage: "the timeline draws at most about this many blocks; beyond, it is downsampled (and says so)"},
		},
		Action: runReport,
	}
}

func runReport(c *cli.Context) error {
	in, err := inputPath(c, "report")
	if err != nil {
		return err
	}
	if len(c.StringSlice("policy")) > 0 && c.Int("runs") < 2 {
		return usagef("--runs %d: a comparison needs at least 2", c.Int("runs"))
	}
	if p := c.String("plot"); p != "" {
		if err := report.CheckPlotPath(p); err != nil {
			return usagef("%v", err)
		}
	}
	arr, err := whatif.ParseArrivals(c.String("arrivals"))
	if err != nil {
		return usagef("%v", err)
	}
	var pols []whatif.Policy
	for _, name := range c.StringSlice("policy") {
		p, err := whatif.LookupPolicy(name)
		if err != nil {
			return usagef("%v", err)
		}
		pols = append(pols, p)
	}
	r, err := openInput(in, c.App.ErrWriter)
	if err != nil {
		return err
	}
	defer r.Close()
	meta := r.Meta()
	kernel := c.String("kernel")
	if kernel == "" {
		kernel = meta.Source.OSRelease
	}
	d, err := buildDomains(meta, c.String("topology"), c.String("kernel"))
	if err != nil {
		return err
	}
	rin := report.Input{Reader: r, Name: in, Domains: d, Kernel: kernel, Policies: pols, Runs: c.Int("runs"), Seed: c.Uint64("seed"), Arrivals: arr, MaxRects: c.Int("max-rects")}
	if d != nil {
		if rin.Topology, err = model.Resolve(c.String("topology"), meta.Topology); err != nil {
			return err
		}
	}
	switch name := c.String("baseline"); {
	case name != "":
		if rin.Baseline, err = whatif.LookupPolicy(name); err != nil {
			return usagef("%v", err)
		}
	default:
		if rin.Baseline, err = whatif.PolicyForKernel(kernel); err != nil {
			if len(pols) > 0 {
				return usagef("no baseline for kernel %q (%v): give --baseline", kernel, err)
			}
			rin.NoSimulation = fmt.Sprintf("no policy models kernel %q (%v)", kernel, err)
		}
	}
	if d == nil && len(pols) > 0 {
		return usagef("--policy needs the machine: the trace has no topology, give --topology")
	}
	data, err := report.Build(rin)
	if err != nil {
		return err
	}
	if p := c.String("plot"); p != "" {
		var series []report.Series
		for _, r := range data.Runs() {
			series = append(series, report.Series{Name: r.Name, Latencies: r.Schedule.Latencies})
		}
		if err := report.WriteCDFPlot(p, series...); err != nil {
			return err
		}
	}
	out := c.String("output")
	f, err := atomicfile.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err = report.Write(bw, data); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Abort()
		return fmt.Errorf("%s: %w", out, err)
	}
	if err := f.Commit(); err != nil {
		return err
	}
	if st, err := os.Stat(out); err == nil {
		fmt.Fprintf(c.App.ErrWriter, "replay: wrote %s (%.1f MB)\n", out, float64(st.Size())/1e6)
	}
	return nil
}
