package tracedat

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

const (
	fixtures = "../../fixtures/tracedat"
	shared   = "../../../shared/fixtures/public"
)

// reportCases pairs each trace.dat with the output of
// `trace-cmd report -R -t` on it (raw field values, ns timestamps). The
// v6, v7 uncompressed and v7 zstd renderings of the recorded snapshot
// share one golden: trace-cmd prints the same text for all three.
var reportCases = []struct {
	name, dat, golden string
	public            bool // in ../shared only (not copied): skipped when absent
}{
	{"recorded v7 zstd", fixtures + "/recorded.v7zstd.dat", fixtures + "/recorded.report-R-t.txt.gz", false},
	{"recorded v7 none", fixtures + "/recorded.v7none.dat.gz", fixtures + "/recorded.report-R-t.txt.gz", false},
	{"recorded v6", fixtures + "/recorded.v6.dat.gz", fixtures + "/recorded.report-R-t.txt.gz", false},
	{"guest-A schbench v7 zstd", fixtures + "/guestA-schbench.v7zstd.dat", fixtures + "/guestA-schbench.report-R-t.txt.gz", false},
	{"guest-A schbench v6", fixtures + "/guestA-schbench.v6.dat.gz", fixtures + "/guestA-schbench.report-R-t.txt.gz", false},
	{"trappy raw_trace (v6, 3.x)", shared + "/trappy/tests/raw_trace.dat", "testdata/trappy_tests_raw_trace.dat.report-R-t.txt.gz", true},
	{"trappy trace (v6, 32-bit)", shared + "/trappy/tests/trace.dat", "testdata/trappy_tests_trace.dat.report-R-t.txt.gz", true},
	{"trappy trace_idle (v6)", shared + "/trappy/tests/trace_idle.dat", "testdata/trappy_tests_trace_idle.dat.report-R-t.txt.gz", true},
	{"lisa sched_load (v6, no options)", shared + "/lisa/tests/assets/sched_load/trace.dat", "testdata/lisa_tests_assets_sched_load_trace.dat.report-R-t.txt.gz", true},
	{"lisa example_rtapp (v6)", shared + "/lisa/ipynb/deprecated/tutorial/example_rtapp/trace.dat", "testdata/lisa_ipynb_deprecated_tutorial_example_rtapp_trace.dat.report-R-t.txt.gz", true},
}

// openFixture opens a trace.dat, gunzipping ".gz" files into a temporary
// file first (trace.dat needs random access).
func openFixture(t testing.TB, path string) *Reader {
	t.Helper()
	if strings.HasSuffix(path, ".gz") {
		path = gunzipTemp(t, path)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func gunzipTemp(t testing.TB, path string) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, zr); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

var reportLine = regexp.MustCompile(`^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+([\w.-]+):\s*(.*)$`)
var droppedLine = regexp.MustCompile(`^CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]$`)

// TestReportEquivalence checks that the reader yields exactly the events
// trace-cmd report prints, in the same order: time (ns), CPU, pid, task
// name, event name and every field value; and lost-event markers.
func TestReportEquivalence(t *testing.T) {
	for _, tc := range reportCases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.dat); tc.public && err != nil {
				t.Skipf("public fixture not available: %v", err)
			}
			r := openFixture(t, tc.dat)
			golden := readGolden(t, tc.golden)
			compareReport(t, r, golden)
		})
	}
}

func readGolden(t testing.TB, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func compareReport(t *testing.T, r *Reader, golden []string) {
	n, bad := 0, 0
	fail := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for i, line := range golden {
		if m := droppedLine.FindStringSubmatch(line); m != nil {
			if !r.Next() {
				t.Fatalf("line %d: reader ended (%v), report has %q", i+1, r.Err(), line)
			}
			e := r.Event()
			if e.Kind != timeline.Lost || fmt.Sprint(e.Int(timeline.CPU)) != m[1] || (m[2] != "" && fmt.Sprint(e.Int(timeline.LostCount)) != m[2]) {
				fail("line %d: report %q, reader %s", i+1, line, describe(e))
			}
			continue
		}
		m := reportLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !r.Next() {
			t.Fatalf("line %d: reader ended (%v) after %d events, report has %q", i+1, r.Err(), n, line)
		}
		n++
		e := r.Event()
		ts := m[4] + m[5]
		name := e.Name
		if j := strings.IndexByte(name, ':'); j >= 0 {
			name = name[j+1:]
		}
		if fmt.Sprint(e.Time) != strings.TrimLeft(ts, "0") || fmt.Sprint(e.Int(timeline.CPU)) != strings.TrimLeft(m[3], "0")+map[bool]string{true: "0"}[strings.TrimLeft(m[3], "0") == ""] ||
			name != m[6] || fmt.Sprint(e.Int(timeline.CommonPID)) != m[2] {
			fail("line %d: report %q\n  reader %s", i+1, line, describe(e))
			continue
		}
		comm := strings.TrimSpace(m[1])
		switch comm {
		case "<...>":
			if e.IsSet(timeline.CommonComm) && r.f.cmdlines[int(e.Int(timeline.CommonPID))] != "" {
				fail("line %d: report has no name for pid %s, reader %q", i+1, m[2], e.Str(timeline.CommonComm))
			}
		case "<idle>":
			if e.Str(timeline.CommonComm) != IdleComm {
				fail("line %d: idle task named %q", i+1, e.Str(timeline.CommonComm))
			}
		default:
			if e.Str(timeline.CommonComm) != comm {
				fail("line %d: report comm %q, reader %q", i+1, comm, e.Str(timeline.CommonComm))
			}
		}
		fm := r.f.byID[int(r.f.order.Uint16(r.last.rec))]
		var names []string
		for _, fl := range fm.Fields {
			if !fl.Common {
				names = append(names, fl.Name)
			}
		}
		if msg := compareFields(e, names, m[7]); msg != "" {
			fail("line %d: %s\n  report %q\n  reader %s", i+1, msg, line, describe(e))
		}
	}
	if r.Next() {
		t.Errorf("reader has more events than the report: %s", describe(r.Event()))
	}
	if r.Err() != nil {
		t.Error(r.Err())
	}
	if bad > 0 {
		t.Errorf("%d mismatches in %d events", bad, n)
	}
	if n == 0 {
		t.Error("no events compared")
	}
}

// compareFields checks each "name=value" of a report -R body against the
// event, locating names in format order so string values may hold spaces.
func compareFields(e *timeline.Event, names []string, body string) string {
	pos := 0
	for i, name := range names {
		if !strings.HasPrefix(body[pos:], name+"=") {
			return fmt.Sprintf("expected %s= at byte %d of the body", name, pos)
		}
		start := pos + len(name) + 1
		end := len(body)
		if i+1 < len(names) {
			k := strings.Index(body[start:], " "+names[i+1]+"=")
			if k < 0 {
				return fmt.Sprintf("no %s= after %s", names[i+1], name)
			}
			end = start + k
		}
		val := body[start:end]
		pos = end
		if pos < len(body) && body[pos] == ' ' {
			pos++
		}
		if msg := compareValue(e, name, val); msg != "" {
			return msg
		}
	}
	return ""
}

func compareValue(e *timeline.Event, name, val string) string {
	if name == "prev_state" {
		if fmt.Sprint(e.Int(timeline.PrevStateRaw)) != val {
			return fmt.Sprintf("prev_state %s, reader raw %d", val, e.Int(timeline.PrevStateRaw))
		}
		return ""
	}
	// A field named cpu (sched_wake_idle_without_ipi, sched_load_se) is not
	// the recording CPU: it is kept in Fields.
	if c, ok := timeline.LookupCol(name); ok && c != timeline.CPU && e.IsSet(c) {
		if c.IsString() {
			if e.Str(c) != val {
				return fmt.Sprintf("%s %q, reader %q", name, val, e.Str(c))
			}
			return ""
		}
		if !intMatches(val, e.Int(c)) {
			return fmt.Sprintf("%s %s, reader %d", name, val, e.Int(c))
		}
		return ""
	}
	for _, f := range e.Fields {
		if f.Name != name {
			continue
		}
		switch f.Kind {
		case timeline.FieldString:
			// A trailing newline (ftrace:print buf) ends the report line.
			if strings.TrimRight(f.Str, "\n") != val {
				return fmt.Sprintf("%s %q, reader %q", name, val, f.Str)
			}
		case timeline.FieldInt, timeline.FieldUint:
			// trace-cmd prints instruction pointers as symbols.
			if !intMatches(val, f.Int) && !(name == "ip" && !isNumber(val)) {
				return fmt.Sprintf("%s %s, reader %d", name, val, f.Int)
			}
		}
		return ""
	}
	return fmt.Sprintf("field %s missing from the row", name)
}

// intMatches accepts the value as trace-cmd prints it: decimal, or hex
// when the event's print fmt uses %x for that field (clone_flags).
func intMatches(s string, v int64) bool {
	if d, err := strconv.ParseInt(s, 10, 64); err == nil && (d == v || int64(int32(d)) == int64(int32(v)) && d < 0) {
		return true
	}
	if d, err := strconv.ParseUint(s, 10, 64); err == nil && d == uint64(v) {
		return true
	}
	if d, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); err == nil && d == uint64(v) {
		return true
	}
	return false
}

func describe(e *timeline.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Time, e.Name)
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		if !e.IsSet(c) {
			continue
		}
		if c.IsString() {
			fmt.Fprintf(&b, " %s=%q", c.Name(), e.Str(c))
		} else {
			fmt.Fprintf(&b, " %s=%d", c.Name(), e.Int(c))
		}
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, " {%s %d %q %v}", f.Name, f.Int, f.Str, f.Ints)
	}
	return b.String()
}

func isNumber(s string) bool {
	_, err := strconv.ParseInt(strings.TrimPrefix(s, "0x"), 16, 64)
	return err == nil
}

// BenchmarkReader reads the guest-A schbench trace (v7 zstd, 8693 events).
// Compare with `time trace-cmd report -i <file> > /dev/null`.
func BenchmarkReader(b *testing.B) {
	path := fixtures + "/guestA-schbench.v7zstd.dat"
	for b.Loop() {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		r.Close()
		if n != 8693 {
			b.Fatal(n)
		}
	}
}
