package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/fixtures"
	"github.com/schedreplay/replay/timeline"
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
			return rep.WriteTable(w, analysis.ByComm)
		},
	}
}
