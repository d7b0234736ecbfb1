// Package pprof turns a timeline into a pprof profile of scheduling
// time, so `go tool pprof` shows which tasks waited for a CPU, how long,
// and (when the trace recorded call chains, `perf sched record -g`) where
// they were when they blocked or were preempted.
//
// The numbers are those of `replay latency`: the profile is built from
// the run slices analysis.Run computes (perf sched timehist's rows), so
// the sched_delay total is the wakeup-latency count times its mean and
// the runtime total is the sum of the tasks' run_ns.
package pprof

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/timeline"
)

// Sample types, in the order of each sample's values.
const (
	SchedDelay   = "sched_delay"   // first wakeup to switch-in (timehist "sch delay"), ns
	Runtime      = "runtime"       // time on a CPU (timehist "run time"), ns
	RunnableWait = "runnable_wait" // time runnable but not running, ns
	Wakeups      = "wakeups"       // switch-ins after a wakeup (the wakeup-latency count)
)

// Options tune the profile.
type Options struct {
	// Analysis is passed to analysis.Run (Levels gives the domain-level
	// label; TaskDelays does not change the profile).
	Analysis analysis.Options
	// Policy labels every sample (a simulated timeline's policy); empty:
	// Meta.Source.Extra["policy"].
	Policy string
}

// Build reads r to its end and returns the profile and the analysis
// report it was computed with.
//
// Each run slice gives two samples, aggregated over equal stacks and
// labels: a wait sample (sched_delay, runnable_wait, wakeups) whose stack
// is the task's call chain at its previous switch-out — where it blocked
// or was preempted — and a runtime sample. Every stack ends (at the root)
// in a frame naming the thread, so without call chains `pprof -top` lists
// threads. Labels: comm, tid, pid, cpu (where it ran), state (how it left
// the CPU before waiting: S, D, R+, ...), level (the lowest scheduler
// domain level crossed when it switched in on another CPU, with
// topology), policy. The idle task is left out.
func Build(r timeline.EventReader, opts Options) (*profile.Profile, *analysis.Report, error) {
	b := &builder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{
				{Type: SchedDelay, Unit: "nanoseconds"},
				{Type: Runtime, Unit: "nanoseconds"},
				{Type: RunnableWait, Unit: "nanoseconds"},
				{Type: Wakeups, Unit: "count"},
			},
			DefaultSampleType: SchedDelay,
		},
		locs:    map[uint64]*profile.Location{},
		threads: map[string]*profile.Location{},
		samples: map[string]*profile.Sample{},
		tasks:   map[int32]*taskState{},
		levels:  opts.Analysis.Levels,
	}
	b.policy = opts.Policy
	if m := r.Meta(); b.policy == "" && m != nil {
		b.policy = m.Source.Extra["policy"]
	}
	if b.levels != nil {
		b.levelNames = b.levels.Levels()
	}
	w := &watch{EventReader: r}
	b.cur = w
	o := opts.Analysis
	o.Slices = b
	rep, err := analysis.Run(w, o)
	if err != nil {
		return nil, nil, err
	}
	// TimeNanos stays unset: trace times count from boot, not the epoch.
	b.p.DurationNanos = rep.EndNS - rep.StartNS
	b.p.Comments = append(b.p.Comments, "replay: scheduling time per task from run slices (perf sched timehist's definitions)",
		fmt.Sprintf("trace from %d to %d ns (trace clock)", rep.StartNS, rep.EndNS))
	if err := b.p.CheckValid(); err != nil {
		return nil, nil, fmt.Errorf("pprof: %w", err)
	}
	return b.p, rep, nil
}

// Write builds the profile and writes it gzipped to w.
func Write(w io.Writer, r timeline.EventReader, opts Options) (*analysis.Report, error) {
	p, rep, err := Build(r, opts)
	if err != nil {
		return nil, err
	}
	return rep, p.Write(w)
}

// watch remembers the event being analysed, whose call chain is the
// switch-out stack of the slice emitted while it is added.
type watch struct {
	timeline.EventReader
	e *timeline.Event
}

func (w *watch) Next() bool {
	ok := w.EventReader.Next()
	w.e = nil
	if ok {
		w.e = w.EventReader.Event()
	}
	return ok
}

type taskState struct {
	outStack []*profile.Location // stack at the last switch-out
	outState string
	lastCPU  int32
}

type builder struct {
	p          *profile.Profile
	cur        *watch
	locs       map[uint64]*profile.Location
	threads    map[string]*profile.Location
	funcs      uint64
	samples    map[string]*profile.Sample
	tasks      map[int32]*taskState
	levels     analysis.Levels
	levelNames []string
	policy     string
	key        strings.Builder
}

// perfContextMax: perf call chains carry context markers (kernel, user,
// guest) as values from -4095 up; they are not addresses.
const perfContextMax = ^uint64(4095) + 1

func (b *builder) stack(chain []uint64) []*profile.Location {
	var out []*profile.Location
	for _, ip := range chain {
		if ip >= perfContextMax || ip == 0 {
			continue
		}
		l := b.locs[ip]
		if l == nil {
			// No symbols (the traced kernel's and binaries' are not in
			// the trace): the frame is named by its address, so -top and
			// -web show frames; -addresses also works.
			name := fmt.Sprintf("%#x", ip)
			if ip >= 1<<63 {
				name = "[kernel] " + name
			}
			b.funcs++
			f := &profile.Function{ID: b.funcs, Name: name, SystemName: name}
			b.p.Function = append(b.p.Function, f)
			l = &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: ip, Line: []profile.Line{{Function: f}}}
			b.locs[ip] = l
			b.p.Location = append(b.p.Location, l)
		}
		out = append(out, l)
	}
	return out
}

func (b *builder) threadLoc(s *analysis.Slice) *profile.Location {
	name := fmt.Sprintf("%s (tid %d)", s.Comm, s.TID)
	if l := b.threads[name]; l != nil {
		return l
	}
	b.funcs++
	f := &profile.Function{ID: b.funcs, Name: name, SystemName: name}
	b.p.Function = append(b.p.Function, f)
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: f}}}
	b.p.Location = append(b.p.Location, l)
	b.threads[name] = l
	return l
}

// WriteSlice implements analysis.SliceSink.
func (b *builder) WriteSlice(s *analysis.Slice) error {
	if s.Idle {
		return nil
	}
	t := b.tasks[s.TID]
	if t == nil {
		t = &taskState{lastCPU: -1}
		b.tasks[s.TID] = t
	}
	thread := b.threadLoc(s)
	level := ""
	if s.Migrated && t.lastCPU >= 0 && b.levels != nil && len(b.levelNames) > 0 {
		if l := b.levels.LevelOf(int(t.lastCPU), int(s.CPU)); l >= 0 && l < len(b.levelNames) {
			level = b.levelNames[l]
		}
	}
	runnable := strings.HasPrefix(t.outState, "R")
	wait := s.SchDelay
	if runnable {
		wait = s.Wait
	}
	woken := int64(0)
	if s.Wakeup >= 0 {
		woken = 1
	}
	if s.SchDelay > 0 || wait > 0 || woken > 0 {
		b.add(append(append([]*profile.Location(nil), t.outStack...), thread), s, t.outState, level,
			[]int64{s.SchDelay, 0, wait, woken})
	}
	if s.Run > 0 {
		b.add([]*profile.Location{thread}, s, "", level, []int64{0, s.Run, 0, 0})
	}
	// This switch-out starts the task's next wait.
	t.outState = s.State
	t.lastCPU = s.CPU
	t.outStack = t.outStack[:0]
	if !s.Truncated && b.cur.e != nil && b.cur.e.Kind == timeline.SchedSwitch {
		t.outStack = b.stack(b.cur.e.Callchain)
	}
	return nil
}

func (b *builder) add(locs []*profile.Location, s *analysis.Slice, state, level string, v []int64) {
	k := &b.key
	k.Reset()
	for _, l := range locs {
		k.WriteString(strconv.FormatUint(l.ID, 36))
		k.WriteByte(',')
	}
	fmt.Fprintf(k, "|%d|%s|%s|%s", s.CPU, s.Comm, state, level)
	if x := b.samples[k.String()]; x != nil {
		for i := range v {
			x.Value[i] += v[i]
		}
		return
	}
	x := &profile.Sample{Location: locs, Value: v,
		Label:    map[string][]string{"comm": {s.Comm}, "cpu": {strconv.Itoa(int(s.CPU))}},
		NumLabel: map[string][]int64{"tid": {int64(s.TID)}},
	}
	if s.PID >= 0 {
		x.NumLabel["pid"] = []int64{int64(s.PID)}
	}
	if state != "" {
		x.Label["state"] = []string{state}
	}
	if level != "" {
		x.Label["level"] = []string{level}
	}
	if b.policy != "" {
		x.Label["policy"] = []string{b.policy}
	}
	b.samples[k.String()] = x
	b.p.Sample = append(b.p.Sample, x)
}
