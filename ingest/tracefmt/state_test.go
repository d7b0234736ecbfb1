package tracefmt

import (
	"strings"
	"testing"
)

// Golden prev_state renderings observed in real traces.
//
// How they were obtained: for every trace.dat the same file was printed
// with `trace-cmd report -R` (raw numbers) and `trace-cmd report -N` (kernel
// print fmt, no plugins; trace-cmd 3.1.6) and the prev_state of the
// sched_switch lines paired in order; every distinct pair is listed. The
// perf.data pairs come from perf_script_ns_fields.txt versus the raw
// samples (TestDecodeRealSamples checks each one).
//
//	6.18: fixtures/recorded/tracecmd_report_raw.txt vs tracecmd_report_noplugins.txt
//	      (0 R, 1 S, 32 Z, 128 I, 256 R+) and perf script (2 D, 16 X)
//	6.1:  fixtures/kernels/*/schbench.trace.dat (0 R, 1 S, 2 D, 16 X, 32 Z, 128 I, 256 R+)
//	3.x/4.x (mask 1023, "+" 1024): trappy tests/raw_trace.dat (0 R, 1 S, 64 x, 1024 R+),
//	      tests/trace_idle.dat (adds 2 D)
//	4.x (mask 2047, "+" 2048): lisa example_rtapp/trace.dat (0 R, 1 S, 2 D, 64 x, 130 D|K, 2048 R+)
//	4.x (mask 4095, "+" 4096): lisa tests/assets/sched_load/trace.dat (0 R, 1 S, 2 D, 64 x, 4096 R+)
type statePair struct {
	raw     int64
	letters string
}

var (
	golden618  = []statePair{{0, "R"}, {1, "S"}, {2, "D"}, {16, "X"}, {32, "Z"}, {128, "I"}, {256, "R+"}}
	golden61   = golden618
	golden1024 = []statePair{{0, "R"}, {1, "S"}, {2, "D"}, {64, "x"}, {1024, "R+"}}
	golden2048 = []statePair{{0, "R"}, {1, "S"}, {2, "D"}, {64, "x"}, {130, "D|K"}, {2048, "R+"}}
	golden4096 = []statePair{{0, "R"}, {1, "S"}, {2, "D"}, {64, "x"}, {4096, "R+"}}
)

// Renderings that follow from the kernel's __print_flags algorithm
// (trace_print_flags_seq: table order, bits cleared as matched, leftovers
// as 0x…) for values the fixtures do not contain.
var (
	derived618 = []statePair{
		{3, "S|D"}, {0x101, "S+"}, {0x102, "D+"}, {0x40, "P"}, {4, "T"}, {8, "t"},
		{0x200, "R"},  // outside MASK and PBIT: invisible
		{0x180, "I+"}, // I with the preempt bit
		{-1, "S|D|T|t|X|Z|P|I+"},
	}
	derived4096 = []statePair{{0x402, "D|N"}, {0x800, "0x800"}, {0x1001, "S+"}, {0x180, "K|W"}, {16, "Z"}, {32, "X"}, {512, "P"}}
	derived1024 = []statePair{{0x80, "K"}, {0x100, "W"}, {0x200, "P"}, {0x401, "S+"}, {0x800, "R"}}
)

func checkLetters(t *testing.T, name string, d *StateDecoder, pairs []statePair) {
	t.Helper()
	for _, p := range pairs {
		if got := d.Letters(p.raw); got != p.letters {
			t.Errorf("%s: Letters(%d) = %q, want %q", name, p.raw, got, p.letters)
		}
	}
}

func TestStateDecoderFromPrintFmt(t *testing.T) {
	td618 := mustTracingData(t, "perf618_pipe.tracing")
	td61 := mustTracingData(t, "perf61_hackbench.tracing")
	v6 := mustTracingData(t, "trappy_raw_trace_v6.head")
	tests := []struct {
		name  string
		f     *Format
		pairs [][]statePair
		mask  uint64
	}{
		{"6.18", td618.ByName("sched", "sched_switch"), [][]statePair{golden618, derived618}, 0x1ff},
		{"6.1", td61.ByName("sched", "sched_switch"), [][]statePair{golden61, derived618}, 0x1ff},
		{"trappy raw_trace (1024)", v6.ByName("sched", "sched_switch"), [][]statePair{golden1024, derived1024}, 0x7ff},
		{"trappy trace_idle (1024)", mustFormat(t, "sched", "trappyidle__sched__sched_switch.format"), [][]statePair{golden1024, derived1024}, 0x7ff},
		{"trappy 32-bit (1024)", mustFormat(t, "sched", "trappy32__sched__sched_switch.format"), [][]statePair{golden1024, derived1024}, 0x7ff},
		{"lisa rtapp (2048)", mustFormat(t, "sched", "lisartapp__sched__sched_switch.format"), [][]statePair{golden2048}, 0xfff},
		{"lisa sched_load (4096)", mustFormat(t, "sched", "lisaload__sched__sched_switch.format"), [][]statePair{golden4096, derived4096}, 0x1fff},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := StateDecoderFromPrintFmt(tc.f.PrintFmt)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.pairs {
				checkLetters(t, tc.name, d, p)
			}
			if d.Mask() != tc.mask {
				t.Errorf("Mask = %#x, want %#x", d.Mask(), tc.mask)
			}
		})
	}
}

// The version table must render exactly like the print fmt of a real
// kernel of that era, for every value of the observable bits.
func TestStateDecoderForKernel(t *testing.T) {
	td618 := mustTracingData(t, "perf618_pipe.tracing")
	v6 := mustTracingData(t, "trappy_raw_trace_v6.head")
	real := func(f *Format) *StateDecoder {
		d, err := StateDecoderFromPrintFmt(f.PrintFmt)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d618 := real(td618.ByName("sched", "sched_switch"))
	d1024 := real(v6.ByName("sched", "sched_switch"))
	d2048 := real(mustFormat(t, "sched", "lisartapp__sched__sched_switch.format"))
	d4096 := real(mustFormat(t, "sched", "lisaload__sched__sched_switch.format"))
	tests := []struct {
		release string
		same    *StateDecoder
		golden  []statePair
	}{
		{"6.18.44-vm", d618, golden618},
		{"6.1.0-57-amd64", d618, golden61},
		{"", d618, golden618},
		{"not a version", d618, golden618},
		{"4.14.180-perf+", d618, golden618},
		{"4.13.0", d4096, golden4096},
		{"4.9.0", d4096, golden4096},
		{"4.8", d4096, golden4096},
		{"4.7.10", d2048, golden2048},
		{"4.4.0-21-generic", d2048, golden2048},
		{"4.2.0", d2048, golden2048},
		{"4.1.52", d1024, golden1024},
		{"3.10.0-1160.el7.x86_64", d1024, golden1024},
		{"3.9.0", d1024, golden1024},
	}
	for _, tc := range tests {
		d := StateDecoderForKernel(tc.release)
		checkLetters(t, tc.release, d, tc.golden)
		if d.Mask() != tc.same.Mask() {
			t.Errorf("%q: Mask %#x, real kernel %#x", tc.release, d.Mask(), tc.same.Mask())
		}
		for v := int64(0); v <= int64(tc.same.Mask()); v++ {
			if a, b := d.Letters(v), tc.same.Letters(v); a != b {
				t.Fatalf("%q: Letters(%#x) = %q, real print fmt gives %q", tc.release, v, a, b)
			}
		}
	}
	if StateDecoderForKernel("5.15.0") != StateDecoderForKernel("6.8.0") {
		t.Error("decoders for the same layout are not shared")
	}
	// Older layouts (not verified on real traces, see state.go).
	checkLetters(t, "3.4", StateDecoderForKernel("3.4.0"), []statePair{{0, "R"}, {512, "R+"}, {128, "K"}, {256, "W"}, {1024, "R"}})
	checkLetters(t, "2.6.32", StateDecoderForKernel("2.6.32-754"), []statePair{{0, "R"}, {1, "S"}, {128, "W"}, {256, "0x100"}, {1 << 40, "0x10000000000"}})
}

// Print fmts written differently from the real ones still work, and broken
// ones fail with an error instead of a wrong decoder.
func TestStateDecoderVariants(t *testing.T) {
	ok := []struct {
		fmt   string
		pairs []statePair
	}{
		// 2.6.3x: no "+", whole value tested (shape of old format files).
		{`"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, REC->prev_state ? __print_flags(REC->prev_state, "|", { 1, "S"} , { 2, "D" }, { 4, "T" }, { 8, "t" }, { 16, "Z" }, { 32, "X" }, { 64, "x" }, { 128, "W" }) : "R", REC->next_comm, REC->next_pid, REC->next_prio`,
			[]statePair{{0, "R"}, {1, "S"}, {3, "S|D"}, {128, "W"}, {512, "0x200"}, {1 << 20, "0x100000"}}},
		// Without "prev_state=" in the format string: found by __print_flags.
		{`"%s %s%s", REC->prev_comm, (REC->prev_state & 0xff) ? __print_flags(REC->prev_state & 0xff, "|", {0x01, "S"}, {0x02, "D"}) : "R", REC->prev_state & 0x100 ? "+" : ""`,
			[]statePair{{0, "R"}, {2, "D"}, {0x101, "S+"}}},
		// Casts, *-width conversions before prev_state, __print_symbolic.
		{`"w=%*d prev_state=%s", 3, REC->x, __print_symbolic((int)REC->prev_state, {0, "run"}, {1, "sleep"})`,
			[]statePair{{0, "run"}, {1, "sleep"}, {7, "0x7"}, {1 << 32, "run"}}},
		// String concatenation and comparison operators.
		{`"prev_state=%s", REC->prev_state == 0 ? "R" "" : REC->prev_state >= 2 && REC->prev_state < 4 ? "D" : "?"`,
			[]statePair{{0, "R"}, {1, "?"}, {2, "D"}, {3, "D"}, {4, "?"}, {-1, "?"}}},
	}
	for _, tc := range ok {
		d, err := StateDecoderFromPrintFmt(tc.fmt)
		if err != nil {
			t.Errorf("%s: %v", tc.fmt, err)
			continue
		}
		checkLetters(t, tc.fmt[:20], d, tc.pairs)
	}

	bad := []struct {
		fmt  string
		want string
	}{
		{``, "expected a format string"},
		{`"prev_state=%s"`, "expected a format string followed by arguments"},
		{`"x=%d", REC->x`, "no prev_state argument"},
		{`"prev_state=%s%s", REC->prev_state ? "S" : "R"`, "needs argument 2"},
		{`"prev_state=%s", "R"`, "does not use REC->prev_state"},
		{`"prev_state=%s", REC->prev_state & REC->other ? "S" : "R"`, "REC->other cannot be evaluated"},
		{`"prev_state=%s", REC->prev_state`, "value 0x0"},
		{`"prev_state=%s", REC->prev_state ? __print_flags(REC->prev_state, "|", {REC->prev_state, "S"}) : "R"`, "not a constant"},
		{`"prev_state=%s", REC->prev_state ? (1 / (REC->prev_state & 1)) + "x" : "R"`, "value 0x1"},
		{`"prev_state=%s", REC->prev_state @ 1`, "unexpected character"},
		{`"prev_state=%s", (REC->prev_state`, `expected ")"`},
		{`"prev_state=%s", REC->prev_state ? "a" : "b" "c" )`, "unexpected"},
		{`"prev_state=%s", "unterminated`, "unterminated"},
		{`"prev_state=%s", ` + strings.Repeat("(", 300) + "REC->prev_state" + strings.Repeat(")", 300), "nested too deeply"},
	}
	for _, tc := range bad {
		_, err := StateDecoderFromPrintFmt(tc.fmt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.fmt, err, tc.want)
		}
	}
}

func TestLettersNoAlloc(t *testing.T) {
	td := mustTracingData(t, "perf618_pipe.tracing")
	d, err := StateDecoderFromPrintFmt(td.ByName("sched", "sched_switch").PrintFmt)
	if err != nil {
		t.Fatal(err)
	}
	old := StateDecoderForKernel("4.9")
	var n int
	allocs := testing.AllocsPerRun(100, func() {
		for _, v := range []int64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 257, 258} {
			n += len(d.Letters(v))
		}
		for _, v := range []int64{0, 1, 2, 64, 4096, 4097} {
			n += len(old.Letters(v))
		}
	})
	if allocs != 0 {
		t.Errorf("Letters allocates %v times for common states", allocs)
	}
	// Rare combinations are rendered once and then cached.
	d.Letters(0x1ff)
	if a := testing.AllocsPerRun(10, func() { n += len(d.Letters(0x1ff)) }); a != 0 {
		t.Errorf("cached Letters allocates %v times", a)
	}
}

// Letters is used from several goroutines (per-CPU readers share one
// decoder); run with -race to check the cache.
func TestLettersConcurrent(t *testing.T) {
	d := StateDecoderForKernel("4.4")
	ref, _ := StateDecoderFromPrintFmt(layout42)
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			for v := int64(0); v < 4096; v++ {
				if d.Letters(v) != ref.Letters(v) {
					t.Errorf("Letters(%d) differs", v)
				}
			}
			done <- true
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

func BenchmarkLetters(b *testing.B) {
	d := StateDecoderForKernel("")
	for b.Loop() {
		_ = d.Letters(256)
	}
}
