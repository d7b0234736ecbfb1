package ingest

import (
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestOpenByContent: every format is found by its content, also inside
// gzip and zstd, whatever the file is called.
func TestOpenByContent(t *testing.T) {
	dir := t.TempDir()
	// The decompressed copies go to a temporary directory of this test's
	// own, so other processes' (a replay running beside the tests) are not
	// counted as left behind.
	t.Setenv("TMPDIR", t.TempDir())
	copyAs := func(src, name string, compress string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		f, err := os.Create(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		switch compress {
		case "gz":
			zw := gzip.NewWriter(f)
			zw.Write(b)
			zw.Close()
		case "zst":
			zw, _ := zstd.NewWriter(f)
			zw.Write(b)
			zw.Close()
		default:
			f.Write(b)
		}
		return dst
	}
	cases := []struct {
		path, format string
		rows         int
	}{
		{"../fixtures/tracedat/recorded.v7zstd.dat", "trace.dat v7", 403},
		{"../fixtures/tracedat/recorded.v6.dat.gz", "trace.dat v6", 403},
		{copyAs("../fixtures/tracedat/recorded.v7zstd.dat", "noname", "zst"), "trace.dat v7", 403},
		{"../fixtures/text/tracefs_trace_default.txt", "ftrace text", 403},
		{copyAs("../fixtures/text/tracecmd_report_raw.txt", "a.bin", "zst"), "ftrace text", 403},
		{copyAs("../fixtures/text/tracefs_trace_noirqinfo.txt", "b", "gz"), "ftrace text", 403},
		{"../fixtures/text/guestA-hackbench.ftrace.txt.gz", "ftrace text", 11767},
		{"../fixtures/text/perf_script_default.txt", "perf script text", 478},
		{copyAs("../fixtures/text/perf_script_ns_fields.txt", "c.gz", "gz"), "perf script text", 478},
		// A compressed perf.data is read from a temporary file, under its
		// own name (rows not counted here: perfdata's tests check them).
		{"../fixtures/kernels/guest-P-1s2c1t/stressng-mix.perf.data.gz", "perf.data", -1},
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "replay-ingest-*"))
	for _, tc := range cases {
		r, err := Open(tc.path)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); err != nil {
			t.Errorf("%s: %v", tc.path, err)
		}
		if got := r.Meta().Source.Format; got != tc.format || n != tc.rows && tc.rows >= 0 {
			t.Errorf("%s: format %q rows %d, want %q %d", tc.path, got, n, tc.format, tc.rows)
		}
		// The source named in the metadata is the file given, also when it
		// was decompressed to a temporary file first (whose random name
		// made two ingests of one file differ).
		if got := r.Meta().Source.Path; got != tc.path {
			t.Errorf("%s: source path %q", tc.path, got)
		}
		if err := r.Close(); err != nil {
			t.Errorf("%s: close: %v", tc.path, err)
		}
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "replay-ingest-*"))
	if len(after) > len(before) {
		t.Errorf("temporary files left behind: %v", after)
	}
	junk := copyAs("../fixtures/text/perf_script_default.txt", "junk", "")
	os.WriteFile(junk, []byte("hello world\nnot a trace\n"), 0o644)
	if _, err := Open(junk); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("junk: %v", err)
	}
	gzJunk := copyAs(junk, "junk.gz", "gz")
	if _, err := Open(gzJunk); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("gzip junk: %v", err)
	}
}

// TestOpenStdin: "-" sniffs standard input like a file (here zstd text).
func TestOpenStdin(t *testing.T) {
	b, err := os.ReadFile("../fixtures/text/tracefs_trace_record_tgid.txt")
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	z := enc.EncodeAll(b, nil)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		pw.Write(z)
		pw.Close()
	}()
	old := os.Stdin
	os.Stdin = pr
	defer func() { os.Stdin = old }()
	r, err := Open("-")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		n++
	}
	if n != 403 || r.Err() != nil || r.Meta().Source.Format != "ftrace text" {
		t.Errorf("%d rows, %v, %q", n, r.Err(), r.Meta().Source.Format)
	}
}
