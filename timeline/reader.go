package timeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// EventReader is a stream of timeline events, in time order. Trace readers
// (ingest) and timeline files share it, so every consumer takes either.
// Event returns a record reused by the next call to Next.
type EventReader interface {
	Next() bool
	Event() *Event
	Err() error
	// Meta describes the source. A trace reader's lost and dropped counts
	// are complete only once Next has returned false.
	Meta() *Meta
	Close() error
}

// SliceReader serves events held in memory as an EventReader (hand-built
// traces in tests, ReadAll's output): Event returns the slice's own
// element, not a copy.
type SliceReader struct {
	Events []Event
	M      Meta
	i      int
}

func (r *SliceReader) Next() bool {
	if r.i >= len(r.Events) {
		return false
	}
	r.i++
	return true
}

func (r *SliceReader) Event() *Event { return &r.Events[r.i-1] }
func (r *SliceReader) Err() error    { return nil }
func (r *SliceReader) Meta() *Meta   { return &r.M }
func (r *SliceReader) Close() error  { return nil }

// ReadAll reads r's remaining events into memory, each a copy (Event's
// record is reused by Next), and returns them with r's error. For tests
// and small inputs: memory grows with the stream.
func ReadAll(r interface {
	Next() bool
	Event() *Event
	Err() error
}) ([]Event, error) {
	var out []Event
	for r.Next() {
		var e Event
		e.CopyFrom(r.Event())
		out = append(out, e)
	}
	return out, r.Err()
}

// IsTimelineFile reports whether the first bytes are an Arrow IPC file or
// a Parquet file (the formats a timeline is written in).
func IsTimelineFile(head []byte) bool {
	return bytes.HasPrefix(head, []byte("ARROW1")) || bytes.HasPrefix(head, []byte("PAR1"))
}

// Reader reads a timeline file (Arrow IPC file or Parquet) batch by batch.
type Reader struct {
	path string
	f    *os.File
	meta *Meta
	next func() (arrow.RecordBatch, error)
	stop func()

	rec  arrow.RecordBatch
	row  int
	ev   Event
	err  error
	cols readerCols
}

type readerCols struct {
	ts       *array.Int64
	event    []string
	eventIdx *array.Dictionary

	eventCache dictCache
	caches     [NumCols]dictCache
	opt        [NumCols]arrow.Array
	strs       [NumCols][]string
	fields     *array.String
	chain      *array.List
	chainVal   *array.Uint64
}

// Open opens a timeline file written by Writer.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 6)
	n, _ := io.ReadFull(f, head)
	r := &Reader{path: path, f: f}
	switch {
	case bytes.HasPrefix(head[:n], []byte("ARROW1")):
		err = damagedAsError(r.openIPC)
	case bytes.HasPrefix(head[:n], []byte("PAR1")):
		err = damagedAsError(r.openParquet)
	default:
		err = fmt.Errorf("not an Arrow IPC file or Parquet file (first bytes %q)", head[:n])
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

func (r *Reader) openIPC() error {
	st, err := r.f.Stat()
	if err != nil {
		return err
	}
	if err := CheckIPCFooter(r.f, st.Size()); err != nil {
		return fmt.Errorf("damaged Arrow IPC file: %w", err)
	}
	fr, err := ipc.NewFileReader(r.f, ipc.WithAllocator(memory.NewGoAllocator()), IPCBodyLimit(st.Size()))
	if err != nil {
		return err
	}
	if err := r.setSchema(fr.Schema()); err != nil {
		fr.Close()
		return err
	}
	i := 0
	r.next = func() (arrow.RecordBatch, error) {
		if i >= fr.NumRecords() {
			return nil, io.EOF
		}
		rec, err := fr.RecordBatch(i)
		i++
		if err != nil {
			return nil, err
		}
		rec.Retain()
		return rec, nil
	}
	r.stop = func() { fr.Close() }
	return nil
}

func (r *Reader) openParquet() error {
	pf, err := file.NewParquetReader(r.f)
	if err != nil {
		return err
	}
	if err := CheckParquetArrowSchema(pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")); err != nil {
		pf.Close()
		return fmt.Errorf("damaged Parquet file: %w", err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: DefaultBatchRows}, memory.NewGoAllocator())
	if err != nil {
		pf.Close()
		return err
	}
	schema, err := fr.Schema()
	if err != nil {
		pf.Close()
		return err
	}
	// Parquet keeps the schema metadata in the file's key-value metadata.
	kv := pf.MetaData().KeyValueMetadata()
	keys, vals := []string{}, []string{}
	for _, k := range kv.Keys() {
		if v := kv.FindValue(k); v != nil {
			keys, vals = append(keys, k), append(vals, *v)
		}
	}
	md := arrow.NewMetadata(keys, vals)
	if err := r.setSchema(arrow.NewSchema(schema.Fields(), &md)); err != nil {
		pf.Close()
		return err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		pf.Close()
		return err
	}
	r.next = func() (arrow.RecordBatch, error) {
		rec, err := rr.Read()
		if err != nil {
			return nil, err
		}
		rec.Retain()
		return rec, nil
	}
	r.stop = func() { rr.Release(); pf.Close() }
	return nil
}

func (r *Reader) setSchema(s *arrow.Schema) error {
	md := s.Metadata()
	m, err := decodeMeta(func(k string) (string, bool) {
		i := md.FindKey(k)
		if i < 0 {
			return "", false
		}
		return md.Values()[i], true
	})
	if err != nil {
		return err
	}
	r.meta = m
	if len(s.FieldIndices(colTS)) == 0 || len(s.FieldIndices(colEvent)) == 0 {
		return fmt.Errorf("timeline without %q and %q columns", colTS, colEvent)
	}
	return nil
}

// Meta returns the file's metadata.
func (r *Reader) Meta() *Meta { return r.meta }

// Event returns the current event.
func (r *Reader) Event() *Event { return &r.ev }

// Err returns the first error met.
func (r *Reader) Err() error { return r.err }

// Close releases the file.
func (r *Reader) Close() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	return r.f.Close()
}

// damagedAsError runs open, turning a panic of the Arrow library on a
// damaged file (it trusts the file's footer and buffer offsets) into an
// error.
func damagedAsError(open func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("damaged Arrow data: %v", p)
		}
	}()
	return open()
}

// Next advances to the next event.
func (r *Reader) Next() (ok bool) {
	if r.err != nil {
		return false
	}
	defer func() {
		if p := recover(); p != nil {
			// A damaged batch: the Arrow library trusts its offsets.
			r.err, ok = fmt.Errorf("%s: damaged Arrow data: %v", r.path, p), false
		}
	}()
	for r.rec == nil || r.row >= int(r.rec.NumRows()) {
		if r.rec != nil {
			r.rec.Release()
			r.rec = nil
		}
		rec, err := r.next()
		if err == io.EOF {
			return false
		}
		if err != nil {
			r.err = fmt.Errorf("%s: %w", r.path, err)
			return false
		}
		if err := r.bind(rec); err != nil {
			rec.Release()
			r.err = fmt.Errorf("%s: %w", r.path, err)
			return false
		}
		r.rec, r.row = rec, 0
	}
	r.fill(r.row)
	r.row++
	if err := CheckCPUs(&r.ev); err != nil {
		r.err = fmt.Errorf("%s: event at %d ns: %w", r.path, r.ev.Time, err)
		return false
	}
	return true
}

// dictStrings copies a dictionary column's values into Go strings, so
// events can hold them after the batch is released. An IPC file has one
// dictionary per column for every batch, so the copy is made once and
// reused while the dictionary array is the same (cache, keyed by it).
func dictStrings(a arrow.Array, cache *dictCache) ([]string, *array.Dictionary, error) {
	switch d := a.(type) {
	case *array.Dictionary:
		vals, ok := d.Dictionary().(*array.String)
		if !ok {
			return nil, nil, fmt.Errorf("dictionary of %s, want utf8", d.Dictionary().DataType())
		}
		if cache.src == vals.Data() {
			return cache.strs, d, nil
		}
		out := make([]string, vals.Len())
		for i := range out {
			out[i] = string([]byte(vals.Value(i)))
		}
		cache.src, cache.strs = vals.Data(), out
		return out, d, nil
	}
	return nil, nil, fmt.Errorf("column of %s, want dictionary<int32, utf8>", a.DataType())
}

// dictCache remembers one column's copied dictionary.
type dictCache struct {
	src  arrow.ArrayData
	strs []string
}

func (r *Reader) bind(rec arrow.RecordBatch) error {
	s := rec.Schema()
	col := func(name string) arrow.Array {
		idx := s.FieldIndices(name)
		if len(idx) == 0 {
			return nil
		}
		return rec.Column(idx[0])
	}
	c := &r.cols
	var ok bool
	if c.ts, ok = col(colTS).(*array.Int64); !ok {
		return fmt.Errorf("column %q is not int64", colTS)
	}
	ev, evIdx, err := dictStrings(col(colEvent), &c.eventCache)
	if err != nil {
		return fmt.Errorf("column %q: %v", colEvent, err)
	}
	c.event, c.eventIdx = ev, evIdx
	for k := Col(0); k < NumCols; k++ {
		a := col(cols[k].name)
		c.opt[k], c.strs[k] = a, nil
		if a == nil {
			continue
		}
		if cols[k].typ == tString {
			if c.strs[k], _, err = dictStrings(a, &c.caches[k]); err != nil {
				return fmt.Errorf("column %q: %v", cols[k].name, err)
			}
			continue
		}
		if !arrow.TypeEqual(a.DataType(), arrowType(cols[k].typ)) {
			return fmt.Errorf("column %q is %s, want %s", cols[k].name, a.DataType(), arrowType(cols[k].typ))
		}
	}
	c.fields, _ = col(colFields).(*array.String)
	c.chain, _ = col(colCallchain).(*array.List)
	c.chainVal = nil
	if c.chain != nil {
		c.chainVal, _ = c.chain.ListValues().(*array.Uint64)
	}
	return nil
}

func (r *Reader) fill(i int) {
	c := &r.cols
	e := &r.ev
	e.Reset()
	e.Time = c.ts.Value(i)
	e.Name = c.event[c.opt0(i)]
	e.Kind = KindOf(e.Name)
	for k := Col(0); k < NumCols; k++ {
		a := c.opt[k]
		if a == nil || a.IsNull(i) {
			continue
		}
		switch v := a.(type) {
		case *array.Dictionary:
			e.SetStr(k, c.strs[k][v.GetValueIndex(i)])
		case *array.Int32:
			e.SetInt(k, int64(v.Value(i)))
		case *array.Int64:
			e.SetInt(k, v.Value(i))
		case *array.Uint64:
			e.SetInt(k, int64(v.Value(i)))
		case *array.Uint8:
			e.SetInt(k, int64(v.Value(i)))
		case *array.Boolean:
			b := int64(0)
			if v.Value(i) {
				b = 1
			}
			e.SetInt(k, b)
		}
	}
	if c.fields != nil && c.fields.IsValid(i) {
		e.Fields = parseFieldsJSON(e.Fields, c.fields.Value(i))
	}
	if c.chain != nil && c.chainVal != nil && c.chain.IsValid(i) {
		lo, hi := c.chain.ValueOffsets(i)
		e.Callchain = append(e.Callchain, c.chainVal.Uint64Values()[lo:hi]...)
	}
}

// opt0 returns the event-name dictionary index of row i.
func (c *readerCols) opt0(i int) int { return c.eventIdx.GetValueIndex(i) }

// parseFieldsJSON turns the "fields" column back into Fields. Integers stay
// integers; strings (including hex bytes) come back as strings.
func parseFieldsJSON(dst []Field, s string) []Field {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return dst
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return dst
		}
		name, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return dst
		}
		f := Field{Name: name}
		var n json.Number
		var str string
		var ints []int64
		switch {
		case json.Unmarshal(raw, &n) == nil:
			if v, err := n.Int64(); err == nil {
				f.Kind, f.Int = FieldInt, v
			} else {
				f.Kind, f.Str = FieldString, n.String()
			}
		case json.Unmarshal(raw, &str) == nil:
			f.Kind, f.Str = FieldString, str
		case json.Unmarshal(raw, &ints) == nil:
			f.Kind, f.Ints = FieldInts, ints
		default:
			f.Kind, f.Str = FieldString, string(raw)
		}
		dst = append(dst, f)
	}
	return dst
}
