package perfdata

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
)

// FormatError reports input that is not a valid perf.data file: it names
// the file, the byte offset of the offending structure and what was
// expected there, so a corrupt or truncated file can be diagnosed with a
// hex dump.
type FormatError struct {
	File   string
	Offset int64
	// Where qualifies Offset when it is not a plain file offset, e.g.
	// "zstd stream byte 0x1f0" for records inside COMPRESSED records.
	Where string
	Msg   string
	Err   error
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s: offset %#x", e.File, e.Offset)
	if e.Where != "" {
		s += " (" + e.Where + ")"
	}
	s += ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// byteOrder reads integers in the file's byte order. It is a small value
// type rather than binary.ByteOrder so the hot paths inline.
type byteOrder struct{ big bool }

func (o byteOrder) u16(b []byte) uint16 {
	v := binary.LittleEndian.Uint16(b)
	if o.big {
		v = bits.ReverseBytes16(v)
	}
	return v
}

func (o byteOrder) u32(b []byte) uint32 {
	v := binary.LittleEndian.Uint32(b)
	if o.big {
		v = bits.ReverseBytes32(v)
	}
	return v
}

func (o byteOrder) u64(b []byte) uint64 {
	v := binary.LittleEndian.Uint64(b)
	if o.big {
		v = bits.ReverseBytes64(v)
	}
	return v
}

// cursor walks a byte slice taken from the file (a feature section, an attr,
// a record body). Every read is bounds-checked; the first failure sticks and
// is reported with the file offset it happened at.
type cursor struct {
	b    []byte
	off  int   // next byte in b
	base int64 // file offset of b[0]
	ord  byteOrder
	what string // what is being parsed, for errors
	err  *cursorErr
}

type cursorErr struct {
	at  int64
	msg string
}

func newCursor(b []byte, base int64, ord byteOrder, what string) *cursor {
	return &cursor{b: b, base: base, ord: ord, what: what}
}

func (c *cursor) left() int { return len(c.b) - c.off }

func (c *cursor) fail(msg string, args ...any) {
	if c.err == nil {
		c.err = &cursorErr{at: c.base + int64(c.off), msg: c.what + ": " + fmt.Sprintf(msg, args...)}
	}
}

func (c *cursor) need(n int, what string) bool {
	if c.err != nil {
		return false
	}
	if n < 0 || n > c.left() {
		c.fail("%s needs %d bytes, only %d left", what, n, c.left())
		return false
	}
	return true
}

func (c *cursor) u32(what string) uint32 {
	if !c.need(4, what) {
		return 0
	}
	v := c.ord.u32(c.b[c.off:])
	c.off += 4
	return v
}

func (c *cursor) u64(what string) uint64 {
	if !c.need(8, what) {
		return 0
	}
	v := c.ord.u64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *cursor) bytes(n uint64, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n > uint64(c.left()) {
		c.fail("%s of %d bytes runs past the end (%d left)", what, n, c.left())
		return nil
	}
	b := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return b
}

// str reads a perf string: u32 length, then that many bytes holding a
// NUL-terminated, NUL-padded string.
func (c *cursor) str(what string) string {
	n := c.u32(what + " length")
	b := c.bytes(uint64(n), what)
	return cstring(b)
}

// strList reads a perf string list: u32 count, then count perf strings.
// The count is checked against the bytes left (each string needs at least
// its 4-byte length) before anything is allocated.
func (c *cursor) strList(what string) []string {
	n := c.u32(what + " count")
	if c.err != nil {
		return nil
	}
	if uint64(n)*4 > uint64(c.left()) {
		c.fail("%s count %d cannot fit in the %d bytes left", what, n, c.left())
		return nil
	}
	out := make([]string, 0, n)
	for i := uint32(0); i < n && c.err == nil; i++ {
		out = append(out, c.str(what))
	}
	return out
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
