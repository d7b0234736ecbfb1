// Package chrome writes a timeline as Chrome trace-event JSON, the format
// chrome://tracing, Perfetto's UI, Speedscope-like viewers and many
// scripts read. It is a lossy view (the Perfetto export keeps every
// event): per-CPU tracks with the task running, per-thread tracks with
// running and runnable intervals, and wakeups as instant events.
package chrome

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"

	"github.com/schedreplay/replay/timeline"
)

// cpusPID is the synthetic process holding one track per CPU.
const cpusPID = 1 << 30

// Options tune the export.
type Options struct {
	// Policy is stored in the trace's metadata (default: the timeline's
	// Meta.Source.Extra["policy"]).
	Policy string
}

// Stats says what was written.
type Stats struct {
	Events int64
}

type slice struct {
	start int64
	tid   int32
	comm  string
}

type thread struct {
	tgid     int32
	comm     string
	runnable int64 // start of the current runnable interval, -1 none
	named    bool
}

// Write reads r to its end and writes the JSON trace to w.
func Write(w io.Writer, r timeline.EventReader, opts Options) (*Stats, error) {
	x := &writer{bw: bufio.NewWriterSize(w, 1<<16), cpus: map[int32]*slice{}, threads: map[int32]*thread{}, st: &Stats{}}
	m := r.Meta()
	policy := opts.Policy
	if policy == "" && m != nil {
		policy = m.Source.Extra["policy"]
	}
	x.raw(`{"displayTimeUnit":"ns","traceEvents":[`)
	x.meta(cpusPID, 0, "process_name", "CPUs")
	var last int64
	for r.Next() {
		e := r.Event()
		last = max(last, e.Time)
		x.event(e)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	for cpu, s := range x.cpus {
		x.closeSlice(cpu, s, last, "")
	}
	x.raw(`],"metadata":{"generator":"replay"`)
	if policy != "" {
		x.raw(`,"policy":`)
		x.str(policy)
	}
	if m != nil && m.Source.Format != "" {
		x.raw(`,"source_format":`)
		x.str(m.Source.Format)
	}
	x.raw("}}\n")
	if x.err != nil {
		return nil, x.err
	}
	return x.st, x.bw.Flush()
}

type writer struct {
	bw      *bufio.Writer
	err     error
	first   bool
	cpus    map[int32]*slice
	threads map[int32]*thread
	st      *Stats
}

func (x *writer) raw(s string) {
	if x.err == nil {
		_, x.err = x.bw.WriteString(s)
	}
}

func (x *writer) str(s string) {
	b, _ := json.Marshal(s) // comms need not be UTF-8: Marshal replaces bad bytes
	if x.err == nil {
		_, x.err = x.bw.Write(b)
	}
}

// us renders ns as microseconds with the ns fraction.
func us(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	f := strconv.FormatInt(ns%1000, 10)
	for len(f) < 3 {
		f = "0" + f
	}
	return neg + strconv.FormatInt(ns/1000, 10) + "." + f
}

func (x *writer) begin() {
	if x.first {
		x.raw(",\n")
	}
	x.first = true
	x.st.Events++
}

func (x *writer) meta(pid, tid int32, what, name string) {
	x.begin()
	x.raw(`{"ph":"M","name":"` + what + `","pid":` + strconv.Itoa(int(pid)) + `,"tid":` + strconv.Itoa(int(tid)) + `,"args":{"name":`)
	x.str(name)
	x.raw("}}")
}

// complete writes an "X" event; args is a JSON object's inside.
func (x *writer) complete(name string, pid, tid int32, start, end int64, args string) {
	x.begin()
	x.raw(`{"ph":"X","name":`)
	x.str(name)
	x.raw(`,"pid":` + strconv.Itoa(int(pid)) + `,"tid":` + strconv.Itoa(int(tid)) + `,"ts":` + us(start) + `,"dur":` + us(end-start))
	if args != "" {
		x.raw(`,"args":{` + args + "}")
	}
	x.raw("}")
}

func (x *writer) thread(tid int32) *thread {
	t := x.threads[tid]
	if t == nil {
		t = &thread{tgid: tid, runnable: -1}
		x.threads[tid] = t
	}
	return t
}

func (x *writer) pidOf(tid int32) int32 { return x.thread(tid).tgid }

// name emits the thread's metadata once its name is known.
func (x *writer) name(tid int32, comm string) {
	if tid <= 0 || comm == "" {
		return
	}
	t := x.thread(tid)
	if t.named && t.comm == comm {
		return
	}
	t.comm, t.named = comm, true
	x.meta(t.tgid, tid, "thread_name", comm)
	if tid == t.tgid {
		x.meta(t.tgid, 0, "process_name", comm)
	}
}

func (x *writer) closeSlice(cpu int32, s *slice, end int64, state string) {
	if s.tid == 0 || end < s.start {
		return
	}
	args := `"cpu":` + strconv.Itoa(int(cpu))
	if state != "" {
		b, _ := json.Marshal(state)
		args += `,"end_state":` + string(b)
	}
	x.complete(s.comm, cpusPID, cpu, s.start, end, `"tid":`+strconv.Itoa(int(s.tid))+`,"end_state":`+quote(state))
	x.complete("Running", x.pidOf(s.tid), s.tid, s.start, end, args)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (x *writer) event(e *timeline.Event) {
	if e.IsSet(timeline.CommonPID) && e.IsSet(timeline.CommonTGID) {
		if tid, tg := e.Int32(timeline.CommonPID), e.Int32(timeline.CommonTGID); tid > 0 && tg > 0 {
			if t := x.thread(tid); t.tgid != tg {
				t.tgid, t.named = tg, false
			}
		}
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		cpu := e.Int32(timeline.CPU)
		if cpu >= 0 && x.cpus[cpu] == nil {
			x.meta(cpusPID, cpu, "thread_name", "CPU "+strconv.Itoa(int(cpu)))
		}
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		x.name(prev, e.Str(timeline.PrevComm))
		x.name(next, e.Str(timeline.NextComm))
		state := e.Str(timeline.PrevState)
		if s := x.cpus[cpu]; s != nil && s.tid == prev {
			x.closeSlice(cpu, s, e.Time, state)
		}
		if prev > 0 && state != "" && state[0] == 'R' {
			x.thread(prev).runnable = e.Time
		}
		if next > 0 {
			t := x.thread(next)
			if t.runnable >= 0 && t.runnable <= e.Time {
				x.complete("Runnable", t.tgid, next, t.runnable, e.Time, `"cpu":`+strconv.Itoa(int(cpu)))
			}
			t.runnable = -1
		}
		x.cpus[cpu] = &slice{start: e.Time, tid: next, comm: e.Str(timeline.NextComm)}
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		pid := e.Int32(timeline.PID)
		if pid <= 0 {
			return
		}
		x.name(pid, e.Str(timeline.Comm))
		t := x.thread(pid)
		if t.runnable < 0 {
			t.runnable = e.Time
		}
		x.begin()
		x.raw(`{"ph":"i","s":"t","name":`)
		x.str(e.Name)
		x.raw(`,"pid":` + strconv.Itoa(int(t.tgid)) + `,"tid":` + strconv.Itoa(int(pid)) + `,"ts":` + us(e.Time) + `,"args":{"waker_tid":` +
			strconv.Itoa(int(e.Int32(timeline.CommonPID))) + `,"target_cpu":` + strconv.Itoa(int(e.Int32(timeline.TargetCPU))) + "}}")
	}
}
