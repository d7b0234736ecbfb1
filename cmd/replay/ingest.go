package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "read a trace into an Arrow timeline file",
		ArgsUsage: "[TRACE]  (default perf.data; - reads a perf pipe-mode stream from stdin)",
		Description: "Writes one events table (Arrow IPC file, or Parquet with --format parquet or a .parquet name).\n" +
			"The columns are documented in docs/timeline.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "replay.arrow", Usage: "timeline file to write"},
			&cli.StringFlag{Name: "format", Usage: "arrow or parquet (default: from the output name)"},
			&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress on stderr: auto (when a terminal), always, never"},
			&cli.StringFlag{Name: "compress", Value: "lz4", Usage: "Arrow IPC buffer compression: lz4 (Feather's default: pyarrow, pandas, polars read it), zstd, or none (for readers without codecs, e.g. plain apache-arrow JS)"},
			&cli.StringFlag{Name: "topology", Aliases: []string{"t"}, Usage: "store this machine description instead of (or completing) the trace's: " + model.SpecUsage()},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usagef("ingest takes one trace, got %d", c.NArg())
			}
			in := c.Args().First()
			if in == "" {
				in = "perf.data"
			}
			format := c.String("format")
			if format != "" && format != timeline.FormatArrow && format != timeline.FormatParquet {
				return usagef("--format %q: want arrow or parquet", format)
			}
			show, err := wantProgress(c.String("progress"))
			if err != nil {
				return err
			}
			switch c.String("compress") {
			case "none", "lz4", "zstd":
			default:
				return usagef("--compress %q: want none, lz4 or zstd", c.String("compress"))
			}
			meta, err := runIngest(in, c.String("output"), timeline.WriterOptions{Format: format, Compression: c.String("compress")}, c.String("topology"), show)
			if err != nil {
				return err
			}
			s := meta.Summary
			fmt.Fprintf(c.App.ErrWriter, "replay: wrote %s: %d events, %d CPUs, %d tasks, %.3f s, %d lost\n",
				c.String("output"), s.Events, len(s.CPUs), s.Tasks, float64(s.LastNS-s.FirstNS)/1e9, s.Lost.Events)
			warnDropped(c.App.ErrWriter, in, s.Dropped)
			return nil
		},
	}
}

func wantProgress(mode string) (bool, error) {
	switch mode {
	case "auto":
		return term.IsTerminal(int(os.Stderr.Fd())), nil
	case "always":
		return true, nil
	case "never":
		return false, nil
	}
	return false, usagef("--progress %q: want auto, always or never", mode)
}

// runIngest streams the trace at in into a timeline file at out. On any
// error the output is not created (the writer renames a finished temp file).
func runIngest(in, out string, opt timeline.WriterOptions, topoSpec string, progress bool) (*timeline.Meta, error) {
	r, err := ingest.Open(in)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var topo *model.Topology
	if topoSpec != "" {
		// Resolve before reading events, so a bad spec fails fast.
		if topo, err = model.Resolve(topoSpec, r.Meta().Topology); err != nil {
			return nil, err
		}
	}
	w, err := timeline.Create(out, opt)
	if err != nil {
		return nil, err
	}
	var bar *progressbar.ProgressBar
	if progress {
		bar = newEventBar(os.Stderr, "ingest "+in)
	}
	n := 0
	for r.Next() {
		if err := w.Write(r.Event()); err != nil {
			w.Abort()
			return nil, err
		}
		if n++; bar != nil && n%65536 == 0 {
			bar.Add(65536)
		}
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
	if err := r.Err(); err != nil {
		w.Abort()
		return nil, err
	}
	meta := *r.Meta()
	if topo != nil {
		meta.Topology = topo
	}
	if err := w.Close(&meta); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	tr, err := timeline.Open(out)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	return tr.Meta(), nil
}

func newEventBar(w io.Writer, desc string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("events"),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}
