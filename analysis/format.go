package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/schedreplay/replay/internal/textsafe"
	"github.com/schedreplay/replay/timeline"
)

// Groupings of the per-item part of the output (--by).
const (
	ByTask   = "task"   // one row per thread
	ByComm   = "comm"   // threads merged by command name, as perf sched latency
	ByCPU    = "cpu"    // busy and idle time per CPU
	ByDomain = "domain" // idle-while-runnable and migrations per domain level
	ByWakeup = "wakeup" // the longest wakeups with their context (Options.Worst)
)

// ValidBy reports whether by names a grouping.
func ValidBy(by string) bool {
	switch by {
	case ByTask, ByComm, ByCPU, ByDomain, ByWakeup:
		return true
	}
	return false
}

func (r *Report) tasks(by string) []TaskStats {
	if by == ByComm {
		return MergeByComm(r.Tasks)
	}
	return r.Tasks
}

// kv is a JSON object that keeps its key order.
type kv []struct {
	k string
	v any
}

func (o *kv) add(k string, v any) {
	*o = append(*o, struct {
		k string
		v any
	}{k, v})
}

func (o kv) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func perLevel(names []string, v []int64, total int64) kv {
	var o kv
	for i, n := range names {
		o.add(n, v[i])
	}
	o.add("total", total)
	return o
}

// JSON returns the report as the JSON object `replay latency --format
// json` prints. by == ByComm merges the tasks by command name.
func (r *Report) JSON(by string) any {
	var o kv
	d := r.WakeupLatency
	var wl kv
	wl.add("count", d.Count)
	wl.add("mean_ns", d.MeanNS)
	wl.add("p50_ns", d.P50NS)
	wl.add("p90_ns", d.P90NS)
	wl.add("p95_ns", d.P95NS)
	wl.add("p99_ns", d.P99NS)
	wl.add("p999_ns", d.P999NS)
	wl.add("max_ns", d.MaxNS)
	wl.add("spanning_loss", d.SpanningLoss)
	wl.add("unfinished", d.Unfinished)
	if d.RepeatSwitchIns > 0 {
		wl.add("repeat_switch_ins", d.RepeatSwitchIns)
	}
	o.add("wakeup_latency", wl)
	tasks := []kv{}
	for _, t := range r.tasks(by) {
		var x kv
		x.add("tid", t.TID)
		x.add("pid", t.PID)
		x.add("comm", t.Comm)
		if by == ByComm {
			x.add("threads", t.Merged)
		}
		x.add("runtime_ns", t.RuntimeNS)
		x.add("run_ns", t.RunNS)
		x.add("switches", t.Switches)
		x.add("delays", t.Delays)
		x.add("avg_delay_ns", t.AvgDelayNS)
		x.add("max_delay_ns", t.MaxDelayNS)
		x.add("max_delay_at_ns", t.MaxDelayAtNS)
		x.add("max_delay_start_ns", t.MaxDelayStartNS)
		tasks = append(tasks, x)
	}
	o.add("tasks", tasks)
	cpus := []kv{}
	for _, c := range r.CPUs {
		var x kv
		x.add("cpu", c.CPU)
		x.add("busy_ns", c.BusyNS)
		x.add("idle_ns", c.IdleNS)
		cpus = append(cpus, x)
	}
	o.add("cpus", cpus)
	o.add("runs_timed_by_runtime", r.RunsTimedByRuntime)
	o.add("idle_while_runnable_ns", perLevel(r.Levels, r.IdleWhileRunnable, r.IdleWhileRunnableTotal))
	o.add("migrations", perLevel(r.Levels, r.Migrations, r.MigrationsTotal))
	if r.CountsMigrationsAtWakeup() {
		o.add("migrations_at_wakeup", perLevel(r.Levels, r.MigrationsAtWakeup, r.MigrationsAtWakeupTotal))
	}
	if c := r.WakeChoices; c != nil {
		var x kv
		x.add("kept", c.Kept)
		x.add("pulled", c.Pulled)
		x.add("elsewhere", c.Elsewhere)
		x.add("stayed", c.Stayed)
		x.add("moved", c.Moved)
		o.add("wake_choices", x)
	}
	o.add("involuntary_switches", r.InvoluntarySwitches)
	var init kv
	init.add("running", r.InitialStates.Running)
	init.add("runnable", r.InitialStates.Runnable)
	init.add("sleeping", r.InitialStates.Sleeping)
	init.add("created", r.InitialStates.Created)
	o.add("initial_states", init)
	o.add("migrations_source", r.MigrationsSource)
	o.add("run_migrations", perLevel(r.Levels, r.RunMigrations, r.RunMigrationsTotal))
	o.add("start_ns", r.StartNS)
	o.add("end_ns", r.EndNS)
	o.add("lost_events", r.LostEvents)
	o.add("task_delays_spanning_loss", r.TaskDelaysSpanningLoss)
	dropped := r.Dropped
	if dropped == nil {
		dropped = map[string]int64{}
	}
	o.add("dropped", dropped)
	if by == ByWakeup || len(r.Worst) > 0 {
		worst := r.Worst
		if worst == nil {
			worst = []WorstWakeup{}
		}
		o.add("worst_wakeups", worst)
	}
	return o
}

// nearestIdle is a row's idle-nearby cell: the lowest level where another
// CPU idled during the wait, that CPU and its longest stretch ("≥" when
// the CPU's kept history may have missed a longer one).
func nearestIdle(w *WorstWakeup) string {
	for _, s := range w.IdleNearby {
		if s.CPU < 0 || s.NS <= 0 {
			continue
		}
		ge := ""
		if s.Partial {
			ge = ">="
		}
		return fmt.Sprintf("%s cpu %d %s%s ms", s.Level, s.CPU, ge, ms(s.NS))
	}
	return "none"
}

// WriteWorstRows writes longest wakeups as `replay latency --by wakeup`'s
// table does (a header line, then one row each); `whatif --validate
// --worst` prints its two lists with it.
func WriteWorstRows(w io.Writer, ws []WorstWakeup) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  latency ms\twoken at s\ttask\twaker (cpu, context)\ttarget cpu: running\tran on cpu after\tidle nearby\t")
	for i := range ws {
		c := ws[i].Cells()
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", ms(ws[i].LatencyNS), secs(ws[i].WokenNS), c.Task, c.Waker, c.Target, c.After, c.IdleNearby)
	}
	return tw.Flush()
}

// WorstCells are a longest wakeup's context as the table prints it (the
// HTML report shows the same cells).
type WorstCells struct {
	Task       string // comm:tid
	Waker      string // comm:tid (cpu, context)
	Target     string // target cpu: the task running there at the wakeup
	After      string // cpu after the task switched out (its state)
	IdleNearby string // level cpu N stretch ms, or "none"
}

// Cells renders w's context (names made safe for a terminal).
func (w *WorstWakeup) Cells() WorstCells {
	ctx := w.Context
	if ctx == "" {
		ctx = "?"
	}
	target := "-"
	if w.TargetCPU >= 0 {
		target = fmt.Sprintf("%d: %s", w.TargetCPU, who(w.RunningComm, w.RunningAtWake))
	}
	prev := who(w.PrevComm, w.PrevTID)
	if w.PrevState != "" && w.PrevTID != 0 {
		prev += " (" + textsafe.Terminal(w.PrevState) + ")"
	}
	return WorstCells{
		Task:       who(w.Comm, w.TID),
		Waker:      fmt.Sprintf("%s (%d, %s)", who(w.WakerComm, w.WakerTID), w.WakerCPU, ctx),
		Target:     target,
		After:      fmt.Sprintf("%d after %s", w.CPU, prev),
		IdleNearby: nearestIdle(w),
	}
}

// who prints a task as comm:tid, the idle task as <idle>.
func who(comm string, tid int32) string {
	switch {
	case tid == 0:
		return "<idle>"
	case tid < 0:
		return "?"
	case comm == "" || comm[0] == ':': // no name known (perf's ":TID")
		return fmt.Sprintf(":%d", tid)
	}
	return fmt.Sprintf("%s:%d", textsafe.Terminal(comm), tid)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer, by string) error {
	b, err := json.MarshalIndent(r.JSON(by), "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

func ms(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) }

// secs prints a timestamp as perf does: seconds, microseconds truncated.
func secs(ns int64) string { return fmt.Sprintf("%d.%06d", ns/1e9, ns%1e9/1e3) }

// WriteTable writes the report for people: the wakeup-latency summary,
// the machine-wide counts, then one table for the grouping by.
func (r *Report) WriteTable(w io.Writer, by string) error {
	bw := &errWriter{w: w}
	d := r.WakeupLatency
	fmt.Fprintf(bw, "Wakeup latency (wakeup to switch-in, perf sched timehist's \"sch delay\"): %d wakeups\n", d.Count)
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mean ms\tp50\tp90\tp95\tp99\tp99.9\tmax\t")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", strconv.FormatFloat(d.MeanNS/1e6, 'f', 3, 64),
		ms(d.P50NS), ms(d.P90NS), ms(d.P95NS), ms(d.P99NS), ms(d.P999NS), ms(d.MaxNS))
	tw.Flush()
	if d.SpanningLoss > 0 || d.Unfinished > 0 {
		fmt.Fprintf(bw, "  not counted: %d with lost events in their window, %d still waiting at the end\n", d.SpanningLoss, d.Unfinished)
	}
	if d.RepeatSwitchIns > 0 {
		fmt.Fprintf(bw, "  measured to the first switch-in: %d later switch-ins of a task with no switch-out recorded since, not measured\n", d.RepeatSwitchIns)
	}
	fmt.Fprintf(bw, "Involuntary switches (switched out runnable): %d\n", r.InvoluntarySwitches)
	is := r.InitialStates
	fmt.Fprintf(bw, "Tasks at trace start (inferred from their first scheduling event): running %d, runnable %d, sleeping %d; created in the trace %d\n",
		is.Running, is.Runnable, is.Sleeping, is.Created)
	fmt.Fprintf(bw, "Migrations (%s): %s\n", r.MigrationsSource, levelList(r.Levels, r.Migrations, r.MigrationsTotal, strconv.FormatInt))
	if r.CountsMigrationsAtWakeup() {
		fmt.Fprintf(bw, "  at a wakeup (the task its CPU had just woken, select_task_rq's move): %s\n", levelList(r.Levels, r.MigrationsAtWakeup, r.MigrationsAtWakeupTotal, strconv.FormatInt))
	}
	if c := r.WakeChoices; c != nil {
		fmt.Fprintf(bw, "Wakeup placement (sleeping wakees, against the CPU each last ran on): last on another CPU than the waking one %d: kept there %d, pulled to the waking CPU %d, elsewhere %d; last on the waking CPU %d: stayed %d, moved %d\n",
			c.Kept+c.Pulled+c.Elsewhere, c.Kept, c.Pulled, c.Elsewhere, c.Stayed+c.Moved, c.Stayed, c.Moved)
	}
	fmt.Fprintf(bw, "Idle while runnable, ms: %s\n", levelList(r.Levels, r.IdleWhileRunnable, r.IdleWhileRunnableTotal,
		func(v int64, _ int) string { return ms(v) }))
	if r.LostEvents > 0 {
		fmt.Fprintf(bw, "Lost events: %d; task delays left out for them: %d\n", r.LostEvents, r.TaskDelaysSpanningLoss)
	}
	if r.RunsTimedByRuntime > 0 {
		fmt.Fprintf(bw, "Runs the trace shows no switch-in for, on a CPU it showed idle: %d, their CPU time counted from their task's own sched_stat_runtime there (perf sched timehist counts it from the CPU's last switch)\n", r.RunsTimedByRuntime)
	}
	if len(r.Dropped) > 0 {
		fmt.Fprintf(bw, "Not analysed (the trace's reader could not use them): %s\n", textsafe.Terminal(timeline.DroppedText(r.Dropped)))
	}
	fmt.Fprintln(bw)
	tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', tabwriter.AlignRight)
	switch by {
	case ByCPU:
		fmt.Fprintln(tw, "cpu\tbusy ms\tidle ms\tidle %\t")
		for _, c := range r.CPUs {
			pct := 0.0
			if tot := c.BusyNS + c.IdleNS; tot > 0 {
				pct = 100 * float64(c.IdleNS) / float64(tot)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f\t\n", c.CPU, ms(c.BusyNS), ms(c.IdleNS), pct)
		}
	case ByWakeup:
		fmt.Fprintf(bw, "The %d longest wakeups (wakeup to switch-in), longest first; idle nearby: the lowest domain level where another CPU idled during the wait, and its longest idle stretch:\n", len(r.Worst))
		WriteWorstRows(bw, r.Worst)
	case ByDomain:
		fmt.Fprintln(tw, "level\tidle while runnable ms\tmigrations\tat a wakeup\tswitch-ins on another CPU\t")
		atWakeup := r.atWakeupCell("-")
		for i, n := range r.Levels {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t\n", n, ms(r.IdleWhileRunnable[i]), r.Migrations[i], atWakeup(r.MigrationsAtWakeup[i]), r.RunMigrations[i])
		}
		fmt.Fprintf(tw, "total\t%s\t%d\t%s\t%d\t\n", ms(r.IdleWhileRunnableTotal), r.MigrationsTotal, atWakeup(r.MigrationsAtWakeupTotal), r.RunMigrationsTotal)
	default:
		if r.TaskDelays == PerfLatency67 {
			fmt.Fprintln(bw, "Per task, perf sched latency 6.7's delays (switch-in after a wakeup, a yield or a preemption, or at first sight):")
		} else {
			fmt.Fprintln(bw, "Per task, perf sched latency 6.1's delays (switch-in after sched_wakeup(_new) or a yield, or at first sight;")
			fmt.Fprintln(bw, "sched_waking and preemption do not count: --task-delays 6.7 counts them):")
		}
		fmt.Fprintf(bw, "  %-24s %12s %9s %13s %13s %16s\n", "task", "runtime ms", "switches", "avg delay ms", "max delay ms", "max delay at s")
		for _, t := range r.tasks(by) {
			if t.Switches == 0 && t.RuntimeNS == 0 {
				continue
			}
			at := "-"
			if t.MaxDelayNS > 0 {
				at = secs(t.MaxDelayAtNS)
			}
			fmt.Fprintf(bw, "  %-24s %12s %9d %13s %13s %16s\n", taskLabel(t), ms(t.RuntimeNS), t.Switches, ms(t.AvgDelayNS), ms(t.MaxDelayNS), at)
		}
	}
	tw.Flush()
	return bw.err
}

// CountsMigrationsAtWakeup says whether the trace could show
// migrations at a wakeup: they are sched_migrate_task records, so a trace
// without that event has none to count, which is not the same as zero.
func (r *Report) CountsMigrationsAtWakeup() bool {
	return r.MigrationsSource == "sched_migrate_task"
}

// atWakeupCell formats a migrations-at-a-wakeup count for a table or CSV
// cell, or unknown when the trace could not show them.
func (r *Report) atWakeupCell(unknown string) func(int64) string {
	if !r.CountsMigrationsAtWakeup() {
		return func(int64) string { return unknown }
	}
	return func(v int64) string { return strconv.FormatInt(v, 10) }
}

func taskLabel(t TaskStats) string {
	if t.Merged > 1 {
		return fmt.Sprintf("%s:(%d)", textsafe.Terminal(t.Comm), t.Merged)
	}
	return fmt.Sprintf("%s:%d", textsafe.Terminal(t.Comm), t.TID)
}

func levelList(names []string, v []int64, total int64, f func(int64, int) string) string {
	s := "total " + f(total, 10)
	if len(names) > 0 {
		s += " ("
		for i, n := range names {
			if i > 0 {
				s += ", "
			}
			s += n + " " + f(v[i], 10)
		}
		s += ")"
	}
	return s
}

// WriteCSV writes the rows of the grouping by, with a header line.
func (r *Report) WriteCSV(w io.Writer, by string) error {
	cw := csv.NewWriter(w)
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch by {
	case ByCPU:
		cw.Write([]string{"cpu", "busy_ns", "idle_ns"})
		for _, c := range r.CPUs {
			cw.Write([]string{strconv.Itoa(c.CPU), i64(c.BusyNS), i64(c.IdleNS)})
		}
	case ByDomain:
		cw.Write([]string{"level", "idle_while_runnable_ns", "migrations", "migrations_at_wakeup", "run_migrations"})
		atWakeup := r.atWakeupCell("")
		for i, n := range r.Levels {
			cw.Write([]string{n, i64(r.IdleWhileRunnable[i]), i64(r.Migrations[i]), atWakeup(r.MigrationsAtWakeup[i]), i64(r.RunMigrations[i])})
		}
		cw.Write([]string{"total", i64(r.IdleWhileRunnableTotal), i64(r.MigrationsTotal), atWakeup(r.MigrationsAtWakeupTotal), i64(r.RunMigrationsTotal)})
	case ByWakeup:
		i32 := func(v int32) string { return strconv.FormatInt(int64(v), 10) }
		head := []string{"tid", "pid", "comm", "latency_ns", "woken_ns", "switch_in_ns", "event", "waker_tid", "waker_comm", "waker_cpu", "context",
			"target_cpu", "running_at_wake_tid", "running_at_wake_comm", "cpu", "prev_tid", "prev_comm", "prev_state"}
		// One column group per level (IdleNearby's "machine" without
		// topology), in the report's order.
		levels := r.Levels
		if len(levels) == 0 {
			levels = []string{"machine"}
		}
		for _, l := range levels {
			head = append(head, "idle_cpu_"+l, "idle_ns_"+l, "idle_partial_"+l)
		}
		cw.Write(head)
		for _, w := range r.Worst {
			row := []string{i32(w.TID), i32(w.PID), w.Comm, i64(w.LatencyNS), i64(w.WokenNS), i64(w.SwitchInNS), w.Event, i32(w.WakerTID), w.WakerComm,
				i32(w.WakerCPU), w.Context, i32(w.TargetCPU), i32(w.RunningAtWake), w.RunningComm, i32(w.CPU), i32(w.PrevTID), w.PrevComm, w.PrevState}
			// A CPU with no span at a level leaves its group empty.
			by := map[string]IdleStretch{}
			for _, s := range w.IdleNearby {
				by[s.Level] = s
			}
			for _, l := range levels {
				s, ok := by[l]
				if !ok {
					row = append(row, "", "", "")
					continue
				}
				row = append(row, i32(s.CPU), i64(s.NS), strconv.FormatBool(s.Partial))
			}
			cw.Write(row)
		}
	default:
		cw.Write([]string{"tid", "pid", "comm", "threads", "runtime_ns", "run_ns", "switches", "delays", "avg_delay_ns", "max_delay_ns", "max_delay_at_ns", "max_delay_start_ns"})
		for _, t := range r.tasks(by) {
			cw.Write([]string{i64(int64(t.TID)), i64(int64(t.PID)), t.Comm, strconv.Itoa(t.Merged), i64(t.RuntimeNS), i64(t.RunNS), i64(t.Switches),
				i64(t.Delays), i64(t.AvgDelayNS), i64(t.MaxDelayNS), i64(t.MaxDelayAtNS), i64(t.MaxDelayStartNS)})
		}
	}
	cw.Flush()
	return cw.Error()
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
