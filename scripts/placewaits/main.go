// Command placewaits sets the wakeups of sleeping tasks against how CFS
// placed them: credited (place_entity raised the sleeper's vruntime to
// min_vruntime less half the latency period) or at their own vruntime,
// and by where they waited, on the CPU whose task woke them or on another
// busy one. For the latter it also counts the woken tasks already waiting
// on the target, placed at or below the wakee and above it, and how many
// of each ran first. It reads any timelines, a trace and a replay's output
// alike, so a replay's can be set against the kernel's (FIDELITY.md
// round 94):
//
//	replay whatif -i fixtures/kernels/guest-N-2s1c1t-2numa/hackbench.perf.data --seed 0 -o /tmp/n0.arrow
//	go run ./scripts/placewaits -comm hackbench fixtures/kernels/guest-N-2s1c1t-2numa/hackbench.perf.data vs /tmp/n0.arrow
//
// Files before "vs" add up in the first column, those after it in the
// second.
//
// A trace shows the placement through the vruntimes sched_stat_runtime
// records: the wakee's first update on its CPU after its switch-in, less
// that update's runtime, is the vruntime it was placed at (a nice-0 task's
// vruntime runs at its runtime's pace; the task ran nowhere since), and
// its last update before it slept, on the same CPU, the vruntime it slept
// with (an update belongs to the CPU its task last switched in on,
// whichever CPU wrote it). Above that by more than a microsecond, it was
// credited; otherwise it kept its own. A wakee whose CPU changed while it
// slept (its vruntime renormalized) or whose updates the trace lacks is
// left out of the split (counted as unknown); one that first ran on
// another CPU than it was placed on (a balancer moved it) is left out. Its
// CPU is the waking's target_cpu, or the sched_migrate_task of it that is
// the waking CPU's next record (select_task_rq's move, the rule
// analysis/wakechoice.go reads choices by); its wait runs from the waking
// to its switch-in there. That CPU is busy (the split's "another busy
// CPU") when a task other than idle ran there at the waking; wakeups onto
// an idle CPU are not counted. Only a task's first waking while asleep
// counts; a lost record forgets every task's state. The split is CFS's
// (kernels up to 6.5): EEVDF places a wakee by its lag, which the records
// do not show.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

// creditNS: a placement more than this above the sleep's vruntime is a
// credit (the kernel's arithmetic is exact; the margin absorbs a
// format's microsecond timestamps).
const creditNS = 1000

// ev is the part of an event the measure reads.
type ev struct {
	t      int64
	cpu    int32
	kind   timeline.Kind
	pid    int32 // waking, migrate, stat: the task; switch: next
	prev   int32 // switch: prev
	asleep bool  // switch: prev left not runnable (its state not R)
	target int32 // waking: target_cpu; migrate: dest_cpu
	rt, vr int64 // stat: runtime, vruntime
	match  bool  // waking: the wakee's comm has the -comm prefix
}

// Placement classes.
const (
	unknown = iota
	credited
	own
	numClasses
)

var classNames = [numClasses]string{"placement unknown", "credited", "own vruntime"}

// wakeup is one waking of a sleeping task.
type wakeup struct {
	i         int   // the waking's index in the events
	pid       int32 // the wakee
	on        int32 // its CPU (placement)
	local     bool  // on the waking's CPU
	busy      bool  // a task ran on its CPU at the waking
	match     bool
	sleptVR   int64 // the wakee's last vruntime on on before the sleep
	hasVR     bool
	in        int64 // switch-in time there, when ran
	ran       bool
	placed    int64 // vruntime placed at, when hasPlaced
	hasPlaced bool
	class     int
	moved     bool // ran first on another CPU (a balancer moved it)
}

// column is one column's sums.
type column struct {
	waits [numClasses][2][]int64 // per class, per local (1) or remote (0)
	// Remote wakeups onto a busy CPU with their placement known: the
	// woken tasks waiting there at the waking, placed at or below (0)
	// and above (1) the wakee, and of those, the ones that ran first.
	remote          int64
	ahead, ranFirst [2]int64
	aheadEach       [2][]int64 // per wakeup
}

func (c *column) add(o *column) {
	for k := range c.waits {
		for l := range c.waits[k] {
			c.waits[k][l] = append(c.waits[k][l], o.waits[k][l]...)
		}
	}
	c.remote += o.remote
	for k := range c.ahead {
		c.ahead[k] += o.ahead[k]
		c.ranFirst[k] += o.ranFirst[k]
		c.aheadEach[k] = append(c.aheadEach[k], o.aheadEach[k]...)
	}
}

// timelineOf reads the events the measure needs, in time order; a record
// without a CPU the model can hold is skipped, not allocated for.
func timelineOf(path, comm string) ([]ev, error) {
	var out []ev
	err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		if e.Kind == timeline.Lost {
			out = append(out, ev{t: e.Time, cpu: -1, kind: timeline.Lost})
			return nil
		}
		cpu, ok := scriptutil.CPUOf(e)
		if !ok {
			return nil
		}
		x := ev{t: e.Time, cpu: cpu, kind: e.Kind}
		switch e.Kind {
		case timeline.SchedWaking:
			x.pid, x.target = e.Int32(timeline.PID), e.Int32(timeline.TargetCPU)
			x.match = strings.HasPrefix(e.Str(timeline.Comm), comm)
		case timeline.SchedMigrateTask:
			x.pid, x.target = e.Int32(timeline.PID), e.Int32(timeline.DestCPU)
		case timeline.SchedSwitch:
			x.pid, x.prev = e.Int32(timeline.NextPID), e.Int32(timeline.PrevPID)
			st := e.Str(timeline.PrevState)
			x.asleep = st != "" && st[0] != 'R'
		case timeline.SchedStatRuntime:
			if !e.IsSet(timeline.Vruntime) {
				return nil
			}
			x.pid, x.rt, x.vr = e.Int32(timeline.PID), e.Int(timeline.Runtime), e.Int(timeline.Vruntime)
		}
		out = append(out, x)
		return nil
	})
	return out, err
}

type vrAt struct {
	cpu int32
	vr  int64
}

// wakeups finds the wakeups of sleeping tasks and their placements.
func wakeups(evs []ev) []*wakeup {
	_, next := scriptutil.Neighbours(len(evs), func(i int) int32 { return evs[i].cpu })
	moveOf := func(j int) (int32, int32, bool) {
		return evs[j].pid, evs[j].target, evs[j].kind == timeline.SchedMigrateTask
	}
	asleep := map[int32]bool{}
	lastVR := map[int32]vrAt{}
	running := map[int32]int32{}
	// ranOn: the CPU each task last switched in on. An update's
	// vruntime is of the task's own queue, whichever CPU wrote the
	// record (another CPU's wakeup updates the running task it enqueues
	// beside, on its own CPU).
	ranOn := map[int32]int32{}
	open := map[int32]*wakeup{} // per task: its wakeup not yet run, or run and awaiting its first update
	var out []*wakeup
	for i, e := range evs {
		switch e.kind {
		case timeline.Lost:
			clear(asleep)
			clear(lastVR)
			clear(open)
			clear(ranOn)
		case timeline.SchedWaking:
			if !asleep[e.pid] || e.pid == 0 {
				break
			}
			asleep[e.pid] = false
			on := scriptutil.Placement(i, next, e.pid, e.target, moveOf)
			w := &wakeup{i: i, pid: e.pid, on: on, local: on == e.cpu, busy: running[on] != 0, match: e.match}
			if v, ok := lastVR[e.pid]; ok && v.cpu == on {
				w.sleptVR, w.hasVR = v.vr, true
			}
			open[e.pid] = w
			out = append(out, w)
		case timeline.SchedSwitch:
			if e.prev != 0 && e.asleep {
				asleep[e.prev] = true
			}
			running[e.cpu] = e.pid
			ranOn[e.pid] = e.cpu
			if w := open[e.pid]; w != nil && !w.ran {
				if e.cpu != w.on {
					w.moved = true
					delete(open, e.pid)
					break
				}
				w.in, w.ran = e.t, true
			}
		case timeline.SchedStatRuntime:
			cpu, ok := ranOn[e.pid]
			if !ok {
				cpu = e.cpu
			}
			if w := open[e.pid]; w != nil && w.ran && cpu == w.on {
				w.placed, w.hasPlaced = e.vr-e.rt, true
				switch {
				case !w.hasVR:
				case w.placed > w.sleptVR+creditNS:
					w.class = credited
				default:
					w.class = own
				}
				delete(open, e.pid)
			}
			lastVR[e.pid] = vrAt{cpu, e.vr}
		}
	}
	return out
}

// measure is one timeline's column.
func measure(evs []ev) *column {
	ws := wakeups(evs)
	c := &column{}
	byIndex := map[int]*wakeup{}
	for _, w := range ws {
		byIndex[w.i] = w
		if w.moved || !w.ran || !w.match {
			continue
		}
		cls := w.class
		if !w.local && !w.busy {
			continue // onto an idle CPU: neither split
		}
		l := 0
		if w.local {
			l = 1
		}
		c.waits[cls][l] = append(c.waits[cls][l], w.in-evs[w.i].t)
	}
	// The backlog: per CPU the woken tasks not yet run there; a watched
	// remote wakee notes how many of those placed below or above it run
	// before it, and adds its counts when it runs (a lost record drops
	// the watches open then).
	type watch struct {
		w              *wakeup
		below, above   map[int32]bool // not yet run
		nBelow, nAbove int            // run
		ran            [2]int64
	}
	waiting := map[int32]map[int32]*wakeup{} // per CPU, per task
	var watching []*watch
	for i, e := range evs {
		switch e.kind {
		case timeline.Lost:
			clear(waiting)
			watching = watching[:0]
		case timeline.SchedWaking:
			w := byIndex[i]
			if w == nil || w.moved || !w.ran {
				break
			}
			if waiting[w.on] == nil {
				waiting[w.on] = map[int32]*wakeup{}
			}
			if w.match && !w.local && w.busy && w.class != unknown {
				x := &watch{w: w, below: map[int32]bool{}, above: map[int32]bool{}}
				for pid, o := range waiting[w.on] {
					switch {
					case !o.hasPlaced:
					case o.placed <= w.placed:
						// An equal key woken earlier is ahead in the
						// tree (ties go to the right).
						x.below[pid] = true
					default:
						x.above[pid] = true
					}
				}
				watching = append(watching, x)
			}
			waiting[w.on][w.pid] = w
		case timeline.SchedSwitch:
			if _, ok := waiting[e.cpu][e.pid]; !ok {
				break
			}
			delete(waiting[e.cpu], e.pid)
			keep := watching[:0]
			for _, x := range watching {
				if x.w.on != e.cpu {
					keep = append(keep, x)
					continue
				}
				if x.w.pid == e.pid {
					c.remote++
					nb, na := int64(len(x.below)+x.nBelow), int64(len(x.above)+x.nAbove)
					c.ahead[0] += nb
					c.ahead[1] += na
					c.aheadEach[0] = append(c.aheadEach[0], nb)
					c.aheadEach[1] = append(c.aheadEach[1], na)
					c.ranFirst[0] += x.ran[0]
					c.ranFirst[1] += x.ran[1]
					continue
				}
				// Each waiting task counts once: its first switch-in.
				if x.below[e.pid] {
					x.ran[0]++
					delete(x.below, e.pid)
					x.nBelow++
				} else if x.above[e.pid] {
					x.ran[1]++
					delete(x.above, e.pid)
					x.nAbove++
				}
				keep = append(keep, x)
			}
			watching = keep
		}
	}
	return c
}

// middle is the median of v (the upper one of an even count).
func middle(v []int64) int64 {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// median is v's median in ms.
func median(v []int64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(middle(v))/1e6)
}

func print(w io.Writer, cols []*column) {
	row := func(name string, f func(c *column) string) {
		fmt.Fprintf(w, "%-58s", name)
		for _, c := range cols {
			fmt.Fprintf(w, " %16s", f(c))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "wakeups of sleeping tasks: count, median wait (ms)")
	for k := credited; k < numClasses; k++ {
		for l, where := range [2]string{"on another busy CPU", "on the waking CPU"} {
			row(fmt.Sprintf("  %s, %s", classNames[k], where), func(c *column) string {
				return fmt.Sprintf("%d: %s", len(c.waits[k][l]), median(c.waits[k][l]))
			})
		}
	}
	row("  "+classNames[unknown], func(c *column) string {
		return fmt.Sprint(len(c.waits[unknown][0]) + len(c.waits[unknown][1]))
	})
	row("wakeups onto another busy CPU, placement known", func(c *column) string { return fmt.Sprint(c.remote) })
	fmt.Fprintln(w, "  woken tasks waiting there: per wakeup median (mean), share run first")
	for k, name := range [2]string{"at or below", "above"} {
		row(fmt.Sprintf("    placed %s it", name), func(c *column) string {
			if c.remote == 0 {
				return "-"
			}
			share := "-"
			if c.ahead[k] > 0 {
				share = fmt.Sprintf("%.0f%%", 100*float64(c.ranFirst[k])/float64(c.ahead[k]))
			}
			return fmt.Sprintf("%d (%.1f), %s", middle(c.aheadEach[k]), float64(c.ahead[k])/float64(c.remote), share)
		})
	}
}

func main() {
	comm := flag.String("comm", "", "count only wakees whose comm starts with this (their waking's comm field)")
	args := scriptutil.ParseArgs("usage: placewaits [-comm PREFIX] FILE... [vs FILE...]", false)
	cols, err := scriptutil.Columns(args, func() *column { return &column{} }, func(c *column, p string) error {
		evs, err := timelineOf(p, *comm)
		if err != nil {
			return err
		}
		c.add(measure(evs))
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "placewaits:", err)
		os.Exit(1)
	}
	print(os.Stdout, cols)
}
