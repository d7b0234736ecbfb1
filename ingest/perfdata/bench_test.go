package perfdata

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRead reads whole fixtures row by row (MB/s of perf.data input;
// allocs/op is per file, so per-row allocations show up as thousands).
func BenchmarkRead(b *testing.B) {
	// The largest fixture of each kind: file mode, pipe mode, zstd, and the
	// largest perf.data in the repository (a real 8-CPU kernel recording).
	files := []string{fixturePath("stressng.data"), fixturePath("hackbench_pipe.data"), fixturePath("hackbench_zstd.data")}
	if d := filepath.Join(repoRoot(), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "hackbench.perf.data"); fileExists(d) {
		files = append(files, d)
	}
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), func(b *testing.B) {
			b.SetBytes(st.Size())
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				r, err := Open(p)
				if err != nil {
					b.Fatal(err)
				}
				rows = 0
				for r.Next() {
					rows++
				}
				if r.Err() != nil {
					b.Fatal(r.Err())
				}
				r.Close()
			}
			b.ReportMetric(float64(rows), "rows/op")
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
