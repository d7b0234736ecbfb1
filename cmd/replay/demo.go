package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/fixtures"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
	"github.com/schedreplay/replay/whatif/synth"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run replay on a bundled real trace (schbench on a 2-socket SMT NUMA machine, Linux 6.1)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "keep the timeline file here (default: a temporary file)"},
		},
		Action: func(c *cli.Context) error {
			dir, err := os.MkdirTemp("", "replay-demo-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			trace := filepath.Join(dir, "perf.data")
			if err := os.WriteFile(trace, fixtures.DemoTrace, 0o644); err != nil {
				return err
			}
			out := c.String("output")
			if out == "" {
				out = filepath.Join(dir, "replay.arrow")
			}
			w := c.App.Writer
			fmt.Fprintf(w, "$ replay ingest %s -o %s\n", fixtures.DemoTraceName, out)
			meta, err := runIngest(trace, out, timeline.WriterOptions{}, "", false)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "\n$ replay info -i %s\n", out)
			writeInfoText(w, out, meta)

			d, err := buildDomains(meta, "", "")
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "\n$ replay topology -i %s -f tree\n", out)
			if err := d.WriteTree(w); err != nil {
				return err
			}

			fmt.Fprintf(w, "\n$ replay latency -i %s --by comm\n", out)
			r, err := openInput(out, c.App.ErrWriter)
			if err != nil {
				return err
			}
			defer r.Close()
			rep, err := analysis.Run(r, analysis.Options{Levels: analysis.FromDomains(d), TaskDelays: analysis.PerfLatency67})
			if err != nil {
				return err
			}
			if err := rep.WriteTable(w, analysis.ByComm); err != nil {
				return err
			}

			fmt.Fprintf(w, "\n$ replay whatif -i %s --validate\n", out)
			wl, cfg, err := demoValidate(w, out, meta)
			if err != nil {
				return err
			}

			fmt.Fprintf(w, "\n$ replay whatif -i %s --policy rework --policy llc-nr-running --runs 4\n", out)
			if err := demoCompare(w, wl, cfg, []string{"rework", "llc-nr-running"}); err != nil {
				return err
			}

			exp1 := []string{"schbench", "-m", "2", "-t", "4", "-s", "10000", "-c", "1000000", "-r", "10"}
			fmt.Fprintf(w, "\n$ replay synth %s --topology hikey --seed 1 --policy rework,llc-nr-running   # EXPERIMENTS.md 1\n", strings.Join(exp1, " "))
			return demoSynth(w, exp1, "hikey", []string{"rework", "llc-nr-running"})
		},
	}
}

// demoValidate replays the trace under the policy of its kernel and prints
// how close the simulation comes to what the trace shows. It returns the
// workload and the configuration for the comparisons that follow.
func demoValidate(w io.Writer, path string, meta *timeline.Meta) (*whatif.Workload, whatif.Config, error) {
	r, err := openInput(path, os.Stderr)
	if err != nil {
		return nil, whatif.Config{}, err
	}
	defer r.Close()
	kernel := meta.Source.OSRelease
	wl, obs, err := whatif.ExtractAndMeasure(r, meta.Topology, kernel)
	if err != nil {
		return nil, whatif.Config{}, err
	}
	if _, err := whatif.ApplyAffinity(wl, meta.Topology, nil, true); err != nil {
		return nil, whatif.Config{}, err
	}
	pol, err := whatif.PolicyForKernel(kernel)
	if err != nil {
		return nil, whatif.Config{}, err
	}
	cfg := whatif.DefaultConfig(pol)
	cfg.Topology, cfg.Kernel = meta.Topology, kernel
	// The work model replay whatif uses by default (--work auto).
	ue, why := cfg.SetAutoWork(wl)
	res, err := whatif.Replay(wl, cfg, nil)
	if err != nil {
		return nil, whatif.Config{}, err
	}
	f := whatif.Compare(pol.Name(), obs, res.Metrics, res.Stats)
	traceNotes(f, wl, whatif.AutoWorkNote(ue, why), cfg.SwitchCharge && cfg.IdleWake)
	return wl, cfg, f.WriteTable(w)
}

// demoCompare replays the workload under other policies against the
// traced kernel's, with confidence intervals over a few seeds.
func demoCompare(w io.Writer, wl *whatif.Workload, cfg whatif.Config, names []string) error {
	var pols []whatif.Policy
	for _, n := range names {
		p, err := whatif.LookupPolicy(n)
		if err != nil {
			return err
		}
		pols = append(pols, p)
	}
	cmp, err := whatif.ComparePolicies(wl, whatif.PolicyCompareConfig{Base: cfg, Baseline: cfg.Policy, Policies: pols, Runs: 4, Seed: 1})
	if err != nil {
		return err
	}
	return cmp.WriteTable(w)
}

// demoSynth generates a benchmark's workload on a preset machine and
// prints what the benchmark reports under each policy.
func demoSynth(w io.Writer, command []string, preset string, names []string) error {
	g, err := synth.ParseCommand(command)
	if err != nil {
		return err
	}
	synth.SetSeed(g, 1)
	topo, err := model.ParseSpec(preset)
	if err != nil {
		return err
	}
	res, err := g.Generate(topo)
	if err != nil {
		return err
	}
	for _, n := range names {
		p, err := whatif.LookupPolicy(n)
		if err != nil {
			return err
		}
		cfg := whatif.DefaultConfig(p)
		cfg.Topology, cfg.Seed = topo, 1
		rep, _, err := synth.Run(res, cfg)
		if err != nil {
			return err
		}
		if err := rep.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}
