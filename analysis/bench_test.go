package analysis

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// synthStream generates a scheduler trace on the fly (one reused Event, as
// trace readers do): on each of ncpu CPUs in turn a task is woken, the
// running one is charged runtime and switched out (sleeping, or preempted
// every third time), and the woken one switched in; every 16th wakeup
// targets another CPU and is followed by a sched_migrate_task.
type synthStream struct {
	n, i       int
	ncpu, per  int
	t          int64
	step       int
	cur        []int32
	next       int32
	ev         timeline.Event
	meta       timeline.Meta
	migrations int
}

func newSynthStream(events, ncpu, tasksPerCPU int) *synthStream {
	s := &synthStream{n: events, ncpu: ncpu, per: tasksPerCPU, t: 1_000_000, cur: make([]int32, ncpu)}
	s.meta.Source.Events = []string{"sched:sched_switch", "sched:sched_waking"}
	return s
}

func (s *synthStream) Next() bool {
	if s.i >= s.n {
		return false
	}
	s.i++
	e := &s.ev
	e.Reset()
	cpu := (s.i / 4) % s.ncpu
	s.t += 1500
	e.Time = s.t
	e.SetInt(timeline.CPU, int64(cpu))
	base := int32(1000 + cpu*s.per)
	switch s.i % 4 {
	case 0:
		s.next = base + int32((s.i/4/s.ncpu)%s.per)
		if s.next == s.cur[cpu] {
			s.next = base + (s.next-base+1)%int32(s.per)
		}
		target := cpu
		if (s.i/4)%16 == 0 {
			target = (cpu + 1) % s.ncpu
		}
		e.Name, e.Kind = "sched_waking", timeline.SchedWaking
		e.SetInt(timeline.PID, int64(s.next))
		e.SetStr(timeline.Comm, "worker")
		e.SetInt(timeline.TargetCPU, int64(target))
		e.SetInt(timeline.CommonPID, int64(s.cur[cpu]))
		s.migrations = target
	case 1:
		e.Name, e.Kind = "sched_migrate_task", timeline.SchedMigrateTask
		e.SetInt(timeline.PID, int64(s.next))
		e.SetInt(timeline.OrigCPU, int64(s.migrations))
		e.SetInt(timeline.DestCPU, int64(cpu))
	case 2:
		e.Name, e.Kind = "sched_stat_runtime", timeline.SchedStatRuntime
		e.SetInt(timeline.PID, int64(s.cur[cpu]))
		e.SetStr(timeline.Comm, "worker")
		e.SetInt(timeline.Runtime, 5000)
	case 3:
		e.Name, e.Kind = "sched_switch", timeline.SchedSwitch
		e.SetInt(timeline.PrevPID, int64(s.cur[cpu]))
		e.SetStr(timeline.PrevComm, "worker")
		if s.step++; s.step%3 == 0 {
			e.SetStr(timeline.PrevState, "R+")
			e.SetInt(timeline.PrevStateRaw, 256)
		} else {
			e.SetStr(timeline.PrevState, "S")
			e.SetInt(timeline.PrevStateRaw, 1)
		}
		e.SetInt(timeline.NextPID, int64(s.next))
		e.SetStr(timeline.NextComm, "worker")
		e.SetInt(timeline.CommonPID, int64(s.cur[cpu]))
		e.SetStr(timeline.CommonComm, "worker")
		s.cur[cpu] = s.next
	}
	return true
}

func (s *synthStream) Event() *timeline.Event { return &s.ev }
func (s *synthStream) Err() error             { return nil }
func (s *synthStream) Meta() *timeline.Meta   { return &s.meta }
func (s *synthStream) Close() error           { return nil }

type discardSlices struct{}

func (discardSlices) WriteSlice(*Slice) error { return nil }

func benchLevels() Levels {
	sl := &SpanLevels{Names: []string{"SMT", "MC", "NUMA"}}
	for c := 0; c < 16; c++ {
		smt := []int{c &^ 1, c | 1}
		mc := make([]int, 0, 8)
		for o := c &^ 7; o < c&^7+8; o++ {
			mc = append(mc, o)
		}
		all := make([]int, 16)
		for o := range all {
			all[o] = o
		}
		sl.Spans = append(sl.Spans, [][]int{smt, mc, all})
	}
	return sl
}

// BenchmarkAnalyze measures the analysis alone on a synthetic stream of a
// 16-CPU, 3-level machine; ns/op is per event.
func BenchmarkAnalyze(b *testing.B) {
	lv := benchLevels()
	b.ReportAllocs()
	a := New(Options{Levels: lv, Slices: discardSlices{}, NumCPUs: 16, PreferWaking: true})
	s := newSynthStream(b.N, 16, 64)
	b.ResetTimer()
	for s.Next() {
		if err := a.Add(s.Event()); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := a.Finish(); err != nil {
		b.Fatal(err)
	}
}

// TestNoAllocsPerEvent checks that once every task and CPU has been seen,
// an event costs no allocation (the wakeup-latency slice grows by
// doubling, so a few amortised allocations are allowed).
func TestNoAllocsPerEvent(t *testing.T) {
	a := New(Options{Levels: benchLevels(), Slices: discardSlices{}, NumCPUs: 16})
	s := newSynthStream(1<<30, 16, 64)
	for i := 0; i < 200_000 && s.Next(); i++ {
		a.Add(s.Event())
	}
	a.wake = make([]int64, 0, 1<<20) // room for the measured events' latencies
	const n = 100_000
	allocs := testing.AllocsPerRun(1, func() {
		for i := 0; i < n && s.Next(); i++ {
			a.Add(s.Event())
		}
	})
	if allocs > 0 {
		t.Errorf("%v allocations for %d events", allocs, n)
	}
}
