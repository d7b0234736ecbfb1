package perfdata

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader, as a file (random
// access) and as a stream. It must never panic, and every error must be a
// FormatError naming the input and an offset. The seed corpus is the real
// fixtures (small ones whole, large ones cut) and synthetic files in both
// byte orders and modes.
func FuzzReader(f *testing.F) {
	var seeds [][]byte
	paths, _ := filepath.Glob(fixturePath("*.data"))
	pub, _ := filepath.Glob(fixturePath("public/*/*"))
	for _, p := range append(paths, pub...) {
		if strings.HasSuffix(p, ".gz") || strings.HasSuffix(p, ".txt") || strings.HasSuffix(p, ".md") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Small seeds keep the fuzzer fast. File mode needs its end (the
		// features), so only small files go in whole; pipe streams can be
		// cut anywhere.
		if len(b) > 32<<10 && !bytes.HasPrefix(b, []byte("PERFILE2\x10\x00")) {
			continue
		}
		if len(b) > 16<<10 {
			b = b[:16<<10]
		}
		seeds = append(seeds, b)
	}
	for _, big := range []bool{false, true} {
		w := newSynth(f, big)
		scenario(w)
		seeds = append(seeds, w.file(128), w.pipe(136))
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			if err == nil {
				return
			}
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "fuzz: offset 0x") {
				t.Fatalf("error without file and offset: %v", err)
			}
		}
		for _, stream := range []bool{false, true} {
			var r *Reader
			var err error
			if stream {
				r, err = NewReader(onlyReader{bytes.NewReader(data)}, "fuzz")
			} else {
				r, err = NewReader(bytes.NewReader(data), "fuzz")
			}
			check(err)
			if err != nil {
				continue
			}
			for n := 0; n < 1<<16 && r.Next(); n++ {
				e := r.Event()
				_ = e.Name
			}
			check(r.Err())
			r.Meta()
			r.Close()
		}
	})
}
