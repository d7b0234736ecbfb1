package timeline

import (
	"testing"

	"github.com/schedreplay/replay/internal/fuzzio"
)

// A timeline file from anywhere (Arrow IPC or Parquet, damaged or not):
// Open and Next give events or an error, never a panic.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	for _, name := range []string{"t.arrow", "t.parquet"} {
		fuzzio.AddFile(f, writeSample(f, dir, name))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Open(fuzzio.WriteTemp(t, "f", data))
		if err != nil {
			return
		}
		defer r.Close()
		for n := 0; r.Next() && n < 1<<16; n++ {
		}
	})
}
