package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

// whatifCommand is `replay whatif`: extract the workload a trace shows,
// replay it through the scheduler model under a load-balancer policy, and
// (with --validate) compare the simulated schedule with the observed one.
// The work is whatif.Extract / whatif.Replay / whatif.Compare; this wires
// flags, input, topology and output.
func whatifCommand() *cli.Command {
	return &cli.Command{
		Name:  "whatif",
		Usage: "replay a trace's workload through a model of the Linux scheduler under a load-balancer policy",
		Description: "The input is a trace/timeline (its workload is extracted) or a workload file written by --save-workload.\n" +
			"--validate replays under the policy matching the trace's kernel and compares simulated with observed\n" +
			"(wakeup latency percentiles, idle, idle while runnable, migrations, involuntary switches, makespan, KS distance).\n" +
			"Same input, policy and seed give byte-identical output. What is modelled: whatif/README.md.",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "policy", Aliases: []string{"p"}, Usage: "load-balancer policy (default: the one matching the kernel); known: " + fmt.Sprint(whatif.PolicyNames())},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "the machine, when the trace has no topology or to replay on another: " + model.SpecUsage()},
			&cli.StringFlag{Name: "kernel", Usage: "kernel release whose domain rules and policy apply (default: the trace's)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the replay's noise (idle-exit and resched delays drawn from the trace's own)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the simulated schedule as a timeline (Arrow) to this file"},
			&cli.StringFlag{Name: "save-workload", Usage: "write the extracted workload (tasks, activations, wake edges) as Arrow to this file"},
			&cli.BoolFlag{Name: "validate", Usage: "compare the simulated schedule with the observed one"},
			&cli.StringFlag{Name: "arrivals", Value: "relative", Usage: "interrupt/timer wakeups: relative (recorded sleep after the task blocks) or absolute (recorded time)"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
			&cli.StringFlag{Name: "runqueue", Usage: "per-CPU discipline, overriding the policy's: cfs (<= v6.5) or eevdf (v6.6+)"},
		},
		Action: runWhatif,
	}
}

func runWhatif(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("whatif takes no arguments (use -i FILE)")
	}
	format := c.String("format")
	if format != "table" && format != "json" {
		return usagef("--format %q: want table or json", format)
	}
	arr, err := whatif.ParseArrivals(c.String("arrivals"))
	if err != nil {
		return usagef("%v", err)
	}
	in := c.String("input")
	spec := c.String("topology")
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
		r, err := openInput(in)
		if err != nil {
			return err
		}
		defer r.Close()
		meta := r.Meta()
		if topo, err = model.Resolve(spec, meta.Topology); err != nil {
			return err
		}
		if kernel == "" {
			kernel = meta.Source.OSRelease
		}
		if c.Bool("validate") {
			w, obs, err = whatif.ExtractAndMeasure(r, topo, kernel)
		} else {
			w, err = whatif.Extract(r)
		}
		if err != nil {
			return err
		}
	}
	var pol whatif.Policy
	if name := c.String("policy"); name != "" {
		if pol, err = whatif.LookupPolicy(name); err != nil {
			return usagef("%v", err)
		}
	} else if pol, err = whatif.PolicyForKernel(kernel); err != nil {
		return err
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
	out := c.App.Writer
	if obs != nil {
		f := whatif.Compare(pol.Name(), obs, res.Metrics, res.Stats)
		if format == "json" {
			return writeJSON(out, map[string]any{"fidelity": f})
		}
		return f.WriteTable(out)
	}
	if format == "json" {
		return writeJSON(out, map[string]any{"policy": pol.Name(), "metrics": res.Metrics, "replay_stats": res.Stats})
	}
	return writeWhatifTable(out, pol.Name(), res)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
