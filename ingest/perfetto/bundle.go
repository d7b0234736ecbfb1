package perfetto

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/schedreplay/replay/timeline"
)

// maxCompact bounds the entries of one compact_sched array (a bundle is
// one read of a CPU's ring buffer: thousands of events, not millions).
const maxCompact = 1 << 20

// item is one event of a bundle before the compact ones are resolved.
type item struct {
	ts    int64
	order int
	kind  uint8 // itemFull, itemSwitch, itemWaking
	r     row
}

const (
	itemSwitch = iota
	itemWaking
	itemFull
)

type compactSched struct {
	intern                  []string
	swTS                    []uint64
	swState                 []int64
	swPID, swPrio           []int32
	swComm                  []uint32
	wkTS                    []uint64
	wkPID, wkTarget, wkPrio []int32
	wkComm, wkFlags         []uint32
}

// bundle decodes an FtraceEventBundle: its full events and compact_sched
// arrays are merged by time (the compact switches need the task running
// before them, the compact wakings their waker), then queued for the CPU.
func (r *Reader) bundle(f *field, seq *sequence) error {
	var (
		cpu                    = -1
		lost                   bool
		clock                  uint64
		ftraceTS, bootTS       int64
		hasFtraceTS, hasBootTS bool
		prevEnd                int64
		hasPrevEnd             bool
		events                 []field
		compact                *field
	)
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		switch g.num {
		case 1:
			if g.v >= maxCPU {
				return fmt.Errorf("offset %d: ftrace bundle for CPU %d (Perfetto's limit is %d; corrupt trace?)", g.at, g.v, maxCPU)
			}
			cpu = int(g.v)
		case 2:
			if g.typ == 2 {
				events = append(events, *g)
			}
		case 3:
			lost = g.v != 0
		case 4:
			if g.typ == 2 {
				c := *g
				compact = &c
			}
		case 5:
			clock = g.v
		case 6:
			ftraceTS, hasFtraceTS = int64(g.v), true
		case 7:
			bootTS, hasBootTS = int64(g.v), true
		case 9, 10:
			prevEnd, hasPrevEnd = int64(g.v), true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if cpu < 0 {
		r.drop("ftrace bundle without a CPU")
		return nil
	}
	// A CPU's events are in order within one writer sequence (one ftrace
	// data source); several sources, or concatenated traces, each have
	// their own stream.
	key := cpuKey{seq: seq.id, cpu: cpu}
	cs := r.cpus[key]
	if cs == nil {
		if len(r.cpus) >= 1<<16 {
			return fmt.Errorf("offset %d: more than %d (sequence, CPU) streams", f.at, 1<<16)
		}
		cs = &cpuState{id: len(r.cpus)}
		r.cpus[key] = cs
	}
	// Clock: boot time unless the bundle says otherwise; then the bundle's
	// (ftrace, boot) pair, or the latest ClockSnapshot for MONO_RAW.
	if clock != 0 {
		switch {
		case hasFtraceTS && hasBootTS:
			cs.clockOff, cs.hasClock = bootTS-ftraceTS, true
		case clock == 4 && r.snapshots != nil:
			if raw, ok := r.snapshots[clockMonotonicRaw]; ok {
				cs.clockOff, cs.hasClock = r.snapshots[clockBoottime]-raw, true
			}
		}
		if !cs.hasClock {
			r.meta.Source.Extra["ftrace_clock_not_converted"] = strconv.FormatUint(clock, 10)
		}
	}
	off := cs.clockOff
	if clock == 0 {
		off = 0
	}

	var items []item
	if compact != nil {
		c, err := decodeCompact(compact)
		if err != nil {
			return err
		}
		items = r.compactItems(c, cpu, off, items)
	}
	for i := range events {
		x, ok, err := r.fullEvent(&events[i], cpu, off, seq)
		if err != nil {
			return err
		}
		if ok {
			items = append(items, item{ts: x.ts, order: len(items), kind: itemFull, r: x})
		}
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].ts < items[b].ts })

	// Loss markers go first, at the bundle's start.
	startTS := cs.lastQueued
	switch {
	case len(items) > 0:
		startTS = items[0].ts
	case hasPrevEnd && prevEnd > 0:
		startTS = max(startTS, prevEnd+off)
	}
	if !cs.firstSeen {
		cs.firstSeen = true
		if hasPrevEnd && prevEnd > 0 {
			t := prevEnd + off
			r.validFrom = max(r.validFrom, t)
			r.lostRow(cs, cpu, min(t, startTS), true, "perfetto: CPU's earlier ftrace data not in the trace (ring buffer overwritten)")
		}
	}
	if lost {
		r.lostRow(cs, cpu, startTS, true, "perfetto: ftrace bundle lost_events (kernel ring buffer overwritten)")
	}
	if r.pendingDrop > 0 {
		r.pendingDrop = 0
		r.lostRow(cs, cpu, startTS, false, "perfetto: previous_packet_dropped (trace buffer)")
	}
	for i := range items {
		it := &items[i]
		switch it.kind {
		case itemFull:
			r.track(cs, &it.r)
		case itemSwitch:
			if !cs.known {
				// The first compact switch of a CPU has no previous task:
				// it only seeds the state (as Perfetto does).
				r.drop("compact_sched: first switch of a CPU (no previous task)")
				nextPID, _ := it.r.getInt(timeline.NextPID)
				nextPrio, _ := it.r.getInt(timeline.NextPrio)
				comm, _ := it.r.getStr(timeline.NextComm)
				cs.known, cs.pid, cs.prio = true, int32(nextPID), int32(nextPrio)
				r.setName(cs, int32(nextPID), comm)
				continue
			}
			it.r.setInt(timeline.CommonPID, int64(cs.pid))
			it.r.setInt(timeline.PrevPID, int64(cs.pid))
			it.r.setInt(timeline.PrevPrio, int64(cs.prio))
			it.r.setStr(timeline.PrevComm, r.nameOf(cs, cs.pid))
			r.track(cs, &it.r)
		case itemWaking:
			if !cs.known {
				r.drop("compact_sched: waking before the CPU's first switch (waker unknown)")
				continue
			}
			it.r.setInt(timeline.CommonPID, int64(cs.pid))
		}
		r.queue(cpu, cs, it.r)
	}
	return nil
}

func (r *Reader) queue(cpu int, cs *cpuState, x row) {
	if len(r.events) < 4096 {
		r.events[x.name] = true
	}
	cs.lastQueued = max(cs.lastQueued, x.ts)
	r.m.push(cs.id, cpu, x)
}

func (r *Reader) lostRow(cs *cpuState, cpu int, ts int64, withCPU bool, reason string) {
	x := row{ts: ts, name: "lost", kind: timeline.Lost}
	if withCPU {
		x.setInt(timeline.CPU, int64(cpu))
		r.meta.Summary.Lost.Add(cpu, reason, 0)
	} else {
		r.meta.Summary.Lost.Add(-1, reason, 0)
	}
	x.setInt(timeline.LostCount, 0)
	x.fields = []timeline.Field{{Name: "reason", Kind: timeline.FieldString, Str: "count not stored"}}
	r.queue(cpu, cs, x)
}

// track follows the task running on the CPU and task names.
func (r *Reader) track(cs *cpuState, x *row) {
	switch x.kind {
	case timeline.SchedSwitch:
		pid, _ := x.getInt(timeline.NextPID)
		prio, _ := x.getInt(timeline.NextPrio)
		cs.known, cs.pid, cs.prio = true, int32(pid), int32(prio)
		if comm, ok := x.getStr(timeline.PrevComm); ok {
			p, _ := x.getInt(timeline.PrevPID)
			r.setName(cs, int32(p), comm)
		}
		if comm, ok := x.getStr(timeline.NextComm); ok {
			r.setName(cs, int32(pid), comm)
		}
	case timeline.TaskRename:
		pid, _ := x.getInt(timeline.PID)
		for _, f := range x.fields {
			if f.Name == "newcomm" && pid != 0 {
				r.setName(cs, int32(pid), f.Str)
			}
		}
	}
}

// setName records a task's current name. The idle task (pid 0) has one
// per CPU (swapper/N), kept with the CPU.
func (r *Reader) setName(cs *cpuState, pid int32, comm string) {
	if pid == 0 {
		cs.idleName = comm
		return
	}
	if len(r.names) > maxNames {
		clear(r.names)
	}
	r.names[pid] = comm
}

func (r *Reader) nameOf(cs *cpuState, pid int32) string {
	if pid == 0 {
		return cs.idleName
	}
	return r.names[pid]
}

func decodeCompact(f *field) (*compactSched, error) {
	c := &compactSched{}
	n := 0
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		if g.typ == 2 && g.num != 5 {
			n += len(g.b)
		} else {
			n++
		}
		if n > 11*maxCompact {
			return fmt.Errorf("offset %d: compact_sched larger than %d entries per array", g.at, maxCompact)
		}
		var err error
		switch g.num {
		case 5:
			if g.typ != 2 {
				return fmt.Errorf("offset %d: compact_sched intern_table: wire type %d, want a string", g.at, g.typ)
			}
			c.intern = append(c.intern, g.str())
		case 1:
			c.swTS, err = varints(c.swTS, g)
		case 2:
			c.swState, err = varints(c.swState, g)
		case 3:
			c.swPID, err = varints(c.swPID, g)
		case 4:
			c.swPrio, err = varints(c.swPrio, g)
		case 6:
			c.swComm, err = varints(c.swComm, g)
		case 7:
			c.wkTS, err = varints(c.wkTS, g)
		case 8:
			c.wkPID, err = varints(c.wkPID, g)
		case 9:
			c.wkTarget, err = varints(c.wkTarget, g)
		case 10:
			c.wkPrio, err = varints(c.wkPrio, g)
		case 11:
			c.wkComm, err = varints(c.wkComm, g)
		case 12:
			c.wkFlags, err = varints(c.wkFlags, g)
		}
		return err
	})
	return c, err
}

// compactItems expands the delta-encoded arrays.
func (r *Reader) compactItems(c *compactSched, cpu int, off int64, items []item) []item {
	comm := func(i uint32) string {
		if int(i) < len(c.intern) {
			return r.intern([]byte(c.intern[i]))
		}
		r.drop("compact_sched: comm index outside intern_table")
		return ""
	}
	n := min(len(c.swTS), len(c.swState), len(c.swPID), len(c.swPrio), len(c.swComm))
	if n != len(c.swTS) || n != len(c.swState) || n != len(c.swPID) || n != len(c.swPrio) || n != len(c.swComm) {
		r.drop("compact_sched: switch arrays of different lengths")
	}
	var ts uint64
	for i := 0; i < n; i++ {
		ts += c.swTS[i]
		x := row{ts: int64(ts) + off, name: "sched_switch", kind: timeline.SchedSwitch}
		x.setInt(timeline.CPU, int64(cpu))
		x.hasState, x.stateRaw = true, c.swState[i]
		x.setStr(timeline.NextComm, comm(c.swComm[i]))
		x.setInt(timeline.NextPID, int64(c.swPID[i]))
		x.setInt(timeline.NextPrio, int64(c.swPrio[i]))
		items = append(items, item{ts: x.ts, order: len(items), kind: itemSwitch, r: x})
	}
	n = min(len(c.wkTS), len(c.wkPID), len(c.wkTarget), len(c.wkPrio), len(c.wkComm))
	if n != len(c.wkTS) || n != len(c.wkPID) || n != len(c.wkTarget) || n != len(c.wkPrio) || n != len(c.wkComm) {
		r.drop("compact_sched: waking arrays of different lengths")
	}
	ts = 0
	for i := 0; i < n; i++ {
		ts += c.wkTS[i]
		x := row{ts: int64(ts) + off, name: "sched_waking", kind: timeline.SchedWaking}
		x.setInt(timeline.CPU, int64(cpu))
		if i < len(c.wkFlags) {
			x.setInt(timeline.CommonFlags, int64(uint8(c.wkFlags[i])))
		}
		x.setStr(timeline.Comm, comm(c.wkComm[i]))
		x.setInt(timeline.PID, int64(c.wkPID[i]))
		x.setInt(timeline.Prio, int64(c.wkPrio[i]))
		x.setInt(timeline.TargetCPU, int64(c.wkTarget[i]))
		items = append(items, item{ts: x.ts, order: len(items), kind: itemWaking, r: x})
	}
	return items
}
