// Package ingest opens any supported trace, detected by its content rather
// than its name, as a stream of timeline events. Each format has its own
// subpackage; all of them emit the same timeline.Event.
package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/schedreplay/replay/ingest/ftrace"
	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/ingest/perfscript"
	"github.com/schedreplay/replay/ingest/tracedat"
	"github.com/schedreplay/replay/timeline"
)

// ErrUnknownFormat is returned for input no reader recognises.
var ErrUnknownFormat = errors.New("unrecognised trace format")

// sniffLen is how many leading bytes format detection looks at: enough
// for the binary magics and for the first lines of a text trace (header
// comments included).
const sniffLen = 16 << 10

// MaxDecompressedSize bounds what a compressed binary trace may expand to
// on disk. trace.dat (its v7 sections and per-CPU buffers) and file-mode
// perf.data need random access, so a compressed one is decompressed into
// a temporary file (removed on Close) rather than into memory; text and
// perf pipe streams are decompressed on the fly and never stored.
var MaxDecompressedSize int64 = 64 << 30

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Open opens a trace or a timeline file. "-" reads standard input: a perf
// pipe-mode stream (`perf sched record -o - | replay ingest -`), text, or
// any format compressed; formats that need random access (trace.dat,
// file-mode perf.data) are spooled to a temporary file first.
// Input compressed with gzip or zstd is decompressed transparently.
//
// Every raw trace goes through timeline.Checked, the checks no single
// reader can make (duplicates, time reversals, switch mismatches); a
// timeline file was checked when it was written.
func Open(path string) (timeline.EventReader, error) {
	var head []byte
	if path != "-" {
		var err error
		if head, err = readHead(path); err != nil {
			return nil, err
		}
		if timeline.IsTimelineFile(head) {
			return timeline.Open(path)
		}
	}
	r, err := openRaw(path, head)
	if err != nil {
		return nil, err
	}
	return timeline.Checked(r), nil
}

func openRaw(path string, head []byte) (timeline.EventReader, error) {
	if path == "-" {
		return openStream(io.NopCloser(os.Stdin), "stdin", 0)
	}
	switch {
	case perfdata.IsPerfData(head):
		return perfdata.Open(path)
	case tracedat.IsTraceDat(head):
		return tracedat.Open(path)
	case perfetto.Sniff(head):
		return perfetto.Open(path)
	case bytes.HasPrefix(head, gzipMagic), bytes.HasPrefix(head, zstdMagic):
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		return openCompressed(f, path, 0)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := openText(f, head, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return r, nil
}

// openText picks the text reader from the first lines. rc is closed with
// the returned reader.
func openText(rc io.ReadCloser, head []byte, name string) (timeline.EventReader, error) {
	switch {
	case ftrace.Sniff(head):
		r, err := ftrace.NewReader(rc, name)
		if err != nil {
			return nil, err
		}
		return &closing{EventReader: r, c: rc}, nil
	case perfscript.Sniff(head):
		r, err := perfscript.NewReader(rc, name)
		if err != nil {
			return nil, err
		}
		return &closing{EventReader: r, c: rc}, nil
	}
	return nil, fmt.Errorf("%s: offset 0: %w (first bytes %q; replay reads perf.data, trace-cmd trace.dat v6/v7, ftrace text (tracefs trace, trace-cmd report), perf script text, Perfetto protobuf traces, gzip or zstd of any of them, and timeline files it wrote)", name, ErrUnknownFormat, printable(head))
}

// openStream sniffs a sequential stream and opens the reader for it. It
// owns rc: rc is closed with the reader, or on error.
func openStream(rc io.ReadCloser, name string, depth int) (r timeline.EventReader, err error) {
	br := bufio.NewReaderSize(rc, 1<<20)
	in := &stackCloser{Reader: br, closers: []func() error{rc.Close}}
	defer func() {
		if err != nil {
			in.Close()
		}
	}()
	// The binary magics fit in 16 bytes; only text needs more, so a live
	// perf pipe is not held up waiting for a full sniff buffer.
	head, err := peek(br, 16, name)
	if err != nil {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic), bytes.HasPrefix(head, zstdMagic):
		return openCompressed(in, name, depth)
	case tracedat.IsTraceDat(head), perfdata.IsPerfData(head) && !isPerfPipe(head), timeline.IsTimelineFile(head):
		return openViaTemp(in, name)
	case perfdata.IsPerfData(head):
		pr, err := perfdata.NewReader(in, name)
		if err != nil {
			return nil, err
		}
		return &closing{EventReader: pr, c: in}, nil
	}
	if head, err = peek(br, sniffLen, name); err != nil {
		return nil, err
	}
	if perfetto.Sniff(head) {
		pr, err := perfetto.NewReader(in, name)
		if err != nil {
			return nil, err
		}
		return &closing{EventReader: pr, c: in}, nil
	}
	return openText(in, head, name)
}

func peek(br *bufio.Reader, n int, name string) ([]byte, error) {
	head, err := br.Peek(n)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return bytes.Clone(head), nil
}

// openCompressed decompresses f as a stream and sniffs again. depth stops
// nested compression after a couple of levels. It owns f.
func openCompressed(f io.ReadCloser, name string, depth int) (timeline.EventReader, error) {
	if depth > 2 {
		f.Close()
		return nil, fmt.Errorf("%s: compressed more than three times over", name)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	magic, _ := br.Peek(4)
	var dec io.Reader
	var closeDec func()
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: offset 0: gzip: %w", name, err)
		}
		zr.Multistream(true)
		dec, closeDec = zr, func() { zr.Close() }
	case bytes.HasPrefix(magic, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: offset 0: zstd: %w", name, err)
		}
		dec, closeDec = zr, zr.Close
	default:
		f.Close()
		return nil, fmt.Errorf("%s: offset 0: expected gzip or zstd magic", name)
	}
	inner := &stackCloser{Reader: dec, closers: []func() error{
		func() error { closeDec(); return nil }, f.Close,
	}}
	return openStream(inner, name, depth+1)
}

// isPerfPipe reports a perf.data pipe-mode header (size field 16), which
// is read as a stream; file mode needs random access.
func isPerfPipe(head []byte) bool {
	if len(head) < 16 {
		return false
	}
	le := head[8] == 16 && bytes.Equal(head[9:16], make([]byte, 7))
	be := head[15] == 16 && bytes.Equal(head[8:15], make([]byte, 7))
	return le || be
}

// openViaTemp stores the decompressed stream in a temporary file (at most
// MaxDecompressedSize bytes) and opens that; Close removes it.
func openViaTemp(rc io.ReadCloser, name string) (timeline.EventReader, error) {
	defer rc.Close()
	tmp, err := os.CreateTemp("", "replay-ingest-*")
	if err != nil {
		return nil, err
	}
	tmpName := tmp.Name()
	fail := func(err error) (timeline.EventReader, error) {
		tmp.Close()
		os.Remove(tmpName)
		return nil, err
	}
	n, err := io.Copy(tmp, io.LimitReader(rc, MaxDecompressedSize+1))
	if err != nil {
		return fail(fmt.Errorf("%s: decompressing: %w", name, err))
	}
	if n > MaxDecompressedSize {
		return fail(fmt.Errorf("%s: decompresses to more than %d bytes (ingest.MaxDecompressedSize)", name, MaxDecompressedSize))
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	head, err := readHead(tmpName)
	if err != nil {
		return fail(err)
	}
	var r timeline.EventReader
	switch {
	case tracedat.IsTraceDat(head), perfdata.IsPerfData(head):
		// Read under the user's name, so that messages and the stored
		// source path name the file given, not the temporary one (whose
		// random name would also make two ingests of it differ).
		r, err = openNamed(tmpName, name, tracedat.IsTraceDat(head))
	default:
		r, err = timeline.Open(tmpName)
	}
	if err != nil {
		os.Remove(tmpName)
		return nil, fmt.Errorf("%s (decompressed): %w", name, err)
	}
	return &closing{EventReader: r, c: removeFile(tmpName)}, nil
}

// openNamed opens the trace.dat or perf.data file at path, reading it as
// name; closing the reader closes the file.
func openNamed(path, name string, traceDat bool) (timeline.EventReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var r timeline.EventReader
	if traceDat {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil {
			r, err = tracedat.NewReader(f, st.Size(), name)
		}
	} else {
		r, err = perfdata.NewReader(f, name)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &closing{EventReader: r, c: f}, nil
}

type removeFile string

func (p removeFile) Close() error { return os.Remove(string(p)) }

// closing closes c after the reader.
type closing struct {
	timeline.EventReader
	c io.Closer
}

func (c *closing) Close() error {
	err := c.EventReader.Close()
	if e := c.c.Close(); err == nil {
		err = e
	}
	return err
}

// stackCloser is a reader whose Close runs closers in order (decoder,
// then the file under it).
type stackCloser struct {
	io.Reader
	closers []func() error
}

func (s *stackCloser) Close() error {
	var first error
	for _, c := range s.closers {
		if err := c(); err != nil && first == nil {
			first = err
		}
	}
	s.closers = nil
	return first
}

func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return head[:n], nil
}

func printable(b []byte) []byte {
	if len(b) > 16 {
		b = b[:16]
	}
	return b
}
