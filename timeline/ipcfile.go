package timeline

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/schedreplay/replay/internal/atomicfile"
)

// ipcFile writes an Arrow IPC file in one pass over the rows.
//
// A timeline's string dictionaries and its summary are known only once the
// whole trace has been read, but its record batches are final as soon as
// they are full: a dictionary column's body is just its int32 indices. The
// format allows dictionary batches anywhere in the file (readers find them
// through the footer before they read any record batch), so the batches go
// straight to the output as they fill, and Close appends the dictionaries,
// then the footer. The schema message at the head of the file carries the
// summary, so room for it is reserved at the start and filled in at the
// end; if the final schema does not fit, the body is copied (by the kernel,
// copy_file_range) behind a larger head rather than re-encoded.
//
// The schema, dictionaries and footer come from arrow-go's FileWriter (a
// template written at Close, its block table patched); record batches are
// encoded by batchEncoder, whose bytes are arrow-go's exactly (tested), or
// by arrow-go itself for zstd. So the file is what FileWriter would write.
type ipcFile struct {
	path string
	out  *atomicfile.File
	bw   *bufio.Writer
	pos  int64 // bytes written to out, including what bw holds
	head int64 // bytes reserved for magic and schema message
	opts []ipc.Option
	recs []ipcBlock
	mem  memory.Allocator
	enc  *batchEncoder // nil: arrow-go encodes the batches (zstd)
}

// ipcBlock locates one message in the file, as the footer's Block struct
// does: where it starts, its metadata length (prefix and padding
// included), and its body length.
type ipcBlock struct {
	off  int64
	meta int32
	body int64
}

// ipcMagic opens and closes an Arrow IPC file; the opening one is padded
// to 8 bytes.
var ipcMagic = []byte("ARROW1")

// defaultHeadReserve leaves room for a schema message whose metadata (the
// source, the topology and the summary) stays under about 60 KiB, which
// covers machines of several hundred CPUs; larger ones take the copy path.
const defaultHeadReserve = 64 << 10

func newIPCFile(path string, mem memory.Allocator, compression string, headReserve int64) (*ipcFile, error) {
	out, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	opts := []ipc.Option{ipc.WithAllocator(mem)}
	var enc *batchEncoder
	switch compression {
	case "lz4":
		opts = append(opts, ipc.WithLZ4(), ipc.WithCompressConcurrency(2))
		// The reader and the row encoder keep two CPUs busy; compression
		// gets the rest, and at least two workers so that the last batches,
		// compressed after the reader is done, use both CPUs of a small
		// machine (the output does not depend on how many).
		enc = newBatchEncoder(true, min(4, max(2, runtime.GOMAXPROCS(0)-1)))
	case "zstd":
		opts = append(opts, ipc.WithZstd(), ipc.WithCompressConcurrency(2))
	default:
		enc = newBatchEncoder(false, 0)
	}
	f := &ipcFile{path: path, out: out, bw: bufio.NewWriterSize(out, 1<<20), head: headReserve, opts: opts, mem: mem, enc: enc}
	// The head is written for real at Close; zeros hold its place.
	if _, err := f.Write(make([]byte, headReserve)); err != nil {
		out.Abort()
		return nil, err
	}
	return f, nil
}

// Write appends to the output, counting its position (it is also the
// io.Writer arrow-go serialises payloads into).
func (f *ipcFile) Write(p []byte) (int, error) {
	n, err := f.bw.Write(p)
	f.pos += int64(n)
	return n, err
}

// writeBatch appends one record batch (string columns as int32 indices).
func (f *ipcFile) writeBatch(rec arrow.RecordBatch) error {
	p, err := ipc.GetRecordBatchPayload(rec, f.opts...)
	if err != nil {
		return err
	}
	defer p.Release()
	start := f.pos
	meta, err := p.WritePayload(f)
	if err != nil {
		return err
	}
	f.recs = append(f.recs, ipcBlock{off: start, meta: int32(meta), body: f.pos - start - int64(meta)})
	return nil
}

// writeRows appends one record batch made from b's rows.
func (f *ipcFile) writeRows(b *batch, schema *arrow.Schema) error {
	if f.enc == nil {
		rec := b.record(schema)
		defer rec.Release()
		return f.writeBatch(rec)
	}
	start := f.pos
	meta, body, err := f.enc.write(f, b)
	if err != nil {
		return err
	}
	f.recs = append(f.recs, ipcBlock{off: start, meta: meta, body: body})
	return nil
}

func (f *ipcFile) abort() { f.out.Abort() }

// finish writes the dictionaries, the footer and the head, and commits
// the file. dicts holds the dictionary of each dictionary-encoded field of
// schema, in field order.
func (f *ipcFile) finish(schema *arrow.Schema, dicts []arrow.Array) error {
	if len(f.recs) == 0 {
		// Nothing streamed: a plain FileWriter writes the (empty) file.
		if err := f.rewriteEmpty(schema); err != nil {
			f.abort()
			return err
		}
		return f.out.Commit()
	}
	tmpl, err := ipcTemplate(schema, dicts, len(f.recs), f.mem)
	if err != nil {
		f.abort()
		return err
	}
	// Dictionary messages follow the last record batch, then the stream's
	// end marker and the footer, whose block table is made to point at
	// this file's messages.
	dictBlocks := make([]ipcBlock, len(tmpl.dicts))
	for i, d := range tmpl.dicts {
		dictBlocks[i] = ipcBlock{off: f.pos, meta: d.meta, body: d.body}
		if _, err := f.Write(tmpl.file[d.off : d.off+int64(d.meta)+d.body]); err != nil {
			f.abort()
			return err
		}
	}
	if _, err := f.Write(ipcEOS); err != nil {
		f.abort()
		return err
	}
	schemaMsg := tmpl.file[8:tmpl.schemaEnd]
	needHead := int64(8 + len(schemaMsg))
	shift := int64(0)
	out := f.out
	if needHead > f.head {
		// Move the body behind a bigger head.
		out, shift, err = f.regrow(needHead)
		if err != nil {
			f.abort()
			return err
		}
	}
	footer := append([]byte(nil), tmpl.footer...)
	recs := make([]ipcBlock, len(f.recs))
	for i, b := range f.recs {
		recs[i] = ipcBlock{off: b.off + shift, meta: b.meta, body: b.body}
	}
	for i := range dictBlocks {
		dictBlocks[i].off += shift
	}
	if err := patchFooterBlocks(footer, dictBlocks, recs); err != nil {
		f.abort()
		out.Abort()
		return err
	}
	tail := make([]byte, 0, len(footer)+4+len(ipcMagic))
	tail = append(tail, footer...)
	tail = binary.LittleEndian.AppendUint32(tail, uint32(len(footer)))
	tail = append(tail, ipcMagic...)
	headLen := f.head + shift
	head := make([]byte, headLen)
	copy(head, ipcMagic)
	// The schema message fills the head exactly: its length prefix
	// counts the padding, which follows the flatbuffer as zeros.
	copy(head[8:], schemaMsg)
	binary.LittleEndian.PutUint32(head[12:], uint32(headLen-8-8))
	if out == f.out {
		if _, err := f.Write(tail); err != nil {
			f.abort()
			return err
		}
		if err := f.bw.Flush(); err != nil {
			f.abort()
			return err
		}
		if _, err := out.WriteAt(head, 0); err != nil {
			f.abort()
			return err
		}
		return out.Commit()
	}
	f.abort()
	if _, err := out.Seek(0, io.SeekEnd); err != nil {
		out.Abort()
		return err
	}
	if _, err := out.Write(tail); err != nil {
		out.Abort()
		return err
	}
	if _, err := out.WriteAt(head, 0); err != nil {
		out.Abort()
		return err
	}
	return out.Commit()
}

// regrow copies everything after the head into a new output file whose
// head has room for need bytes, returning it and how far the body moved.
func (f *ipcFile) regrow(need int64) (*atomicfile.File, int64, error) {
	if err := f.bw.Flush(); err != nil {
		return nil, 0, err
	}
	newHead := (need + 4095) &^ 4095
	out, err := atomicfile.Create(f.path)
	if err != nil {
		return nil, 0, err
	}
	if err := out.Truncate(newHead); err != nil {
		out.Abort()
		return nil, 0, err
	}
	if _, err := out.Seek(newHead, io.SeekStart); err != nil {
		out.Abort()
		return nil, 0, err
	}
	if _, err := f.out.Seek(f.head, io.SeekStart); err != nil {
		out.Abort()
		return nil, 0, err
	}
	// os.File.ReadFrom of a limited *os.File uses copy_file_range.
	if _, err := out.ReadFrom(io.LimitReader(f.out.File, f.pos-f.head)); err != nil {
		out.Abort()
		return nil, 0, err
	}
	return out, newHead - f.head, nil
}

func (f *ipcFile) rewriteEmpty(schema *arrow.Schema) error {
	if err := f.out.Truncate(0); err != nil {
		return err
	}
	if _, err := f.out.Seek(0, io.SeekStart); err != nil {
		return err
	}
	w, err := ipc.NewFileWriter(f.out.File, append([]ipc.Option{ipc.WithSchema(schema)}, f.opts...)...)
	if err != nil {
		return err
	}
	return w.Close()
}

// ipcEOS is the stream's end-of-stream marker: continuation, zero length.
var ipcEOS = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// template is a small IPC file written by arrow-go's FileWriter with the
// final schema and dictionaries and nrec empty record batches: its schema
// message, dictionary messages and footer are exactly what the real file
// needs, except for the footer's block offsets.
type template struct {
	file      []byte
	schemaEnd int64
	dicts     []ipcBlock
	footer    []byte
}

func ipcTemplate(schema *arrow.Schema, dicts []arrow.Array, nrec int, mem memory.Allocator) (*template, error) {
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	cols := make([]arrow.Array, len(schema.Fields()))
	di := 0
	for i, fld := range schema.Fields() {
		if dt, ok := fld.Type.(*arrow.DictionaryType); ok {
			if di >= len(dicts) {
				return nil, errors.New("timeline: fewer dictionaries than dictionary fields")
			}
			idx := array.MakeArrayOfNull(mem, dt.IndexType, 0)
			cols[i] = array.NewDictionaryArray(dt, idx, dicts[di])
			idx.Release()
			di++
		} else {
			cols[i] = array.MakeArrayOfNull(mem, fld.Type, 0)
		}
	}
	rec := array.NewRecordBatch(schema, cols, 0)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	for i := 0; i < nrec; i++ {
		if err := w.Write(rec); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	t := &template{file: buf.Bytes()}
	n := int64(len(t.file))
	if n < 8+8+10 {
		return nil, errors.New("timeline: arrow-go wrote a short IPC file")
	}
	flen := int64(binary.LittleEndian.Uint32(t.file[n-10:]))
	if flen <= 0 || flen > n-18 {
		return nil, errors.New("timeline: arrow-go wrote a bad footer length")
	}
	t.footer = t.file[n-10-flen : n-10]
	// The schema message follows the 8-byte magic: continuation marker,
	// metadata length, metadata (no body).
	if binary.LittleEndian.Uint32(t.file[8:]) != 0xffffffff {
		return nil, errors.New("timeline: arrow-go wrote an unexpected schema message prefix")
	}
	t.schemaEnd = 16 + int64(binary.LittleEndian.Uint32(t.file[12:]))
	d, r, err := footerBlocks(t.footer)
	if err != nil {
		return nil, err
	}
	if len(r) != nrec || len(d) != len(dicts) {
		return nil, fmt.Errorf("timeline: arrow-go wrote %d dictionaries and %d batches, want %d and %d", len(d), len(r), len(dicts), nrec)
	}
	for _, b := range d {
		if b.off < t.schemaEnd || b.off+int64(b.meta)+b.body > n {
			return nil, errors.New("timeline: arrow-go wrote a dictionary block outside its file")
		}
	}
	t.dicts = d
	return t, nil
}

// Footer table fields (format/File.fbs): version, schema, dictionaries,
// recordBatches, custom_metadata; a Block is {offset: long,
// metaDataLength: int, (4 bytes padding), bodyLength: long}.
const (
	footerDictionaries  = 2
	footerRecordBatches = 3
	blockSize           = 24
)

// footerVector returns the byte offset and length of a vector of Blocks in
// a Footer flatbuffer.
func footerVector(fb []byte, field int) (start, n int, err error) {
	if len(fb) < 8 {
		return 0, 0, errors.New("timeline: short footer")
	}
	tab := flatbuffers.Table{Bytes: fb, Pos: flatbuffers.GetUOffsetT(fb)}
	o := tab.Offset(flatbuffers.VOffsetT(4 + 2*field))
	if o == 0 {
		return 0, 0, nil
	}
	start = int(tab.Vector(flatbuffers.UOffsetT(o)))
	n = tab.VectorLen(flatbuffers.UOffsetT(o))
	if start < 0 || n < 0 || start+n*blockSize > len(fb) {
		return 0, 0, errors.New("timeline: footer block vector out of range")
	}
	return start, n, nil
}

func footerBlocks(fb []byte) (dicts, recs []ipcBlock, err error) {
	read := func(field int) ([]ipcBlock, error) {
		start, n, err := footerVector(fb, field)
		if err != nil {
			return nil, err
		}
		bs := make([]ipcBlock, n)
		for i := range bs {
			p := fb[start+i*blockSize:]
			bs[i] = ipcBlock{
				off:  int64(binary.LittleEndian.Uint64(p)),
				meta: int32(binary.LittleEndian.Uint32(p[8:])),
				body: int64(binary.LittleEndian.Uint64(p[16:])),
			}
		}
		return bs, nil
	}
	if dicts, err = read(footerDictionaries); err != nil {
		return nil, nil, err
	}
	recs, err = read(footerRecordBatches)
	return dicts, recs, err
}

// patchFooterBlocks overwrites the footer's dictionary and record batch
// blocks in place; the counts must match.
func patchFooterBlocks(fb []byte, dicts, recs []ipcBlock) error {
	put := func(field int, bs []ipcBlock) error {
		start, n, err := footerVector(fb, field)
		if err != nil {
			return err
		}
		if n != len(bs) {
			return fmt.Errorf("timeline: footer has %d blocks, want %d", n, len(bs))
		}
		for i, b := range bs {
			p := fb[start+i*blockSize:]
			binary.LittleEndian.PutUint64(p, uint64(b.off))
			binary.LittleEndian.PutUint32(p[8:], uint32(b.meta))
			binary.LittleEndian.PutUint64(p[16:], uint64(b.body))
		}
		return nil
	}
	if err := put(footerDictionaries, dicts); err != nil {
		return err
	}
	return put(footerRecordBatches, recs)
}
