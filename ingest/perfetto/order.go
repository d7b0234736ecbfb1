package perfetto

import (
	"container/heap"
	"sort"

	"github.com/schedreplay/replay/timeline"
)

// row is a decoded event waiting to be emitted in time order. It is a
// compact form of timeline.Event (a few hundred bytes instead of about a
// kilobyte), since the reorder buffer may hold many of them.
type row struct {
	ts   int64
	seq  uint64
	name string
	kind timeline.Kind
	ni   uint8
	ns   uint8
	ic   [10]timeline.Col
	iv   [10]int64
	sc   [3]timeline.Col
	sv   [3]string
	// stateRaw is set for sched_switch: letters are rendered at emission,
	// when SystemInfo (kernel release) has most likely been seen.
	hasState bool
	stateRaw int64
	fields   []timeline.Field
}

func (r *row) setInt(c timeline.Col, v int64) {
	if int(r.ni) < len(r.ic) {
		r.ic[r.ni], r.iv[r.ni] = c, v
		r.ni++
	}
}

func (r *row) setStr(c timeline.Col, s string) {
	if int(r.ns) < len(r.sc) {
		r.sc[r.ns], r.sv[r.ns] = c, s
		r.ns++
	}
}

// putInt sets c, replacing an earlier value.
func (r *row) putInt(c timeline.Col, v int64) {
	for i := 0; i < int(r.ni); i++ {
		if r.ic[i] == c {
			r.iv[i] = v
			return
		}
	}
	r.setInt(c, v)
}

func (r *row) getInt(c timeline.Col) (int64, bool) {
	for i := 0; i < int(r.ni); i++ {
		if r.ic[i] == c {
			return r.iv[i], true
		}
	}
	return 0, false
}

func (r *row) getStr(c timeline.Col) (string, bool) {
	for i := 0; i < int(r.ns); i++ {
		if r.sc[i] == c {
			return r.sv[i], true
		}
	}
	return "", false
}

// queue is one CPU's rows (of one sequence), in time order: bundles of
// a CPU arrive in order; a rare late row is inserted in place when it is
// near the end, else appended (and then counted as out of order).
type queue struct {
	id    int // stream number
	cpu   int
	rows  []row
	head  int
	heapi int // index in the heap, -1 when not in it
}

func (q *queue) front() *row { return &q.rows[q.head] }
func (q *queue) last() *row  { return &q.rows[len(q.rows)-1] }
func (q *queue) empty() bool { return q.head >= len(q.rows) }
func (q *queue) popFront() row {
	r := q.rows[q.head]
	q.rows[q.head] = row{}
	q.head++
	if q.head == len(q.rows) {
		q.rows, q.head = q.rows[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.rows) {
		n := copy(q.rows, q.rows[q.head:])
		clear(q.rows[n:])
		q.rows, q.head = q.rows[:n], 0
	}
	return r
}

// push appends r, keeping the queue sorted by (ts, seq).
func (q *queue) push(r row) {
	if q.empty() || q.last().ts <= r.ts {
		q.rows = append(q.rows, r)
		return
	}
	live := q.rows[q.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].ts > r.ts })
	if len(live)-i > maxInsert {
		q.rows = append(q.rows, r)
		return
	}
	q.rows = append(q.rows, row{})
	live = q.rows[q.head:]
	copy(live[i+1:], live[i:])
	live[i] = r
}

// maxInsert bounds the rows moved to insert a late row, so that a hostile
// trace cannot make the merge quadratic.
const maxInsert = 4096

// qheap orders the non-empty queues by their first row: time, then CPU
// (what trace-cmd and the kernel's merge do on ties), then input order.
type qheap []*queue

func (h qheap) Len() int { return len(h) }
func (h qheap) Less(i, j int) bool {
	a, b := h[i].front(), h[j].front()
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if h[i].cpu != h[j].cpu {
		return h[i].cpu < h[j].cpu
	}
	return a.seq < b.seq
}
func (h qheap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapi, h[j].heapi = i, j
}
func (h *qheap) Push(x any) {
	q := x.(*queue)
	q.heapi = len(*h)
	*h = append(*h, q)
}
func (h *qheap) Pop() any {
	old := *h
	q := old[len(old)-1]
	*h = old[:len(old)-1]
	q.heapi = -1
	return q
}

// merger holds the per-CPU queues and emits rows in global time order.
// Perfetto writes each CPU's ftrace data in order but interleaves CPUs in
// read batches, so a row is emitted once every CPU that has produced rows
// has one queued (nothing earlier can still come for it), or when the
// buffer holds MaxBufferedRows (a CPU that went quiet), or at the end.
type merger struct {
	queues   map[int]*queue // by stream
	h        qheap
	buffered int
	seq      uint64
	waiting  int // CPUs with an empty queue
}

func newMerger() *merger { return &merger{queues: map[int]*queue{}} }

func (m *merger) push(stream, cpu int, r row) {
	q := m.queues[stream]
	if q == nil {
		q = &queue{id: stream, cpu: cpu, heapi: -1}
		m.queues[stream] = q
		m.waiting++
	}
	r.seq = m.seq
	m.seq++
	wasEmpty := q.empty()
	q.push(r)
	m.buffered++
	if wasEmpty {
		m.waiting--
		heap.Push(&m.h, q)
	} else if q.heapi >= 0 {
		heap.Fix(&m.h, q.heapi)
	}
}

// ready reports whether the earliest row can be emitted. Besides the
// rule above, warm rows stay buffered so that a CPU seen for the first
// time (its first bundle written after other CPUs' bundles) can still
// place its earlier rows.
func (m *merger) ready(eof bool, limit, warm int) bool {
	if len(m.h) == 0 {
		return false
	}
	return eof || m.buffered > limit || m.waiting == 0 && m.buffered > warm
}

func (m *merger) pop() row {
	q := m.h[0]
	r := q.popFront()
	m.buffered--
	if q.empty() {
		heap.Pop(&m.h)
		m.waiting++
	} else {
		heap.Fix(&m.h, 0)
	}
	return r
}
