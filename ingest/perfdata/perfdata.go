// Package perfdata reads perf.data files written by perf record and perf
// sched record, natively (no perf binary needed), and emits them as timeline
// events in time order.
//
// Supported: file mode and pipe mode (perf record -o -), both byte orders,
// perf_event_attr of any size, the header features that describe the
// machine (kept in Meta), zstd-compressed records (perf record -z), and
// tracepoint samples decoded by field name with the format descriptions
// stored in the file, so any kernel's layout works. Legacy version-1 files
// ("PERFFILE", perf of 2010) are refused with a clear error.
//
// What becomes a row (see Reader for the details):
//   - every tracepoint sample: a row named timeline.EventName(system, name),
//     with the fields in the typed columns of the same name, others in Fields;
//   - every other sample (cycles, cpu-clock...): a row named after the event;
//   - COMM, FORK, EXIT, LOST, LOST_SAMPLES and SWITCH records: rows
//     "perf:comm", "perf:fork", "perf:exit", "lost", "perf:switch".
//
// Rows come out in the order perf script prints them: by time, ties in
// file order, using perf's FINISHED_ROUND protocol (see order.go).
package perfdata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

var (
	magicLE     = []byte("PERFILE2")
	magicBE     = []byte("2ELIFREP")
	magicLegacy = []byte("PERFFILE")
)

// IsPerfData reports whether head (the first bytes of a file) looks like a
// perf.data file or stream, including the legacy version 1 that Open
// refuses with an explanation.
func IsPerfData(head []byte) bool {
	return bytes.HasPrefix(head, magicLE) || bytes.HasPrefix(head, magicBE) || bytes.HasPrefix(head, magicLegacy)
}

// Reader reads one perf.data file or stream. It implements
// timeline.EventReader.
//
// Mapping decisions:
//   - Tracepoint samples: Time, cpu, common_pid = sample tid, common_tgid =
//     sample pid, common_comm = the thread's name as perf script prints it
//     (perf's thread table replayed from COMM/FORK records: a fork inherits
//     the parent's name, COMM renames, an unknown thread is ":<tid>", tid 0 is
//     "swapper"), common_flags and common_preempt_count from the raw record.
//     Each other field goes by name into the typed column when one exists
//     and the kinds agree (text to string columns, integers to integer
//     columns), else into Fields (text FieldString, integers FieldInt or
//     FieldUint by signedness, integer arrays FieldInts, anything else
//     FieldBytes). sched_switch prev_state is rendered to the kernel's
//     letters (prev_state) from the event's own print fmt, or by kernel
//     release when that fails, and kept raw in prev_state_raw. Fields named
//     like a framing column (cpu, common_*, lost, prev_state_raw) always go
//     to Fields; common fields other than common_flags and
//     common_preempt_count (common_type, common_pid, PREEMPT_RT extras) are
//     framing and dropped.
//   - Other samples: a row named after the event (EVENT_DESC/EVENT_UPDATE,
//     else perf's generic name), with cpu, common_pid/tgid/comm, Fields "ip"
//     and "period" when sampled, and the callchain.
//   - Side-band records take their time and cpu from the sample_id trailer
//     (time 0 for perf's synthesized start-of-session records):
//     COMM -> "perf:comm" (common_pid = tid, common_tgid = pid, comm, Fields
//     {"exec":1} for an exec rename); FORK -> "perf:fork" (parent_pid = ptid,
//     child_pid = tid, Fields {"pid": child tgid, "ppid"}); EXIT ->
//     "perf:exit" (pid = tid, Fields {"tgid", "ppid", "ptid"}); LOST and
//     LOST_SAMPLES -> "lost" (lost = count, Fields {"record":
//     "PERF_RECORD_LOST" or "PERF_RECORD_LOST_SAMPLES", "event": the event
//     that lost them}) and Meta().Summary.Lost by cpu and record type;
//     SWITCH/SWITCH_CPU_WIDE -> "perf:switch" (common_pid/tgid of the
//     trailer, Fields {"out", "preempt"} and for the CPU-wide form
//     {"next_prev_pid", "next_prev_tid"}).
//   - MMAP, MMAP2, KSYMBOL and the other records carry no scheduling
//     information and make no row; they are counted by type in
//     Meta().Source.Extra["skipped_records"].
//   - Damage (truncation, trailing junk, unknown sample ids, formats that do
//     not parse) is counted in Meta().Summary.Dropped by reason.
type Reader struct {
	name   string
	closer io.Closer
	mapped []byte // the file, when mapped (see openFile); unmapped by Close
	rec    rawRec // the record being handled
	ord    byteOrder

	dataOff       int64
	dataSize      int64
	dataTruncated bool
	trailingAt    int64

	attrs        []*attr
	byID         map[uint64]*attr
	idCache      [idCacheSlots]idSlot // in front of byID: a lookup per record
	pmus         map[uint32]string
	pendingNames []string
	tracing      *tracefmt.TracingData
	topo         topoFacts
	topoDone     bool

	src *recSource
	q   queue
	thr threads
	str interner

	ev      timeline.Event
	meta    timeline.Meta
	skipped map[uint32]int64
	err     error
	eof     bool
	done    bool
}

// Open opens a perf.data file; "-" reads a pipe-mode stream from stdin.
func Open(path string) (*Reader, error) {
	if path == "-" {
		return NewReader(os.Stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads perf.data from r. A pipe-mode stream is read sequentially;
// a file-mode perf.data needs random access (r must be an io.ReaderAt and
// io.Seeker, e.g. an *os.File on a regular file), since its header points
// to sections anywhere in the file. name is used in messages.
func NewReader(rd io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name, byID: map[uint64]*attr{}, skipped: map[uint32]int64{}}
	r.meta.Source.ClockID = -1
	r.meta.Source.Path = name
	r.q.maxBytes = defaultMaxQueueBytes
	r.thr.init()

	head := make([]byte, 16)
	n, err := io.ReadFull(rd, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, r.wrap(0, "reading the header", err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, magicLegacy):
		return nil, r.errf(0, "legacy perf.data version 1 (magic \"PERFFILE\", perf before 2010) is not supported; re-record with a current perf")
	case bytes.HasPrefix(head, magicLE):
	case bytes.HasPrefix(head, magicBE):
		r.ord.big = true
	default:
		return nil, r.errf(0, "not a perf.data file: expected magic \"PERFILE2\", got %q", head[:min(n, 8)])
	}
	if n < 16 {
		return nil, r.errf(8, "file ends after %d bytes, inside the header size field", n)
	}
	size := r.ord.u64(head[8:])
	switch size {
	case pipeHeaderSize:
		r.meta.Source.Format = "perf.data (pipe)"
		r.src = &recSource{r: r, br: bufio.NewReaderSize(rd, bufSize), off: 16, left: -1, toEOF: true}
		if r.primePipe(); r.err != nil {
			// Damage among the header records is the stream's header's,
			// reported at open as a file's is.
			return nil, r.err
		}
		return r, nil
	case fileHeaderSize, oldHeaderSize:
	default:
		return nil, r.errf(8, "header size %d, expected 16 (pipe mode) or 104 (file mode)", size)
	}
	r.meta.Source.Format = "perf.data"
	ra, ok := rd.(io.ReaderAt)
	sk, ok2 := rd.(io.Seeker)
	if !ok || !ok2 {
		return nil, r.errf(0, "file-mode perf.data needs a seekable file (its header points to sections anywhere in it); to stream, record in pipe mode (perf record -o -)")
	}
	fileSize, err := sk.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, r.errf(0, "file-mode perf.data needs a seekable file (its header points to sections anywhere in it): %v; to stream, record in pipe mode (perf record -o -)", err)
	}
	if err := r.openFile(ra, fileSize, size); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reader) errf(off int64, format string, args ...any) error {
	return &FormatError{File: r.name, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (r *Reader) wrap(off int64, msg string, err error) error {
	return &FormatError{File: r.name, Offset: off, Msg: msg, Err: err}
}

// drop counts damage by reason in Meta().Summary.Dropped.
func (r *Reader) drop(reason string, n int64) {
	if r.meta.Summary.Dropped == nil {
		r.meta.Summary.Dropped = map[string]int64{}
	}
	r.meta.Summary.Dropped[reason] += n
}

func (r *Reader) extra(k, v string) {
	if r.meta.Source.Extra == nil {
		r.meta.Source.Extra = map[string]string{}
	}
	r.meta.Source.Extra[k] = v
}

// addAttr registers an attr and its sample ids. perf requires every attr of
// a session to put the sample id at the same place, which attrFor relies on.
func (r *Reader) addAttr(a *attr, at int64) error {
	if bad := a.sampleType &^ sampleKnown; bad != 0 {
		return r.errf(at+24, "attr %d: sample_type %#x has bits this reader does not know (%#x); their fields cannot be skipped safely", len(r.attrs), a.sampleType, bad)
	}
	a.idx = len(r.attrs)
	if a.idx < len(r.pendingNames) {
		a.name = r.pendingNames[a.idx]
	}
	r.attrs = append(r.attrs, a)
	for _, id := range a.ids {
		r.byID[id] = a
	}
	r.idCache = [idCacheSlots]idSlot{} // an id may have been reassigned
	if a.flag(flagUseClockID) && r.meta.Source.ClockID == -1 {
		r.meta.Source.ClockID = int(a.clockID)
	}
	return nil
}

// primePipe reads a pipe stream's leading header records (attrs, tracing
// data, features, event updates), so that Meta describes the stream from
// the start as it does a file: perf writes them before any event, and the
// topology, kernel release and command line that a replay needs before
// it reads an event are among them. It stops at the first other record,
// which Next reads; damage met here is the reader's error (NewReader
// returns it).
func (r *Reader) primePipe() {
	for {
		h, err := r.src.peek(8)
		if err != nil || len(h) < 8 {
			return
		}
		switch r.ord.u32(h) {
		case recHeaderAttr, recHeaderEventType, recTracingData, recHeaderBuildID, recEventUpdate, recHeaderFeature:
		default:
			return
		}
		if err := r.src.next(&r.rec); err != nil {
			if err != io.EOF {
				r.fail(err)
			}
			return
		}
		if _, err := r.handle(&r.rec); err != nil {
			r.fail(err)
			return
		}
	}
}

// finishHeader completes what depends on all header features.
func (r *Reader) finishHeader() {
	if r.topoDone {
		return
	}
	r.topoDone = true
	topo, err := r.buildTopology()
	if err != nil {
		r.drop("topology features that do not parse", 1)
		r.extra("topology_error", err.Error())
	}
	r.meta.Topology = topo
}

// Meta describes the file. Lost and dropped counts are complete once Next
// has returned false.
func (r *Reader) Meta() *timeline.Meta {
	src := &r.meta.Source
	src.Events = src.Events[:0]
	for _, a := range r.attrs {
		src.Events = append(src.Events, r.attrName(a))
	}
	if len(r.skipped) > 0 {
		keys := make([]uint32, 0, len(r.skipped))
		for k := range r.skipped {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		var b strings.Builder
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%d", recName(k), r.skipped[k])
		}
		r.extra("skipped_records", b.String())
	}
	if r.trailingAt > 0 {
		r.extra("trailing_bytes_at", hexOff(r.trailingAt))
	}
	if r.q.overflows > 0 {
		r.extra("reorder_overflows", itoa(r.q.overflows))
	}
	if r.q.outOfOrder > 0 {
		r.extra("out_of_order_records", itoa(r.q.outOfOrder))
	}
	if src.Compressed == "" && r.src != nil && r.src.zused {
		src.Compressed = "zstd"
	}
	return &r.meta
}

// Event returns the current row; it is reused by the next call of Next.
func (r *Reader) Event() *timeline.Event { return &r.ev }

// Err returns the error that stopped Next, if any.
func (r *Reader) Err() error { return r.err }

// Close releases the file.
func (r *Reader) Close() error {
	if r.src != nil {
		r.src.endZstd()
	}
	if r.mapped != nil {
		unmapFile(r.mapped)
		r.mapped = nil
		r.q.mapped = nil
		r.src = nil
		r.done = true // queued records may refer to the mapping
	}
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

// Next advances to the next row.
func (r *Reader) Next() bool {
	if r.mapped != nil {
		return r.nextMapped()
	}
	return r.next()
}

// nextMapped is next over a mapped file: if the file shrinks under the
// mapping (another process truncating it), touching the lost pages faults;
// that becomes an error, not a crash.
func (r *Reader) nextMapped() (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if e := recover(); e != nil {
			if _, fault := e.(interface{ Addr() uintptr }); !fault {
				panic(e)
			}
			r.fail(r.errf(r.src.off, "the file shrank while it was being read (is something still writing or truncating it?)"))
			ok = false
		}
	}()
	return r.next()
}

func (r *Reader) next() bool {
	if r.err != nil || r.done {
		return false
	}
	for {
		if rec, ai, ok := r.q.next(); ok {
			if r.deliver(rec, ai) {
				return true
			}
			continue
		}
		if r.eof {
			r.done = true
			r.finishHeader()
			return false
		}
		rec := &r.rec
		err := r.src.next(rec)
		if err == io.EOF {
			r.eof = true
			r.q.flushAll()
			continue
		}
		if err != nil {
			r.fail(err)
			return false
		}
		ok, err := r.handle(rec)
		if err != nil {
			r.fail(err)
			return false
		}
		if ok {
			return true
		}
	}
}

func (r *Reader) fail(err error) {
	var fe *FormatError
	if !errors.As(err, &fe) {
		err = r.wrap(r.src.off, "reading", err)
	}
	r.err = err
}
