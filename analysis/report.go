package analysis

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/schedreplay/replay/timeline"
)

// Report is what the analysis found. README.md defines every number.
type Report struct {
	// StartNS and EndNS bound the trace: its first and last event times
	// (perf's side-band records aside). With Options.TrimIdleTail, EndNS
	// is the last scheduling event where every CPU idles from there on,
	// and IdleTailNS is the stretch left out.
	StartNS, EndNS int64
	IdleTailNS     int64
	// SilentCPUs: the CPUs Options.SilentCPUsIdle counted idle.
	SilentCPUs int
	// WakeupLatency is the distribution of timehist's scheduling delay:
	// from a task's first wakeup to its switch-in.
	WakeupLatency LatencyDist
	// Tasks are per-thread delays as `perf sched latency -p` defines them,
	// in its default order (average, then maximum delay, switches, runtime,
	// all descending).
	Tasks []TaskStats
	// CPUs are the busy and idle time of each CPU that switched tasks.
	CPUs []CPUStats
	// RunsTimedByRuntime counts the runs on a CPU the trace showed idle
	// (their switch-in not recorded) that CPUs time from the task's own
	// sched_stat_runtime there (its time less its runtime) instead of
	// from the CPU's last switch, where perf sched timehist starts them.
	RunsTimedByRuntime int64
	// Levels names the domain levels (empty without topology).
	Levels []string
	// IdleWhileRunnable[l] is idle-CPU time during which the nearest CPU
	// with a waiting task was in the CPU's level-l domain (not lower);
	// the total adds the levels (or, without topology, any other CPU).
	IdleWhileRunnable      []int64
	IdleWhileRunnableTotal int64
	// Migrations[l] counts migrations whose CPUs first share a level-l
	// domain; the total also counts those sharing none. From
	// sched_migrate_task events when the trace has them, else from
	// switch-ins on another CPU than the task's previous run.
	Migrations       []int64
	MigrationsTotal  int64
	MigrationsSource string
	// MigrationsAtWakeup are the sched_migrate_task migrations of a task
	// the record's CPU had just woken (its sched_waking the CPU's last
	// record): select_task_rq moving a wakee, as against the balancer's
	// and the stopper's moves; by level as Migrations, zero when the
	// trace has no sched_migrate_task.
	MigrationsAtWakeup      []int64
	MigrationsAtWakeupTotal int64
	// WakeChoices: where the wakeup path sent the sleeping wakees,
	// against the CPU each last ran on (wakechoice.go); nil for a trace
	// without sched_waking, which cannot show the choice.
	WakeChoices *WakeChoices
	// RunMigrations are the switch-ins on another CPU than the task's
	// previous run, by level, whatever the source of Migrations.
	RunMigrations      []int64
	RunMigrationsTotal int64
	// InvoluntarySwitches count switch-outs leaving the task runnable
	// (prev_state R or R+), idle task excluded.
	InvoluntarySwitches int64
	// Dropped is what the trace's reader could not use, by reason, each
	// reason naming its unit (timeline Summary.Dropped: a truncated
	// file's missing bytes, samples without a format): the report covers
	// the rest. Set by Run from the reader's metadata (NoteDropped).
	Dropped map[string]int64
	// LostEvents is the number of events the recorder reported lost, in
	// LostRows gaps; TaskDelaysSpanningLoss counts the perf-latency delays
	// left out of Tasks because a gap fell in them.
	LostEvents             int64
	LostRows               int64
	TaskDelaysSpanningLoss int64
	// Slices is the number of run slices (timehist rows, plus one per CPU
	// for the task running at the end).
	Slices int64
	// TaskDelays is the perf version whose definition Tasks follow.
	TaskDelays PerfLatency
	// InitialStates counts the tasks by the state they were in when the
	// trace began, inferred from each one's first scheduling event:
	// running (first switched out), runnable (first switched in with no
	// wakeup seen: its wait is unknown and not counted as latency),
	// sleeping (first woken), and created in the trace. A trace recorded
	// from a process's start has few of the first two; a flight-recorder
	// trace many.
	InitialStates InitialStates
	// Worst are the Options.Worst longest wakeup latencies (samples of
	// WakeupLatency), longest first, with their context.
	Worst []WorstWakeup

	wake []int64 // WakeupLatency's samples, sorted
}

// WakeupLatencies are the samples WakeupLatency summarises, sorted
// (shared with the Report: not to be changed).
func (r *Report) WakeupLatencies() []int64 { return r.wake }

// InitialStates are counts of tasks by inferred state at the trace start.
type InitialStates struct {
	Running, Runnable, Sleeping, Created int64
}

// LatencyDist summarises latencies with exact order statistics.
type LatencyDist struct {
	Count  int64
	MeanNS float64
	// Percentiles by nearest rank: the smallest sample with at least p% of
	// the samples at or below it (sorted samples x[0..n-1]: x[ceil(p*n/100)-1]).
	P50NS, P90NS, P95NS, P99NS, P999NS, MaxNS int64
	// SpanningLoss counts delays left out because events were lost between
	// the task's previous switch-out and its switch-in.
	SpanningLoss int64
	// Unfinished counts wakeups whose task had not run when the trace ended.
	Unfinished int64
	// RepeatSwitchIns counts, with Options.FirstSwitchIn, the switch-ins
	// of a task already switched in since its wakeup (no switch-out
	// between), which timehist would have measured the wakeup to.
	RepeatSwitchIns int64
}

// TaskStats are one thread's (or, merged, one command's) delays in
// perf sched latency's sense.
type TaskStats struct {
	TID  int32
	PID  int32 // thread group, -1 unknown
	Comm string
	// Merged is the number of threads merged into this row (MergeByComm);
	// 1 for a thread.
	Merged int
	// RuntimeNS is perf's runtime: the sum of sched_stat_runtime (0 in
	// traces without that event). RunNS is the sum of the task's run
	// slices (timehist's run times), which needs only sched_switch.
	RuntimeNS int64
	RunNS     int64
	// Switches is perf's "Switches": switch-ins that ended a wait for the
	// CPU (after a wakeup, a yield, or the task's first appearance).
	Switches int64
	// Delays is how many of those delays are trusted (no loss within);
	// AvgDelayNS (integer division, as perf) and MaxDelayNS are over them.
	Delays     int64
	TotalNS    int64
	AvgDelayNS int64
	MaxDelayNS int64
	// MaxDelayAtNS is the switch-in ending the maximum delay (perf's "max
	// end", older perf's "Maximum delay at"); MaxDelayStartNS its start.
	MaxDelayAtNS    int64
	MaxDelayStartNS int64
	SpanningLoss    int64

	// perfName is the name perf gives the thread: its thread-table comm,
	// or ":tid" when it never learnt one (Comm falls back to the kernel's).
	perfName string
}

// CPUStats is one CPU's time split, from the trace's first to last event.
type CPUStats struct {
	CPU    int
	BusyNS int64
	IdleNS int64
}

// quiescent reports whether, at the end, every CPU seen is known to be
// idle and no woken task waits for one.
func (a *Analyzer) quiescent() bool {
	for c := range a.cpus {
		if cs := &a.cpus[c]; cs.seen && (cs.cur != 0 || cs.lost) {
			return false
		}
	}
	for _, t := range a.tasks {
		if t.rq == rqWaiting {
			return false
		}
	}
	return true
}

// Finish ends the trace and returns the report. The Analyzer must not be
// used afterwards.
func (a *Analyzer) Finish() (*Report, error) {
	if a.err != nil {
		return nil, a.err
	}
	end := a.end
	if a.opts.TrimIdleTail && a.lastSched > a.start && a.lastSched < end && a.quiescent() {
		end = a.lastSched
	}
	r := &Report{StartNS: a.start, EndNS: end, IdleTailNS: a.end - end, TaskDelays: a.opts.TaskDelays, RunsTimedByRuntime: a.lostSwitchIns}
	r.Worst = a.worst

	// The tasks still running: a truncated slice each, and their CPU time.
	for c := range a.cpus {
		cs := &a.cpus[c]
		if !cs.seen {
			continue
		}
		cs.account(cs.tprev, end, cs.cur != 0)
		var t *task
		if cs.cur > 0 {
			t = a.tasks[cs.cur]
		}
		a.timehistRow(cs, c, t, "", end)
		a.slice.Truncated = true
		a.emit(&a.slice)
		r.CPUs = append(r.CPUs, CPUStats{CPU: c, BusyNS: cs.busy, IdleNS: cs.idle})
	}
	if a.opts.SilentCPUsIdle && a.started {
		for c := range a.opts.NumCPUs {
			if c >= len(a.cpus) || !a.cpus[c].seen {
				r.CPUs = append(r.CPUs, CPUStats{CPU: c, IdleNS: end - a.start})
				r.SilentCPUs++
			}
		}
		slices.SortFunc(r.CPUs, func(x, y CPUStats) int { return x.CPU - y.CPU })
	}
	if a.err != nil {
		return nil, a.err
	}
	r.Slices = a.slices

	// Wakeups still waiting at the end.
	var unfinished int64
	for _, t := range a.tasks {
		if t.rq == rqWaiting && t.ready != 0 {
			unfinished++
		}
	}
	r.WakeupLatency = Distribution(a.wake)
	r.wake = a.wake
	r.WakeupLatency.SpanningLoss = a.wakeSpanning
	r.WakeupLatency.Unfinished = unfinished
	r.WakeupLatency.RepeatSwitchIns = a.repeatIns
	r.WakeChoices = a.wc.result()

	// Domains.
	a.dom.finish(end)
	if a.nLev > 0 {
		r.Levels = append([]string(nil), a.opts.Levels.Levels()...)
		r.IdleWhileRunnable = append([]int64(nil), a.dom.total...)
		r.Migrations = make([]int64, a.nLev)
		r.MigrationsAtWakeup = make([]int64, a.nLev)
		r.RunMigrations = make([]int64, a.nLev)
	}
	for _, v := range a.dom.total {
		r.IdleWhileRunnableTotal += v
	}
	src := a.migrRuns
	r.MigrationsSource = "switch-in"
	if a.sawMigrate {
		src, r.MigrationsSource = a.migrEvents, "sched_migrate_task"
	}
	for l, v := range src {
		if l < a.nLev {
			r.Migrations[l] = v
		}
		r.MigrationsTotal += v
	}
	for l, v := range a.migrWake {
		if l < a.nLev {
			r.MigrationsAtWakeup[l] = v
		}
		r.MigrationsAtWakeupTotal += v
	}
	for l, v := range a.migrRuns {
		if l < a.nLev {
			r.RunMigrations[l] = v
		}
		r.RunMigrationsTotal += v
	}
	r.InvoluntarySwitches = a.involuntary
	r.LostEvents, r.LostRows = a.lostEvents, a.lostRows
	r.TaskDelaysSpanningLoss = a.latSpanning

	for _, t := range a.tasks {
		if t.tid != 0 {
			switch t.initial {
			case initRunning:
				r.InitialStates.Running++
			case initRunnable:
				r.InitialStates.Runnable++
			case initSleeping:
				r.InitialStates.Sleeping++
			case initNew:
				r.InitialStates.Created++
			}
		}
		if t.tid == 0 || (!t.lat.has && t.runNS == 0) {
			continue
		}
		l := &t.lat
		ts := TaskStats{
			TID: t.tid, PID: t.tgid, Comm: t.name(), Merged: 1, perfName: t.perfComm,
			RuntimeNS: l.runtime, Switches: l.switches, Delays: l.delays, TotalNS: l.total,
			MaxDelayNS: l.max, MaxDelayAtNS: l.maxEnd, MaxDelayStartNS: l.maxStart,
			SpanningLoss: l.spanning,
		}
		ts.RunNS = t.runNS
		if ts.perfName == "" {
			ts.perfName = fmt.Sprintf(":%d", t.tid)
		}
		if l.delays > 0 {
			ts.AvgDelayNS = l.total / l.delays
		}
		r.Tasks = append(r.Tasks, ts)
	}
	SortTasks(r.Tasks, false)
	a.err = errFinished
	return r, nil
}

type finishedError struct{}

func (finishedError) Error() string { return "analysis: Add after Finish" }

var errFinished error = finishedError{}

// Distribution sorts x in place and summarizes it as the wakeup latency
// is: count, mean, nearest-rank percentiles, max.
func Distribution(x []int64) LatencyDist {
	var d LatencyDist
	n := len(x)
	if n == 0 {
		return d
	}
	slices.Sort(x)
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	d.Count = int64(n)
	d.MeanNS = sum / float64(n)
	d.P50NS = nearestRank(x, 500)
	d.P90NS = nearestRank(x, 900)
	d.P95NS = nearestRank(x, 950)
	d.P99NS = nearestRank(x, 990)
	d.P999NS = nearestRank(x, 999)
	d.MaxNS = x[n-1]
	return d
}

// nearestRank is the per-mille pm percentile of sorted x.
func nearestRank(x []int64, pm int) int64 {
	n := len(x)
	rank := (pm*n + 999) / 1000 // ceil(pm*n/1000)
	if rank < 1 {
		rank = 1
	}
	return x[rank-1]
}

// SortTasks orders rows as perf sched latency does by default: average
// delay, maximum delay, switches and runtime, each descending; ties by
// thread id descending (per thread) or command name descending (merged),
// which is the order perf's trees leave them in.
func SortTasks(ts []TaskStats, merged bool) {
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := &ts[i], &ts[j]
		if a.AvgDelayNS != b.AvgDelayNS {
			return a.AvgDelayNS > b.AvgDelayNS
		}
		if a.MaxDelayNS != b.MaxDelayNS {
			return a.MaxDelayNS > b.MaxDelayNS
		}
		if a.Switches != b.Switches {
			return a.Switches > b.Switches
		}
		if a.RuntimeNS != b.RuntimeNS {
			return a.RuntimeNS > b.RuntimeNS
		}
		if merged && a.Comm != b.Comm {
			return a.Comm > b.Comm
		}
		return a.TID > b.TID
	})
}

// MergeByComm merges the threads of each command name, as perf sched
// latency does without -p: runtimes, switches and delays add up, the
// maximum is the largest (the first thread, by descending tid, keeps a
// tie), and a command of one thread keeps that thread's id.
func MergeByComm(ts []TaskStats) []TaskStats {
	byTID := append([]TaskStats(nil), ts...)
	sort.Slice(byTID, func(i, j int) bool { return byTID[i].TID > byTID[j].TID })
	idx := map[string]int{}
	var out []TaskStats
	for _, t := range byTID {
		i, ok := idx[t.Comm]
		if !ok {
			idx[t.Comm] = len(out)
			out = append(out, t)
			continue
		}
		m := &out[i]
		m.Merged += t.Merged
		m.RuntimeNS += t.RuntimeNS
		m.RunNS += t.RunNS
		m.Switches += t.Switches
		m.Delays += t.Delays
		m.TotalNS += t.TotalNS
		m.SpanningLoss += t.SpanningLoss
		if t.MaxDelayNS > m.MaxDelayNS {
			m.MaxDelayNS, m.MaxDelayAtNS, m.MaxDelayStartNS = t.MaxDelayNS, t.MaxDelayAtNS, t.MaxDelayStartNS
		}
		if m.PID != t.PID {
			m.PID = -1
		}
	}
	for i := range out {
		if out[i].Delays > 0 {
			out[i].AvgDelayNS = out[i].TotalNS / out[i].Delays
		}
		if out[i].Merged > 1 {
			out[i].TID = -1
		}
	}
	SortTasks(out, true)
	return out
}

// NoteDropped takes what the trace's reader could not use from its
// metadata, once the stream has ended (a reader's drops are complete only
// then).
func (r *Report) NoteDropped(m *timeline.Meta) {
	if m != nil {
		r.Dropped = maps.Clone(m.Summary.Dropped)
	}
}
