package ftrace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

func readString(t *testing.T, text string) ([]timeline.Event, *Reader) {
	t.Helper()
	r, err := NewReader(strings.NewReader(text), "test.txt")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := timeline.ReadAll(r) // callers check r.Err() where it matters
	return out, r
}

// TestLineVariants covers line shapes of kernels 4.x to today and of
// trace-cmd and Android: comm names with spaces and dashes, TGID columns,
// 4- and 5-character flags, no flags, success=, R+, plugin formats.
func TestLineVariants(t *testing.T) {
	cases := []struct {
		name, line, want string
	}{
		{"comm with spaces and dashes",
			"  Web Content-x-12-1234   [003] d..2.   100.000001: sched_switch: prev_comm=Web Content-x-12 prev_pid=1234 prev_prio=120 prev_state=R+ ==> next_comm=my thread==> x next_pid=7 next_prio=100",
			`100000001000 sched_switch cpu=3 common_pid=1234 common_comm="Web Content-x-12" common_flags=1 common_preempt_count=2 prev_comm="Web Content-x-12" prev_pid=1234 prev_prio=120 prev_state="R+" prev_state_raw=256 next_comm="my thread==> x" next_pid=7 next_prio=100`},
		{"tgid column, 4 flags, old wakeup with success",
			"          <idle>-0     (-----) [001] dNh4   435.967678: sched_wakeup: comm=memfd:sealed-91 pid=2272 prio=120 success=1 target_cpu=001",
			`435967678000 sched_wakeup cpu=1 common_pid=0 common_comm="swapper" common_flags=45 common_preempt_count=4 comm="memfd:sealed-91" pid=2272 prio=120 target_cpu=1 success=1`},
		{"tgid value, migrate",
			"     kworker/0:1-55    (   55) [000] ....   12.000500: sched_migrate_task: comm=a b pid=9 prio=120 orig_cpu=0 dest_cpu=1",
			`12000500000 sched_migrate_task cpu=0 common_pid=55 common_tgid=55 common_comm="kworker/0:1" common_flags=0 common_preempt_count=0 comm="a b" pid=9 prio=120 orig_cpu=0 dest_cpu=1`},
		{"no flags (trace_pipe, irq-info off), ns time",
			"            bash-4401  [001]   435.965210123: sched_waking: comm=bash pid=4405 prio=120 target_cpu=000",
			`435965210123 sched_waking cpu=1 common_pid=4401 common_comm="bash" comm="bash" pid=4405 prio=120 target_cpu=0`},
		{"old state layout letters",
			"            bash-4401  [001] d..2   435.965210: sched_switch: prev_comm=bash prev_pid=4401 prev_prio=120 prev_state=D|K ==> next_comm=swapper/1 next_pid=0 next_prio=120",
			""}, // K is not a ≥4.14 letter: reported as unparsable below
		{"plugin switch and wakeup",
			"   stress-ng-cpu-4411  [001]   784.964932: sched_switch:         stress-ng-cpu:4411 [120] W ==> rcu_preempt:15 [120]",
			`784964932000 sched_switch cpu=1 common_pid=4411 common_comm="stress-ng-cpu" prev_comm="stress-ng-cpu" prev_pid=4411 prev_prio=120 prev_state="I" prev_state_raw=128 next_comm="rcu_preempt" next_pid=15 next_prio=120`},
		{"plugin wakeup old success",
			"   a:b-1  [001]   1.000001: sched_wakeup:         x y:15 [120] success=1 CPU:001",
			`1000001000 sched_wakeup cpu=1 common_pid=1 common_comm="a:b" comm="x y" pid=15 prio=120 target_cpu=1 success=1`},
		{"unknown event keeps fields, cpu field is not the cpu column",
			"  schbench-msg-1238  [006]    26.147636: sched_wake_idle_without_ipi:  cpu=4",
			`26147636000 sched_wake_idle_without_ipi cpu=6 common_pid=1238 common_comm="schbench-msg" {cpu 4}`},
		{"print event without key=value",
			"              sh-6975  [000] 259445.530470: tracing_mark_write: B|6975|doing work",
			`259445530470000 ftrace:tracing_mark_write cpu=0 common_pid=6975 common_comm="sh" {body "B|6975|doing work"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, r := readString(t, tc.line+"\n")
			if tc.want == "" {
				if r.Errors() != 1 || len(evs) != 0 {
					t.Fatalf("want one unparsable line, got %d rows, %d errors", len(evs), r.Errors())
				}
				return
			}
			if len(evs) != 1 || r.Err() != nil || r.Errors() != 0 {
				t.Fatalf("got %d rows, err %v, %d bad lines %v", len(evs), r.Err(), r.Errors(), r.Meta().Source.Extra)
			}
			if got := rowString(&evs[0], nil); got != tc.want {
				t.Errorf("\n got  %s\n want %s", got, tc.want)
			}
		})
	}
}

// TestOldKernelRelease: with the release known, letters of older layouts
// map back to their own bits.
func TestOldKernelRelease(t *testing.T) {
	p := NewBodyParser("4.9.0")
	var e timeline.Event
	if err := p.Parse(&e, "sched_switch", "prev_comm=bash prev_pid=1 prev_prio=120 prev_state=D|K ==> next_comm=x next_pid=2 next_prio=120"); err != nil {
		t.Fatal(err)
	}
	if e.Str(timeline.PrevState) != "D|K" || e.Int(timeline.PrevStateRaw) != 0x82 {
		t.Errorf("got %q %#x", e.Str(timeline.PrevState), e.Int(timeline.PrevStateRaw))
	}
	e.Reset()
	if err := p.Parse(&e, "sched_switch", "prev_comm=bash prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=x next_pid=2 next_prio=120"); err != nil {
		t.Fatal(err)
	}
	if e.Int(timeline.PrevStateRaw) != 0x1000 {
		t.Errorf("4.9 R+ raw %#x, want 0x1000", e.Int(timeline.PrevStateRaw))
	}
}

// TestLostMarkers: LOST / DROPPED / buffer-started markers become lost
// rows placed before the next event of their CPU and are counted.
func TestLostMarkers(t *testing.T) {
	text := `# tracer: nop
#
# entries-in-buffer/entries-written: 3/10   #P:2
#
##### CPU 1 buffer started ####
            bash-1  [000] d..2.   1.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=000
CPU:0 [LOST 7 EVENTS]
            bash-1  [001] d..2.   1.000002: sched_waking: comm=a pid=2 prio=120 target_cpu=000
            bash-1  [000] d..2.   1.000003: sched_waking: comm=a pid=2 prio=120 target_cpu=000
CPU:1 [EVENTS DROPPED]
`
	evs, r := readString(t, text)
	var got []string
	for _, e := range evs {
		got = append(got, rowString(&e, nil))
	}
	want := []string{
		`1000001000 sched_waking cpu=0 common_pid=1 common_comm="bash" common_flags=1 common_preempt_count=2 comm="a" pid=2 prio=120 target_cpu=0`,
		`1000002000 lost cpu=1 lost=0 {reason "count not stored"}`,
		`1000002000 sched_waking cpu=1 common_pid=1 common_comm="bash" common_flags=1 common_preempt_count=2 comm="a" pid=2 prio=120 target_cpu=0`,
		`1000003000 lost cpu=0 lost=7`,
		`1000003000 sched_waking cpu=0 common_pid=1 common_comm="bash" common_flags=1 common_preempt_count=2 comm="a" pid=2 prio=120 target_cpu=0`,
		`1000003000 lost cpu=1 lost=0 {reason "count not stored"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	l := r.Meta().Summary.Lost
	if l.Events != 14 || l.ByCPU["0"] != 7 || l.ByCPU["-1"] != 7 || r.Meta().Source.NrCPUs != 2 {
		t.Errorf("lost %+v, cpus %d", l, r.Meta().Source.NrCPUs)
	}
}

// TestUnknownComm: "<...>" lines take the name a sched_switch gave.
func TestUnknownComm(t *testing.T) {
	text := `           <...>-5  [000] d..2.   1.000001: sched_switch: prev_comm=foo prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=bar next_pid=6 next_prio=120
           <...>-6  [000] d..2.   1.000002: sched_waking: comm=a pid=2 prio=120 target_cpu=000
           <...>-9  [000] d..2.   1.000003: sched_waking: comm=a pid=2 prio=120 target_cpu=000
`
	evs, _ := readString(t, text)
	if len(evs) != 3 || evs[0].Str(timeline.CommonComm) != "foo" || evs[1].Str(timeline.CommonComm) != "bar" || evs[2].IsSet(timeline.CommonComm) {
		for _, e := range evs {
			t.Log(rowString(&e, nil))
		}
		t.Error("comm lookup")
	}
}

// TestBadInput: a bad line is reported with its number and skipped; the
// unsupported tracefs modes stop with a clear error.
func TestBadInput(t *testing.T) {
	text := "# tracer: nop\n            bash-1  [000] d..2.   1.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=000\nthis is not a trace line\n            bash-1  [000] d..2.   1.000002: sched_waking: comm=a pid=x prio=120 target_cpu=000\n"
	evs, r := readString(t, text)
	if len(evs) != 1 || r.Errors() != 2 || r.Err() != nil {
		t.Fatalf("rows %d errors %d err %v", len(evs), r.Errors(), r.Err())
	}
	if e := r.Meta().Source.Extra["parse_error_1"]; !strings.Contains(e, "test.txt: line 3") {
		t.Errorf("first error %q", e)
	}
	if e := r.Meta().Source.Extra["parse_error_2"]; !strings.Contains(e, "line 4") || !strings.Contains(e, "pid") {
		t.Errorf("second error %q", e)
	}
	{
		r := openText(t, filepath.Join(textDir, "tracefs_trace_raw.txt"))
		n := 0
		for r.Next() {
			n++
		}
		if n != 0 || r.Err() == nil || !strings.Contains(r.Err().Error(), "line 13: options/raw") || !strings.Contains(r.Err().Error(), "trace.dat") {
			t.Errorf("options/raw: want a clear error at the first event line, got %d rows, %v", n, r.Err())
		}
	}
	long := "            bash-1  [000] d..2.   1.000001: x: a=" + strings.Repeat("y", MaxLineBytes) + "\n"
	if _, r := readString(t, long); r.Err() == nil || !strings.Contains(r.Err().Error(), "line 1") {
		t.Errorf("long line: %v", r.Err())
	}
}

// TestHackbenchText reads whole tracefs captures of a real 6.1 kernel
// (guest-A copied here; B and D from the shared folder when present),
// expecting the event counts the fixtures' README gives.
func TestHackbenchText(t *testing.T) {
	for _, tc := range []struct {
		path string
		rows int
	}{
		{filepath.Join(textDir, "guestA-hackbench.ftrace.txt.gz"), 11767},
		{shared + "guest-B-1s4c2t/hackbench.ftrace.txt.gz", 15032},
		{shared + "guest-D-1s8c1t/hackbench.ftrace.txt.gz", 15514},
	} {
		t.Run(filepath.Base(filepath.Dir(tc.path)), func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skip(err)
			}
			checkWhole(t, tc.path, tc.rows)
		})
	}
}

func checkWhole(t *testing.T, path string, rows int) {
	r := openText(t, path)
	n, sw := 0, 0
	last := int64(0)
	for r.Next() {
		e := r.Event()
		if e.Time < last {
			t.Fatalf("row %d goes back in time", n)
		}
		last = e.Time
		if e.Kind == timeline.SchedSwitch {
			sw++
			if !e.IsSet(timeline.PrevState) || !e.IsSet(timeline.NextPID) {
				t.Fatalf("incomplete switch %s", rowString(e, nil))
			}
		}
		n++
	}
	if r.Err() != nil || r.Errors() != 0 {
		t.Fatalf("%v, %d bad lines: %v", r.Err(), r.Errors(), r.Meta().Source.Extra)
	}
	if n != rows || r.Meta().Source.NrCPUs != 8 {
		t.Errorf("%d rows (want %d, the README's count), %d cpus", n, rows, r.Meta().Source.NrCPUs)
	}
}

func TestSniff(t *testing.T) {
	for _, f := range []string{"tracefs_trace_default.txt", "tracefs_trace_noirqinfo.txt", "tracecmd_report_raw.txt"} {
		b, err := os.ReadFile(filepath.Join(textDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !Sniff(b[:4096]) {
			t.Errorf("%s not sniffed", f)
		}
		// trace_pipe: no header at all.
		if i := bytes.Index(b, []byte("\n  ")); f == "tracefs_trace_default.txt" && !Sniff(b[i+1:i+4096]) {
			t.Errorf("%s body not sniffed", f)
		}
	}
	for _, f := range []string{"perf_script_default.txt", "perf_script_ns_fields.txt"} {
		b, _ := os.ReadFile(filepath.Join(textDir, f))
		if Sniff(b[:4096]) {
			t.Errorf("%s sniffed as ftrace", f)
		}
	}
}

// FuzzReader feeds mutated text (seeds: the fixtures' first lines and
// the line variants) to the reader.
func FuzzReader(f *testing.F) {
	for _, name := range []string{"tracefs_trace_default.txt", "tracefs_trace_record_tgid.txt", "tracefs_trace_noirqinfo.txt", "tracecmd_report_default.txt", "tracecmd_report_raw.txt", "tracecmd_report_noplugins.txt", "tracefs_trace_latency.txt"} {
		b, err := os.ReadFile(filepath.Join(textDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 3000)])
	}
	f.Add([]byte("CPU:0 [LOST 7 EVENTS]\n##### CPU 1 buffer started ####\n   a b-c-1 (  1) [000] dNh4.   1.000001: sched_switch: a:1 [1] D|W ==> b:2 [3]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		for r.Next() {
			_ = r.Event()
		}
	})
}

// TestPublicText reads text traces of other projects (systrace, LISA
// trace-cmd -R output, pytimechart, Perfetto's systrace tests) from the
// shared folder; skipped when it is absent.
func TestPublicText(t *testing.T) {
	const pub = "../../../shared/fixtures/public/"
	for _, tc := range []struct {
		path      string
		rows, bad int
	}{
		{"catapult/tracing/test_data/android_systrace.txt", -1, 0},
		{"lisa/tests/assets/trace_txt/trace.txt", 2941, 0},
		{"pytimechart/timechart/tests/test_db/tgidtrace.txt", -1, 5}, // the HTML lines after the text
		{"perfetto/test/trace_processor/diff_tests/parser/parsing/sched_blocked_systrace.systrace", 6, 0},
		{"trappy/tests/trace_sched.txt", -1, 0},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			f, err := os.Open(pub + tc.path)
			if err != nil {
				t.Skip(err)
			}
			defer f.Close()
			r, _ := NewReader(f, tc.path)
			n := 0
			for r.Next() {
				n++
			}
			if r.Err() != nil || r.Errors() != tc.bad || n == 0 || (tc.rows >= 0 && n != tc.rows) {
				t.Errorf("%d rows, err %v, %d bad lines: %v", n, r.Err(), r.Errors(), r.Meta().Source.Extra)
			}
		})
	}
}

// TestPerCPUFilesConcatenated: per_cpu/cpuN/trace files put one after the
// other are merged back into time order (within the reorder window).
func TestPerCPUFilesConcatenated(t *testing.T) {
	var b strings.Builder
	for cpu := 0; cpu < 2; cpu++ {
		for i := 0; i < 50; i++ {
			fmt.Fprintf(&b, "            bash-1  [%03d] d..2.   1.%06d: sched_waking: comm=a pid=2 prio=120 target_cpu=000\n", cpu, 2*i+cpu)
		}
	}
	evs, r := readString(t, b.String())
	if len(evs) != 100 || r.Meta().Source.Extra["rows_out_of_time_order"] != "" {
		t.Fatalf("%d rows, %v", len(evs), r.Meta().Source.Extra)
	}
	for i := range evs {
		if evs[i].Time != 1e9+int64(i)*1000 || evs[i].Int(timeline.CPU) != int64(i%2) {
			t.Fatalf("row %d: %s", i, rowString(&evs[i], nil))
		}
	}
}

// BenchmarkHackbench reads 11767 tracefs lines.
func BenchmarkHackbench(b *testing.B) {
	for b.Loop() {
		r := openText(b, filepath.Join(textDir, "guestA-hackbench.ftrace.txt.gz"))
		for r.Next() {
		}
	}
}

// TestLatencyFormatLines covers options/latency-format lines: delay marks,
// 4- and 5-character flags, comms cut to 8 with spaces and dashes, times
// past 9999 µs, clocks not in ns (no "us"), and names restored from fields.
func TestLatencyFormatLines(t *testing.T) {
	text := `# tracer: nop
#
# nop latency trace v1.1.5 on 4.19.0
# --------------------------------------------------------------------
# latency: 0 us, #5/7, CPU#0 | (M:desktop VP:0, KP:0, SP:0 HP:0 #P:4)
#
  <idle>-0       3d.h1    7us+: sched_waking: comm=my thread pid=77 prio=120 target_cpu=003
my threa-77      3d..2   17us!: sched_switch: prev_comm=my thread-x prev_pid=77 prev_prio=120 prev_state=R+ ==> next_comm=kworker/3:1 next_pid=9 next_prio=120
kworker/-9       3dN.2. 123456us$: sched_stat_runtime: comm=kworker/3:1 pid=9 runtime=5 [ns]
 a b-c-12        2...1. 1234567: sched_process_free: comm=a b-c pid=12 prio=120
`
	evs, r := readString(t, text)
	if r.Err() != nil || r.Errors() != 0 || len(evs) != 4 {
		t.Fatalf("rows %d errors %d %v err %v", len(evs), r.Errors(), r.Meta().Source.Extra, r.Err())
	}
	want := []string{
		`7000 sched_waking cpu=3 common_pid=0 common_comm="swapper" common_flags=9 common_preempt_count=1`,
		`17000 sched_switch cpu=3 common_pid=77 common_comm="my thread-x" common_flags=1 common_preempt_count=2`,
		`1234567 sched_process_free cpu=2 common_pid=12 common_comm="a b-c" common_flags=0 common_preempt_count=1`, // clock not in ns: no "us"
		`123456000 sched_stat_runtime cpu=3 common_pid=9 common_comm="kworker/3:1" common_flags=37 common_preempt_count=2`,
	}
	for i, w := range want {
		if g := rowString(&evs[i], nil); !strings.HasPrefix(g, w) {
			t.Errorf("row %d:\n got  %s\n want %s...", i, g, w)
		}
	}
	m := r.Meta()
	if m.Source.NrCPUs != 4 || m.Summary.Lost.Events != 2 || m.Source.OSRelease != "4.19.0" || !strings.Contains(m.Source.Extra["time_base"], "time_start") {
		t.Errorf("meta: cpus %d lost %d release %q extra %v", m.Source.NrCPUs, m.Summary.Lost.Events, m.Source.OSRelease, m.Source.Extra)
	}
}
