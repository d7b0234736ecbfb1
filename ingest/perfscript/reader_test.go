package perfscript

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

const textDir = "../../fixtures/text"

func readFile(t testing.TB, name string) ([]timeline.Event, *Reader) {
	t.Helper()
	r, err := Open(filepath.Join(textDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := timeline.ReadAll(r)
	if err != nil || r.Errors() != 0 {
		t.Fatalf("%s: %v, %d bad lines %v", name, r.Err(), r.Errors(), r.Meta().Source.Extra)
	}
	return out, r
}

func rowString(e *timeline.Event, skip ...timeline.Col) string {
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
		fmt.Fprintf(&b, " {%s k%d %d %q}", f.Name, f.Kind, f.Int, f.Str)
	}
	return b.String()
}

// TestFieldVariants: the default perf script text and the --ns -F
// comm,tid,pid,... text of the same perf.data give the same rows, up to
// what the default drops (ns digits, tgid).
func TestFieldVariants(t *testing.T) {
	def, _ := readFile(t, "perf_script_default.txt")
	ns, _ := readFile(t, "perf_script_ns_fields.txt")
	if len(def) != 478 || len(ns) != 478 {
		t.Fatalf("rows: default %d, ns %d; want the 478 samples of perf_sched_pipe.data", len(def), len(ns))
	}
	for i := range def {
		e := ns[i]
		if !e.IsSet(timeline.CommonTGID) {
			t.Fatalf("row %d: pid/tid column not read", i)
		}
		e.Unset(timeline.CommonTGID)
		e.Time -= e.Time % 1000 // perf truncates to µs
		if g, w := rowString(&def[i]), rowString(&e); g != w {
			t.Fatalf("row %d:\n default %s\n ns      %s", i, g, w)
		}
	}
	counts := map[string]int{}
	for _, e := range def {
		counts[e.Name]++
	}
	if counts["sched_switch"] == 0 || counts["task:task_newtask"] == 0 {
		t.Errorf("event counts %v", counts)
	}
}

func TestLines(t *testing.T) {
	text := `     Web Content 2  1234/1240 [002]   10.000001234: sched:sched_switch: prev_comm=Web Content 2 prev_pid=1240 prev_prio=120 prev_state=R+ ==> next_comm=swapper/2 next_pid=0 next_prio=120
	    ffffffff8100 schedule (vmlinux)

         swapper     0 [001]    10.000002:    1 sched:sched_waking: comm=a-b pid=7 prio=120 target_cpu=001
PERF_RECORD_COMM: bash:1/1
          perf 5    10.000003: sched:sched_process_exit: comm=perf pid=5 prio=120 group_dead=true
     6 [003]    10.000004: sched:sched_process_free: comm=x pid=6 prio=120
`
	r, err := NewReader(strings.NewReader(text), "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r.Next() {
		got = append(got, rowString(r.Event()))
	}
	want := []string{
		`10000001234 sched_switch cpu=2 common_pid=1240 common_tgid=1234 common_comm="Web Content 2" prev_comm="Web Content 2" prev_pid=1240 prev_prio=120 prev_state="R+" prev_state_raw=256 next_comm="swapper/2" next_pid=0 next_prio=120`,
		`10000002000 sched_waking cpu=1 common_pid=0 common_comm="swapper" comm="a-b" pid=7 prio=120 target_cpu=1`,
		`10000003000 sched_process_exit common_pid=5 common_comm="perf" comm="perf" pid=5 prio=120 group_dead=1`,
		`10000004000 sched_process_free cpu=3 common_pid=6 comm="x" pid=6 prio=120`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || r.Errors() != 0 {
		t.Errorf("got\n%s\nwant\n%s\nerrors %v", strings.Join(got, "\n"), strings.Join(want, "\n"), r.Meta().Source.Extra)
	}
	if r.Meta().Summary.Dropped["perf script side-band line (PERF_RECORD_*)"] != 1 {
		t.Errorf("dropped %v", r.Meta().Summary.Dropped)
	}
}

func TestSniff(t *testing.T) {
	for _, f := range []string{"perf_script_default.txt", "perf_script_ns_fields.txt"} {
		b, _ := os.ReadFile(filepath.Join(textDir, f))
		if !Sniff(b[:4096]) {
			t.Errorf("%s not sniffed", f)
		}
	}
	for _, f := range []string{"tracefs_trace_default.txt", "tracecmd_report_default.txt"} {
		b, _ := os.ReadFile(filepath.Join(textDir, f))
		if Sniff(b[:4096]) {
			t.Errorf("%s sniffed as perf script", f)
		}
	}
}

func TestBadLine(t *testing.T) {
	r, _ := NewReader(strings.NewReader("garbage here\n  perf 1 [000] 1.000001: sched:sched_waking: comm=a pid=zz prio=1 target_cpu=0\n"), "bad.txt")
	for r.Next() {
	}
	if r.Errors() != 2 || !strings.Contains(r.Meta().Source.Extra["parse_error_2"], "bad.txt: line 2") {
		t.Errorf("errors %d %v", r.Errors(), r.Meta().Source.Extra)
	}
}

func FuzzReader(f *testing.F) {
	for _, name := range []string{"perf_script_default.txt", "perf_script_ns_fields.txt"} {
		b, err := os.ReadFile(filepath.Join(textDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:3000])
	}
	f.Add([]byte("         swapper     0/0     [000]     0.000000000: PERF_RECORD_FORK(1:1):(0:0)\n" +
		"              sh 13086/13086 [000]   776.779223833: PERF_RECORD_COMM exec: a:b:13086/13086\n" +
		"            perf 27774/27774 [001]   980.045984662: PERF_RECORD_LOST lost 54\n" +
		"            perf 1/2 [001]   980.045984662: PERF_RECORD_SWITCH_CPU_WIDE OUT preempt  next pid/tid:    0/0    \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _ := NewReader(bytes.NewReader(b), "fuzz")
		for r.Next() {
			_ = r.Event()
		}
	})
}

// BenchmarkDefault reads the 478-sample perf script text.
func BenchmarkDefault(b *testing.B) {
	for b.Loop() {
		r, err := Open(filepath.Join(textDir, "perf_script_default.txt"))
		if err != nil {
			b.Fatal(err)
		}
		for r.Next() {
		}
		r.Close()
	}
}

// TestSidebandLines: the side-band lines of --show-task-events,
// --show-lost-events and --show-switch-events become the perf.data
// reader's rows for the same records.
func TestSidebandLines(t *testing.T) {
	text := "         swapper     0/0     [000]     0.000000000: PERF_RECORD_FORK(3:4):(2:2)\n" +
		"              sh 13086/13086 [000]   776.779223833: PERF_RECORD_COMM exec: a: b:13086/13087\n" +
		"            perf 27774/27774 [001]   980.045984662: PERF_RECORD_LOST lost 54\n" +
		"            perf 27774/27774 [001]   980.045984663: PERF_RECORD_EXIT(5:6):(7:8)\n" +
		"            perf 1/2 [001]   980.045984664: PERF_RECORD_SWITCH_CPU_WIDE OUT preempt  next pid/tid:    0/0    \n" +
		"            perf 1/2 [001]   980.045984665: PERF_RECORD_SWITCH IN \n" +
		"            perf 1/2 [001]   980.045984666: PERF_RECORD_MMAP2 1/2: [0x1(0x2) @ 0 00:00 0 0]: r-xp /x\n"
	r, err := NewReader(strings.NewReader(text), "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`0 perf:fork cpu=0 parent_pid=2 child_pid=4 {pid k0 3 ""} {ppid k0 2 ""}`,
		`776779223833 perf:comm cpu=0 common_pid=13087 common_tgid=13086 comm="a: b" {exec k0 1 ""}`,
		`980045984662 lost cpu=1 lost=54 {record k2 0 "PERF_RECORD_LOST"}`,
		`980045984663 perf:exit cpu=1 pid=6 {tgid k0 5 ""} {ppid k0 7 ""} {ptid k0 8 ""}`,
		`980045984664 perf:switch cpu=1 common_pid=2 common_tgid=1 {out k0 1 ""} {preempt k0 1 ""} {next_prev_pid k0 0 ""} {next_prev_tid k0 0 ""}`,
		`980045984665 perf:switch cpu=1 common_pid=2 common_tgid=1 {out k0 0 ""} {preempt k0 0 ""}`,
	}
	i := 0
	for r.Next() {
		if i < len(want) {
			if g := rowString(r.Event()); g != want[i] {
				t.Errorf("row %d:\n got  %s\n want %s", i, g, want[i])
			}
		}
		i++
	}
	if i != len(want) || r.Errors() != 0 || r.Meta().Summary.Dropped["perf script side-band line (PERF_RECORD_*)"] != 1 || r.Meta().Summary.Lost.Events != 54 {
		t.Errorf("%d rows, %d errors, meta %+v", i, r.Errors(), r.Meta().Summary)
	}
}
