package synth

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/schedreplay/replay/whatif"
)

// Stream writes the bytes SaveWorkload writes for Generate's workload,
// with one batch or with many spilled and merged ones, and the counts.
func TestStreamMatchesGenerate(t *testing.T) {
	tp := topo(t, "hikey")
	dir := t.TempDir()
	cmds := append([]string{
		"schbench -m 3 -t 5 -s 100 -c 200 -r 2 -C 500 --fix-C",
		"hackbench -g 3 -f 6 -l 300 --pipe",
		"ebizzy -t 9 -S 1 -m",
		"ebizzy -t 1 -S 1",
		"schbench --version 2023 -t 5 -r 1",
		"schbench --version 2023 -m 2 -t 3 -s 0 -n 1 -r 1",
		"schbench --version 2023 -m 2 -t 2 -R 4000 -r 2",
	}, small...)
	for _, cmd := range cmds {
		res := gen(t, cmd, 5, tp)
		res.Workload.IdleWakeNS = []int64{15000}
		want := filepath.Join(dir, "want.arrow")
		if err := whatif.SaveWorkload(want, res.Workload); err != nil {
			t.Fatal(err)
		}
		wb, _ := os.ReadFile(want)
		for _, batch := range []int{0, 97} {
			g, err := ParseCommand(strings.Fields(cmd))
			if err != nil {
				t.Fatal(err)
			}
			SetSeed(g, 5)
			got := filepath.Join(dir, "got.arrow")
			sr, err := Stream(g, tp, got, StreamOptions{Batch: batch, IdleWakeNS: []int64{15000}})
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			gb, _ := os.ReadFile(got)
			if !bytes.Equal(wb, gb) {
				t.Errorf("%s batch %d: streamed file (%d bytes) differs from the in-memory one (%d bytes)", cmd, batch, len(gb), len(wb))
			}
			if sr.Workload != nil || sr.Tasks != res.Tasks || sr.Activations != res.Activations || sr.Edges != res.Edges {
				t.Errorf("%s: stream counts %d/%d/%d, in memory %d/%d/%d", cmd, sr.Tasks, sr.Activations, sr.Edges, res.Tasks, res.Activations, res.Edges)
			}
		}
	}
}

// peakHeap runs f and returns the peak heap in use above the heap before
// it, sampled every millisecond.
func peakHeap(f func()) uint64 {
	// Collect often, so that the heap in use follows the live data.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		var m runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	p := <-done
	if p < base {
		return 0
	}
	return p - base
}

// Streaming a run 10 times longer does not need 10 times the memory: the
// generator holds the tasks and their open activations, the writer a
// batch and a buffer per run. The in-memory path, measured the same way,
// does (which shows the measurement can tell).
func TestStreamMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory over seconds of generation")
	}
	tp := topo(t, "hikey")
	dir := t.TempDir()
	stream := func(r string) func() {
		return func() {
			g, err := ParseCommand(strings.Fields("schbench -m 2 -t 16 -r " + r))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Stream(g, tp, filepath.Join(dir, "s.arrow"), StreamOptions{Batch: 4096}); err != nil {
				t.Fatal(err)
			}
		}
	}
	inMemory := func(r string) func() {
		return func() {
			res := gen(t, "schbench -m 2 -t 16 -r "+r, 1, tp)
			if err := whatif.SaveWorkload(filepath.Join(dir, "m.arrow"), res.Workload); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name       string
		run        func(string) func()
		minR, maxR float64 // bounds on peak(long)/peak(short)
	}{
		{"stream", stream, 0, 2},
		{"in memory", inMemory, 5, 1e9},
	}
	for _, c := range cases {
		short, long := peakHeap(c.run("12")), peakHeap(c.run("120"))
		ratio := float64(long) / float64(max(short, 1))
		t.Logf("%s: peak heap -r 12 %.1f MiB, -r 120 %.1f MiB (x%.1f)", c.name, float64(short)/(1<<20), float64(long)/(1<<20), ratio)
		if ratio < c.minR || ratio > c.maxR {
			t.Errorf("%s: a 10x longer run needs x%.1f the peak heap, want %g..%g", c.name, ratio, c.minR, c.maxR)
		}
	}
}

// BenchmarkStreamSchbench streams a 60 s default schbench run (reported:
// the peak heap above the start, and the file size).
func BenchmarkStreamSchbench(b *testing.B) {
	g, err := ParseCommand(strings.Fields("schbench -r 60"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var peak uint64
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		peak = max(peak, peakHeap(func() {
			if _, err := Stream(g, nil, filepath.Join(dir, "s.arrow"), StreamOptions{}); err != nil {
				b.Fatal(err)
			}
		}))
	}
	st, _ := os.Stat(filepath.Join(dir, "s.arrow"))
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(st.Size())/(1<<20), "file-MiB")
}
