package tracefmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// FieldKind tells how a field's bytes are laid out in a record.
type FieldKind uint8

const (
	// Scalar is a plain integer (or pointer, bool, enum) of Size bytes.
	Scalar FieldKind = iota
	// FixedString is "char name[N]": a NUL-padded string inside Size bytes.
	FixedString
	// DataLoc is "__data_loc T[] name": a u32 whose low 16 bits are the
	// payload offset from the record start and high 16 bits its length.
	DataLoc
	// RelLoc is "__rel_loc T[] name": like DataLoc, but the offset counts
	// from the end of the 4-byte descriptor.
	RelLoc
	// Array is any other "T name[N]".
	Array
)

func (k FieldKind) String() string {
	switch k {
	case Scalar:
		return "scalar"
	case FixedString:
		return "string"
	case DataLoc:
		return "__data_loc"
	case RelLoc:
		return "__rel_loc"
	case Array:
		return "array"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Field is one "field:" line of a format description.
type Field struct {
	Name   string
	Type   string // C type without the name, e.g. "unsigned short", "char[16]", "__data_loc char[]"
	Offset int
	Size   int // bytes in the record; 0 marks a trailing variable-length field that runs to the end of the record
	Signed bool
	Kind   FieldKind
	Common bool // one of the common_* header fields

	// ElemType is the element type of FixedString, Array, DataLoc and
	// RelLoc fields ("char", "u8", "unsigned long"); empty for scalars.
	ElemType string
	// ElemSize is the size of one Array element when the declared count
	// divides Size, else 0. The declared count is not trusted beyond that:
	// some vendor kernels declare char[32] with size 16.
	ElemSize int
}

// Format is one parsed format description (events/<system>/<name>/format).
type Format struct {
	System   string // e.g. "sched"; may be "" if unknown
	Name     string // e.g. "sched_switch"
	ID       int
	Fields   []Field // common fields first, in file order
	PrintFmt string  // the text after "print fmt: ", possibly several lines

	byName  map[string]int
	minSize int
}

// Field returns the field called name, or nil. The pointer stays valid as
// long as f is alive; readers look fields up once and keep the pointer.
func (f *Format) Field(name string) *Field {
	if f == nil {
		return nil
	}
	if f.byName != nil {
		if i, ok := f.byName[name]; ok {
			return &f.Fields[i]
		}
		return nil
	}
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// MinSize is the number of bytes a record needs to hold every fixed part
// (scalars, fixed arrays and the 4-byte descriptors of dynamic arrays).
func (f *Format) MinSize() int {
	if f == nil {
		return 0
	}
	return f.minSize
}

// LineError reports a malformed format description.
type LineError struct {
	System, Name string // as far as known when the error happened
	Line         int    // 1-based
	Msg          string // what was expected
}

func (e *LineError) Error() string {
	var b strings.Builder
	b.WriteString("format")
	if e.System != "" || e.Name != "" {
		b.WriteString(" ")
		if e.System != "" {
			b.WriteString(e.System)
			b.WriteString("/")
		}
		b.WriteString(e.Name)
	}
	fmt.Fprintf(&b, ": line %d: %s", e.Line, e.Msg)
	return b.String()
}

// maxFieldBytes bounds offsets and sizes: a record never exceeds a ring
// buffer sub-buffer or a perf sample (64 KiB), so anything near this limit
// is corrupt, and keeping it small rules out integer overflow later.
const maxFieldBytes = 1 << 24

// ParseFormat parses one format description. system is recorded as given
// (the text itself does not name its system).
//
// The parser is tolerant where real kernels differ: any number of common
// fields, a missing "signed:" (very old kernels; signedness is then guessed
// from the type), array counts that disagree with size or are macro names,
// and unknown "key: value" header lines. It rejects text whose field lines
// cannot be read, because guessing offsets would decode garbage.
func ParseFormat(system string, text []byte) (*Format, error) {
	f := &Format{System: system, ID: -1}
	s := string(text)
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	lineNo := 0
	inFields := false // after "format:" or the first field line
	firstBlock := true
	haveID := false
	for len(s) > 0 {
		var line string
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			line, s = s, ""
		}
		lineNo++
		line = strings.TrimSuffix(line, "\r")
		t := strings.TrimSpace(line)
		lerr := func(msg string) error {
			return &LineError{System: f.System, Name: f.Name, Line: lineNo, Msg: msg}
		}
		switch {
		case t == "":
			if inFields && len(f.Fields) > 0 {
				firstBlock = false
			}
		case strings.HasPrefix(t, "print fmt:"):
			rest := strings.TrimPrefix(t, "print fmt:")
			if len(s) > 0 {
				// The print fmt may span lines; keep them verbatim.
				rest += "\n" + s
				s = ""
			}
			f.PrintFmt = strings.TrimRight(strings.TrimLeft(rest, " \t"), " \t\r\n")
		case isFieldLine(t):
			fl, msg := parseFieldLine(t)
			if msg != "" {
				return nil, lerr(msg)
			}
			inFields = true
			fl.Common = firstBlock && strings.HasPrefix(fl.Name, "common_")
			f.Fields = append(f.Fields, fl)
		case inFields:
			return nil, lerr("expected a field: line, an empty line or print fmt:")
		case strings.HasPrefix(t, "name:"):
			f.Name = strings.TrimSpace(t[len("name:"):])
			if f.Name == "" {
				return nil, lerr("expected an event name after name:")
			}
		case strings.HasPrefix(t, "ID:"):
			v := strings.TrimSpace(t[len("ID:"):])
			id, err := strconv.ParseUint(v, 10, 31)
			if err != nil {
				return nil, lerr(fmt.Sprintf("expected a decimal event ID, got %q", v))
			}
			f.ID, haveID = int(id), true
		case t == "format:":
			inFields = true
		case strings.IndexByte(t, ':') > 0:
			// Unknown header item; later kernels may add some.
		default:
			return nil, lerr(fmt.Sprintf("expected name:, ID:, format: or field:, got %q", clip(t)))
		}
	}
	if f.Name == "" {
		return nil, &LineError{System: system, Line: 1, Msg: "expected name:"}
	}
	if !haveID {
		return nil, &LineError{System: system, Name: f.Name, Line: lineNo, Msg: "expected ID:"}
	}
	f.index()
	return f, nil
}

// ParseHeaderPage parses the header_page text (ring-buffer page header:
// "field: u64 timestamp; offset:0; size:8; signed:0;" …). The result has no
// name or ID; its "commit" field size is the kernel's word size.
func ParseHeaderPage(text []byte) (*Format, error) {
	f := &Format{System: "ftrace", Name: "header_page", ID: -1}
	s := string(text)
	lineNo := 0
	for len(s) > 0 {
		var line string
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			line, s = s, ""
		}
		lineNo++
		t := strings.TrimSpace(line)
		if !isFieldLine(t) {
			continue // the kernel adds nothing else, but comments would be harmless
		}
		fl, msg := parseFieldLine(t)
		if msg != "" {
			return nil, &LineError{System: f.System, Name: f.Name, Line: lineNo, Msg: msg}
		}
		f.Fields = append(f.Fields, fl)
	}
	if len(f.Fields) == 0 {
		return nil, &LineError{System: f.System, Name: f.Name, Line: lineNo, Msg: "expected field: lines"}
	}
	f.index()
	return f, nil
}

func (f *Format) index() {
	f.byName = make(map[string]int, len(f.Fields))
	f.minSize = 0
	for i := range f.Fields {
		fl := &f.Fields[i]
		if _, dup := f.byName[fl.Name]; !dup {
			f.byName[fl.Name] = i
		}
		if end := fl.Offset + fl.Size; end > f.minSize {
			f.minSize = end
		}
	}
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// isFieldLine accepts "field:…", "field :…" and the old "field special:…".
func isFieldLine(t string) bool {
	if !strings.HasPrefix(t, "field") {
		return false
	}
	r := t[len("field"):]
	return len(r) > 0 && (r[0] == ':' || r[0] == ' ' || r[0] == '\t')
}

// parseFieldLine reads "field:DECL; offset:N; size:N; signed:N;" and
// returns a non-empty message saying what was expected when it cannot.
func parseFieldLine(t string) (Field, string) {
	var fl Field
	rest := t[len("field"):]
	colon := strings.IndexByte(rest, ':')
	if colon < 0 {
		return fl, "expected ':' after field"
	}
	rest = rest[colon+1:]
	semi := strings.IndexByte(rest, ';')
	if semi < 0 {
		return fl, "expected ';' after the field declaration"
	}
	decl := strings.TrimSpace(rest[:semi])
	if strings.Contains(decl, "offset:") || strings.Contains(decl, "size:") {
		return fl, "expected ';' after the field declaration"
	}
	if msg := parseDecl(decl, &fl); msg != "" {
		return fl, msg
	}
	haveOff, haveSize, haveSigned := false, false, false
	for _, item := range strings.Split(rest[semi+1:], ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, ":")
		if !ok {
			return fl, fmt.Sprintf("expected key:value after the declaration, got %q", clip(item))
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "offset", "size":
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil || n > maxFieldBytes {
				return fl, fmt.Sprintf("expected %s:N with 0 <= N <= %d, got %q", key, maxFieldBytes, clip(val))
			}
			if key == "offset" {
				fl.Offset, haveOff = int(n), true
			} else {
				fl.Size, haveSize = int(n), true
			}
		case "signed":
			n, err := strconv.ParseInt(val, 10, 8)
			if err != nil {
				return fl, fmt.Sprintf("expected signed:0 or signed:1, got %q", clip(val))
			}
			fl.Signed, haveSigned = n != 0, true
		default:
			// Unknown attribute: ignore, it cannot change the layout we know.
		}
	}
	if !haveOff {
		return fl, "expected offset:N"
	}
	if !haveSize {
		return fl, "expected size:N"
	}
	if !haveSigned {
		fl.Signed = guessSigned(fl.Type, fl.Kind)
	}
	if fl.Kind == Array && fl.ElemSize == 0 {
		if n, ok := arrayCount(fl.Type); ok && n > 0 && fl.Size%n == 0 {
			fl.ElemSize = fl.Size / n
		}
	}
	return fl, ""
}

// parseDecl splits a C declaration into name, type and kind.
func parseDecl(decl string, fl *Field) string {
	if decl == "" {
		return "expected a field declaration"
	}
	head, bracket := decl, ""
	if strings.HasSuffix(decl, "]") {
		open := strings.LastIndexByte(decl, '[')
		if open < 0 {
			return "expected '[' matching the ']' of the declaration"
		}
		head, bracket = strings.TrimSpace(decl[:open]), strings.TrimSpace(decl[open+1:len(decl)-1])
	}
	// The name is the trailing identifier of head.
	i := len(head)
	for i > 0 && isIdentByte(head[i-1]) {
		i--
	}
	name := head[i:]
	typ := strings.TrimSpace(head[:i])
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return fmt.Sprintf("expected a field name in %q", clip(decl))
	}
	if typ == "" {
		return fmt.Sprintf("expected a type before the field name in %q", clip(decl))
	}
	fl.Name = name
	switch {
	case strings.HasPrefix(typ, "__data_loc") || strings.HasPrefix(typ, "__rel_loc"):
		// "__data_loc char[] name": the brackets belong to the type.
		fl.Kind = DataLoc
		kw := "__data_loc"
		if strings.HasPrefix(typ, "__rel_loc") {
			fl.Kind, kw = RelLoc, "__rel_loc"
		}
		elem := strings.TrimSpace(typ[len(kw):])
		elem = strings.TrimSpace(strings.TrimSuffix(elem, "[]"))
		fl.ElemType = elem
		fl.Type = typ
		if bracket != "" || strings.HasSuffix(decl, "]") {
			// Declared as "__data_loc char name[]": same thing.
			fl.Type = kw + " " + elem + "[]"
		}
	case strings.HasSuffix(decl, "]"):
		fl.ElemType = typ
		fl.Type = typ + "[" + bracket + "]"
		if isCharType(typ) {
			fl.Kind = FixedString
		} else {
			fl.Kind = Array
		}
	default:
		fl.Kind = Scalar
		fl.Type = typ
	}
	return ""
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isCharType tells whether an element type holds text (comm, filenames):
// only plain char, the type the kernel's __array(char, …) and __string use.
func isCharType(t string) bool {
	t = strings.TrimPrefix(t, "const ")
	return t == "char" || t == "signed char"
}

// arrayCount evaluates the N of "T[N]", which may be an expression such as
// "30+1" or a macro name on very old kernels (then ok is false).
func arrayCount(typ string) (int, bool) {
	open := strings.LastIndexByte(typ, '[')
	if open < 0 || !strings.HasSuffix(typ, "]") {
		return 0, false
	}
	v, err := evalConst(typ[open+1 : len(typ)-1])
	if err != nil || v > maxFieldBytes {
		return 0, false
	}
	return int(v), true
}

// guessSigned decides signedness when "signed:" is missing (kernels before
// 2.6.33). Unsigned spellings and pointers are unsigned; the remaining
// plain C integer types and the kernel's sN/pid_t style typedefs are signed.
func guessSigned(typ string, kind FieldKind) bool {
	if kind != Scalar {
		return false
	}
	t := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(typ, "const "), "volatile "))
	if strings.Contains(t, "*") || strings.Contains(t, "unsigned") {
		return false
	}
	switch t {
	case "char", "signed char", "short", "int", "long", "long long", "signed", "signed int",
		"short int", "long int", "long long int", "s8", "s16", "s32", "s64",
		"__s8", "__s16", "__s32", "__s64", "pid_t", "ssize_t", "loff_t", "time_t", "clockid_t", "local_t":
		return true
	}
	return false
}

// Uint decodes a scalar field. ok is false when the field is not a scalar
// of 1, 2, 4 or 8 bytes or the record is too short.
func (fl *Field) Uint(rec []byte, order binary.ByteOrder) (v uint64, ok bool) {
	if fl.Kind != Scalar || fl.Offset < 0 || fl.Size > len(rec)-fl.Offset {
		return 0, false
	}
	b := rec[fl.Offset:]
	switch fl.Size {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(order.Uint16(b)), true
	case 4:
		return uint64(order.Uint32(b)), true
	case 8:
		return order.Uint64(b), true
	}
	return 0, false
}

// Int decodes a scalar field, sign-extending it when the field is signed
// (a 4-byte "long prev_state" of a 32-bit kernel becomes a proper int64).
func (fl *Field) Int(rec []byte, order binary.ByteOrder) (v int64, ok bool) {
	u, ok := fl.Uint(rec, order)
	if !ok {
		return 0, false
	}
	return fl.extend(u), true
}

// IntLE is Int for a little-endian record, without the byte-order
// interface call per field (a reader decodes millions of them).
func (fl *Field) IntLE(rec []byte) (v int64, ok bool) {
	if fl.Kind != Scalar || fl.Offset < 0 || fl.Size > len(rec)-fl.Offset {
		return 0, false
	}
	b := rec[fl.Offset:]
	var u uint64
	switch fl.Size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
	case 8:
		u = binary.LittleEndian.Uint64(b)
	default:
		return 0, false
	}
	return fl.extend(u), true
}

// extend sign-extends a signed field's value of fl.Size bytes.
func (fl *Field) extend(u uint64) int64 {
	if !fl.Signed {
		return int64(u)
	}
	switch fl.Size {
	case 1:
		return int64(int8(u))
	case 2:
		return int64(int16(u))
	case 4:
		return int64(int32(u))
	}
	return int64(u)
}

// Bytes returns the payload of a string or array field as a sub-slice of
// rec (no copy, capacity clipped so appending cannot overwrite rec):
//   - char[N] and __data_loc/__rel_loc char[]: the text up to the first NUL;
//   - other arrays, dynamic arrays and scalars: the raw bytes;
//   - a Size-0 trailing field (old "char buf;" of ftrace print): the rest
//     of the record.
//
// ok is false when the record is too short or a descriptor points outside it.
func (fl *Field) Bytes(rec []byte, order binary.ByteOrder) (b []byte, ok bool) {
	off, size := fl.Offset, fl.Size
	if off < 0 || off > len(rec) {
		return nil, false
	}
	switch fl.Kind {
	case DataLoc, RelLoc:
		if size < 4 || len(rec)-off < 4 {
			return nil, false
		}
		v := order.Uint32(rec[off:])
		start, n := int(v&0xffff), int(v>>16)
		if fl.Kind == RelLoc {
			start += off + size
		}
		if start > len(rec) || n > len(rec)-start {
			return nil, false
		}
		b = rec[start : start+n : start+n]
		if fl.ElemType != "" && !isCharType(fl.ElemType) {
			return b, true
		}
	default:
		if size == 0 {
			b = rec[off:len(rec):len(rec)]
		} else {
			if size > len(rec)-off {
				return nil, false
			}
			b = rec[off : off+size : off+size]
		}
		// Text is cut at its NUL; other bytes are returned whole. A Size-0
		// scalar "char buf;" is the old spelling of a trailing string.
		if fl.Kind != FixedString && !(size == 0 && fl.Kind == Scalar && isCharType(fl.Type)) {
			return b, true
		}
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i:i]
	}
	return b, true
}

// Elem decodes element i of an Array field whose element size is 1, 2, 4
// or 8 bytes (e.g. "unsigned long caller[8]"), zero-extended.
func (fl *Field) Elem(rec []byte, order binary.ByteOrder, i int) (v uint64, ok bool) {
	es := fl.ElemSize
	if fl.Kind != Array || es <= 0 || i < 0 || i >= fl.Size/es || fl.Offset < 0 {
		return 0, false
	}
	off := fl.Offset + i*es
	if es > len(rec)-off || off > len(rec) {
		return 0, false
	}
	b := rec[off:]
	switch es {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(order.Uint16(b)), true
	case 4:
		return uint64(order.Uint32(b)), true
	case 8:
		return order.Uint64(b), true
	}
	return 0, false
}
