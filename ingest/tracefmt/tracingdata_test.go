package tracefmt

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Expected values were read off the blobs with an independent throw-away
// decoder and, for the perf files, agree with formats.md §1.11 and with
// `perf report --header-only` (kernels/*/oracle/*.header.txt).
func TestParseTracingData(t *testing.T) {
	tests := []struct {
		file        string
		version     string
		longSize    int
		size        int
		formats     []string // system/name:ID, in blob order
		printk      int
		kallsyms    int
		cmdlines    int
		cmdlineSeen map[int]string
	}{
		{
			// perf 6.1 pipe mode on kernel 6.18: the payload of the
			// HEADER_TRACING_DATA record, including perf's 4 padding bytes.
			file: "perf618_pipe.tracing", version: "0.6", longSize: 8, size: 13916,
			formats: []string{"task/task_rename:204", "task/task_newtask:205",
				"sched/sched_stat_runtime:363", "sched/sched_process_exec:365", "sched/sched_process_fork:366",
				"sched/sched_process_exit:369", "sched/sched_process_free:370", "sched/sched_migrate_task:371",
				"sched/sched_switch:372", "sched/sched_wakeup_new:373", "sched/sched_wakeup:374", "sched/sched_waking:375"},
			printk: 4316, cmdlines: 80,
			cmdlineSeen: map[int]string{4053: "bash", 22: "ksoftirqd/1", 2987: "qemu-system-x86", 2272: "memfd:sealed-91"},
		},
		{
			// perf 6.1 file mode on kernel 6.1 (HEADER_TRACING_DATA feature).
			file: "perf61_hackbench.tracing", version: "0.6", longSize: 8, size: 12487,
			formats: []string{"sched/sched_waking:322", "sched/sched_wakeup_new:320", "sched/sched_switch:319",
				"sched/sched_migrate_task:318", "sched/sched_process_fork:313", "sched/sched_stat_wait:311",
				"sched/sched_stat_sleep:310", "sched/sched_stat_iowait:309", "sched/sched_stat_runtime:307"},
			printk: 5729,
		},
		{
			// Start of trappy's raw_trace.dat (trace-cmd v6, 3.x kernel),
			// kallsyms cut to 20 lines (see testdata/README.md).
			file: "trappy_raw_trace_v6.head", version: "6", longSize: 8, size: 14211,
			formats: []string{"ftrace/wakeup:3", "ftrace/user_stack:12", "ftrace/print:5", "ftrace/mmiotrace_rw:7",
				"ftrace/mmiotrace_map:8", "ftrace/kernel_stack:4", "ftrace/function:1", "ftrace/funcgraph_exit:10",
				"ftrace/funcgraph_entry:11", "ftrace/context_switch:2", "ftrace/branch:9", "ftrace/bputs:14",
				"ftrace/bprint:6", "sched/sched_switch:73"},
			printk: 2176, kallsyms: 655, cmdlines: 128,
			cmdlineSeen: map[int]string{14: "ksoftirqd/1", 3708: "sysbench", 3644: "kworker/0:0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			td := mustTracingData(t, tc.file)
			if td.Version != tc.version || td.ByteOrder != binary.LittleEndian || td.LongSize != tc.longSize || td.PageSize != 4096 {
				t.Errorf("header = %q %v long %d page %d", td.Version, td.ByteOrder, td.LongSize, td.PageSize)
			}
			if td.Size != tc.size {
				t.Errorf("Size = %d, want %d", td.Size, tc.size)
			}
			var got []string
			for _, f := range td.Formats {
				got = append(got, f.System+"/"+f.Name+":"+strconv.Itoa(f.ID))
				if td.ByID(f.ID) != f {
					t.Errorf("ByID(%d) != %s", f.ID, f.Name)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.formats, " ") {
				t.Errorf("formats\n got %v\nwant %v", got, tc.formats)
			}
			if len(td.Printk) != tc.printk || len(td.Kallsyms) != tc.kallsyms {
				t.Errorf("printk %d kallsyms %d, want %d %d", len(td.Printk), len(td.Kallsyms), tc.printk, tc.kallsyms)
			}
			if len(td.Cmdlines) != tc.cmdlines {
				t.Errorf("%d cmdlines, want %d", len(td.Cmdlines), tc.cmdlines)
			}
			for pid, comm := range tc.cmdlineSeen {
				if td.Cmdlines[pid] != comm {
					t.Errorf("Cmdlines[%d] = %q, want %q", pid, td.Cmdlines[pid], comm)
				}
			}
			if !strings.Contains(string(td.HeaderEvent), "type_len") {
				t.Errorf("header_event text not found: %q", td.HeaderEvent)
			}
			hp, err := td.HeaderPageFormat()
			if err != nil {
				t.Fatal(err)
			}
			if c := hp.Field("commit"); c == nil || c.Size != 8 {
				t.Errorf("header_page commit = %+v, want size 8 (64-bit kernel)", c)
			}
			if td.ByID(99999) != nil || td.ByName("sched", "sched_switch") == nil {
				t.Error("ByID/ByName lookups wrong")
			}
		})
	}
}

// Every truncation and a set of corruptions of a real blob must fail
// cleanly with an offset, never panic.
func TestParseTracingDataCorrupt(t *testing.T) {
	blob := readTestdata(t, "perf618_pipe.tracing")[:13916]
	for n := 0; n < len(blob); n++ {
		_, err := ParseTracingData(blob[:n])
		var oe *OffsetError
		if err == nil {
			// The only valid prefix is the one missing just the cmdlines
			// (accepted: some writers end after printk).
			if n != 13916-8-971 {
				t.Fatalf("prefix %d parsed without error", n)
			}
			continue
		}
		if !errors.As(err, &oe) {
			t.Fatalf("prefix %d: error %v is not an *OffsetError", n, err)
		}
		if oe.Offset < 0 || oe.Offset > n {
			t.Fatalf("prefix %d: error offset %d out of range", n, oe.Offset)
		}
	}

	set := func(off int, b ...byte) []byte {
		c := append([]byte(nil), blob...)
		copy(c[off:], b)
		return c
	}
	// Offsets inside perf618: version at 10, endian 14, long 15, page 16,
	// "header_page" 20, its size 32.
	cases := []struct {
		name string
		blob []byte
		want string
	}{
		{"magic", set(0, 0x18), "offset 0: expected magic"},
		{"version", set(10, 'x'), "offset 10: expected a numeric version"},
		{"v7", set(10, '7', 0, 0), "offset 10: version 7"},
		{"endian", set(14, 2), "offset 14: expected endianness"},
		{"long", set(15, 3), "offset 15: expected long size 4 or 8"},
		{"page", set(16, 0, 0, 0, 0), "offset 16: expected a page size"},
		{"header_page", set(20, 'X'), `offset 20: expected "header_page"`},
		{"huge size", set(32, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "offset 40: header_page of 9223372036854775807 bytes runs past the end"},
	}
	for _, tc := range cases {
		_, err := ParseTracingData(tc.blob)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// A format text that does not parse is reported and skipped; the rest of
// the blob stays usable.
func TestParseTracingDataBadFormat(t *testing.T) {
	blob := append([]byte(nil), readTestdata(t, "perf618_pipe.tracing")...)
	i := strings.Index(string(blob), "name: task_rename")
	copy(blob[i:], "nome")
	td, err := ParseTracingData(blob)
	if err != nil {
		t.Fatal(err)
	}
	if len(td.FormatErrors) != 1 || len(td.Formats) != 11 || td.ByID(204) != nil || td.ByID(372) == nil {
		t.Fatalf("FormatErrors %v, %d formats", td.FormatErrors, len(td.Formats))
	}
	if !strings.Contains(td.FormatErrors[0].Error(), "task format 0") {
		t.Errorf("error does not say which format: %v", td.FormatErrors[0])
	}
}

// Blobs in both byte orders and versions 0.5 (no cmdlines), 0.6 and 6.
func TestParseTracingDataSmall(t *testing.T) {
	tests := []struct {
		version  string
		order    binary.AppendByteOrder
		formats  int
		cmdlines int
	}{
		{"0.6", binary.LittleEndian, 3, 2},
		{"0.5", binary.LittleEndian, 3, 0},
		{"6", binary.LittleEndian, 4, 2},
		{"0.6", binary.BigEndian, 3, 2},
	}
	for i, b := range smallBlobs(t) {
		tc := tests[i]
		td, err := ParseTracingData(b)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if td.Version != tc.version || td.ByteOrder != tc.order.(binary.ByteOrder) || td.Size != len(b) || len(td.Formats) != tc.formats ||
			len(td.Cmdlines) != tc.cmdlines || td.ByID(68) == nil || len(td.FormatErrors) != 0 {
			t.Errorf("%d: got version %q %v size %d/%d, %d formats, %d cmdlines, errors %v",
				i, td.Version, td.ByteOrder, td.Size, len(b), len(td.Formats), len(td.Cmdlines), td.FormatErrors)
		}
		if tc.cmdlines > 0 && td.Cmdlines[42] != "kworker/0:1" {
			t.Errorf("%d: Cmdlines = %v", i, td.Cmdlines)
		}
	}
}

func TestSectionParsers(t *testing.T) {
	td := mustTracingData(t, "trappy_raw_trace_v6.head")
	blob := readTestdata(t, "trappy_raw_trace_v6.head")
	start := len(Magic) + len("6\x00") + 2 + 4
	hp, he, n, err := ParseHeaders(blob[start:], binary.LittleEndian)
	if err != nil || string(hp) != string(td.HeaderPage) || string(he) != string(td.HeaderEvent) {
		t.Fatalf("ParseHeaders: %v", err)
	}
	start += n
	ft, errs, n, err := ParseFtraceFormats(blob[start:], binary.LittleEndian)
	if err != nil || len(errs) != 0 || len(ft) != 13 {
		t.Fatalf("ParseFtraceFormats: %d formats, %v %v", len(ft), errs, err)
	}
	start += n
	ev, errs, _, err := ParseEventFormats(blob[start:], binary.LittleEndian)
	if err != nil || len(errs) != 0 || len(ev) != 1 || ev[0].Name != "sched_switch" || ev[0].System != "sched" {
		t.Fatalf("ParseEventFormats: %v %v %v", ev, errs, err)
	}
}

// TestFixtureBlobs parses the tracing data of every real trace in the shared
// fixtures (about 2900 format texts from 3.x to 6.18 kernels, 32- and 64-bit)
// when they are present. Nothing may fail to parse, and every sched_switch
// print fmt must give a prev_state decoder.
func TestFixtureBlobs(t *testing.T) {
	if testing.Short() {
		t.Skip("reads several MB of fixtures")
	}
	const root = "/work/shared/fixtures"
	var files []string
	for _, pat := range []string{"recorded/*.data", "kernels/*/*.perf.data", "public/trappy/tests/*.dat", "public/lisa/*/*/*/trace.dat", "public/lisa/*/*/*/*/trace.dat"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("shared fixtures not present")
	}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blob, ok := findTracingData(b)
		if !ok {
			t.Errorf("%s: no tracing data", f)
			continue
		}
		td, err := ParseTracingData(blob)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, e := range td.FormatErrors {
			t.Errorf("%s: %v", f, e)
		}
		total += len(td.Formats)
		ss := td.ByName("sched", "sched_switch")
		if ss == nil {
			continue
		}
		if _, err := StateDecoderFromPrintFmt(ss.PrintFmt); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		for _, name := range []string{"prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid", "next_prio"} {
			if ss.Field(name) == nil {
				t.Errorf("%s: sched_switch has no %s", f, name)
			}
		}
	}
	t.Logf("%d files, %d formats", len(files), total)
}
