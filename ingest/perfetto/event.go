package perfetto

import (
	"strconv"

	"github.com/schedreplay/replay/timeline"
)

// How one field of an ftrace event message becomes part of a row.
type fkind uint8

const (
	fCol    fkind = iota // typed int column (int32 fields sign-extended)
	fColU                // typed column holding an unsigned value
	fStrCol              // typed string column
	fState               // sched_switch prev_state (raw)
	fInt                 // extra field, signed
	fUint                // extra field, unsigned
	fStr                 // extra field, string
)

type fspec struct {
	name string
	kind fkind
	col  timeline.Col
}

// evspec describes an FtraceEvent payload message: the timeline name and
// its fields by number, named as the kernel's format names them.
type evspec struct {
	name   string
	kind   timeline.Kind
	fields map[uint64]fspec
}

func spec(name string, fs ...fspec) *evspec {
	s := &evspec{name: name, kind: timeline.KindOf(name), fields: map[uint64]fspec{}}
	for i, f := range fs {
		if f.name != "" {
			s.fields[uint64(i+1)] = f
		}
	}
	return s
}

func col(c timeline.Col) fspec  { return fspec{name: c.Name(), kind: fCol, col: c} }
func scol(c timeline.Col) fspec { return fspec{name: c.Name(), kind: fStrCol, col: c} }
func fi(n string) fspec         { return fspec{name: n, kind: fInt} }
func fu(n string) fspec         { return fspec{name: n, kind: fUint} }
func fs(n string) fspec         { return fspec{name: n, kind: fStr} }

// Field numbers of FtraceEvent's payload and of each message (Perfetto
// protos/perfetto/trace/ftrace/{sched,task,ftrace,power}.proto); the
// position in each list is the field number.
var specs = func() map[uint64]*evspec {
	wake := func(n string) *evspec {
		return spec(n, scol(timeline.Comm), col(timeline.PID), col(timeline.Prio), col(timeline.Success), col(timeline.TargetCPU))
	}
	m := map[uint64]*evspec{
		3: spec("ftrace:print", fu("ip"), fs("buf")),
		4: spec("sched_switch", scol(timeline.PrevComm), col(timeline.PrevPID), col(timeline.PrevPrio), fspec{name: "prev_state", kind: fState},
			scol(timeline.NextComm), col(timeline.NextPID), col(timeline.NextPrio)),
		11:  spec("power:cpu_frequency", fu("state"), fu("cpu_id")),
		13:  spec("power:cpu_idle", fu("state"), fu("cpu_id")),
		17:  wake("sched_wakeup"),
		18:  spec("sched_blocked_reason", col(timeline.PID), fu("caller"), fu("io_wait")),
		19:  spec("sched_cpu_hotplug", fi("affected_cpu"), fi("error"), fi("status")),
		20:  wake("sched_waking"),
		114: wake("sched_wakeup_new"),
		235: spec("task:task_newtask", col(timeline.PID), scol(timeline.Comm), fspec{name: "clone_flags", kind: fColU, col: timeline.CloneFlags}, fi("oom_score_adj")),
		236: spec("task:task_rename", col(timeline.PID), fs("oldcomm"), fs("newcomm"), fi("oom_score_adj")),
		237: spec("sched_process_exec", scol(timeline.Filename), col(timeline.PID), col(timeline.OldPID)),
		238: spec("sched_process_exit", scol(timeline.Comm), col(timeline.PID), fi("tgid"), col(timeline.Prio)),
		239: spec("sched_process_fork", scol(timeline.ParentComm), col(timeline.ParentPID), scol(timeline.ChildComm), col(timeline.ChildPID)),
		240: spec("sched_process_free", scol(timeline.Comm), col(timeline.PID), col(timeline.Prio)),
		241: spec("sched_process_hang", scol(timeline.Comm), col(timeline.PID)),
		242: spec("sched_process_wait", scol(timeline.Comm), col(timeline.PID), col(timeline.Prio)),
		353: spec("sched_pi_setprio", scol(timeline.Comm), fi("newprio"), fi("oldprio"), col(timeline.PID)),
		491: spec("sched_migrate_task", scol(timeline.Comm), col(timeline.PID), col(timeline.Prio), col(timeline.OrigCPU), col(timeline.DestCPU), fi("running"), fu("load")),
	}
	return m
}()

// fullEvent decodes one FtraceEvent. ok is false for events the reader
// does not know (counted in Summary.Dropped by field number).
func (r *Reader) fullEvent(f *field, cpu int, off int64, seq *sequence) (x row, ok bool, err error) {
	var ts uint64
	var pid uint32
	var flags uint64
	hasTS, hasPID, hasFlags := false, false, false
	var payload *field
	err = walk(f.b, f.payloadOffset(), func(g *field) error {
		switch g.num {
		case 1:
			ts, hasTS = g.v, true
		case 2:
			pid, hasPID = uint32(g.v), true
		case 5:
			flags, hasFlags = g.v, true
		default:
			if g.typ == 2 && payload == nil {
				c := *g
				payload = &c
			}
		}
		return nil
	})
	if err != nil {
		return x, false, err
	}
	if !hasTS {
		r.drop("ftrace event without a timestamp")
		return x, false, nil
	}
	if payload == nil {
		r.drop("ftrace event without a payload")
		return x, false, nil
	}
	x.ts = int64(ts) + off
	x.setInt(timeline.CPU, int64(cpu))
	if hasPID {
		x.setInt(timeline.CommonPID, int64(int32(pid)))
	}
	if hasFlags {
		x.setInt(timeline.CommonFlags, int64(uint8(flags)))
	}
	if payload.num == 327 {
		return x, true, r.generic(payload, &x)
	}
	sp := specs[uint64(payload.num)]
	if sp == nil {
		r.drop("ftrace event not decoded (FtraceEvent field " + strconv.Itoa(int(payload.num)) + ")")
		return x, false, nil
	}
	x.name, x.kind = sp.name, sp.kind
	var seen uint64 // bit per field number < 64
	err = walk(payload.b, payload.payloadOffset(), func(g *field) error {
		fsp, ok := sp.fields[uint64(g.num)]
		if !ok {
			return nil
		}
		if g.num < 64 {
			if seen&(1<<g.num) != 0 {
				return nil // a repeated optional field: the first wins
			}
			seen |= 1 << g.num
		}
		switch fsp.kind {
		case fCol:
			x.setInt(fsp.col, g.i32())
		case fColU:
			x.setInt(fsp.col, int64(g.v))
		case fStrCol:
			x.setStr(fsp.col, r.intern(g.b))
		case fState:
			x.hasState, x.stateRaw = true, int64(g.v)
		case fInt:
			x.fields = append(x.fields, timeline.Field{Name: fsp.name, Kind: timeline.FieldInt, Int: g.i32()})
		case fUint:
			x.fields = append(x.fields, timeline.Field{Name: fsp.name, Kind: timeline.FieldUint, Int: int64(g.v)})
		case fStr:
			x.fields = append(x.fields, timeline.Field{Name: fsp.name, Kind: timeline.FieldString, Str: r.intern(g.b)})
		}
		return nil
	})
	if err != nil {
		return x, false, err
	}
	// A typed field left out reads as 0, as in Perfetto (proto2 writers
	// may omit zero values; hand-written traces omit zero prios). Only
	// success is really absent on newer kernels.
	for n, fsp := range sp.fields {
		if n < 64 && seen&(1<<n) != 0 {
			continue
		}
		switch {
		case fsp.kind == fState:
			x.hasState = true
		case fsp.kind == fStrCol:
			x.setStr(fsp.col, "")
		case fsp.kind == fCol && fsp.col != timeline.Success:
			x.setInt(fsp.col, 0)
		}
	}
	if x.kind == timeline.SchedSwitch {
		// The kernel fires sched_switch in the previous task (common_pid
		// is prev_pid), and trace_processor books the event to prev_pid.
		prev, _ := x.getInt(timeline.PrevPID)
		x.putInt(timeline.CommonPID, prev)
	}
	if sp.name == "sched_blocked_reason" && seq.symbols != nil {
		for _, fl := range x.fields {
			if fl.Name == "caller" {
				if s, ok := seq.symbols[uint64(fl.Int)]; ok {
					x.fields = append(x.fields, timeline.Field{Name: "caller_symbol", Kind: timeline.FieldString, Str: s})
				}
				break
			}
		}
	}
	return x, true, err
}

// generic decodes GenericFtraceEvent: an event Perfetto had no message
// for, with named fields. Fields named like a typed column go there.
func (r *Reader) generic(f *field, x *row) error {
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		switch {
		case g.num == 1 && g.typ == 2:
			x.name = r.intern(g.b)
		case g.num == 2 && g.typ == 2:
			var name, s string
			var v int64
			kind := -1
			err := walk(g.b, g.payloadOffset(), func(h *field) error {
				switch h.num {
				case 1:
					name = h.str()
				case 3:
					s, kind = h.str(), 0
				case 4:
					v, kind = int64(h.v), 1
				case 5:
					v, kind = int64(h.v), 2
				}
				return nil
			})
			if err != nil || kind < 0 {
				return err
			}
			c, isCol := timeline.LookupCol(name)
			if isCol {
				switch c {
				case timeline.CPU, timeline.CommonPID, timeline.CommonTGID, timeline.CommonComm, timeline.CommonFlags,
					timeline.CommonPreemptCount, timeline.PrevState, timeline.PrevStateRaw, timeline.LostCount:
					isCol = false
				}
			}
			switch {
			case isCol && c.IsString() && kind == 0:
				x.setStr(c, r.intern([]byte(s)))
			case isCol && !c.IsString() && kind > 0:
				x.setInt(c, v)
			case kind == 0:
				x.fields = append(x.fields, timeline.Field{Name: name, Kind: timeline.FieldString, Str: r.intern([]byte(s))})
			case kind == 1:
				x.fields = append(x.fields, timeline.Field{Name: name, Kind: timeline.FieldInt, Int: v})
			default:
				x.fields = append(x.fields, timeline.Field{Name: name, Kind: timeline.FieldUint, Int: v})
			}
		}
		return nil
	})
	if x.name == "" {
		x.name = "ftrace:generic"
	}
	x.kind = timeline.KindOf(x.name)
	return err
}
