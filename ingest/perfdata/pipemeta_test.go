package perfdata

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"os"
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

// Damage among a pipe stream's header records is reported at open, with
// the file and offset, as a file's damaged header is: the first record
// (a HEADER_ATTR) shrunk to 16 bytes cannot hold its attr. A stream cut
// after them, inside its first event, opens with its metadata and counts
// the cut record, as a killed recording's is counted.
func TestPipeHeaderDamageAtOpen(t *testing.T) {
	b, err := os.ReadFile("../../fixtures/perf/hackbench_pipe.data")
	if err != nil {
		t.Fatal(err)
	}
	if typ := binary.LittleEndian.Uint32(b[16:]); typ != recHeaderAttr {
		t.Fatalf("first record type %d, want HEADER_ATTR", typ)
	}
	bad := bytes.Clone(b)
	binary.LittleEndian.PutUint16(bad[16+6:], 16)
	_, err = NewReader(bytes.NewReader(bad), "bad")
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != "bad" || fe.Offset != 16 {
		t.Errorf("a 16-byte HEADER_ATTR: %v, want a FormatError of file bad at offset 16", err)
	}

	full, err := NewReader(bytes.NewReader(b), "pipe")
	if err != nil {
		t.Fatal(err)
	}
	headerEnd := full.src.off
	r, err := NewReader(bytes.NewReader(b[:headerEnd+20]), "cut")
	if err != nil {
		t.Fatalf("cut inside the first event: open failed: %v", err)
	}
	if r.Meta().Topology == nil {
		t.Errorf("cut inside the first event: no topology at open")
	}
	for r.Next() {
	}
	if err := r.Err(); err != nil || r.Meta().Summary.Dropped["truncated record at end of data"] != 1 {
		t.Errorf("cut inside the first event: error %v, dropped %v; want none and one truncated record", err, r.Meta().Summary.Dropped)
	}
}
