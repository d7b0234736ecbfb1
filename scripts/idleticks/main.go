// Command idleticks measures, in a trace recorded with the timer events
// beside the sched ones, whether a CPU's tick goes on while it idles: for
// each idle period (a switch to the idle task until the switch out of
// it), the ticks that came in it and whether the tick stopped. The model
// stops an idle CPU's tick as it goes idle unless `--set idle_tick=N`
// keeps it for N of its own ticks (FIDELITY.md round 99); the 6.1 stable
// series' idle loop without a cpuidle driver keeps it for the first idle
// iteration (f4c31b07b136, 6.1.170) and pending RCU callbacks keep it on.
//
//	perf record -a -e sched:sched_switch -e timer:tick_stop \
//	    -e timer:hrtimer_expire_entry -- hackbench -g 2 -l 15
//	go run ./scripts/idleticks [-tickfn ADDR] perf.data...
//
// A tick is an hrtimer_expire_entry whose function is tick_sched_timer:
// its address comes from -tickfn or from info/kallsyms-timers.txt beside
// the trace (fixtures/kernels/recipe/run-idle-tick.sh writes it).
package main

import (
	"fmt"
	"io"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

func main() {
	scriptutil.TickMain("idleticks", func(w io.Writer, path, tickfn string) error {
		c, err := measure(path, tickfn)
		if err == nil {
			c.print(w)
		}
		return err
	})
}

// tickNS: HZ 250, the guests' and this machine's kernels.
const tickNS = scriptutil.TickNS

// counts is what measure finds in one trace.
type counts struct {
	path string
	// periods: idle periods seen whole; idleNS their length; ticks the
	// ticks in them; stopped: periods with a tick_stop.
	periods, ticks, stopped int
	idleNS                  int64
	// Periods longer than one tick (4.5 ms, a late tick's slack): first,
	// those with a tick in their first 4.5 ms (the tick went on as the CPU
	// went idle).
	long, first int
	// Periods longer than two ticks (8.5 ms) whose first tick came in
	// their first 4.5 ms: stopAfterFirst, the tick stopped after it (a
	// tick_stop after it and before any second expiry); tickedOn, a second
	// tick came before any tick_stop.
	long2, stopAfterFirst, tickedOn int
}

func (c *counts) print(w io.Writer) {
	fmt.Fprintf(w, "trace: %s\n", c.path)
	fmt.Fprintf(w, "  idle periods %d, %.1f ms idle; ticks in them %d (a tick every 4 ms would be %d); periods with a tick_stop %d\n",
		c.periods, float64(c.idleNS)/1e6, c.ticks, c.idleNS/tickNS, c.stopped)
	fmt.Fprintf(w, "  longer than 4.5 ms: %d, with a tick in their first 4.5 ms %d\n", c.long, c.first)
	fmt.Fprintf(w, "  longer than 8.5 ms with that first tick: %d; the tick stopped after it %d, ticked on %d\n", c.long2, c.stopAfterFirst, c.tickedOn)
}

// period is one idle period of one CPU in progress.
type period struct {
	start  int64
	ticks  []int64
	stopAt int64 // the first tick_stop's time, 0 if none
}

func measure(path, tickfn string) (*counts, error) {
	fn, err := scriptutil.TickAddress(path, tickfn)
	if err != nil {
		return nil, err
	}
	c := &counts{path: path}
	open := map[int32]*period{}
	seenTimer := false
	err = scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		cpu, ok := scriptutil.CPUOf(e)
		if !ok {
			return nil
		}
		switch {
		case e.Kind == timeline.SchedSwitch:
			if e.Int32(timeline.NextPID) == 0 {
				open[cpu] = &period{start: e.Time}
			} else if e.Int32(timeline.PrevPID) == 0 {
				if p := open[cpu]; p != nil {
					c.add(p, e.Time)
					delete(open, cpu)
				}
			}
		case e.Name == "timer:hrtimer_expire_entry":
			seenTimer = true
			if f, ok := e.IntField("function"); ok && uint64(f) == fn {
				if p := open[cpu]; p != nil {
					p.ticks = append(p.ticks, e.Time)
				}
			}
		case e.Name == "timer:tick_stop":
			if p := open[cpu]; p != nil && p.stopAt == 0 {
				p.stopAt = e.Time
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seenTimer {
		return nil, fmt.Errorf("%s has no timer:hrtimer_expire_entry events: record with -e timer:hrtimer_expire_entry -e timer:tick_stop", path)
	}
	return c, nil
}

// add counts a finished idle period.
func (c *counts) add(p *period, end int64) {
	d := end - p.start
	c.periods++
	c.idleNS += d
	c.ticks += len(p.ticks)
	if p.stopAt != 0 {
		c.stopped++
	}
	const slack = tickNS + tickNS/8 // 4.5 ms
	if d <= slack {
		return
	}
	c.long++
	if len(p.ticks) == 0 || p.ticks[0]-p.start > slack {
		return
	}
	c.first++
	if d <= 2*tickNS+tickNS/8 {
		return
	}
	c.long2++
	// After a tick_stop the tick's hrtimer fires only for the next timer
	// (the stopped tick's one-shot wakeup), so a second expiry counts as
	// the tick going on only before the stop.
	switch {
	case p.stopAt != 0 && p.stopAt > p.ticks[0] && (len(p.ticks) == 1 || p.stopAt < p.ticks[1]):
		c.stopAfterFirst++
	case len(p.ticks) > 1 && (p.stopAt == 0 || p.ticks[1] < p.stopAt):
		c.tickedOn++
	}
}
