package perfdata

import (
	"bytes"
	"errors"
	"io"
	"iter"

	"github.com/klauspost/compress/zstd"
)

// rawRec is one record as read; data (header included) and extra are valid
// until the next call of recSource.next.
type rawRec struct {
	typ  uint32
	misc uint16
	data []byte
	// extra is the payload perf writes after some records, outside
	// header.size (the tracing-data blob after HEADER_TRACING_DATA).
	extra []byte
	off   int64 // file offset of the record, or of the COMPRESSED record it came from
	zpos  int64 // -1, or the record's position in the decompressed stream
}

// recSource yields the records of a data section or pipe stream in file
// order, decompressing COMPRESSED/COMPRESSED2 records on the way.
type recSource struct {
	r     *Reader // for the file name, byte order and damage counts
	br    peeker
	off   int64 // file offset of the next unread byte
	left  int64 // bytes left in the data section; -1: read to EOF
	toEOF bool  // pipe, or header not finalized: bad bytes end the stream

	// zstd: all COMPRESSED payloads of a file are one stream (perf flushes
	// but never ends its frame), decoded by one decoder that runs as a
	// coroutine (iter.Pull): it asks for input only when the blocks it was
	// given are fully delivered, which tells us a payload is done without
	// any read-ahead (see pull).
	zd        *zstd.Decoder
	zfeed     []byte // rest of the current payload
	zout      []byte // what the coroutine decoded last
	zyield    func(zmsg) bool
	zpull     func() (zmsg, bool)
	zstop     func()
	inPayload bool
	pend      []byte // decoded bytes not yet returned as records
	pendOff   int
	zpos      int64 // decompressed stream position of pend[pendOff]
	zrecOff   int64 // file offset of the COMPRESSED record being decoded
	zused     bool
}

type zmsg struct {
	n         int
	needInput bool
	err       error
}

var errStopped = errors.New("stopped")

const bufSize = 256 << 10

// peeker is what recSource reads records with: a bufio.Reader over a pipe
// or file, or a memReader over a mapped file.
type peeker interface {
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
	io.Reader
}

// memReader reads from memory (a mapped data section) with bufio.Reader's
// Peek and Discard semantics, minus the copying: a peeked slice stays valid
// for as long as the memory.
type memReader struct {
	b       []byte
	pos     int
	drop    bool // b is mapped: release pages behind pos as it advances
	dropped int  // b[:dropped] was released
}

// dropEvery is how far a mapped read advances between page releases (a
// variable so tests can release every few pages).
var dropEvery = 8 << 20

func (m *memReader) Peek(n int) ([]byte, error) {
	rest := m.b[m.pos:]
	if n > len(rest) {
		return rest, io.EOF
	}
	return rest[:n:n], nil
}

func (m *memReader) Discard(n int) (int, error) {
	n = min(n, len(m.b)-m.pos)
	m.pos += n
	if m.drop && m.pos-m.dropped >= 2*dropEvery {
		// The reorder queue refers to the records of about the last two
		// rounds in place, so the release stays dropEvery behind pos; a
		// record still queued further back is read back from the file
		// when touched, so releasing is always safe.
		end := m.pos - dropEvery
		dropPages(m.b[m.dropped:end])
		m.dropped = end
	}
	return n, nil
}

func (m *memReader) Read(p []byte) (int, error) {
	if m.pos == len(m.b) {
		return 0, io.EOF
	}
	n := copy(p, m.b[m.pos:])
	m.pos += n
	return n, nil
}

// peek and discard call the mapped reader directly when there is one
// (twice per record: an interface call each is measurable).
func (s *recSource) peek(n int) ([]byte, error) {
	if m, ok := s.br.(*memReader); ok {
		return m.Peek(n)
	}
	return s.br.Peek(n)
}

func (s *recSource) discard(n int) {
	if m, ok := s.br.(*memReader); ok {
		m.Discard(n)
		return
	}
	s.br.Discard(n)
}

func (s *recSource) fail(off int64, where, msg string, err error) error {
	return &FormatError{File: s.r.name, Offset: off, Where: where, Msg: msg, Err: err}
}

// readOuter reads the next record of the file itself.
func (s *recSource) readOuter(rec *rawRec) error {
	if s.left == 0 {
		return io.EOF
	}
	hdr, err := s.peek(8)
	if len(hdr) == 0 && err == io.EOF {
		if s.left > 0 {
			s.r.drop("data section bytes missing (file truncated)", s.left)
		}
		return io.EOF
	}
	if err != nil && err != io.EOF {
		return s.fail(s.off, "", "reading record header", err)
	}
	if len(hdr) < 8 || (s.left > 0 && s.left < 8) {
		return s.truncated(len(hdr), "record header")
	}
	ord := s.r.ord
	typ, misc, size := ord.u32(hdr), ord.u16(hdr[4:]), int(ord.u16(hdr[6:]))
	if size < 8 || typ == 0 || typ >= recMaxPlausible {
		if s.toEOF {
			// A pipe stream saved to a file may end with whatever else was
			// written to it (perf's own messages); stop there.
			n, _ := s.br.Discard(1 << 62)
			s.r.drop("trailing bytes that are not records", int64(n))
			s.r.trailingAt = s.off
			s.left = 0
			return io.EOF
		}
		if size < 8 {
			return s.fail(s.off, "", "record size "+itoa(int64(size))+" is smaller than its 8-byte header", nil)
		}
		return s.fail(s.off, "", "record type "+itoa(int64(typ))+" is not a perf record type (expected 1..127)", nil)
	}
	if s.left > 0 && int64(size) > s.left {
		if s.r.dataTruncated {
			return s.truncated(int(s.left), recName(typ)+" record")
		}
		return s.fail(s.off, "", recName(typ)+" record of "+itoa(int64(size))+" bytes runs past the end of the data section ("+itoa(s.left)+" bytes left)", nil)
	}
	data, err := s.peek(size)
	if len(data) < size {
		if err != nil && err != io.EOF {
			return s.fail(s.off, "", "reading record", err)
		}
		return s.truncated(len(data), recName(typ)+" record")
	}
	*rec = rawRec{typ: typ, misc: misc, data: data, off: s.off, zpos: -1}
	s.discard(size)
	s.off += int64(size)
	if s.left > 0 {
		s.left -= int64(size)
	}
	switch typ {
	case recTracingData:
		// The blob follows the record, outside header.size.
		if size < 12 {
			return s.fail(rec.off, "", "HEADER_TRACING_DATA record of "+itoa(int64(size))+" bytes has no size field", nil)
		}
		n := int64(ord.u32(data[8:]))
		b, err := s.payload(n, "tracing data")
		if err != nil {
			return err
		}
		// data may have been moved by the buffered read; the caller needs
		// only its size field, which we copy into the record we return.
		rec.data = append([]byte(nil), data...)
		rec.extra = b
	case recAuxtrace:
		// AUX area data follows the record, outside header.size.
		if size >= 16 {
			n := ord.u64(data[8:])
			if err := s.skip(n, "AUXTRACE data"); err != nil {
				return err
			}
		}
	}
	return nil
}

// truncated handles a record cut by the end of the file: what came before is
// kept and the damage counted, as perf does for a recording that was killed.
func (s *recSource) truncated(have int, what string) error {
	if !s.toEOF && !s.r.dataTruncated && s.left > 0 {
		return s.fail(s.off, "", what+" cut short: the data section ends after "+itoa(s.left)+" of its bytes", nil)
	}
	s.r.drop("truncated record at end of data", 1)
	s.br.Discard(have)
	s.left = 0
	return io.EOF
}

// payload reads n bytes that follow a record. The buffer grows with what
// actually arrives, so a corrupt size costs at most the input's own size.
func (s *recSource) payload(n int64, what string) ([]byte, error) {
	if s.left >= 0 && n > s.left && !s.r.dataTruncated {
		return nil, s.fail(s.off, "", what+" of "+itoa(n)+" bytes runs past the end of the data section", nil)
	}
	var buf bytes.Buffer
	got, err := buf.ReadFrom(io.LimitReader(s.br, n))
	s.off += got
	if s.left > 0 {
		s.left -= got
	}
	if err != nil {
		return nil, s.fail(s.off, "", "reading "+what, err)
	}
	if got < n {
		s.r.drop("truncated record at end of data", 1)
		s.left = 0
		return nil, io.EOF
	}
	return buf.Bytes(), nil
}

func (s *recSource) skip(n uint64, what string) error {
	if s.left >= 0 && n > uint64(s.left) && !s.r.dataTruncated {
		return s.fail(s.off, "", what+" of "+itoa(int64(min(n, 1<<62)))+" bytes runs past the end of the data section", nil)
	}
	got, err := io.CopyN(io.Discard, s.br, int64(min(n, 1<<62)))
	s.off += got
	if s.left > 0 {
		s.left -= got
	}
	if err == io.EOF {
		s.r.drop("truncated record at end of data", 1)
		s.left = 0
		return nil
	}
	if err != nil {
		return s.fail(s.off, "", "skipping "+what, err)
	}
	return nil
}

// next returns the next record in file order, decompressed records in place
// of the COMPRESSED records that hold them. io.EOF ends the stream.
func (s *recSource) next(rec *rawRec) error {
	for {
		if ok, err := s.pendRecord(rec); ok || err != nil {
			return err
		}
		if s.inPayload {
			if err := s.pull(); err != nil {
				return err
			}
			continue
		}
		err := s.readOuter(rec)
		if err == io.EOF {
			s.endZstd()
			return io.EOF
		}
		if err != nil {
			return err
		}
		if rec.typ == recCompressed || rec.typ == recCompressed2 {
			if err := s.feed(*rec); err != nil {
				return err
			}
			continue
		}
		return nil
	}
}

// feed hands a COMPRESSED payload to the decoder.
func (s *recSource) feed(rec rawRec) error {
	d := rec.data[8:]
	if rec.typ == recCompressed2 {
		if len(d) < 8 {
			return s.fail(rec.off, "", "COMPRESSED2 record of "+itoa(int64(len(rec.data)))+" bytes has no data_size field", nil)
		}
		n := s.r.ord.u64(d)
		if n > uint64(len(d)-8) {
			return s.fail(rec.off, "", "COMPRESSED2 data_size "+itoa(int64(min(n, 1<<62)))+" exceeds the record's "+itoa(int64(len(d)-8))+" payload bytes", nil)
		}
		d = d[8 : 8+n]
	}
	if s.zd == nil {
		if err := s.startZstd(); err != nil {
			return s.fail(rec.off, "", "starting zstd decoder", err)
		}
	}
	s.zused = true
	s.zfeed = d
	s.zrecOff = rec.off
	s.inPayload = len(d) > 0
	return nil
}

func (s *recSource) startZstd() error {
	// perf compresses with a window of at most 128 MiB (level 22); a larger
	// window is not perf's and is refused before it is allocated.
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20), zstd.WithDecoderLowmem(true))
	if err != nil {
		return err
	}
	if err := zd.Reset(zfeeder{s}); err != nil {
		return err
	}
	s.zd = zd
	s.zpull, s.zstop = iter.Pull(func(yield func(zmsg) bool) {
		s.zyield = yield
		// The buffer is the coroutine's own: a Read suspended for input
		// resumes writing into it, so it must not move meanwhile.
		buf := make([]byte, 128<<10)
		for {
			n, err := zd.Read(buf)
			if n > 0 {
				s.zout = buf[:n]
				if !yield(zmsg{n: n}) {
					return
				}
			}
			if err != nil {
				if err != errStopped {
					yield(zmsg{err: err})
				}
				return
			}
		}
	})
	return nil
}

// zfeeder is the decoder's input: the current payload, and when that is
// used up, a pause of the coroutine until the next payload arrives.
type zfeeder struct{ s *recSource }

func (f zfeeder) Read(p []byte) (int, error) {
	s := f.s
	for len(s.zfeed) == 0 {
		if !s.zyield(zmsg{needInput: true}) {
			return 0, errStopped
		}
	}
	n := copy(p, s.zfeed)
	s.zfeed = s.zfeed[n:]
	return n, nil
}

// pull runs the decoder until it produces output or needs the next payload.
func (s *recSource) pull() error {
	m, ok := s.zpull()
	switch {
	case !ok || m.needInput:
		s.inPayload = false
	case m.err != nil:
		s.inPayload = false
		return s.fail(s.zrecOff, "zstd stream byte "+hexOff(s.zpos+int64(len(s.pend)-s.pendOff)), "COMPRESSED data does not decode", m.err)
	default:
		if s.pendOff > 0 {
			n := copy(s.pend, s.pend[s.pendOff:])
			s.pend = s.pend[:n]
			s.pendOff = 0
		}
		s.pend = append(s.pend, s.zout...)
	}
	return nil
}

// pendRecord returns the next complete decompressed record, if any.
func (s *recSource) pendRecord(rec *rawRec) (bool, error) {
	b := s.pend[s.pendOff:]
	if len(b) < 8 {
		return false, nil
	}
	ord := s.r.ord
	typ, size := ord.u32(b), int(ord.u16(b[6:]))
	if size < 8 || typ == 0 || typ >= recMaxPlausible || typ == recCompressed || typ == recCompressed2 || typ == recTracingData || typ == recAuxtrace {
		return false, s.fail(s.zrecOff, "zstd stream byte "+hexOff(s.zpos), "decompressed data is not a record (type "+itoa(int64(typ))+", size "+itoa(int64(size))+")", nil)
	}
	if len(b) < size {
		return false, nil
	}
	*rec = rawRec{typ: typ, misc: ord.u16(b[4:]), data: b[:size:size], off: s.zrecOff, zpos: s.zpos}
	s.pendOff += size
	s.zpos += int64(size)
	return true, nil
}

// endZstd closes the decoder at the end of input. perf never ends its zstd
// frame, so the stream simply stops; a partial record left over is damage.
func (s *recSource) endZstd() {
	if s.zd == nil {
		return
	}
	if len(s.pend)-s.pendOff > 0 {
		s.r.drop("truncated record at end of compressed data", 1)
	}
	s.pend, s.pendOff = nil, 0
	s.zstop()
	s.zd.Close()
	s.zd = nil
}

func hexOff(v int64) string { return "0x" + hex(uint64(v)) }
