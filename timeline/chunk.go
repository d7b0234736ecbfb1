package timeline

import "math/bits"

// rowChunk carries rows from Write to the encoder goroutine, packed: a
// header per row, then the values of the columns it sets, integers and
// strings apart, in column order. Copying whole Events (880 bytes, most of
// them unset columns) into a chunk that is cold in the cache cost more
// than the rest of Write; the packed values are a few sequential words.
type rowChunk struct {
	rows  []packedRow
	vals  []int64
	strs  []string
	extra []Event // the Fields and Callchain of rows that have them (rare)
}

type packedRow struct {
	time  int64
	has   uint64 // Event.Has
	name  string
	kind  Kind
	extra int32 // index in extra, -1 for none
}

// strCols has the bit of every string column.
var strCols = func() uint64 {
	var m uint64
	for c := Col(0); c < NumCols; c++ {
		if cols[c].typ == tString {
			m |= 1 << c
		}
	}
	return m
}()

const allCols = 1<<NumCols - 1

func (c *rowChunk) reset() {
	c.rows, c.vals, c.strs, c.extra = c.rows[:0], c.vals[:0], c.strs[:0], c.extra[:0]
}

func (c *rowChunk) add(e *Event) {
	r := packedRow{time: e.Time, has: e.Has, name: e.Name, kind: e.Kind, extra: -1}
	for has := e.Has & allCols &^ strCols; has != 0; has &= has - 1 {
		c.vals = append(c.vals, e.ints[bits.TrailingZeros64(has)])
	}
	for has := e.Has & strCols; has != 0; has &= has - 1 {
		c.strs = append(c.strs, e.strs[bits.TrailingZeros64(has)])
	}
	if len(e.Fields) > 0 || len(e.Callchain) > 0 {
		n := len(c.extra)
		r.extra = int32(n)
		if n < cap(c.extra) {
			c.extra = c.extra[:n+1]
		} else {
			c.extra = append(c.extra, Event{})
		}
		c.extra[n].copyExtras(e)
	}
	c.rows = append(c.rows, r)
}

// rowCursor walks a chunk's rows in order.
type rowCursor struct {
	c      *rowChunk
	i      int
	vi, si int
}

// row is one unpacked row: its header and its values.
type row struct {
	*packedRow
	vals  []int64  // the set integer columns' values, in column order
	strs  []string // the set string columns' values, in column order
	extra *Event   // Fields and Callchain, or nil
}

// next fills out with the next row; false at the end.
func (k *rowCursor) next(out *row) bool {
	if k.i >= len(k.c.rows) {
		return false
	}
	r := &k.c.rows[k.i]
	k.i++
	nv := bits.OnesCount64(r.has & allCols &^ strCols)
	ns := bits.OnesCount64(r.has & strCols)
	out.packedRow = r
	out.vals = k.c.vals[k.vi : k.vi+nv]
	out.strs = k.c.strs[k.si : k.si+ns]
	out.extra = nil
	k.vi += nv
	k.si += ns
	if r.extra >= 0 {
		out.extra = &k.c.extra[r.extra]
	}
	return true
}

// intCol returns the value of integer column col in r, which must be set.
func (r *row) intCol(col Col) int64 {
	return r.vals[bits.OnesCount64(r.has&allCols&^strCols&(1<<col-1))]
}
