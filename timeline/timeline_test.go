package timeline

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/schedreplay/replay/model"
)

// writeSample writes sampleEvents to dir/name with the default options
// (the format from the name) and returns the path.
func writeSample(tb testing.TB, dir, name string) string {
	p := filepath.Join(dir, name)
	writeEvents(tb, p, WriterOptions{}, &Meta{})
	return p
}

// writeEvents writes sampleEvents to path with opt and meta.
func writeEvents(tb testing.TB, path string, opt WriterOptions, meta *Meta) {
	tb.Helper()
	w, err := Create(path, opt)
	if err != nil {
		tb.Fatal(err)
	}
	evs := sampleEvents()
	for i := range evs {
		if err := w.Write(&evs[i]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(meta); err != nil {
		tb.Fatal(err)
	}
}

func sampleEvents() []Event {
	var evs []Event
	var e Event
	e.Time, e.Name, e.Kind = 1000, "sched_switch", SchedSwitch
	e.SetInt(CPU, 1)
	e.SetInt(CommonPID, 42)
	e.SetStr(CommonComm, "yes")
	e.SetStr(PrevComm, "yes")
	e.SetInt(PrevPID, 42)
	e.SetInt(PrevPrio, 120)
	e.SetStr(PrevState, "R+")
	e.SetInt(PrevStateRaw, 256)
	e.SetStr(NextComm, "swapper/1")
	e.SetInt(NextPID, 0)
	e.SetInt(NextPrio, 120)
	evs = append(evs, e)

	e = Event{}
	e.Time, e.Name, e.Kind = 2000, "sched_waking", SchedWaking
	e.SetInt(CPU, 0)
	e.SetStr(Comm, "kworker/0:1 \"x\"")
	e.SetInt(PID, 7)
	e.SetInt(TargetCPU, 0)
	e.Callchain = []uint64{0xffffffff81000000, 0x401000}
	evs = append(evs, e)

	e = Event{}
	e.Time, e.Name = 3000, "irq:irq_handler_entry"
	e.SetInt(CPU, 1)
	e.Fields = []Field{{Name: "irq", Kind: FieldInt, Int: -3}, {Name: "name", Kind: FieldString, Str: "ahci\x01é"}, {Name: "v", Kind: FieldInts, Ints: []int64{1, 2}}}
	evs = append(evs, e)

	e = Event{}
	e.Time, e.Name, e.Kind = 3500, "lost", Lost
	e.SetInt(CPU, 1)
	e.SetInt(LostCount, 12)
	evs = append(evs, e)
	return evs
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  WriterOptions
	}{
		{"arrow", WriterOptions{Format: FormatArrow, BatchRows: 3}},
		{"arrow-one-batch", WriterOptions{Format: FormatArrow}},
		{"arrow-lz4", WriterOptions{Format: FormatArrow, BatchRows: 3, Compression: "lz4"}},
		{"arrow-zstd", WriterOptions{Format: FormatArrow, BatchRows: 1, Compression: "zstd"}},
		// A head too small for the schema: the body is moved behind a
		// bigger one at Close.
		{"arrow-regrow", WriterOptions{Format: FormatArrow, BatchRows: 3, headReserve: 8}},
		{"parquet", WriterOptions{Format: FormatParquet, BatchRows: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t."+tc.opt.Format)
			meta := &Meta{Source: Source{Format: "test", Hostname: "h"}, Topology: &model.Topology{NrCPUs: 2}}
			meta.Summary.Lost.Add(1, "PERF_RECORD_LOST", 12)
			writeEvents(t, path, tc.opt, meta)
			in := sampleEvents()
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			m := r.Meta()
			if m.Source.Hostname != "h" || m.Topology == nil || m.Topology.NrCPUs != 2 {
				t.Errorf("meta = %+v", m)
			}
			s := m.Summary
			if s.Events != 4 || s.EventsByKind["sched_switch"] != 1 || s.FirstNS != 1000 || s.LastNS != 3500 ||
				!reflect.DeepEqual(s.CPUs, []int{0, 1}) || s.Tasks != 2 || s.Lost.Events != 12 || s.Lost.ByCPU["1"] != 12 {
				t.Errorf("summary = %+v", s)
			}
			got, err := ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(in) {
				t.Fatalf("read %d events, wrote %d", len(got), len(in))
			}
			for i := range in {
				want, g := in[i], got[i]
				if g.Time != want.Time || g.Name != want.Name || g.Kind != want.Kind || g.Has != want.Has {
					t.Errorf("event %d: got %+v want %+v", i, g, want)
				}
				for c := Col(0); c < NumCols; c++ {
					if g.Int(c) != want.Int(c) || g.Str(c) != want.Str(c) {
						t.Errorf("event %d col %s: got %d %q want %d %q", i, c.Name(), g.Int(c), g.Str(c), want.Int(c), want.Str(c))
					}
				}
				if len(want.Fields) > 0 && !reflect.DeepEqual(g.Fields, want.Fields) {
					t.Errorf("event %d fields: got %+v want %+v", i, g.Fields, want.Fields)
				}
				if !reflect.DeepEqual(g.Callchain, want.Callchain) && len(want.Callchain) > 0 {
					t.Errorf("event %d callchain: got %x want %x", i, g.Callchain, want.Callchain)
				}
			}
		})
	}
}

// A writer that is aborted (the ingest failed) leaves nothing behind, and
// an existing file at the path is untouched.
func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.arrow")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := sampleEvents()
	w.Write(&evs[0])
	w.Abort()
	b, _ := os.ReadFile(path)
	if string(b) != "old" {
		t.Errorf("existing output changed to %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the old file", len(ents))
	}
}

func TestFieldsJSON(t *testing.T) {
	got := string(appendFieldsJSON(nil, []Field{
		{Name: "a", Kind: FieldInt, Int: -1},
		{Name: "b", Kind: FieldUint, Int: -1},
		{Name: "c", Kind: FieldString, Str: "q\"\\\n\xff"},
		{Name: "d", Kind: FieldBytes, Bytes: []byte{0xde, 0xad}},
	}))
	want := `{"a":-1,"b":18446744073709551615,"c":"q\"\\\u000a\u00ff","d":"dead"}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// A trace with no events still makes a valid, empty timeline.
func TestEmptyTimeline(t *testing.T) {
	for _, format := range []string{FormatArrow, FormatParquet} {
		path := filepath.Join(t.TempDir(), "empty."+format)
		w, err := Create(path, WriterOptions{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(&Meta{Source: Source{Format: "test"}}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); err != nil || n != 0 || r.Meta().Summary.Events != 0 || r.Meta().Source.Format != "test" {
			t.Errorf("%s: read %d events, err %v, meta %+v", format, n, err, r.Meta())
		}
		r.Close()
	}
}

func TestIntField(t *testing.T) {
	e := &Event{Fields: []Field{{Name: "buf", Kind: FieldString, Str: "x"}, {Name: "fd", Kind: FieldUint, Int: 3}, {Name: "ret", Kind: FieldInt, Int: -11}}}
	for _, tc := range []struct {
		name string
		v    int64
		ok   bool
	}{{"fd", 3, true}, {"ret", -11, true}, {"buf", 0, false}, {"count", 0, false}} {
		if v, ok := e.IntField(tc.name); v != tc.v || ok != tc.ok {
			t.Errorf("IntField(%q) = %d, %v; want %d, %v", tc.name, v, ok, tc.v, tc.ok)
		}
	}
}

// Source.Records matches an event with or without its system, and says
// nothing for a source that lists no events.
func TestSourceRecords(t *testing.T) {
	perf := Source{Events: []string{"sched:sched_switch", "sched:sched_waking", "dummy:HG"}}
	bare := Source{Events: []string{"sched_switch", "sched_wakeup"}}
	for _, c := range []struct {
		src  Source
		name string
		want bool
	}{
		{perf, "sched_waking", true},
		{perf, "sched_wakeup", false},
		{perf, "sched_wakeup_new", false},
		{bare, "sched_wakeup", true},
		{bare, "sched_waking", false},
		{Source{}, "sched_switch", false},
	} {
		if got := c.src.Records(c.name); got != c.want {
			t.Errorf("%v records %s: %v, want %v", c.src.Events, c.name, got, c.want)
		}
	}
}
