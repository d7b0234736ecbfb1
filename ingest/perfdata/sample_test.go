package perfdata

import (
	"math/rand/v2"
	"testing"
)

// TestSampleLayoutMatchesGeneral holds the fixed-layout fast path to the
// general field-by-field parser: for every sample_type it accepts, on
// records of every length around the layout's (truncated, exact, padded)
// and both byte orders, it returns what the general parser returns, and
// declines exactly the records the general parser rejects.
func TestSampleLayoutMatchesGeneral(t *testing.T) {
	bits := []uint64{sampleIdentifier, sampleIP, sampleTID, sampleTime, sampleAddr, sampleID, sampleStreamID,
		sampleCPU, samplePeriod, sampleRaw, sampleWeight, sampleDataSrc, sampleTransaction, samplePhysAddr, sampleCgroup}
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for mask := 0; mask < 1<<len(bits); mask += 1 + rng.IntN(29) {
		var st uint64
		for i, b := range bits {
			if mask&(1<<i) != 0 {
				st |= b
			}
		}
		l := newSampleLayout(st)
		if !l.ok {
			t.Fatalf("sample_type %s: no fast layout", sampleTypeString(st))
		}
		a := &attr{sampleType: st}
		for _, big := range []bool{false, true} {
			ord := byteOrder{big: big}
			for n := 8; n < l.fixed+l.tail+48; n++ {
				rec := make([]byte, n)
				for i := range rec {
					rec[i] = byte(rng.Uint32())
				}
				if l.raw != 0 && l.raw+4 <= n {
					// A RAW size that fits about half the time.
					sz := uint32(rng.IntN(max(1, 2*(n-l.raw-4-l.tail+1))))
					if big {
						rec[l.raw], rec[l.raw+1], rec[l.raw+2], rec[l.raw+3] = byte(sz>>24), byte(sz>>16), byte(sz>>8), byte(sz)
					} else {
						rec[l.raw], rec[l.raw+1], rec[l.raw+2], rec[l.raw+3] = byte(sz), byte(sz>>8), byte(sz>>16), byte(sz>>24)
					}
				}
				var fast sample
				ok := l.parse(rec, ord, &fast)
				gen, msg, _ := parseSampleGeneral(rec, a, ord)
				if ok != (msg == "") {
					t.Fatalf("sample_type %s, %d bytes: fast ok=%v, general error %q", sampleTypeString(st), n, ok, msg)
				}
				if ok && fast != gen {
					t.Fatalf("sample_type %s, %d bytes: fast %+v, general %+v", sampleTypeString(st), n, fast, gen)
				}
				checked++
			}
		}
	}
	for _, st := range []uint64{sampleRead | sampleTime, sampleCallchain | sampleRaw, sampleTime | sampleBranchStack, sampleRegsUser, sampleStackUser | sampleTime, sampleAux} {
		if newSampleLayout(st).ok {
			t.Errorf("sample_type %s: fast layout for a variable layout", sampleTypeString(st))
		}
	}
	t.Logf("%d records compared", checked)
}
