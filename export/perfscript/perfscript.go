// Package perfscript writes a timeline as `perf script` prints a trace:
// one line per event, `comm tid/pid [cpu] secs.nsecs: event: fields`, the
// sched tracepoints' fields in their kernels' own print formats. A
// replay's simulated schedule (`replay whatif -o sim.arrow`) then reads
// like the trace it came from, and the awk one-liners written against
// `perf script --ns -F comm,tid,pid,cpu,time,event,trace` (FIDELITY.md's
// counts are) run on either unchanged.
//
// On a perf.data of the sched and task tracepoints and perf's side-band
// records the output is perf's own, line for line (TestMatchesPerfScript,
// TestMatchesLivePerf), but for what the timeline does not keep: the
// thread a LOST record, or a COMM record about another thread, was
// written by (the line names the thread the record concerns, or none),
// and the print formats of other tracepoints, written as their fields,
// name=value, in the schema's order.
package perfscript

import (
	"bufio"
	"io"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/timeline"
)

// Filter selects events; the zero Filter keeps every one.
type Filter struct {
	// FromNS, ToNS bound the events' times (inclusive); 0 leaves that
	// side open.
	FromNS, ToNS int64
	// CPUs keeps the events written on these CPUs (nil: every CPU; an
	// event with no CPU is kept only when CPUs is nil).
	CPUs map[int32]bool
	// PIDs keeps the events that name one of these threads: as the task
	// they were written in (common_pid), or in a pid, prev_pid,
	// next_pid, parent_pid or child_pid field.
	PIDs map[int32]bool
}

func (f *Filter) keep(e *timeline.Event) bool {
	if f.FromNS != 0 && e.Time < f.FromNS || f.ToNS != 0 && e.Time > f.ToNS {
		return false
	}
	if f.CPUs != nil && (!e.IsSet(timeline.CPU) || !f.CPUs[e.Int32(timeline.CPU)]) {
		return false
	}
	if f.PIDs != nil {
		for _, c := range [...]timeline.Col{timeline.CommonPID, timeline.PID, timeline.PrevPID, timeline.NextPID, timeline.ParentPID, timeline.ChildPID} {
			if e.IsSet(c) && f.PIDs[e.Int32(c)] {
				return true
			}
		}
		return false
	}
	return true
}

// Stats says what was written.
type Stats struct {
	Events int64
}

// Write prints the events r yields that f keeps.
func Write(w io.Writer, r timeline.EventReader, f Filter) (Stats, error) {
	var st Stats
	p := NewPrinter(r.Meta())
	bw := bufio.NewWriterSize(w, 1<<16)
	for r.Next() {
		e := r.Event()
		p.Observe(e)
		if !f.keep(e) {
			continue
		}
		if _, err := bw.Write(p.Line(e)); err != nil {
			return st, err
		}
		st.Events++
	}
	if err := r.Err(); err != nil {
		return st, err
	}
	return st, bw.Flush()
}

// Printer formats events one line each. It follows the threads' names
// through the stream, as perf's thread map does, for the side-band
// records, which perf prints under the name of the thread they concern.
type Printer struct {
	width int
	comms map[int64]string
	line  []byte
}

// NewPrinter prepares the lines of a stream with metadata m: perf pads
// event names to the longest among the events recorded (perf's evlist).
func NewPrinter(m *timeline.Meta) *Printer {
	// perf's machine starts with the idle thread, 0, named swapper.
	return &Printer{width: nameWidth(m), comms: map[int64]string{0: "swapper"}}
}

// Observe notes the thread names e carries; call it on every event, in
// order, printed or not.
func (p *Printer) Observe(e *timeline.Event) {
	switch e.Kind {
	case timeline.PerfComm:
		p.comms[e.Int(timeline.CommonPID)] = e.Str(timeline.Comm)
	case timeline.PerfFork:
		if c, ok := p.comms[e.Int(timeline.ParentPID)]; ok {
			p.comms[e.Int(timeline.ChildPID)] = c
		}
	default:
		if e.IsSet(timeline.CommonComm) && e.IsSet(timeline.CommonPID) {
			p.comms[e.Int(timeline.CommonPID)] = e.Str(timeline.CommonComm)
		}
		if e.Kind == timeline.SchedSwitch && e.IsSet(timeline.NextComm) && e.IsSet(timeline.NextPID) {
			// A thread switched in is one perf's thread map knows (its
			// COMM record): a replay, which writes no side band, names
			// the thread so before it first switches out.
			if tid := e.Int(timeline.NextPID); tid > 0 {
				if _, ok := p.comms[tid]; !ok {
					p.comms[tid] = e.Str(timeline.NextComm)
				}
			}
		}
	}
}

// Line is e's line, newline included; valid until the next call.
func (p *Printer) Line(e *timeline.Event) []byte {
	p.line = append(p.appendEvent(p.line[:0], e), '\n')
	return p.line
}

// schedEvents are the tracepoints `perf sched record` records: perf pads
// event names to the longest among the events of its session, and a
// recording of them has that width whichever of them occur.
var schedEvents = []string{"sched_switch", "sched_stat_wait", "sched_stat_sleep", "sched_stat_iowait",
	"sched_stat_runtime", "sched_process_fork", "sched_wakeup", "sched_waking", "sched_wakeup_new", "sched_migrate_task"}

// nameWidth is perf script's event-name column: the longest name of the
// events the source recorded (Meta.Source.Events), else of perf sched
// record's set.
func nameWidth(m *timeline.Meta) int {
	names := schedEvents
	if m != nil && len(m.Source.Events) > 0 {
		names = m.Source.Events
	}
	width := 0
	for _, n := range names {
		width = max(width, len(perfName(n)))
	}
	return width
}

// perfName is the event's name as perf prints it: "sched:sched_switch".
func perfName(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return "sched:" + name
}

// appendEvent appends the perf script line of e (no newline): the task it
// was written in (a side-band record's: the thread it concerns, and the
// sample identity perf gives it), its CPU, time, event name and fields.
func (p *Printer) appendEvent(b []byte, e *timeline.Event) []byte {
	comm, tid, pid := e.Str(timeline.CommonComm), int64(-1), int64(-1)
	if e.IsSet(timeline.CommonPID) {
		tid = e.Int(timeline.CommonPID)
	}
	if e.IsSet(timeline.CommonTGID) {
		pid = e.Int(timeline.CommonTGID)
	}
	sideBand := false
	switch e.Kind {
	case timeline.PerfComm, timeline.PerfFork, timeline.PerfExit:
		sideBand = true
		comm, pid, tid = p.sideBandIdentity(e)
	}
	switch {
	case sideBand:
	case tid == 0:
		// perf's thread map names the idle task swapper on every CPU
		// (a replay writes the kernel's swapper/N).
		comm = "swapper"
	case !e.IsSet(timeline.CommonComm):
		// A record without the name of the task it was written in: the
		// name the stream gave that thread, as perf's thread map would.
		if c, ok := p.comms[tid]; ok && tid > 0 {
			comm = c
		} else {
			comm = ":" + strconv.FormatInt(tid, 10)
		}
	}
	b = padLeft(b, comm, 16)
	b = append(b, ' ')
	b = appendIntPad(b, pid, 5, ' ', false)
	b = append(b, '/')
	b = appendIntPad(b, tid, 5, ' ', true)
	if e.IsSet(timeline.CPU) {
		b = append(b, " ["...)
		b = appendIntPad(b, e.Int(timeline.CPU), 3, '0', false)
		b = append(b, ']')
	}
	b = append(b, ' ')
	b = appendIntPad(b, e.Time/1e9, 5, ' ', false)
	b = append(b, '.')
	b = appendIntPad(b, e.Time%1e9, 9, '0', false)
	b = append(b, ": "...)
	if sideBand || e.Kind == timeline.Lost {
		return appendSideBand(b, e)
	}
	// perf's "sched:sched_switch", right-aligned in the evlist's width.
	prefix := ""
	if !strings.Contains(e.Name, ":") {
		prefix = "sched:"
	}
	for i := len(prefix) + len(e.Name); i < p.width; i++ {
		b = append(b, ' ')
	}
	b = append(append(append(b, prefix...), e.Name...), ": "...)
	return appendTrace(b, e)
}

// sideBandIdentity is what perf prints before a COMM, FORK or EXIT record:
// the name of the thread the record concerns (after it: a COMM's new
// name, a child's inherited one) and the sample identity the record was
// written with: the thread itself for COMM and EXIT, the parent for FORK,
// 0/0 for the records perf synthesized at the start (time 0).
func (p *Printer) sideBandIdentity(e *timeline.Event) (comm string, pid, tid int64) {
	var self int64
	switch e.Kind {
	case timeline.PerfComm:
		self, pid, tid = e.Int(timeline.CommonPID), e.Int(timeline.CommonTGID), e.Int(timeline.CommonPID)
	case timeline.PerfFork:
		self, tid = e.Int(timeline.ChildPID), e.Int(timeline.ParentPID)
		pid, _ = e.IntField("ppid")
	case timeline.PerfExit:
		self, tid = e.Int(timeline.PID), e.Int(timeline.PID)
		pid, _ = e.IntField("tgid")
	}
	comm, ok := p.comms[self]
	if !ok {
		comm = ":" + strconv.FormatInt(self, 10)
	}
	if e.Time == 0 {
		pid, tid = 0, 0
	}
	return comm, pid, tid
}

// appendSideBand writes perf's side-band records as perf script
// --show-task-events --show-lost-events does.
func appendSideBand(b []byte, e *timeline.Event) []byte {
	switch e.Kind {
	case timeline.PerfComm:
		b = append(b, "PERF_RECORD_COMM"...)
		if v, ok := e.IntField("exec"); ok && v != 0 {
			b = append(b, " exec"...)
		}
		b = append(b, ": "...)
		b = append(b, e.Str(timeline.Comm)...)
		b = append(b, ':')
		b = strconv.AppendInt(b, e.Int(timeline.CommonTGID), 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, e.Int(timeline.CommonPID), 10)
	case timeline.PerfFork:
		pid, _ := e.IntField("pid")
		ppid, _ := e.IntField("ppid")
		b = appendPair(append(b, "PERF_RECORD_FORK"...), pid, e.Int(timeline.ChildPID))
		b = appendPair(append(b, ':'), ppid, e.Int(timeline.ParentPID))
	case timeline.PerfExit:
		tgid, _ := e.IntField("tgid")
		ppid, _ := e.IntField("ppid")
		ptid, _ := e.IntField("ptid")
		b = appendPair(append(b, "PERF_RECORD_EXIT"...), tgid, e.Int(timeline.PID))
		b = appendPair(append(b, ':'), ppid, ptid)
	case timeline.Lost:
		// perf.data's LOST or LOST_SAMPLES (which perf 6.1's script does
		// not print); a text trace's lost-events marker as the first.
		rec, ok := fieldStr(e, "record")
		if !ok {
			rec = "PERF_RECORD_LOST"
		}
		b = append(b, rec...)
		b = append(b, " lost "...)
		b = strconv.AppendInt(b, e.Int(timeline.LostCount), 10)
	}
	return b
}

func appendPair(b []byte, x, y int64) []byte {
	b = append(b, '(')
	b = strconv.AppendInt(b, x, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, y, 10)
	return append(b, ')')
}

// appendTrace writes a tracepoint's fields in its print format
// (include/trace/events/sched.h, task.h); an unknown one's as name=value.
func appendTrace(b []byte, e *timeline.Event) []byte {
	switch e.Kind {
	case timeline.SchedSwitch:
		b = kv(b, "prev_comm", e.Str(timeline.PrevComm))
		b = kvInt(b, " prev_pid", e.Int(timeline.PrevPID))
		b = kvInt(b, " prev_prio", e.Int(timeline.PrevPrio))
		b = kv(b, " prev_state", e.Str(timeline.PrevState))
		b = kv(b, " ==> next_comm", e.Str(timeline.NextComm))
		b = kvInt(b, " next_pid", e.Int(timeline.NextPID))
		return kvInt(b, " next_prio", e.Int(timeline.NextPrio))
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		b = commPID(b, e)
		b = kvInt(b, " prio", e.Int(timeline.Prio))
		if e.IsSet(timeline.Success) {
			// Kernels before 4.x printed success between prio and
			// target_cpu.
			b = kvInt(b, " success", e.Int(timeline.Success))
		}
		b = append(b, " target_cpu="...)
		return appendIntPad(b, e.Int(timeline.TargetCPU), 3, '0', false)
	case timeline.SchedMigrateTask:
		b = commPID(b, e)
		b = kvInt(b, " prio", e.Int(timeline.Prio))
		b = kvInt(b, " orig_cpu", e.Int(timeline.OrigCPU))
		return kvInt(b, " dest_cpu", e.Int(timeline.DestCPU))
	case timeline.SchedProcessFork:
		b = kv(b, "comm", e.Str(timeline.ParentComm))
		b = kvInt(b, " pid", e.Int(timeline.ParentPID))
		b = kv(b, " child_comm", e.Str(timeline.ChildComm))
		return kvInt(b, " child_pid", e.Int(timeline.ChildPID))
	case timeline.SchedProcessExec:
		b = kv(b, "filename", e.Str(timeline.Filename))
		b = kvInt(b, " pid", e.Int(timeline.PID))
		return kvInt(b, " old_pid", e.Int(timeline.OldPID))
	case timeline.SchedProcessExit, timeline.SchedProcessFree, timeline.SchedProcessWait:
		b = commPID(b, e)
		b = kvInt(b, " prio", e.Int(timeline.Prio))
		if e.IsSet(timeline.GroupDead) {
			v := "false"
			if e.Int(timeline.GroupDead) != 0 {
				v = "true"
			}
			b = kv(b, " group_dead", v)
		}
		return b
	case timeline.SchedStatRuntime:
		// u64 fields printed %Lu: a vruntime below zero (the kernel
		// starts min_vruntime at -2^20, a replay near 0) wraps as the
		// kernel's does.
		b = commPID(b, e)
		b = strconv.AppendUint(append(b, " runtime="...), uint64(e.Int(timeline.Runtime)), 10)
		b = append(b, " [ns]"...)
		if e.IsSet(timeline.Vruntime) {
			b = strconv.AppendUint(append(b, " vruntime="...), uint64(e.Int(timeline.Vruntime)), 10)
			b = append(b, " [ns]"...)
		}
		return b
	case timeline.SchedStatWait, timeline.SchedStatSleep, timeline.SchedStatIOWait, timeline.SchedStatBlocked:
		b = commPID(b, e)
		b = strconv.AppendUint(append(b, " delay="...), uint64(e.Int(timeline.Delay)), 10)
		return append(b, " [ns]"...)
	case timeline.TaskNewtask:
		b = kvInt(b, "pid", e.Int(timeline.PID))
		b = kv(b, " comm", e.Str(timeline.Comm))
		b = append(b, " clone_flags="...)
		b = strconv.AppendUint(b, uint64(e.Int(timeline.CloneFlags)), 16)
		v, _ := e.IntField("oom_score_adj")
		return kvInt(b, " oom_score_adj", v)
	case timeline.TaskRename:
		b = kvInt(b, "pid", e.Int(timeline.PID))
		old, _ := fieldStr(e, "oldcomm")
		nw, _ := fieldStr(e, "newcomm")
		b = kv(b, " oldcomm", old)
		b = kv(b, " newcomm", nw)
		v, _ := e.IntField("oom_score_adj")
		return kvInt(b, " oom_score_adj", v)
	}
	return appendFields(b, e)
}

// appendFields writes every field of an event whose print format is not
// known here: its typed columns (those past the common ones), then the
// rest, as name=value.
func appendFields(b []byte, e *timeline.Event) []byte {
	sep := ""
	for c := timeline.PrevComm; c < timeline.NumCols; c++ {
		if !e.IsSet(c) {
			continue
		}
		if c.IsString() {
			b = kv(append(b, sep...), c.Name(), e.Str(c))
		} else {
			b = kvInt(append(b, sep...), c.Name(), e.Int(c))
		}
		sep = " "
	}
	for _, f := range e.Fields {
		b = append(append(b, sep...), f.Name...)
		b = append(b, '=')
		switch f.Kind {
		case timeline.FieldInt:
			b = strconv.AppendInt(b, f.Int, 10)
		case timeline.FieldUint:
			b = strconv.AppendUint(b, uint64(f.Int), 10)
		case timeline.FieldString:
			b = append(b, f.Str...)
		case timeline.FieldInts:
			for i, v := range f.Ints {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, v, 10)
			}
		case timeline.FieldBytes:
			const hex = "0123456789abcdef"
			for _, x := range f.Bytes {
				b = append(b, hex[x>>4], hex[x&15])
			}
		}
		sep = " "
	}
	return b
}

func fieldStr(e *timeline.Event, name string) (string, bool) {
	for _, f := range e.Fields {
		if f.Name == name && f.Kind == timeline.FieldString {
			return f.Str, true
		}
	}
	return "", false
}

func commPID(b []byte, e *timeline.Event) []byte {
	b = kv(b, "comm", e.Str(timeline.Comm))
	return kvInt(b, " pid", e.Int(timeline.PID))
}

func kv(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, '=')
	return append(b, v...)
}

func kvInt(b []byte, k string, v int64) []byte {
	b = append(b, k...)
	b = append(b, '=')
	return strconv.AppendInt(b, v, 10)
}

func padLeft(b []byte, s string, n int) []byte {
	for i := len(s); i < n; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// appendIntPad writes v in at least n characters, as %Nd (fill ' '),
// %-Nd (' ', left) or %0Nd ('0') do, with no allocation.
func appendIntPad(b []byte, v int64, n int, fill byte, left bool) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], v, 10)
	if left {
		b = append(b, s...)
		for i := len(s); i < n; i++ {
			b = append(b, fill)
		}
		return b
	}
	if fill == '0' && v < 0 {
		b = append(b, '-')
		s, n = s[1:], n-1
	}
	for i := len(s); i < n; i++ {
		b = append(b, fill)
	}
	return append(b, s...)
}
