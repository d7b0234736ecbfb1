// Package perfetto reads Perfetto protobuf traces (.perfetto-trace,
// .pftrace) as a stream of timeline events: the kernel's sched and task
// events recorded by Perfetto's ftrace data source, in both the full
// FtraceEvent encoding and the compact_sched encoding, with thread names
// and process ids from ProcessTree, the kernel release from SystemInfo and
// CPU capacities from CpuInfo.
//
// A Perfetto sched_switch gives the same row as the same event read from
// trace.dat or ftrace text: Perfetto stores the raw prev_state, which is
// decoded with the table of the traced kernel's release. Events of a CPU
// arrive in order; CPUs are merged by time with a bounded reorder buffer
// (MaxBufferedRows). See shared/design/formats.md §5.
package perfetto

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/schedreplay/replay/ingest/internal/reorder"
	"github.com/schedreplay/replay/ingest/tracedat"
	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

// Limits that keep a corrupt or hostile file from exhausting memory.
var (
	// MaxPacketBytes bounds one TracePacket (Perfetto's own writer keeps
	// packets far smaller; its chunks are at most a few hundred KiB) and
	// the decompressed size of one compressed_packets blob.
	MaxPacketBytes = 64 << 20
	// MaxBufferedRows bounds the reorder buffer that merges CPUs (about
	// 250 bytes a row). Disorder wider than this is counted in
	// Source.Extra["rows_out_of_time_order"].
	MaxBufferedRows = 1 << 18
	// WarmRows is how many rows stay buffered even when every CPU has
	// some: a lookahead for CPUs whose first bundle comes late.
	WarmRows = 1 << 14
)

const (
	// maxNesting bounds compressed packets inside compressed packets.
	maxNesting = 2
	// maxCPU is Perfetto's own limit on a bundle's CPU number.
	maxCPU = 1024
	// maxNames bounds the tid -> name / tgid tables (cleared when full).
	maxNames = 1 << 20
)

// Sniff reports whether head, the first bytes of a file, looks like a
// Perfetto trace: field 1 (TracePacket) with a plausible length whose
// first fields decode as valid protobuf. Perfetto has no magic number.
func Sniff(head []byte) bool {
	if len(head) < 2 || head[0] != 0x0a {
		return false
	}
	n, k := protowire.ConsumeVarint(head[1:])
	if k < 0 || n == 0 || n > uint64(MaxPacketBytes) {
		return false
	}
	pkt := head[1+k:]
	complete := uint64(len(pkt)) >= n
	if complete {
		pkt = pkt[:n]
	}
	fields, known := 0, false
	for len(pkt) > 0 {
		num, typ, m := protowire.ConsumeTag(pkt)
		if m < 0 || num > 1<<20 {
			return false
		}
		known = known || knownPacketField[num]
		if typ != protowire.VarintType && typ != protowire.Fixed32Type && typ != protowire.Fixed64Type && typ != protowire.BytesType {
			return false
		}
		v := protowire.ConsumeFieldValue(num, typ, pkt[m:])
		if v < 0 {
			// Cut by the end of head: fine unless the packet was complete.
			return !complete && known && len(head) >= 64
		}
		fields++
		pkt = pkt[m+v:]
	}
	return known
}

// knownPacketField lists TracePacket fields common at the start of a
// trace; Sniff wants one of them, so that text which happens to parse as
// protobuf is not taken for a trace.
var knownPacketField = map[protowire.Number]bool{1: true, 2: true, 3: true, 6: true, 8: true, 10: true, 11: true, 12: true,
	13: true, 33: true, 34: true, 35: true, 36: true, 41: true, 42: true, 43: true, 44: true, 45: true, 50: true, 58: true,
	59: true, 60: true, 67: true, 79: true, 87: true, 89: true, 133: true}

// Reader streams the events of a Perfetto trace in time order.
type Reader struct {
	name   string
	in     *bufio.Reader
	closer io.Closer
	off    int64 // file offset of the next top-level byte
	meta   timeline.Meta

	seqs   map[uint32]*sequence
	cpus   map[cpuKey]*cpuState
	names  map[int32]string // tid -> comm, as the kernel knows it now
	seed   map[int]string   // ProcessTree names, for common_comm
	tgids  map[int32]int32
	comms  *tracedat.CommTable
	state  *tracefmt.StateDecoder
	strs   map[string]string
	m      *merger
	ev     timeline.Event
	err    error
	eof    bool
	events map[string]bool

	// pendingDrop: packets were dropped on some sequence; the next bundle
	// gets a lost row.
	pendingDrop uint64
	// validFrom is the max over CPUs of the first bundle's
	// previous_bundle_end_timestamp: data before it may be incomplete.
	validFrom  int64
	stats      map[int]*cpuStats
	snapshots  map[uint32]int64 // clock id -> ts at the latest snapshot (boot-relative offset source)
	emitted    int64
	outOfOrder int
}

// sequence is a writer's incremental state (trusted_packet_sequence_id).
type sequence struct {
	id      uint32
	seen    bool
	cleared bool // an INCREMENTAL_STATE_CLEARED packet was seen
	symbols map[uint64]string
}

type cpuKey struct {
	seq uint32
	cpu int
}

// cpuState is what compact_sched needs from earlier events of a CPU (on
// one sequence).
type cpuState struct {
	id         int // queue of the merger
	known      bool
	pid, prio  int32
	idleName   string // swapper/N
	firstSeen  bool
	clockOff   int64 // ftrace clock -> boot, from the bundle's pair
	hasClock   bool
	lastQueued int64
}

type cpuStats struct {
	begin, end       [3]uint64 // overrun, commit_overrun, dropped_events
	hasBegin, hasEnd bool
}

// Open opens a Perfetto trace file.
func Open(path string) (*Reader, error) {
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

// NewReader reads a Perfetto trace from rd (not compressed: ingest.Open
// removes gzip or zstd around it); name is used in errors and metadata.
// It reads the packets before the first event (SystemInfo, CpuInfo,
// ProcessTree, ...) so that Meta describes the trace right away.
func NewReader(rd io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name, in: bufio.NewReaderSize(rd, 1<<16),
		seqs: map[uint32]*sequence{}, cpus: map[cpuKey]*cpuState{}, names: map[int32]string{},
		seed: map[int]string{}, tgids: map[int32]int32{}, strs: map[string]string{},
		m: newMerger(), events: map[string]bool{}, stats: map[int]*cpuStats{}, snapshots: map[uint32]int64{}}
	r.comms = tracedat.NewCommTable(nil)
	r.state = tracefmt.StateDecoderForKernel("")
	r.meta.Source.Format = "perfetto"
	r.meta.Source.Path = name
	// Perfetto's ftrace clock is boot time unless a bundle says otherwise
	// (then converted to it): CLOCK_BOOTTIME.
	r.meta.Source.ClockID = 7
	r.meta.Source.Extra = map[string]string{}
	r.headPackets()
	if r.err != nil {
		return nil, r.err
	}
	return r, nil
}

// Next advances to the next event.
func (r *Reader) Next() bool {
	for {
		if r.err != nil {
			return false
		}
		if r.m.ready(r.eof, MaxBufferedRows, WarmRows) {
			r.emit(r.m.pop())
			return true
		}
		if r.eof {
			r.finish()
			return false
		}
		if err := r.readTopLevel(); err != nil {
			if err == io.EOF {
				r.eof = true
				continue
			}
			r.err = fmt.Errorf("%s: %w", r.name, err)
			return false
		}
	}
}

// readTopLevel reads one field of the Trace message (a packet).
func (r *Reader) readTopLevel() error {
	at := r.off
	key, err := r.readVarint()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return fmt.Errorf("offset %d: packet tag: %w", at, err)
	}
	num, typ := protowire.DecodeTag(key)
	if num == 0 {
		return fmt.Errorf("offset %d: field number 0 at top level: not a Perfetto trace, or corrupt", at)
	}
	switch typ {
	case protowire.VarintType:
		_, err = r.readVarint()
	case protowire.Fixed32Type:
		err = r.skip(4)
	case protowire.Fixed64Type:
		err = r.skip(8)
	case protowire.BytesType:
		n, e := r.readVarint()
		if e != nil {
			return fmt.Errorf("offset %d: packet length: %w", at, unexpected(e))
		}
		if n > uint64(MaxPacketBytes) {
			return fmt.Errorf("offset %d: packet of %d bytes exceeds the %d-byte limit (perfetto.MaxPacketBytes); corrupt trace?", at, n, MaxPacketBytes)
		}
		if num != 1 {
			r.drop(fmt.Sprintf("top-level field %d (not a packet)", num))
			err = r.skip(int(n))
			break
		}
		start := r.off
		var buf []byte
		if n <= 1<<20 {
			buf = make([]byte, n)
			if _, e := io.ReadFull(r.in, buf); e != nil {
				return fmt.Errorf("offset %d: packet of %d bytes cut short (truncated trace)", at, n)
			}
		} else {
			// Grow with the data actually there, not with a length that
			// may be corrupt.
			b, e := io.ReadAll(io.LimitReader(r.in, int64(n)))
			if e != nil || uint64(len(b)) != n {
				return fmt.Errorf("offset %d: packet of %d bytes cut short (truncated trace)", at, n)
			}
			buf = b
		}
		r.off += int64(n)
		return r.packet(buf, start, 0)
	default:
		return fmt.Errorf("offset %d: top-level field %d with wire type %d: not a Perfetto trace, or corrupt", at, num, typ)
	}
	if err != nil {
		return fmt.Errorf("offset %d: %w", at, unexpected(err))
	}
	if num != 1 {
		r.drop(fmt.Sprintf("top-level field %d (not a packet)", num))
	}
	return nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (r *Reader) readVarint() (uint64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		b, err := r.in.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		r.off++
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("varint longer than 10 bytes")
}

func (r *Reader) skip(n int) error {
	k, err := r.in.Discard(n)
	r.off += int64(k)
	if err != nil {
		return unexpected(err)
	}
	return nil
}

// drop counts something the reader could not use.
func (r *Reader) drop(reason string) {
	if r.meta.Summary.Dropped == nil {
		r.meta.Summary.Dropped = map[string]int64{}
	}
	r.meta.Summary.Dropped[reason]++
}

func (r *Reader) intern(b []byte) string {
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	if len(r.strs) > 1<<16 {
		clear(r.strs)
	}
	s := string(b)
	r.strs[s] = s
	return s
}

// emit turns a row into the current event.
func (r *Reader) emit(x row) {
	e := &r.ev
	e.Reset()
	e.Time, e.Name, e.Kind = x.ts, x.name, x.kind
	for i := 0; i < int(x.ni); i++ {
		e.SetInt(x.ic[i], x.iv[i])
	}
	for i := 0; i < int(x.ns); i++ {
		e.SetStr(x.sc[i], x.sv[i])
	}
	if x.hasState {
		e.SetInt(timeline.PrevStateRaw, x.stateRaw)
		e.SetStr(timeline.PrevState, r.state.Letters(x.stateRaw))
	}
	e.Fields = append(e.Fields, x.fields...)
	if x.kind != timeline.Lost {
		// common_comm as trace.dat names it: the ProcessTree (Perfetto's
		// saved cmdlines) first, then the names sched_switch taught.
		r.comms.Learn(e)
		if e.IsSet(timeline.CommonPID) {
			pid := e.Int32(timeline.CommonPID)
			if s, ok := r.seed[int(pid)]; ok && pid != 0 {
				e.SetStr(timeline.CommonComm, s)
			} else if s, ok := r.comms.Lookup(pid); ok {
				e.SetStr(timeline.CommonComm, s)
			}
		}
		if e.IsSet(timeline.CommonPID) && !e.IsSet(timeline.CommonTGID) {
			if tg, ok := r.tgids[e.Int32(timeline.CommonPID)]; ok {
				e.SetInt(timeline.CommonTGID, int64(tg))
			}
		}
	}
	if x.ts < r.emitted {
		r.outOfOrder++
		reorder.NoteLate(&r.meta.Source.Extra, r.outOfOrder)
	}
	r.emitted = max(r.emitted, x.ts)
}

// finish completes the metadata at the end of the trace.
func (r *Reader) finish() {
	for cpu, s := range r.stats {
		if !s.hasBegin || !s.hasEnd {
			continue
		}
		reasons := [3]string{"perfetto ftrace_stats: ring buffer overrun", "perfetto ftrace_stats: commit overrun", "perfetto ftrace_stats: dropped events"}
		for i := range s.end {
			if s.end[i] > s.begin[i] {
				r.meta.Summary.Lost.Add(cpu, reasons[i], s.end[i]-s.begin[i])
			}
		}
	}
	if r.validFrom > 0 {
		r.meta.Source.Extra["ftrace_data_valid_from_ns"] = strconv.FormatInt(r.validFrom, 10)
	}
	r.listEvents()
	r.stats = map[int]*cpuStats{}
}

// Event returns the current event (reused by the next call to Next).
func (r *Reader) Event() *timeline.Event { return &r.ev }

// Err returns the error that stopped the stream.
func (r *Reader) Err() error { return r.err }

// Meta describes the trace. Source fields from SystemInfo and CpuInfo
// are set once their packets were read (usually the first ones); lost and
// dropped counts are complete once Next has returned false.
func (r *Reader) Meta() *timeline.Meta { return &r.meta }

// Close closes the file opened by Open.
func (r *Reader) Close() error {
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

var _ timeline.EventReader = (*Reader)(nil)

// ValidFrom returns the time from which every CPU's ftrace data is
// complete (Perfetto's ftrace_latest_data_start_ns, from the first
// bundle of each CPU), 0 when the trace does not say. Valid at the end.
func (r *Reader) ValidFrom() int64 { return r.validFrom }

// headPackets reads the packets before the first event so that Meta has
// SystemInfo and CpuInfo when the caller asks before reading events.
func (r *Reader) headPackets() {
	for i := 0; i < 64 && r.err == nil && !r.eof && r.m.buffered == 0; i++ {
		if _, err := r.in.Peek(1); err != nil {
			return
		}
		if err := r.readTopLevel(); err != nil {
			if err == io.EOF {
				r.eof = true
				return
			}
			r.err = fmt.Errorf("%s: %w", r.name, err)
			return
		}
	}
}
