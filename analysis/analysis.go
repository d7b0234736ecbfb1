// Package analysis measures a schedule: what a trace shows, or what the
// simulator produced, from one stream of timeline events. It reproduces
// the two delay definitions of `perf sched` exactly (timehist's per
// switch-in scheduling delay, which is what wakeup_latency reports, and
// `perf sched latency`'s per-task delays) and adds the machine-level view
// the load balancer cares about: busy and idle time per CPU, time a CPU
// sat idle while a task waited runnable in one of its domains, migrations
// by the domain level they crossed, and involuntary switches.
//
// Everything is computed in one pass; memory grows with the number of
// tasks and CPUs, plus one int64 per wakeup for the exact percentiles.
// README.md states the definitions for users.
package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// Options configure an Analyzer.
type Options struct {
	// Levels is the traced machine's scheduler-domain hierarchy; nil when
	// unknown, and then the domain metrics are machine-wide totals only.
	Levels Levels
	// Slices, when set, receives each run slice as soon as it is complete.
	Slices SliceSink
	// PreferWaking makes wakeup latency (and perf 6.7's task delays)
	// ignore sched_wakeup, as perf does when the trace recorded
	// sched_waking. Run sets it from the trace's metadata; the analyzer
	// also sets it on the first sched_waking it sees.
	PreferWaking bool
	// NumCPUs sizes the per-CPU state up front (it grows as needed).
	NumCPUs int
	// TaskDelays selects which perf's `sched latency` the per-task delays
	// reproduce: PerfLatency61 (the default) or PerfLatency67.
	TaskDelays PerfLatency
	// TrimIdleTail ends the report's window at the last scheduling event
	// (a switch, wakeup, migration, fork or exit) when every CPU is idle
	// from there on with no task waiting: a trace that goes on recording
	// other tracepoints after its workload ended (LISA's, power and load
	// events of idle CPUs) would otherwise count that stretch as the
	// schedule's idle time, which a replay of the same workload, ending
	// with its last task, does not have. whatif --validate sets it on
	// both sides.
	TrimIdleTail bool
	// SilentCPUsIdle counts a CPU of the machine (below NumCPUs) that
	// wrote no scheduling event in the whole trace as idle over the
	// report's window, in CPUs' idle time (not in the per-level idle
	// while runnable): a trace of sched_switch alone leaves an idle CPU
	// silent (trappy's six-CPU trace, two CPUs without an event in its
	// 3.8 ms), and a replay that leaves a CPU unused writes nothing for
	// it either, while both machines had it. whatif --validate sets it on
	// both sides.
	SilentCPUsIdle bool
	// FirstSwitchIn ends a wakeup's latency at its task's first switch-in
	// after it. A task switched in again with no switch-out between (that
	// switch-out's record lost, or its CPU's buffer closed before the
	// others' at the end of a recording) had already run: timehist
	// measures the wakeup to the later switch-in and so counts the run and
	// whatever followed it as scheduling delay (perf's own wakeup at the
	// end of a two-vCPU recording: 2.6 ms where it ran after 0.3 ms; a
	// thread whose switch-outs this machine's 6.18 kernel loses: 2.1 s).
	// The slices keep timehist's rows. whatif --validate sets it on both
	// sides; Report.WakeupLatency.RepeatSwitchIns counts the switch-ins
	// it passed over.
	FirstSwitchIn bool
	// Worst keeps the longest Worst wakeup latencies with their context
	// (Report.Worst; 0: none). Memory: the rows, and a short history of
	// idle stretches per CPU.
	Worst int
}

// PerfLatency names a version of perf sched latency's delay definition.
type PerfLatency int

const (
	// PerfLatency61 is perf 6.1 (up to 6.3): only sched_wakeup and
	// sched_wakeup_new wake a task (sched_waking, which perf sched record
	// records instead of sched_wakeup, is ignored), and only a switch-out
	// with a raw prev_state of 0 leaves the task waiting for the CPU.
	PerfLatency61 PerfLatency = iota
	// PerfLatency67 is perf 6.7 and later: sched_waking wakes (and
	// sched_wakeup is ignored when the trace has sched_waking), and a
	// preempted task (R+) is waiting for the CPU too.
	PerfLatency67
)

// String names the version as the CLI takes it.
func (p PerfLatency) String() string {
	if p == PerfLatency67 {
		return "6.7"
	}
	return "6.1"
}

// SliceSink receives run slices. The Slice is reused after the call.
type SliceSink interface {
	WriteSlice(*Slice) error
}

// Analyzer consumes events one at a time (Add) and reports at the end
// (Finish). The zero value is not usable; call New.
type Analyzer struct {
	opts  Options
	tasks map[int32]*task
	cpus  []cpuState
	dom   *domainAcct
	nLev  int
	// wc books the wakeup path's choices (wakechoice.go).
	wc *choiceTally

	started    bool
	start, end int64
	// lastSched: the latest scheduling event (Options.TrimIdleTail).
	lastSched int64
	// lastLoss is the time of the latest "lost" row: a delay whose window
	// reaches back to it or before may be missing events.
	lastLoss   int64
	lostEvents int64
	// lostSwitchIns counts the runs found by their own sched_stat_runtime
	// on a CPU the trace showed idle (cpuState.lost).
	lostSwitchIns int64
	lostRows      int64

	wake         []int64 // trusted wakeup latencies, ns (timehist's sch delay)
	wakeSpanning int64
	repeatIns    int64 // switch-ins Options.FirstSwitchIn did not measure

	involuntary int64
	// Migrations by level crossed (index nLev: no common level); from
	// sched_migrate_task events and from switch-ins on another CPU.
	migrEvents, migrRuns []int64
	// migrWake: the sched_migrate_task records of a task just woken on
	// the record's CPU (cpuState.waking), by level.
	migrWake    []int64
	sawMigrate  bool
	latSpanning int64

	slice  Slice
	slices int64
	err    error

	// Options.Worst: the longest wakeups so far, worst first, and each
	// CPU's recent idle stretches.
	worst []WorstWakeup
	idle  []idleRing
}

// task is everything kept per thread.
type task struct {
	tid, tgid int32
	comm      string // from the kernel's comm fields
	perfComm  string // perf's thread name (common_comm, perf:comm), preferred

	// perf sched timehist state.
	lastOut int64 // last switch-out, 0 = none seen (timehist's last_time)
	ready   int64 // first wakeup since lastOut, 0 = none (ready_to_run)
	lastCPU int32 // CPU it last ran on, -1 = never seen running
	runNS   int64 // sum of timehist run times
	// wakeAt is 1 + the index in Analyzer.wake of the latency taken at the
	// task's last switch-in, 0 after a switch-out: a second switch-in with
	// no switch-out between (the first CPU's record lost) replaces it, as
	// timehist's one row for that wakeup measures to the later switch-in.
	wakeAt int
	// served: a switch-in since the task's wakeup took it (measured, or
	// left out for a loss in its window): Options.FirstSwitchIn measures
	// no later one.
	served bool
	// inAt, inCPU: the task's last switch-in. A slice of a CPU it has
	// since been switched in on elsewhere (this one's switch-out lost)
	// does not carry that wakeup: the later switch-in's slice does.
	inAt  int64
	inCPU int32
	// wk is the context of the wakeup ready dates (Options.Worst).
	wk wakeCtx

	// perf sched latency state: its last work atom and the totals.
	lat latTask

	// Run queue state for idle-while-runnable. counted: the wait is in
	// the domain accounting (not for per-CPU kernel threads).
	rq      uint8
	rqCPU   int32
	counted bool

	// initial is the task's state when the trace began, inferred from its
	// first scheduling event (a trace that starts mid-run, such as a
	// flight-recorder one, meets tasks in every state).
	initial uint8
}

// Inferred initial states (task.initial).
const (
	initUnknown  uint8 = iota
	initRunning        // first seen switched out: it was running
	initRunnable       // first seen switched in without a wakeup: it was waiting
	initSleeping       // first seen woken
	initNew            // created in the trace (sched_wakeup_new)
)

// meet records t's initial state from its first scheduling event.
func meet(t *task, state uint8) {
	if t != nil && t.initial == initUnknown {
		t.initial = state
	}
}

// latTask is perf sched latency's per-thread record: the state of the last
// "work atom" (the interval from a switch-out to the next switch-in) and
// the totals over all atoms.
type latTask struct {
	has           bool // perf created the thread's atoms list
	state         uint8
	outTime, wake int64
	runtime       int64 // sum of sched_stat_runtime
	switches      int64 // atoms that ended in a switch-in from runnable (perf's "Switches")
	delays        int64 // of those, delays not spanning a loss
	total         int64 // sum of those delays
	max           int64
	maxStart      int64
	maxEnd        int64
	spanning      int64
	spanStart     int64 // start of the current atom's window for the loss check
}

// perf sched latency atom states (enum thread_state in builtin-sched.c).
const (
	latSleeping uint8 = iota
	latWaitCPU
	latSchedIn
	latIgnore
)

// Run queue states.
const (
	rqUnknown uint8 = iota
	rqSleeping
	rqWaiting
	rqRunning
)

type cpuState struct {
	seen  bool
	tprev int64 // time of the last sched_switch here, 0 = none (timehist's tprev)
	cur   int32 // task switched in at tprev, -1 = unknown
	// Switch-in facts about cur, for its slice.
	curMigrated bool
	idleLastOut int64 // timehist's per-CPU idle task: last switch-out
	busy, idle  int64
	// lost, lostFrom: the trace shows the CPU idle (cur 0) but a task's
	// own sched_stat_runtime there says it runs, switched in from lostFrom
	// (the record's time less its runtime: update_curr's delta runs from
	// exec_start, which the switch-in set). Some kernels leave the switch
	// out of idle untraced (fixtures/local-6.18/README.md); the CPU is
	// busy from then, not idle until the task's switch-out, which is where
	// perf sched timehist (and its rows here, kept as perf's) starts it.
	lost     bool
	lostFrom int64
	// waking: 1 + the pid a sched_waking written here just woke, until
	// any other record here: try_to_wake_up's sched_migrate_task for a
	// wakee select_task_rq moved follows its waking on the waking CPU
	// (migrations at a wakeup, onMigrate).
	waking int32
}

// account books the CPU's time from `from` to `to`: busy when a task ran
// (ran: the task switched out, or at the trace's end the one switched
// in), else idle; with a lost switch-in found, idle until lostFrom and
// busy from then.
func (cs *cpuState) account(from, to int64, ran bool) {
	if to <= from {
		return
	}
	switch {
	case cs.lost:
		split := min(max(cs.lostFrom, from), to)
		cs.idle += split - from
		cs.busy += to - split
	case ran:
		cs.busy += to - from
	default:
		cs.idle += to - from
	}
}

// New returns an Analyzer.
func New(opts Options) *Analyzer {
	// NumCPUs sizes per-CPU state up front; a timeline's metadata can
	// claim anything, the events themselves are checked (CheckCPUs).
	opts.NumCPUs = min(max(opts.NumCPUs, 0), model.MaxCPUs)
	a := &Analyzer{opts: opts, tasks: make(map[int32]*task, 1024), lastLoss: math.MinInt64, wc: newChoiceTally()}
	a.dom = newDomainAcct(opts.Levels, opts.NumCPUs)
	if a.dom.levels != nil {
		a.nLev = a.dom.nLev
	} else {
		a.opts.Levels = nil // none, or one with no levels
	}
	a.migrEvents = make([]int64, a.nLev+1)
	a.migrWake = make([]int64, a.nLev+1)
	a.migrRuns = make([]int64, a.nLev+1)
	a.growCPU(opts.NumCPUs - 1)
	return a
}

// Run analyzes a whole event stream.
func Run(r timeline.EventReader, opts Options) (*Report, error) {
	if m := r.Meta(); m != nil {
		if m.Source.Records("sched_waking") {
			opts.PreferWaking = true
		}
		if opts.NumCPUs == 0 {
			opts.NumCPUs = m.Source.NrCPUsOnline
			if m.Source.NrCPUs > opts.NumCPUs {
				opts.NumCPUs = m.Source.NrCPUs
			}
			for _, c := range m.Summary.CPUs {
				if c+1 > opts.NumCPUs {
					opts.NumCPUs = c + 1
				}
			}
		}
	}
	a := New(opts)
	for r.Next() {
		if err := a.Add(r.Event()); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	rep, err := a.Finish()
	if err != nil {
		return nil, err
	}
	rep.NoteDropped(r.Meta())
	return rep, nil
}

func (a *Analyzer) growCPU(c int) {
	for len(a.cpus) <= c {
		a.cpus = append(a.cpus, cpuState{cur: -1})
	}
}

func (a *Analyzer) task(tid int32) *task {
	t := a.tasks[tid]
	if t == nil {
		t = &task{tid: tid, tgid: -1, lastCPU: -1, rqCPU: -1}
		a.tasks[tid] = t
	}
	return t
}

// Add processes one event. Events must come in time order. The event is
// not kept.
func (a *Analyzer) Add(e *timeline.Event) error {
	if a.err != nil {
		return a.err
	}
	// CPU numbers index per-CPU state.
	if err := timeline.CheckCPUs(e); err != nil {
		a.err = fmt.Errorf("event at %d ns: %w", e.Time, err)
		return a.err
	}
	// The trace spans its tracepoint events: perf's side-band records
	// (perf:comm, perf:mmap, ...) come before tracing starts and after it
	// stops, and synthesized ones have time 0.
	if e.Time != 0 && e.Kind != timeline.Lost && !strings.HasPrefix(e.Name, "perf:") {
		if !a.started {
			a.start, a.started = e.Time, true
		}
		if e.Time > a.end {
			a.end = e.Time
		}
	}
	if e.IsSet(timeline.CommonPID) {
		pid := e.Int32(timeline.CommonPID)
		if e.IsSet(timeline.CommonComm) || e.IsSet(timeline.CommonTGID) {
			t := a.task(pid)
			if e.IsSet(timeline.CommonComm) {
				t.perfComm = e.Str(timeline.CommonComm)
			}
			if e.IsSet(timeline.CommonTGID) {
				t.tgid = e.Int32(timeline.CommonTGID)
			}
		}
	}
	switch e.Kind {
	case timeline.SchedSwitch, timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew,
		timeline.SchedMigrateTask, timeline.SchedProcessFork, timeline.SchedProcessExit:
		a.lastSched = max(a.lastSched, e.Time)
	}
	a.noteWaking(e)
	if e.Time != 0 || e.Kind == timeline.Lost {
		// Synthesized side-band records (time 0) come before tracing.
		a.wc.observe(e)
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		a.onSwitch(e)
	case timeline.SchedWaking:
		a.opts.PreferWaking = true
		a.onWakeup(e, true, a.opts.TaskDelays == PerfLatency67)
	case timeline.SchedWakeup:
		a.onWakeup(e, !a.opts.PreferWaking, a.opts.TaskDelays == PerfLatency61 || !a.opts.PreferWaking)
	case timeline.SchedWakeupNew:
		a.onWakeup(e, true, true)
	case timeline.SchedMigrateTask:
		a.onMigrate(e)
	case timeline.SchedStatRuntime:
		a.onRuntime(e)
	case timeline.SchedProcessExit:
		if e.IsSet(timeline.PID) {
			a.exit(a.task(e.Int32(timeline.PID)), e.Time)
		}
	case timeline.PerfComm:
		tid := e.Int32(timeline.CommonPID)
		if e.IsSet(timeline.PID) {
			tid = e.Int32(timeline.PID)
		}
		if e.IsSet(timeline.Comm) {
			a.task(tid).perfComm = e.Str(timeline.Comm)
		}
	case timeline.PerfFork:
		if e.IsSet(timeline.ParentPID) && e.IsSet(timeline.ChildPID) {
			if p, ok := a.tasks[e.Int32(timeline.ParentPID)]; ok && p.perfComm != "" {
				if c := a.task(e.Int32(timeline.ChildPID)); c.perfComm == "" {
					c.perfComm = p.perfComm
				}
			}
		}
	case timeline.Lost:
		a.lastLoss = e.Time
		a.lostRows++
		a.lostEvents += e.Int(timeline.LostCount)
	}
	return a.err
}

// latencyRunnable is whether perf sched latency takes a switch-out as
// leaving the task waiting for the CPU (state 'R'). perf 6.1 indexes the
// string "RSDTtZXxKWP" with the raw prev_state, so only a raw 0 (a task
// that called schedule() while TASK_RUNNING, e.g. sched_yield) gives 'R';
// a preempted task (raw TASK_REPORT_MAX, printed "R+") reads past the
// string and is taken as sleeping. perf 6.7 decodes the state with the
// trace's print format and reports preempted as 'R'.
func (a *Analyzer) latencyRunnable(e *timeline.Event) bool {
	if a.opts.TaskDelays == PerfLatency67 {
		return switchedOutRunnable(e)
	}
	if e.IsSet(timeline.PrevStateRaw) {
		return e.Int(timeline.PrevStateRaw) == 0
	}
	return e.Str(timeline.PrevState) == "R"
}

// switchedOutRunnable reports a switch-out that left the task runnable
// ("R" or "R+"): an involuntary switch, and a task still on a run queue.
func switchedOutRunnable(e *timeline.Event) bool {
	if e.IsSet(timeline.PrevState) {
		s := e.Str(timeline.PrevState)
		return s != "" && s[0] == 'R'
	}
	return e.IsSet(timeline.PrevStateRaw) && e.Int(timeline.PrevStateRaw) == 0
}

func (a *Analyzer) onSwitch(e *timeline.Event) {
	if !e.IsSet(timeline.CPU) || !e.IsSet(timeline.PrevPID) || !e.IsSet(timeline.NextPID) {
		return
	}
	c := int(e.Int32(timeline.CPU))
	if c < 0 {
		return
	}
	now := e.Time
	prevPID, nextPID := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
	a.growCPU(c)
	cs := &a.cpus[c]
	var prev, next *task
	if prevPID != 0 {
		prev = a.task(prevPID)
		if e.IsSet(timeline.PrevComm) {
			prev.comm = e.Str(timeline.PrevComm)
		}
	}
	if nextPID != 0 {
		next = a.task(nextPID)
		if e.IsSet(timeline.NextComm) {
			next.comm = e.Str(timeline.NextComm)
		}
	}
	meet(prev, initRunning)
	meet(next, initRunnable)
	runnable := switchedOutRunnable(e)
	if a.opts.Worst > 0 {
		a.trackIdle(c, !cs.seen, prevPID == 0, nextPID == 0, now, cs.lost, cs.lostFrom)
	}

	// CPU time: before the first switch the CPU ran prev since the trace
	// began; after one, prev ran since the CPU's last switch (timehist's
	// reading, idle when prev is the idle task), unless prev's own
	// sched_stat_runtime dated a switch-in the trace lost (cs.lost).
	if !cs.seen {
		if now > a.start {
			if prevPID == 0 {
				cs.idle += now - a.start
			} else {
				cs.busy += now - a.start
			}
		}
	} else {
		cs.account(cs.tprev, now, prevPID != 0)
	}
	cs.lost = false

	// perf sched timehist: the row of the task switched out.
	a.timehistRow(cs, c, prev, e.Str(timeline.PrevState), now)
	a.emit(&a.slice)

	// perf sched latency: switch-out of prev, then switch-in of next.
	a.latencyOut(prev, a.latencyRunnable(e), now)
	a.latencyIn(next, now)

	// Involuntary switches and run queues.
	if prev != nil {
		if runnable {
			a.involuntary++
		}
		a.leaveQueue(prev, now)
		if runnable {
			a.enqueue(prev, int32(c), now)
		} else {
			prev.rq = rqSleeping
		}
		prev.lastOut = now
		prev.ready = 0
		prev.wakeAt = 0
		prev.served = false
	}
	cs.curMigrated = false
	if next != nil {
		a.leaveQueue(next, now)
		next.rq, next.rqCPU = rqRunning, int32(c)
		next.inAt, next.inCPU = now, int32(c)
		// Wakeup latency in timehist's sense, taken at the switch-in so a
		// slice still running at the end of the trace counts too.
		if next.ready != 0 && next.ready <= now {
			from := next.lastOut
			if from == 0 {
				from = next.ready
			}
			switch {
			case next.served && a.opts.FirstSwitchIn:
				a.repeatIns++
			case next.wakeAt > 0:
				a.wake[next.wakeAt-1] = now - next.ready
				if a.opts.Worst > 0 {
					a.offerWorst(next, c, prev, e.Str(timeline.PrevState), now, now-next.ready, true)
				}
			case a.lastLoss >= from:
				a.wakeSpanning++
			default:
				a.wake = append(a.wake, now-next.ready)
				next.wakeAt = len(a.wake)
				if a.opts.Worst > 0 {
					a.offerWorst(next, c, prev, e.Str(timeline.PrevState), now, now-next.ready, false)
				}
			}
			next.served = true
		}
		if next.lastCPU >= 0 && int(next.lastCPU) != c {
			a.migrRuns[a.levelOf(int(next.lastCPU), c)]++
			cs.curMigrated = true
		}
		next.lastCPU = int32(c)
	}
	a.dom.switched(c, prevPID == 0, nextPID == 0, now)
	cs.seen = true
	cs.tprev = now
	cs.cur = nextPID
}

func (a *Analyzer) levelOf(x, y int) int {
	if a.opts.Levels == nil || a.nLev == 0 {
		return 0
	}
	l := a.opts.Levels.LevelOf(x, y)
	if l < 0 || l >= a.nLev {
		return a.nLev
	}
	return l
}

// timehistRow computes what `perf sched timehist` prints for a
// sched_switch: the task switched out ran since the previous switch on
// this CPU (tprev), waited before that since its own previous switch-out,
// and of that wait, the part since its first wakeup was scheduling delay.
func (a *Analyzer) timehistRow(cs *cpuState, c int, prev *task, state string, now int64) {
	s := &a.slice
	*s = Slice{CPU: int32(c), End: now, Start: -1, Wakeup: -1, PID: -1, State: state}
	tprev := cs.tprev
	var lastOut, ready int64
	if prev == nil {
		s.Idle, s.Comm = true, "<idle>"
		s.PID = 0
		lastOut = cs.idleLastOut
		cs.idleLastOut = now
	} else {
		s.TID, s.PID, s.Comm = prev.tid, prev.tgid, prev.name()
		lastOut, ready = prev.lastOut, prev.ready
		if prev.inCPU != int32(c) && prev.inAt > tprev {
			ready = 0 // switched in elsewhere since: that slice has it
		}
	}
	if tprev != 0 {
		s.Start = tprev
		s.Run = now - tprev
		if ready != 0 && ready <= tprev {
			s.SchDelay = tprev - ready
			s.Wakeup = ready
		}
		if lastOut != 0 && lastOut <= tprev {
			s.Wait = tprev - lastOut
		}
		if prev != nil {
			prev.runNS += s.Run
		}
	}
	s.Migrated = cs.cur == s.TID && cs.curMigrated
	s.SwitchMismatch = cs.seen && cs.cur != s.TID
	from := now
	switch {
	case lastOut != 0 && lastOut <= now:
		from = lastOut
	case tprev != 0:
		from = tprev
	}
	s.SpansLoss = a.lastLoss >= from
}

func (a *Analyzer) emit(s *Slice) {
	a.slices++
	if a.opts.Slices != nil && a.err == nil {
		if err := a.opts.Slices.WriteSlice(s); err != nil {
			a.err = fmt.Errorf("writing slices: %w", err)
		}
	}
}

// latencyOut is perf sched latency's switch-out: a new atom starts, in
// state "waiting for the CPU" only when perf reads the state as 'R'.
func (a *Analyzer) latencyOut(t *task, runnable bool, now int64) {
	if t == nil {
		return // perf keeps the idle task's atoms but never prints them
	}
	l := &t.lat
	l.has = true
	l.outTime, l.wake, l.spanStart = now, 0, now
	l.state = latSleeping
	if runnable {
		l.state, l.wake = latWaitCPU, now
	}
}

// latencyIn is perf sched latency's switch-in: a thread not seen before
// gets an atom that is runnable since now (so a zero delay); the delay of
// an atom waiting for the CPU is counted.
func (a *Analyzer) latencyIn(t *task, now int64) {
	if t == nil {
		return
	}
	l := &t.lat
	if !l.has {
		l.has = true
		l.outTime, l.wake, l.spanStart, l.state = now, now, now, latWaitCPU
	}
	if l.state != latWaitCPU {
		return
	}
	if now < l.wake {
		l.state = latIgnore
		return
	}
	l.state = latSchedIn
	d := now - l.wake
	l.switches++
	if a.lastLoss >= l.spanStart {
		l.spanning++
		a.latSpanning++
		return
	}
	l.delays++
	l.total += d
	if d > l.max {
		l.max, l.maxStart, l.maxEnd = d, l.wake, now
	}
}

// onWakeup handles a wakeup event; timehist and latency say whether each
// perf tool would take it.
func (a *Analyzer) onWakeup(e *timeline.Event, timehist, latency bool) {
	if !e.IsSet(timeline.PID) {
		return
	}
	pid := e.Int32(timeline.PID)
	if pid == 0 {
		return
	}
	t := a.task(pid)
	if e.IsSet(timeline.Comm) {
		t.comm = e.Str(timeline.Comm)
	}
	if e.Kind == timeline.SchedWakeupNew {
		meet(t, initNew)
	} else {
		meet(t, initSleeping)
	}
	now := e.Time
	if !timehist && !latency {
		return
	}
	// timehist: the first wakeup since the last switch-out counts.
	if timehist && t.ready == 0 {
		t.ready = now
		if a.opts.Worst > 0 {
			a.noteWake(t, e)
		}
	}
	// latency: only an atom still sleeping is woken.
	if l := &t.lat; latency {
		if !l.has {
			l.has = true
			l.outTime, l.spanStart, l.state = now, now, latSleeping
		}
		if l.state == latSleeping && l.outTime <= now {
			l.state, l.wake = latWaitCPU, now
		}
	}
	// Run queue.
	if t.rq != rqRunning && t.rq != rqWaiting {
		cpu := int32(-1)
		switch {
		case e.IsSet(timeline.TargetCPU):
			cpu = e.Int32(timeline.TargetCPU)
		case e.IsSet(timeline.CPU):
			cpu = e.Int32(timeline.CPU)
		}
		a.enqueue(t, cpu, now)
	}
}

func (a *Analyzer) onMigrate(e *timeline.Event) {
	if !e.IsSet(timeline.PID) || !e.IsSet(timeline.OrigCPU) || !e.IsSet(timeline.DestCPU) {
		return
	}
	a.sawMigrate = true
	t := a.task(e.Int32(timeline.PID))
	if e.IsSet(timeline.Comm) {
		t.comm = e.Str(timeline.Comm)
	}
	// The record's CPU woke this task just before: try_to_wake_up's move.
	atWakeup := false
	if c := int(e.Int32(timeline.CPU)); e.IsSet(timeline.CPU) && c >= 0 && c < len(a.cpus) {
		atWakeup = a.cpus[c].waking == e.Int32(timeline.PID)+1
		a.cpus[c].waking = 0
	}
	from, to := e.Int32(timeline.OrigCPU), e.Int32(timeline.DestCPU)
	if from != to {
		l := a.levelOf(int(from), int(to))
		a.migrEvents[l]++
		if atWakeup {
			a.migrWake[l]++
		}
	}
	if t.rq == rqWaiting {
		a.leaveQueue(t, e.Time)
		a.enqueue(t, to, e.Time)
	} else {
		t.rqCPU = to
	}
}

// noteWaking keeps, per CPU, the task a sched_waking written there just
// woke, until another record there (a sched_migrate_task's onMigrate
// reads it first, then clears it). try_to_wake_up writes nothing between
// its waking and select_task_rq's move; a newly idle balance that pulls
// the wakee when its waker blocks soon after comes after the waker's
// dequeue, whose update_curr writes a sched_stat_runtime first.
func (a *Analyzer) noteWaking(e *timeline.Event) {
	if !e.IsSet(timeline.CPU) {
		return
	}
	c := int(e.Int32(timeline.CPU))
	if c < 0 || c >= model.MaxCPUs {
		return
	}
	switch e.Kind {
	case timeline.SchedMigrateTask:
		return
	case timeline.SchedWaking:
		a.growCPU(c)
		a.cpus[c].waking = e.Int32(timeline.PID) + 1
	default:
		if c < len(a.cpus) {
			a.cpus[c].waking = 0
		}
	}
}

// onRuntime is perf sched latency's runtime event: the thread's runtime
// grows; a thread first seen here gets an atom runnable since now.
func (a *Analyzer) onRuntime(e *timeline.Event) {
	if !e.IsSet(timeline.PID) {
		return
	}
	pid := e.Int32(timeline.PID)
	if c := int(e.Int32(timeline.CPU)); pid != 0 && e.IsSet(timeline.CPU) && c >= 0 && c < len(a.cpus) && e.IsSet(timeline.Runtime) &&
		e.IsSet(timeline.CommonPID) && e.Int32(timeline.CommonPID) == pid {
		// The task's own update on this CPU: it runs here.
		if cs := &a.cpus[c]; cs.seen && cs.cur == 0 && !cs.lost {
			cs.lost, cs.lostFrom = true, max(cs.tprev, e.Time-e.Int(timeline.Runtime))
			a.lostSwitchIns++
			// Busy from the switch-in, unless that would book time the
			// accounting already booked.
			a.dom.switched(c, true, false, max(cs.lostFrom, a.dom.settled()))
		}
	}
	t := a.task(pid)
	if e.IsSet(timeline.Comm) && pid != 0 {
		t.comm = e.Str(timeline.Comm)
	}
	l := &t.lat
	if !l.has {
		l.has = true
		l.outTime, l.wake, l.spanStart, l.state = e.Time, e.Time, e.Time, latWaitCPU
	}
	l.runtime += e.Int(timeline.Runtime)
}

func (a *Analyzer) exit(t *task, now int64) {
	a.leaveQueue(t, now)
	t.rq = rqSleeping
}

func (a *Analyzer) enqueue(t *task, cpu int32, now int64) {
	t.rq, t.rqCPU = rqWaiting, cpu
	t.counted = cpu >= 0 && !perCPUThread(t.comm) && !perCPUThread(t.perfComm)
	if t.counted {
		a.dom.queue(int(cpu), 1, now)
	}
}

func (a *Analyzer) leaveQueue(t *task, now int64) {
	if t.rq != rqWaiting {
		return
	}
	if t.counted {
		a.dom.queue(int(t.rqCPU), -1, now)
	}
	t.rq, t.counted = rqSleeping, false
}

// perCPUThread recognises the kernel threads bound to one CPU by name:
// "<kind>/<cpu>" for the kinds the kernel creates per CPU (ksoftirqd/3,
// migration/3, cpuhp/3, ...) and "kworker/<cpu>:<id>" (bound workers;
// unbound ones are kworker/u...). No balancer can move them, so their waits
// are not idle-while-runnable. A trace does not record CPU affinity, so
// other pinned tasks still count.
func perCPUThread(comm string) bool {
	kind, rest, ok := strings.Cut(comm, "/")
	if !ok {
		return false
	}
	switch kind {
	case "kworker":
		cpu, _, ok := strings.Cut(rest, ":")
		return ok && allDigits(cpu)
	case "ksoftirqd", "migration", "cpuhp", "idle_inject", "watchdog", "rcuc", "ktimers", "ktimersoftd", "posixcputmr":
		return allDigits(rest)
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// name is perf's name for the thread when known, else the kernel's, else
// perf's placeholder ":tid" (kept, so it is formatted once).
func (t *task) name() string {
	if t.perfComm != "" {
		return t.perfComm
	}
	if t.comm == "" {
		t.comm = fmt.Sprintf(":%d", t.tid)
	}
	return t.comm
}
