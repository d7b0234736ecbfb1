package perfdata

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// The run-merging queue delivers exactly a stable sort by time of what was
// pushed (ties in push order), whatever the mix of sorted runs and
// disorder, and never holds back a record the limit allows.
func TestQueueDeliversStableSort(t *testing.T) {
	for _, tc := range []struct {
		name string
		gen  func(r *rand.Rand, n int) []uint64
	}{
		{"per-cpu runs", func(r *rand.Rand, n int) []uint64 {
			// 4 CPUs' buffers dumped in turn, each sorted.
			var ts []uint64
			base := uint64(1000)
			for len(ts) < n {
				for cpu := 0; cpu < 4; cpu++ {
					t := base + uint64(r.IntN(50))
					for i := 0; i < 1+r.IntN(20); i++ {
						ts = append(ts, t)
						t += uint64(r.IntN(5))
					}
				}
				base += 60
			}
			return ts[:n]
		}},
		{"random", func(r *rand.Rand, n int) []uint64 {
			ts := make([]uint64, n)
			for i := range ts {
				ts[i] = 1 + uint64(r.IntN(100))
			}
			return ts
		}},
		{"one run", func(r *rand.Rand, n int) []uint64 {
			ts := make([]uint64, n)
			for i := range ts {
				ts[i] = uint64(10 + i/3)
			}
			return ts
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for iter := 0; iter < 50; iter++ {
				ts := tc.gen(r, 1+r.IntN(10000))
				var q queue
				type rec struct{ t, i uint64 }
				var got []rec
				drain := func() {
					first := len(got)
					for {
						b, _, ok := q.next()
						if !ok {
							break
						}
						got = append(got, rec{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])})
					}
					// One delivery is sorted by time, ties in push order.
					for k := first + 1; k < len(got); k++ {
						a, b := got[k-1], got[k]
						if a.t > b.t || a.t == b.t && a.i > b.i {
							t.Fatalf("delivery out of order: %v then %v", a, b)
						}
					}
				}
				var buf [16]byte
				for i, x := range ts {
					binary.LittleEndian.PutUint64(buf[:], x)
					binary.LittleEndian.PutUint64(buf[8:], uint64(i))
					q.push(x, -1, buf[:])
					if r.IntN(500) == 0 {
						q.finishedRound()
						drain()
					}
				}
				q.flushAll()
				drain()
				want := make([]rec, len(ts))
				for i, x := range ts {
					want[i] = rec{x, uint64(i)}
				}
				// What was delivered before a round's limit may precede
				// later-pushed older records (counted as out of order);
				// without rounds the whole output is the stable sort.
				if q.outOfOrder == 0 {
					slices.SortStableFunc(want, func(a, b rec) int {
						if a.t < b.t {
							return -1
						}
						if a.t > b.t {
							return 1
						}
						return 0
					})
				} else {
					// Late records: each delivery was checked sorted;
					// here, every record comes out exactly once.
					slices.SortFunc(got, func(a, b rec) int { return int(a.i) - int(b.i) })
				}
				if !slices.Equal(got, want) {
					t.Fatalf("iteration %d (%d records, %d late): delivery differs from a stable sort by time", iter, len(ts), q.outOfOrder)
				}
				if q.n != 0 || len(q.heads) != 0 {
					t.Fatalf("queue not empty after flushAll: n=%d runs=%d", q.n, len(q.heads))
				}
			}
		})
	}
}
