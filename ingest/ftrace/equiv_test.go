package ftrace

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest/tracedat"
	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

const (
	textDir = "../../fixtures/text"
	datDir  = "../../fixtures/tracedat"
)

// What a text rendering keeps of a binary row.
type keeps struct {
	usec   bool // times rounded to µs (ns when false)
	flags  bool // flags column: common_flags, common_preempt_count
	tgid   bool // TGID column (the binary has none: checked present, then ignored)
	plugin bool // trace-cmd sched_switch plugin: prev_state bits 0-7 only
	relUS  bool // tracefs latency-format: µs since an unknown time_start
}

// textCases: every text rendering of a trace.dat snapshot must give the
// binary reader's rows, exactly up to what the text cannot hold (keeps).
var textCases = []struct {
	text, dat string
	k         keeps
}{
	{"tracefs_trace_default.txt", "recorded.v7zstd.dat", keeps{usec: true, flags: true}},
	{"tracefs_trace_record_tgid.txt", "recorded.v7zstd.dat", keeps{usec: true, flags: true, tgid: true}},
	{"tracefs_trace_noirqinfo.txt", "recorded.v7zstd.dat", keeps{usec: true}},
	{"tracecmd_report_noplugins.txt", "recorded.v7zstd.dat", keeps{usec: true}},
	{"tracecmd_report_raw.txt", "recorded.v7zstd.dat", keeps{usec: true}},
	{"tracecmd_report_default.txt", "recorded.v7zstd.dat", keeps{usec: true, plugin: true}},
	{"guestA-schbench.report.txt.gz", "guestA-schbench.v7zstd.dat", keeps{usec: true, plugin: true}},
	{"guestA-schbench.report-N.txt.gz", "guestA-schbench.v7zstd.dat", keeps{usec: true}},
	{"tracecmd_report_latency_noplugins.txt.gz", "recorded.v7zstd.dat", keeps{usec: true, flags: true}},
	{"tracefs_trace_latency.txt", "recorded.v7zstd.dat", keeps{relUS: true, flags: true}},
	// Other guests of the same kernel, from the shared folder (skipped
	// when absent): trace-cmd report default against the trace.dat.
	{shared + "guest-B-1s4c2t/schbench.trace.dat.report.txt.gz", shared + "guest-B-1s4c2t/schbench.trace.dat", keeps{usec: true, plugin: true}},
	{shared + "guest-D-1s8c1t/schbench.trace.dat.report.txt.gz", shared + "guest-D-1s8c1t/schbench.trace.dat", keeps{usec: true, plugin: true}},
}

const shared = "../../../shared/fixtures/kernels/"

func fixturePath(dir, name string) string {
	if strings.HasPrefix(name, "../") {
		return name
	}
	return filepath.Join(dir, name)
}

func openText(t testing.TB, path string) *Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var rd io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	}
	r, err := NewReader(rd, path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTextEqualsTraceDat(t *testing.T) {
	for _, tc := range textCases {
		t.Run(strings.TrimPrefix(tc.text, shared), func(t *testing.T) {
			if _, err := os.Stat(fixturePath(datDir, tc.dat)); err != nil && strings.HasPrefix(tc.dat, shared) {
				t.Skip(err)
			}
			tr := openText(t, fixturePath(textDir, tc.text))
			br, err := tracedat.Open(fixturePath(datDir, tc.dat))
			if err != nil {
				t.Fatal(err)
			}
			defer br.Close()
			var sd *tracefmt.StateDecoder
			if tc.k.plugin {
				sd = tracefmt.StateDecoderForKernel(br.Meta().Source.OSRelease)
			}
			n, bad := 0, 0
			// latency-format: text µs = round((ns - start) / 1000) for one
			// unknown start; each row bounds start to [lo, hi).
			lo, hi := int64(-1<<62), int64(1<<62)
			for br.Next() {
				if !tr.Next() {
					t.Fatalf("text ended (%v) after %d rows; binary has %s", tr.Err(), n, rowString(br.Event(), nil))
				}
				want := expected(br.Event(), tc.k, sd)
				got := tr.Event()
				if tc.k.relUS {
					// ns - 1000*us - 500 <= start < ns - 1000*us + 500
					d := br.Event().Time - got.Time
					lo, hi = max(lo, d-500), min(hi, d+500)
					if lo >= hi {
						t.Errorf("row %d: %d µs does not fit one time_start for all rows (binary %d ns)", n, got.Time/1000, br.Event().Time)
						lo, hi = d-500, d+500
					}
					want.Time = got.Time
				}
				if tc.k.tgid && got.Kind != timeline.Lost && !got.IsSet(timeline.CommonTGID) && got.Int(timeline.CommonPID) != 0 {
					t.Errorf("row %d: tgid column not read: %s", n, rowString(got, nil))
				}
				skip := []timeline.Col{}
				if tc.k.tgid {
					skip = append(skip, timeline.CommonTGID)
				}
				if g, w := rowString(got, skip), rowString(want, skip); g != w {
					if bad++; bad < 10 {
						t.Errorf("row %d:\n text   %s\n binary %s", n, g, w)
					}
				}
				n++
			}
			if br.Err() != nil {
				t.Fatal(br.Err())
			}
			if tr.Next() {
				t.Errorf("text has more rows than the binary: %s", rowString(tr.Event(), nil))
			}
			if tr.Err() != nil || tr.Errors() != 0 {
				t.Errorf("text errors: %v, %d unparsable lines %v", tr.Err(), tr.Errors(), tr.Meta().Source.Extra)
			}
			if bad > 0 {
				t.Errorf("%d of %d rows differ", bad, n)
			}
			if tc.k.relUS {
				if got := tr.Meta().Source.Extra["time_base"]; !strings.Contains(got, "time_start") {
					t.Errorf("time base not stated: %q", got)
				}
				t.Logf("%d rows equal; times = round((ns - time_start)/1000) µs for time_start in [%d, %d)", n, lo, hi)
				return
			}
			t.Logf("%d rows equal", n)
		})
	}
}

// expected is what a text rendering of binary row b must give.
func expected(b *timeline.Event, k keeps, sd *tracefmt.StateDecoder) *timeline.Event {
	var e timeline.Event
	e.CopyFrom(b)
	if k.usec {
		// tracefs and trace-cmd round ns to the nearest µs (ns2usecs).
		e.Time = (e.Time + 500) / 1000 * 1000
	}
	if !k.flags {
		e.Unset(timeline.CommonFlags)
		e.Unset(timeline.CommonPreemptCount)
	}
	if k.plugin && e.Kind == timeline.SchedSwitch {
		raw := e.Int(timeline.PrevStateRaw) & 0xff
		e.SetInt(timeline.PrevStateRaw, raw)
		e.SetStr(timeline.PrevState, sd.Letters(raw))
	}
	return &e
}

func rowString(e *timeline.Event, skip []timeline.Col) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Time, e.Name)
outer:
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		if !e.IsSet(c) {
			continue
		}
		for _, s := range skip {
			if s == c {
				continue outer
			}
		}
		if c.IsString() {
			fmt.Fprintf(&b, " %s=%q", c.Name(), e.Str(c))
		} else {
			fmt.Fprintf(&b, " %s=%d", c.Name(), e.Int(c))
		}
	}
	for _, f := range e.Fields {
		switch f.Kind {
		case timeline.FieldString:
			fmt.Fprintf(&b, " {%s %q}", f.Name, f.Str)
		case timeline.FieldInt, timeline.FieldUint:
			fmt.Fprintf(&b, " {%s %d}", f.Name, f.Int)
		default:
			fmt.Fprintf(&b, " {%s %v %x}", f.Name, f.Ints, f.Bytes)
		}
	}
	return b.String()
}
