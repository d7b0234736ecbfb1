package perfetto_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest/ftrace"
	"github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/timeline"
)

const fx = "../../fixtures/perfetto/"

func openAll(t *testing.T, path string) ([]timeline.Event, *perfetto.Reader) {
	t.Helper()
	r, err := perfetto.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var evs []timeline.Event
	last := int64(-1 << 63)
	for r.Next() {
		var e timeline.Event
		e.CopyFrom(r.Event())
		if e.Time < last {
			t.Errorf("row at %d after %d: not in time order", e.Time, last)
		}
		last = e.Time
		evs = append(evs, e)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return evs, r
}

// TestCompactSchedCrop: upstream's test_crop_compact_sched_switch. The
// first compact switch of each CPU only seeds the running task; the
// trace's data is valid from the largest first previous_bundle_end_timestamp
// (1000), and upstream's sched slices after it are (cpu, ts, dur, tid, name).
func TestCompactSchedCrop(t *testing.T) {
	evs, r := openAll(t, fx+"derived/compact_sched_crop.pb")
	if r.ValidFrom() != 1000 {
		t.Errorf("valid from %d, want 1000", r.ValidFrom())
	}
	type slice struct {
		cpu, ts, dur, tid int64
		name              string
	}
	var got []slice
	open := map[int64]int{}
	for _, e := range evs {
		if e.Kind != timeline.SchedSwitch {
			continue
		}
		cpu := e.Int(timeline.CPU)
		if i, ok := open[cpu]; ok {
			got[i].dur = e.Time - got[i].ts
			delete(open, cpu)
		}
		if e.Time >= r.ValidFrom() {
			open[cpu] = len(got)
			got = append(got, slice{cpu, e.Time, -1, e.Int(timeline.NextPID), e.Str(timeline.NextComm)})
		}
	}
	sort.Slice(got, func(i, j int) bool {
		return got[i].cpu < got[j].cpu || got[i].cpu == got[j].cpu && got[i].ts < got[j].ts
	})
	want := []slice{{3, 1200, -1, 51, "one:3"}, {6, 1100, 100, 42, "two:6"}, {6, 1200, -1, 43, "three:6"}}
	if len(got) != len(want) {
		t.Fatalf("slices %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slice %d: %v, want %v", i, got[i], want[i])
		}
	}
	// prev_* of a compact switch are the previous switch's next_*.
	for _, e := range evs {
		if e.Kind == timeline.SchedSwitch && e.Time == 1100 {
			if e.Int(timeline.PrevPID) != 41 || e.Str(timeline.PrevComm) != "one:6" || e.Int(timeline.CommonPID) != 41 || e.Str(timeline.PrevState) != "R" {
				t.Errorf("compact switch at 1100: %s", rowString(&e, nil))
			}
		}
	}
	m := r.Meta()
	if m.Summary.Dropped["compact_sched: first switch of a CPU (no previous task)"] != 2 {
		t.Errorf("dropped %v", m.Summary.Dropped)
	}
	// CPU 3's data before 1000 is not in the trace: a loss there.
	lost := 0
	for _, e := range evs {
		if e.Kind == timeline.Lost {
			lost++
			if e.Int(timeline.CPU) != 3 || e.Time != 1000 {
				t.Errorf("lost row %s, want one on CPU 3 at 1000", rowString(&e, nil))
			}
		}
	}
	if lost != 1 {
		t.Errorf("%d lost rows, want 1", lost)
	}
}

// TestSameRowsAsSystrace: trace_processor's systrace rendering of
// sched_blocked_reason_symbolized, read by replay's ftrace text reader,
// gives the same sched_switch rows as the Perfetto reader on the binary.
func TestSameRowsAsSystrace(t *testing.T) {
	f, err := os.Open(fx + "upstream/sched_blocked_reason_symbolized_to_systrace.out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var text strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.Trim(sc.Text(), `"`)
		if l != "line" {
			text.WriteString(l + "\n")
		}
	}
	tr, err := ftrace.NewReader(strings.NewReader(text.String()), "systrace")
	if err != nil {
		t.Fatal(err)
	}
	// The text prints "...." for the flags Perfetto does not record, and
	// microseconds.
	skip := map[timeline.Col]bool{timeline.CommonFlags: true, timeline.CommonPreemptCount: true}
	var want []string
	for tr.Next() {
		if e := tr.Event(); e.Kind == timeline.SchedSwitch {
			want = append(want, rowString(e, skip))
		}
	}
	if tr.Err() != nil {
		t.Fatal(tr.Err())
	}
	evs, _ := openAll(t, fx+"derived/sched_blocked_reason_symbolized.pb")
	var got []string
	for _, e := range evs {
		if e.Kind == timeline.SchedSwitch {
			e.Time -= e.Time % 1000
			got = append(got, rowString(&e, skip))
		}
	}
	// Equal times: trace_processor keeps file order, replay CPU order.
	sort.Strings(want)
	sort.Strings(got)
	if len(got) != len(want) || len(want) != 10 {
		t.Fatalf("%d switches, systrace has %d (want 10)", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("\n got  %s\n want %s", got[i], want[i])
		}
	}
}

// TestBlockedReasonSymbols: callers are symbolized from the interned
// kernel_symbols of the bundle's own sequence (upstream's
// test_sched_blocked_reason_symbolized_sched_blocked_reason_function).
func TestBlockedReasonSymbols(t *testing.T) {
	evs, _ := openAll(t, fx+"derived/sched_blocked_reason_symbolized.pb")
	want := map[int64]string{105: "some_fn", 102: "filemap_fault", 101: "", 103: "", 104: "filemap_fault"}
	seen := 0
	for _, e := range evs {
		if e.Name != "sched_blocked_reason" {
			continue
		}
		sym := ""
		for _, f := range e.Fields {
			if f.Name == "caller_symbol" {
				sym = f.Str
			}
		}
		pid := e.Int(timeline.PID)
		if pid == 100 {
			w := map[int64]string{1000010: "filemap_fault", 1003010: "some_other_fn"}[e.Time]
			if sym != w {
				t.Errorf("pid 100 at %d: %q, want %q", e.Time, sym, w)
			}
		} else if sym != want[pid] {
			t.Errorf("pid %d: %q, want %q", pid, sym, want[pid])
		}
		seen++
	}
	if seen != 7 {
		t.Errorf("%d sched_blocked_reason rows, want 7", seen)
	}
}

// TestCPUInfo: upstream's test_cpu: CPUs 0-5 cluster 0, 6-7 cluster 1.
func TestCPUInfo(t *testing.T) {
	_, r := openAll(t, fx+"derived/cpu_info.pb")
	topo := r.Meta().Topology
	if topo == nil || len(topo.CPUs) != 8 {
		t.Fatalf("topology %+v", topo)
	}
	if cl := r.Meta().Source.Extra["perfetto_cpu_clusters"]; cl != "0,0,0,0,0,0,1,1" {
		t.Errorf("clusters %q, want 0,0,0,0,0,0,1,1", cl)
	}
	if d := r.Meta().Source.CPUDesc; d != "AArch64 Processor rev 13 (aarch64)" {
		t.Errorf("cpu desc %q", d)
	}
}

// TestTaskNewtask: upstream's test_task_newtask_waker_utid (both events
// by the same thread, pid 518). previous_packet_dropped on the first
// packet of a sequence is not a loss.
func TestTaskNewtask(t *testing.T) {
	evs, r := openAll(t, fx+"derived/task_newtask_waker.pb")
	want := []string{
		`201315132677 task:task_newtask cpu=1 common_pid=518 comm="adbd" pid=3294 clone_flags=18874368 oom_score_adj=-1000`,
		`201319417828 task:task_newtask cpu=1 common_pid=518 comm="adbd" pid=3295 clone_flags=4001536 oom_score_adj=-1000`,
	}
	if len(evs) != 2 {
		t.Fatalf("%d rows", len(evs))
	}
	for i := range want {
		if g := rowString(&evs[i], nil); g != want[i] {
			t.Errorf("\n got  %s\n want %s", g, want[i])
		}
	}
	if r.Meta().Summary.Lost.Events != 0 || len(r.Meta().Summary.Lost.ByReason) != 0 {
		t.Errorf("loss %+v", r.Meta().Summary.Lost)
	}
}

// TestProcessTree: ProcessTree gives thread groups (common_tgid); bundles
// without a CPU are dropped and counted, as trace_processor does.
func TestProcessTree(t *testing.T) {
	evs, r := openAll(t, fx+"derived/android_auto_multiuser.pb")
	counts := map[string]int{}
	for _, e := range evs {
		counts[e.Name]++
		if e.Kind == timeline.SchedSwitch && e.Int(timeline.CommonTGID) != e.Int(timeline.CommonPID) {
			t.Errorf("switch without its thread group: %s", rowString(&e, nil))
		}
	}
	if counts["sched_switch"] != 4 || counts["ftrace:print"] != 4 {
		t.Errorf("rows %v", counts)
	}
	if r.Meta().Summary.Dropped["ftrace bundle without a CPU"] != 2 {
		t.Errorf("dropped %v", r.Meta().Summary.Dropped)
	}
}

// TestNowInAndroid: a real Android trace (atrace markers only), its
// SystemInfo and clock snapshots.
func TestNowInAndroid(t *testing.T) {
	evs, r := openAll(t, fx+"nowinandroid/trace.perfetto-trace")
	if len(evs) != 6246 {
		t.Errorf("%d rows, want 6246 print events", len(evs))
	}
	cpus := map[int64]bool{}
	for _, e := range evs {
		if e.Name != "ftrace:print" {
			t.Fatalf("row %s", e.Name)
		}
		cpus[e.Int(timeline.CPU)] = true
	}
	if len(cpus) != 8 {
		t.Errorf("cpus %v", cpus)
	}
	src := r.Meta().Source
	if src.OSRelease != "5.10.157-android13-4-00001-g914e947b041d-ab10144456" || src.Arch != "aarch64" || src.Extra["clock_snapshots"] != "4" {
		t.Errorf("source %+v", src)
	}
	if n := r.Meta().Summary.Lost.Events; n != 0 {
		t.Errorf("lost %d", n)
	}
}

// TestLossMarkers: lost_events in a bundle, previous_packet_dropped after
// the first packet of a sequence, and FtraceStats overruns.
func TestLossMarkers(t *testing.T) {
	st := func(phase uint64, overrun uint64) msg {
		return msg(nil).m(34, msg(nil).u(1, phase).m(2, msg(nil).u(1, 0).u(3, overrun)))
	}
	data := trace(
		st(1, 10).u(10, 1),
		msg(nil).m(1, bundle(0, switchEv(100, 0, "swapper/0", 0, 120, 0, "a", 5, 120))).u(10, 1),
		msg(nil).m(1, bundle(0, switchEv(200, 5, "a", 5, 120, 1, "swapper/0", 0, 120)).u(3, 1)).u(10, 1),
		msg(nil).m(1, bundle(0, switchEv(300, 0, "swapper/0", 0, 120, 0, "a", 5, 120))).u(10, 1).u(42, 1),
		st(2, 25).u(10, 1),
	)
	rows, r := readAll(t, data)
	want := []string{
		`100 sched_switch cpu=0 common_pid=0 common_comm="swapper" prev_comm="swapper/0" prev_pid=0 prev_prio=120 prev_state="R" prev_state_raw=0 next_comm="a" next_pid=5 next_prio=120`,
		`200 lost cpu=0 lost=0 reason="count not stored"`,
		`200 sched_switch cpu=0 common_pid=5 common_comm="a" prev_comm="a" prev_pid=5 prev_prio=120 prev_state="S" prev_state_raw=1 next_comm="swapper/0" next_pid=0 next_prio=120`,
		`300 lost lost=0 reason="count not stored"`,
		`300 sched_switch cpu=0 common_pid=0 common_comm="swapper" prev_comm="swapper/0" prev_pid=0 prev_prio=120 prev_state="R" prev_state_raw=0 next_comm="a" next_pid=5 next_prio=120`,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	l := r.Meta().Summary.Lost
	if l.Events != 15 || l.ByCPU["0"] != 15 || len(l.ByReason) != 3 {
		t.Errorf("lost %+v", l)
	}
}

// TestCompressedAndClock: packets inside compressed_packets (zlib) and
// a bundle on the LOCAL ftrace clock with its (ftrace, boot) pair.
func TestCompressedAndClock(t *testing.T) {
	inner := zlibTrace(
		msg(nil).m(45, msg(nil).m(1, msg(nil).s(1, "Linux").s(3, "4.9.0").s(4, "x86_64"))),
		msg(nil).m(1, bundle(1, switchEv(1000, 7, "b", 7, 100, 130, "c", 8, 100)).u(5, 3).i(6, 500).i(7, 10500)),
	)
	data := trace(msg(nil).m(50, inner).u(10, 3))
	rows, r := readAll(t, data)
	// 4.9's layout: 130 is "D|K" (it would be "D" since 4.14); the time
	// is moved by boot - ftrace = 10000.
	want := `11000 sched_switch cpu=1 common_pid=7 common_comm="b" prev_comm="b" prev_pid=7 prev_prio=100 prev_state="D|K" prev_state_raw=130 next_comm="c" next_pid=8 next_prio=100`
	if len(rows) != 1 || rows[0] != want {
		t.Errorf("rows %q\nwant %q", rows, want)
	}
	if r.Meta().Source.OSRelease != "4.9.0" {
		t.Errorf("release %q", r.Meta().Source.OSRelease)
	}
}

// TestBadInput: corrupt traces fail with an offset, never panic.
func TestBadInput(t *testing.T) {
	good := trace(msg(nil).m(1, bundle(0, switchEv(100, 0, "swapper/0", 0, 120, 0, "a", 5, 120))))
	cases := map[string]struct {
		data []byte
		want string
	}{
		"truncated":     {good[:len(good)-3], "cut short"},
		"huge packet":   {[]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, "limit"},
		"group":         {append(append([]byte(nil), good...), 0x0b), "wire type 3"},
		"bad inner":     {trace(msg{0x0a, 0x05, 0x01}), "offset 2"},
		"cpu too large": {trace(msg(nil).m(1, msg(nil).u(1, 5000))), "CPU 5000"},
		"bad zlib":      {trace(msg(nil).m(50, msg("not zlib"))), "compressed_packets"},
		"nested deep":   {trace(msg(nil).m(50, zlibTrace(msg(nil).m(50, zlibTrace(msg(nil).m(50, zlibTrace())))))), "nested"},
		"bad packed":    {trace(msg(nil).m(1, msg(nil).u(1, 0).m(4, msg(nil).m(1, msg{0xff})))), "packed field 1"},
		"field zero":    {[]byte{0x00, 0x01}, "field number 0"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := perfetto.NewReader(bytes.NewReader(c.data), "bad")
			if err == nil {
				for r.Next() {
				}
				err = r.Err()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if !strings.Contains(err.Error(), "offset") {
				t.Errorf("error without an offset: %v", err)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	for _, p := range []string{"derived/compact_sched_crop.pb", "derived/cpu_info.pb", "derived/sched_blocked_reason_symbolized.pb", "nowinandroid/trace.perfetto-trace"} {
		b, err := os.ReadFile(fx + p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 16<<10 {
			b = b[:16<<10]
		}
		if !perfetto.Sniff(b) {
			t.Errorf("%s not recognised", p)
		}
	}
	for _, p := range []string{"../text/tracefs_trace_default.txt", "../perf/hackbench.data", "../tracedat/guestA-schbench.v7zstd.dat", "upstream/cpu_info.textproto"} {
		b, err := os.ReadFile(fx + p)
		if err != nil {
			t.Fatal(err)
		}
		if perfetto.Sniff(b[:min(len(b), 16<<10)]) {
			t.Errorf("%s taken for Perfetto", p)
		}
	}
	for _, b := range [][]byte{nil, {0x0a}, {0x0a, 0x00}, []byte("\n# tracer: nop\n"), []byte("\n\n\n")} {
		if perfetto.Sniff(b) {
			t.Errorf("%q taken for Perfetto", b)
		}
	}
}

var _ = errors.New

// TestThreadNames: ProcessTree threads name common_comm and give
// common_tgid; names sched_switch already gave are kept.
func TestThreadNames(t *testing.T) {
	pt := msg(nil).m(1, msg(nil).i(1, 100).s(3, "/system/bin/app_process64")).
		m(2, msg(nil).i(1, 101).i(3, 100).s(2, "RenderThread")).
		m(2, msg(nil).i(1, 102).i(3, 100).s(2, "stale-name"))
	data := trace(
		msg(nil).m(1, bundle(0, switchEv(10, 0, "swapper/0", 0, 120, 0, "fresh-name", 102, 120))),
		msg(nil).m(2, pt),
		msg(nil).m(1, bundle(0, wakingEv(20, 102, "RenderThread", 101, 120, 1), wakingEv(30, 101, "fresh-name", 102, 120, 0))),
	)
	rows, _ := readAll(t, data)
	want := []string{
		`10 sched_switch cpu=0 common_pid=0 common_comm="swapper" prev_comm="swapper/0" prev_pid=0 prev_prio=120 prev_state="R" prev_state_raw=0 next_comm="fresh-name" next_pid=102 next_prio=120`,
		`20 sched_waking cpu=0 common_pid=102 common_tgid=100 common_comm="fresh-name" comm="RenderThread" pid=101 prio=120 target_cpu=1`,
		`30 sched_waking cpu=0 common_pid=101 common_tgid=100 common_comm="RenderThread" comm="fresh-name" pid=102 prio=120 target_cpu=0`,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
