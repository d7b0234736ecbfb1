// Command forkidle sets a replay's forks beside the kernel's: how long a
// fork's child and a task's wakeup take to run on an idle CPU (the idle
// exit), and where the forks went given what the other CPUs were doing
// (FIDELITY.md round 152). It reads any timelines, a trace and a replay's
// output alike; files before "vs" add up in the first column, those after
// it in the second:
//
//	replay whatif -i fixtures/kernels/v6.12/guest-M-1s1c2t/r3/hackbench.perf.data.gz --seed 0 -o /tmp/m3.arrow
//	go run ./scripts/forkidle fixtures/kernels/v6.12/guest-M-1s1c2t/r3/hackbench.perf.data.gz vs /tmp/m3.arrow
//
// An idle exit is a wakeup (sched_waking) or a fork (sched_wakeup_new)
// whose target CPU was idle, with no other wakeup pending there, timed to
// that CPU's next switch when it is to the wakee (the extraction's rule
// for Workload.IdleWakeNS). Its class: a fork; a wakeup raised on another
// CPU; one raised on the idle CPU itself (its timer or interrupt). A
// wakee's target is sched_waking's target_cpu, moved by a
// sched_migrate_task of it before the switch.
//
// At each fork the other CPUs (all but the forking one) are busy when
// every one runs a task, pending when one is idle with a woken task not
// yet switched in (so idle_cpu() is false there), else idle; the fork
// kept its child when it placed it on the forking CPU. Under the kernel's
// fork balancing a child stays where no other CPU is idle: a replay whose
// idle exits are too long finds the other CPUs pending, and keeps more.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

// Idle-exit classes.
const (
	exitFork = iota
	exitRemote
	exitLocal
	nExits
)

var exitNames = [nExits]string{"fork", "wakeup from another CPU", "wakeup on the idle CPU"}

// Fork states: what the CPUs other than the forking one were doing.
const (
	forkBusy = iota
	forkPending
	forkIdle
	nForkStates
)

var forkNames = [nForkStates]string{"busy", "pending", "idle"}

// column is one column's sums.
type column struct {
	exits       [nExits][]int64
	forks, kept [nForkStates]int
}

// pending is a wakee not yet switched in: where and when it was woken,
// and whether that was an idle exit (its CPU idle, nothing else pending).
type pending struct {
	cpu   int32
	at    int64
	class int // -1: not an idle exit
}

// reader is one file's state.
type reader struct {
	col  *column
	curr map[int32]int32 // CPU -> running pid (0 idle); absent: unknown
	wake map[int32]pending
}

func (r *reader) pendingOn(cpu int32) bool {
	for _, p := range r.wake {
		if p.cpu == cpu {
			return true
		}
	}
	return false
}

func (r *reader) event(e *timeline.Event) {
	cpu, ok := scriptutil.CPUOf(e)
	if !ok {
		return
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		next := e.Int32(timeline.NextPID)
		for pid, p := range r.wake {
			if p.cpu != cpu {
				continue
			}
			if pid == next && p.class >= 0 && r.curr[cpu] == 0 {
				r.col.exits[p.class] = append(r.col.exits[p.class], e.Time-p.at)
			}
			// Another wakee's switch-in ends this CPU's idle exit; a
			// wakee still waiting here waits for a busy CPU now.
			p.class = -1
			r.wake[pid] = p
		}
		delete(r.wake, next)
		r.curr[cpu] = next
	case timeline.SchedWaking, timeline.SchedWakeupNew:
		pid := e.Int32(timeline.PID)
		if !e.IsSet(timeline.TargetCPU) {
			return
		}
		target := e.Int32(timeline.TargetCPU)
		if e.Kind == timeline.SchedWakeupNew {
			r.fork(cpu, target)
		} else if _, ok := r.wake[pid]; ok {
			return // a second waking before its switch-in
		}
		class := -1
		if run, known := r.curr[target]; known && run == 0 && !r.pendingOn(target) {
			switch {
			case e.Kind == timeline.SchedWakeupNew:
				class = exitFork
			case cpu == target:
				class = exitLocal
			default:
				class = exitRemote
			}
		}
		r.wake[pid] = pending{target, e.Time, class}
	case timeline.SchedMigrateTask:
		pid := e.Int32(timeline.PID)
		if p, ok := r.wake[pid]; ok {
			dest := e.Int32(timeline.DestCPU)
			p.cpu = dest
			if run, known := r.curr[dest]; !known || run != 0 || r.pendingOn(dest) {
				p.class = -1
			}
			r.wake[pid] = p
		}
	}
}

// fork tallies a child forked on cpu and placed on target, by the other
// CPUs' state. A CPU the trace has not shown yet counts as busy.
func (r *reader) fork(cpu, target int32) {
	state := forkBusy
	for c, run := range r.curr {
		if c == cpu || run != 0 {
			continue
		}
		if r.pendingOn(c) {
			state = max(state, forkPending)
		} else {
			state = forkIdle
		}
	}
	r.col.forks[state]++
	if target == cpu {
		r.col.kept[state]++
	}
}

func (c *column) read(path string) error {
	r := &reader{col: c, curr: map[int32]int32{}, wake: map[int32]pending{}}
	return scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		r.event(e)
		return nil
	})
}

// quantile is sorted xs's q-quantile (nearest rank below), 0 for none.
func quantile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[int(q*float64(len(xs)-1))]
}

func report(w io.Writer, cols []*column) {
	fmt.Fprintf(w, "idle exits (µs): n, p25, p50, p75, p90 per column\n")
	for k := range nExits {
		fmt.Fprintf(w, "  %-24s", exitNames[k])
		for _, c := range cols {
			xs := slices.Clone(c.exits[k])
			slices.Sort(xs)
			fmt.Fprintf(w, " | %5d %5.0f %5.0f %5.0f %6.0f", len(xs), float64(quantile(xs, .25))/1e3, float64(quantile(xs, .5))/1e3, float64(quantile(xs, .75))/1e3, float64(quantile(xs, .9))/1e3)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "forks by the other CPUs' state: forks, of them kept on the forking CPU\n")
	for k := range nForkStates {
		fmt.Fprintf(w, "  %-24s", forkNames[k])
		for _, c := range cols {
			fmt.Fprintf(w, " | %6d %6d", c.forks[k], c.kept[k])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %-24s", "all (kept %)")
	for _, c := range cols {
		n, k := 0, 0
		for s := range nForkStates {
			n += c.forks[s]
			k += c.kept[s]
		}
		pct := 0.0
		if n > 0 {
			pct = 100 * float64(k) / float64(n)
		}
		fmt.Fprintf(w, " | %6d %5.1f%%", n, pct)
	}
	fmt.Fprintln(w)
}

func main() {
	args := scriptutil.ParseArgs("usage: forkidle FILE... [vs FILE...]", false)
	cols, err := scriptutil.Columns(args, func() *column { return &column{} }, (*column).read)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forkidle:", err)
		os.Exit(1)
	}
	report(os.Stdout, cols)
}
