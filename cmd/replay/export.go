package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/analysis"
	chromeexport "github.com/schedreplay/replay/export/chrome"
	perfettoexport "github.com/schedreplay/replay/export/perfetto"
	pprofexport "github.com/schedreplay/replay/export/pprof"
	"github.com/schedreplay/replay/internal/atomicfile"
	"github.com/schedreplay/replay/model"
)

// exportCommand is `replay export`: a timeline (or any raw trace) in the
// formats other tools open. The encoders are export/perfetto and
// export/pprof; this wires input, flags and the output file.
func exportCommand() *cli.Command {
	out := func(def string) cli.Flag {
		return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: def, Usage: "file to write (written under a temporary name, renamed when complete)"}
	}
	policy := &cli.StringFlag{Name: "policy", Usage: "name of the scheduling policy of a simulated timeline (default: the timeline's own)"}
	return &cli.Command{
		Name:  "export",
		Usage: "write a timeline as a Perfetto trace, a pprof profile or Chrome trace JSON",
		Subcommands: []*cli.Command{
			{
				Name:        "perfetto",
				ArgsUsage:   "[TRACE]  (or -i TRACE; default replay.arrow)",
				Usage:       "Perfetto trace (open in ui.perfetto.dev): CPU schedule, thread names, wakeups",
				Description: "Writes sched_switch, sched_waking and the other sched/task events as per-CPU ftrace bundles,\nwith a ProcessTree and SystemInfo; a simulated timeline's policy goes in the trace metadata.",
				Flags:       []cli.Flag{inputFlag(), out("replay.perfetto-trace"), policy},
				Action: func(c *cli.Context) error {
					in, err := inputPath(c, "export perfetto")
					if err != nil {
						return err
					}
					r, err := openInput(in, c.App.ErrWriter)
					if err != nil {
						return err
					}
					defer r.Close()
					var st *perfettoexport.Stats
					err = writeFileAtomic(c.String("output"), func(w io.Writer) error {
						var err error
						st, err = perfettoexport.Write(w, r, perfettoexport.Options{Policy: c.String("policy")})
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.ErrWriter, "replay: wrote %d events (%d named threads) to %s\n", st.Events, st.Threads, c.String("output"))
					return nil
				},
			},
			{
				Name:      "pprof",
				ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
				Usage:     "pprof profile of scheduling delay, runtime and runnable wait per task (go tool pprof)",
				Description: "Sample types sched_delay, runtime, runnable_wait (ns) and wakeups, labelled by comm, tid, pid, cpu,\n" +
					"state, level and policy; with call chains (perf sched record -g) the stacks at switch-out.\n" +
					"Totals equal `replay latency` (same analysis). Try: go tool pprof -top -sample_index=sched_delay FILE",
				Flags: []cli.Flag{inputFlag(), out("replay.pb.gz"), policy,
					&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "the machine, for the domain-level label: " + model.SpecUsage()},
					&cli.StringFlag{Name: "kernel", Usage: "kernel release whose domain rules apply (default: the trace's)"},
				},
				Action: func(c *cli.Context) error {
					in, err := inputPath(c, "export pprof")
					if err != nil {
						return err
					}
					r, err := openInput(in, c.App.ErrWriter)
					if err != nil {
						return err
					}
					defer r.Close()
					opts := pprofexport.Options{Policy: c.String("policy")}
					if opts.Analysis.Levels, err = inputDomains(r.Meta(), c); err != nil {
						if c.String("topology") != "" {
							return err
						}
						// The trace's own topology is only for a label.
						fmt.Fprintf(c.App.ErrWriter, "replay: no domain levels (%v)\n", err)
						opts.Analysis.Levels = nil
					}
					var rep *analysis.Report
					err = writeFileAtomic(c.String("output"), func(w io.Writer) error {
						var err error
						rep, err = pprofexport.Write(w, r, opts)
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.ErrWriter, "replay: wrote %d run slices (%d wakeups) to %s\n", rep.Slices, rep.WakeupLatency.Count, c.String("output"))
					return nil
				},
			},
			{
				Name:        "chrome",
				ArgsUsage:   "[TRACE]  (or -i TRACE; default replay.arrow)",
				Usage:       "Chrome trace-event JSON (chrome://tracing, Perfetto UI): CPU tracks, running and runnable per thread, wakeups",
				Description: "A lossy view for tools that read only JSON; the Perfetto export keeps every event.",
				Flags:       []cli.Flag{inputFlag(), out("replay.json"), policy},
				Action: func(c *cli.Context) error {
					in, err := inputPath(c, "export chrome")
					if err != nil {
						return err
					}
					r, err := openInput(in, c.App.ErrWriter)
					if err != nil {
						return err
					}
					defer r.Close()
					var st *chromeexport.Stats
					err = writeFileAtomic(c.String("output"), func(w io.Writer) error {
						var err error
						st, err = chromeexport.Write(w, r, chromeexport.Options{Policy: c.String("policy")})
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.ErrWriter, "replay: wrote %d trace events to %s\n", st.Events, c.String("output"))
					return nil
				},
			},
		},
	}
}

// writeFileAtomic writes path through fn; the file appears only if fn
// succeeds (internal/atomicfile), so a failed or killed export leaves
// nothing.
func writeFileAtomic(path string, fn func(io.Writer) error) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Abort()
		return err
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
