package tracefmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// Magic starts the tracing-data blob and every trace-cmd trace.dat file.
var Magic = []byte{0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'}

// TracingData is the decoded tracing-data blob: perf's HEADER_TRACING_DATA
// feature (pipe record 66) and the first part of a trace-cmd v6 file.
// Byte slices alias the blob passed to ParseTracingData.
type TracingData struct {
	Version     string           // "0.5", "0.6" (perf) or "6" (trace-cmd)
	ByteOrder   binary.ByteOrder // of the traced kernel's numbers (blob and raw records)
	LongSize    int              // userspace long of the recorder; the kernel's is in HeaderPage
	PageSize    int
	HeaderPage  []byte
	HeaderEvent []byte
	Formats     []*Format // ftrace-internal ones (System "ftrace") first, then every event system
	Kallsyms    []byte
	Printk      []byte
	Cmdlines    map[int]string // from saved cmdlines (version >= 0.6), may be empty
	Size        int            // bytes consumed

	// FormatErrors lists format texts that could not be parsed. They are
	// skipped rather than failing the whole blob: a trace stays usable when
	// some unrelated event (of hundreds) has an odd description.
	FormatErrors []error

	byID map[int]*Format
}

// ByID returns the format whose ID is id (perf attr.config, common_type).
func (t *TracingData) ByID(id int) *Format {
	if t == nil {
		return nil
	}
	return t.byID[id]
}

// ByName returns the format system/name, or nil.
func (t *TracingData) ByName(system, name string) *Format {
	if t == nil {
		return nil
	}
	for _, f := range t.Formats {
		if f.Name == name && (system == "" || f.System == system) {
			return f
		}
	}
	return nil
}

// HeaderPageFormat parses HeaderPage; its "commit" field size is the
// kernel's word size, which the ring-buffer page decoder needs.
func (t *TracingData) HeaderPageFormat() (*Format, error) {
	return ParseHeaderPage(t.HeaderPage)
}

// OffsetError reports malformed binary data at Offset bytes into the
// buffer that was parsed; readers add the buffer's own file offset.
type OffsetError struct {
	What   string // which structure, e.g. "tracing data"
	Offset int
	Msg    string // what was expected
	Err    error  // underlying error, if any
}

func (e *OffsetError) Error() string {
	s := e.What + ": offset " + strconv.Itoa(e.Offset) + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *OffsetError) Unwrap() error { return e.Err }

// cursor reads the blob; every read is bounds-checked and sizes read from
// the blob are checked against what remains before anything is sliced or
// allocated.
type cursor struct {
	b     []byte
	off   int
	order binary.ByteOrder
	what  string
}

func (c *cursor) errf(at int, format string, args ...any) error {
	return &OffsetError{What: c.what, Offset: at, Msg: fmt.Sprintf(format, args...)}
}

func (c *cursor) left() int { return len(c.b) - c.off }

func (c *cursor) need(n int, what string) error {
	if n < 0 || n > c.left() {
		return c.errf(c.off, "expected %s (%d bytes), only %d left", what, n, c.left())
	}
	return nil
}

func (c *cursor) u8(what string) (uint8, error) {
	if err := c.need(1, what); err != nil {
		return 0, err
	}
	v := c.b[c.off]
	c.off++
	return v, nil
}

func (c *cursor) u32(what string) (uint32, error) {
	if err := c.need(4, what); err != nil {
		return 0, err
	}
	v := c.order.Uint32(c.b[c.off:])
	c.off += 4
	return v, nil
}

func (c *cursor) u64(what string) (uint64, error) {
	if err := c.need(8, what); err != nil {
		return 0, err
	}
	v := c.order.Uint64(c.b[c.off:])
	c.off += 8
	return v, nil
}

// bytes returns the next n bytes; n comes from the blob and is checked
// against the remaining length, so it never drives an allocation.
func (c *cursor) bytes(n uint64, what string) ([]byte, error) {
	if n > uint64(c.left()) {
		return nil, c.errf(c.off, "%s of %d bytes runs past the end (%d bytes left)", what, n, c.left())
	}
	v := c.b[c.off : c.off+int(n) : c.off+int(n)]
	c.off += int(n)
	return v, nil
}

// cstr reads a NUL-terminated string of at most maxLen bytes.
func (c *cursor) cstr(what string, maxLen int) (string, error) {
	rest := c.b[c.off:]
	if len(rest) > maxLen+1 {
		rest = rest[:maxLen+1]
	}
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", c.errf(c.off, "expected %s: NUL-terminated string of at most %d bytes", what, maxLen)
	}
	s := string(rest[:i])
	c.off += i + 1
	return s, nil
}

func (c *cursor) literal(lit string) error {
	if c.left() < len(lit)+1 || string(c.b[c.off:c.off+len(lit)]) != lit || c.b[c.off+len(lit)] != 0 {
		return c.errf(c.off, "expected %q", lit)
	}
	c.off += len(lit) + 1
	return nil
}

// ParseTracingData decodes a tracing-data blob that starts with Magic.
// Trailing bytes after the blob (perf pads it to 8 bytes; a trace.dat
// continues with CPU data) are left alone; Size says where it ended.
// Sizes and counts in the blob are checked against its length before use,
// so a corrupt blob costs no more memory than its own size.
func ParseTracingData(blob []byte) (*TracingData, error) {
	c := &cursor{b: blob, order: binary.LittleEndian, what: "tracing data"}
	if !bytes.HasPrefix(blob, Magic) {
		return nil, c.errf(0, "expected magic 17 08 44 \"tracing\"")
	}
	c.off = len(Magic)
	t := &TracingData{}
	var err error
	verAt := c.off
	if t.Version, err = c.cstr("version", 16); err != nil {
		return nil, err
	}
	ver, perr := strconv.ParseFloat(t.Version, 64)
	if perr != nil || ver < 0 {
		return nil, c.errf(verAt, "expected a numeric version, got %q", t.Version)
	}
	if ver >= 7 {
		return nil, c.errf(verAt, "version %s uses the sectioned layout; parse its sections with ParseHeaders/ParseFtraceFormats/ParseEventFormats", t.Version)
	}
	endian, err := c.u8("endianness byte")
	if err != nil {
		return nil, err
	}
	switch endian {
	case 0:
		t.ByteOrder = binary.LittleEndian
	case 1:
		t.ByteOrder = binary.BigEndian
	default:
		return nil, c.errf(c.off-1, "expected endianness 0 (little) or 1 (big), got %d", endian)
	}
	c.order = t.ByteOrder
	ls, err := c.u8("long size")
	if err != nil {
		return nil, err
	}
	if ls != 4 && ls != 8 {
		return nil, c.errf(c.off-1, "expected long size 4 or 8, got %d", ls)
	}
	t.LongSize = int(ls)
	ps, err := c.u32("page size")
	if err != nil {
		return nil, err
	}
	if ps == 0 || ps > 1<<24 {
		return nil, c.errf(c.off-4, "expected a page size between 1 and 16 MiB, got %d", ps)
	}
	t.PageSize = int(ps)

	if t.HeaderPage, t.HeaderEvent, err = c.headers(); err != nil {
		return nil, err
	}
	ftrace, ferrs, err := c.formatList("ftrace")
	if err != nil {
		return nil, err
	}
	t.Formats = append(t.Formats, ftrace...)
	t.FormatErrors = append(t.FormatErrors, ferrs...)
	events, ferrs, err := c.eventSystems()
	if err != nil {
		return nil, err
	}
	t.Formats = append(t.Formats, events...)
	t.FormatErrors = append(t.FormatErrors, ferrs...)

	n, err := c.u32("kallsyms size")
	if err != nil {
		return nil, err
	}
	if t.Kallsyms, err = c.bytes(uint64(n), "kallsyms"); err != nil {
		return nil, err
	}
	if n, err = c.u32("printk formats size"); err != nil {
		return nil, err
	}
	if t.Printk, err = c.bytes(uint64(n), "printk formats"); err != nil {
		return nil, err
	}
	// Saved cmdlines exist from version 0.6 on (perf and trace-cmd both
	// compare the version as a number). A blob that ends right here is
	// accepted too: some writers stopped after printk.
	if ver >= 0.6 && c.left() > 0 {
		n64, err := c.u64("saved cmdlines size")
		if err != nil {
			return nil, err
		}
		text, err := c.bytes(n64, "saved cmdlines")
		if err != nil {
			return nil, err
		}
		t.Cmdlines = ParseCmdlines(text)
	}
	if t.Cmdlines == nil {
		t.Cmdlines = map[int]string{}
	}
	t.Size = c.off
	t.byID = make(map[int]*Format, len(t.Formats))
	for _, f := range t.Formats {
		if _, dup := t.byID[f.ID]; !dup {
			t.byID[f.ID] = f
		}
	}
	return t, nil
}

func (c *cursor) headers() (page, event []byte, err error) {
	if err = c.literal("header_page"); err != nil {
		return nil, nil, err
	}
	n, err := c.u64("header_page size")
	if err != nil {
		return nil, nil, err
	}
	if page, err = c.bytes(n, "header_page"); err != nil {
		return nil, nil, err
	}
	if err = c.literal("header_event"); err != nil {
		return nil, nil, err
	}
	if n, err = c.u64("header_event size"); err != nil {
		return nil, nil, err
	}
	if event, err = c.bytes(n, "header_event"); err != nil {
		return nil, nil, err
	}
	return page, event, nil
}

// formatList reads "u32 count, count × (u64 size, text)".
func (c *cursor) formatList(system string) ([]*Format, []error, error) {
	at := c.off
	count, err := c.u32(system + " format count")
	if err != nil {
		return nil, nil, err
	}
	// Each entry needs at least its 8-byte size: reject counts the rest
	// of the blob cannot hold before looping on them.
	if uint64(count) > uint64(c.left()/8) {
		return nil, nil, c.errf(at, "%s format count %d needs more than the %d bytes left", system, count, c.left())
	}
	var fmts []*Format
	var errs []error
	for i := uint32(0); i < count; i++ {
		n, err := c.u64(system + " format size")
		if err != nil {
			return nil, nil, err
		}
		textAt := c.off
		text, err := c.bytes(n, system+" format text")
		if err != nil {
			return nil, nil, err
		}
		f, err := ParseFormat(system, text)
		if err != nil {
			errs = append(errs, &OffsetError{What: c.what, Offset: textAt, Msg: fmt.Sprintf("%s format %d", system, i), Err: err})
			continue
		}
		fmts = append(fmts, f)
	}
	return fmts, errs, nil
}

// eventSystems reads "u32 nr_systems, per system: cstr name, format list".
func (c *cursor) eventSystems() ([]*Format, []error, error) {
	at := c.off
	nsys, err := c.u32("event system count")
	if err != nil {
		return nil, nil, err
	}
	// A system needs at least a 1-byte name and a 4-byte count.
	if uint64(nsys) > uint64(c.left()/5) {
		return nil, nil, c.errf(at, "event system count %d needs more than the %d bytes left", nsys, c.left())
	}
	var fmts []*Format
	var errs []error
	for i := uint32(0); i < nsys; i++ {
		name, err := c.cstr("event system name", 256)
		if err != nil {
			return nil, nil, err
		}
		f, e, err := c.formatList(name)
		if err != nil {
			return nil, nil, err
		}
		fmts = append(fmts, f...)
		errs = append(errs, e...)
	}
	return fmts, errs, nil
}

// ParseHeaders decodes the header part of the blob as stored on its own in
// a trace.dat v7 header-info section: "header_page\0", u64 size, text,
// "header_event\0", u64 size, text. n is the number of bytes consumed.
func ParseHeaders(b []byte, order binary.ByteOrder) (headerPage, headerEvent []byte, n int, err error) {
	c := &cursor{b: b, order: order, what: "header info"}
	if headerPage, headerEvent, err = c.headers(); err != nil {
		return nil, nil, 0, err
	}
	return headerPage, headerEvent, c.off, nil
}

// ParseFtraceFormats decodes a list of ftrace-internal formats, "u32 count,
// count × (u64 size, text)" (trace.dat v7 FTRACE_EVENTS section). Formats
// that do not parse are reported in fmtErrs and skipped.
func ParseFtraceFormats(b []byte, order binary.ByteOrder) (fmts []*Format, fmtErrs []error, n int, err error) {
	c := &cursor{b: b, order: order, what: "ftrace formats"}
	if fmts, fmtErrs, err = c.formatList("ftrace"); err != nil {
		return nil, nil, 0, err
	}
	return fmts, fmtErrs, c.off, nil
}

// ParseEventFormats decodes the event systems list, "u32 nr_systems, per
// system: cstr name, u32 count, count × (u64 size, text)" (trace.dat v7
// EVENT_FORMATS section).
func ParseEventFormats(b []byte, order binary.ByteOrder) (fmts []*Format, fmtErrs []error, n int, err error) {
	c := &cursor{b: b, order: order, what: "event formats"}
	if fmts, fmtErrs, err = c.eventSystems(); err != nil {
		return nil, nil, 0, err
	}
	return fmts, fmtErrs, c.off, nil
}

// ParseCmdlines reads saved_cmdlines text, "<pid> <comm>\n" per line.
// Malformed lines are skipped: the table only seeds pid→comm names.
func ParseCmdlines(text []byte) map[int]string {
	m := map[int]string{}
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		sp := bytes.IndexByte(line, ' ')
		if sp <= 0 {
			continue
		}
		pid, err := strconv.Atoi(string(line[:sp]))
		if err != nil {
			continue
		}
		m[pid] = string(bytes.TrimRight(line[sp+1:], "\r"))
	}
	return m
}
