package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/internal/textsafe"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

func inputFlag() cli.Flag {
	return &cli.StringFlag{Name: "input", Aliases: []string{"i"}, Value: "replay.arrow",
		Usage: "timeline file or raw trace (format detected by content); or give it as the argument"}
}

func infoCommand() *cli.Command {
	return &cli.Command{
		Name:      "info",
		ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
		Usage:     "summarise a timeline, any raw trace, or a workload file (whatif --save-workload)",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		},
		Action: func(c *cli.Context) error {
			in, err := inputPath(c, "info")
			if err != nil {
				return err
			}
			if whatif.IsWorkloadFile(in) {
				return writeWorkloadInfo(c.App.Writer, in, c.Bool("json"))
			}
			meta, err := readMeta(in)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeInfoJSON(c.App.Writer, meta)
			}
			writeInfoText(c.App.Writer, in, meta)
			return nil
		},
	}
}

// readMeta returns a file's metadata with a complete summary: stored in a
// timeline file, computed by one pass over a raw trace.
func readMeta(path string) (*timeline.Meta, error) {
	r, err := ingest.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, ok := r.(*timeline.Reader); ok {
		return r.Meta(), nil
	}
	return timeline.Summarize(r)
}

// infoJSON is the shape of `replay info --json`: the summary's fields at
// the top level, then the source and topology.
type infoJSON struct {
	timeline.Summary
	DurationNS int64           `json:"duration_ns"`
	Source     timeline.Source `json:"source"`
	Topology   *model.Topology `json:"topology"`
}

func writeInfoJSON(w io.Writer, m *timeline.Meta) error {
	return writeJSON(w, infoJSON{Summary: m.Summary, DurationNS: m.Summary.LastNS - m.Summary.FirstNS, Source: m.Source, Topology: m.Topology})
}

// labeled returns a printer of "key: value" lines, the key padded to
// width; the value is made terminal-safe (names and command lines come
// from a trace).
func labeled(w io.Writer, width int) func(k, format string, a ...any) {
	return func(k, format string, a ...any) {
		fmt.Fprintf(w, "%-*s %s\n", width, k+":", textsafe.Terminal(fmt.Sprintf(format, a...)))
	}
}

func writeInfoText(w io.Writer, path string, m *timeline.Meta) {
	s, src := m.Summary, m.Source
	p := labeled(w, 10)
	p("file", "%s", path)
	var host []string
	for _, x := range []struct{ k, v string }{{"host", src.Hostname}, {"kernel", src.OSRelease}, {"arch", src.Arch}, {"perf", src.PerfVersion}} {
		if x.v != "" {
			host = append(host, x.k+" "+x.v)
		}
	}
	p("source", "%s (%s)", src.Format, strings.Join(host, ", "))
	if len(src.Cmdline) > 0 {
		p("cmdline", "%s", strings.Join(src.Cmdline, " "))
	}
	p("time", "%.6f .. %.6f s (%.6f s)", float64(s.FirstNS)/1e9, float64(s.LastNS)/1e9, float64(s.LastNS-s.FirstNS)/1e9)
	p("events", "%d", s.Events)
	names := make([]string, 0, len(s.EventsByKind))
	for k := range s.EventsByKind {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(w, "  %-28s %10d\n", textsafe.Terminal(k), s.EventsByKind[k])
	}
	p("cpus", "%s (%d)", model.FormatCPUList(s.CPUs), len(s.CPUs))
	p("tasks", "%d", s.Tasks)
	p("lost", "%d events", s.Lost.Events)
	for _, k := range sortedKeys(s.Lost.ByReason) {
		fmt.Fprintf(w, "  %-28s %10d\n", k, s.Lost.ByReason[k])
	}
	for _, k := range sortedKeys(s.Lost.ByCPU) {
		fmt.Fprintf(w, "  cpu %-24s %10d\n", k, s.Lost.ByCPU[k])
	}
	if len(s.Dropped) > 0 {
		// Each reason names its unit (records, bytes, sections): no sum.
		p("dropped", "what the reader could not use, by reason")
		for _, k := range sortedKeys(s.Dropped) {
			fmt.Fprintf(w, "  %-28s %10d\n", k, s.Dropped[k])
		}
	}
	if len(s.Anomalies) > 0 {
		var n int64
		for _, a := range s.Anomalies {
			n += a.Count
		}
		p("anomalies", "%d", n)
		for _, k := range sortedKeys(s.Anomalies) {
			a := s.Anomalies[k]
			fmt.Fprintf(w, "  %s: %d (first: %s)\n", k, a.Count, strings.Join(a.First, ", "))
		}
	}
	if t := m.Topology; t != nil {
		p("topology", "%d CPUs, %d NUMA nodes, %d caches (from %s)", t.NrCPUs, len(t.Nodes), len(t.Caches), t.Source)
	} else {
		p("topology", "none in the trace (give one with --topology)")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// workloadInfo is `replay info --json` of a workload file: what whatif -i
// replays (tasks, their activations, the wake edges between them), where
// a trace's summary counts events, which a workload has none of.
type workloadInfo struct {
	Kind        string         `json:"kind"`
	Source      string         `json:"source"`
	Kernel      string         `json:"kernel"`
	Cmdline     []string       `json:"cmdline,omitempty"`
	StartNS     int64          `json:"start_ns"`
	EndNS       int64          `json:"end_ns"`
	Tasks       int            `json:"tasks"`
	Forked      int            `json:"forked_tasks"`
	Command     int            `json:"command_tasks"`
	Pinned      int            `json:"pinned_tasks"`
	RT          int            `json:"rt_tasks"`
	Activations int            `json:"activations"`
	ByCause     map[string]int `json:"activations_by_cause"`
	DemandNS    int64          `json:"demand_ns"`
	Edges       int            `json:"wake_edges"`
	CausalEdges int            `json:"causal_edges"`
	EdgesByKind map[string]int `json:"wake_edges_by_kind"`
	// AwaitsHerd, AwaitsReply: the edges whose waker waits for what the
	// trace hid (whatif's await.go): a broadcast, a request's reply.
	AwaitsHerd  int             `json:"awaits_herd"`
	AwaitsReply int             `json:"awaits_reply"`
	Topology    *model.Topology `json:"topology"`
}

func summarizeWorkload(w *whatif.Workload) workloadInfo {
	x := workloadInfo{Kind: "replay workload", Source: w.Source, Kernel: w.Kernel, Cmdline: w.Cmdline,
		StartNS: w.StartNS, EndNS: w.EndNS, Tasks: len(w.Tasks), Edges: len(w.Edges),
		ByCause: map[string]int{}, EdgesByKind: map[string]int{}, Topology: w.Topology}
	for i := range w.Tasks {
		t := &w.Tasks[i]
		if t.Forked {
			x.Forked++
		}
		if t.Command {
			x.Command++
		}
		if t.Pinned >= 0 || t.Allowed != nil {
			x.Pinned++
		}
		if t.RT() {
			x.RT++
		}
		x.Activations += len(t.Activations)
		for _, a := range t.Activations {
			x.ByCause[a.Cause.String()]++
		}
		x.DemandNS += t.DemandNS()
	}
	for _, e := range w.Edges {
		x.EdgesByKind[e.Kind.String()]++
		if e.Causal {
			x.CausalEdges++
		}
	}
	x.AwaitsHerd, x.AwaitsReply = w.AwaitCounts()
	return x
}

// writeWorkloadInfo is `replay info` of a workload file.
func writeWorkloadInfo(w io.Writer, path string, asJSON bool) error {
	wl, err := whatif.LoadWorkload(path)
	if err != nil {
		return err
	}
	x := summarizeWorkload(wl)
	if asJSON {
		return writeJSON(w, x)
	}
	p := labeled(w, 12)
	p("file", "%s", path)
	p("kind", "replay workload (whatif --save-workload; replay whatif -i replays it)")
	p("source", "%s (kernel %s)", x.Source, x.Kernel)
	if len(x.Cmdline) > 0 {
		p("cmdline", "%s", strings.Join(x.Cmdline, " "))
	}
	p("time", "%.6f .. %.6f s (%.6f s)", float64(x.StartNS)/1e9, float64(x.EndNS)/1e9, float64(x.EndNS-x.StartNS)/1e9)
	p("tasks", "%d (forked in the trace %d, the recorded command's %d, pinned or with an affinity %d, real-time %d)", x.Tasks, x.Forked, x.Command, x.Pinned, x.RT)
	p("activations", "%d, demand %.3f ms at capacity 1024", x.Activations, float64(x.DemandNS)/1e6)
	for _, k := range sortedKeys(x.ByCause) {
		fmt.Fprintf(w, "  %-26s %10d\n", k, x.ByCause[k])
	}
	p("wake edges", "%d (%d causal: each starts its wakee's activation)", x.Edges, x.CausalEdges)
	for _, k := range sortedKeys(x.EdgesByKind) {
		fmt.Fprintf(w, "  %-26s %10d\n", k, x.EdgesByKind[k])
	}
	if x.AwaitsHerd+x.AwaitsReply > 0 {
		p("hidden waits", "wake edges whose waker waits for a broadcast the trace hid %d (--set herd_awaits), for a reply %d (--set reply_awaits=on)", x.AwaitsHerd, x.AwaitsReply)
	}
	if t := x.Topology; t != nil {
		p("topology", "%d CPUs, %d NUMA nodes, %d caches (from %s)", t.NrCPUs, len(t.Nodes), len(t.Caches), t.Source)
	} else {
		p("topology", "none (give one with whatif --topology)")
	}
	return nil
}
