package tracedat

import (
	"fmt"
)

// Ring-buffer event header type_len values (kernel ring_buffer.c).
const (
	typePadding    = 29
	typeTimeExtend = 30
	typeTimeStamp  = 31
	tsShift        = 27

	commitLenMask = 1<<27 - 1 // libtraceevent's mask: lengths never reach a page
	missedEvents  = 1 << 31   // events were lost before this page
	missedStored  = 1 << 30   // their count is stored after the data
)

// pageLayout is where the header_page description puts the page fields.
type pageLayout struct {
	tsOff, commitOff, commitSize, dataOff int
}

func newPageLayout(f *file) (pageLayout, error) {
	hp := f.headerPage
	ts, commit, data := hp.Field("timestamp"), hp.Field("commit"), hp.Field("data")
	if ts == nil || commit == nil || data == nil || ts.Size != 8 || (commit.Size != 4 && commit.Size != 8) {
		return pageLayout{}, &FormatError{Path: f.path, What: "header_page", Msg: "expected u64 timestamp, 4- or 8-byte commit and data fields"}
	}
	l := pageLayout{tsOff: ts.Offset, commitOff: commit.Offset, commitSize: commit.Size, dataOff: data.Offset}
	if l.dataOff >= f.pageSize || l.tsOff+8 > l.dataOff || l.commitOff+l.commitSize > l.dataOff {
		return pageLayout{}, &FormatError{Path: f.path, What: "header_page", Msg: fmt.Sprintf("field offsets do not fit a %d-byte page", f.pageSize)}
	}
	return l, nil
}

// stream walks one CPU's pages and yields its records in order. At most
// one page (uncompressed files) or one decompressed chunk (v7 compressed
// files) is held in memory.
type stream struct {
	f      *file
	cd     cpuData
	lay    pageLayout
	rd     *Reader
	cpu    int
	idx    int // position in the file's CPU list: tie-break order
	pageNo int

	// source of pages
	fileOff, fileEnd int64 // uncompressed: next page offset and end
	chunks           uint32
	chunkCur         *cursor // compressed: position of the next chunk
	chunk            []byte  // compressed: current decompressed chunk
	chunkPos         int

	page    []byte
	buf     []byte // reusable page buffer for uncompressed reads
	p, end  int    // position and end of event data in page
	ts      uint64 // running time base
	started bool

	// current item
	recTS   uint64
	rec     []byte
	lost    bool // the current item is a lost marker, rec is the record after it
	lostN   uint64
	lostKnw bool
	hasRec  bool // after a lost marker, a record is waiting

	pendLost bool // the next record of this page comes after lost events
	pendN    uint64
	pendKnw  bool
}

func newStream(rd *Reader, cd cpuData, lay pageLayout) (*stream, error) {
	s := &stream{f: rd.f, cd: cd, lay: lay, rd: rd, cpu: cd.cpu, pageNo: -1}
	if cd.compressed {
		c := &cursor{r: s.f.r, off: cd.offset, end: s.f.size, order: s.f.order, path: s.f.path, what: fmt.Sprintf("cpu %d data", cd.cpu)}
		if cd.size == 0 {
			return s, nil
		}
		n, err := c.u32("chunk count")
		if err != nil {
			return nil, err
		}
		if int64(n) > c.left()/8 {
			return nil, c.errf(c.off-4, "chunk count %d does not fit the file", n)
		}
		s.chunks, s.chunkCur = n, c
	} else {
		s.fileOff, s.fileEnd = cd.offset, cd.offset+cd.size
	}
	return s, nil
}

// nextPage loads the next page; false at the end of the CPU's data.
func (s *stream) nextPage() (bool, error) {
	ps := s.f.pageSize
	if s.cd.compressed {
		for s.chunkPos >= len(s.chunk) {
			if s.chunks == 0 {
				return false, nil
			}
			s.chunks--
			s.rd.buffered -= int64(len(s.chunk))
			s.chunk = nil
			b, err := s.f.readCompressedChecked(s.chunkCur, maxChunkBytes, fmt.Sprintf("cpu %d chunk", s.cpu), s.rd.reserve)
			if err != nil {
				return false, err
			}
			s.rd.buffered += int64(len(b))
			s.chunk, s.chunkPos = b, 0
		}
		n := min(ps, len(s.chunk)-s.chunkPos)
		s.page = s.chunk[s.chunkPos : s.chunkPos+n]
		s.chunkPos += n
	} else {
		if s.fileOff >= s.fileEnd {
			return false, nil
		}
		n := int(min(int64(ps), s.fileEnd-s.fileOff))
		if s.buf == nil {
			size := min(int64(ps), s.cd.size)
			if err := s.rd.reserve(size); err != nil {
				return false, err
			}
			s.rd.buffered += size
			s.buf = make([]byte, size)
		}
		if _, err := s.f.r.ReadAt(s.buf[:n], s.fileOff); err != nil {
			return false, &FormatError{Path: s.f.path, What: fmt.Sprintf("cpu %d data", s.cpu), Offset: s.fileOff, Msg: "reading page", Err: err}
		}
		s.page = s.buf[:n]
		s.fileOff += int64(n)
	}
	s.pageNo++
	return true, nil
}

// startPage decodes the page header. A page whose header is impossible is
// skipped and counted; the rest of the CPU's data stays usable.
func (s *stream) startPage() bool {
	l, pg := s.lay, s.page
	if len(pg) < l.dataOff {
		s.rd.drop("truncated ring-buffer page", 1)
		return false
	}
	s.ts = s.f.order.Uint64(pg[l.tsOff:])
	var commit uint64
	if l.commitSize == 8 {
		commit = s.f.order.Uint64(pg[l.commitOff:])
	} else {
		commit = uint64(s.f.order.Uint32(pg[l.commitOff:]))
	}
	n := int(commit & commitLenMask)
	if n > len(pg)-l.dataOff {
		s.rd.drop("corrupt ring-buffer page (commit past the page end)", 1)
		return false
	}
	s.p, s.end = l.dataOff, l.dataOff+n
	s.pendLost = false
	if commit&missedEvents != 0 {
		s.pendLost, s.pendN, s.pendKnw = true, 0, false
		if commit&missedStored != 0 && s.end+l.commitSize <= len(pg) {
			if l.commitSize == 8 {
				s.pendN = s.f.order.Uint64(pg[s.end:])
			} else {
				s.pendN = uint64(s.f.order.Uint32(pg[s.end:]))
			}
			s.pendKnw = true
		}
	}
	return true
}

// next advances to the next item: a record, or a lost marker placed just
// before the first record of a page that follows lost events.
func (s *stream) next() (bool, error) {
	if s.hasRec {
		s.hasRec, s.lost = false, false
		return true, nil
	}
	s.lost = false
	for {
		if !s.started || s.p >= s.end {
			if s.started && s.pendLost {
				// A page with lost events but no record: report the loss
				// at the page time.
				s.lost, s.lostN, s.lostKnw, s.recTS = true, s.pendN, s.pendKnw, s.ts
				s.pendLost = false
				return true, nil
			}
			ok, err := s.nextPage()
			if err != nil || !ok {
				return false, err
			}
			s.started = true
			if !s.startPage() {
				s.p, s.end = 0, 0
				continue
			}
			continue
		}
		ok, bad := s.event()
		if bad != "" {
			s.rd.drop(bad, 1)
			s.p = s.end
			continue
		}
		if !ok {
			continue
		}
		if s.pendLost {
			s.pendLost = false
			s.lost, s.lostN, s.lostKnw, s.hasRec = true, s.pendN, s.pendKnw, true
		}
		return true, nil
	}
}

// event decodes the event header at s.p. ok is true when a data record
// was found (s.rec, s.recTS); bad names a corruption (rest of page skipped).
func (s *stream) event() (ok bool, bad string) {
	pg, o := s.page, s.f.order
	if s.end-s.p < 4 {
		return false, "corrupt ring-buffer event (header past the data end)"
	}
	w := o.Uint32(pg[s.p:])
	var tl, td uint32
	if s.f.bigEndian {
		tl, td = w>>27, w&(1<<27-1)
	} else {
		tl, td = w&31, w>>5
	}
	arr := func() (uint32, bool) {
		if s.end-s.p < 8 {
			return 0, false
		}
		return o.Uint32(pg[s.p+4:]), true
	}
	switch tl {
	case typePadding:
		if td == 0 {
			s.p = s.end
			return false, ""
		}
		n, okA := arr()
		if !okA || int64(n) > int64(s.end-s.p-4) {
			// Padding that claims the rest of the page ends it.
			s.p = s.end
			return false, ""
		}
		s.ts += uint64(td)
		s.p += 4 + int(n)
		return false, ""
	case typeTimeExtend:
		n, okA := arr()
		if !okA {
			return false, "corrupt ring-buffer event (truncated time extend)"
		}
		s.ts += uint64(n)<<tsShift | uint64(td)
		s.p += 8
		return false, ""
	case typeTimeStamp:
		n, okA := arr()
		if !okA {
			return false, "corrupt ring-buffer event (truncated time stamp)"
		}
		t := uint64(n)<<tsShift | uint64(td)
		// Absolute stamps hold the low 59 bits (kernel rb_fix_abs_ts).
		const top = uint64(0x1f) << 59
		if s.ts&top != 0 {
			t |= s.ts & top
			if t < s.ts {
				t += 1 << 59
			}
		}
		s.ts = t
		s.p += 8
		return false, ""
	}
	s.ts += uint64(td)
	var start, n int
	if tl == 0 {
		a, okA := arr()
		if !okA || a < 4 || int64(a)-4 > int64(s.end-s.p-8) {
			return false, "corrupt ring-buffer event (length past the data end)"
		}
		start, n = s.p+8, int(a)-4
		s.p = start + (n+3)&^3
	} else {
		start, n = s.p+4, int(tl)*4
		if n > s.end-start {
			return false, "corrupt ring-buffer event (length past the data end)"
		}
		s.p = start + n
	}
	s.rec, s.recTS = pg[start:start+n:start+n], s.ts
	return true, ""
}
