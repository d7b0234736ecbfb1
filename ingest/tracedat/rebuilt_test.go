package tracedat

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// smallSpec rebuilds the first pages of the recorded snapshot.
func smallSpec(t testing.TB, pages int) *buildSpec {
	r := openFixture(t, fixtures+"/recorded.v7zstd.dat")
	return specFrom(t, r, []string{"sched", "task"}, pages)
}

func readAll(t testing.TB, r *Reader) []timeline.Event {
	t.Helper()
	out, err := timeline.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fromBytes(t testing.TB, b []byte, name string) *Reader {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRebuiltLayouts reads the same pages written as v6, v7 and v7+zstd
// (the writer follows the trace-cmd layouts); all three must give the same
// rows, and trace-cmd itself must agree when it is installed.
func TestRebuiltLayouts(t *testing.T) {
	s := smallSpec(t, 2)
	files := map[string][]byte{"v6": s.v6(), "v7": s.v7("none"), "v7zstd": s.v7("zstd"), "v7zlib": s.v7("zlib")}
	var ref []timeline.Event
	for _, name := range []string{"v6", "v7", "v7zstd", "v7zlib"} {
		evs := readAll(t, fromBytes(t, files[name], name))
		if len(evs) == 0 {
			t.Fatalf("%s: no events", name)
		}
		if ref == nil {
			ref = evs
			continue
		}
		if len(evs) != len(ref) {
			t.Fatalf("%s: %d events, v6 has %d", name, len(evs), len(ref))
		}
		for i := range evs {
			if describe(&evs[i]) != describe(&ref[i]) {
				t.Fatalf("%s event %d: %s\nv6: %s", name, i, describe(&evs[i]), describe(&ref[i]))
			}
		}
	}
	if _, err := exec.LookPath("trace-cmd"); err != nil {
		t.Log("trace-cmd not installed: rebuilt files not cross-checked")
		return
	}
	for name, b := range files {
		if name == "v7zlib" && !traceCmdHas("zlib") {
			continue
		}
		compareWithTraceCmd(t, name, b)
	}
}

func compareWithTraceCmd(t *testing.T, name string, b []byte) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".dat")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("trace-cmd", "report", "-R", "-t", "-i", p).Output()
	if err != nil {
		t.Fatalf("%s: trace-cmd report: %v", name, err)
	}
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Run("trace-cmd/"+name, func(t *testing.T) {
		compareReport(t, r, strings.Split(strings.TrimRight(string(out), "\n"), "\n"))
	})
}

// setMissed marks page pg of the CPU data as following lost events, with
// the count stored after the data when n > 0.
func setMissed(t testing.TB, s *buildSpec, cpu, pg int, n uint64) {
	t.Helper()
	lay, err := newPageLayout(s.f)
	if err != nil {
		t.Fatal(err)
	}
	p := s.pages[cpu][pg*s.f.pageSize : (pg+1)*s.f.pageSize]
	o := s.f.order
	var commit uint64
	if lay.commitSize == 8 {
		commit = o.Uint64(p[lay.commitOff:])
	} else {
		commit = uint64(o.Uint32(p[lay.commitOff:]))
	}
	length := int(commit & commitLenMask)
	commit |= missedEvents
	if n > 0 {
		if lay.dataOff+length+lay.commitSize > len(p) {
			t.Fatalf("page %d of cpu %d is full: no room for a stored count", pg, cpu)
		}
		commit |= missedStored
		if lay.commitSize == 8 {
			o.PutUint64(p[lay.dataOff+length:], n)
		} else {
			o.PutUint32(p[lay.dataOff+length:], uint32(n))
		}
	}
	if lay.commitSize == 8 {
		o.PutUint64(p[lay.commitOff:], commit)
	} else {
		o.PutUint32(p[lay.commitOff:], uint32(commit))
	}
}

// TestMissedEvents checks the per-page lost-event flags: a lost row before
// the page's first record (count when stored, 0 and a reason otherwise) and
// the totals in Meta; trace-cmd prints the same markers.
func TestMissedEvents(t *testing.T) {
	s := smallSpec(t, 2)
	setMissed(t, s, 0, 1, 42)
	setMissed(t, s, 1, 1, 0)
	b := s.v6()
	r := fromBytes(t, b, "missed.dat")
	evs := readAll(t, r)
	var lost []timeline.Event
	for _, e := range evs {
		if e.Kind == timeline.Lost {
			lost = append(lost, e)
		}
	}
	if len(lost) != 2 {
		t.Fatalf("want 2 lost rows, got %d", len(lost))
	}
	for _, e := range lost {
		switch e.Int(timeline.CPU) {
		case 0:
			if e.Int(timeline.LostCount) != 42 {
				t.Errorf("cpu 0 lost %d, want 42", e.Int(timeline.LostCount))
			}
		case 1:
			if e.Int(timeline.LostCount) != 0 || len(e.Fields) != 1 || e.Fields[0].Name != "reason" {
				t.Errorf("cpu 1 lost row %s, want 0 with a reason", describe(&e))
			}
		}
	}
	l := r.Meta().Summary.Lost
	if l.Events != 42 || l.ByCPU["0"] != 42 || len(l.ByReason) != 2 {
		t.Errorf("summary lost %+v", l)
	}
	if _, err := exec.LookPath("trace-cmd"); err == nil {
		compareWithTraceCmd(t, "missed", b)
	}
}

// TestCorruptInput cuts and damages small files everywhere: every outcome
// must be rows or an error naming the file and an offset, never a panic.
func TestCorruptInput(t *testing.T) {
	s := smallSpec(t, 1)
	for name, b := range map[string][]byte{"v6": s.v6(), "v7": s.v7("none"), "v7zstd": s.v7("zstd"), "v7zlib": s.v7("zlib")} {
		step := max(1, len(b)/700)
		for cut := 0; cut < len(b); cut += step {
			if err := readErr(b[:cut], name); err != nil && !strings.Contains(err.Error(), name) {
				t.Fatalf("%s cut at %d: error does not name the file: %v", name, cut, err)
			}
		}
		for at := 0; at < len(b); at += step {
			d := bytes.Clone(b)
			d[at] ^= 0xff
			_ = readErr(d, name)
		}
	}
	if err := readErr([]byte("\x17\x08Dtracing9\x00"), "v9"); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("unknown version: %v", err)
	}
	var fe *FormatError
	if err := readErr(s.v6()[:300], "short"); !errors.As(err, &fe) {
		t.Errorf("truncated header: want a FormatError, got %v", err)
	}
}

func readErr(b []byte, name string) error {
	r, err := NewReader(bytes.NewReader(b), int64(len(b)), name)
	if err != nil {
		return err
	}
	n := 0
	for r.Next() {
		n++
	}
	return r.Err()
}

// FuzzReader feeds mutated small trace.dat files (v6, v7, v7 zstd rebuilt
// from the recorded fixture) to the reader.
func FuzzReader(f *testing.F) {
	s := smallSpec(f, 1)
	f.Add(s.v6())
	f.Add(s.v7("none"))
	f.Add(s.v7("zstd"))
	f.Add(s.v7("zlib"))
	// Small limits: the fuzzer looks for logic errors, and must not spend
	// its time (and the machine's memory) on legal but huge allocations.
	maxSectionBytes, maxChunkBytes, maxBuffered = 4<<20, 1<<20, 8<<20
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)), "fuzz")
		if err != nil {
			return
		}
		for i := 0; r.Next() && i < 1<<20; i++ {
			_ = r.Event()
		}
		r.Close()
	})
}

// traceCmdHas reports whether the installed trace-cmd supports a
// compression algorithm (Debian's lacks zlib).
func traceCmdHas(alg string) bool {
	out, err := exec.Command("trace-cmd", "list", "-c").Output()
	return err == nil && strings.Contains(string(out), alg)
}

// TestMeta: what the options say reaches the timeline metadata.
func TestMeta(t *testing.T) {
	r := openFixture(t, fixtures+"/recorded.v7zstd.dat")
	src := r.Meta().Source
	if src.Format != "trace.dat v7" || src.OSRelease != "6.18.44-fc-v595" || src.Hostname != "vm" || src.Arch != "x86_64" ||
		src.NrCPUs != 2 || src.Compressed != "zstd 1.5.4" || src.ClockID != -1 || src.Extra["trace_clock"] != "local" {
		t.Errorf("source %+v", src)
	}
	if r.Meta().Topology != nil {
		t.Error("trace.dat carries no topology")
	}
	g := openFixture(t, fixtures+"/guestA-schbench.v6.dat.gz")
	if s := g.Meta().Source; s.Format != "trace.dat v6" || s.NrCPUs != 8 || s.OSRelease != "6.1.0-57-amd64" {
		t.Errorf("v6 source %+v", s)
	}
	// Unsupported variants get errors that say what is not supported.
	b := smallSpec(t, 1).v7("zstd")
	bad := bytes.Replace(b, []byte("zstd\x001\x00"), []byte("lz4x\x001\x00"), 1)
	if err := readErr(bad, "lz4.dat"); err == nil || !strings.Contains(err.Error(), `compression "lz4x" is not supported`) {
		t.Errorf("unknown compression: %v", err)
	}
	v6 := smallSpec(t, 1).v6()
	i := bytes.Index(v6, []byte("flyrecord\x00"))
	lat := append(bytes.Clone(v6[:i]), []byte("latency  \x00some text")...)
	if err := readErr(lat, "lat.dat"); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Errorf("latency file: %v", err)
	}
}
