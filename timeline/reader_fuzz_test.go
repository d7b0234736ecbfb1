package timeline

import (
	"path/filepath"
	"testing"

	"github.com/schedreplay/replay/internal/fuzzio"
)

// A timeline file from anywhere (Arrow IPC or Parquet, damaged or not):
// Open and Next give events or an error, never a panic.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	for _, name := range []string{"t.arrow", "t.parquet"} {
		p := filepath.Join(dir, name)
		w, err := Create(p, WriterOptions{})
		if err != nil {
			f.Fatal(err)
		}
		evs := sampleEvents()
		for i := range evs {
			if err := w.Write(&evs[i]); err != nil {
				f.Fatal(err)
			}
		}
		if err := w.Close(&Meta{}); err != nil {
			f.Fatal(err)
		}
		fuzzio.AddFile(f, p)
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
