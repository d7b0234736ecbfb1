package perfetto_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/timeline"
)

// TestIngestOpen: ingest.Open recognises Perfetto by content, plain,
// gzip'ed and zstd'ed (the latter two streamed).
func TestIngestOpen(t *testing.T) {
	raw, err := os.ReadFile(fx + "derived/sched_blocked_reason_symbolized.pb")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var gz, zs bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	ze, _ := zstd.NewWriter(&zs)
	ze.Write(raw)
	ze.Close()
	files := map[string][]byte{"t.pftrace": raw, "t.pftrace.gz": gz.Bytes(), "t.pftrace.zst": zs.Bytes()}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := ingest.Open(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if r.Err() != nil || n != 17 || r.Meta().Source.Format != "perfetto" {
			t.Errorf("%s: %d rows (want 17), err %v, format %q", name, n, r.Err(), r.Meta().Source.Format)
		}
		r.Close()
	}
	// The real Android trace too (its first packet is not an ftrace one).
	r, err := ingest.Open(fx + "nowinandroid/trace.perfetto-trace")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta().Source.OSRelease == "" {
		t.Error("no kernel release before the first event")
	}
}

// TestBoundedBuffer: with a tiny reorder buffer and a CPU that goes quiet,
// rows still come out (bounded memory), and disorder beyond the buffer is
// counted, not hidden.
func TestBoundedBuffer(t *testing.T) {
	defer func(a, b int) { perfetto.MaxBufferedRows, perfetto.WarmRows = a, b }(perfetto.MaxBufferedRows, perfetto.WarmRows)
	perfetto.MaxBufferedRows, perfetto.WarmRows = 4, 0
	var pkts []msg
	// CPU 1 has one early event, then CPU 0 many; CPU 1 is quiet.
	pkts = append(pkts, msg(nil).m(1, bundle(1, wakingEv(5, 0, "x", 9, 120, 1))))
	for i := 0; i < 20; i++ {
		pkts = append(pkts, msg(nil).m(1, bundle(0, wakingEv(uint64(10+i), 0, "x", 9, 120, 0))))
	}
	// A late bundle of CPU 1 going back in time beyond the buffer.
	pkts = append(pkts, msg(nil).m(1, bundle(1, wakingEv(7, 0, "x", 9, 120, 1))))
	rows, r := readAll(t, trace(pkts...))
	if len(rows) != 22 {
		t.Errorf("%d rows", len(rows))
	}
	if r.Meta().Source.Extra["rows_out_of_time_order"] != "1" {
		t.Errorf("extra %v", r.Meta().Source.Extra)
	}
}

var _ timeline.EventReader = (*perfetto.Reader)(nil)
