package perfetto

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/ingest/perfdata"
	ingest "github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/ingest/tracedat"
	"github.com/schedreplay/replay/timeline"
)

// Columns a Perfetto trace cannot carry: FtraceEvent has no
// preempt_count, sched_process_exit no group_dead; common_comm and
// common_tgid are rebuilt by the reader (names from sched_switch, thread
// groups from the ProcessTree), so they are checked apart.
var notCarried = map[timeline.Col]bool{
	timeline.CommonPreemptCount: true, timeline.GroupDead: true,
	timeline.CommonComm: true, timeline.CommonTGID: true,
}

func rowString(e *timeline.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Time, e.Name)
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		if notCarried[c] || !e.IsSet(c) {
			continue
		}
		if c.IsString() {
			fmt.Fprintf(&b, " %s=%q", c.Name(), e.Str(c))
		} else {
			fmt.Fprintf(&b, " %s=%d", c.Name(), e.Int(c))
		}
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, " %s:%v%s", f.Name, f.Int, f.Str)
	}
	return b.String()
}

// exported reports rows the export writes (events with a CPU that are not
// perf side-band records or loss markers).
func exported(e *timeline.Event) bool {
	return e.IsSet(timeline.CPU) && e.Kind != timeline.Lost && !strings.HasPrefix(e.Name, "perf:")
}

func roundTrip(t *testing.T, open func() (timeline.EventReader, error), policy string) {
	t.Helper()
	r, err := open()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := Write(&buf, r, Options{Policy: policy, FlushEvents: 500})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err = open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	back, err := ingest.NewReader(bytes.NewReader(buf.Bytes()), "export")
	if err != nil {
		t.Fatal(err)
	}
	// Rows of equal time may come in another order across CPUs: compare
	// per CPU, in order.
	want := map[int64][]string{}
	names := 0
	for r.Next() {
		if e := r.Event(); exported(e) {
			// perf gives the last switch-out of an exited thread tid -1;
			// Perfetto books sched_switch to prev_pid, which the kernel's
			// common_pid always is.
			if e.Kind == timeline.SchedSwitch && e.Int32(timeline.CommonPID) == -1 {
				e.SetInt(timeline.CommonPID, e.Int(timeline.PrevPID))
			}
			want[e.Int(timeline.CPU)] = append(want[e.Int(timeline.CPU)], rowString(e))
		}
	}
	got := map[int64][]string{}
	n := 0
	for back.Next() {
		e := back.Event()
		if e.Kind == timeline.Lost {
			continue
		}
		got[e.Int(timeline.CPU)] = append(got[e.Int(timeline.CPU)], rowString(e))
		n++
		if e.IsSet(timeline.CommonComm) {
			names++
		}
	}
	if err := back.Err(); err != nil {
		t.Fatal(err)
	}
	if int64(n) != st.Events {
		t.Errorf("read back %d events, wrote %d", n, st.Events)
	}
	for cpu, w := range want {
		g := got[cpu]
		if len(g) != len(w) {
			t.Errorf("cpu %d: %d rows back, want %d", cpu, len(g), len(w))
		}
		bad := 0
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				if bad++; bad <= 3 {
					t.Errorf("cpu %d row %d:\n got  %s\n want %s", cpu, i, g[i], w[i])
				}
			}
		}
	}
	if names == 0 {
		t.Errorf("no common_comm on the rows read back")
	}
	if policy != "" && back.Meta().Source.Extra["policy"] != policy {
		t.Errorf("policy %q read back, want %q", back.Meta().Source.Extra["policy"], policy)
	}
	t.Logf("%d events, %d threads in the ProcessTree, skipped %v", st.Events, st.Threads, st.Skipped)
}

func TestRoundTripPerfData(t *testing.T) {
	for _, name := range []string{"hackbench.data", "perf_sched_pipe.data", "hackbench_lost.data"} {
		t.Run(name, func(t *testing.T) {
			roundTrip(t, func() (timeline.EventReader, error) { return perfdata.Open("../../fixtures/perf/" + name) }, "")
		})
	}
}

func TestRoundTripTraceDat(t *testing.T) {
	roundTrip(t, func() (timeline.EventReader, error) {
		return tracedat.Open("../../fixtures/tracedat/guestA-schbench.v7zstd.dat")
	}, "")
}

func TestRoundTripPolicy(t *testing.T) {
	roundTrip(t, func() (timeline.EventReader, error) {
		return perfdata.Open("../../fixtures/perf/perf_sched_record.data")
	}, "wake-affine-off")
}

// TestLatencySurvivesExport: `replay latency` on the Perfetto export gives
// the numbers it gives on the original perf.data.
func TestLatencySurvivesExport(t *testing.T) {
	path := "../../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data"
	run := func(r timeline.EventReader) *analysis.Report {
		rep, err := analysis.Run(r, analysis.Options{TaskDelays: analysis.PerfLatency67})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	r, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want := run(r)
	r.Close()
	r, _ = perfdata.Open(path)
	var buf bytes.Buffer
	if _, err := Write(&buf, r, Options{}); err != nil {
		t.Fatal(err)
	}
	r.Close()
	back, err := ingest.NewReader(bytes.NewReader(buf.Bytes()), "export")
	if err != nil {
		t.Fatal(err)
	}
	got := run(back)
	if got.WakeupLatency != want.WakeupLatency || got.InvoluntarySwitches != want.InvoluntarySwitches || got.Slices != want.Slices {
		t.Errorf("wakeup latency %+v, involuntary %d, slices %d; from perf.data %+v, %d, %d",
			got.WakeupLatency, got.InvoluntarySwitches, got.Slices, want.WakeupLatency, want.InvoluntarySwitches, want.Slices)
	}
	sum := func(rep *analysis.Report) (run, delay int64) {
		for _, ts := range rep.Tasks {
			run += ts.RunNS
			delay += ts.TotalNS
		}
		return
	}
	gr, gd := sum(got)
	wr, wd := sum(want)
	if gr != wr || gd != wd {
		t.Errorf("run %d, task delays %d; from perf.data %d, %d", gr, gd, wr, wd)
	}
}
