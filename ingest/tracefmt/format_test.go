package tracefmt

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

type fieldWant struct {
	name     string
	typ      string
	off      int
	size     int
	signed   bool
	kind     FieldKind
	common   bool
	elemType string
	elemSize int
}

func checkField(t *testing.T, f *Format, w fieldWant) {
	t.Helper()
	fl := f.Field(w.name)
	if fl == nil {
		t.Errorf("%s: no field %q", f.Name, w.name)
		return
	}
	got := fieldWant{fl.Name, fl.Type, fl.Offset, fl.Size, fl.Signed, fl.Kind, fl.Common, fl.ElemType, fl.ElemSize}
	if got != w {
		t.Errorf("%s.%s:\n got %+v\nwant %+v", f.Name, w.name, got, w)
	}
}

// sched_switch layouts from real kernels (offsets as in formats.md §3.2).
func TestSchedSwitchLayouts(t *testing.T) {
	common := []fieldWant{
		{"common_type", "unsigned short", 0, 2, false, Scalar, true, "", 0},
		{"common_flags", "unsigned char", 2, 1, false, Scalar, true, "", 0},
		{"common_preempt_count", "unsigned char", 3, 1, false, Scalar, true, "", 0},
		{"common_pid", "int", 4, 4, true, Scalar, true, "", 0},
	}
	switch64 := []fieldWant{
		{"prev_comm", "char[16]", 8, 16, false, FixedString, false, "char", 0},
		{"prev_pid", "pid_t", 24, 4, true, Scalar, false, "", 0},
		{"prev_prio", "int", 28, 4, true, Scalar, false, "", 0},
		{"prev_state", "long", 32, 8, true, Scalar, false, "", 0},
		{"next_comm", "char[16]", 40, 16, false, FixedString, false, "char", 0},
		{"next_pid", "pid_t", 56, 4, true, Scalar, false, "", 0},
		{"next_prio", "int", 60, 4, true, Scalar, false, "", 0},
	}
	td618 := mustTracingData(t, "perf618_pipe.tracing")
	td61 := mustTracingData(t, "perf61_hackbench.tracing")
	tests := []struct {
		name   string
		f      *Format
		id     int
		fields []fieldWant
		min    int
	}{
		{"6.18", td618.ByName("sched", "sched_switch"), 372, switch64, 64},
		// 6.1 (Debian) marks the char arrays signed:1; nothing else differs.
		{"6.1", td61.ByName("sched", "sched_switch"), 319, func() []fieldWant {
			w := append([]fieldWant(nil), switch64...)
			w[0].signed, w[4].signed = true, true
			return w
		}(), 64},
		{"4.x lisa", mustFormat(t, "sched", "lisaload__sched__sched_switch.format"), 95, switch64, 64},
		// 32-bit vendor kernel: declared char[32] but size 16 (trust size),
		// 4-byte long moves next_* by 4 bytes.
		{"32-bit trappy", mustFormat(t, "sched", "trappy32__sched__sched_switch.format"), 68, []fieldWant{
			{"prev_comm", "char[32]", 8, 16, false, FixedString, false, "char", 0},
			{"prev_state", "long", 32, 4, true, Scalar, false, "", 0},
			{"next_comm", "char[32]", 36, 16, false, FixedString, false, "char", 0},
			{"next_pid", "pid_t", 52, 4, true, Scalar, false, "", 0},
			{"next_prio", "int", 56, 4, true, Scalar, false, "", 0},
		}, 60},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.f == nil {
				t.Fatal("format missing")
			}
			if tc.f.Name != "sched_switch" || tc.f.ID != tc.id || tc.f.System != "sched" {
				t.Errorf("header %s/%s %d", tc.f.System, tc.f.Name, tc.f.ID)
			}
			for _, w := range append(append([]fieldWant(nil), common...), tc.fields...) {
				checkField(t, tc.f, w)
			}
			if len(tc.f.Fields) != 11 || !tc.f.Fields[3].Common || tc.f.Fields[4].Common {
				t.Errorf("fields/common split wrong: %d fields", len(tc.f.Fields))
			}
			if tc.f.MinSize() != tc.min {
				t.Errorf("MinSize = %d, want %d", tc.f.MinSize(), tc.min)
			}
			if !strings.HasPrefix(tc.f.PrintFmt, `"prev_comm=%s prev_pid=%d`) || !strings.HasSuffix(tc.f.PrintFmt, "REC->next_prio") {
				t.Errorf("PrintFmt = %q", tc.f.PrintFmt)
			}
		})
	}
}

// Declarations seen in real format files (format texts under testdata and
// the 6.18/3.x blobs), one check per shape.
func TestFieldDeclarations(t *testing.T) {
	td618 := mustTracingData(t, "perf618_pipe.tracing")
	v6 := mustTracingData(t, "trappy_raw_trace_v6.head")
	byName := func(td *TracingData, sys, name string) *Format {
		f := td.ByName(sys, name)
		if f == nil {
			t.Fatalf("no %s/%s", sys, name)
		}
		return f
	}
	tests := []struct {
		f *Format
		w fieldWant
	}{
		{byName(td618, "sched", "sched_process_fork"), fieldWant{"parent_comm", "__data_loc char[]", 8, 4, false, DataLoc, false, "char", 0}},
		{byName(td618, "sched", "sched_process_exit"), fieldWant{"group_dead", "bool", 32, 1, false, Scalar, false, "", 0}},
		{byName(td618, "task", "task_newtask"), fieldWant{"oom_score_adj", "short", 40, 2, true, Scalar, false, "", 0}},
		{byName(v6, "ftrace", "branch"), fieldWant{"func", "char[30+1]", 12, 31, false, FixedString, false, "char", 0}},
		{byName(v6, "ftrace", "branch"), fieldWant{"correct", "char", 64, 1, false, Scalar, false, "", 0}},
		{byName(v6, "ftrace", "print"), fieldWant{"buf", "char", 16, 0, false, Scalar, false, "", 0}},
		{byName(v6, "ftrace", "bprint"), fieldWant{"fmt", "const char *", 16, 8, false, Scalar, false, "", 0}},
		{byName(v6, "ftrace", "user_stack"), fieldWant{"caller", "unsigned long[8]", 16, 64, false, Array, false, "unsigned long", 8}},
		{mustFormat(t, "i2c", "trappyidle__i2c__smbus_write.format"), fieldWant{"buf", "__u8[32 + 2]", 24, 34, false, Array, false, "__u8", 1}},
		{mustFormat(t, "syscalls", "trappyidle__syscalls__sys_enter_execve.format"), fieldWant{"argv", "const char *const *", 24, 8, false, Scalar, false, "", 0}},
		{mustFormat(t, "sched", "trappyidle__sched__sched_blocked_reason.format"), fieldWant{"caller", "void*", 16, 8, false, Scalar, false, "", 0}},
		{mustFormat(t, "ipi", "trappyidle__ipi__ipi_raise.format"), fieldWant{"target_cpus", "__data_loc unsigned long[]", 8, 4, false, DataLoc, false, "unsigned long", 0}},
		{mustFormat(t, "mac80211", "trappy32__mac80211__drv_start_ap.format"), fieldWant{"ssid", "__data_loc u8[]", 60, 4, false, DataLoc, false, "u8", 0}},
		{mustFormat(t, "fib", "lisaload__fib__fib_table_lookup.format"), fieldWant{"src", "__u8[4]", 23, 4, false, Array, false, "__u8", 1}},
		{mustFormat(t, "kvm", "lisaload__kvm__kvm_arm_set_regset.format"), fieldWant{"ctrls", "u64[16]", 24, 128, false, Array, false, "u64", 8}},
	}
	for _, tc := range tests {
		checkField(t, tc.f, tc.w)
	}

	hp, err := ParseHeaderPage(readTestdata(t, "formats/trappy32__header_page.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []fieldWant{
		{"timestamp", "u64", 0, 8, false, Scalar, false, "", 0},
		{"commit", "local_t", 8, 4, true, Scalar, false, "", 0}, // 32-bit kernel
		{"data", "char", 12, 4084, false, Scalar, false, "", 0},
	} {
		checkField(t, hp, w)
	}
}

// Shapes no fixture has, modelled on real kernels: 2.6.3x formats without
// "signed:", extra common fields (common_lock_depth, common_padding,
// PREEMPT_RT's common_migrate_disable), macro array sizes, __rel_loc.
func TestParseFormatTolerance(t *testing.T) {
	text := "name: sched_switch\r\nID: 29\r\nformat:\r\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\r\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\r\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\r\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\r\n" +
		"\tfield:int common_lock_depth;\toffset:8;\tsize:4;\r\n" +
		"\tfield:unsigned char common_migrate_disable;\toffset:12;\tsize:1;\r\n" +
		"\r\n" +
		"\tfield:char prev_comm[TASK_COMM_LEN];\toffset:16;\tsize:16;\r\n" +
		"\tfield:pid_t prev_pid;\toffset:32;\tsize:4;\r\n" +
		"\tfield:long prev_state;\toffset:40;\tsize:8;\r\n" +
		"\tfield:u64 runtime;\toffset:48;\tsize:8;\r\n" +
		"\tfield:__rel_loc char[] tag;\toffset:56;\tsize:4;\tsigned:0;\tfuture:3;\r\n" +
		"\tfield:unsigned long cookie[COUNT];\toffset:60;\tsize:8;\r\n" +
		"\r\n" +
		"print fmt: \"prev_comm=%s\\n\"\r\n  \"second line\", REC->prev_comm\r\n"
	f, err := ParseFormat("sched", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []fieldWant{
		{"common_pid", "int", 4, 4, true, Scalar, true, "", 0},
		{"common_lock_depth", "int", 8, 4, true, Scalar, true, "", 0},
		{"common_migrate_disable", "unsigned char", 12, 1, false, Scalar, true, "", 0},
		{"prev_comm", "char[TASK_COMM_LEN]", 16, 16, false, FixedString, false, "char", 0},
		{"prev_pid", "pid_t", 32, 4, true, Scalar, false, "", 0},
		{"prev_state", "long", 40, 8, true, Scalar, false, "", 0},
		{"runtime", "u64", 48, 8, false, Scalar, false, "", 0},
		{"tag", "__rel_loc char[]", 56, 4, false, RelLoc, false, "char", 0},
		{"cookie", "unsigned long[COUNT]", 60, 8, false, Array, false, "unsigned long", 0},
	} {
		checkField(t, f, w)
	}
	if f.PrintFmt != "\"prev_comm=%s\\n\"\n  \"second line\", REC->prev_comm" {
		t.Errorf("PrintFmt = %q", f.PrintFmt)
	}
	if f.MinSize() != 68 || f.ID != 29 {
		t.Errorf("MinSize %d ID %d", f.MinSize(), f.ID)
	}
}

func TestParseFormatErrors(t *testing.T) {
	const head = "name: x\nID: 1\nformat:\n"
	tests := []struct {
		text string
		want string
	}{
		{"", "line 1: expected name:"},
		{"name: x\nformat:\n", "format x: line 2: expected ID:"},
		{"name: x\nID: -3\n", "line 2: expected a decimal event ID"},
		{"name: x\nID: 99999999999\n", "line 2: expected a decimal event ID"},
		{"garbage\n", "line 1: expected name:, ID:, format: or field:"},
		{head + "\tfield:int a;\tsize:4;\n", "format x: line 4: expected offset:N"},
		{head + "\tfield:int a;\toffset:0;\n", "line 4: expected size:N"},
		{head + "\tfield:int a\toffset:0;\n", "line 4: expected ';' after the field declaration"},
		{head + "\tfield:int a;\toffset:-1;\tsize:4;\n", "line 4: expected offset:N with 0 <= N"},
		{head + "\tfield:int a;\toffset:0;\tsize:99999999;\n", "line 4: expected size:N with 0 <= N"},
		{head + "\tfield:int a;\toffset:0;\tsize:4;\tsigned:yes;\n", "line 4: expected signed:0 or signed:1"},
		{head + "\tfield:int a;\toffset:0;\tjunk;\n", "line 4: expected key:value"},
		{head + "\tfield:int;\toffset:0;\tsize:4;\n", "line 4: expected a type before the field name"},
		{head + "\tfield:int 3;\toffset:0;\tsize:4;\n", "line 4: expected a field name"},
		{head + "\tfield:;\toffset:0;\tsize:4;\n", "line 4: expected a field declaration"},
		{head + "\tfield:char a];\toffset:0;\tsize:4;\n", "line 4: expected '['"},
		{head + "\tfield:int a;\toffset:0;\tsize:4;\n\tnonsense\n", "line 5: expected a field: line"},
		{head + "\tfieldx\n", "line 4: expected a field: line"},
	}
	for _, tc := range tests {
		_, err := ParseFormat("", []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}

// renderSample formats a decoded 6.18 record the way perf's libtraceevent
// prints it with the kernel print fmt (perf script): decoding every field
// with the Field accessors must reproduce perf's text exactly.
func renderSample(t *testing.T, f *Format, rec []byte, states *StateDecoder) string {
	le := binary.LittleEndian
	str := func(name string) string {
		fl := f.Field(name)
		if fl == nil {
			t.Fatalf("%s: no field %s", f.Name, name)
		}
		b, ok := fl.Bytes(rec, le)
		if !ok {
			t.Fatalf("%s.%s: Bytes failed", f.Name, name)
		}
		return string(b)
	}
	num := func(name string) int64 {
		fl := f.Field(name)
		if fl == nil {
			t.Fatalf("%s: no field %s", f.Name, name)
		}
		v, ok := fl.Int(rec, le)
		if !ok {
			t.Fatalf("%s.%s: Int failed", f.Name, name)
		}
		return v
	}
	switch f.Name {
	case "sched_switch":
		return fmt.Sprintf("prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d",
			str("prev_comm"), num("prev_pid"), num("prev_prio"), states.Letters(num("prev_state")),
			str("next_comm"), num("next_pid"), num("next_prio"))
	case "sched_waking", "sched_wakeup", "sched_wakeup_new":
		return fmt.Sprintf("comm=%s pid=%d prio=%d target_cpu=%03d", str("comm"), num("pid"), num("prio"), num("target_cpu"))
	case "sched_migrate_task":
		return fmt.Sprintf("comm=%s pid=%d prio=%d orig_cpu=%d dest_cpu=%d", str("comm"), num("pid"), num("prio"), num("orig_cpu"), num("dest_cpu"))
	case "sched_process_fork":
		return fmt.Sprintf("comm=%s pid=%d child_comm=%s child_pid=%d", str("parent_comm"), num("parent_pid"), str("child_comm"), num("child_pid"))
	case "sched_process_exec":
		return fmt.Sprintf("filename=%s pid=%d old_pid=%d", str("filename"), num("pid"), num("old_pid"))
	case "sched_process_exit":
		return fmt.Sprintf("comm=%s pid=%d prio=%d group_dead=%t", str("comm"), num("pid"), num("prio"), num("group_dead") != 0)
	case "sched_process_free":
		return fmt.Sprintf("comm=%s pid=%d prio=%d", str("comm"), num("pid"), num("prio"))
	case "sched_stat_runtime":
		return fmt.Sprintf("comm=%s pid=%d runtime=%d [ns]", str("comm"), num("pid"), num("runtime"))
	case "task_newtask":
		return fmt.Sprintf("pid=%d comm=%s clone_flags=%x oom_score_adj=%d", num("pid"), str("comm"), num("clone_flags"), num("oom_score_adj"))
	case "task_rename":
		return fmt.Sprintf("pid=%d oldcomm=%s newcomm=%s oom_score_adj=%d", num("pid"), str("oldcomm"), str("newcomm"), num("oom_score_adj"))
	}
	t.Fatalf("unexpected event %s", f.Name)
	return ""
}

// TestDecodeRealSamples decodes 209 raw tracepoint payloads recorded by
// perf on kernel 6.18 (fixtures/recorded/perf_sched_pipe.data) and compares
// them with `perf script --ns -F comm,tid,pid,cpu,time,event,trace` output
// for the same samples (testdata/perf618_samples.txt). This covers char[16],
// __data_loc char[] (comm of migrate/fork/exec/free/stat_runtime), signed
// and unsigned scalars of 1 to 8 bytes, bool, and prev_state letters.
func TestDecodeRealSamples(t *testing.T) {
	td := mustTracingData(t, "perf618_pipe.tracing")
	states, err := StateDecoderFromPrintFmt(td.ByName("sched", "sched_switch").PrintFmt)
	if err != nil {
		t.Fatal(err)
	}
	recs := perfSamples(t)
	want := strings.Split(strings.TrimSuffix(string(readTestdata(t, "perf618_samples.txt")), "\n"), "\n")
	if len(recs) != len(want) || len(recs) != 209 {
		t.Fatalf("%d records, %d lines", len(recs), len(want))
	}
	seen := map[string]int{}
	for i, rec := range recs {
		typ, ok := (&Field{Kind: Scalar, Size: 2}).Uint(rec, binary.LittleEndian)
		if !ok {
			t.Fatal("short record")
		}
		f := td.ByID(int(typ))
		if f == nil {
			t.Fatalf("record %d: unknown common_type %d", i, typ)
		}
		if ct, _ := f.Field("common_type").Uint(rec, binary.LittleEndian); int(ct) != f.ID {
			t.Errorf("common_type %d != ID %d", ct, f.ID)
		}
		if len(rec) < f.MinSize() {
			t.Errorf("record %d shorter than MinSize", i)
		}
		got := f.System + ":" + f.Name + " " + renderSample(t, f, rec, states)
		if got != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want[i])
		}
		seen[f.Name]++
	}
	if len(seen) != 12 {
		t.Errorf("events seen: %v", seen)
	}
}

// Decoding must not read outside the record, whatever its length, and must
// report ok=false exactly when the bytes are missing.
func TestDecodeBounds(t *testing.T) {
	td := mustTracingData(t, "perf618_pipe.tracing")
	recs := perfSamples(t)
	le := binary.LittleEndian
	for _, rec := range recs[:40] {
		f := td.ByID(int(le.Uint16(rec)))
		for n := 0; n <= len(rec); n++ {
			short := rec[:n:n]
			for i := range f.Fields {
				fl := &f.Fields[i]
				iv, iok := fl.Int(short, le)
				_, uok := fl.Uint(short, le)
				if lv, lok := fl.IntLE(short); lv != iv || lok != iok {
					t.Fatalf("%s.%s len %d: IntLE %d %v, Int %d %v", f.Name, fl.Name, n, lv, lok, iv, iok)
				}
				b, bok := fl.Bytes(short, le)
				fits := fl.Offset+fl.Size <= n
				if fl.Kind == Scalar && (iok != fits || uok != fits) {
					t.Fatalf("%s.%s len %d: Int ok=%v Uint ok=%v, fits=%v", f.Name, fl.Name, n, iok, uok, fits)
				}
				if fl.Kind == FixedString && bok != fits {
					t.Fatalf("%s.%s len %d: Bytes ok=%v fits=%v", f.Name, fl.Name, n, bok, fits)
				}
				if bok && cap(b) > len(b) {
					t.Fatalf("%s.%s: Bytes result has spare capacity", f.Name, fl.Name)
				}
			}
		}
	}

	// Hand-made descriptors: out of range, zero length, and __rel_loc.
	fl := &Field{Name: "s", Kind: DataLoc, Offset: 0, Size: 4, ElemType: "char"}
	rec := []byte{8, 0, 4, 0, 'x', 'x', 'x', 'x', 'a', 'b', 0, 'z'}
	if b, ok := fl.Bytes(rec, le); !ok || string(b) != "ab" {
		t.Errorf("data_loc = %q %v", b, ok)
	}
	rec[2] = 5 // length 5 from offset 8 > 12
	if _, ok := fl.Bytes(rec, le); ok {
		t.Error("data_loc past the end accepted")
	}
	rec[0], rec[2] = 0xff, 0 // offset 255, length 0
	if _, ok := fl.Bytes(rec, le); ok {
		t.Error("data_loc offset past the end accepted")
	}
	rec[0] = 12 // empty payload at the very end
	if b, ok := fl.Bytes(rec, le); !ok || len(b) != 0 {
		t.Errorf("empty data_loc = %q %v", b, ok)
	}
	rel := &Field{Name: "r", Kind: RelLoc, Offset: 0, Size: 4, ElemType: "char"}
	rec = []byte{4, 0, 3, 0, 'x', 'x', 'x', 'x', 'h', 'i', 0}
	if b, ok := rel.Bytes(rec, le); !ok || string(b) != "hi" {
		t.Errorf("rel_loc = %q %v", b, ok)
	}
	u8s := &Field{Name: "u", Kind: DataLoc, Offset: 0, Size: 4, ElemType: "u8"}
	rec = []byte{4, 0, 3, 0, 1, 0, 2}
	if b, ok := u8s.Bytes(rec, le); !ok || string(b) != "\x01\x00\x02" {
		t.Errorf("u8 data_loc = %q %v (must not stop at NUL)", b, ok)
	}
	neg := &Field{Kind: Scalar, Offset: -1, Size: 1}
	if _, ok := neg.Int(rec, le); ok {
		t.Error("negative offset accepted")
	}
	if _, ok := neg.IntLE(rec); ok {
		t.Error("negative offset accepted by IntLE")
	}
	if _, ok := neg.Bytes(rec, le); ok {
		t.Error("negative offset accepted by Bytes")
	}
}

// Scalars in both byte orders and all widths, signed and unsigned, and
// array elements; the 32-bit layout from trappy.
func TestScalarDecoding(t *testing.T) {
	f := mustFormat(t, "sched", "trappy32__sched__sched_switch.format")
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		rec := make([]byte, 60)
		order.PutUint16(rec[0:], 68)
		order.PutUint32(rec[4:], uint32(0xfffffffe)) // common_pid -2
		copy(rec[8:], "swapper/1\x00garbage")
		order.PutUint32(rec[32:], 0xffffffff) // prev_state -1 in a 4-byte long
		copy(rec[36:], "0123456789abcdef")    // no NUL: all 16 bytes
		order.PutUint32(rec[52:], 1234)
		if v, ok := f.Field("common_pid").Int(rec, order); !ok || v != -2 {
			t.Errorf("%v common_pid = %d", order, v)
		}
		if v, ok := f.Field("common_pid").Uint(rec, order); !ok || v != 0xfffffffe {
			t.Errorf("%v common_pid Uint = %d", order, v)
		}
		if v, ok := f.Field("prev_state").Int(rec, order); !ok || v != -1 {
			t.Errorf("%v prev_state = %d", order, v)
		}
		if v, ok := f.Field("common_type").Int(rec, order); !ok || v != 68 {
			t.Errorf("%v common_type = %d", order, v)
		}
		if b, ok := f.Field("prev_comm").Bytes(rec, order); !ok || string(b) != "swapper/1" {
			t.Errorf("%v prev_comm = %q", order, b)
		}
		if b, ok := f.Field("next_comm").Bytes(rec, order); !ok || string(b) != "0123456789abcdef" {
			t.Errorf("%v next_comm = %q", order, b)
		}
		if v, ok := f.Field("next_pid").Int(rec, order); !ok || v != 1234 {
			t.Errorf("%v next_pid = %d", order, v)
		}
		if _, ok := f.Field("prev_comm").Int(rec, order); ok {
			t.Error("Int on a string field succeeded")
		}
	}
	s8 := &Field{Kind: Scalar, Offset: 0, Size: 1, Signed: true}
	s16 := &Field{Kind: Scalar, Offset: 0, Size: 2, Signed: true}
	if v, _ := s8.Int([]byte{0x80}, binary.LittleEndian); v != -128 {
		t.Errorf("s8 = %d", v)
	}
	if v, _ := s16.Int([]byte{0x00, 0x80}, binary.LittleEndian); v != -32768 {
		t.Errorf("s16 = %d", v)
	}
	odd := &Field{Kind: Scalar, Offset: 0, Size: 3}
	if _, ok := odd.Uint([]byte{1, 2, 3}, binary.LittleEndian); ok {
		t.Error("3-byte scalar decoded")
	}

	v6 := mustTracingData(t, "trappy_raw_trace_v6.head")
	caller := v6.ByName("ftrace", "user_stack").Field("caller")
	rec := make([]byte, 80)
	binary.BigEndian.PutUint64(rec[16+7*8:], 0xdeadbeef)
	if v, ok := caller.Elem(rec, binary.BigEndian, 7); !ok || v != 0xdeadbeef {
		t.Errorf("caller[7] = %x %v", v, ok)
	}
	if _, ok := caller.Elem(rec, binary.BigEndian, 8); ok {
		t.Error("caller[8] decoded")
	}
	if _, ok := caller.Elem(rec[:70], binary.BigEndian, 7); ok {
		t.Error("caller[7] decoded from a short record")
	}
	// A Size-0 trailing "char buf;" (old ftrace print) is the rest of the record.
	buf := v6.ByName("ftrace", "print").Field("buf")
	rec = append(make([]byte, 16), "hello\n\x00\x00"...)
	if b, ok := buf.Bytes(rec, binary.LittleEndian); !ok || string(b) != "hello\n" {
		t.Errorf("print buf = %q %v", b, ok)
	}
}

func TestDecodeNoAlloc(t *testing.T) {
	td := mustTracingData(t, "perf618_pipe.tracing")
	f := td.ByName("sched", "sched_switch")
	states, err := StateDecoderFromPrintFmt(f.PrintFmt)
	if err != nil {
		t.Fatal(err)
	}
	rec := schedSwitchRecord(t, td)
	fields := []*Field{f.Field("prev_comm"), f.Field("prev_pid"), f.Field("prev_state"), f.Field("next_comm"), f.Field("next_pid"), f.Field("next_prio")}
	allocs := testing.AllocsPerRun(100, func() {
		decodeSwitch(rec, fields, states)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per decode", allocs)
	}
}

func schedSwitchRecord(tb testing.TB, td *TracingData) []byte {
	for _, rec := range perfSamples(tb) {
		if int(binary.LittleEndian.Uint16(rec)) == td.ByName("sched", "sched_switch").ID {
			return rec
		}
	}
	tb.Fatal("no sched_switch record")
	return nil
}

var sink int

func decodeSwitch(rec []byte, fl []*Field, states *StateDecoder) {
	le := binary.LittleEndian
	prev, _ := fl[0].Bytes(rec, le)
	pp, _ := fl[1].Int(rec, le)
	st, _ := fl[2].Int(rec, le)
	next, _ := fl[3].Bytes(rec, le)
	np, _ := fl[4].Int(rec, le)
	prio, _ := fl[5].Int(rec, le)
	sink += len(prev) + len(next) + int(pp+np+prio) + len(states.Letters(st))
}

func BenchmarkDecodeSchedSwitch(b *testing.B) {
	td := mustTracingData(b, "perf618_pipe.tracing")
	f := td.ByName("sched", "sched_switch")
	states, err := StateDecoderFromPrintFmt(f.PrintFmt)
	if err != nil {
		b.Fatal(err)
	}
	rec := schedSwitchRecord(b, td)
	fields := []*Field{f.Field("prev_comm"), f.Field("prev_pid"), f.Field("prev_state"), f.Field("next_comm"), f.Field("next_pid"), f.Field("next_prio")}
	b.ReportAllocs()
	for b.Loop() {
		decodeSwitch(rec, fields, states)
	}
}

func BenchmarkParseTracingData(b *testing.B) {
	blob := readTestdata(b, "perf618_pipe.tracing")
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		if _, err := ParseTracingData(blob); err != nil {
			b.Fatal(err)
		}
	}
}
