// Package tracedat reads trace-cmd trace.dat files (versions 6 and 7, the
// latter with zstd or zlib compressed sections) as a stream of timeline
// events.
//
// The per-CPU ring-buffer pages are decoded one page (or one compressed
// chunk) at a time and merged across CPUs by timestamp with a heap, so
// memory grows with the number of CPUs, not with the trace. Records are
// decoded by field name with the format descriptions stored in the file
// (see RecordDecoder), the same way as tracepoint samples in perf.data.
package tracedat

import (
	"container/heap"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

// Reader streams the events of a trace.dat file in time order.
type Reader struct {
	f       *file
	closer  io.Closer
	dec     *RecordDecoder
	byID    []*tracefmt.Format // event id -> format (ids are small)
	comms   *CommTable
	meta    timeline.Meta
	streams []*stream
	h       streamHeap
	last    *stream // popped by the previous Next, advanced lazily
	ev      timeline.Event
	err     error
	done    bool

	buffered int64 // bytes of page and chunk buffers held by the streams
}

// reserve refuses a buffer that would take the streams past maxBuffered.
func (r *Reader) reserve(n int64) error {
	if r.buffered+n > maxBuffered {
		return &FormatError{Path: r.f.path, What: "cpu data", Msg: fmt.Sprintf("%d CPUs with %d-byte buffers need more than %d bytes at once; the header is probably corrupt", len(r.f.cpus), n, maxBuffered)}
	}
	return nil
}

// Open opens a trace.dat file.
func Open(path string) (*Reader, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	r, err := NewReader(fh, st.Size(), path)
	if err != nil {
		fh.Close()
		return nil, err
	}
	r.closer = fh
	return r, nil
}

// NewReader reads a trace.dat held by ra (size bytes); name is used in
// errors and the metadata. Version 7 needs random access to its sections,
// hence io.ReaderAt.
func NewReader(ra io.ReaderAt, size int64, name string) (*Reader, error) {
	f, err := parseFile(ra, size, name)
	if err != nil {
		return nil, err
	}
	lay, err := newPageLayout(f)
	if err != nil {
		return nil, err
	}
	r := &Reader{f: f}
	release := ""
	if parts := strings.Fields(f.uname); len(parts) >= 3 {
		release = parts[2]
	}
	r.dec = NewRecordDecoder(f.order, release)
	r.comms = NewCommTable(f.cmdlines)
	for id, fm := range f.byID {
		if id >= 0 && id <= 0xffff {
			if id >= len(r.byID) {
				r.byID = append(r.byID, make([]*tracefmt.Format, id+1-len(r.byID))...)
			}
			r.byID[id] = fm
		}
	}
	r.initMeta(release)
	for _, cd := range f.cpus {
		s, err := newStream(r, cd, lay)
		if err != nil {
			return nil, err
		}
		s.idx = len(r.streams)
		r.streams = append(r.streams, s)
	}
	for i, s := range r.streams {
		ok, err := s.next()
		if err != nil {
			return nil, err
		}
		if ok {
			r.h = append(r.h, heapItem{s: s, order: i})
		}
	}
	heap.Init(&r.h)
	return r, nil
}

func (r *Reader) initMeta(release string) {
	f := r.f
	src := &r.meta.Source
	src.Format = "trace.dat v" + strconv.Itoa(f.version)
	src.Path = f.path
	src.ClockID = -1
	if parts := strings.Fields(f.uname); len(parts) >= 4 {
		src.Hostname, src.OSRelease, src.Arch = parts[1], release, parts[3]
	}
	src.NrCPUs = f.cpuCount
	if src.NrCPUs == 0 {
		src.NrCPUs = len(f.cpus)
	}
	if f.compression != "" && f.compression != "none" {
		src.Compressed = strings.TrimSpace(f.compression + " " + f.compVersion)
	}
	src.Extra = map[string]string{}
	if f.clock != "" {
		src.Extra["trace_clock"] = f.clock
		// The ftrace clocks that are POSIX clocks get their clockid, so
		// they compare with perf -k; local/global (sched_clock, like
		// perf's default) stay -1, counters too (Extra says which).
		switch f.clock {
		case "mono":
			src.ClockID = 1
		case "mono_raw":
			src.ClockID = 4
		case "boot":
			src.ClockID = 7
		case "tai":
			src.ClockID = 11
		}
	}
	if f.tcVersion != "" {
		src.Extra["trace_cmd_version"] = f.tcVersion
	}
	if f.uname != "" {
		src.Extra["uname"] = f.uname
	}
	if len(f.instances) > 0 {
		src.Extra["instances_not_read"] = strings.Join(f.instances, ",")
	}
	if f.tsOffset != 0 {
		src.Extra["ts_offset_ns"] = strconv.FormatInt(f.tsOffset, 10)
	}
	for i, s := range f.cpuStats {
		src.Extra["cpustat"+strconv.Itoa(i)] = s
	}
	if len(f.formatErrs) > 0 {
		r.drop("event format that does not parse", int64(len(f.formatErrs)))
	}
}

// drop counts records or structures the reader had to skip.
func (r *Reader) drop(reason string, n int64) {
	if r.meta.Summary.Dropped == nil {
		r.meta.Summary.Dropped = map[string]int64{}
	}
	r.meta.Summary.Dropped[reason] += n
}

// Next advances to the next event.
func (r *Reader) Next() bool {
	if r.done {
		return false
	}
	for {
		if r.last != nil {
			s := r.last
			r.last = nil
			ok, err := s.next()
			if err != nil {
				r.err, r.done = err, true
				return false
			}
			// s is still at the top of the heap: sift it down in place
			// (no Pop/Push, which box an item per event).
			if ok {
				heap.Fix(&r.h, 0)
			} else {
				heap.Pop(&r.h)
			}
		}
		if len(r.h) == 0 {
			r.done = true
			return false
		}
		s := r.h[0].s
		r.last = s
		if r.emit(s) {
			return true
		}
	}
}

// emit turns the stream's current item into r.ev; false if it was skipped.
func (r *Reader) emit(s *stream) bool {
	e := &r.ev
	e.Reset()
	e.Time = r.time(s.recTS)
	e.SetInt(timeline.CPU, int64(s.cpu))
	if s.lost {
		reason := "trace.dat ring-buffer page: missed events"
		if !s.lostKnw {
			reason = "trace.dat ring-buffer page: missed events (count not stored)"
		}
		r.meta.Summary.Lost.Add(s.cpu, reason, s.lostN)
		e.Name, e.Kind = "lost", timeline.Lost
		e.SetInt(timeline.LostCount, int64(s.lostN))
		if !s.lostKnw {
			e.Fields = append(e.Fields, timeline.Field{Name: "reason", Kind: timeline.FieldString, Str: "count not stored"})
		}
		return true
	}
	rec := s.rec
	if len(rec) < 2 {
		r.drop("record shorter than its event id", 1)
		return false
	}
	id := int(r.f.order.Uint16(rec))
	var fm *tracefmt.Format
	if id < len(r.byID) {
		fm = r.byID[id]
	}
	if fm == nil {
		r.drop("event id without a format description", 1)
		return false
	}
	if !r.dec.Decode(fm, rec, e) {
		r.drop("record shorter than its format", 1)
		return false
	}
	r.comms.Fill(e)
	return true
}

// time converts a ring-buffer timestamp as trace-cmd does: TSC2NSEC when
// the file has it, then the --ts-offset/--date offsets.
func (r *Reader) time(ts uint64) int64 {
	f := r.f
	if f.tscMult != 0 && f.tscShift < 64 {
		hi, lo := bits.Mul64(ts, uint64(f.tscMult))
		ts = lo>>f.tscShift | hi<<(64-f.tscShift)
	}
	return int64(ts) + f.tsOffset
}

// Event returns the current event (reused by the next call to Next).
func (r *Reader) Event() *timeline.Event { return &r.ev }

// Err returns the error that stopped the stream, if any.
func (r *Reader) Err() error { return r.err }

// Meta describes the trace; lost and dropped counts are complete once
// Next has returned false.
func (r *Reader) Meta() *timeline.Meta { return &r.meta }

// Close releases the file.
func (r *Reader) Close() error {
	if r.f != nil && r.f.zdec != nil {
		r.f.zdec.Close()
	}
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

// EventNames lists the events the file has format descriptions for, as
// timeline names, sorted.
func (r *Reader) EventNames() []string {
	var out []string
	for _, fm := range r.f.formats {
		out = append(out, timeline.EventName(fm.System, fm.Name))
	}
	sort.Strings(out)
	return out
}

// heapItem orders streams by their current item's time; ties go to the
// lower CPU index (what trace-cmd report and the kernel's own merge do),
// and a stream's lost marker comes before its record of the same time.
type heapItem struct {
	s     *stream
	order int
}

type streamHeap []heapItem

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.s.recTS != b.s.recTS {
		return a.s.recTS < b.s.recTS
	}
	return a.order < b.order
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)   { *h = append(*h, x.(heapItem)) }
func (h *streamHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

var _ timeline.EventReader = (*Reader)(nil)

// String describes the reader for debugging.
func (r *Reader) String() string {
	return fmt.Sprintf("trace.dat v%d %s (%d cpus)", r.f.version, r.f.path, len(r.f.cpus))
}
