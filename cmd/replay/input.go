package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

// inputPath is the trace a command reads: -i FILE, or FILE as its one
// argument (`replay latency perf.data`, as `replay ingest perf.data`
// takes it). Both at once, or more arguments, is a usage error rather
// than a guess at which one was meant.
func inputPath(c *cli.Context, command string) (string, error) {
	switch {
	case c.NArg() == 0:
		return c.String("input"), nil
	case c.NArg() == 1 && !c.IsSet("input"):
		return c.Args().First(), nil
	case c.NArg() == 1:
		return "", usagef("%s: the trace is given twice (-i %s and %s); give one", command, c.String("input"), c.Args().First())
	default:
		return "", usagef("%s reads one trace (FILE or -i FILE), not %d: %s", command, c.NArg(), strings.Join(c.Args().Slice(), " "))
	}
}

// openInput opens a timeline file or any raw trace as an event stream.
// What its reader could not use (Summary.Dropped: the bytes a truncated
// file lacks, samples without a format, a torn last record) is said on
// warn once the stream has ended, so that no result quietly covers only
// part of a trace.
func openInput(path string, warn io.Writer) (timeline.EventReader, error) {
	r, err := ingest.Open(path)
	if err != nil {
		return nil, workloadHint(path, err)
	}
	return &dropWarner{EventReader: r, path: path, w: warn}, nil
}

// workloadHint returns err, or for a workload file (an Arrow file too,
// which the timeline reader refuses for its missing replay_version, a
// complaint that says neither what the file is nor which command reads
// it) an error that says both.
func workloadHint(path string, err error) error {
	if whatif.IsWorkloadFile(path) {
		return fmt.Errorf("%s is a replay workload file (tasks, activations and wake edges, as whatif --save-workload writes), not a trace or timeline: replay whatif -i reads it", path)
	}
	return err
}

// dropWarner says what the reader dropped when its stream ends.
type dropWarner struct {
	timeline.EventReader
	path string
	w    io.Writer
	said bool
}

func (d *dropWarner) Next() bool {
	if d.EventReader.Next() {
		return true
	}
	if !d.said {
		d.said = true
		if m := d.Meta(); m != nil {
			warnDropped(d.w, d.path, m.Summary.Dropped)
		}
	}
	return false
}

// warnDropped writes one line naming what the reader of path could not
// use, by reason (each reason names its unit: records, bytes, sections),
// if anything.
func warnDropped(w io.Writer, path string, dropped map[string]int64) {
	if len(dropped) == 0 {
		return
	}
	fmt.Fprintf(w, "replay: %s: part of the trace could not be read (%s); the results cover the rest (replay info lists it)\n", path, timeline.DroppedText(dropped))
}

// inputTopology returns the topology a trace or timeline carries (nil if
// none) and the traced kernel's release, reading only the headers: a raw
// trace's reader has its header metadata before the first event.
func inputTopology(path string) (*model.Topology, string, error) {
	r, err := ingest.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	m := r.Meta()
	return m.Topology, m.Source.OSRelease, nil
}

// inputDomains builds the scheduler domains for an analysis: from
// --topology (which overrides or completes the trace's own topology) or the
// trace's topology, under the rules of --kernel or the traced kernel. With
// neither topology it returns nil: analyses then report totals only.
func inputDomains(meta *timeline.Meta, c *cli.Context) (analysis.Levels, error) {
	d, err := buildDomains(meta, c.String("topology"), c.String("kernel"))
	if d == nil || err != nil {
		return nil, err
	}
	return analysis.FromDomains(d), nil
}

// buildDomains resolves the machine (spec over the trace's topology) and
// builds its domains under kernel (default: the traced kernel's rules).
// Neither a spec nor a topology in the trace gives nil, nil.
func buildDomains(meta *timeline.Meta, spec, kernel string) (*model.Domains, error) {
	if spec == "" && meta.Topology == nil {
		return nil, nil
	}
	topo, err := model.Resolve(spec, meta.Topology)
	if err != nil {
		return nil, err
	}
	if kernel == "" {
		kernel = meta.Source.OSRelease
	}
	return model.BuildDomains(topo, kernel)
}
