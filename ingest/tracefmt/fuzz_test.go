package tracefmt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Seeds: every real format text under testdata (their own files and the
// ones inside the three tracing-data blobs).
func formatSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	files, _ := filepath.Glob(filepath.Join("testdata", "formats", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	for _, blob := range blobSeeds(tb) {
		td, err := ParseTracingData(blob)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range td.Formats {
			seeds = append(seeds, []byte(formatText(f)))
		}
		seeds = append(seeds, td.HeaderPage)
	}
	return seeds
}

// formatText re-creates a format description from a parsed one (seed use
// only; the layout mirrors the kernel's).
func formatText(f *Format) string {
	s := "name: " + f.Name + "\nID: " + strconv.Itoa(f.ID) + "\nformat:\n"
	common := true
	for _, fl := range f.Fields {
		if common && !fl.Common {
			s += "\n"
			common = false
		}
		decl := fl.Type + " " + fl.Name
		if fl.Kind == FixedString || fl.Kind == Array {
			decl = fl.ElemType + " " + fl.Name + fl.Type[len(fl.ElemType):]
		}
		signed := "0"
		if fl.Signed {
			signed = "1"
		}
		s += "\tfield:" + decl + ";\toffset:" + strconv.Itoa(fl.Offset) + ";\tsize:" + strconv.Itoa(fl.Size) + ";\tsigned:" + signed + ";\n"
	}
	return s + "\nprint fmt: " + f.PrintFmt + "\n"
}

func blobSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, name := range []string{"perf618_pipe.tracing", "perf61_hackbench.tracing", "trappy_raw_trace_v6.head"} {
		out = append(out, readTestdata(tb, name))
	}
	return out
}

func FuzzParseFormat(f *testing.F) {
	for _, s := range formatSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		fm, err := ParseFormat("fuzz", text)
		if err != nil {
			if _, ok := err.(*LineError); !ok {
				t.Fatalf("error %T is not a *LineError", err)
			}
			return
		}
		if fm.Name == "" || fm.ID < 0 {
			t.Fatalf("accepted a format without name or ID: %+v", fm)
		}
		for i := range fm.Fields {
			fl := &fm.Fields[i]
			if got := fm.Field(fl.Name); got == nil || got.Name != fl.Name {
				t.Fatalf("Field(%q) lookup failed", fl.Name)
			}
			if fl.Offset < 0 || fl.Size < 0 || fl.Offset+fl.Size > fm.MinSize() {
				t.Fatalf("field %q outside MinSize %d", fl.Name, fm.MinSize())
			}
			// Decode the input itself as a record, in both orders and
			// cut at a few lengths: must never panic.
			for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
				for _, rec := range [][]byte{text, text[:len(text)/2], nil} {
					fl.Int(rec, order)
					fl.Uint(rec, order)
					if b, ok := fl.Bytes(rec, order); ok && cap(b) > len(b) {
						t.Fatal("Bytes result has spare capacity")
					}
					fl.Elem(rec, order, 1)
				}
			}
		}
		if d, err := StateDecoderFromPrintFmt(fm.PrintFmt); err == nil {
			for _, v := range []int64{0, 1, 2, 0x100, 0x400, -1, 1 << 40} {
				d.Letters(v)
			}
		}
		ParseHeaderPage(text)
	})
}

func FuzzParseTracingData(f *testing.F) {
	for _, s := range tinyBlobs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		td, err := ParseTracingData(blob)
		if err != nil {
			if _, ok := err.(*OffsetError); !ok {
				t.Fatalf("error %T is not an *OffsetError", err)
			}
			return
		}
		if td.Size <= len(Magic) || td.Size > len(blob) {
			t.Fatalf("Size %d outside (10, %d]", td.Size, len(blob))
		}
		for _, fm := range td.Formats {
			if td.ByID(fm.ID) == nil {
				t.Fatalf("ByID(%d) nil", fm.ID)
			}
		}
		// Re-parsing exactly the consumed bytes gives the same result.
		td2, err := ParseTracingData(blob[:td.Size])
		if err != nil || td2.Size != td.Size || len(td2.Formats) != len(td.Formats) {
			t.Fatalf("re-parse of the consumed prefix differs: %v", err)
		}
	})
}

func FuzzStateDecoderFromPrintFmt(f *testing.F) {
	for _, l := range kernelLayouts {
		f.Add(l.fmt)
	}
	for _, blob := range blobSeeds(f) {
		td, err := ParseTracingData(blob)
		if err != nil {
			f.Fatal(err)
		}
		for _, fm := range td.Formats {
			f.Add(fm.PrintFmt)
		}
	}
	f.Fuzz(func(t *testing.T, pf string) {
		d, err := StateDecoderFromPrintFmt(pf)
		if err != nil {
			return
		}
		for _, v := range []int64{0, 1, 2, 3, 0x80, 0x100, 0x101, 0x400, 0x1000, -1, 1 << 40} {
			if a, b := d.Letters(v), d.Letters(v); a != b {
				t.Fatalf("Letters(%d) not stable: %q then %q", v, a, b)
			}
		}
	})
}

// The seed generator doubles as a round-trip test of the parser.
func TestFormatTextRoundTrip(t *testing.T) {
	for _, blob := range blobSeeds(t) {
		td, err := ParseTracingData(blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range td.Formats {
			g, err := ParseFormat(f.System, []byte(formatText(f)))
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			if len(g.Fields) != len(f.Fields) || g.PrintFmt != f.PrintFmt || g.ID != f.ID {
				t.Fatalf("%s: round trip differs", f.Name)
			}
			for i := range f.Fields {
				if g.Fields[i] != f.Fields[i] {
					t.Fatalf("%s: field %d: %+v != %+v", f.Name, i, g.Fields[i], f.Fields[i])
				}
			}
		}
	}
}
