package whatif

import (
	"bufio"
	"container/heap"
	"fmt"
	"io"
	"os"
	"sort"
)

// extSorter sorts more records than it keeps in memory: it holds up to
// limit of them, and when that fills, sorts them and appends them to its
// spill file as a run. iter merges the runs (and what is still in memory)
// in order, reading each run through a small buffer; more than
// extFanIn runs are first merged into longer runs. Memory is the batch
// plus a buffer per merged run, whatever the number of records.
type extSorter[T any] struct {
	cmp   func(a, b *T) int
	enc   func(dst []byte, v *T) []byte
	dec   func(r *bufio.Reader, v *T) error
	limit int
	dir   string

	mem  []T
	f    *os.File
	end  int64 // bytes written to f
	runs []extRun
	buf  []byte
}

type extRun struct{ off, size, n int64 }

// extFanIn bounds the runs merged at once (each needs a read buffer).
const extFanIn = 32

const extReadBuf = 16 << 10

func newExtSorter[T any](dir string, limit int, cmp func(a, b *T) int, enc func([]byte, *T) []byte, dec func(*bufio.Reader, *T) error) *extSorter[T] {
	if limit < 1 {
		limit = 1
	}
	return &extSorter[T]{cmp: cmp, enc: enc, dec: dec, limit: limit, dir: dir}
}

func (s *extSorter[T]) add(v T) error {
	s.mem = append(s.mem, v)
	if len(s.mem) >= s.limit {
		return s.spill()
	}
	return nil
}

func (s *extSorter[T]) sortMem() {
	// The orders are total (ties broken by a sequence number), so an
	// unstable sort is deterministic.
	sort.Slice(s.mem, func(i, j int) bool { return s.cmp(&s.mem[i], &s.mem[j]) < 0 })
}

// spill writes the in-memory records as one sorted run.
func (s *extSorter[T]) spill() error {
	if len(s.mem) == 0 {
		return nil
	}
	s.sortMem()
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, ".replay-spill-*")
		if err != nil {
			return err
		}
		// Unlinked at once: the data lives as long as the descriptor.
		os.Remove(f.Name())
		s.f = f
	}
	w := bufio.NewWriterSize(io.NewOffsetWriter(s.f, s.end), extReadBuf)
	var size int64
	for i := range s.mem {
		s.buf = s.enc(s.buf[:0], &s.mem[i])
		n, err := w.Write(s.buf)
		if err != nil {
			return err
		}
		size += int64(n)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	s.runs = append(s.runs, extRun{off: s.end, size: size, n: int64(len(s.mem))})
	s.end += size
	clear(s.mem)
	s.mem = s.mem[:0]
	return nil
}

// close releases the spill file.
func (s *extSorter[T]) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.mem = nil
}

// iter returns the records in order. It may be called more than once
// (the runs stay on disk); add must not be called after it.
func (s *extSorter[T]) iter() (*extIter[T], error) {
	s.sortMem()
	for len(s.runs) > extFanIn {
		// Merge the first extFanIn runs into one longer run.
		it := s.merge(s.runs[:extFanIn], nil)
		w := bufio.NewWriterSize(io.NewOffsetWriter(s.f, s.end), extReadBuf)
		var size, n int64
		for {
			v, ok, err := it.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			s.buf = s.enc(s.buf[:0], &v)
			k, err := w.Write(s.buf)
			if err != nil {
				return nil, err
			}
			size += int64(k)
			n++
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		s.runs = append(s.runs[extFanIn:], extRun{off: s.end, size: size, n: n})
		s.end += size
	}
	return s.merge(s.runs, s.mem), nil
}

func (s *extSorter[T]) merge(runs []extRun, mem []T) *extIter[T] {
	it := &extIter[T]{cmp: s.cmp, dec: s.dec}
	for _, r := range runs {
		it.srcs = append(it.srcs, &extSrc[T]{r: bufio.NewReaderSize(io.NewSectionReader(s.f, r.off, r.size), extReadBuf), left: r.n})
	}
	if len(mem) > 0 {
		it.srcs = append(it.srcs, &extSrc[T]{mem: mem, left: int64(len(mem))})
	}
	return it
}

type extSrc[T any] struct {
	r    *bufio.Reader
	mem  []T
	left int64
	head T
}

func (src *extSrc[T]) advance(dec func(*bufio.Reader, *T) error) (bool, error) {
	if src.left == 0 {
		return false, nil
	}
	src.left--
	if src.r == nil {
		src.head, src.mem = src.mem[0], src.mem[1:]
		return true, nil
	}
	if err := dec(src.r, &src.head); err != nil {
		return false, fmt.Errorf("whatif: reading a spill file: %w", err)
	}
	return true, nil
}

// extIter is a k-way merge of sorted sources.
type extIter[T any] struct {
	cmp     func(a, b *T) int
	dec     func(*bufio.Reader, *T) error
	srcs    []*extSrc[T]
	h       []*extSrc[T]
	started bool
}

func (it *extIter[T]) Len() int           { return len(it.h) }
func (it *extIter[T]) Less(i, j int) bool { return it.cmp(&it.h[i].head, &it.h[j].head) < 0 }
func (it *extIter[T]) Swap(i, j int)      { it.h[i], it.h[j] = it.h[j], it.h[i] }
func (it *extIter[T]) Push(x any)         { it.h = append(it.h, x.(*extSrc[T])) }
func (it *extIter[T]) Pop() any {
	x := it.h[len(it.h)-1]
	it.h = it.h[:len(it.h)-1]
	return x
}

// next returns the next record in order (false at the end).
func (it *extIter[T]) next() (T, bool, error) {
	var zero T
	if !it.started {
		it.started = true
		for _, src := range it.srcs {
			ok, err := src.advance(it.dec)
			if err != nil {
				return zero, false, err
			}
			if ok {
				it.h = append(it.h, src)
			}
		}
		heap.Init(it)
	}
	if len(it.h) == 0 {
		return zero, false, nil
	}
	src := it.h[0]
	v := src.head
	ok, err := src.advance(it.dec)
	if err != nil {
		return zero, false, err
	}
	if ok {
		heap.Fix(it, 0)
	} else {
		heap.Pop(it)
	}
	return v, true, nil
}
