// Package timeline is the one data model every part of replay shares: a
// stream of scheduler events with the same schema whether they were read
// from a trace or produced by the simulator. It owns the Event type, the
// Arrow schema, and the streaming writer and reader of timeline files.
package timeline

import "math/bits"

// Kind identifies the event types the analysis dispatches on. Every event
// also carries its Name; Kind is only a fast switch and is KindOther for any
// tracepoint without a constant here (those are kept, never dropped).
type Kind uint8

// Event kinds. Names are the kernel tracepoint names; the perf side-band
// records get a "perf:" prefix, and Lost marks a gap where events were lost.
const (
	KindOther Kind = iota
	SchedSwitch
	SchedWaking
	SchedWakeup
	SchedWakeupNew
	SchedMigrateTask
	SchedProcessFork
	SchedProcessExec
	SchedProcessExit
	SchedProcessFree
	SchedProcessWait
	SchedStatRuntime
	SchedStatWait
	SchedStatSleep
	SchedStatIOWait
	SchedStatBlocked
	TaskNewtask
	TaskRename
	PerfComm
	PerfFork
	PerfExit
	Lost
	numKinds
)

var kindNames = [numKinds]string{
	KindOther:        "",
	SchedSwitch:      "sched_switch",
	SchedWaking:      "sched_waking",
	SchedWakeup:      "sched_wakeup",
	SchedWakeupNew:   "sched_wakeup_new",
	SchedMigrateTask: "sched_migrate_task",
	SchedProcessFork: "sched_process_fork",
	SchedProcessExec: "sched_process_exec",
	SchedProcessExit: "sched_process_exit",
	SchedProcessFree: "sched_process_free",
	SchedProcessWait: "sched_process_wait",
	SchedStatRuntime: "sched_stat_runtime",
	SchedStatWait:    "sched_stat_wait",
	SchedStatSleep:   "sched_stat_sleep",
	SchedStatIOWait:  "sched_stat_iowait",
	SchedStatBlocked: "sched_stat_blocked",
	TaskNewtask:      "task:task_newtask",
	TaskRename:       "task:task_rename",
	PerfComm:         "perf:comm",
	PerfFork:         "perf:fork",
	PerfExit:         "perf:exit",
	Lost:             "lost",
}

var kindByName = func() map[string]Kind {
	m := make(map[string]Kind, numKinds)
	for k, n := range kindNames {
		if n != "" {
			m[n] = Kind(k)
		}
	}
	return m
}()

// String returns the event name of a known kind ("" for KindOther).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return ""
}

// EventName is the name a tracepoint gets in the timeline: sched events
// keep their bare name ("sched_switch"), every other system is prefixed
// ("irq:irq_handler_entry"), so the common case reads naturally and nothing
// collides.
func EventName(system, name string) string {
	if system == "sched" || system == "" {
		return name
	}
	return system + ":" + name
}

// KindOf maps an event name (as EventName builds it) to its Kind.
func KindOf(name string) Kind {
	return kindByName[name]
}

// Col names an optional column of the events table. Every column after
// ts and event may be null; an Event says which it carries in its Has set.
// The names are the kernel's own field names, so a field of any tracepoint
// whose name matches lands in the typed column; other fields go to Fields.
type Col uint8

// Optional columns, in schema order.
const (
	CPU Col = iota
	CommonPID
	CommonTGID
	CommonComm
	CommonFlags
	CommonPreemptCount
	PrevComm
	PrevPID
	PrevPrio
	PrevState
	PrevStateRaw
	NextComm
	NextPID
	NextPrio
	Comm
	PID
	Prio
	TargetCPU
	Success
	OrigCPU
	DestCPU
	ParentComm
	ParentPID
	ChildComm
	ChildPID
	Filename
	OldPID
	Runtime
	Vruntime
	Delay
	GroupDead
	CloneFlags
	LostCount
	NumCols
)

// colType says how a column is stored.
type colType uint8

const (
	tString colType = iota // dictionary-encoded utf8
	tInt32
	tInt64
	tUint64
	tUint8
	tBool
)

type colDesc struct {
	name string
	typ  colType
}

var cols = [NumCols]colDesc{
	CPU:                {"cpu", tInt32},
	CommonPID:          {"common_pid", tInt32},
	CommonTGID:         {"common_tgid", tInt32},
	CommonComm:         {"common_comm", tString},
	CommonFlags:        {"common_flags", tUint8},
	CommonPreemptCount: {"common_preempt_count", tUint8},
	PrevComm:           {"prev_comm", tString},
	PrevPID:            {"prev_pid", tInt32},
	PrevPrio:           {"prev_prio", tInt32},
	PrevState:          {"prev_state", tString},
	PrevStateRaw:       {"prev_state_raw", tInt64},
	NextComm:           {"next_comm", tString},
	NextPID:            {"next_pid", tInt32},
	NextPrio:           {"next_prio", tInt32},
	Comm:               {"comm", tString},
	PID:                {"pid", tInt32},
	Prio:               {"prio", tInt32},
	TargetCPU:          {"target_cpu", tInt32},
	Success:            {"success", tInt32},
	OrigCPU:            {"orig_cpu", tInt32},
	DestCPU:            {"dest_cpu", tInt32},
	ParentComm:         {"parent_comm", tString},
	ParentPID:          {"parent_pid", tInt32},
	ChildComm:          {"child_comm", tString},
	ChildPID:           {"child_pid", tInt32},
	Filename:           {"filename", tString},
	OldPID:             {"old_pid", tInt32},
	Runtime:            {"runtime", tUint64},
	Vruntime:           {"vruntime", tUint64},
	Delay:              {"delay", tUint64},
	GroupDead:          {"group_dead", tBool},
	CloneFlags:         {"clone_flags", tUint64},
	LostCount:          {"lost", tUint64},
}

var colByName = func() map[string]Col {
	m := make(map[string]Col, NumCols)
	for c := Col(0); c < NumCols; c++ {
		m[cols[c].name] = c
	}
	return m
}()

// Name is the column's name in the schema.
func (c Col) Name() string { return cols[c].name }

// IsString reports whether the column holds strings.
func (c Col) IsString() bool { return cols[c].typ == tString }

// LookupCol finds the typed column a tracepoint field of that name belongs
// in. The common_* header fields other than those in the schema are not
// columns (they are dropped as framing, not data).
func LookupCol(name string) (Col, bool) {
	c, ok := colByName[name]
	return c, ok
}

// FieldKind tells how an extra field's value is held.
type FieldKind uint8

const (
	FieldInt FieldKind = iota
	FieldUint
	FieldString
	FieldInts  // array of integers, in Ints
	FieldBytes // opaque bytes, rendered as hex
)

// Field is a tracepoint field with no typed column. Extra fields are
// written as one JSON object per row in the "fields" column, in the order
// the event's format lists them.
type Field struct {
	Name  string
	Kind  FieldKind
	Int   int64 // FieldInt, FieldUint (as bits)
	Str   string
	Ints  []int64
	Bytes []byte
}

// Event is one row of the timeline. Readers reuse one Event for every
// call of Next, so callers copy what they keep (strings are immutable and
// safe to keep; the slices are not).
type Event struct {
	// Time is nanoseconds on the trace's clock (perf clock / ftrace local
	// clock: since boot). Synthesized start-of-trace records have Time 0.
	Time int64
	Kind Kind
	// Name is the event name (see EventName); always set.
	Name string
	// Has is the set of optional columns this event carries (bit 1<<Col).
	Has  uint64
	ints [NumCols]int64
	strs [NumCols]string
	// Fields holds the fields of the tracepoint that have no typed column.
	Fields []Field
	// Callchain holds instruction pointers (perf -g), innermost first,
	// including perf's context markers; empty when not recorded.
	Callchain []uint64
}

// Reset clears the event for reuse, keeping slice capacity.
func (e *Event) Reset() {
	e.Time, e.Kind, e.Name, e.Has = 0, KindOther, "", 0
	e.Fields = e.Fields[:0]
	e.Callchain = e.Callchain[:0]
}

// IsSet reports whether the event carries column c.
func (e *Event) IsSet(c Col) bool { return e.Has&(1<<c) != 0 }

// Int returns an integer column's value (0 when absent). Unsigned columns
// are returned as their bit pattern, bools as 0/1.
func (e *Event) Int(c Col) int64 {
	if e.Has&(1<<c) == 0 {
		return 0
	}
	return e.ints[c]
}

// Int32 is Int for the many int32 columns (pids, cpus, prios).
func (e *Event) Int32(c Col) int32 { return int32(e.Int(c)) }

// IntField returns the integer value of the untyped field name (fd, count,
// ret of a system-call tracepoint), and whether the event has one.
func (e *Event) IntField(name string) (int64, bool) {
	for _, f := range e.Fields {
		if f.Name == name && (f.Kind == FieldInt || f.Kind == FieldUint) {
			return f.Int, true
		}
	}
	return 0, false
}

// Str returns a string column's value ("" when absent).
func (e *Event) Str(c Col) string {
	if e.Has&(1<<c) == 0 {
		return ""
	}
	return e.strs[c]
}

// SetInt sets an integer, unsigned or bool column.
func (e *Event) SetInt(c Col, v int64) {
	e.ints[c] = v
	e.Has |= 1 << c
}

// SetStr sets a string column.
func (e *Event) SetStr(c Col, s string) {
	e.strs[c] = s
	e.Has |= 1 << c
}

// Unset removes column c from the event.
func (e *Event) Unset(c Col) { e.Has &^= 1 << c }

// copyRow makes e a deep copy of o's row: what Has marks, the fields and
// the callchain, reusing e's memory. Cheaper than CopyFrom for a writer
// that keeps a window of events: it skips the unset columns.
func (e *Event) copyRow(o *Event) {
	e.Time, e.Kind, e.Name, e.Has = o.Time, o.Kind, o.Name, o.Has
	for has := o.Has & (1<<NumCols - 1); has != 0; has &= has - 1 {
		c := bits.TrailingZeros64(has)
		e.ints[c], e.strs[c] = o.ints[c], o.strs[c]
	}
	e.copyExtras(o)
}

// copyExtras makes e's Fields and Callchain deep copies of o's, reusing
// e's memory.
func (e *Event) copyExtras(o *Event) {
	e.Fields = append(e.Fields[:0], o.Fields...)
	for i := range e.Fields {
		f := &e.Fields[i]
		f.Ints = append([]int64(nil), f.Ints...)
		f.Bytes = append([]byte(nil), f.Bytes...)
	}
	e.Callchain = append(e.Callchain[:0], o.Callchain...)
}

// CopyFrom makes e a deep copy of o (for callers that keep events).
func (e *Event) CopyFrom(o *Event) {
	fields, chain := e.Fields[:0], e.Callchain[:0]
	*e = *o
	e.Fields = append(fields, o.Fields...)
	for i := range e.Fields {
		e.Fields[i].Ints = append([]int64(nil), o.Fields[i].Ints...)
		e.Fields[i].Bytes = append([]byte(nil), o.Fields[i].Bytes...)
	}
	e.Callchain = append(chain, o.Callchain...)
}
