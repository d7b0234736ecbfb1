package timeline

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBatchEncoderMatchesArrowGo holds the batch encoder to arrow-go's own
// record batch encoder: the same message, byte for byte, uncompressed and
// with LZ4_FRAME, for batches with every column type, all-null columns,
// string fields and callchains, and sizes on both sides of the 64 KiB
// LZ4 block.
func TestBatchEncoderMatchesArrowGo(t *testing.T) {
	schema := buildSchema(nil, spillType, arrow.PrimitiveTypes.Int32)
	base := sampleEvents()
	for _, rows := range []int{1, 4, 3000, 20000} {
		b := newBatch(rows)
		var dicts [NumCols]*dict
		for c := range dicts {
			dicts[c] = &dict{idx: map[string]int32{}}
		}
		var ev dict
		ev.idx = map[string]int32{}
		var jb []byte
		for i := 0; i < rows; i++ {
			e := base[i%len(base)]
			e.Time += int64(i) * 7919
			if i%5 == 0 {
				e.SetInt(Runtime, int64(i)*1000+13)
			}
			if i%11 == 3 {
				e.SetInt(GroupDead, 1)
			}
			b.add(&e, ev.index(e.Name), &dicts, &jb)
		}
		for _, lz := range []bool{false, true} {
			t.Run(fmt.Sprintf("rows=%d/lz4=%v", rows, lz), func(t *testing.T) {
				opts := []ipc.Option{ipc.WithAllocator(memory.NewGoAllocator())}
				if lz {
					opts = append(opts, ipc.WithLZ4())
				}
				rec := b.record(schema)
				defer rec.Release()
				p, err := ipc.GetRecordBatchPayload(rec, opts...)
				if err != nil {
					t.Fatal(err)
				}
				defer p.Release()
				var want bytes.Buffer
				wantMeta, err := p.WritePayload(&want)
				if err != nil {
					t.Fatal(err)
				}
				enc := newBatchEncoder(lz, 2)
				// Twice: the second pass reuses the encoder's buffers
				// and its cache of compressed zero runs.
				for pass := 0; pass < 2; pass++ {
					var got bytes.Buffer
					meta, body, err := enc.write(&got, b)
					if err != nil {
						t.Fatal(err)
					}
					if int(meta) != wantMeta || int64(meta)+body != int64(want.Len()) {
						t.Errorf("pass %d: meta %d body %d, arrow-go meta %d total %d", pass, meta, body, wantMeta, want.Len())
					}
					if !bytes.Equal(got.Bytes(), want.Bytes()) {
						g, w := got.Bytes(), want.Bytes()
						i := 0
						for i < len(g) && i < len(w) && g[i] == w[i] {
							i++
						}
						t.Fatalf("pass %d: %d bytes, arrow-go %d; first difference at byte %d", pass, len(g), len(w), i)
					}
				}
			})
		}
	}
}

// A reused batch encodes exactly the bytes a fresh one does: the slots a
// previous batch filled and this one leaves null are zero again, for dense
// and sparse columns alike, and a column the new batch does not set at all
// is seen as all zero.
func TestBatchReuseMatchesFresh(t *testing.T) {
	base := sampleEvents()
	fill := func(b *batch, rows, seed int) {
		var dicts [NumCols]*dict
		for c := range dicts {
			dicts[c] = &dict{idx: map[string]int32{}}
		}
		ev := dict{idx: map[string]int32{}}
		var jb []byte
		for i := 0; i < rows; i++ {
			e := base[(i*seed)%len(base)]
			if (i+seed)%100 == 7 {
				e.SetInt(Delay, int64(i))
				e.SetInt(GroupDead, 1)
				e.SetInt(OrigCPU, 3)
			}
			if seed == 1 && i%3 == 0 {
				e.SetInt(Runtime, int64(i)+1)
			}
			b.add(&e, ev.index(e.Name), &dicts, &jb)
		}
	}
	for _, lz := range []bool{false, true} {
		reused := newBatch(4096)
		enc := newBatchEncoder(lz, 1)
		for k, step := range []struct{ rows, seed int }{{4096, 1}, {4000, 3}, {1000, 2}, {4096, 5}} {
			fill(reused, step.rows, step.seed)
			var got bytes.Buffer
			if _, _, err := enc.write(&got, reused); err != nil {
				t.Fatal(err)
			}
			reused.reset()
			fresh := newBatch(4096)
			fill(fresh, step.rows, step.seed)
			var want bytes.Buffer
			if _, _, err := newBatchEncoder(lz, 1).write(&want, fresh); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("lz4=%v batch %d: reused batch encodes %d bytes, a fresh one %d (different)", lz, k, got.Len(), want.Len())
			}
		}
	}
}

// add appends e as a row, packed as Writer.Write packs it (tests build
// batches from events directly). The batch must have room.
func (b *batch) add(e *Event, eventIdx int32, dicts *[NumCols]*dict, jsonBuf *[]byte) {
	var c rowChunk
	c.add(e)
	k := rowCursor{c: &c}
	var r row
	k.next(&r)
	b.addRow(&r, eventIdx, dicts, jsonBuf)
}
