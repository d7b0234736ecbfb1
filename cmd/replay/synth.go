package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
	"github.com/schedreplay/replay/whatif/synth"
)

// synthCommand is `replay synth WORKLOAD [flags]`: write the workload a
// benchmark of the scheduler discussions generates (schbench, hackbench,
// ebizzy; flags named as the real programs name them) as a workload file
// for `replay whatif -i`, and with --policy replay it at once and print
// what the benchmark itself would report. The work is whatif/synth.
func synthCommand() *cli.Command {
	var subs []*cli.Command
	for _, sp := range synth.Specs() {
		sp := sp
		flags := []cli.Flag{
			&cli.StringFlag{Name: "topology", Usage: "the machine (recorded in the workload; ebizzy -t defaults to 2 × its CPUs): " + model.SpecUsage()},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the benchmark's randomness (same seed, same workload)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "workload file (Arrow) to write, for replay whatif -i"},
			&cli.StringFlag{Name: "policy", Usage: "also replay it under this policy (comma-separated for several) and print the benchmark's report; known: " + fmt.Sprint(whatif.PolicyNames())},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "report format: table or json"},
			&cli.BoolFlag{Name: "paired-wakeups", Usage: "with --policy: a wakeup starts only the activation the workload paired it with (the replay before round 19; see replay whatif --paired-wakeups)"},
			&cli.Int64Flag{Name: "idle-exit-us", Usage: "the machine's idle-exit delay (us) recorded in the workload for the replay to apply to wakeups onto idle CPUs (a trace measures it; default none)"},
		}
		for _, o := range sp.Options {
			if o.Bool {
				flags = append(flags, &cli.BoolFlag{Name: o.Names[0], Aliases: o.Names[1:], Usage: o.Usage})
			} else {
				flags = append(flags, &cli.StringFlag{Name: o.Names[0], Aliases: o.Names[1:], Usage: o.Usage})
			}
		}
		subs = append(subs, &cli.Command{
			Name:   sp.Name,
			Usage:  sp.Usage,
			Flags:  flags,
			Action: func(c *cli.Context) error { return runSynth(c, sp) },
		})
	}
	return &cli.Command{
		Name:  "synth",
		Usage: "generate a benchmark's workload (schbench, hackbench, ebizzy) for replay whatif",
		Description: "replay synth WORKLOAD [flags as the real tool names them] --topology SPEC --seed N -o FILE.arrow\n" +
			"writes the workload the benchmark generates (tasks, activations, wake edges, arrivals), the artifact\n" +
			"replay whatif -i accepts. --policy replays it at once and prints what the benchmark would report\n" +
			"(schbench: worker wakeup latency percentiles; hackbench: time; ebizzy: records/s, cpu-migrations).\n" +
			"How faithful each generator is: docs/synth.md.",
		Subcommands: subs,
	}
}

func runSynth(c *cli.Context, sp synth.Spec) error {
	if c.NArg() > 0 {
		return usagef("synth %s takes no arguments: %v", sp.Name, c.Args().Slice())
	}
	format := c.String("format")
	if format != "table" && format != "json" {
		return usagef("--format %q: want table or json", format)
	}
	g := sp.New()
	for _, o := range sp.Options {
		if !c.IsSet(o.Names[0]) {
			continue
		}
		v := c.String(o.Names[0])
		if o.Bool {
			v = fmt.Sprint(c.Bool(o.Names[0]))
		}
		if err := o.Set(g, v); err != nil {
			return usagef("synth %s: %v", sp.Name, err)
		}
	}
	synth.SetSeed(g, c.Uint64("seed"))
	var topo *model.Topology
	if spec := c.String("topology"); spec != "" {
		var err error
		if topo, err = model.ParseSpec(spec); err != nil {
			return usagef("--topology: %v", err)
		}
	}
	out, pols := c.String("output"), c.String("policy")
	if out == "" && pols == "" {
		return usagef("synth %s: give -o FILE.arrow (and/or --policy NAME to replay it at once)", sp.Name)
	}
	var policies []whatif.Policy
	if pols != "" {
		if topo == nil {
			return usagef("--policy needs --topology")
		}
		for _, name := range synthSplitPolicies(pols) {
			p, err := whatif.LookupPolicy(name)
			if err != nil {
				return usagef("%v", err)
			}
			policies = append(policies, p)
		}
	}
	us := c.Int64("idle-exit-us")
	if us < 0 || us > 1e6 {
		return usagef("--idle-exit-us %d: want 0..1000000", us)
	}
	var idle []int64
	if us > 0 {
		idle = []int64{us * 1000}
	}
	var res *synth.Result
	if len(policies) == 0 {
		// Only the file: stream it, whatever the run length.
		if err := g.Validate(); err != nil {
			return usagef("%v", err)
		}
		var err error
		if res, err = synth.Stream(g, topo, out, synth.StreamOptions{IdleWakeNS: idle}); err != nil {
			return err
		}
	} else {
		var err error
		if res, err = g.Generate(topo); err != nil {
			return usagef("%v", err)
		}
		res.Workload.IdleWakeNS = idle
		if out != "" {
			if err := whatif.SaveWorkload(out, res.Workload); err != nil {
				return err
			}
		}
	}
	if out != "" {
		fmt.Fprintf(c.App.ErrWriter, "replay: wrote the %s workload (%d tasks, %d activations, %d wake edges) to %s\n", res.Command, res.Tasks, res.Activations, res.Edges, out)
	}
	var reps []*synth.Report
	for _, p := range policies {
		cfg := whatif.DefaultConfig(p)
		cfg.Topology, cfg.Seed = topo, c.Uint64("seed")
		cfg.PairedWakeups = c.Bool("paired-wakeups")
		rep, _, err := synth.Run(res, cfg)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	if len(reps) == 0 {
		return nil
	}
	if format == "json" {
		return writeJSON(c.App.Writer, reps)
	}
	for _, r := range reps {
		if err := r.WriteText(c.App.Writer); err != nil {
			return err
		}
	}
	return nil
}

func synthSplitPolicies(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
