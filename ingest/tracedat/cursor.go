package tracedat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// FormatError reports malformed input at a byte offset of the file (or of
// a decompressed section, named in What).
type FormatError struct {
	Path   string
	What   string // structure being read, e.g. "options section", "cpu 3 page 12"
	Offset int64
	Msg    string
	Err    error
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s: %s at offset %d: %s", e.Path, e.What, e.Offset, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *FormatError) Unwrap() error { return e.Err }

// cursor reads numbers and strings from an io.ReaderAt at a moving offset.
// Every length read from the file is checked against what is left before
// anything is allocated, so a corrupt size costs an error, not memory.
type cursor struct {
	r     io.ReaderAt
	off   int64
	end   int64 // size of what r holds
	base  int64 // added to offsets in errors (section position in the file)
	order binary.ByteOrder
	path  string
	what  string
	buf   [8]byte
}

func (c *cursor) errf(at int64, format string, args ...any) error {
	return &FormatError{Path: c.path, What: c.what, Offset: c.base + at, Msg: fmt.Sprintf(format, args...)}
}

func (c *cursor) left() int64 { return c.end - c.off }

func (c *cursor) read(p []byte, what string) error {
	if int64(len(p)) > c.left() {
		return c.errf(c.off, "expected %s (%d bytes), only %d left", what, len(p), c.left())
	}
	if _, err := c.r.ReadAt(p, c.off); err != nil {
		return &FormatError{Path: c.path, What: c.what, Offset: c.base + c.off, Msg: "reading " + what, Err: err}
	}
	c.off += int64(len(p))
	return nil
}

func (c *cursor) u8(what string) (uint8, error) {
	err := c.read(c.buf[:1], what)
	return c.buf[0], err
}

func (c *cursor) u16(what string) (uint16, error) {
	err := c.read(c.buf[:2], what)
	return c.order.Uint16(c.buf[:]), err
}

func (c *cursor) u32(what string) (uint32, error) {
	err := c.read(c.buf[:4], what)
	return c.order.Uint32(c.buf[:]), err
}

func (c *cursor) u64(what string) (uint64, error) {
	err := c.read(c.buf[:8], what)
	return c.order.Uint64(c.buf[:]), err
}

// bytes reads n bytes; n must fit in what is left and under limit.
func (c *cursor) bytes(n uint64, limit int64, what string) ([]byte, error) {
	if n > uint64(c.left()) {
		return nil, c.errf(c.off, "%s of %d bytes runs past the end (%d bytes left)", what, n, c.left())
	}
	if int64(n) > limit {
		return nil, c.errf(c.off, "%s of %d bytes is larger than the %d bytes accepted", what, n, limit)
	}
	b := make([]byte, n)
	return b, c.read(b, what)
}

func (c *cursor) skip(n uint64, what string) error {
	if n > uint64(c.left()) {
		return c.errf(c.off, "%s of %d bytes runs past the end (%d bytes left)", what, n, c.left())
	}
	c.off += int64(n)
	return nil
}

// cstr reads a NUL-terminated string of at most maxLen bytes.
func (c *cursor) cstr(what string, maxLen int) (string, error) {
	n := int64(maxLen + 1)
	if n > c.left() {
		n = c.left()
	}
	b := make([]byte, n)
	if _, err := c.r.ReadAt(b, c.off); err != nil && err != io.EOF {
		return "", &FormatError{Path: c.path, What: c.what, Offset: c.base + c.off, Msg: "reading " + what, Err: err}
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", c.errf(c.off, "expected %s: a NUL-terminated string of at most %d bytes", what, maxLen)
	}
	c.off += int64(i) + 1
	return string(b[:i]), nil
}

// literal expects the NUL-terminated string lit.
func (c *cursor) literal(lit string) error {
	at := c.off
	s, err := c.cstr(fmt.Sprintf("%q", lit), len(lit))
	if err != nil || s != lit {
		return c.errf(at, "expected %q", lit)
	}
	return nil
}

// sub returns a cursor over a byte slice (a decompressed section) whose
// error offsets are reported relative to base and named what.
func (c *cursor) sub(b []byte, base int64, what string) *cursor {
	return &cursor{r: bytes.NewReader(b), end: int64(len(b)), base: base, order: c.order, path: c.path, what: what}
}
