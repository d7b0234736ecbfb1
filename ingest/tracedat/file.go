package tracedat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/schedreplay/replay/ingest/tracefmt"
)

// Limits on sizes read from the file. They bound what a corrupt header
// can make us allocate; real files stay far below them (a kallsyms of a
// distribution kernel is ~10 MiB, a flyrecord chunk a few hundred KiB).
const (
	maxTextBytes = 4 << 20 // one format text, header_page/header_event
	maxPageSize  = 8 << 20 // ring-buffer sub-buffer (page) size
	maxCPUs      = 1 << 14
	maxSections  = 4096 // options sections followed before giving up (loops)
)

// Limits on what decompression and buffering may allocate; variables so
// the fuzz test can lower them.
var (
	maxSectionBytes int64 = 256 << 20 // one decompressed metadata section
	maxChunkBytes   int64 = 64 << 20  // one decompressed flyrecord chunk
	// maxBuffered bounds the page and chunk buffers held at once (one per
	// CPU): a corrupt header claiming thousands of CPUs with huge pages
	// gets an error instead of an allocation storm.
	maxBuffered int64 = 1 << 30
)

// Option ids shared by v6 and v7 (formats.md §2.2).
const (
	optDone         = 0
	optDate         = 1
	optCPUStat      = 2
	optBuffer       = 3
	optTraceClock   = 4
	optUname        = 5
	optOffset       = 7
	optCPUCount     = 8
	optVersion      = 9
	optTSC2NSec     = 14
	optHeaderInfo   = 16
	optFtraceEvents = 17
	optEventFormats = 18
	optCmdlines     = 21
	optBufferText   = 22
)

// cpuData locates one CPU's ring-buffer pages of the top instance.
type cpuData struct {
	cpu        int
	offset     int64
	size       int64
	compressed bool // v7: chunk count, then (csize, usize, bytes) chunks
}

type formatText struct{ system, text string }

// file is everything the header, options and metadata sections say.
type file struct {
	path        string
	r           io.ReaderAt
	size        int64
	version     int
	order       binary.ByteOrder
	bigEndian   bool
	longSize    int
	pageSize    int
	compression string // "" / "none", "zstd", "zlib" (v7)
	compVersion string

	headerPage *tracefmt.Format
	// Raw texts, kept for tests that rebuild small files from real ones.
	headerPageText, headerEventText []byte
	formatTexts                     []formatText
	formats                         []*tracefmt.Format
	byID                            map[int]*tracefmt.Format
	formatErrs                      []error
	cmdlines                        map[int]string
	cpus                            []cpuData
	cpuCount                        int // CPUCOUNT option (CPUs in the system), 0 if absent
	clock                           string
	uname                           string
	tcVersion                       string
	cpuStats                        []string
	tsOffset                        int64
	tscMult                         uint32
	tscShift                        uint32
	tscOffset                       uint64
	instances                       []string // other buffer instances, not read
	latencyText                     bool

	// v7 metadata section offsets found in options.
	secHeader, secFtrace, secEvents, secCmdlines int64

	zdec *zstd.Decoder
}

// IsTraceDat reports whether head starts like a trace-cmd trace.dat file
// (magic then a version string that is not perf's "0.x").
func IsTraceDat(head []byte) bool {
	if !bytes.HasPrefix(head, tracefmt.Magic) {
		return false
	}
	rest := head[len(tracefmt.Magic):]
	return len(rest) > 0 && rest[0] >= '1' && rest[0] <= '9'
}

func parseFile(r io.ReaderAt, size int64, path string) (*file, error) {
	f := &file{path: path, r: r, size: size, cmdlines: map[int]string{}, byID: map[int]*tracefmt.Format{}}
	c := &cursor{r: r, end: size, order: binary.LittleEndian, path: path, what: "file header"}
	magic := make([]byte, len(tracefmt.Magic))
	if err := c.read(magic, "magic"); err != nil || !bytes.Equal(magic, tracefmt.Magic) {
		return nil, c.errf(0, "expected trace-cmd magic 17 08 44 \"tracing\"")
	}
	at := c.off
	vs, err := c.cstr("version", 16)
	if err != nil {
		return nil, err
	}
	v, err := strconv.Atoi(vs)
	if err != nil {
		return nil, c.errf(at, "expected a numeric version, got %q", vs)
	}
	if v != 6 && v != 7 {
		return nil, c.errf(at, "trace.dat version %d is not supported (versions 6 and 7 are)", v)
	}
	f.version = v
	e, err := c.u8("endianness")
	if err != nil {
		return nil, err
	}
	switch e {
	case 0:
		f.order = binary.LittleEndian
	case 1:
		f.order, f.bigEndian = binary.BigEndian, true
	default:
		return nil, c.errf(c.off-1, "expected endianness 0 or 1, got %d", e)
	}
	c.order = f.order
	ls, err := c.u8("long size")
	if err != nil {
		return nil, err
	}
	if ls != 4 && ls != 8 {
		return nil, c.errf(c.off-1, "expected long size 4 or 8, got %d", ls)
	}
	f.longSize = int(ls)
	ps, err := c.u32("page size")
	if err != nil {
		return nil, err
	}
	if ps < 64 || ps > maxPageSize {
		return nil, c.errf(c.off-4, "page size %d out of range", ps)
	}
	f.pageSize = int(ps)
	if v == 6 {
		err = f.parseV6(c)
	} else {
		err = f.parseV7(c)
	}
	if err != nil {
		return nil, err
	}
	if f.headerPage == nil {
		return nil, c.errf(0, "no header_page description found")
	}
	for _, fm := range f.formats {
		if _, dup := f.byID[fm.ID]; !dup {
			f.byID[fm.ID] = fm
		}
	}
	return f, nil
}

func (f *file) setHeaders(page []byte, c *cursor, at int64) error {
	hp, err := tracefmt.ParseHeaderPage(page)
	if err != nil {
		return &FormatError{Path: f.path, What: "header_page", Offset: at, Msg: "cannot parse", Err: err}
	}
	f.headerPage = hp
	f.headerPageText = page
	return nil
}

func (f *file) parseV6(c *cursor) error {
	c.what = "v6 header"
	if err := c.literal("header_page"); err != nil {
		return err
	}
	n, err := c.u64("header_page size")
	if err != nil {
		return err
	}
	at := c.off
	page, err := c.bytes(n, maxTextBytes, "header_page")
	if err != nil {
		return err
	}
	if err := f.setHeaders(page, c, at); err != nil {
		return err
	}
	if err := c.literal("header_event"); err != nil {
		return err
	}
	if n, err = c.u64("header_event size"); err != nil {
		return err
	}
	if f.headerEventText, err = c.bytes(n, maxTextBytes, "header_event"); err != nil {
		return err
	}
	if err := f.formatList(c, "ftrace"); err != nil {
		return err
	}
	if err := f.eventSystems(c); err != nil {
		return err
	}
	n32, err := c.u32("kallsyms size")
	if err != nil {
		return err
	}
	if err := c.skip(uint64(n32), "kallsyms"); err != nil {
		return err
	}
	if n32, err = c.u32("printk formats size"); err != nil {
		return err
	}
	if err := c.skip(uint64(n32), "printk formats"); err != nil {
		return err
	}
	if n, err = c.u64("saved cmdlines size"); err != nil {
		return err
	}
	text, err := c.bytes(n, maxSectionBytes, "saved cmdlines")
	if err != nil {
		return err
	}
	f.cmdlines = tracefmt.ParseCmdlines(text)
	ncpu, err := c.u32("cpu count")
	if err != nil {
		return err
	}
	if ncpu > maxCPUs {
		return c.errf(c.off-4, "cpu count %d out of range", ncpu)
	}
	for {
		at := c.off
		tag := make([]byte, 10)
		if err := c.read(tag, "section tag (options, latency or flyrecord)"); err != nil {
			return err
		}
		switch string(tag) {
		case "options  \x00":
			c.what = "v6 options"
			if err := f.options(c, true); err != nil {
				return err
			}
		case "latency  \x00":
			f.latencyText = true
			return c.errf(at, "latency trace.dat (text of a latency tracer) is not supported; only flyrecord data is")
		case "flyrecord\x00":
			c.what = "v6 flyrecord cpu table"
			for i := 0; i < int(ncpu); i++ {
				off, err := c.u64("cpu data offset")
				if err != nil {
					return err
				}
				sz, err := c.u64("cpu data size")
				if err != nil {
					return err
				}
				if off > uint64(f.size) || sz > uint64(f.size)-off {
					return c.errf(c.off-16, "cpu %d data [%d, +%d) lies outside the %d-byte file", i, off, sz, f.size)
				}
				f.cpus = append(f.cpus, cpuData{cpu: i, offset: int64(off), size: int64(sz)})
			}
			return nil
		default:
			return c.errf(at, "expected \"options\", \"latency\" or \"flyrecord\" tag, got %q", tag)
		}
	}
}

// formatList reads "u32 count, count × (u64 size, text)".
func (f *file) formatList(c *cursor, system string) error {
	at := c.off
	count, err := c.u32(system + " format count")
	if err != nil {
		return err
	}
	if int64(count) > c.left()/8 {
		return c.errf(at, "%s format count %d needs more than the %d bytes left", system, count, c.left())
	}
	for i := uint32(0); i < count; i++ {
		n, err := c.u64(system + " format size")
		if err != nil {
			return err
		}
		at := c.off
		text, err := c.bytes(n, maxTextBytes, system+" format text")
		if err != nil {
			return err
		}
		f.formatTexts = append(f.formatTexts, formatText{system, string(text)})
		fm, err := tracefmt.ParseFormat(system, text)
		if err != nil {
			f.formatErrs = append(f.formatErrs, &FormatError{Path: f.path, What: c.what, Offset: c.base + at, Msg: system + " format", Err: err})
			continue
		}
		f.formats = append(f.formats, fm)
	}
	return nil
}

func (f *file) eventSystems(c *cursor) error {
	at := c.off
	nsys, err := c.u32("event system count")
	if err != nil {
		return err
	}
	if int64(nsys) > c.left()/5 {
		return c.errf(at, "event system count %d needs more than the %d bytes left", nsys, c.left())
	}
	for i := uint32(0); i < nsys; i++ {
		name, err := c.cstr("event system name", 256)
		if err != nil {
			return err
		}
		if err := f.formatList(c, name); err != nil {
			return err
		}
	}
	return nil
}

// options reads a list of {u16 id, u32 size, data}. In v6 id 0 ends the
// list; in v7 the DONE option carries the offset of the next options
// section, which is returned.
func (f *file) options(c *cursor, v6 bool) error {
	_, err := f.optionsNext(c, v6)
	return err
}

func (f *file) optionsNext(c *cursor, v6 bool) (next int64, err error) {
	for {
		id, err := c.u16("option id")
		if err != nil {
			return 0, err
		}
		if id == optDone && v6 {
			return 0, nil
		}
		sz, err := c.u32("option size")
		if err != nil {
			return 0, err
		}
		at := c.off
		data, err := c.bytes(uint64(sz), maxSectionBytes, fmt.Sprintf("option %d", id))
		if err != nil {
			return 0, err
		}
		oc := c.sub(data, c.base+at, fmt.Sprintf("option %d", id))
		switch id {
		case optDone:
			if len(data) < 8 {
				return 0, nil
			}
			return int64(f.order.Uint64(data)), nil
		case optDate, optOffset:
			v, perr := strconv.ParseInt(cstring(data), 0, 64)
			if perr != nil {
				return 0, oc.errf(0, "expected an integer time offset, got %q", cstring(data))
			}
			f.tsOffset += v
		case optCPUStat:
			f.cpuStats = append(f.cpuStats, cstring(data))
		case optTraceClock:
			f.clock = activeClock(cstring(data))
		case optUname:
			f.uname = cstring(data)
		case optVersion:
			f.tcVersion = cstring(data)
		case optCPUCount:
			if len(data) == 4 {
				f.cpuCount = int(f.order.Uint32(data))
			}
		case optTSC2NSec:
			if len(data) >= 16 {
				f.tscMult = f.order.Uint32(data)
				f.tscShift = f.order.Uint32(data[4:])
				f.tscOffset = f.order.Uint64(data[8:])
			}
		case optBuffer:
			if err := f.bufferOption(oc); err != nil {
				return 0, err
			}
		case optBufferText:
			f.latencyText = true
		case optHeaderInfo, optFtraceEvents, optEventFormats, optCmdlines:
			if len(data) < 8 {
				return 0, oc.errf(0, "expected a u64 section offset")
			}
			off := int64(f.order.Uint64(data))
			switch id {
			case optHeaderInfo:
				f.secHeader = off
			case optFtraceEvents:
				f.secFtrace = off
			case optEventFormats:
				f.secEvents = off
			case optCmdlines:
				f.secCmdlines = off
			}
		}
	}
}

// bufferOption reads a BUFFER option. Only the top instance (name "") is
// read as events; other instances are listed in the metadata.
func (f *file) bufferOption(c *cursor) error {
	secOff, err := c.u64("buffer offset")
	if err != nil {
		return err
	}
	name, err := c.cstr("buffer name", 4096)
	if err != nil {
		return err
	}
	if f.version < 7 || name != "" {
		f.instances = append(f.instances, name)
		return nil
	}
	clock, err := c.cstr("buffer clock", 4096)
	if err != nil {
		return err
	}
	if clock != "" {
		f.clock = clock
	}
	ps, err := c.u32("buffer page size")
	if err != nil {
		return err
	}
	if ps < 64 || ps > maxPageSize {
		return c.errf(c.off-4, "buffer page size %d out of range", ps)
	}
	f.pageSize = int(ps)
	n, err := c.u32("buffer cpu count")
	if err != nil {
		return err
	}
	if int64(n) > c.left()/20 || n > maxCPUs {
		return c.errf(c.off-4, "buffer cpu count %d does not fit the option", n)
	}
	// The section header at secOff says whether the CPU data is compressed.
	sc := &cursor{r: f.r, off: int64(secOff), end: f.size, order: f.order, path: f.path, what: "flyrecord section header"}
	if secOff > uint64(f.size) {
		return c.errf(0, "buffer section offset %d is past the end of the file", secOff)
	}
	id, flags, _, _, err := sectionHeader(sc)
	if err != nil {
		return err
	}
	if id != optBuffer {
		return sc.errf(int64(secOff), "expected a buffer section (id 3), got id %d", id)
	}
	f.cpus = f.cpus[:0]
	for i := uint32(0); i < n; i++ {
		cpu, err := c.u32("buffer cpu id")
		if err != nil {
			return err
		}
		off, err := c.u64("cpu data offset")
		if err != nil {
			return err
		}
		sz, err := c.u64("cpu data size")
		if err != nil {
			return err
		}
		if cpu >= maxCPUs {
			return c.errf(c.off-20, "cpu id %d out of range", cpu)
		}
		if off > uint64(f.size) || sz > uint64(f.size)-off {
			return c.errf(c.off-16, "cpu %d data [%d, +%d) lies outside the %d-byte file", cpu, off, sz, f.size)
		}
		f.cpus = append(f.cpus, cpuData{cpu: int(cpu), offset: int64(off), size: int64(sz), compressed: flags&1 != 0})
	}
	return nil
}

func sectionHeader(c *cursor) (id, flags uint16, strID uint32, size uint64, err error) {
	if id, err = c.u16("section id"); err != nil {
		return
	}
	if flags, err = c.u16("section flags"); err != nil {
		return
	}
	if strID, err = c.u32("section description"); err != nil {
		return
	}
	size, err = c.u64("section size")
	return
}

func (f *file) parseV7(c *cursor) error {
	c.what = "v7 header"
	var err error
	if f.compression, err = c.cstr("compression algorithm", 64); err != nil {
		return err
	}
	if f.compVersion, err = c.cstr("compression version", 64); err != nil {
		return err
	}
	switch f.compression {
	case "", "none", "zstd", "zlib":
	default:
		return c.errf(c.off, "compression %q is not supported (zstd, zlib and none are)", f.compression)
	}
	if f.compression == "zstd" {
		f.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(max(maxSectionBytes, maxChunkBytes))))
		if err != nil {
			return err
		}
	}
	next, err := c.u64("first options offset")
	if err != nil {
		return err
	}
	seen := map[uint64]bool{}
	for next != 0 {
		if seen[next] || len(seen) > maxSections {
			return c.errf(c.off, "options sections loop back to offset %d", next)
		}
		seen[next] = true
		body, base, err := f.section(int64(next), optDone, "options section")
		if err != nil {
			return err
		}
		oc := c.sub(body, base, "options section")
		n, err := f.optionsNext(oc, false)
		if err != nil {
			return err
		}
		next = uint64(n)
	}
	if f.secHeader == 0 {
		return c.errf(0, "no HEADER_INFO option: the header_page section cannot be found")
	}
	body, base, err := f.section(f.secHeader, optHeaderInfo, "header info section")
	if err != nil {
		return err
	}
	page, event, _, err := tracefmt.ParseHeaders(body, f.order)
	f.headerEventText = event
	if err != nil {
		return &FormatError{Path: f.path, What: "header info section", Offset: base, Msg: "cannot parse", Err: err}
	}
	if err := f.setHeaders(page, c, base); err != nil {
		return err
	}
	for _, s := range []struct {
		off    int64
		id     int
		system bool
	}{{f.secFtrace, optFtraceEvents, false}, {f.secEvents, optEventFormats, true}} {
		if s.off == 0 {
			continue
		}
		body, base, err := f.section(s.off, s.id, "formats section")
		if err != nil {
			return err
		}
		sc := c.sub(body, base, "formats section")
		if s.system {
			err = f.eventSystems(sc)
		} else {
			err = f.formatList(sc, "ftrace")
		}
		if err != nil {
			return err
		}
	}
	if f.secCmdlines != 0 {
		body, base, err := f.section(f.secCmdlines, optCmdlines, "cmdlines section")
		if err != nil {
			return err
		}
		sc := c.sub(body, base, "cmdlines section")
		n, err := sc.u64("saved cmdlines size")
		if err != nil {
			return err
		}
		text, err := sc.bytes(n, maxSectionBytes, "saved cmdlines")
		if err != nil {
			return err
		}
		f.cmdlines = tracefmt.ParseCmdlines(text)
	}
	if len(f.cpus) == 0 && f.latencyText {
		return c.errf(0, "latency trace.dat (text of a latency tracer) is not supported; only flyrecord data is")
	}
	return nil
}

// section reads the section at off, checks its id and returns its body,
// decompressed if flagged, with the file offset of the body.
func (f *file) section(off int64, wantID int, what string) ([]byte, int64, error) {
	c := &cursor{r: f.r, off: off, end: f.size, order: f.order, path: f.path, what: what}
	if off < 0 || off > f.size {
		return nil, 0, c.errf(off, "section offset past the end of the %d-byte file", f.size)
	}
	id, flags, _, size, err := sectionHeader(c)
	if err != nil {
		return nil, 0, err
	}
	if int(id) != wantID {
		return nil, 0, c.errf(off, "expected section id %d, got %d", wantID, id)
	}
	base := c.off
	if flags&1 == 0 {
		b, err := c.bytes(size, maxSectionBytes, what)
		return b, base, err
	}
	b, err := f.readCompressed(c, maxSectionBytes, what)
	return b, base, err
}

// readCompressed reads "u32 compressed size, u32 uncompressed size, bytes"
// and decompresses it.
func (f *file) readCompressed(c *cursor, limit int64, what string) ([]byte, error) {
	return f.readCompressedChecked(c, limit, what, nil)
}

// readCompressedChecked is readCompressed with a hook that may refuse the
// uncompressed size before anything is allocated.
func (f *file) readCompressedChecked(c *cursor, limit int64, what string, check func(usz int64) error) ([]byte, error) {
	at := c.off
	csz, err := c.u32(what + " compressed size")
	if err != nil {
		return nil, err
	}
	usz, err := c.u32(what + " uncompressed size")
	if err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(int64(usz)); err != nil {
			return nil, err
		}
	}
	if int64(usz) > limit {
		return nil, c.errf(at, "%s: uncompressed size %d exceeds the %d bytes accepted", what, usz, limit)
	}
	src, err := c.bytes(uint64(csz), limit, what+" compressed data")
	if err != nil {
		return nil, err
	}
	out, err := f.decompress(src, int(usz))
	if err != nil {
		return nil, &FormatError{Path: f.path, What: what, Offset: c.base + at, Msg: "decompressing " + f.compression, Err: err}
	}
	if len(out) != int(usz) {
		return nil, c.errf(at, "%s: decompressed to %d bytes, header says %d", what, len(out), usz)
	}
	return out, nil
}

func (f *file) decompress(src []byte, usize int) ([]byte, error) {
	// Stream into a buffer that starts small and stops one byte past the
	// announced size: neither a corrupt size nor a decompression bomb can
	// allocate more than the size that was accepted.
	var zr io.Reader
	switch f.compression {
	case "zstd":
		// One call into a buffer of the announced size (accepted by the
		// caller): no 32 KiB copy loop, no regrowth. The decoder's memory
		// limit bounds what a lying frame can make it allocate.
		// Start at the announced size unless that is far beyond what src
		// could plausibly hold (a corrupt header then costs no more than
		// the data grows to).
		out, err := f.zdec.DecodeAll(src, make([]byte, 0, min(usize, max(1<<20, 64*len(src)))))
		if err != nil {
			return nil, err
		}
		if len(out) > usize {
			out = out[:usize+1] // the caller reports the size mismatch
		}
		return out, nil
	case "zlib":
		r, err := zlib.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		zr = r
	default:
		return nil, fmt.Errorf("section is flagged compressed but the file's compression is %q", f.compression)
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(usize, 1<<20)))
	if _, err := io.Copy(buf, io.LimitReader(zr, int64(usize)+1)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// activeClock picks the bracketed entry of a trace_clock listing
// ("[local] global counter ...").
func activeClock(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}
