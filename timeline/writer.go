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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
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
}

func (d *dict) index(s string) int32 {
	if i, ok := d.idx[s]; ok {
		return i
	}
	i := int32(len(d.values))
	d.idx[s] = i
	d.values = append(d.values, s)
	return i
}

// Writer writes a timeline file from a stream of events.
//
// Rows are encoded into record batches as they arrive and spilled to a
// temporary Arrow stream, so memory stays bounded by the batch size and the
// number of distinct strings, not by trace length. Close rewrites the spill
// into the final file with one fixed dictionary per string column (an Arrow
// IPC file cannot change a dictionary between batches) and the summary in
// the schema metadata, writing to a temporary name and renaming it into
// place: a failed write never leaves a partial output.
type Writer struct {
	path, format string
	batchRows    int
	mem          memory.Allocator

	spillFile   *os.File
	spill       *ipc.Writer
	spillSchema *arrow.Schema

	ts        *array.Int64Builder
	event     *array.Int32Builder
	builders  [NumCols]array.Builder
	fields    *array.StringBuilder
	callchain *array.ListBuilder
	chainVals *array.Uint64Builder
	rows      int

	eventDict dict
	dicts     [NumCols]*dict
	sum       *summarizer
	jsonBuf   []byte
	lastTime  int64
	closed    bool
}

// WriterOptions tune a Writer; the zero value is fine.
type WriterOptions struct {
	Format    string // FormatArrow or FormatParquet; "" picks by file name
	BatchRows int    // rows per batch; 0 = DefaultBatchRows
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
	w := &Writer{path: path, format: opt.Format, batchRows: opt.BatchRows, mem: memory.NewGoAllocator(), sum: newSummarizer()}
	w.eventDict.idx = map[string]int32{}
	w.spillSchema = buildSchema(nil, spillType, arrow.PrimitiveTypes.Int32)
	f, err := os.CreateTemp("", "replay-spill-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("timeline spill: %w", err)
	}
	// The spill is private scratch: unlink it now so it vanishes with the
	// process whatever happens.
	os.Remove(f.Name())
	w.spillFile = f
	w.spill = ipc.NewWriter(f, ipc.WithSchema(w.spillSchema), ipc.WithAllocator(w.mem))
	w.ts = array.NewInt64Builder(w.mem)
	w.event = array.NewInt32Builder(w.mem)
	for c := Col(0); c < NumCols; c++ {
		w.builders[c] = array.NewBuilder(w.mem, spillType(cols[c].typ))
		if cols[c].typ == tString {
			w.dicts[c] = &dict{idx: map[string]int32{}}
		}
	}
	w.fields = array.NewStringBuilder(w.mem)
	w.callchain = array.NewListBuilder(w.mem, arrow.PrimitiveTypes.Uint64)
	w.chainVals = w.callchain.ValueBuilder().(*array.Uint64Builder)
	return w, nil
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
	w.sum.add(e)
	w.ts.Append(e.Time)
	w.event.Append(w.eventDict.index(e.Name))
	for c := Col(0); c < NumCols; c++ {
		b := w.builders[c]
		if e.Has&(1<<c) == 0 {
			b.AppendNull()
			continue
		}
		v := e.ints[c]
		switch cols[c].typ {
		case tString:
			b.(*array.Int32Builder).Append(w.dicts[c].index(e.strs[c]))
		case tInt32:
			b.(*array.Int32Builder).Append(int32(v))
		case tInt64:
			b.(*array.Int64Builder).Append(v)
		case tUint64:
			b.(*array.Uint64Builder).Append(uint64(v))
		case tUint8:
			b.(*array.Uint8Builder).Append(uint8(v))
		case tBool:
			b.(*array.BooleanBuilder).Append(v != 0)
		}
	}
	if len(e.Fields) == 0 {
		w.fields.AppendNull()
	} else {
		w.jsonBuf = appendFieldsJSON(w.jsonBuf[:0], e.Fields)
		w.fields.BinaryBuilder.Append(w.jsonBuf)
	}
	if len(e.Callchain) == 0 {
		w.callchain.AppendNull()
	} else {
		w.callchain.Append(true)
		w.chainVals.AppendValues(e.Callchain, nil)
	}
	w.rows++
	if w.rows >= w.batchRows {
		return w.flush()
	}
	return nil
}

func (w *Writer) flush() error {
	if w.rows == 0 {
		return nil
	}
	arrs := make([]arrow.Array, 0, NumCols+4)
	arrs = append(arrs, w.ts.NewArray(), w.event.NewArray())
	for c := Col(0); c < NumCols; c++ {
		arrs = append(arrs, w.builders[c].NewArray())
	}
	arrs = append(arrs, w.fields.NewArray(), w.callchain.NewArray())
	rec := array.NewRecordBatch(w.spillSchema, arrs, int64(w.rows))
	for _, a := range arrs {
		a.Release()
	}
	err := w.spill.Write(rec)
	rec.Release()
	w.rows = 0
	if err != nil {
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
	w.spill.Close()
	w.spillFile.Close()
}

// Close finishes the file. meta supplies the source, topology, and the
// reader's lost and dropped counts; the writer fills in the rest of the
// summary from the rows it saw. On error nothing is left at the path.
func (w *Writer) Close(meta *Meta) (err error) {
	if w.closed {
		return errors.New("timeline: close after close")
	}
	defer w.Abort()
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.spill.Close(); err != nil {
		return fmt.Errorf("timeline spill: %w", err)
	}
	m := Meta{}
	if meta != nil {
		m = *meta
	}
	s := w.sum.summary()
	s.Lost, s.Dropped = m.Summary.Lost, m.Summary.Dropped
	m.Summary = s
	keys, vals, err := m.encode()
	if err != nil {
		return err
	}
	md := arrow.NewMetadata(keys, vals)
	schema := buildSchema(&md, arrowType, dictType)

	dir := filepath.Dir(w.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(w.path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = w.spillFile.Seek(0, io.SeekStart); err != nil {
		return err
	}
	// Hide tmp's Close from the sinks (pqarrow closes what it writes to).
	if err = w.rewrite(struct{ io.Writer }{tmp}, schema); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), w.path)
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
	return ipc.NewFileWriter(out, ipc.WithSchema(schema), ipc.WithAllocator(w.mem))
}

func (w *Writer) rewrite(out io.Writer, schema *arrow.Schema) error {
	finalDict := func(d *dict) arrow.Array {
		b := array.NewStringBuilder(w.mem)
		defer b.Release()
		b.AppendValues(d.values, nil)
		return b.NewArray()
	}
	var dictArrs [NumCols]arrow.Array
	eventDict := finalDict(&w.eventDict)
	defer eventDict.Release()
	for c := Col(0); c < NumCols; c++ {
		if w.dicts[c] != nil {
			dictArrs[c] = finalDict(w.dicts[c])
			defer dictArrs[c].Release()
		}
	}
	sink, err := w.newSink(out, schema)
	if err != nil {
		return err
	}
	rd, err := ipc.NewReader(w.spillFile, ipc.WithAllocator(w.mem))
	if err != nil {
		sink.Close()
		return fmt.Errorf("timeline spill: %w", err)
	}
	defer rd.Release()
	for rd.Next() {
		rec := rd.RecordBatch()
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
		for _, a := range owned {
			a.Release()
		}
		if err != nil {
			sink.Close()
			return err
		}
	}
	if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
		sink.Close()
		return fmt.Errorf("timeline spill: %w", err)
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
