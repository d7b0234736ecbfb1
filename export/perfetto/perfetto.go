// Package perfetto writes a timeline (observed or simulated) as a Perfetto
// protobuf trace that the Perfetto UI and trace_processor open as a normal
// kernel scheduling trace: per-CPU FtraceEventBundles with the full
// FtraceEvent encoding of sched_switch, sched_waking and the other sched
// and task events (so the UI draws CPU slices, thread states and wakeup
// arrows), a ProcessTree for process and thread names, and SystemInfo
// with the kernel release (the UI decodes prev_state with it).
//
// The trace is encoded by hand with protowire (see ingest/perfetto for
// why); field numbers are those of Perfetto's protos.
package perfetto

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/schedreplay/replay/ingest/ftrace"
	ingest "github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/timeline"
)

// Options tune the export.
type Options struct {
	// Policy names the scheduling policy of a simulated timeline; it goes
	// into TraceConfig.unique_session_name as "replay policy=<name>",
	// which the UI shows in the trace's metadata. Empty: taken from
	// Meta.Source.Extra["policy"] when set.
	Policy string
	// FlushEvents is how many events are held before every CPU's pending
	// events are written as bundles (default 4096). Perfetto's own
	// writer also interleaves CPUs in read batches like this.
	FlushEvents int
}

// Stats says what was written.
type Stats struct {
	Events  int64            // ftrace events written
	Skipped map[string]int64 // rows not written, by reason
	Threads int
}

const seqID = 1

// Write reads r to its end and writes the trace to w.
func Write(w io.Writer, r timeline.EventReader, opts Options) (*Stats, error) {
	if opts.FlushEvents <= 0 {
		opts.FlushEvents = 4096
	}
	m := r.Meta()
	x := &writer{bw: bufio.NewWriterSize(w, 1<<16), st: &Stats{Skipped: map[string]int64{}},
		pending: map[int32][][]byte{}, lost: map[int32]bool{}, names: map[int32]string{}, tgids: map[int32]int32{}}
	release := ""
	if m != nil {
		release = m.Source.OSRelease
	}
	x.state = ftrace.NewStateText(release)
	policy := opts.Policy
	if policy == "" && m != nil {
		policy = m.Source.Extra["policy"]
	}
	x.header(m, policy)
	for r.Next() {
		x.event(r.Event())
		if x.npending >= opts.FlushEvents {
			x.flush()
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	x.flush()
	x.processTree()
	if x.err != nil {
		return nil, x.err
	}
	if err := x.bw.Flush(); err != nil {
		return nil, err
	}
	return x.st, nil
}

type writer struct {
	bw       *bufio.Writer
	err      error
	st       *Stats
	state    *ftrace.StateText
	pending  map[int32][][]byte // cpu -> encoded FtraceEvents
	npending int
	lost     map[int32]bool
	names    map[int32]string
	tgids    map[int32]int32
	last     int64
	buf      []byte
}

// packet writes one TracePacket (Trace field 1).
func (x *writer) packet(body []byte) {
	if x.err != nil {
		return
	}
	var hdr [12]byte
	h := protowire.AppendTag(hdr[:0], 1, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(len(body)))
	if _, err := x.bw.Write(h); err != nil {
		x.err = err
		return
	}
	if _, err := x.bw.Write(body); err != nil {
		x.err = err
	}
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendInt writes an int32/int64 field (negative values as 10 bytes).
func appendInt(b []byte, num protowire.Number, v int64) []byte {
	return appendVarint(b, num, uint64(v))
}

// header writes the TraceConfig (the events recorded, the policy),
// SystemInfo and CpuInfo.
func (x *writer) header(m *timeline.Meta, policy string) {
	var cfg []byte
	if m != nil && len(m.Source.Events) > 0 {
		var fc []byte
		for _, ev := range m.Source.Events {
			sys, name, ok := strings.Cut(ev, ":")
			switch {
			case ok && (sys == "perf" || perfModifier(name)):
				continue // perf's own events ("dummy:HG", "cycles:u")
			case !ok && strings.HasPrefix(ev, "sched_"):
				sys, name = "sched", ev
			case !ok:
				continue
			}
			fc = appendString(fc, 1, sys+"/"+name)
		}
		dsc := appendString(nil, 1, "linux.ftrace")
		dsc = appendBytes(dsc, 100, fc)
		cfg = appendBytes(cfg, 2, appendBytes(nil, 1, dsc))
	}
	if policy != "" {
		cfg = appendString(cfg, 22, ingest.PolicyPrefix+policy)
	}
	if len(cfg) > 0 {
		x.packet(appendVarint(appendBytes(nil, 33, cfg), 10, seqID))
	}
	if m == nil {
		return
	}
	var si []byte
	if m.Source.OSRelease != "" {
		var u []byte
		u = appendString(u, 1, "Linux")
		u = appendString(u, 3, m.Source.OSRelease)
		if m.Source.Arch != "" {
			u = appendString(u, 4, m.Source.Arch)
		}
		si = appendBytes(si, 1, u)
	}
	n := m.Source.NrCPUs
	if m.Topology != nil && m.Topology.NrCPUs > n {
		n = m.Topology.NrCPUs
	}
	if n > 0 {
		si = appendVarint(si, 8, uint64(n))
	}
	if len(si) > 0 {
		x.packet(appendVarint(appendBytes(nil, 45, si), 10, seqID))
	}
	if t := m.Topology; t != nil && len(t.CPUs) > 0 {
		hasCap := false
		for _, c := range t.CPUs {
			hasCap = hasCap || c.Capacity > 0
		}
		if hasCap {
			var ci []byte
			for _, c := range t.CPUs {
				var one []byte
				one = appendString(one, 1, fmt.Sprintf("cpu%d", c.ID))
				capacity := c.Capacity
				if capacity == 0 {
					capacity = 1024
				}
				one = appendVarint(one, 3, uint64(capacity))
				ci = appendBytes(ci, 1, one)
			}
			x.packet(appendVarint(appendBytes(nil, 67, ci), 10, seqID))
		}
	}
}

// perfModifier reports perf event modifiers (":u", ":HG", ":ppp").
func perfModifier(s string) bool {
	if len(s) == 0 || len(s) > 3 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("ukhIGHpPSDWe", c) {
			return false
		}
	}
	return true
}

// flush writes one bundle per CPU with pending events, in CPU order.
func (x *writer) flush() {
	cpus := make([]int32, 0, len(x.pending))
	for c, evs := range x.pending {
		if len(evs) > 0 || x.lost[c] {
			cpus = append(cpus, c)
		}
	}
	sort.Slice(cpus, func(i, j int) bool { return cpus[i] < cpus[j] })
	for _, c := range cpus {
		b := appendVarint(x.buf[:0], 1, uint64(c))
		if x.lost[c] {
			b = appendVarint(b, 3, 1)
			delete(x.lost, c)
		}
		for _, ev := range x.pending[c] {
			b = appendBytes(b, 2, ev)
		}
		x.buf = b
		p := appendBytes(nil, 1, b)
		x.packet(appendVarint(p, 10, seqID))
		x.pending[c] = x.pending[c][:0]
	}
	x.npending = 0
}

func (x *writer) skip(reason string) { x.st.Skipped[reason]++ }

// learn keeps names and thread groups for the ProcessTree.
func (x *writer) learn(e *timeline.Event) {
	pairs := [][2]timeline.Col{{timeline.PrevPID, timeline.PrevComm}, {timeline.NextPID, timeline.NextComm},
		{timeline.PID, timeline.Comm}, {timeline.ChildPID, timeline.ChildComm}, {timeline.ParentPID, timeline.ParentComm},
		{timeline.CommonPID, timeline.CommonComm}}
	for _, p := range pairs {
		if e.IsSet(p[0]) && e.IsSet(p[1]) {
			if pid := e.Int32(p[0]); pid > 0 {
				x.names[pid] = e.Str(p[1])
			}
		}
	}
	if e.IsSet(timeline.CommonPID) && e.IsSet(timeline.CommonTGID) {
		if pid, tg := e.Int32(timeline.CommonPID), e.Int32(timeline.CommonTGID); pid > 0 && tg > 0 {
			x.tgids[pid] = tg
		}
	}
}

// event encodes one row as an FtraceEvent of its CPU.
func (x *writer) event(e *timeline.Event) {
	x.learn(e)
	if e.Time > x.last {
		x.last = e.Time
	}
	if !e.IsSet(timeline.CPU) || e.Int32(timeline.CPU) < 0 {
		x.skip("no cpu")
		return
	}
	cpu := e.Int32(timeline.CPU)
	if e.Kind == timeline.Lost {
		x.lost[cpu] = true
		if _, ok := x.pending[cpu]; !ok {
			x.pending[cpu] = nil
		}
		return
	}
	var body []byte
	var num protowire.Number
	i := func(b []byte, n protowire.Number, c timeline.Col) []byte {
		if e.IsSet(c) {
			return appendInt(b, n, e.Int(c))
		}
		return b
	}
	s := func(b []byte, n protowire.Number, c timeline.Col) []byte {
		if e.IsSet(c) {
			return appendString(b, n, e.Str(c))
		}
		return b
	}
	field := func(b []byte, n protowire.Number, name string) []byte {
		for _, f := range e.Fields {
			if f.Name != name {
				continue
			}
			switch f.Kind {
			case timeline.FieldString:
				return appendString(b, n, f.Str)
			case timeline.FieldInt, timeline.FieldUint:
				return appendInt(b, n, f.Int)
			}
		}
		return b
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		num = 4
		body = s(body, 1, timeline.PrevComm)
		body = i(body, 2, timeline.PrevPID)
		body = i(body, 3, timeline.PrevPrio)
		switch {
		case e.IsSet(timeline.PrevStateRaw):
			body = appendInt(body, 4, e.Int(timeline.PrevStateRaw))
		case e.IsSet(timeline.PrevState):
			if raw, ok := x.state.FromLetters(e.Str(timeline.PrevState)); ok {
				body = appendInt(body, 4, raw)
			}
		}
		body = s(body, 5, timeline.NextComm)
		body = i(body, 6, timeline.NextPID)
		body = i(body, 7, timeline.NextPrio)
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		num = map[timeline.Kind]protowire.Number{timeline.SchedWaking: 20, timeline.SchedWakeup: 17, timeline.SchedWakeupNew: 114}[e.Kind]
		body = s(body, 1, timeline.Comm)
		body = i(body, 2, timeline.PID)
		body = i(body, 3, timeline.Prio)
		body = i(body, 4, timeline.Success)
		body = i(body, 5, timeline.TargetCPU)
	case timeline.SchedMigrateTask:
		num = 491
		body = s(body, 1, timeline.Comm)
		body = i(body, 2, timeline.PID)
		body = i(body, 3, timeline.Prio)
		body = i(body, 4, timeline.OrigCPU)
		body = i(body, 5, timeline.DestCPU)
		body = field(body, 6, "running")
		body = field(body, 7, "load")
	case timeline.SchedProcessFork:
		num = 239
		body = s(body, 1, timeline.ParentComm)
		body = i(body, 2, timeline.ParentPID)
		body = s(body, 3, timeline.ChildComm)
		body = i(body, 4, timeline.ChildPID)
	case timeline.SchedProcessExec:
		num = 237
		body = s(body, 1, timeline.Filename)
		body = i(body, 2, timeline.PID)
		body = i(body, 3, timeline.OldPID)
	case timeline.SchedProcessExit:
		num = 238
		body = s(body, 1, timeline.Comm)
		body = i(body, 2, timeline.PID)
		body = field(body, 3, "tgid")
		body = i(body, 4, timeline.Prio)
	case timeline.SchedProcessFree, timeline.SchedProcessWait:
		num = 240
		if e.Kind == timeline.SchedProcessWait {
			num = 242
		}
		body = s(body, 1, timeline.Comm)
		body = i(body, 2, timeline.PID)
		body = i(body, 3, timeline.Prio)
	case timeline.TaskNewtask:
		num = 235
		body = i(body, 1, timeline.PID)
		body = s(body, 2, timeline.Comm)
		body = i(body, 3, timeline.CloneFlags)
		body = field(body, 4, "oom_score_adj")
	case timeline.TaskRename:
		num = 236
		body = i(body, 1, timeline.PID)
		body = field(body, 2, "oldcomm")
		body = field(body, 3, "newcomm")
		body = field(body, 4, "oom_score_adj")
	default:
		if len(e.Name) > 5 && e.Name[:5] == "perf:" {
			x.skip(e.Name)
			return
		}
		num, body = 327, x.generic(e)
	}
	ev := appendVarint(nil, 1, uint64(e.Time))
	if e.IsSet(timeline.CommonPID) {
		ev = appendVarint(ev, 2, uint64(uint32(e.Int32(timeline.CommonPID))))
	}
	if e.IsSet(timeline.CommonFlags) {
		ev = appendVarint(ev, 5, uint64(e.Int(timeline.CommonFlags)))
	}
	ev = appendBytes(ev, num, body)
	x.pending[cpu] = append(x.pending[cpu], ev)
	x.npending++
	x.st.Events++
}

// generic encodes any other event as GenericFtraceEvent: its name and
// every typed column and extra field by name.
func (x *writer) generic(e *timeline.Event) []byte {
	b := appendString(nil, 1, e.Name)
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		switch c {
		case timeline.CPU, timeline.CommonPID, timeline.CommonTGID, timeline.CommonComm, timeline.CommonFlags,
			timeline.CommonPreemptCount, timeline.PrevState:
			continue
		}
		if !e.IsSet(c) {
			continue
		}
		var f []byte
		f = appendString(f, 1, c.Name())
		if c.IsString() {
			f = appendString(f, 3, e.Str(c))
		} else {
			f = appendInt(f, 4, e.Int(c))
		}
		b = appendBytes(b, 2, f)
	}
	for _, fl := range e.Fields {
		var f []byte
		f = appendString(f, 1, fl.Name)
		switch fl.Kind {
		case timeline.FieldString:
			f = appendString(f, 3, fl.Str)
		case timeline.FieldInt:
			f = appendInt(f, 4, fl.Int)
		case timeline.FieldUint:
			f = appendVarint(f, 5, uint64(fl.Int))
		default:
			continue
		}
		b = appendBytes(b, 2, f)
	}
	return b
}

// processTree writes the names and thread groups seen, at the trace's
// end (the UI and trace_processor sort packets by time).
func (x *writer) processTree() {
	tids := make([]int32, 0, len(x.names))
	for t := range x.names {
		tids = append(tids, t)
	}
	for t := range x.tgids {
		if _, ok := x.names[t]; !ok {
			tids = append(tids, t)
		}
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	procs := map[int32]bool{}
	var pt []byte
	for _, t := range tids {
		tg, ok := x.tgids[t]
		if !ok || procs[tg] {
			continue
		}
		procs[tg] = true
		var p []byte
		p = appendInt(p, 1, int64(tg))
		if n, ok := x.names[tg]; ok {
			p = appendString(p, 3, n)
			p = appendVarint(p, 9, 1) // cmdline_is_comm
		}
		pt = appendBytes(pt, 1, p)
	}
	for _, t := range tids {
		tg, ok := x.tgids[t]
		if !ok {
			continue
		}
		var th []byte
		th = appendInt(th, 1, int64(t))
		if n, ok := x.names[t]; ok {
			th = appendString(th, 2, n)
		}
		th = appendInt(th, 3, int64(tg))
		pt = appendBytes(pt, 2, th)
		x.st.Threads++
	}
	if len(pt) == 0 {
		return
	}
	p := appendBytes(nil, 2, pt)
	p = appendVarint(p, 8, uint64(x.last))
	x.packet(appendVarint(p, 10, seqID))
}
