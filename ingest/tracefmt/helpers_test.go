package tracefmt

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// findTracingData locates the tracing-data blob inside a perf.data or
// trace.dat file by its magic (0x17 0x08 0x44 "tracing").
func findTracingData(b []byte) ([]byte, bool) {
	i := bytes.Index(b, Magic)
	if i < 0 {
		return nil, false
	}
	return b[i:], true
}

func mustTracingData(tb testing.TB, name string) *TracingData {
	tb.Helper()
	td, err := ParseTracingData(readTestdata(tb, name))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if len(td.FormatErrors) > 0 {
		tb.Fatalf("%s: format errors: %v", name, td.FormatErrors)
	}
	return td
}

func mustFormat(tb testing.TB, system, name string) *Format {
	tb.Helper()
	f, err := ParseFormat(system, readTestdata(tb, filepath.Join("formats", name)))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return f
}

// perfSamples returns the raw tracepoint payloads of testdata/perf618_samples.bin
// (u32 length + bytes each, little endian).
func perfSamples(tb testing.TB) [][]byte {
	tb.Helper()
	b := readTestdata(tb, "perf618_samples.bin")
	var out [][]byte
	for len(b) > 0 {
		if len(b) < 4 {
			tb.Fatal("perf618_samples.bin: truncated length")
		}
		n := int(binary.LittleEndian.Uint32(b))
		if n > len(b)-4 {
			tb.Fatal("perf618_samples.bin: truncated record")
		}
		out = append(out, b[4:4+n])
		b = b[4+n:]
	}
	return out
}

type blobSystem struct {
	name    string
	formats [][]byte
}

// blobSpec describes a tracing-data blob for buildBlob.
type blobSpec struct {
	version                string
	order                  binary.AppendByteOrder
	headerPage, headerEvnt []byte
	ftrace                 [][]byte
	systems                []blobSystem
	kallsyms, printk       []byte
	cmdlines               []byte // written only for version >= 0.6
}

// buildBlob writes a tracing-data blob in the layout of formats.md §1.11.
func buildBlob(s blobSpec) []byte {
	o := s.order
	b := append([]byte(nil), Magic...)
	b = append(b, s.version...)
	b = append(b, 0)
	if o == binary.AppendByteOrder(binary.BigEndian) {
		b = append(b, 1, 8)
	} else {
		b = append(b, 0, 8)
	}
	b = o.AppendUint32(b, 4096)
	b = append(b, "header_page\x00"...)
	b = o.AppendUint64(b, uint64(len(s.headerPage)))
	b = append(b, s.headerPage...)
	b = append(b, "header_event\x00"...)
	b = o.AppendUint64(b, uint64(len(s.headerEvnt)))
	b = append(b, s.headerEvnt...)
	b = o.AppendUint32(b, uint32(len(s.ftrace)))
	for _, f := range s.ftrace {
		b = o.AppendUint64(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = o.AppendUint32(b, uint32(len(s.systems)))
	for _, sys := range s.systems {
		b = append(b, sys.name...)
		b = append(b, 0)
		b = o.AppendUint32(b, uint32(len(sys.formats)))
		for _, f := range sys.formats {
			b = o.AppendUint64(b, uint64(len(f)))
			b = append(b, f...)
		}
	}
	b = o.AppendUint32(b, uint32(len(s.kallsyms)))
	b = append(b, s.kallsyms...)
	b = o.AppendUint32(b, uint32(len(s.printk)))
	b = append(b, s.printk...)
	if s.version != "0.5" {
		b = o.AppendUint64(b, uint64(len(s.cmdlines)))
		b = append(b, s.cmdlines...)
	}
	return b
}

// smallBlobs are compact blobs made of real pieces (header texts of the
// 6.18 blob, real format files); fuzz seeds and byte-order tests use them.
// The real blobs (13-14 KB) make the fuzzer spend its time minimizing.
func smallBlobs(tb testing.TB) [][]byte {
	td, err := ParseTracingData(readTestdata(tb, "perf618_pipe.tracing"))
	if err != nil {
		tb.Fatal(err)
	}
	f := func(name string) []byte { return readTestdata(tb, "formats/"+name) }
	base := blobSpec{
		version: "0.6", order: binary.LittleEndian,
		headerPage: td.HeaderPage, headerEvnt: td.HeaderEvent,
		systems: []blobSystem{{"sched", [][]byte{f("trappy32__sched__sched_switch.format"), f("lisaload__sched__sched_wakeup.format")}},
			{"ipi", [][]byte{f("trappyidle__ipi__ipi_raise.format")}}},
		kallsyms: []byte("ffffffff81000000 T _stext\n"),
		printk:   []byte("0xffffffff81e0a1b0 : \"hello %d\\n\"\n"),
		cmdlines: []byte("1 init\n42 kworker/0:1\n"),
	}
	v05 := base
	v05.version = "0.5"
	v6 := base
	v6.version = "6"
	v6.ftrace = [][]byte{[]byte("name: function\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\nprint fmt: \" %lx\", REC->ip\n")}
	be := base
	be.order = binary.BigEndian
	return [][]byte{buildBlob(base), buildBlob(v05), buildBlob(v6), buildBlob(be)}
}

// tinyBlobs are fuzz seeds of a few hundred bytes: the fuzzer's input
// minimization is quadratic in the input size, so multi-KB seeds stall it.
// Format texts are fuzzed on their own by FuzzParseFormat.
func tinyBlobs() [][]byte {
	format := []byte("name: sched_switch\nID: 7\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n" +
		"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n" +
		"\tfield:__data_loc char[] s;\toffset:24;\tsize:4;\tsigned:0;\n\n" +
		"print fmt: \"%s\", REC->prev_comm\n")
	hp := []byte("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n")
	base := blobSpec{
		version: "0.6", order: binary.LittleEndian, headerPage: hp, headerEvnt: []byte("# x\n"),
		systems:  []blobSystem{{"sched", [][]byte{format}}},
		kallsyms: []byte("0 T a\n"), printk: []byte("0x1 : \"b\"\n"), cmdlines: []byte("1 init\n"),
	}
	v6 := base
	v6.version = "6"
	v6.ftrace = [][]byte{format}
	be := base
	be.order = binary.BigEndian
	be.version = "0.5"
	return [][]byte{buildBlob(base), buildBlob(v6), buildBlob(be)}
}
