package timeline

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A timeline file written by the Writer, as bytes.
func sampleIPC(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(writeSample(t, t.TempDir(), "t.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// footerOf returns the footer's start in the file and a walker over it.
func footerOf(b []byte) (int, *fbWalk) {
	n := len(b)
	flen := int(binary.LittleEndian.Uint32(b[n-10:]))
	start := n - 10 - flen
	return start, &fbWalk{b: b[start : n-10], seen: map[int]bool{}}
}

// The footer check by hand-made damage to a real timeline file: each case
// edits the bytes, and the check must refuse them with the reason (and
// Open must return an error, not die allocating). The length of the
// schema's fields vector set to 2^31−1 is the damage FuzzOpen found:
// arrow-go made a Field slice that long.
func TestCheckIPCFooter(t *testing.T) {
	orig := sampleIPC(t)
	fstart, w := footerOf(orig)
	root, err := w.deref(0)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := w.table(root, slotFooterSchema)
	if err != nil || schema == 0 {
		t.Fatalf("schema table: %d, %v", schema, err)
	}
	fields, nf, err := w.vector(schema, slotSchemaFields, 4)
	if err != nil || nf < 2 {
		t.Fatalf("fields vector: %d fields, %v", nf, err)
	}
	first, _ := w.deref(fields)
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"intact", func(b []byte) []byte { return b }, ""},
		{"fields count 2^31-1", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[fstart+fields-4:], 1<<31-1)
			return b
		}, "more than the footer's"},
		{"second field is the first again", func(b []byte) []byte {
			// element 1's uoffset, stored at fields+4, made to point at
			// element 0's table
			binary.LittleEndian.PutUint32(b[fstart+fields+4:], uint32(first-(fields+4)))
			return b
		}, "reached twice"},
		{"root offset past the footer", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[fstart:], 1<<30)
			return b
		}, "out of range"},
		{"footer length past the file", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-10:], uint32(len(b)))
			return b
		}, "outside the file"},
		{"no end marker", func(b []byte) []byte { return b[:len(b)-1] }, "no Arrow IPC end marker"},
		{"too short", func(b []byte) []byte { return b[:12] }, "too short"},
	} {
		b := c.edit(bytes.Clone(orig))
		err := CheckIPCFooter(bytes.NewReader(b), int64(len(b)))
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		p := filepath.Join(t.TempDir(), "bad.arrow")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if r, err := Open(p); err == nil {
			r.Close()
			t.Errorf("%s: Open accepted the damaged file", c.name)
		}
	}
}

// The Arrow schema a Parquet timeline carries (base64 of an IPC schema
// message in its ARROW:schema metadata) gets the same check: with the
// fields count set to 2^31−1 in place, Open refuses the file (FuzzOpen
// found pqarrow allocating that slice), and the intact file opens.
func TestParquetArrowSchemaChecked(t *testing.T) {
	p := writeSample(t, t.TempDir(), "t.parquet")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(p)
	if err != nil {
		t.Fatalf("intact: %v", err)
	}
	r.Close()
	key := []byte("ARROW:schema")
	i := bytes.Index(b, key)
	if i < 0 {
		t.Fatal("no ARROW:schema metadata in the Parquet file")
	}
	// Thrift compact: the value's field header, a varint length, the
	// base64 text; find the text as the longest base64 run after the key.
	j := i + len(key)
	for j < len(b) && !isBase64(b[j]) {
		j++
	}
	k := j
	for k < len(b) && isBase64(b[k]) {
		k++
	}
	enc := string(b[j:k])
	msg, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatalf("decoding %d base64 bytes: %v", len(enc), err)
	}
	if err := checkSchemaMessage(msg); err != nil {
		t.Fatalf("intact schema message: %v", err)
	}
	off := 4
	if binary.LittleEndian.Uint32(msg) == 0xffffffff {
		off = 8
	}
	mw := &fbWalk{b: msg[off:], seen: map[int]bool{}}
	root, _ := mw.deref(0)
	schema, err := mw.table(root, slotMessageHeader)
	if err != nil || schema == 0 {
		t.Fatalf("schema table: %d, %v", schema, err)
	}
	fields, _, err := mw.vector(schema, slotSchemaFields, 4)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(msg[off+fields-4:], 1<<31-1)
	if err := checkSchemaMessage(msg); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("damaged schema message: error %v, want a vector out of range", err)
	}
	copy(b[j:k], base64.StdEncoding.EncodeToString(msg))
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = Open(bad)
	if err == nil {
		r.Close()
		t.Fatal("Open accepted a Parquet file whose Arrow schema claims 2^31-1 fields")
	}
	if !strings.Contains(err.Error(), "ARROW:schema") {
		t.Errorf("error %v, want it to name the ARROW:schema metadata", err)
	}
}

func isBase64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// The record batches by hand-made damage to real timeline files, written
// uncompressed and with LZ4: a buffer, the row count or a field node's
// length past what the batch's body holds, a compressed buffer claiming
// to uncompress to 2^40 bytes, a block's body past the footer. arrow-go
// would allocate each before reading (FuzzLoadWorkload found a 63 kB
// file asking for 16 GiB); the check refuses them, and Open with them.
func TestCheckIPCBatches(t *testing.T) {
	for _, codec := range []string{"none", "lz4"} {
		p := filepath.Join(t.TempDir(), "t.arrow")
		writeEvents(t, p, WriterOptions{Compression: codec}, &Meta{})
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fstart, fw := footerOf(orig)
		_, recs, err := footerBlocks(fw.b)
		if err != nil || len(recs) == 0 {
			t.Fatalf("%s: record batch blocks %v, %v", codec, recs, err)
		}
		blk := recs[0]
		// The message: continuation, length, flatbuffer.
		msgAt := int(blk.off) + 8
		n := int(binary.LittleEndian.Uint32(orig[msgAt-4:]))
		w := &fbWalk{b: orig[msgAt : msgAt+n], seen: map[int]bool{}}
		root, _ := w.deref(0)
		rb, err := w.table(root, slotMessageHeader)
		if err != nil || rb == 0 {
			t.Fatalf("%s: record batch table %d, %v", codec, rb, err)
		}
		rowsAt, _ := w.field(rb, slotBatchLength)
		nodes, _, _ := w.vector(rb, slotBatchNodes, batchStructSize)
		bufs, nb, _ := w.vector(rb, slotBatchBuffers, batchStructSize)
		body := int(blk.off) + int(blk.meta)
		// A buffer of at least 8 bytes (compressed: its length prefix).
		big := -1
		for k := 0; k < nb; k++ {
			if binary.LittleEndian.Uint64(orig[msgAt+bufs+k*batchStructSize+8:]) >= 8 {
				big = k
				break
			}
		}
		put := func(b []byte, at int, v uint64) []byte { binary.LittleEndian.PutUint64(b[at:], v); return b }
		cases := []struct {
			name string
			edit func(b []byte) []byte
			want string
		}{
			{"intact", func(b []byte) []byte { return b }, ""},
			{"buffer length 2^40", func(b []byte) []byte { return put(b, msgAt+bufs+8, 1<<40) }, "buffer 0 at"},
			{"rows 2^40", func(b []byte) []byte { return put(b, msgAt+rowsAt, 1<<40) }, "rows, more than"},
			{"field node length 2^40", func(b []byte) []byte { return put(b, msgAt+nodes, 1<<40) }, "field node 0"},
			{"block body past the footer", func(b []byte) []byte {
				// recordBatches' first Block: its bodyLength at byte 16.
				start, _, _ := footerVector(fw.b, footerRecordBatches)
				return put(b, fstart+start+16, 1<<40)
			}, "outside the file"},
		}
		if codec == "lz4" {
			cases = append(cases, struct {
				name string
				edit func(b []byte) []byte
				want string
			}{"uncompressed length 2^40", func(b []byte) []byte {
				off := binary.LittleEndian.Uint64(orig[msgAt+bufs+big*batchStructSize:])
				return put(b, body+int(off), 1<<40)
			}, "uncompresses to"})
		}
		for _, c := range cases {
			b := c.edit(bytes.Clone(orig))
			err := CheckIPCFooter(bytes.NewReader(b), int64(len(b)))
			if c.want == "" {
				if err != nil {
					t.Errorf("%s %s: %v", codec, c.name, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: error %v, want %q", codec, c.name, err, c.want)
			}
			bad := filepath.Join(t.TempDir(), "bad.arrow")
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if r, err := Open(bad); err == nil {
				r.Close()
				t.Errorf("%s %s: Open accepted the damaged file", codec, c.name)
			}
		}
	}
}
