package perfdata

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// A pipe-mode stream's metadata is complete when it is opened, as a
// file's is: the command line, kernel release and topology that a replay
// reads before any event (its recording window, its policy, its machine)
// come in header records ahead of the events, and Open reads them. What
// Meta says at open must equal what it says once every event is read;
// before, the pipe stream's Cmdline, OSRelease and Topology were empty
// at open (perf_sched_pipe.data's replay then ran 32 ms past the
// recording, without the window its command line gives).
func TestPipeMetaAtOpen(t *testing.T) {
	for _, path := range []string{"../../fixtures/perf/hackbench_pipe.data", "../../fixtures/perf/perf_sched_pipe.data"} {
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m := r.Meta()
		if m.Source.Format != "perf.data (pipe)" {
			t.Fatalf("%s: format %q, want a pipe stream", path, m.Source.Format)
		}
		atOpen := headerJSON(m)
		if len(m.Source.Cmdline) == 0 || m.Source.OSRelease == "" || m.Topology == nil {
			t.Errorf("%s: at open cmdline %q, release %q, topology %v: want all three", path, m.Source.Cmdline, m.Source.OSRelease, m.Topology)
		}
		for r.Next() {
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		atEnd := headerJSON(r.Meta())
		if atOpen != atEnd {
			t.Errorf("%s: metadata at open\n%s\nonce read\n%s", path, atOpen, atEnd)
		}
		r.Close()
	}
}

// headerJSON is what the header says of a stream: its source and
// topology, without the counts of records skipped so far.
func headerJSON(m *timeline.Meta) string {
	src := m.Source
	src.Extra = maps.Clone(src.Extra)
	delete(src.Extra, "skipped_records")
	b, _ := json.Marshal(struct{ Source, Topology any }{src, m.Topology})
	return string(b)
}
