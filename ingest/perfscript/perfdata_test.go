package perfscript

import (
	"os"
	"testing"

	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/timeline"
)

// perfPipe is the perf.data the perf script texts were printed from. It is
// a recorded fixture of the shared folder (not copied: the perf.data
// reader's own fixtures cover it); the test skips when it is absent.
const perfPipe = "../../../shared/fixtures/recorded/perf_sched_pipe.data"

// TestSameAsPerfData: perf script text gives the perf.data reader's rows
// for the same samples, exactly up to what the text does not print
// (common_flags/common_preempt_count; tgid without the pid column; ns
// digits without --ns).
func TestSameAsPerfData(t *testing.T) {
	if _, err := os.Stat(perfPipe); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		text     string
		ns, tgid bool
	}{{"perf_script_default.txt", false, false}, {"perf_script_ns_fields.txt", true, true}} {
		t.Run(tc.text, func(t *testing.T) {
			text, _ := readFile(t, tc.text)
			pr, err := perfdata.Open(perfPipe)
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			i, bad := 0, 0
			for pr.Next() {
				b := pr.Event()
				if b.Kind == timeline.PerfComm || b.Kind == timeline.PerfFork || b.Kind == timeline.PerfExit || b.Name == "perf:switch" {
					continue // side-band records: perf script prints none by default
				}
				if i >= len(text) {
					t.Fatalf("text has %d rows, perf.data more: %s", len(text), rowString(b))
				}
				var want timeline.Event
				want.CopyFrom(b)
				want.Unset(timeline.CommonFlags)
				want.Unset(timeline.CommonPreemptCount)
				if !tc.tgid {
					want.Unset(timeline.CommonTGID)
				}
				if !tc.ns {
					want.Time -= want.Time % 1000
				}
				if g, w := rowString(&text[i]), rowString(&want); g != w {
					if bad++; bad <= 10 {
						t.Errorf("row %d:\n text      %s\n perf.data %s", i, g, w)
					}
				}
				i++
			}
			if err := pr.Err(); err != nil {
				t.Fatal(err)
			}
			if i != len(text) || bad > 0 {
				t.Errorf("%d perf.data rows, %d text rows, %d differ", i, len(text), bad)
			}
		})
	}
}
