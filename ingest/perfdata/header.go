package perfdata

import (
	"bufio"
	"io"
	"os"
)

const (
	pipeHeaderSize = 16
	fileHeaderSize = 104
	oldHeaderSize  = 72 // no feature bitmap
)

type section struct{ off, size uint64 }

// openFile reads the file-mode header, the attrs and the feature sections,
// and positions the record source on the data section.
func (r *Reader) openFile(ra io.ReaderAt, fileSize int64, hdrSize uint64) error {
	if fileSize < int64(hdrSize) {
		return r.errf(0, "file of %d bytes is shorter than its %d-byte header", fileSize, hdrSize)
	}
	hb := make([]byte, hdrSize)
	if _, err := ra.ReadAt(hb, 0); err != nil {
		return r.wrap(0, "reading the file header", err)
	}
	ord := r.ord
	attrSize := ord.u64(hb[16:])
	attrs := section{ord.u64(hb[24:]), ord.u64(hb[32:])}
	data := section{ord.u64(hb[40:]), ord.u64(hb[48:])}
	var bitmap [32]byte
	if hdrSize == fileHeaderSize {
		copy(bitmap[:], hb[72:104])
	}
	if attrSize < attrSizeVer0+16 || attrSize > maxAttrSize+16 {
		return r.errf(16, "attr_size %d, expected a perf_event_attr of 64..%d bytes plus 16", attrSize, maxAttrSize)
	}
	if err := r.checkSection(24, "attrs section", attrs, fileSize); err != nil {
		return err
	}
	if attrs.size < attrSize {
		return r.errf(24, "attrs section of %d bytes holds no attr of %d bytes", attrs.size, attrSize)
	}
	if data.off > uint64(fileSize) || data.off < hdrSize {
		return r.errf(40, "data section offset %#x is outside the file (%d bytes)", data.off, fileSize)
	}

	// Attrs, each followed by {ids offset, ids size}.
	ab := make([]byte, attrs.size)
	if _, err := ra.ReadAt(ab, int64(attrs.off)); err != nil {
		return r.wrap(int64(attrs.off), "reading the attrs section", err)
	}
	n := attrs.size / attrSize
	var totalIDs uint64
	for i := uint64(0); i < n; i++ {
		base := int64(attrs.off + i*attrSize)
		e := ab[i*attrSize : (i+1)*attrSize]
		a, cerr := parseAttr(e[:attrSize-16], base, ord, "attr "+itoa(int64(i)))
		if cerr != nil {
			return r.errf(cerr.at, "%s", cerr.msg)
		}
		ids := section{ord.u64(e[attrSize-16:]), ord.u64(e[attrSize-8:])}
		if err := r.checkSection(base+int64(attrSize)-16, "ids of attr "+itoa(int64(i)), ids, fileSize); err != nil {
			return err
		}
		// Each attr has its own ids array; together they cannot exceed the
		// file, however the sections point (this bounds what we allocate).
		if totalIDs += ids.size; totalIDs > uint64(fileSize) {
			return r.errf(base+int64(attrSize)-8, "ids of attr %d: the attrs' id arrays add up to %d bytes, more than the file's %d", i, totalIDs, fileSize)
		}
		if ids.size > 0 {
			idb := make([]byte, ids.size/8*8)
			if _, err := ra.ReadAt(idb, int64(ids.off)); err != nil {
				return r.wrap(int64(ids.off), "reading sample ids", err)
			}
			a.ids = make([]uint64, len(idb)/8)
			for j := range a.ids {
				a.ids[j] = ord.u64(idb[j*8:])
			}
		}
		if err := r.addAttr(a, base); err != nil {
			return err
		}
	}

	// Feature sections: their table follows the data section.
	r.dataOff = int64(data.off)
	dataEnd := data.off + data.size
	switch {
	case data.size == 0:
		// perf record writes the final header only when it exits cleanly.
		r.drop("header not finalized (perf record did not finish): data read to end of file, no header features", 1)
		r.dataSize = -1
		r.dataTruncated = true
	case dataEnd > uint64(fileSize) || dataEnd < data.off:
		r.drop("data section bytes missing (file truncated)", int64(dataEnd-uint64(fileSize)))
		r.dataSize = fileSize - int64(data.off)
		r.dataTruncated = true
	default:
		r.dataSize = int64(data.size)
		if err := r.readFeatures(ra, fileSize, dataEnd, bitmap); err != nil {
			return err
		}
	}
	r.finishHeader()

	var br peeker
	if f, ok := ra.(*os.File); ok && fileSize >= mapMinSize {
		// A large regular file is mapped rather than read: the records
		// are parsed in place instead of copied out of the page cache
		// (about a quarter of the reader's time on a 160 MB trace).
		if m := mapFile(f, fileSize); m != nil {
			r.mapped = m
			r.q.mapped = m
			br = &memReader{b: m[r.dataOff:], drop: true}
		}
	}
	if br == nil {
		sr := io.NewSectionReader(ra, r.dataOff, max(r.dataSize, fileSize-r.dataOff))
		// The buffer must hold the largest record (64 KiB); small files
		// need no more.
		bs := int(min(max(fileSize-r.dataOff, 72<<10), bufSize))
		br = bufio.NewReaderSize(sr, bs)
	}
	r.src = &recSource{r: r, br: br, off: r.dataOff, left: r.dataSize, toEOF: data.size == 0}
	if r.dataSize < 0 {
		r.src.left = -1
	}
	return nil
}

func (r *Reader) checkSection(at int64, what string, s section, fileSize int64) error {
	end := s.off + s.size
	if end < s.off || end > uint64(fileSize) {
		return r.errf(at, "%s [%#x, +%d) runs past the end of the file (%d bytes)", what, s.off, s.size, fileSize)
	}
	return nil
}

// featureBits decodes the header's feature bitmap. A big-endian writer
// stored it as native unsigned longs, 64- or 32-bit; like perf, take the
// reading in which HOSTNAME (always written since 2012) is set.
func (r *Reader) featureBits(bm [32]byte) []int {
	test := func(width int) []int {
		var out []int
		for bit := 0; bit < 256; bit++ {
			var set bool
			switch width {
			case 64:
				w := r.ord.u64(bm[bit/64*8:])
				set = w&(1<<(bit%64)) != 0
			case 32:
				w := r.ord.u32(bm[bit/32*4:])
				set = w&(1<<(bit%32)) != 0
			}
			if set {
				out = append(out, bit)
			}
		}
		return out
	}
	feats := test(64)
	if r.ord.big {
		has := func(fs []int) bool {
			for _, f := range fs {
				if f == featHostname {
					return true
				}
			}
			return false
		}
		if !has(feats) {
			if f32 := test(32); has(f32) {
				feats = f32
			}
		}
	}
	return feats
}

func (r *Reader) readFeatures(ra io.ReaderAt, fileSize int64, tableOff uint64, bm [32]byte) error {
	feats := r.featureBits(bm)
	if len(feats) == 0 {
		return nil
	}
	tsize := uint64(len(feats)) * 16
	if tableOff+tsize > uint64(fileSize) {
		r.drop("feature sections missing (file truncated)", int64(len(feats)))
		return nil
	}
	tb := make([]byte, tsize)
	if _, err := ra.ReadAt(tb, int64(tableOff)); err != nil {
		return r.wrap(int64(tableOff), "reading the feature table", err)
	}
	for i, f := range feats {
		at := int64(tableOff) + int64(i)*16
		s := section{r.ord.u64(tb[i*16:]), r.ord.u64(tb[i*16+8:])}
		r.meta.Source.Features = append(r.meta.Source.Features, featName(f))
		err := r.checkSection(at, featName(f)+" feature section", s, fileSize)
		if !featureParsed(f) {
			if err != nil {
				// Not needed, but a sign the file was cut: say so.
				r.drop("feature sections past the end of the file", 1)
			}
			continue
		}
		if err != nil {
			return err
		}
		b := make([]byte, s.size)
		if _, err := ra.ReadAt(b, int64(s.off)); err != nil {
			return r.wrap(int64(s.off), "reading feature "+featName(f), err)
		}
		if err := r.parseFeature(f, b, int64(s.off)); err != nil {
			return err
		}
	}
	return nil
}
