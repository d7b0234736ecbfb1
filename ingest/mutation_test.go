package ingest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/schedreplay/replay/analysis"
)

// mutationFixtures lists the repository's trace fixtures (every format).
func mutationFixtures(t *testing.T) []string {
	var files []string
	for _, pat := range []string{
		"../fixtures/perf/*.data", "../fixtures/perf/public/*", "../fixtures/kernels/*/*.perf.data",
		"../fixtures/tracedat/*.dat", "../fixtures/tracedat/*.dat.gz",
		"../fixtures/text/*.txt", "../fixtures/text/*.txt.gz", "../fixtures/perfetto/*",
	} {
		m, _ := filepath.Glob(pat)
		for _, f := range m {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && filepath.Ext(f) != ".md" {
				files = append(files, f)
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("found only %d fixtures", len(files))
	}
	return files
}

// readAll opens path with Open and reads every event, returning the error
// (nil for a valid, possibly partial, result). A panic fails the test.
func readAll(path string) error {
	r, err := Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	// Through the analysis, whose per-CPU and per-task state is what a
	// damaged number would blow up (a CPU id of 99999999 once did), with
	// the longest wakeups' context kept (per-CPU idle history too).
	_, err = analysis.Run(r, analysis.Options{Worst: 20})
	return err
}

// Every reader, on every fixture truncated at many offsets and with random
// bit flips (seeded, so failures reproduce), returns an error or a valid
// partial result: never a panic, never a hang, and never more allocation
// than the input justifies.
func TestMutatedFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every fixture many times")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(1))
	for _, fix := range mutationFixtures(t) {
		orig, err := os.ReadFile(fix)
		if err != nil {
			t.Fatal(err)
		}
		var variants []struct {
			name string
			data []byte
		}
		add := func(name string, b []byte) {
			variants = append(variants, struct {
				name string
				data []byte
			}{name, b})
		}
		// Truncations: the first bytes densely (headers), then spread out.
		for _, off := range []int{0, 1, 7, 8, 15, 16, 63, 64, 103, 104, 200, 511, 4096} {
			if off < len(orig) {
				add(fmt.Sprintf("truncated at %d", off), orig[:off])
			}
		}
		for i := 1; i < 8; i++ {
			off := len(orig) * i / 8
			add(fmt.Sprintf("truncated at %d", off), orig[:off])
		}
		add("last byte cut", orig[:len(orig)-1])
		// Bit flips: a few in the first 4 KiB (headers), some anywhere.
		for i := 0; i < 10; i++ {
			b := append([]byte(nil), orig...)
			flips := 1 + rng.Intn(8)
			for j := 0; j < flips; j++ {
				lim := len(b)
				if i < 5 && lim > 4096 {
					lim = 4096
				}
				p := rng.Intn(lim)
				b[p] ^= 1 << uint(rng.Intn(8))
			}
			add(fmt.Sprintf("%d bit flips (variant %d)", flips, i), b)
		}
		for _, v := range variants {
			path := filepath.Join(dir, filepath.Base(fix))
			if err := os.WriteFile(path, v.data, 0o644); err != nil {
				t.Fatal(err)
			}
			checkOne(t, fix+": "+v.name, path, int64(len(v.data)))
		}
	}
	t.Logf("largest allocation: %d MB (%s)", maxAlloc>>20, maxAllocWhat)
}

// allocLimit is what reading an input of size n may allocate in total: a
// generous multiple of its size (decompression expands it, events are
// decoded into reused records) plus a fixed allowance for tables and
// buffers. A length field trusted blindly blows far past it.
func allocLimit(n int64) uint64 { return uint64(200*n) + 512<<20 }

var (
	maxAlloc     uint64
	maxAllocWhat string
)

func checkOne(t *testing.T, what, path string, size int64) {
	t.Helper()
	done := make(chan string, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Sprintf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		readAll(path)
		done <- ""
	}()
	select {
	case msg := <-done:
		if msg != "" {
			t.Fatalf("%s: %s", what, msg)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: still reading after 60 s", what)
	}
	runtime.ReadMemStats(&after)
	got := after.TotalAlloc - before.TotalAlloc
	if got > maxAlloc {
		maxAlloc, maxAllocWhat = got, what
	}
	if got > allocLimit(size) {
		t.Errorf("%s: allocated %d MB for a %d-byte input", what, got>>20, size)
	}
}
