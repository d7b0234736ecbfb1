// Package perfscript reads `perf script` text of tracepoint recordings
// (`perf sched record`, `perf record -e sched:*`) with the default fields
// or -F variants, as a stream of timeline events: the rows the perf.data
// reader gives for the same samples, to the precision the text keeps.
//
// What the text does not carry, and so differs from perf.data rows by
// design: times are truncated to µs unless perf printed ns (--ns);
// common_tgid is known only when the pid/tid column is printed (-F +pid,
// or multi-threaded sessions); common_flags and common_preempt_count are
// never printed; prev_state_raw is rebuilt from the letters with the
// ≥ 4.14 bit layout (the letters themselves are exact).
//
// Side-band lines (--show-task-events, --show-lost-events,
// --show-switch-events: PERF_RECORD_COMM, FORK, EXIT, LOST, SWITCH and
// SWITCH_CPU_WIDE) become the rows the perf.data reader makes of the same
// records (perf:comm, perf:fork, perf:exit, lost, perf:switch); a LOST line
// does not name the event that lost samples, and perf script prints no
// PERF_RECORD_LOST_SAMPLES. Other side-band lines (MMAP...) are counted in
// Meta().Summary.Dropped.
package perfscript

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/ingest/ftrace"
	"github.com/schedreplay/replay/ingest/internal/reorder"
	"github.com/schedreplay/replay/timeline"
)

// MaxLineBytes bounds one text line.
const MaxLineBytes = ftrace.MaxLineBytes

const (
	reorderWindow  = 4096
	maxParseErrors = 20
)

var (
	chainRE  = regexp.MustCompile(`^\s+[0-9a-f]+ .*$`)
	sideband = regexp.MustCompile(`PERF_RECORD_[A-Z_]+`)
)

// Sniff reports whether head looks like perf script output: most of the
// first event lines have a "system:event:" name after a "[cpu] time:".
func Sniff(head []byte) bool {
	hits, lines := 0, 0
	for _, l := range bytes.Split(head, []byte("\n")) {
		s := strings.TrimRight(string(l), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if _, ok := parseHead(s); !ok && chainRE.MatchString(s) {
			continue
		}
		lines++
		if h, ok := parseHead(s); ok && (strings.Contains(h.event, ":") || h.event == sidebandPrefix) {
			hits++
		}
		if lines >= 20 {
			break
		}
	}
	return hits > 0 && hits*2 >= lines
}

// Reader streams the events of perf script text.
type Reader struct {
	name   string
	lines  *ftrace.Lines
	closer io.Closer
	line   int
	body   *ftrace.BodyParser
	meta   timeline.Meta
	pend   reorder.Window[*row] // restores time order within reorderWindow rows
	ev     timeline.Event
	err    error
	eof    bool
	nerr   int

	strs map[string]string
}

// Open opens a perf script text file.
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

// NewReader reads perf script text from rd; name is used in errors.
func NewReader(rd io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name, lines: ftrace.NewLines(rd, name), pend: reorder.Window[*row]{Limit: reorderWindow}, body: ftrace.NewBodyParser(""), strs: map[string]string{}}
	r.meta.Source.Format = "perf script text"
	r.meta.Source.Path = name
	r.meta.Source.ClockID = -1
	return r, nil
}

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
			continue
		}
		r.handle(line)
	}
}

func (r *Reader) count(reason string) {
	if r.meta.Summary.Dropped == nil {
		r.meta.Summary.Dropped = map[string]int64{}
	}
	r.meta.Summary.Dropped[reason]++
}

func (r *Reader) parseError(msg string) {
	r.nerr++
	r.count("unparsable text line")
	if r.nerr <= maxParseErrors {
		if r.meta.Source.Extra == nil {
			r.meta.Source.Extra = map[string]string{}
		}
		r.meta.Source.Extra["parse_error_"+strconv.Itoa(r.nerr)] = fmt.Sprintf("%s: line %d: %s", r.name, r.line, msg)
	}
}

// Errors counts lines that did not parse.
func (r *Reader) Errors() int { return r.nerr }

func (r *Reader) intern(s string) string {
	if v, ok := r.strs[s]; ok {
		return v
	}
	if len(r.strs) > 1<<16 {
		clear(r.strs)
	}
	s = strings.Clone(s)
	r.strs[s] = s
	return s
}

func (r *Reader) handle(line string) {
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
		return
	}
	h, ok := parseHead(line)
	comm, pid, tid, cpu, sec, frac, event, body := h.comm, h.pid, h.tid, h.cpu, h.sec, h.frac, h.event, h.body
	if !ok {
		switch {
		case sideband.MatchString(line):
			r.count("perf script side-band line (PERF_RECORD_*)")
		case chainRE.MatchString(line):
			// callchain entry of the previous sample (perf script -g)
		default:
			r.parseError(fmt.Sprintf("expected \"comm [pid/]tid [cpu] time: event: fields\", got %q", clipLine(line)))
		}
		return
	}
	if event == sidebandPrefix && !r.sideband(&h, body) {
		r.count("perf script side-band line (PERF_RECORD_*)")
		return
	}
	if event == sidebandPrefix {
		return
	}
	it := &row{}
	e := &it.e
	ts, ok := parseTS(sec, frac)
	if !ok {
		r.parseError("timestamp out of range")
		return
	}
	e.Time = ts
	if cpu != "" {
		c, _ := strconv.Atoi(cpu)
		e.SetInt(timeline.CPU, int64(c))
	}
	t, err := strconv.ParseInt(tid, 10, 32)
	if err != nil {
		r.parseError("tid " + tid + " out of range")
		return
	}
	e.SetInt(timeline.CommonPID, t)
	if pid != "" {
		if p, err := strconv.ParseInt(pid, 10, 32); err == nil {
			e.SetInt(timeline.CommonTGID, p)
		}
	}
	if comm != "" {
		e.SetStr(timeline.CommonComm, r.intern(comm))
	}
	system, name := "", event
	if i := strings.IndexByte(event, ':'); i >= 0 {
		system, name = event[:i], event[i+1:]
	}
	e.Name = timeline.EventName(system, name)
	e.Kind = timeline.KindOf(e.Name)
	if system == "" {
		// Not a tracepoint (cycles, cpu-clock...): keep what perf printed.
		if b := strings.TrimSpace(body); b != "" {
			e.Fields = append(e.Fields, timeline.Field{Name: "body", Kind: timeline.FieldString, Str: r.intern(b)})
		}
	} else if err := r.body.Parse(e, name, body); err != nil {
		r.parseError(event + ": " + err.Error())
		return
	}
	r.pend.Push(it.e.Time, it)
}

func clipLine(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// parseTS converts "S"."F" to ns; perf prints µs (truncated) or ns.
func parseTS(sec, frac string) (int64, bool) {
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || s > (1<<62)/1000000000 {
		return 0, false
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

// Event returns the current event (reused by the next call to Next).
func (r *Reader) Event() *timeline.Event { return &r.ev }

// Err returns the error that stopped the stream.
func (r *Reader) Err() error { return r.err }

// Meta describes the trace.
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
	e timeline.Event
}

// sideband turns the side-band lines of --show-task-events,
// --show-lost-events and --show-switch-events into the rows the perf.data
// reader makes of the same records (see perfdata.Reader); false for
// records that make no row (MMAP...). The head's task columns are the
// record's sample_id trailer; COMM, FORK and EXIT name their tasks in the
// body, as perf.data does.
func (r *Reader) sideband(h *head, body string) bool {
	ts, ok := parseTS(h.sec, h.frac)
	if !ok {
		r.parseError("timestamp out of range")
		return true
	}
	it := &row{}
	e := &it.e
	e.Time = ts
	cpu := -1
	if h.cpu != "" {
		cpu, _ = strconv.Atoi(h.cpu)
		e.SetInt(timeline.CPU, int64(cpu))
	}
	rec, rest, _ := strings.Cut(body, " ")
	rec = strings.TrimSuffix(rec, ":")
	bad := func() bool {
		r.parseError(fmt.Sprintf("side-band line %q", clipLine(body)))
		return true
	}
	ids := func(s string) (a, b int64, ok bool) { // "a:b" or "a/b"
		i := strings.LastIndexAny(s, ":/")
		if i < 0 {
			return 0, 0, false
		}
		x, err1 := strconv.ParseInt(strings.TrimSpace(s[:i]), 10, 32)
		y, err2 := strconv.ParseInt(strings.TrimSpace(s[i+1:]), 10, 32)
		return x, y, err1 == nil && err2 == nil
	}
	switch {
	case rec == "PERF_RECORD_COMM":
		// "PERF_RECORD_COMM: name:pid/tid", "PERF_RECORD_COMM exec: name:pid/tid"
		exec := strings.HasPrefix(rest, "exec: ")
		if exec {
			rest = rest[len("exec: "):]
		}
		c := strings.LastIndexByte(rest, ':')
		if c < 0 {
			return bad()
		}
		pid, tid, ok := ids(rest[c+1:])
		if !ok {
			return bad()
		}
		e.Name, e.Kind = "perf:comm", timeline.PerfComm
		e.SetInt(timeline.CommonPID, tid)
		e.SetInt(timeline.CommonTGID, pid)
		e.SetStr(timeline.Comm, r.intern(rest[:c]))
		if exec {
			e.Fields = append(e.Fields, timeline.Field{Name: "exec", Kind: timeline.FieldInt, Int: 1})
		}
	case strings.HasPrefix(rec, "PERF_RECORD_FORK(") || strings.HasPrefix(rec, "PERF_RECORD_EXIT("):
		// "PERF_RECORD_FORK(pid:tid):(ppid:ptid)"
		a, b, found := strings.Cut(rec[len("PERF_RECORD_FORK("):], "):(")
		if !found || !strings.HasSuffix(b, ")") {
			return bad()
		}
		pid, tid, ok1 := ids(a)
		ppid, ptid, ok2 := ids(b[:len(b)-1])
		if !ok1 || !ok2 {
			return bad()
		}
		if strings.HasPrefix(rec, "PERF_RECORD_FORK") {
			e.Name, e.Kind = "perf:fork", timeline.PerfFork
			e.SetInt(timeline.ParentPID, ptid)
			e.SetInt(timeline.ChildPID, tid)
			e.Fields = append(e.Fields, timeline.Field{Name: "pid", Kind: timeline.FieldInt, Int: pid},
				timeline.Field{Name: "ppid", Kind: timeline.FieldInt, Int: ppid})
		} else {
			e.Name, e.Kind = "perf:exit", timeline.PerfExit
			e.SetInt(timeline.PID, tid)
			e.Fields = append(e.Fields, timeline.Field{Name: "tgid", Kind: timeline.FieldInt, Int: pid},
				timeline.Field{Name: "ppid", Kind: timeline.FieldInt, Int: ppid},
				timeline.Field{Name: "ptid", Kind: timeline.FieldInt, Int: ptid})
		}
	case rec == "PERF_RECORD_LOST" || rec == "PERF_RECORD_LOST_SAMPLES":
		// "PERF_RECORD_LOST lost 54" (the text does not name the event)
		f := strings.Fields(rest)
		if len(f) != 2 || f[0] != "lost" {
			return bad()
		}
		n, err := strconv.ParseUint(f[1], 10, 63)
		if err != nil {
			return bad()
		}
		e.Name, e.Kind = "lost", timeline.Lost
		e.SetInt(timeline.LostCount, int64(n))
		e.Fields = append(e.Fields, timeline.Field{Name: "record", Kind: timeline.FieldString, Str: rec})
		r.meta.Summary.Lost.Add(cpu, rec, n)
	case rec == "PERF_RECORD_SWITCH" || rec == "PERF_RECORD_SWITCH_CPU_WIDE":
		// " IN", " OUT", " OUT preempt", then for the CPU-wide form
		// "  next pid/tid: %5d/%-5d" (or "prev")
		out, preempt := int64(0), int64(0)
		f := strings.Fields(rest)
		if len(f) > 0 && f[0] == "OUT" {
			out = 1
			if len(f) > 1 && f[1] == "preempt" {
				preempt = 1
			}
		} else if len(f) == 0 || f[0] != "IN" {
			return bad()
		}
		e.Name = "perf:switch"
		if t, err := strconv.ParseInt(h.tid, 10, 32); err == nil {
			e.SetInt(timeline.CommonPID, t)
		}
		if p, err := strconv.ParseInt(h.pid, 10, 32); err == nil {
			e.SetInt(timeline.CommonTGID, p)
		}
		e.Fields = append(e.Fields, timeline.Field{Name: "out", Kind: timeline.FieldInt, Int: out},
			timeline.Field{Name: "preempt", Kind: timeline.FieldInt, Int: preempt})
		if rec == "PERF_RECORD_SWITCH_CPU_WIDE" {
			i := strings.Index(rest, "pid/tid:")
			if i < 0 {
				return bad()
			}
			p, t, ok := ids(strings.ReplaceAll(rest[i+len("pid/tid:"):], " ", ""))
			if !ok {
				return bad()
			}
			e.Fields = append(e.Fields, timeline.Field{Name: "next_prev_pid", Kind: timeline.FieldInt, Int: p},
				timeline.Field{Name: "next_prev_tid", Kind: timeline.FieldInt, Int: t})
		}
	default:
		return false
	}
	r.pend.Push(it.e.Time, it)
	return true
}
