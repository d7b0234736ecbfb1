// Command replay ingests Linux scheduler traces into an Arrow timeline,
// measures what they show, and replays them through a model of the
// kernel's load balancer under alternative policies.
//
// The command is a thin shell: each subcommand parses flags and calls into
// ingest, timeline, model, analysis and whatif.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/urfave/cli/v2"
)

// usageError marks mistakes in how replay was called (exit status 2), as
// opposed to bad input or failed work (exit status 1).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "replay",
		Usage: "scheduler traces to Arrow timelines, latency analysis and load-balancer what-ifs",
		Description: "Typical use, after `perf sched record -- WORKLOAD`:\n" +
			"   replay ingest                          # perf.data -> replay.arrow\n" +
			"   replay info                            # what the trace holds\n" +
			"   replay latency                         # wakeup latency, as perf sched sees it\n" +
			"   replay whatif --policy llc-nr-running  # the same workload under another balancer\n" +
			"   replay report -o report.html           # all of it on one page\n" +
			"   replay script -i sim.arrow --cpu 0     # a timeline as perf script prints a trace\n" +
			"   replay demo                            # the whole story on a bundled real trace",
		Commands:        commands(),
		HideHelpCommand: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cpuprofile", Hidden: true, Usage: "write a CPU profile of the run to this file (for developers)"},
		},
		Before: func(c *cli.Context) error {
			if p := c.String("cpuprofile"); p != "" {
				f, err := os.Create(p)
				if err != nil {
					return err
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
			}
			return nil
		},
		After: func(c *cli.Context) error {
			if c.String("cpuprofile") != "" {
				pprof.StopCPUProfile()
			}
			return nil
		},
		OnUsageError: func(c *cli.Context, err error, isSub bool) error {
			return usageError{err}
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
	}
	return app
}

func main() {
	app := newApp()
	err := app.Run(flagsFirst(app, os.Args))
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "replay: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}
