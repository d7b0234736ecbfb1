package timeline

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// batch holds one record batch's columns in plain Go slices. Appending a
// row is a store per column; arrow builders cost several times more per
// value, which dominated ingest. Null slots hold zero so output bytes do not
// depend on earlier batches. A batch is turned into arrow arrays that share
// its memory (record), written, and then reused.
type batch struct {
	n       int
	settled bool // settle ran since the last row was added
	ts      []int64
	event   []int32
	cols    [NumCols]colBuf
	fields  varBuf
	chain   listBuf
}

// A column's slices have the batch's full length from the start and rows
// are stored by index: a row touches only the columns it sets (a
// sched_switch sets 11 of 33), and the rest stay zero and null.
type colBuf struct {
	i32   []int32 // tString (dictionary index), tInt32
	i64   []int64 // tInt64, tUint64 (bits)
	u8    []uint8 // tUint8, tBool (0/1, packed at record time)
	valid []byte
	set   int // rows that carry a value
	// dirty marks the rows that held a value in the previous batch: their
	// slots still do until settle zeroes those this batch leaves null.
	dirty    []byte
	hasDirty bool
}

type varBuf struct {
	offsets []int32
	data    []byte
	valid   []byte
	nulls   int
}

type listBuf struct {
	offsets []int32
	values  []uint64
	valid   []byte
	nulls   int
}

func newBatch(capRows int) *batch {
	b := &batch{ts: make([]int64, 0, capRows), event: make([]int32, 0, capRows)}
	vb := (capRows + 7) / 8
	for c := range b.cols {
		cb := &b.cols[c]
		switch cols[c].typ {
		case tString, tInt32:
			cb.i32 = make([]int32, capRows)
		case tInt64, tUint64:
			cb.i64 = make([]int64, capRows)
		case tUint8, tBool:
			cb.u8 = make([]uint8, capRows)
		}
		cb.valid = make([]byte, vb)
		cb.dirty = make([]byte, vb)
	}
	b.fields = varBuf{offsets: make([]int32, 1, capRows+1), valid: make([]byte, vb)}
	b.chain = listBuf{offsets: make([]int32, 1, capRows+1), valid: make([]byte, vb)}
	return b
}

// settle zeroes the slots that still hold the previous batch's values and
// are null in this one, so every null slot is zero (output bytes never
// depend on earlier batches). Comparing the two batches' validity bitmaps
// touches only those rows; clearing whole columns at every reset cost more
// than encoding them. It must run before the batch is encoded.
func (b *batch) settle() {
	if b.settled {
		return
	}
	b.settled = true
	for c := range b.cols {
		cb := &b.cols[c]
		if !cb.hasDirty {
			continue
		}
		// A word of bitmap (64 rows) at a time: most are all stale-free.
		// The bitmaps are (capRows+7)/8 bytes; the tail is done bytewise.
		d, v := cb.dirty, cb.valid
		for w := 0; w+8 <= len(d); w += 8 {
			stale := binary.LittleEndian.Uint64(d[w:]) &^ binary.LittleEndian.Uint64(v[w:])
			for ; stale != 0; stale &= stale - 1 {
				i := w*8 + bits.TrailingZeros64(stale)
				cb.zero(i)
			}
		}
		for w := len(d) &^ 7; w < len(d); w++ {
			for stale := d[w] &^ v[w]; stale != 0; stale &= stale - 1 {
				cb.zero(w*8 + bits.TrailingZeros8(stale))
			}
		}
	}
}

// zero clears slot i.
func (cb *colBuf) zero(i int) {
	switch {
	case cb.i32 != nil:
		cb.i32[i] = 0
	case cb.i64 != nil:
		cb.i64[i] = 0
	default:
		cb.u8[i] = 0
	}
}

func (b *batch) reset() {
	b.settle()
	b.settled = false
	b.n = 0
	b.ts, b.event = b.ts[:0], b.event[:0]
	for c := range b.cols {
		cb := &b.cols[c]
		if cb.set == 0 && !cb.hasDirty {
			continue // no value since the reset before: all zero
		}
		// Settled, the column's nonzero slots are exactly its valid rows.
		cb.dirty, cb.valid = cb.valid, cb.dirty
		clear(cb.valid)
		cb.hasDirty = cb.set > 0
		cb.set = 0
	}
	b.fields.offsets, b.fields.data, b.fields.nulls = b.fields.offsets[:1], b.fields.data[:0], 0
	clear(b.fields.valid)
	b.chain.offsets, b.chain.values, b.chain.nulls = b.chain.offsets[:1], b.chain.values[:0], 0
	clear(b.chain.valid)
}

// grow makes room for row index i in the validity bitmaps.
func growBits(v []byte, i int) []byte {
	if i>>3 < len(v) {
		return v
	}
	return append(v, make([]byte, len(v)+1)...)
}

func setBit(v []byte, i int) { v[i>>3] |= 1 << (uint(i) & 7) }

// addRow appends a packed row (see rowChunk).
func (b *batch) addRow(r *row, eventIdx int32, dicts *[NumCols]*dict, jsonBuf *[]byte) {
	b.settled = false
	i := b.n
	b.ts = append(b.ts, r.time)
	b.event = append(b.event, eventIdx)
	vi, si := 0, 0
	for has := r.has & allCols; has != 0; has &= has - 1 {
		c := Col(bits.TrailingZeros64(has))
		cb := &b.cols[c]
		setBit(cb.valid, i)
		cb.set++
		switch cols[c].typ {
		case tString:
			cb.i32[i] = dicts[c].index(r.strs[si])
			si++
			continue
		case tInt32:
			cb.i32[i] = int32(r.vals[vi])
		case tInt64, tUint64:
			cb.i64[i] = r.vals[vi]
		case tUint8:
			cb.u8[i] = uint8(r.vals[vi])
		case tBool:
			if r.vals[vi] != 0 {
				cb.u8[i] = 1
			}
		}
		vi++
	}
	var fields []Field
	var chain []uint64
	if r.extra != nil {
		fields, chain = r.extra.Fields, r.extra.Callchain
	}
	f := &b.fields
	f.valid = growBits(f.valid, i)
	if len(fields) == 0 {
		f.nulls++
	} else {
		setBit(f.valid, i)
		*jsonBuf = appendFieldsJSON((*jsonBuf)[:0], fields)
		f.data = append(f.data, *jsonBuf...)
	}
	f.offsets = append(f.offsets, int32(len(f.data)))
	l := &b.chain
	l.valid = growBits(l.valid, i)
	if len(chain) == 0 {
		l.nulls++
	} else {
		setBit(l.valid, i)
		l.values = append(l.values, chain...)
	}
	l.offsets = append(l.offsets, int32(len(l.values)))
	b.n++
}

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

func buf(b []byte) *memory.Buffer { return memory.NewBufferBytes(b) }

func validBuf(v []byte, n, nulls int) *memory.Buffer {
	if nulls == 0 {
		return nil
	}
	return buf(v[:(n+7)/8])
}

// data is the Arrow values buffer of column c's first n rows (string
// columns as their int32 dictionary indices).
func (cb *colBuf) data(c Col, n int) []byte {
	switch cols[c].typ {
	case tString, tInt32:
		return bytesOf(cb.i32[:n])
	case tInt64, tUint64:
		return bytesOf(cb.i64[:n])
	case tBool:
		return packBools(cb.u8[:n])
	}
	return cb.u8[:n] // tUint8
}

// packBools turns 0/1 bytes into an Arrow bit-packed buffer.
func packBools(u []uint8) []byte {
	out := make([]byte, (len(u)+7)/8)
	for i, x := range u {
		if x != 0 {
			setBit(out, i)
		}
	}
	return out
}

// record wraps the batch's memory as arrow arrays in spill layout (string
// columns as int32 indices). The batch must not change until the record
// has been written.
func (b *batch) record(schema *arrow.Schema) arrow.RecordBatch {
	b.settle()
	n := b.n
	arrs := make([]arrow.Array, 0, NumCols+4)
	mk := func(t arrow.DataType, bufs []*memory.Buffer, nulls int, children []arrow.ArrayData) {
		d := array.NewData(t, n, bufs, children, nulls, 0)
		arrs = append(arrs, array.MakeFromData(d))
		d.Release()
	}
	mk(arrow.PrimitiveTypes.Int64, []*memory.Buffer{nil, buf(bytesOf(b.ts))}, 0, nil)
	mk(arrow.PrimitiveTypes.Int32, []*memory.Buffer{nil, buf(bytesOf(b.event))}, 0, nil)
	for c := Col(0); c < NumCols; c++ {
		cb := &b.cols[c]
		nulls := n - cb.set
		mk(spillType(cols[c].typ), []*memory.Buffer{validBuf(cb.valid, n, nulls), buf(cb.data(c, n))}, nulls, nil)
	}
	f := &b.fields
	mk(arrow.BinaryTypes.String, []*memory.Buffer{validBuf(f.valid, n, f.nulls), buf(bytesOf(f.offsets)), buf(f.data)}, f.nulls, nil)
	l := &b.chain
	vals := array.NewData(arrow.PrimitiveTypes.Uint64, len(l.values), []*memory.Buffer{nil, buf(bytesOf(l.values))}, nil, 0, 0)
	mk(arrow.ListOf(arrow.PrimitiveTypes.Uint64), []*memory.Buffer{validBuf(l.valid, n, l.nulls), buf(bytesOf(l.offsets))}, l.nulls, []arrow.ArrayData{vals})
	vals.Release()
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}
