package perfdata

import (
	"math"
	"unsafe"
)

// Reordering.
//
// perf drains its per-CPU ring buffers in turns, so records reach the file
// out of time order. After each pass over all buffers perf record writes a
// FINISHED_ROUND record, and perf's ordered-events queue relies on this
// guarantee: nothing read after a FINISHED_ROUND is older than what was
// queued before the *previous* FINISHED_ROUND. So at every FINISHED_ROUND
// the queue delivers the records up to the newest timestamp seen at the
// previous one. We do exactly that, which keeps memory to about two rounds
// of records and yields perf's order: by time, ties in file order.
//
// Records with time 0 (perf's synthesized /proc snapshot) or without a time
// are not queued but delivered at once, as perf does.
//
// A file without FINISHED_ROUND (some pipe streams, a killed perf) would make
// the queue hold the whole trace. Instead the queue is bounded
// (maxQueueBytes of record data): when full it delivers its older half by
// time, like perf's OE_FLUSH__HALF. Records older than what was already
// delivered then come out late; both the overflow and the late records are
// counted in Meta().Source.Extra ("reorder_overflows", "out_of_order_records").
// A bound in bytes rather than records keeps memory predictable whatever the
// record mix.

// defaultMaxQueueBytes bounds the record bytes held for reordering. A round
// of perf sched record on a large machine (per-CPU buffers of 512 KiB to a
// few MiB) fits comfortably.
const defaultMaxQueueBytes = 512 << 20

// arenaChunk is the allocation unit of queued record bytes.
const arenaChunk = 1 << 20

type chunk struct {
	buf  []byte
	live int // queued records still pointing into buf
}

// arena hands out record copies from large chunks and recycles a chunk once
// every record in it was delivered, so queueing costs no allocation per record.
type arena struct {
	chunks []*chunk
	free   []int32
	cur    int32
	bytes  int64 // bytes handed out and not yet released
}

// alloc copies b into the arena and returns its chunk and offset.
func (a *arena) alloc(b []byte) (chunkIdx int32, off int) {
	n := len(b)
	if n > arenaChunk {
		// Cannot happen for records (64 KiB max) but keep it safe.
		a.chunks = append(a.chunks, &chunk{buf: append(make([]byte, 0, n), b...), live: 1})
		a.bytes += int64(n)
		return int32(len(a.chunks) - 1), 0
	}
	if len(a.chunks) == 0 || len(a.chunks[a.cur].buf)+n > cap(a.chunks[a.cur].buf) {
		if k := len(a.free); k > 0 {
			a.cur = a.free[k-1]
			a.free = a.free[:k-1]
			a.chunks[a.cur].buf = a.chunks[a.cur].buf[:0]
		} else {
			// Start small (short files, many readers) and double up to
			// arenaChunk.
			size := 64 << 10
			if k := len(a.chunks); k > 0 {
				size = min(arenaChunk, 2*cap(a.chunks[k-1].buf))
			}
			a.chunks = append(a.chunks, &chunk{buf: make([]byte, 0, size)})
			a.cur = int32(len(a.chunks) - 1)
		}
	}
	c := a.chunks[a.cur]
	off = len(c.buf)
	c.buf = append(c.buf, b...)
	c.live++
	a.bytes += int64(n)
	return a.cur, off
}

func (a *arena) release(idx int32, n int) {
	c := a.chunks[idx]
	c.live--
	a.bytes -= int64(n)
	if c.live == 0 && idx != a.cur && cap(c.buf) <= arenaChunk {
		c.buf = c.buf[:0]
		a.free = append(a.free, idx)
	}
}

// qitem is a queued record: where its bytes are in the arena and its sort
// key. It holds no pointers, so the heap costs the garbage collector
// nothing; the record is parsed again when delivered.
type qitem struct {
	time  uint64
	seq   uint64
	moff  int64 // offset in queue.mapped, when chunk is -1
	chunk int32 // arena chunk, or -1: the record is in the mapped file
	off   int32
	n     int32
	attr  int32 // index in Reader.attrs, -1 for none
}

func (k *qitem) less(o *qitem) bool {
	return k.time < o.time || k.time == o.time && k.seq < o.seq
}

// run is a stretch of queued records in (time, file order) order. perf
// writes each round as one dump per CPU buffer, and a CPU's buffer is in
// time order, so the records arrive as a few long sorted runs: appending to
// the open run is all a push costs, and a delivery picks the least head of
// a handful of runs instead of sifting a heap of every queued record.
//
// A run is a queue of fixed-size blocks taken from a shared pool, so it
// grows and drains without ever copying its items, whatever its length.
type run struct {
	blocks []*qblock
	pos    int // next to deliver, in blocks[0]
	end    int // items in the last block
}

const qblockItems = 1024

type qblock [qblockItems]qitem

func (r *run) head() *qitem { return &r.blocks[0][r.pos] }

func (r *run) empty() bool { return len(r.blocks) == 0 }

func (r *run) last() *qitem { return &r.blocks[len(r.blocks)-1][r.end-1] }

// queue merges the sorted runs of queued records, plus the flush limit:
// records at or below limit may be delivered.
type queue struct {
	heads  []*run // min-heap by head record: runs with records left
	tail   *run   // the run pushes append to
	free   []*run
	blocks []*qblock // unused blocks
	n      int       // records queued
	arena  arena
	seq    uint64

	limit     uint64 // deliver records with time <= limit
	roundMark uint64 // newest time queued when the previous round ended
	maxTime   uint64 // newest time queued so far
	lastOut   uint64 // time of the last delivered record
	maxBytes  int64

	overflows  int64
	outOfOrder int64

	relChunk int32 // 1 + chunk of the record delivered last, 0 for none
	relN     int

	// mapped is the mapped input file, if any. A record that lies in it is
	// queued by its offset rather than copied: the mapping outlives the
	// queue (a page the reader released is read back from the file).
	mapped []byte
	bytes  int64 // record bytes queued, however stored (the bound's measure)
}

// inMapped returns rec's offset in the mapped file, or -1.
func (q *queue) inMapped(rec []byte) int64 {
	if len(q.mapped) == 0 || len(rec) == 0 {
		return -1
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(q.mapped)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(rec)))
	if p < base || p+uintptr(len(rec)) > base+uintptr(len(q.mapped)) {
		return -1
	}
	return int64(p - base)
}

func (q *queue) push(time uint64, attr int32, rec []byte) {
	if q.lastOut > time {
		q.outOfOrder++
	}
	if q.maxBytes > 0 && q.bytes+int64(len(rec)) > q.maxBytes && q.n > 0 {
		q.overflows++
		// Deliver the older half (perf's OE_FLUSH__HALF).
		first := q.heads[0].head().time
		q.limit = max(q.limit, first+(q.maxTime-first)/2)
		q.roundMark = q.limit
	}
	it := qitem{time: time, seq: q.seq, chunk: -1, n: int32(len(rec)), attr: attr}
	if it.moff = q.inMapped(rec); it.moff < 0 {
		c, off := q.arena.alloc(rec)
		it.chunk, it.off = c, int32(off)
	}
	q.bytes += int64(len(rec))
	q.seq++
	q.n++
	if time > q.maxTime {
		q.maxTime = time
	}
	t := q.tail
	if t != nil && !t.empty() && time >= t.last().time {
		// seq grows with every push, so the run stays in (time, seq) order.
		q.append(t, it)
		return
	}
	if t == nil || !t.empty() {
		var r *run
		if k := len(q.free); k > 0 {
			r, q.free = q.free[k-1], q.free[:k-1]
		} else {
			r = &run{}
		}
		q.tail = r
		t = r
	}
	// A drained tail (out of the heap) simply starts over.
	q.append(t, it)
	q.addHead(t)
}

// append adds it at the end of r.
func (q *queue) append(r *run, it qitem) {
	if len(r.blocks) == 0 || r.end == qblockItems {
		var b *qblock
		if k := len(q.blocks); k > 0 {
			b, q.blocks = q.blocks[k-1], q.blocks[:k-1]
		} else {
			b = new(qblock)
		}
		r.blocks = append(r.blocks, b)
		r.end = 0
	}
	r.blocks[len(r.blocks)-1][r.end] = it
	r.end++
}

// finishedRound applies a FINISHED_ROUND: deliver up to the newest time seen
// at the previous round.
func (q *queue) finishedRound() {
	q.limit = max(q.limit, q.roundMark)
	q.roundMark = q.maxTime
}

// flushAll makes everything deliverable (end of input).
func (q *queue) flushAll() { q.limit = math.MaxUint64 }

// next removes the next deliverable record and returns it and its attr
// index; ok is false when none may be delivered yet. The bytes stay valid
// until the following call.
func (q *queue) next() (rec []byte, attr int32, ok bool) {
	if q.relChunk > 0 {
		q.arena.release(q.relChunk-1, q.relN)
		q.relChunk = 0
	}
	if len(q.heads) == 0 {
		return nil, 0, false
	}
	r := q.heads[0]
	it := *r.head()
	if it.time > q.limit {
		return nil, 0, false
	}
	r.pos++
	q.n--
	if r.pos == qblockItems || len(r.blocks) == 1 && r.pos == r.end {
		// The head block is used up: back to the pool.
		q.blocks = append(q.blocks, r.blocks[0])
		r.blocks[0] = nil
		r.blocks = r.blocks[1:]
		r.pos = 0
		if len(r.blocks) == 0 {
			r.blocks = r.blocks[:0]
			r.end = 0
		}
	}
	if r.empty() {
		q.popHead()
		if r != q.tail {
			q.free = append(q.free, r)
		}
	} else {
		q.downHead(0)
	}
	q.lastOut = it.time
	q.bytes -= int64(it.n)
	if it.chunk < 0 {
		return q.mapped[it.moff : it.moff+int64(it.n) : it.moff+int64(it.n)], it.attr, true
	}
	q.relChunk, q.relN = it.chunk+1, int(it.n)
	buf := q.arena.chunks[it.chunk].buf
	return buf[it.off : it.off+it.n : it.off+it.n], it.attr, true
}

func (q *queue) addHead(r *run) {
	h := append(q.heads, r)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !r.head().less(h[p].head()) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = r
	q.heads = h
}

func (q *queue) popHead() {
	n := len(q.heads) - 1
	q.heads[0] = q.heads[n]
	q.heads[n] = nil
	q.heads = q.heads[:n]
	if n > 0 {
		q.downHead(0)
	}
}

// downHead restores the heap below i after heads[i]'s head grew.
func (q *queue) downHead(i int) {
	h := q.heads
	n := len(h)
	r := h[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if x := l + 1; x < n && h[x].head().less(h[l].head()) {
			c = x
		}
		if !h[c].head().less(r.head()) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = r
}
