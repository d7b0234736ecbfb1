package report

import (
	"sort"
	"strings"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

// Span is one interval of a CPU lane: a run slice (Task >= 0, an index
// into Schedule.Tasks), an idle slice (Task -1), or a highlighted idle gap.
type Span struct {
	Start, End int64
	Task       int32
}

// TaskInfo names a task of a schedule.
type TaskInfo struct {
	TID   int32
	Comm  string
	RunNS int64
}

// Schedule is what the report keeps of one schedule (observed or
// simulated): its run slices per CPU and its trusted wakeup latencies.
// It is an analysis.SliceSink, so the same analysis that `replay latency`
// runs fills it, for the trace and for every replay alike.
type Schedule struct {
	Tasks []TaskInfo
	// CPUs[c] are CPU c's run and idle slices in time order.
	CPUs [][]Span
	// Latencies are the wakeup latencies (timehist's sch delay) of the
	// slices whose window had no lost events: the samples of the CDF and
	// of the whatif KS distance (the same filter as whatif's Measurer).
	Latencies []int64

	taskIdx map[taskKey]int32
	// waits[c] are the intervals tasks waited on CPU c's run queue.
	waits [][]Span
	rq    map[int32]*queued
	// first is the time of the first event (Add), started whether seen.
	first   int64
	started bool
	// unknownTo[c] is CPU c's first switch: before it the trace does not
	// say since when the CPU ran what it ran.
	unknownTo []int64
}

// queued is a task's run-queue state, tracked from the events as the
// analysis tracks it for idle-while-runnable.
type queued struct {
	state int8 // qSleeping, qWaiting, qRunning
	cpu   int32
	since int64
	comm  string
}

const (
	qSleeping int8 = iota
	qWaiting
	qRunning
)

type taskKey struct {
	tid  int32
	comm string
}

// NewSchedule returns an empty Schedule to pass as analysis.Options.Slices.
func NewSchedule() *Schedule {
	return &Schedule{taskIdx: map[taskKey]int32{}, rq: map[int32]*queued{}}
}

// WriteSlice implements analysis.SliceSink.
func (s *Schedule) WriteSlice(x *analysis.Slice) error {
	c := int(x.CPU)
	s.grow(c)
	known := x.Start >= 0
	start := x.Start
	if !known {
		// Running (or idle) since before the CPU's first switch: since the
		// schedule's first event, as far as it shows.
		start = s.first
	}
	if !s.started || x.End < start {
		return nil
	}
	x.Start = start
	if !known {
		for len(s.unknownTo) <= c {
			s.unknownTo = append(s.unknownTo, 0)
		}
		s.unknownTo[c] = x.End
	}
	if x.Idle {
		s.CPUs[c] = append(s.CPUs[c], Span{x.Start, x.End, -1})
		return nil
	}
	k := taskKey{x.TID, x.Comm}
	i, ok := s.taskIdx[k]
	if !ok {
		i = int32(len(s.Tasks))
		s.taskIdx[k] = i
		s.Tasks = append(s.Tasks, TaskInfo{TID: x.TID, Comm: x.Comm})
	}
	s.Tasks[i].RunNS += x.End - x.Start
	s.CPUs[c] = append(s.CPUs[c], Span{x.Start, x.End, i})
	if known && x.Wakeup >= 0 && !x.SpansLoss {
		s.Latencies = append(s.Latencies, x.SchDelay)
	}
	return nil
}

func (s *Schedule) grow(c int) {
	for len(s.CPUs) <= c {
		s.CPUs = append(s.CPUs, nil)
	}
	for len(s.waits) <= c {
		s.waits = append(s.waits, nil)
	}
}

// Add follows the run queues through one event: the same rules as the
// analysis's idle-while-runnable (a wakeup queues the task on its target
// CPU, sched_migrate_task moves a queued task, a switch-out in state R
// queues it where it ran, a switch-in or exit takes it off). Per-CPU
// kernel threads are left out, as there: no balancer could move them.
func (s *Schedule) Add(e *timeline.Event) {
	if !s.started && e.Time > 0 && e.Kind != timeline.Lost && !strings.HasPrefix(e.Name, "perf:") {
		s.first, s.started = e.Time, true
	}
	switch e.Kind {
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		if !e.IsSet(timeline.PID) || e.Int32(timeline.PID) == 0 {
			return
		}
		t := s.task(e.Int32(timeline.PID), e, timeline.Comm)
		if t.state == qSleeping {
			cpu := int32(-1)
			switch {
			case e.IsSet(timeline.TargetCPU):
				cpu = e.Int32(timeline.TargetCPU)
			case e.IsSet(timeline.CPU):
				cpu = e.Int32(timeline.CPU)
			}
			s.enqueue(t, cpu, e.Time)
		}
	case timeline.SchedMigrateTask:
		if !e.IsSet(timeline.PID) || !e.IsSet(timeline.DestCPU) {
			return
		}
		t := s.task(e.Int32(timeline.PID), e, timeline.Comm)
		if t.state == qWaiting {
			s.dequeue(t, e.Time)
			s.enqueue(t, e.Int32(timeline.DestCPU), e.Time)
		} else {
			t.cpu = e.Int32(timeline.DestCPU)
		}
	case timeline.SchedSwitch:
		if !e.IsSet(timeline.CPU) || !e.IsSet(timeline.PrevPID) || !e.IsSet(timeline.NextPID) {
			return
		}
		c := e.Int32(timeline.CPU)
		if p := e.Int32(timeline.PrevPID); p != 0 {
			t := s.task(p, e, timeline.PrevComm)
			s.dequeue(t, e.Time)
			t.state = qSleeping
			if st := e.Str(timeline.PrevState); e.IsSet(timeline.PrevState) && st != "" && st[0] == 'R' {
				s.enqueue(t, c, e.Time)
			}
		}
		if n := e.Int32(timeline.NextPID); n != 0 {
			t := s.task(n, e, timeline.NextComm)
			s.dequeue(t, e.Time)
			t.state, t.cpu = qRunning, c
		}
	case timeline.SchedProcessExit:
		if e.IsSet(timeline.PID) {
			t := s.task(e.Int32(timeline.PID), e, timeline.Comm)
			s.dequeue(t, e.Time)
			t.state = qSleeping
		}
	}
}

func (s *Schedule) task(tid int32, e *timeline.Event, comm timeline.Col) *queued {
	t := s.rq[tid]
	if t == nil {
		t = &queued{cpu: -1}
		s.rq[tid] = t
	}
	if e.IsSet(comm) {
		t.comm = e.Str(comm)
	}
	return t
}

func (s *Schedule) enqueue(t *queued, cpu int32, now int64) {
	t.state, t.cpu, t.since = qWaiting, cpu, now
}

func (s *Schedule) dequeue(t *queued, now int64) {
	if t.state != qWaiting {
		return
	}
	t.state = qSleeping
	if t.cpu < 0 || now <= t.since || whatif.PinnedCPUOf(t.comm) >= 0 {
		return
	}
	s.grow(int(t.cpu))
	s.waits[t.cpu] = append(s.waits[t.cpu], Span{t.since, now, -1})
}

func (s *Schedule) add(e *timeline.Event) error { s.Add(e); return nil }

// bounds returns the first start and last end of the schedule's slices.
func (s *Schedule) bounds() (lo, hi int64, ok bool) {
	for _, l := range s.CPUs {
		if len(l) == 0 {
			continue
		}
		if !ok || l[0].Start < lo {
			lo = l[0].Start
		}
		if !ok || l[len(l)-1].End > hi {
			hi = l[len(l)-1].End
		}
		ok = true
	}
	return lo, hi, ok
}

// sortedLatencies returns the latencies sorted (a copy).
func (s *Schedule) sortedLatencies() []int64 {
	l := append([]int64(nil), s.Latencies...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l
}

// IdleWhileWaiting returns, per CPU, the parts of its idle slices during
// which some task waited runnable on the queue of a busy CPU: the gaps a
// load balancer could have filled. This is the analysis's
// idle-while-runnable rule (a task queued on an idle CPU is about to run
// there and does not count) taken machine-wide, for drawing; the
// per-level amounts in the bars are the analysis's own.
func (s *Schedule) IdleWhileWaiting() [][]Span {
	// Waiting on busy CPUs, machine-wide.
	var waitBusy []Span
	for c := range s.CPUs {
		if c >= len(s.waits) {
			break
		}
		w := union(s.waits[c])
		var busy []Span
		for _, x := range s.CPUs[c] {
			// As the analysis: a CPU is known busy only from its first
			// switch, so queues before it do not count.
			if x.Task >= 0 && (c >= len(s.unknownTo) || x.Start >= s.unknownTo[c]) {
				busy = append(busy, x)
			}
		}
		waitBusy = append(waitBusy, intersect(w, busy)...)
	}
	u := union(waitBusy)
	out := make([][]Span, len(s.CPUs))
	for c, lane := range s.CPUs {
		var idle []Span
		for _, x := range lane {
			if x.Task < 0 {
				idle = append(idle, x)
			}
		}
		out[c] = intersect(idle, u)
	}
	return out
}

// union merges intervals (any order) into sorted disjoint ones.
func union(in []Span) []Span {
	if len(in) == 0 {
		return nil
	}
	v := append([]Span(nil), in...)
	sort.Slice(v, func(i, j int) bool { return v[i].Start < v[j].Start })
	out := []Span{{v[0].Start, v[0].End, -1}}
	for _, x := range v[1:] {
		l := &out[len(out)-1]
		if x.Start <= l.End {
			if x.End > l.End {
				l.End = x.End
			}
			continue
		}
		out = append(out, Span{x.Start, x.End, -1})
	}
	return out
}

// intersect intersects two sorted lists of disjoint intervals.
func intersect(a, b []Span) []Span {
	var out []Span
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i].Start, b[j].Start), min(a[i].End, b[j].End)
		if lo < hi {
			out = append(out, Span{lo, hi, -1})
		}
		if a[i].End < b[j].End {
			i++
		} else {
			j++
		}
	}
	return out
}
