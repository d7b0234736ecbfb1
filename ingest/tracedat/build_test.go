package tracedat

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// buildSpec describes a small trace.dat rebuilt from a real one: its
// header texts, the formats of some systems, saved cmdlines and a few
// ring-buffer pages per CPU. Tests and fuzz seeds use it to get files of
// a few KiB that still hold real kernel data.
type buildSpec struct {
	f       *file
	systems map[string]bool
	pages   [][]byte // per CPU: concatenated pages
	uname   string
	clock   string
}

func specFrom(t testing.TB, r *Reader, systems []string, pagesPerCPU int) *buildSpec {
	t.Helper()
	s := &buildSpec{f: r.f, systems: map[string]bool{}, uname: r.f.uname, clock: r.f.clock}
	for _, sys := range systems {
		s.systems[sys] = true
	}
	lay, err := newPageLayout(r.f)
	if err != nil {
		t.Fatal(err)
	}
	for _, cd := range r.f.cpus {
		st, err := newStream(r, cd, lay)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		for i := 0; i < pagesPerCPU; i++ {
			ok, err := st.nextPage()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			pg := make([]byte, r.f.pageSize)
			copy(pg, st.page)
			buf = append(buf, pg...)
		}
		s.pages = append(s.pages, buf)
	}
	return s
}

type wbuf struct {
	bytes.Buffer
	o binary.ByteOrder
}

func (w *wbuf) u16(v uint16) { w.Write(w.o.(binary.AppendByteOrder).AppendUint16(nil, v)) }
func (w *wbuf) u32(v uint32) { w.Write(w.o.(binary.AppendByteOrder).AppendUint32(nil, v)) }
func (w *wbuf) u64(v uint64) { w.Write(w.o.(binary.AppendByteOrder).AppendUint64(nil, v)) }
func (w *wbuf) cstr(s string) {
	w.WriteString(s)
	w.WriteByte(0)
}

func (s *buildSpec) prefix(w *wbuf, version string) {
	w.Write([]byte{0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'})
	w.cstr(version)
	if s.f.bigEndian {
		w.WriteByte(1)
	} else {
		w.WriteByte(0)
	}
	w.WriteByte(byte(s.f.longSize))
	w.u32(uint32(s.f.pageSize))
}

func (s *buildSpec) headers(w *wbuf) {
	w.cstr("header_page")
	w.u64(uint64(len(s.f.headerPageText)))
	w.Write(s.f.headerPageText)
	w.cstr("header_event")
	w.u64(uint64(len(s.f.headerEventText)))
	w.Write(s.f.headerEventText)
}

func (s *buildSpec) eventFormats(w *wbuf) {
	var order []string
	by := map[string][]string{}
	for _, ft := range s.f.formatTexts {
		if !s.systems[ft.system] {
			continue
		}
		if by[ft.system] == nil {
			order = append(order, ft.system)
		}
		by[ft.system] = append(by[ft.system], ft.text)
	}
	w.u32(uint32(len(order)))
	for _, sys := range order {
		w.cstr(sys)
		w.u32(uint32(len(by[sys])))
		for _, text := range by[sys] {
			w.u64(uint64(len(text)))
			w.WriteString(text)
		}
	}
}

func (s *buildSpec) cmdlines() string {
	var b bytes.Buffer
	for pid, comm := range s.f.cmdlines {
		b.WriteString(strconv.Itoa(pid) + " " + comm + "\n")
	}
	return b.String()
}

func (s *buildSpec) option(w *wbuf, id uint16, data []byte) {
	w.u16(id)
	w.u32(uint32(len(data)))
	w.Write(data)
}

// v6 writes a version 6 file.
func (s *buildSpec) v6() []byte {
	w := &wbuf{o: s.f.order}
	s.prefix(w, "6")
	s.headers(w)
	w.u32(0) // ftrace formats
	s.eventFormats(w)
	w.u32(0) // kallsyms
	w.u32(0) // printk
	cl := s.cmdlines()
	w.u64(uint64(len(cl)))
	w.WriteString(cl)
	w.u32(uint32(len(s.pages)))
	w.WriteString("options  \x00")
	s.option(w, optUname, append([]byte(s.uname), 0))
	s.option(w, optTraceClock, append([]byte("["+s.clock+"] global"), 0))
	w.u16(0)
	w.WriteString("flyrecord\x00")
	ps := s.f.pageSize
	start := (w.Len() + 16*len(s.pages) + ps - 1) / ps * ps
	off := start
	for _, p := range s.pages {
		w.u64(uint64(off))
		w.u64(uint64(len(p)))
		off += len(p)
	}
	w.Write(make([]byte, start-w.Len()))
	for _, p := range s.pages {
		w.Write(p)
	}
	return w.Bytes()
}

// v7 writes a version 7 file with sections and chunks compressed by alg
// ("none", "zstd" or "zlib").
func (s *buildSpec) v7(alg string) []byte {
	w := &wbuf{o: s.f.order}
	s.prefix(w, "7")
	compress := alg != "none"
	zenc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	defer zenc.Close()
	enc := func(b []byte) []byte {
		if alg == "zstd" {
			return zenc.EncodeAll(b, nil)
		}
		var out bytes.Buffer
		zw := zlib.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	w.cstr(alg)
	w.cstr("1")
	optsAt := w.Len()
	w.u64(0) // patched: first options offset
	section := func(id uint16, body []byte) int {
		at := w.Len()
		w.u16(id)
		flags := uint16(0)
		if compress && id != optDone {
			flags = 1
		}
		w.u16(flags)
		w.u32(0)
		if flags == 1 {
			z := enc(body)
			w.u64(uint64(8 + len(z)))
			w.u32(uint32(len(z)))
			w.u32(uint32(len(body)))
			w.Write(z)
		} else {
			w.u64(uint64(len(body)))
			w.Write(body)
		}
		return at
	}
	hb := &wbuf{o: s.f.order}
	s.headers(hb)
	hdrAt := section(optHeaderInfo, hb.Bytes())
	eb := &wbuf{o: s.f.order}
	s.eventFormats(eb)
	evAt := section(optEventFormats, eb.Bytes())
	cb := &wbuf{o: s.f.order}
	cl := s.cmdlines()
	cb.u64(uint64(len(cl)))
	cb.WriteString(cl)
	clAt := section(optCmdlines, cb.Bytes())

	// Flyrecord section: per-CPU data, chunked when compressed.
	ps := s.f.pageSize
	for w.Len()%ps != 0 {
		w.WriteByte(0)
	}
	bufAt := w.Len()
	w.u16(optBuffer)
	if compress {
		w.u16(1)
	} else {
		w.u16(0)
	}
	w.u32(0)
	sizeAt := w.Len()
	w.u64(0)
	type loc struct{ off, size int }
	var locs []loc
	for _, p := range s.pages {
		if compress {
			at := w.Len()
			nch := (len(p) + 2*ps - 1) / (2 * ps)
			w.u32(uint32(nch))
			for i := 0; i < len(p); i += 2 * ps {
				part := p[i:min(len(p), i+2*ps)]
				z := enc(part)
				w.u32(uint32(len(z)))
				w.u32(uint32(len(part)))
				w.Write(z)
			}
			locs = append(locs, loc{at, w.Len() - at})
		} else {
			for w.Len()%ps != 0 {
				w.WriteByte(0)
			}
			locs = append(locs, loc{w.Len(), len(p)})
			w.Write(p)
		}
	}
	b := w.Bytes()
	s.f.order.PutUint64(b[sizeAt:], uint64(len(b)-sizeAt-8))

	// Options: first section points at the metadata, DONE -> second with BUFFER.
	ob := &wbuf{o: s.f.order}
	off8 := func(v int) []byte { return s.f.order.(binary.AppendByteOrder).AppendUint64(nil, uint64(v)) }
	s.option(ob, optHeaderInfo, off8(hdrAt))
	s.option(ob, optEventFormats, off8(evAt))
	s.option(ob, optCmdlines, off8(clAt))
	s.option(ob, optUname, append([]byte(s.uname), 0))
	s.option(ob, optTraceClock, append([]byte("["+s.clock+"] global"), 0))
	s.option(ob, optCPUCount, s.f.order.(binary.AppendByteOrder).AppendUint32(nil, uint32(len(s.pages))))
	opt2At := w.Len() + 16 + ob.Len() + 6 + 8
	s.option(ob, optDone, off8(opt2At))
	first := w.Len()
	w.u16(optDone)
	w.u16(0)
	w.u32(0)
	w.u64(uint64(ob.Len()))
	w.Write(ob.Bytes())
	if w.Len() != opt2At {
		panic("options offset mismatch")
	}
	bb := &wbuf{o: s.f.order}
	bb.u64(uint64(bufAt))
	bb.cstr("")
	bb.cstr(s.clock)
	bb.u32(uint32(ps))
	bb.u32(uint32(len(locs)))
	for i, l := range locs {
		bb.u32(uint32(i))
		bb.u64(uint64(l.off))
		bb.u64(uint64(l.size))
	}
	ob2 := &wbuf{o: s.f.order}
	s.option(ob2, optBuffer, bb.Bytes())
	s.option(ob2, optDone, off8(0))
	w.u16(optDone)
	w.u16(0)
	w.u32(0)
	w.u64(uint64(ob2.Len()))
	w.Write(ob2.Bytes())
	b = w.Bytes()
	s.f.order.PutUint64(b[optsAt:], uint64(first))
	return b
}
