package timeline

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// IPCBodyLimit is the reader option bounding an Arrow IPC file's record
// batch bodies by the file's size (arrow-go's reader checks every block
// against the file as well): the allocation stays what the input
// justifies. arrow-go's own default, 256 MiB, refuses a batch a notebook
// or an older replay wrote larger than that (a large trace's workload
// in one batch was 286 MB).
func IPCBodyLimit(fileSize int64) ipc.Option {
	return ipc.WithBodySizeLimit(max(fileSize, 1))
}

// CheckIPCFooter reads an Arrow IPC file's footer (f of size bytes) and
// checks that every vector its schema names fits in the footer's bytes;
// call it before handing a file from anywhere to arrow-go's reader.
// arrow-go sizes slices by the counts a file states (ipc.fieldFromFB makes
// a Field slice of a field's children count): a damaged or hostile count of a few billion is an allocation the runtime
// cannot make, which kills the process rather than returning an error
// (FuzzOpen found one). A real footer's vectors lie inside it, and its
// fields are distinct tables, so the walk also bounds the fields visited
// by what the bytes can hold: a table reached twice (a cycle, or a DAG
// that would expand exponentially) is refused.
func CheckIPCFooter(f io.ReaderAt, size int64) error {
	const tail = 10 // int32 footer length, "ARROW1"
	if size < 8+tail {
		return errors.New("too short for an Arrow IPC file")
	}
	var t [tail]byte
	if _, err := f.ReadAt(t[:], size-tail); err != nil {
		return fmt.Errorf("reading the file's end: %w", err)
	}
	if string(t[4:]) != "ARROW1" {
		return fmt.Errorf("no Arrow IPC end marker (last bytes %q)", t[4:])
	}
	flen := int64(int32(binary.LittleEndian.Uint32(t[:4])))
	if flen <= 0 || flen > size-8-tail {
		return fmt.Errorf("footer length %d outside the file (%d bytes)", flen, size)
	}
	fb := make([]byte, flen)
	if _, err := f.ReadAt(fb, size-tail-flen); err != nil {
		return fmt.Errorf("reading the footer: %w", err)
	}
	w := &fbWalk{b: fb, seen: map[int]bool{}}
	if err := w.footer(); err != nil {
		return fmt.Errorf("footer at byte %d: %w", size-tail-flen, err)
	}
	return checkBatches(f, fb, size-tail-flen)
}

// maxBatchMeta bounds a batch's metadata message: arrow-go reads it whole.
const maxBatchMeta = 64 << 20

// checkBatches checks the file's dictionary and record batch blocks
// (footer fb, the footer starting at end), which arrow-go's reader also
// trusts: it allocates each buffer at the length the batch's message
// states, and a compressed one at the uncompressed length its first eight
// bytes state, before reading any of it (FuzzLoadWorkload found a
// 63 kB file asking for 16 GiB). Each block must lie before the footer;
// its message must be a RecordBatch, or a DictionaryBatch holding one,
// whose buffers lie inside the block's body, whose row and node counts
// the body can hold (a bit a value at the least: 8 × body + 64), and whose
// compressed buffers uncompress to at most 64 bytes a row plus 64 times
// the body.
func checkBatches(f io.ReaderAt, fb []byte, end int64) error {
	dicts, recs, err := footerBlocks(fb)
	if err != nil {
		return err
	}
	for i, b := range append(dicts, recs...) {
		if err := checkBatch(f, b, end); err != nil {
			kind, j := "record batch", i-len(dicts)
			if i < len(dicts) {
				kind, j = "dictionary batch", i
			}
			return fmt.Errorf("%s %d at byte %d: %w", kind, j, b.off, err)
		}
	}
	return nil
}

// headerDictionaryBatch is MessageHeader.DictionaryBatch (format/Message.fbs).
const headerDictionaryBatch byte = 2

// DictionaryBatch and RecordBatch slots (format/Message.fbs).
const (
	slotDictBatchData    = 1
	slotBatchLength      = 0
	slotBatchNodes       = 1
	slotBatchBuffers     = 2
	slotBatchCompression = 3
	batchStructSize      = 16 // FieldNode and Buffer: two longs
)

func checkBatch(f io.ReaderAt, b ipcBlock, end int64) error {
	if b.off < 8 || b.meta < 8 || b.meta > maxBatchMeta || b.body < 0 || b.off > end || int64(b.meta) > end-b.off || b.body > end-b.off-int64(b.meta) {
		return fmt.Errorf("block of %d + %d bytes outside the file's %d before its footer", b.meta, b.body, end)
	}
	mb := make([]byte, b.meta)
	if _, err := f.ReadAt(mb, b.off); err != nil {
		return fmt.Errorf("reading its message: %w", err)
	}
	if len(mb) >= 4 && binary.LittleEndian.Uint32(mb) == 0xffffffff {
		mb = mb[4:]
	}
	if len(mb) < 4 {
		return errors.New("message too short")
	}
	n := int(int32(binary.LittleEndian.Uint32(mb)))
	mb = mb[4:]
	if n < 8 || n > len(mb) {
		return fmt.Errorf("message length %d outside its %d bytes", n, len(mb))
	}
	w := &fbWalk{b: mb[:n], seen: map[int]bool{}}
	root, err := w.deref(0)
	if err != nil {
		return err
	}
	ht, err := w.field(root, slotMessageHeaderType)
	if err != nil {
		return err
	}
	htype := byte(0)
	if ht != 0 {
		htype = w.b[ht]
	}
	rb, err := w.table(root, slotMessageHeader)
	if err != nil {
		return err
	}
	switch htype {
	case headerRecordBatch:
	case headerDictionaryBatch:
		if rb == 0 {
			return errors.New("dictionary batch without a header")
		}
		if rb, err = w.table(rb, slotDictBatchData); err != nil {
			return err
		}
	default:
		return fmt.Errorf("message header type %d, want a record or dictionary batch", htype)
	}
	if rb == 0 {
		return errors.New("batch message without a record batch")
	}
	limit := 8*b.body + 64
	rows, err := w.i64(rb, slotBatchLength)
	if err != nil {
		return err
	}
	if rows < 0 || rows > limit {
		return fmt.Errorf("%d rows, more than its %d-byte body can hold", rows, b.body)
	}
	start, nn, err := w.vector(rb, slotBatchNodes, batchStructSize)
	if err != nil {
		return err
	}
	for k := 0; k < nn; k++ {
		p := start + k*batchStructSize
		l, nulls := int64(binary.LittleEndian.Uint64(w.b[p:])), int64(binary.LittleEndian.Uint64(w.b[p+8:]))
		if l < 0 || l > limit || nulls < 0 || nulls > l {
			return fmt.Errorf("field node %d: length %d, nulls %d, beyond what its %d-byte body can hold", k, l, nulls, b.body)
		}
	}
	comp, err := w.table(rb, slotBatchCompression)
	if err != nil {
		return err
	}
	start, nb, err := w.vector(rb, slotBatchBuffers, batchStructSize)
	if err != nil {
		return err
	}
	for k := 0; k < nb; k++ {
		p := start + k*batchStructSize
		off, l := int64(binary.LittleEndian.Uint64(w.b[p:])), int64(binary.LittleEndian.Uint64(w.b[p+8:]))
		if off < 0 || l < 0 || off > b.body || l > b.body-off {
			return fmt.Errorf("buffer %d at %d of %d bytes outside its %d-byte body", k, off, l, b.body)
		}
		if comp == 0 || l < 8 {
			continue
		}
		var u [8]byte
		if _, err := f.ReadAt(u[:], b.off+int64(b.meta)+off); err != nil {
			return fmt.Errorf("reading buffer %d: %w", k, err)
		}
		if ul := int64(binary.LittleEndian.Uint64(u[:])); ul != -1 && (ul < 0 || ul > 64*(rows+1)+64*b.body) {
			return fmt.Errorf("buffer %d uncompresses to %d bytes, more than %d rows need", k, ul, rows)
		}
	}
	return nil
}

// CheckParquetArrowSchema checks the Arrow schema a Parquet file carries
// in its "ARROW:schema" key-value metadata (base64 of an IPC schema
// message), which pqarrow reads with the same trusting code: nil when it
// is absent or every vector fits.
func CheckParquetArrowSchema(serialized *string) error {
	if serialized == nil {
		return nil
	}
	// As pqarrow decodes it: padded base64 when the length allows, else
	// unpadded.
	var b []byte
	var err error
	if len(*serialized)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(*serialized)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*serialized); err != nil {
			return fmt.Errorf("ARROW:schema metadata: %w", err)
		}
	}
	if err := checkSchemaMessage(b); err != nil {
		return fmt.Errorf("ARROW:schema metadata: %w", err)
	}
	return nil
}

// checkSchemaMessage checks an encapsulated IPC message (optional
// continuation marker, int32 length, Message flatbuffer) holding a
// Schema.
func checkSchemaMessage(b []byte) error {
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0xffffffff {
		b = b[4:]
	}
	if len(b) < 4 {
		return errors.New("no message length")
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	if n <= 0 || n > int64(len(b)-4) {
		return fmt.Errorf("message length %d outside its %d bytes", n, len(b)-4)
	}
	w := &fbWalk{b: b[4 : 4+n], seen: map[int]bool{}}
	root, err := w.deref(0)
	if err != nil {
		return err
	}
	if err := w.keyValues(root, slotMessageMeta); err != nil {
		return err
	}
	p, err := w.field(root, slotMessageHeaderType)
	if err != nil || p == 0 || w.b[p] != headerSchema {
		return err // not a schema: arrow-go refuses it
	}
	schema, err := w.table(root, slotMessageHeader)
	if err != nil || schema == 0 {
		return err
	}
	return w.schema(schema)
}

// fbWalk is a bounds-checked reader of one flatbuffer.
type fbWalk struct {
	b    []byte
	seen map[int]bool // table positions visited (fields)
}

var errFB = errors.New("flatbuffer offset or vector out of range")

func (w *fbWalk) u32(p int) (int, error) {
	if p < 0 || p > len(w.b)-4 {
		return 0, errFB
	}
	return int(binary.LittleEndian.Uint32(w.b[p:])), nil
}

// i64 is the long in slot of the table at pos, 0 when absent.
func (w *fbWalk) i64(pos, slot int) (int64, error) {
	p, err := w.field(pos, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	if p > len(w.b)-8 {
		return 0, errFB
	}
	return int64(binary.LittleEndian.Uint64(w.b[p:])), nil
}

// deref follows the uoffset stored at p.
func (w *fbWalk) deref(p int) (int, error) {
	o, err := w.u32(p)
	if err != nil {
		return 0, err
	}
	q := p + o
	if q < 0 || q > len(w.b)-4 {
		return 0, errFB
	}
	return q, nil
}

// field returns the position of slot's value in the table at pos, 0 when
// absent.
func (w *fbWalk) field(pos, slot int) (int, error) {
	so, err := w.u32(pos)
	if err != nil {
		return 0, err
	}
	vt := pos - int(int32(so))
	if vt < 0 || vt > len(w.b)-4 {
		return 0, errFB
	}
	vsize := int(binary.LittleEndian.Uint16(w.b[vt:]))
	if vsize < 4 || vsize%2 != 0 || vt+vsize > len(w.b) {
		return 0, errFB
	}
	at := 4 + 2*slot
	if at+2 > vsize {
		return 0, nil
	}
	off := int(binary.LittleEndian.Uint16(w.b[vt+at:]))
	if off == 0 {
		return 0, nil
	}
	if pos+off > len(w.b)-1 {
		return 0, errFB
	}
	return pos + off, nil
}

// table is the table an offset field of slot points to, 0 when absent.
func (w *fbWalk) table(pos, slot int) (int, error) {
	p, err := w.field(pos, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	return w.deref(p)
}

// vector is the start and length of the vector (elements of elem bytes)
// an offset field of slot points to; n is 0 when absent.
func (w *fbWalk) vector(pos, slot, elem int) (start, n int, err error) {
	p, err := w.table(pos, slot)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	n, err = w.u32(p)
	if err != nil {
		return 0, 0, err
	}
	start = p + 4
	if n < 0 || n > (len(w.b)-start)/elem {
		return 0, 0, fmt.Errorf("vector of %d elements at byte %d, more than the footer's %d bytes hold", n, p, len(w.b))
	}
	return start, n, nil
}

// The slots of format/File.fbs and Schema.fbs this walk reads.
const (
	slotMessageHeaderType      = 1
	slotMessageHeader          = 2
	slotMessageMeta            = 4
	headerSchema          byte = 1
	slotFooterSchema           = 1
	slotFooterDicts            = 2
	slotFooterBatches          = 3
	slotFooterMeta             = 4
	slotSchemaFields           = 1
	slotSchemaMeta             = 2
	slotSchemaFeatures         = 3
	slotFieldName              = 0
	slotFieldTypeType          = 2
	slotFieldType              = 3
	slotFieldChildren          = 5
	slotFieldMeta              = 6
	slotKeyValueKey            = 0
	slotKeyValueValue          = 1
	slotUnionTypeIDs           = 1
	slotTimestampTimezone      = 1
	typeUnion             byte = 14
	typeTimestamp         byte = 10
	maxFieldDepth              = 64
)

func (w *fbWalk) footer() error {
	root, err := w.deref(0)
	if err != nil {
		return err
	}
	for _, s := range []int{slotFooterDicts, slotFooterBatches} {
		if _, _, err := w.vector(root, s, blockSize); err != nil {
			return err
		}
	}
	if err := w.keyValues(root, slotFooterMeta); err != nil {
		return err
	}
	schema, err := w.table(root, slotFooterSchema)
	if err != nil || schema == 0 {
		return err
	}
	return w.schema(schema)
}

// schema checks a Schema table.
func (w *fbWalk) schema(schema int) error {
	if err := w.keyValues(schema, slotSchemaMeta); err != nil {
		return err
	}
	if _, _, err := w.vector(schema, slotSchemaFeatures, 8); err != nil {
		return err
	}
	return w.fields(schema, slotSchemaFields, 0)
}

// fields checks the vector of Field tables at slot of the table at pos.
func (w *fbWalk) fields(pos, slot, depth int) error {
	if depth > maxFieldDepth {
		return fmt.Errorf("fields nested more than %d deep", maxFieldDepth)
	}
	return w.eachTable(pos, slot, func(f int) error {
		if w.seen[f] {
			return fmt.Errorf("field table at byte %d reached twice", f)
		}
		w.seen[f] = true
		if _, _, err := w.vector(f, slotFieldName, 1); err != nil {
			return err
		}
		if err := w.fieldType(f); err != nil {
			return err
		}
		if err := w.keyValues(f, slotFieldMeta); err != nil {
			return err
		}
		return w.fields(f, slotFieldChildren, depth+1)
	})
}

// fieldType checks the vectors of the type tables that have them.
func (w *fbWalk) fieldType(f int) error {
	p, err := w.field(f, slotFieldTypeType)
	if err != nil || p == 0 {
		return err
	}
	tt := w.b[p]
	typ, err := w.table(f, slotFieldType)
	if err != nil || typ == 0 {
		return err
	}
	switch tt {
	case typeUnion:
		_, _, err = w.vector(typ, slotUnionTypeIDs, 4)
	case typeTimestamp:
		_, _, err = w.vector(typ, slotTimestampTimezone, 1)
	}
	return err
}

// keyValues checks a vector of KeyValue tables (custom metadata).
func (w *fbWalk) keyValues(pos, slot int) error {
	return w.eachTable(pos, slot, func(kv int) error {
		for _, s := range []int{slotKeyValueKey, slotKeyValueValue} {
			if _, _, err := w.vector(kv, s, 1); err != nil {
				return err
			}
		}
		return nil
	})
}

// eachTable calls visit with each table of the vector of tables at slot
// of the table at pos.
func (w *fbWalk) eachTable(pos, slot int, visit func(t int) error) error {
	start, n, err := w.vector(pos, slot, 4)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		t, err := w.deref(start + 4*i)
		if err != nil {
			return err
		}
		if err := visit(t); err != nil {
			return err
		}
	}
	return nil
}
