package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/model"
)

// topologyCommand is `replay topology`: the CPU topology of a trace (or of
// --topology) and the scheduler-domain hierarchy the kernel builds on it.
func topologyCommand() *cli.Command {
	return &cli.Command{
		Name:      "topology",
		ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
		Usage:     "rebuild the scheduler domains the traced kernel built (levels, spans, groups, flags)",
		Description: "The topology comes from the trace (-i) and/or --topology, which overrides or completes it.\n" +
			"Formats: text (the files of /sys/kernel/debug/sched/domains), json (one record per CPU and\n" +
			"domain), tree (a summary: levels, groups, shared LLCs), verbose (the kernel's sched_verbose\n" +
			"boot printout), topology (the topology facts as JSON, editable and readable by --topology).",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: model.SpecUsage()},
			&cli.StringFlag{Name: "kernel", Usage: "kernel release whose rules apply, e.g. 6.1 or 5.10.0-28-amd64 (default: the trace's, else the newest modelled)"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "text", Usage: "text, json, tree, verbose or topology"},
		},
		Action: func(c *cli.Context) error {
			in, err := inputPath(c, "topology")
			if err != nil {
				return err
			}
			format := c.String("format")
			switch format {
			case "text", "json", "tree", "verbose", "topology":
			default:
				return usagef("--format %q: want text, json, tree, verbose or topology", format)
			}
			spec := c.String("topology")
			var fromTrace *model.Topology
			release := ""
			if c.IsSet("input") || c.NArg() == 1 || spec == "" {
				fromTrace, release, err = inputTopology(in)
				if err != nil {
					return fmt.Errorf("%v; give a trace with -i FILE or the machine with --topology, e.g. --topology sockets=1,cores=8,threads=2", err)
				}
			}
			topo, err := model.Resolve(spec, fromTrace)
			if err != nil {
				if errors.Is(err, model.ErrNoTopology) {
					return usageError{err}
				}
				return err
			}
			if c.IsSet("kernel") {
				release = c.String("kernel")
			}
			w := c.App.Writer
			if format == "topology" {
				return writeJSON(w, topo)
			}
			d, err := model.BuildDomains(topo, release)
			if err != nil {
				return err
			}
			switch format {
			case "json":
				return d.WriteJSON(w)
			case "tree":
				return d.WriteTree(w)
			case "verbose":
				return d.WriteVerbose(w)
			}
			return d.WriteText(w)
		},
	}
}
