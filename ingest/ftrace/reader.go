// Package ftrace reads ftrace text — tracefs `trace` and `trace_pipe`
// output (with or without the irq-info flags and the record-tgid column)
// and `trace-cmd report` output (default sched plugins, -N, -R, -t, -l) — as
// a stream of timeline events, the same rows the binary readers give for
// the same events, to the precision the text keeps.
//
// What text cannot carry, and so differs from trace.dat rows by design:
//   - times are what is printed: µs by default, rounded from ns by the
//     kernel and trace-cmd;
//   - common_flags and common_preempt_count exist only when the flags
//     column is printed, common_tgid only with the TGID column;
//   - report -l cuts comms to 8 characters (restored from names the trace
//     carries when it can);
//   - the trace-cmd sched_switch plugin (report default) prints bits 0-7 of
//     prev_state only (no "+");
//   - prev_state_raw is rebuilt from the letters with the ≥ 4.14 bit layout
//     unless the kernel release is known.
//
// tracefs options/latency-format text is read too: its times are µs since
// the ring buffer was reset (the kernel's time_start, which the text does
// not give), so rows keep that base instead of the trace clock, and comms
// are cut to 8 characters (restored as for report -l). Its verbose form
// (options/verbose) is not read.
//
// tracefs options/raw text is refused with a clear error: its lines hold
// the event type id and the entry's bytes in hex, decodable only with the
// event format files, which the text does not carry.
package ftrace

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/ingest/internal/reorder"
	"github.com/schedreplay/replay/ingest/tracedat"
	"github.com/schedreplay/replay/timeline"
)

// reorderWindow is how many rows are held to restore time order when the
// text is not globally sorted (per-CPU files concatenated); tracefs and
// trace-cmd output is already sorted and passes straight through it.
const reorderWindow = 4096

// maxParseErrors is how many unparsable lines are quoted in the metadata;
// all of them are counted.
const maxParseErrors = 20

var (
	lostRE = regexp.MustCompile(`^CPU:(\d+) \[(?:LOST (\d+) EVENTS|(\d+) EVENTS DROPPED|EVENTS DROPPED)\]$`)
	bufRE  = regexp.MustCompile(`^##### CPU (\d+) buffer started ####`)
	ncpuRE = regexp.MustCompile(`#P:(\d+)`)
	entRE  = regexp.MustCompile(`entries-in-buffer/entries-written: (\d+)/(\d+)`)
	// latency-format header: "# latency: 0 us, #403/403, CPU#0 | (M:...".
	latEntRE = regexp.MustCompile(`^# latency: \d+ us, #(\d+)/(\d+),`)
)

// Sniff reports whether head (the first bytes of the input) is ftrace
// text: a tracefs header, a trace-cmd report header, or event lines.
func Sniff(head []byte) bool {
	lines := 0
	for _, l := range bytes.Split(head, []byte("\n")) {
		s := strings.TrimRight(string(l), "\r")
		if strings.HasPrefix(s, "# tracer:") || strings.HasPrefix(s, "cpus=") || strings.HasPrefix(s, "version = ") {
			return true
		}
		if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "CPU ") {
			continue
		}
		if _, ok := parseHead(s); ok {
			return true
		}
		if lines++; lines > 20 {
			break
		}
	}
	return false
}

// Reader streams the events of ftrace text.
type Reader struct {
	name   string
	lines  *Lines
	closer io.Closer
	line   int
	body   *BodyParser
	comms  *tracedat.CommTable
	meta   timeline.Meta

	pend    reorder.Window[*row] // restores time order within reorderWindow rows
	lastTS  map[int]int64        // per CPU, for lost markers at EOF
	lostFor map[int]pendingLost
	ev      timeline.Event
	err     error
	eof     bool
	nerr    int

	full   map[int32]string // pid -> name from event fields (latency format)
	latfmt bool             // tracefs options/latency-format header seen
}

type pendingLost struct {
	n      uint64
	known  bool
	reason string
}

// Open opens a text file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads text from rd; name is used in errors and the metadata.
func NewReader(rd io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name, lines: NewLines(rd, name), pend: reorder.Window[*row]{Limit: reorderWindow}, comms: tracedat.NewCommTable(nil),
		lastTS: map[int]int64{}, lostFor: map[int]pendingLost{}}
	r.meta.Source.Format = "ftrace text"
	r.meta.Source.Path = name
	r.meta.Source.ClockID = -1
	r.body = NewBodyParser("")
	return r, nil
}

// readLine returns the next line without its newline; ok is false at EOF.
func (r *Reader) readLine() (string, bool, error) {
	line, ok, err := r.lines.Next()
	r.line = r.lines.N
	return line, ok, err
}

// Next advances to the next event.
func (r *Reader) Next() bool {
	for {
		if r.err != nil {
			return false
		}
		if r.pend.Len() > 0 && (r.eof || r.pend.Full()) {
			it, late := r.pend.Pop()
			if late {
				// Disorder wider than the window (e.g. per-CPU files
				// concatenated): counted, since rows should be in order.
				reorder.NoteLate(&r.meta.Source.Extra, r.pend.Late())
			}
			if it.cut {
				r.uncut(&it.e)
			}
			r.ev.CopyFrom(&it.e)
			return true
		}
		if r.eof {
			return false
		}
		line, ok, err := r.readLine()
		if err != nil {
			r.err = err
			return false
		}
		if !ok {
			r.eof = true
			r.flushLost()
			continue
		}
		r.handle(line)
	}
}

func (r *Reader) handle(line string) {
	// Legacy systrace HTML keeps the text in a JS string: each line ends
	// with a literal backslash-n and a backslash continuation.
	line = strings.TrimSuffix(line, `\n\`)
	if line == "" {
		return
	}
	if strings.HasPrefix(line, "#####") {
		if m := bufRE.FindStringSubmatch(line); m != nil {
			cpu, _ := strconv.Atoi(m[1])
			r.addLost(cpu, pendingLost{reason: "text: CPU buffer started later (older events overwritten)"})
			return
		}
	}
	if line[0] == '#' {
		r.header(line)
		return
	}
	if strings.HasPrefix(line, "cpus=") {
		if n, err := strconv.Atoi(strings.TrimSpace(line[5:])); err == nil {
			r.meta.Source.NrCPUs = n
		}
		return
	}
	if strings.HasPrefix(line, "version = ") || (strings.HasPrefix(line, "CPU ") && strings.HasSuffix(line, " is empty")) {
		return
	}
	if m := matchIf(line, "CPU:", lostRE); m != nil {
		cpu, _ := strconv.Atoi(m[1])
		pl := pendingLost{reason: "text: LOST n EVENTS marker"}
		switch {
		case m[2] != "":
			pl.n, _ = strconv.ParseUint(m[2], 10, 64)
			pl.known = true
		case m[3] != "":
			pl.n, _ = strconv.ParseUint(m[3], 10, 64)
			pl.known, pl.reason = true, "text: EVENTS DROPPED marker"
		default:
			pl.reason = "text: EVENTS DROPPED marker (count not printed)"
		}
		r.addLost(cpu, pl)
		return
	}
	r.event(line)
}

func (r *Reader) addLost(cpu int, pl pendingLost) {
	if old, ok := r.lostFor[cpu]; ok {
		pl.n += old.n
	}
	r.lostFor[cpu] = pl
}

func (r *Reader) header(line string) {
	if m := ncpuRE.FindStringSubmatch(line); m != nil {
		r.meta.Source.NrCPUs, _ = strconv.Atoi(m[1])
	}
	if m := entRE.FindStringSubmatch(line); m != nil {
		in, _ := strconv.ParseUint(m[1], 10, 64)
		written, _ := strconv.ParseUint(m[2], 10, 64)
		if written > in {
			// Counted, not placed: the per-CPU "buffer started" markers
			// give the rows.
			r.meta.Summary.Lost.Add(-1, "tracefs: entries-written exceeds entries-in-buffer (overwritten)", written-in)
		}
	}
	if strings.Contains(line, " latency trace v") {
		// options/latency-format: event lines change shape (see
		// parseLatFmtHead) and times count from the buffer's start.
		r.latfmt = true
		r.meta.Source.Format = "ftrace text (latency-format)"
		if r.meta.Source.Extra == nil {
			r.meta.Source.Extra = map[string]string{}
		}
		r.meta.Source.Extra["time_base"] = "latency-format: µs since the ring buffer was reset (time_start), not the trace clock"
		if i := strings.Index(line, " latency trace v"); i > 2 {
			r.meta.Source.Extra["tracer"] = strings.TrimSpace(line[1:i])
		}
		if i := strings.Index(line, " on "); i >= 0 && r.meta.Source.OSRelease == "" {
			r.meta.Source.OSRelease = strings.TrimSpace(line[i+4:])
		}
	}
	if m := latEntRE.FindStringSubmatch(line); m != nil && r.latfmt {
		in, _ := strconv.ParseUint(m[1], 10, 64)
		written, _ := strconv.ParseUint(m[2], 10, 64)
		if written > in {
			r.meta.Summary.Lost.Add(-1, "tracefs: entries-written exceeds entries-in-buffer (overwritten)", written-in)
		}
	}
}

func (r *Reader) parseError(msg string) {
	r.nerr++
	if r.meta.Summary.Dropped == nil {
		r.meta.Summary.Dropped = map[string]int64{}
	}
	r.meta.Summary.Dropped["unparsable text line"]++
	if r.nerr <= maxParseErrors {
		if r.meta.Source.Extra == nil {
			r.meta.Source.Extra = map[string]string{}
		}
		r.meta.Source.Extra["parse_error_"+strconv.Itoa(r.nerr)] = fmt.Sprintf("%s: line %d: %s", r.name, r.line, msg)
	}
}

// Errors counts lines that did not parse (also in Meta().Summary.Dropped).
func (r *Reader) Errors() int { return r.nerr }

func (r *Reader) event(line string) {
	var h head
	var ok bool
	if r.latfmt {
		h, ok = parseLatFmtHead(line)
	} else {
		h, ok = parseHead(line)
	}
	if !ok {
		if isRawLine(line) {
			r.err = fmt.Errorf("%s: line %d: options/raw text (\"pid cpu ts type: id\" and hex fields) names no event or field, and the text carries no event formats to decode it with; read the default text (options/raw off) or a trace.dat of the same buffer (trace-cmd extract) instead", r.name, r.line)
			return
		}
		r.parseError(fmt.Sprintf("expected \"comm-pid [cpu] timestamp: event: fields\", got %q", clip(line)))
		return
	}
	it := &row{}
	e := &it.e
	cpu, err := strconv.Atoi(h.cpu)
	if err != nil || cpu > 1<<20 {
		r.parseError("cpu " + h.cpu + " out of range")
		return
	}
	ts, ok := parseTS(h.sec, h.frac)
	if ok && h.relUS {
		ok = ts <= (1<<62)/1000
		ts *= 1000
	}
	if !ok {
		r.parseError(fmt.Sprintf("timestamp %s.%s out of range", h.sec, h.frac))
		return
	}
	e.Time = ts
	e.SetInt(timeline.CPU, int64(cpu))
	pid, err := strconv.ParseInt(h.pid, 10, 32)
	if err != nil {
		r.parseError("pid " + h.pid + " out of range")
		return
	}
	e.SetInt(timeline.CommonPID, pid)
	if h.tgid != "" && h.tgid[0] != '-' {
		if tgid, err := strconv.ParseInt(h.tgid, 10, 32); err == nil {
			e.SetInt(timeline.CommonTGID, tgid)
		}
	}
	if h.flags != "" {
		fl, pc, ok := parseFlags(h.flags)
		if !ok {
			r.parseError("irq-info flags " + h.flags + ": expected the kernel's flag characters")
			return
		}
		e.SetInt(timeline.CommonFlags, int64(fl))
		e.SetInt(timeline.CommonPreemptCount, int64(pc))
	}
	name := h.event
	e.Name = timeline.EventName(SystemOf(name), name)
	e.Kind = timeline.KindOf(e.Name)
	if err := r.body.Parse(e, name, h.body); err != nil {
		r.parseError(name + ": " + err.Error())
		return
	}
	comm := strings.TrimSpace(h.comm)
	switch comm {
	case "<idle>":
		comm = tracedat.IdleComm
	case "<...>":
		comm = ""
	}
	r.comms.Learn(e)
	r.learnFull(e)
	if h.latency && len(comm) == 8 {
		// The latency format cuts comms to 8 characters: the full name is
		// filled in when the row leaves the reorder window (names seen
		// up to then, in any event's fields, count).
		it.cut = true
	}
	if comm != "" {
		e.SetStr(timeline.CommonComm, r.body.intern(comm))
	} else if s, ok := r.comms.Lookup(int32(pid)); ok {
		e.SetStr(timeline.CommonComm, s)
	}
	if pl, ok := r.lostFor[cpu]; ok {
		delete(r.lostFor, cpu)
		r.pushLost(cpu, ts, pl)
	}
	r.lastTS[cpu] = ts
	r.pend.Push(it.e.Time, it)
}

// pushLost queues a lost row just before the event that follows the marker.
func (r *Reader) pushLost(cpu int, ts int64, pl pendingLost) {
	// The lost row sorts before the event pushed after it (same time).
	it := &row{}
	e := &it.e
	e.Time, e.Name, e.Kind = ts, "lost", timeline.Lost
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.LostCount, int64(pl.n))
	if !pl.known {
		e.Fields = append(e.Fields, timeline.Field{Name: "reason", Kind: timeline.FieldString, Str: "count not stored"})
	}
	r.meta.Summary.Lost.Add(cpu, pl.reason, pl.n)
	r.pend.Push(it.e.Time, it)
}

// flushLost places markers not followed by any event at the last time of
// the trace (keeping rows in time order), in CPU order.
func (r *Reader) flushLost() {
	var end int64
	for _, ts := range r.lastTS {
		end = max(end, ts)
	}
	cpus := make([]int, 0, len(r.lostFor))
	for cpu := range r.lostFor {
		cpus = append(cpus, cpu)
	}
	sort.Ints(cpus)
	for _, cpu := range cpus {
		r.pushLost(cpu, end, r.lostFor[cpu])
	}
	clear(r.lostFor)
}

func isRawLine(line string) bool {
	f := strings.Fields(line)
	return len(f) == 5 && f[3] == "type:"
}

// parseTS converts "S" + "F" (F = fraction digits) to ns.
func parseTS(sec, frac string) (int64, bool) {
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s > (1<<62)/1000000000 {
		return 0, false
	}
	if frac == "" {
		return s, true // counter / x86-tsc clocks print integers
	}
	if len(frac) > 9 {
		frac = frac[:9]
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	for i := len(frac); i < 9; i++ {
		f *= 10
	}
	return s*1e9 + f, true
}

// parseFlags decodes the irq-info column back into common_flags and
// common_preempt_count (kernel trace_output.c): irqs-off, need-resched,
// hard/softirq, preempt depth and, in the 5th column, migrate-disable.
func parseFlags(s string) (flags, pc uint8, ok bool) {
	const (
		irqsOff       = 0x01
		reschedLazy   = 0x02
		needResched   = 0x04
		hardirq       = 0x08
		softirq       = 0x10
		preemptResch  = 0x20
		nmi           = 0x40
		bhOff         = 0x80
		irqsNoSupport = 0x02
	)
	if len(s) < 4 {
		return 0, 0, false
	}
	switch s[0] {
	case 'd':
		flags |= irqsOff
	case 'D':
		flags |= irqsOff | bhOff
	case 'b':
		flags |= bhOff
	case 'X':
		flags |= irqsNoSupport
	case '.':
	default:
		return 0, 0, false
	}
	switch s[1] {
	case 'B':
		flags |= needResched | reschedLazy | preemptResch
	case 'N':
		flags |= needResched | preemptResch
	case 'L':
		flags |= reschedLazy | preemptResch
	case 'b':
		flags |= needResched | reschedLazy
	case 'n':
		flags |= needResched
	case 'p':
		flags |= preemptResch
	case 'l':
		flags |= reschedLazy
	case '.':
	default:
		return 0, 0, false
	}
	switch s[2] {
	case 'Z':
		flags |= nmi | hardirq
	case 'z':
		flags |= nmi
	case 'H':
		flags |= hardirq | softirq
	case 'h':
		flags |= hardirq
	case 's':
		flags |= softirq
	case '.':
	default:
		return 0, 0, false
	}
	hex := func(c byte) (uint8, bool) {
		switch {
		case c == '.':
			return 0, true
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10, true
		}
		return 0, false
	}
	lo, ok1 := hex(s[3])
	if !ok1 {
		return 0, 0, false
	}
	pc = lo
	if len(s) == 5 {
		hi, ok2 := hex(s[4])
		if !ok2 {
			return 0, 0, false
		}
		pc |= hi << 4
	}
	return flags, pc, true
}

// Event returns the current event (reused by the next call to Next).
func (r *Reader) Event() *timeline.Event { return &r.ev }

// Err returns the error that stopped the stream.
func (r *Reader) Err() error { return r.err }

// Meta describes the trace; counts are complete once Next returned false.
func (r *Reader) Meta() *timeline.Meta { return &r.meta }

// Close closes the file opened by Open.
func (r *Reader) Close() error {
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

var _ timeline.EventReader = (*Reader)(nil)

type row struct {
	e   timeline.Event
	cut bool // common_comm cut to 8 characters (trace-cmd report -l)
}

// learnFull records task names carried by event fields, to restore the
// comms the latency format cuts.
func (r *Reader) learnFull(e *timeline.Event) {
	if r.full == nil {
		r.full = map[int32]string{}
	}
	pairs := [][2]timeline.Col{{timeline.PrevPID, timeline.PrevComm}, {timeline.NextPID, timeline.NextComm}, {timeline.PID, timeline.Comm}, {timeline.ChildPID, timeline.ChildComm}, {timeline.ParentPID, timeline.ParentComm}}
	for _, p := range pairs {
		if e.IsSet(p[0]) && e.IsSet(p[1]) {
			r.full[e.Int32(p[0])] = e.Str(p[1])
		}
	}
}

func (r *Reader) uncut(e *timeline.Event) {
	c := e.Str(timeline.CommonComm)
	if s, ok := r.full[e.Int32(timeline.CommonPID)]; ok && len(s) > len(c) && strings.HasPrefix(s, c) {
		e.SetStr(timeline.CommonComm, s)
	}
}

// matchIf runs re only on lines with the given prefix (most lines are
// events; a regexp per line would dominate the reading time).
func matchIf(line, prefix string, re *regexp.Regexp) []string {
	if !strings.HasPrefix(line, prefix) {
		return nil
	}
	return re.FindStringSubmatch(line)
}
