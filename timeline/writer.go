package timeline

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/schedreplay/replay/internal/atomicfile"
)

// Output formats.
const (
	FormatArrow   = "arrow"   // Arrow IPC file (Feather v2)
	FormatParquet = "parquet" // Parquet, zstd, with the Arrow schema stored
)

// DefaultBatchRows is the number of rows per record batch / row group.
const DefaultBatchRows = 64 * 1024

// FormatForPath picks the output format from a file name: ".parquet" and
// ".pq" mean Parquet, anything else Arrow IPC.
func FormatForPath(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".parquet", ".pq":
		return FormatParquet
	}
	return FormatArrow
}

// dict assigns dictionary indices to strings in first-seen order, which is
// deterministic for a given input.
type dict struct {
	idx    map[string]int32
	values []string
	// cache remembers recent lookups by the string's memory: readers
	// intern their strings (a comm or an event name is one string however
	// often it occurs), so most lookups are one pointer comparison instead
	// of hashing the string. The slot holds the string itself, which keeps
	// its memory from being reused for another string while cached.
	cache [dictSlots]dictSlot
	// last is the most recent lookup, compared by content, for readers
	// that do not intern: runs of one comm or event name are common.
	last dictSlot
}

type dictSlot struct {
	s string
	i int32 // index + 1; 0 for an empty slot
}

const dictSlots = 64

func (d *dict) index(s string) int32 {
	p := unsafe.StringData(s)
	sl := &d.cache[(uintptr(unsafe.Pointer(p))>>4^uintptr(len(s)))%dictSlots]
	if sl.i > 0 && unsafe.StringData(sl.s) == p && len(sl.s) == len(s) {
		return sl.i - 1
	}
	if d.last.i > 0 && d.last.s == s {
		sl.s, sl.i = s, d.last.i
		return d.last.i - 1
	}
	i, ok := d.idx[s]
	if !ok {
		i = int32(len(d.values))
		d.idx[s] = i
		d.values = append(d.values, s)
	}
	sl.s, sl.i = s, i+1
	d.last = *sl
	return i
}

// Writer writes a timeline file from a stream of events.
//
// Rows are encoded into record batches as they arrive and written out in
// the background, so memory stays bounded by the batch size and the number
// of distinct strings, not by trace length. String columns hold indices
// into one dictionary per column, which grows as the trace is read (an
// Arrow IPC file cannot change a dictionary between batches); the
// dictionaries and the summary are written at Close. An Arrow file gets
// its batches in place as they fill (see ipcFile); Parquet, whose row
// groups embed their dictionaries, goes through a temporary spill that
// Close rewrites. Either way the output has a temporary name until it is
// complete: a failed write never leaves a partial output.
type Writer struct {
	path, format string
	compression  string
	batchRows    int
	mem          memory.Allocator

	spillFile   *os.File
	spill       *ipc.Writer
	spillSchema *arrow.Schema
	direct      *ipcFile // Arrow output written in place (no spill)

	// Write copies events into chunk; full chunks go to the encoder
	// goroutine (encodeLoop) over toEnc and come back over freeChunks, so
	// the caller's reading and decoding overlap the row encoding.
	chunk      *rowChunk
	toEnc      chan *rowChunk
	freeChunks chan *rowChunk
	encoded    chan error

	// cur is the batch being filled by encodeLoop; full batches go to the
	// spill goroutine (spillLoop) over toSpill and come back over free,
	// so encoding the next batch overlaps compressing and writing this
	// one.
	cur     *batch
	toSpill chan *batch
	free    chan *batch
	spilled chan error

	eventDict dict
	dicts     [NumCols]*dict
	sum       *summarizer
	jsonBuf   []byte
	closed    bool
}

// WriterOptions tune a Writer; the zero value is fine.
type WriterOptions struct {
	Format    string // FormatArrow or FormatParquet; "" picks by file name
	BatchRows int    // rows per batch; 0 = DefaultBatchRows
	// Compression of an Arrow IPC file's buffers: "" or "none" (every
	// Arrow reader opens it), "lz4" or "zstd" (smaller; pyarrow, polars
	// and arrow-rs read them, arrow-js only with a codec registered).
	// Parquet is always zstd.
	Compression string

	headReserve int64 // tests: room for the Arrow schema head (0 = default)
}

// Create starts a timeline file at path.
func Create(path string, opt WriterOptions) (*Writer, error) {
	if opt.Format == "" {
		opt.Format = FormatForPath(path)
	}
	if opt.Format != FormatArrow && opt.Format != FormatParquet {
		return nil, fmt.Errorf("unknown timeline format %q (want %q or %q)", opt.Format, FormatArrow, FormatParquet)
	}
	if opt.BatchRows <= 0 {
		opt.BatchRows = DefaultBatchRows
	}
	switch opt.Compression {
	case "", "none", "lz4", "zstd":
	default:
		return nil, fmt.Errorf("unknown compression %q (want none, lz4 or zstd)", opt.Compression)
	}
	w := &Writer{path: path, format: opt.Format, compression: opt.Compression, batchRows: opt.BatchRows, mem: memory.NewGoAllocator(), sum: newSummarizer()}
	w.eventDict.idx = map[string]int32{}
	w.spillSchema = buildSchema(nil, spillType, arrow.PrimitiveTypes.Int32)
	if opt.Format == FormatArrow {
		reserve := opt.headReserve
		if reserve <= 0 {
			reserve = defaultHeadReserve
		}
		d, err := newIPCFile(path, w.mem, opt.Compression, reserve)
		if err != nil {
			return nil, err
		}
		w.direct = d
	} else {
		f, err := os.CreateTemp("", "replay-spill-*.arrows")
		if err != nil {
			return nil, fmt.Errorf("timeline spill: %w", err)
		}
		// The spill is private scratch: unlink it now so it vanishes
		// with the process whatever happens.
		os.Remove(f.Name())
		w.spillFile = f
		// LZ4 because most columns of most rows are null: the spill
		// shrinks several-fold for little CPU, and it is read back once.
		w.spill = ipc.NewWriter(f, ipc.WithSchema(w.spillSchema), ipc.WithAllocator(w.mem), ipc.WithLZ4())
	}
	for c := Col(0); c < NumCols; c++ {
		if cols[c].typ == tString {
			w.dicts[c] = &dict{idx: map[string]int32{}}
		}
	}
	w.cur = newBatch(w.batchRows)
	w.toSpill, w.free, w.spilled = make(chan *batch), make(chan *batch, 2), make(chan error, 1)
	w.free <- newBatch(w.batchRows)
	w.free <- newBatch(w.batchRows)
	go w.spillLoop(w.toSpill)
	w.chunk = &rowChunk{}
	w.toEnc, w.freeChunks, w.encoded = make(chan *rowChunk, 8), make(chan *rowChunk, 9), make(chan error, 1)
	for range 8 {
		w.freeChunks <- &rowChunk{}
	}
	go w.encodeLoop(w.toEnc)
	return w, nil
}

// chunkEvents is how many events Write hands to the encoder at a time.
const chunkEvents = 2048

// encodeLoop turns chunks of events into batch rows and the summary, then,
// when toEnc closes, finishes the spill. Channels are passed in: the
// fields are cleared when they close and reports its error on encoded.
func (w *Writer) encodeLoop(toEnc <-chan *rowChunk) {
	for ch := range toEnc {
		k := rowCursor{c: ch}
		var r row
		for k.next(&r) {
			ei := w.eventDict.index(r.name)
			w.sum.addRow(&r, ei)
			w.cur.addRow(&r, ei, &w.dicts, &w.jsonBuf)
			if w.cur.n >= w.batchRows {
				w.flush()
			}
		}
		ch.reset()
		w.freeChunks <- ch
	}
	w.encoded <- w.finishSpill()
}

// spillLoop writes full batches to the spill stream in the background and
// hands them back for reuse. It reports the first error on spilled when
// toSpill closes.
func (w *Writer) spillLoop(toSpill <-chan *batch) {
	var err error
	for b := range toSpill {
		if err == nil {
			if w.direct != nil {
				err = w.direct.writeRows(b, w.spillSchema)
			} else {
				rec := b.record(w.spillSchema)
				err = w.spill.Write(rec)
				rec.Release()
			}
		}
		b.reset()
		w.free <- b
	}
	w.spilled <- err
}

// Write appends one event. Events must come in time order (ties in any
// order); the readers guarantee it.
func (w *Writer) Write(e *Event) error {
	if w.closed {
		return errors.New("timeline: write after close")
	}
	if e.Name == "" {
		return errors.New("timeline: event without a name")
	}
	w.chunk.add(e)
	if len(w.chunk.rows) == chunkEvents {
		w.toEnc <- w.chunk
		w.chunk = <-w.freeChunks
	}
	return nil
}

// finishEncode hands over the last chunk and waits for the encoder, which
// also finishes the spill.
func (w *Writer) finishEncode() error {
	if w.toEnc == nil {
		return nil
	}
	if len(w.chunk.rows) > 0 {
		w.toEnc <- w.chunk
		w.chunk = <-w.freeChunks // keeps the encoder from blocking on a full free list
	}
	close(w.toEnc)
	w.toEnc = nil
	return <-w.encoded
}

// flush hands the current batch to the spill goroutine. Errors surface
// at Close.
func (w *Writer) flush() {
	if w.cur.n == 0 {
		return
	}
	w.toSpill <- w.cur
	w.cur = <-w.free
}

// finishSpill flushes the last batch and waits for the spill goroutine.
func (w *Writer) finishSpill() error {
	if w.toSpill == nil {
		return nil
	}
	w.flush()
	close(w.toSpill)
	w.toSpill = nil
	if err := <-w.spilled; err != nil {
		return fmt.Errorf("timeline spill: %w", err)
	}
	return nil
}

// Abort discards everything written; the output file is not touched.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	w.finishEncode()
	if w.direct != nil {
		w.direct.abort()
		w.direct = nil
	}
	if w.spill != nil {
		w.spill.Close()
		w.spillFile.Close()
	}
}

// Close finishes the file. meta supplies the source, topology, and the
// reader's lost and dropped counts; the writer fills in the rest of the
// summary from the rows it saw. On error nothing is left at the path.
func (w *Writer) Close(meta *Meta) (err error) {
	if w.closed {
		return errors.New("timeline: close after close")
	}
	defer w.Abort()
	if err := w.finishEncode(); err != nil {
		return err
	}
	if w.spill != nil {
		if err := w.spill.Close(); err != nil {
			return fmt.Errorf("timeline spill: %w", err)
		}
	}
	m := Meta{}
	if meta != nil {
		m = *meta
	}
	s := w.sum.summary(w.eventDict.values)
	s.Lost, s.Dropped, s.Anomalies = m.Summary.Lost, m.Summary.Dropped, m.Summary.Anomalies
	m.Summary = s
	keys, vals, err := m.encode()
	if err != nil {
		return err
	}
	md := arrow.NewMetadata(keys, vals)
	schema := buildSchema(&md, arrowType, dictType)
	if w.direct != nil {
		return w.finishDirect(schema)
	}

	out, err := atomicfile.Create(w.path)
	if err != nil {
		return err
	}
	if _, err := w.spillFile.Seek(0, io.SeekStart); err != nil {
		out.Abort()
		return err
	}
	// Hide out's Close from the sinks (pqarrow closes what it writes to).
	if err := w.rewrite(struct{ io.Writer }{out}, schema); err != nil {
		out.Abort()
		return err
	}
	return out.Commit()
}

// finishDirect completes an Arrow file written in place.
func (w *Writer) finishDirect(schema *arrow.Schema) error {
	dicts := []arrow.Array{finalDict(&w.eventDict, w.mem)}
	for c := Col(0); c < NumCols; c++ {
		if w.dicts[c] != nil {
			dicts = append(dicts, finalDict(w.dicts[c], w.mem))
		}
	}
	defer func() {
		for _, d := range dicts {
			d.Release()
		}
	}()
	err := w.direct.finish(schema, dicts)
	w.direct = nil // finish committed or discarded the file
	return err
}

// finalDict is a string column's dictionary as an Arrow array.
func finalDict(d *dict, mem memory.Allocator) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(d.values, nil)
	return b.NewArray()
}

type recordSink interface {
	Write(arrow.RecordBatch) error
	Close() error
}

func (w *Writer) newSink(out io.Writer, schema *arrow.Schema) (recordSink, error) {
	if w.format == FormatParquet {
		props := parquet.NewWriterProperties(
			parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithAllocator(w.mem),
			parquet.WithCreatedBy("replay"),
		)
		return pqarrow.NewFileWriter(schema, out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	}
	opts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(w.mem)}
	switch w.compression {
	case "lz4":
		opts = append(opts, ipc.WithLZ4(), ipc.WithCompressConcurrency(2))
	case "zstd":
		opts = append(opts, ipc.WithZstd(), ipc.WithCompressConcurrency(2))
	}
	return ipc.NewFileWriter(out, opts...)
}

func (w *Writer) rewrite(out io.Writer, schema *arrow.Schema) error {
	var dictArrs [NumCols]arrow.Array
	eventDict := finalDict(&w.eventDict, w.mem)
	defer eventDict.Release()
	for c := Col(0); c < NumCols; c++ {
		if w.dicts[c] != nil {
			dictArrs[c] = finalDict(w.dicts[c], w.mem)
			defer dictArrs[c].Release()
		}
	}
	sink, err := w.newSink(out, schema)
	if err != nil {
		return err
	}
	// Read (and decompress) the spill in one goroutine while this one
	// encodes and writes: the two halves of the rewrite overlap.
	type spilled struct {
		rec arrow.RecordBatch
		err error
	}
	recs := make(chan spilled, 2)
	stop := make(chan struct{})
	// On return, stop the reader first, then release what it had queued
	// (defers run last-registered first).
	defer func() {
		for s := range recs {
			if s.rec != nil {
				s.rec.Release()
			}
		}
	}()
	defer close(stop)
	go func() {
		defer close(recs)
		rd, err := ipc.NewReader(w.spillFile, ipc.WithAllocator(w.mem))
		if err != nil {
			recs <- spilled{err: err}
			return
		}
		defer rd.Release()
		for rd.Next() {
			rec := rd.RecordBatch()
			rec.Retain()
			select {
			case recs <- spilled{rec: rec}:
			case <-stop:
				rec.Release()
				return
			}
		}
		if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
			recs <- spilled{err: err}
		}
	}()
	for s := range recs {
		if s.err != nil {
			sink.Close()
			return fmt.Errorf("timeline spill: %w", s.err)
		}
		rec := s.rec
		arrs := make([]arrow.Array, rec.NumCols())
		var owned []arrow.Array
		for i := range arrs {
			col := rec.Column(i)
			var d arrow.Array
			switch {
			case i == 1:
				d = eventDict
			case i >= 2 && i < 2+int(NumCols) && dictArrs[i-2] != nil:
				d = dictArrs[i-2]
			}
			if d == nil {
				arrs[i] = col
				continue
			}
			da := array.NewDictionaryArray(dictType, col, d)
			owned = append(owned, da)
			arrs[i] = da
		}
		out := array.NewRecordBatch(schema, arrs, rec.NumRows())
		err := sink.Write(out)
		out.Release()
		rec.Release()
		for _, a := range owned {
			a.Release()
		}
		if err != nil {
			sink.Close()
			return err
		}
	}
	return sink.Close()
}

// appendFieldsJSON renders extra fields as a JSON object in field order.
// Hand-written because it runs per row and must be deterministic.
func appendFieldsJSON(b []byte, fs []Field) []byte {
	b = append(b, '{')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.Name)
		b = append(b, ':')
		switch f.Kind {
		case FieldInt:
			b = strconv.AppendInt(b, f.Int, 10)
		case FieldUint:
			b = strconv.AppendUint(b, uint64(f.Int), 10)
		case FieldString:
			b = appendJSONString(b, f.Str)
		case FieldInts:
			b = append(b, '[')
			for j, v := range f.Ints {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, v, 10)
			}
			b = append(b, ']')
		case FieldBytes:
			b = append(b, '"')
			b = hex.AppendEncode(b, f.Bytes)
			b = append(b, '"')
		}
	}
	return append(b, '}')
}

// appendJSONString quotes s as a JSON string (strconv.Quote's escapes are
// Go's, not JSON's, for some control and non-UTF-8 bytes).
func appendJSONString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	// Invalid UTF-8 in a kernel string has its high bytes escaped one by
	// one (as U+0080..U+00FF) so the JSON stays valid.
	valid := utf8.ValidString(s)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == 0x7f || (c >= 0x80 && !valid):
			b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
