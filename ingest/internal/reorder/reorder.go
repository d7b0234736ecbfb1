// Package reorder restores time order within a bounded window, for text
// readers whose input is mostly ordered (per-CPU buffers interleaved by the
// tool that printed them) but not strictly.
package reorder

import (
	"container/heap"
	"strconv"
)

// Window holds up to Limit items and gives them back by time, ties in the
// order they were pushed. Memory is bounded by Limit, not by the input: an
// item older than one already popped comes out late, and Pop says so, so
// the reader can count it.
type Window[T any] struct {
	Limit   int
	h       items[T]
	seq     uint64
	emitted int64
	started bool
	late    int
}

type item[T any] struct {
	time int64
	seq  uint64
	v    T
}

type items[T any] []item[T]

func (h items[T]) Len() int { return len(h) }
func (h items[T]) Less(i, j int) bool {
	if h[i].time != h[j].time {
		return h[i].time < h[j].time
	}
	return h[i].seq < h[j].seq
}
func (h items[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *items[T]) Push(x any)   { *h = append(*h, x.(item[T])) }
func (h *items[T]) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// Push adds v at time t.
func (w *Window[T]) Push(t int64, v T) {
	heap.Push(&w.h, item[T]{time: t, seq: w.seq, v: v})
	w.seq++
}

// Len is the number of items held.
func (w *Window[T]) Len() int { return len(w.h) }

// Full reports whether the window holds more than Limit items, so the
// oldest must go out before more are read.
func (w *Window[T]) Full() bool { return len(w.h) > w.Limit }

// Pop removes the oldest item. late is true when an item with a later time
// was already popped (the disorder was wider than the window).
func (w *Window[T]) Pop() (v T, late bool) {
	it := heap.Pop(&w.h).(item[T])
	late = w.started && it.time < w.emitted
	if late {
		w.late++
	}
	if !w.started || it.time > w.emitted {
		w.emitted = it.time
	}
	w.started = true
	return it.v, late
}

// Late is how many items have come out late so far.
func (w *Window[T]) Late() int { return w.late }

// NoteLate records n rows that came out of time order in a trace's
// Source.Extra (as "rows_out_of_time_order"), the key every reader uses.
func NoteLate(extra *map[string]string, n int) {
	if *extra == nil {
		*extra = map[string]string{}
	}
	(*extra)["rows_out_of_time_order"] = strconv.Itoa(n)
}
