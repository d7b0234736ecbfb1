package timeline

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"

	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/pierrec/lz4/v4"
)

// batchEncoder writes a batch as an Arrow IPC record batch message,
// uncompressed or with LZ4_FRAME buffer compression.
//
// arrow-go's encoder (ipc.GetRecordBatchPayload) produces the same bytes
// (a test holds the two equal), but it allocates and zeroes a fresh output
// buffer for every compressed buffer of every batch and compresses every
// buffer, including the many that are all zero: a column no row of the
// batch sets is a zero validity bitmap and zero values. Ingest spends most
// of its writer's time there. This encoder reuses its output buffers,
// compresses a run of n zero bytes once per n, and builds the message
// metadata straight from the batch's slices.
type batchEncoder struct {
	lz4     bool
	bufs    []bodyBuf
	data    [][]byte // what goes in the body for each of bufs
	own     [][]byte // compressed output, per buffer slot, reused
	nodes   []fieldNode
	zeros   map[int][]byte // LZ4_FRAME form (length prefix included) of n zero bytes
	workers []*lz4.Writer
	fb      *flatbuffers.Builder
	hdr     []byte
	zero    []byte
}

// bodyBuf is one buffer of the message body: its bytes, and whether they
// are known to be all zero.
type bodyBuf struct {
	src  []byte
	zero bool
}

type fieldNode struct{ length, nulls int64 }

// The IPC format's constants (format/Message.fbs, Schema.fbs).
const (
	metadataV5          = 4 // MetadataVersion.V5
	headerRecordBatch   = 3 // MessageHeader.RecordBatch
	codecLZ4Frame       = 0 // CompressionType.LZ4_FRAME
	bodyCompressBuffer  = 0 // BodyCompressionMethod.BUFFER
	ipcContinuation     = 0xffffffff
	uncompressedNoCodec = -1 // a buffer's length prefix: stored as is
)

func newBatchEncoder(lz4Codec bool, workers int) *batchEncoder {
	e := &batchEncoder{lz4: lz4Codec, zeros: map[int][]byte{}, fb: flatbuffers.NewBuilder(4096)}
	if lz4Codec {
		for range max(1, workers) {
			w := lz4.NewWriter(nil)
			// The options arrow-go (and Arrow C++) use for LZ4_FRAME.
			if err := w.Apply(lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
				panic(err) // constant options: cannot fail
			}
			e.workers = append(e.workers, w)
		}
	}
	return e
}

// layout lists b's field nodes and body buffers in the order of the
// schema's fields (depth first), as the IPC format lays them out.
func (e *batchEncoder) layout(b *batch) {
	b.settle()
	n := b.n
	e.nodes = e.nodes[:0]
	e.bufs = e.bufs[:0]
	node := func(nulls int) { e.nodes = append(e.nodes, fieldNode{int64(n), int64(nulls)}) }
	add := func(p []byte, zero bool) {
		e.bufs = append(e.bufs, bodyBuf{src: p, zero: zero || len(p) == 0})
	}
	validity := func(v []byte, nulls int) {
		if nulls == 0 {
			add(nil, true) // no bitmap: all valid
			return
		}
		if nulls == n {
			// As arrow-go: a fresh zero bitmap, padded to 64 bytes.
			add(e.zeroBytes(int(pad64(int64(n+7)/8))), true)
			return
		}
		add(v[:(n+7)/8], false)
	}
	node(0)
	add(nil, true)
	add(bytesOf(b.ts), false)
	node(0)
	add(nil, true)
	add(bytesOf(b.event), false)
	for c := Col(0); c < NumCols; c++ {
		cb := &b.cols[c]
		nulls := n - cb.set
		node(nulls)
		validity(cb.valid, nulls)
		// Null slots hold zero, so a column no row sets is all zero.
		add(cb.data(c, n), cb.set == 0)
	}
	f := &b.fields
	node(f.nulls)
	validity(f.valid, f.nulls)
	add(bytesOf(f.offsets), f.nulls == n)
	add(f.data, len(f.data) == 0)
	l := &b.chain
	node(l.nulls)
	validity(l.valid, l.nulls)
	add(bytesOf(l.offsets), l.nulls == n)
	e.nodes = append(e.nodes, fieldNode{int64(len(l.values)), 0})
	add(nil, true)
	add(bytesOf(l.values), len(l.values) == 0)
}

// compress sets e.data to each buffer's LZ4_FRAME form: an int64
// uncompressed length, then the frame. Empty buffers stay empty.
func (e *batchEncoder) compress() error {
	for len(e.own) < len(e.bufs) {
		e.own = append(e.own, nil)
	}
	outs := e.data
	// Zero runs first and serially: they are cached by length.
	jobs := make([]int, 0, len(e.bufs))
	for i := range e.bufs {
		bb := &e.bufs[i]
		switch {
		case len(bb.src) == 0:
			outs[i] = nil
		case bb.zero:
			z, ok := e.zeros[len(bb.src)]
			if !ok {
				var err error
				if z, err = lz4Frame(e.workers[0], nil, bb.src); err != nil {
					return err
				}
				e.zeros[len(bb.src)] = z
			}
			outs[i] = z
		default:
			jobs = append(jobs, i)
		}
	}
	if len(e.workers) == 1 || len(jobs) < 2 {
		for _, i := range jobs {
			o, err := lz4Frame(e.workers[0], e.own[i], e.bufs[i].src)
			if err != nil {
				return err
			}
			outs[i], e.own[i] = o, o
		}
		return nil
	}
	// Workers take jobs in turn from a shared counter; the output does
	// not depend on which worker compressed what.
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
		errs = make([]error, len(e.workers))
	)
	for w := range e.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= len(jobs) {
					return
				}
				i := jobs[k]
				o, err := lz4Frame(e.workers[w], e.own[i], e.bufs[i].src)
				if err != nil {
					errs[w] = err
					return
				}
				outs[i], e.own[i] = o, o
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// lz4Frame appends to dst the length prefix and LZ4 frame of src.
func lz4Frame(w *lz4.Writer, dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(binary.LittleEndian.AppendUint64(dst[:0], uint64(len(src))))
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write encodes b as one record batch message on out, returning the
// message's metadata length (prefix and padding included) and body length,
// as the file footer's Block records them.
func (e *batchEncoder) write(out io.Writer, b *batch) (meta int32, body int64, err error) {
	e.layout(b)
	e.data = e.data[:0]
	for i := range e.bufs {
		e.data = append(e.data, e.bufs[i].src)
	}
	if e.lz4 {
		if err := e.compress(); err != nil {
			return 0, 0, err
		}
	}
	data := e.data
	fb := e.fb
	fb.Reset()
	for _, d := range data {
		body += pad8(int64(len(d)))
	}
	fb.StartVector(16, len(e.nodes), 8)
	for i := len(e.nodes) - 1; i >= 0; i-- {
		fb.Prep(8, 16)
		fb.PrependInt64(e.nodes[i].nulls)
		fb.PrependInt64(e.nodes[i].length)
	}
	nodes := fb.EndVector(len(e.nodes))
	// Buffers: offset and length within the body, each padded to 8.
	fb.StartVector(16, len(data), 8)
	off := body
	for i := len(data) - 1; i >= 0; i-- {
		off -= pad8(int64(len(data[i])))
		fb.Prep(8, 16)
		fb.PrependInt64(int64(len(data[i])))
		fb.PrependInt64(off)
	}
	buffers := fb.EndVector(len(data))
	var comp flatbuffers.UOffsetT
	if e.lz4 {
		fb.StartObject(2)
		fb.PrependInt8Slot(0, codecLZ4Frame, 0)
		fb.PrependInt8Slot(1, bodyCompressBuffer, 0)
		comp = fb.EndObject()
	}
	fb.StartObject(5)
	fb.PrependInt64Slot(0, int64(b.n), 0)
	fb.PrependUOffsetTSlot(1, nodes, 0)
	fb.PrependUOffsetTSlot(2, buffers, 0)
	if e.lz4 {
		fb.PrependUOffsetTSlot(3, comp, 0)
	}
	rb := fb.EndObject()
	fb.StartObject(5)
	fb.PrependInt16Slot(0, metadataV5, 0)
	fb.PrependByteSlot(1, headerRecordBatch, 0)
	fb.PrependUOffsetTSlot(2, rb, 0)
	fb.PrependInt64Slot(3, body, 0)
	fb.Finish(fb.EndObject())
	msg := fb.FinishedBytes()
	metaLen := pad8(int64(len(msg)) + 8)
	h := e.hdr[:0]
	h = binary.LittleEndian.AppendUint32(h, ipcContinuation)
	h = binary.LittleEndian.AppendUint32(h, uint32(metaLen-8))
	h = append(h, msg...)
	h = append(h, zeroPad[:metaLen-8-int64(len(msg))]...)
	e.hdr = h
	if _, err := out.Write(h); err != nil {
		return 0, 0, err
	}
	for _, d := range data {
		if _, err := out.Write(d); err != nil {
			return 0, 0, err
		}
		if p := pad8(int64(len(d))) - int64(len(d)); p > 0 {
			if _, err := out.Write(zeroPad[:p]); err != nil {
				return 0, 0, err
			}
		}
	}
	return int32(metaLen), body, nil
}

var zeroPad [8]byte

// zeroBytes returns n zero bytes, shared and never written.
func (e *batchEncoder) zeroBytes(n int) []byte {
	if len(e.zero) < n {
		e.zero = make([]byte, n)
	}
	return e.zero[:n]
}

func pad64(n int64) int64 { return (n + 63) &^ 63 }

func pad8(n int64) int64 { return (n + 7) &^ 7 }
