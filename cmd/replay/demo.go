package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/fixtures"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
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
			r, err := openInput(out)
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
			return demoValidate(w, out, meta)
		},
	}
}

// demoValidate replays the trace under the policy of its kernel and prints
// how close the simulation comes to what the trace shows.
func demoValidate(w io.Writer, path string, meta *timeline.Meta) error {
	r, err := openInput(path)
	if err != nil {
		return err
	}
	defer r.Close()
	kernel := meta.Source.OSRelease
	wl, obs, err := whatif.ExtractAndMeasure(r, meta.Topology, kernel)
	if err != nil {
		return err
	}
	pol, err := whatif.PolicyForKernel(kernel)
	if err != nil {
		return err
	}
	cfg := whatif.DefaultConfig(pol)
	cfg.Topology, cfg.Kernel = meta.Topology, kernel
	res, err := whatif.Replay(wl, cfg, nil)
	if err != nil {
		return err
	}
	return whatif.Compare(pol.Name(), obs, res.Metrics, res.Stats).WriteTable(w)
}
