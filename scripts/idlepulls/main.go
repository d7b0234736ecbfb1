// Command idlepulls measures, in a kernel trace recorded with the timer
// and softirq events beside the sched ones, how an idle CPU's own load
// balancing goes: the SCHED softirq (irq:softirq_entry, vec 7) its tick
// raises while it runs its idle task with nothing queued (the 6.1 stable
// series' idle loop keeps the tick for the first idle iteration without
// a cpuidle driver: FIDELITY.md round 99), whether another CPU then had a
// task waiting behind a running one (a chance), and whether the pass
// pulled a task onto the idle CPU. The nohz idle balancer's softirqs (an
// idle CPU's SCHED softirq with no tick of its own before it: the kick's
// IPI) are counted apart. The replay's side of the same counts is
// `replay whatif --validate`'s idle_tick row under `--set idle_tick=N`
// (FIDELITY.md rounds 100 and 101).
//
//	perf sched record -e timer:hrtimer_expire_entry -e irq:softirq_entry -- schbench -m 2 -t 4 -r 3
//	go run ./scripts/idlepulls [-tickfn ADDR] perf.data...
//
// Every task a CPU_IDLE pass moves is written as a sched_migrate_task in
// softirq context beside the idle task; their sum is the kernel's own
// lb_gained for CPU_IDLE in /proc/schedstat, which the recipe saves
// beside the trace (info/schedstat.WORKLOAD.{before,after}.txt): printed
// beside it as a check of the reading. The tick's address comes from
// -tickfn or info/kallsyms-timers.txt, as scripts/idleticks reads it.
package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

func main() {
	scriptutil.TickMain("idlepulls", func(w io.Writer, path, tickfn string) error {
		c, err := measure(path, tickfn)
		if err == nil {
			c.print(w)
		}
		return err
	})
}

// ownTickWindowNS: a SCHED softirq this soon after its CPU's tick was
// raised by that tick (the softirq runs on the tick interrupt's exit).
const ownTickWindowNS = 200000

// softirqSched is the SCHED softirq's vector (SCHED_SOFTIRQ).
const softirqSched = 7

// Kernel trace flags (common_flags) of a softirq context.
const flagSoftIRQ = 0x10

// counts is what measure finds in one trace.
type counts struct {
	path string
	// idleTicks: ticks of a CPU running its idle task with nothing
	// queued; raised: those a SCHED softirq followed before the CPU's
	// next tick or switch (its rq->next_balance was due).
	idleTicks, raised int
	// own: the SCHED softirqs raised by an idle CPU's own tick; kick:
	// those of an idle CPU with no tick before them (the nohz kick).
	own, kick pass
	// gained: tasks moved by CPU_IDLE passes (sched_migrate_task in
	// softirq context beside the idle task, onto another CPU than the
	// one it was on), for the CPU itself or, the idle balancer's, for
	// others.
	gained int
	// schedstat: /proc/schedstat's lb_gained for CPU_IDLE over the
	// recording, summed over CPUs and domains (-1 when not beside it).
	schedstat int
	// midPeriods: idle periods (a switch to the idle task until the
	// switch out of it) of whatif.IdleMidMinNS to IdleMidMaxNS; midTicked: those
	// with an idle tick (nothing queued). The rest took their ticks with
	// a wakeup queued or none: the host ran the idle vCPU only with the
	// wakeup (FIDELITY.md round 101).
	midPeriods, midTicked int
	// byBusy: the idle ticks (nothing queued) of CPUs idle since a switch
	// to idle, and those CPUs' idle time, while fewer than half the CPUs
	// ran a task and while half or more did: an idle vCPU's chance to take
	// its tick at each jiffy under light and heavy host contention
	// (FIDELITY.md round 102; the replay's: --validate's idle
	// tick/jiffy row).
	byBusy whatif.IdleByBusy
}

// pass counts SCHED softirqs of one kind.
type pass struct {
	n, chances, pulled int
}

func (c *counts) print(w io.Writer) {
	fmt.Fprintf(w, "trace: %s\n", c.path)
	fmt.Fprintf(w, "  idle ticks %d, raising the SCHED softirq %d\n", c.idleTicks, c.raised)
	fmt.Fprintf(w, "  idle periods of 4-16 ms %d, with an idle tick %d\n", c.midPeriods, c.midTicked)
	b := &c.byBusy
	few, many := b.PerJiffy(scriptutil.TickNS)
	fmt.Fprintf(w, "  idle ticks per jiffy of idle time: fewer than half the CPUs busy %s (%d in %.0f), half or more %s (%d in %.0f)\n",
		few, b.FewTicks, float64(b.FewNS)/scriptutil.TickNS, many, b.ManyTicks, float64(b.ManyNS)/scriptutil.TickNS)
	fmt.Fprintf(w, "  own-tick passes %d: a task waiting elsewhere %d, pulled onto the idle CPU %d\n", c.own.n, c.own.chances, c.own.pulled)
	fmt.Fprintf(w, "  kicked (nohz) passes %d: a task waiting elsewhere %d, pulled onto the idle CPU %d\n", c.kick.n, c.kick.chances, c.kick.pulled)
	if c.schedstat >= 0 {
		fmt.Fprintf(w, "  tasks moved by CPU_IDLE passes %d (schedstat lb_gained idle %d)\n", c.gained, c.schedstat)
	} else {
		fmt.Fprintf(w, "  tasks moved by CPU_IDLE passes %d (no schedstat beside the trace)\n", c.gained)
	}
}

// rqs follows each CPU's run queue from the sched events: the running
// task and the tasks queued behind it.
type rqs struct {
	curr    map[int32]int32          // CPU -> running pid (0 idle)
	running map[int32]bool           // pids running somewhere
	queued  map[int32]map[int32]bool // CPU -> queued pids
	where   map[int32]int32          // queued pid -> CPU
}

func newRQs() *rqs {
	return &rqs{curr: map[int32]int32{}, running: map[int32]bool{}, queued: map[int32]map[int32]bool{}, where: map[int32]int32{}}
}

func (q *rqs) dequeue(pid int32) {
	if c, ok := q.where[pid]; ok {
		delete(q.queued[c], pid)
		delete(q.where, pid)
	}
}

func (q *rqs) enqueue(pid, c int32) {
	q.dequeue(pid)
	if q.queued[c] == nil {
		q.queued[c] = map[int32]bool{}
	}
	q.queued[c][pid] = true
	q.where[pid] = c
}

// idle: c runs its idle task with nothing queued.
func (q *rqs) idle(c int32) bool { return q.curr[c] == 0 && len(q.queued[c]) == 0 }

// waitingElsewhere: a CPU other than c runs a task with another queued
// behind it (a wakee queued on an idle CPU is not: that CPU is about to
// run it).
func (q *rqs) waitingElsewhere(c int32) bool {
	for o, m := range q.queued {
		if o != c && len(m) > 0 && q.curr[o] != 0 {
			return true
		}
	}
	return false
}

// event feeds one sched event: a wakeup queues its task where it names
// (sched_waking's CPU is the task's previous one, a placement elsewhere
// follows as its migration), a switch takes the next task off its queue
// and puts a preempted one back, a migration moves a queued task.
func (q *rqs) event(e *timeline.Event, c int32) {
	switch e.Kind {
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		pid := e.Int32(timeline.PID)
		if q.running[pid] {
			return // woken before it switched out: no enqueue
		}
		if old, ok := q.where[pid]; !ok || old != e.Int32(timeline.TargetCPU) {
			q.enqueue(pid, e.Int32(timeline.TargetCPU))
		}
	case timeline.SchedMigrateTask:
		pid := e.Int32(timeline.PID)
		if old, ok := q.where[pid]; ok && old == e.Int32(timeline.OrigCPU) {
			q.enqueue(pid, e.Int32(timeline.DestCPU))
		}
	case timeline.SchedSwitch:
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		delete(q.running, q.curr[c])
		if prev != 0 {
			delete(q.running, prev)
			if strings.HasPrefix(e.Str(timeline.PrevState), "R") {
				q.enqueue(prev, c)
			} else {
				q.dequeue(prev)
			}
		}
		if next != 0 {
			q.dequeue(next)
			q.running[next] = true
		}
		q.curr[c] = next
	}
}

// open is a SCHED softirq on an idle CPU, until the CPU's next switch.
type open struct {
	at     int64
	own    bool
	chance bool
	pulled bool
}

func measure(path, tickfn string) (*counts, error) {
	fn, err := scriptutil.TickAddress(path, tickfn)
	if err != nil {
		return nil, err
	}
	c := &counts{path: path, schedstat: -1}
	q := newRQs()
	lastTick := map[int32]int64{}
	pending := map[int32]bool{} // an idle tick not yet followed by SCHED
	// idleFrom, ticked: each CPU's idle period in progress (its switch to
	// idle; -1 none) and whether it had an idle tick.
	idleFrom, ticked := map[int32]int64{}, map[int32]bool{}
	passes := map[int32]*open{}
	// waking: the task whose sched_waking was its CPU's last record; a
	// migration of it next is the wakeup's placement, not a balance's.
	waking := map[int32]int32{}
	var all []*open
	seenTimer, seenSoftirq := false, false
	split := &c.byBusy
	var last int64
	err = scriptutil.ReadEvents(path, func(m *timeline.Meta) error {
		if m.Topology != nil {
			split.NCPU = m.Topology.NrCPUs
		}
		return nil
	}, func(e *timeline.Event) error {
		cpu, ok := scriptutil.CPUOf(e)
		if !ok {
			return nil
		}
		last = e.Time
		switch {
		case e.Kind == timeline.SchedMigrateTask:
			dest := e.Int32(timeline.DestCPU)
			placement := waking[cpu] == e.Int32(timeline.PID)
			if !placement && e.IsSet(timeline.CommonFlags) && e.Int(timeline.CommonFlags)&flagSoftIRQ != 0 && e.Int32(timeline.CommonPID) == 0 && dest != e.Int32(timeline.OrigCPU) {
				c.gained++
			}
			if p := passes[cpu]; p != nil && dest == cpu && e.Time-p.at < 1000000 {
				if _, queued := q.where[e.Int32(timeline.PID)]; queued {
					p.pulled = true
				}
			}
		case e.Kind == timeline.SchedSwitch:
			delete(passes, cpu)
			delete(pending, cpu)
			if from, ok := idleFrom[cpu]; ok && e.Int32(timeline.PrevPID) == 0 {
				if d := e.Time - from; d >= whatif.IdleMidMinNS && d < whatif.IdleMidMaxNS {
					c.midPeriods++
					if ticked[cpu] {
						c.midTicked++
					}
				}
			}
			delete(idleFrom, cpu)
			if e.Int32(timeline.NextPID) == 0 {
				idleFrom[cpu], ticked[cpu] = e.Time, false
			}
			split.Switched(cpu, e.Time, e.Int32(timeline.NextPID) == 0)
		case e.Name == "timer:hrtimer_expire_entry":
			seenTimer = true
			if f, ok := e.IntField("function"); ok && uint64(f) == fn {
				lastTick[cpu] = e.Time
				pending[cpu] = q.idle(cpu)
				if pending[cpu] {
					c.idleTicks++
					ticked[cpu] = true
					split.Tick(cpu)
				}
			}
		case e.Name == "irq:softirq_entry":
			seenSoftirq = true
			if v, _ := e.IntField("vec"); v != softirqSched || !q.idle(cpu) {
				break
			}
			if pending[cpu] {
				c.raised++
				delete(pending, cpu)
			}
			t, ticked := lastTick[cpu]
			p := &open{at: e.Time, own: ticked && e.Time-t < ownTickWindowNS, chance: q.waitingElsewhere(cpu)}
			passes[cpu] = p
			all = append(all, p)
		}
		waking[cpu] = -1
		if e.Kind == timeline.SchedWaking {
			waking[cpu] = e.Int32(timeline.PID)
		}
		q.event(e, cpu)
		return nil
	})
	if err != nil {
		return nil, err
	}
	split.Advance(last) // the idle stretches still open
	if !seenTimer || !seenSoftirq {
		return nil, fmt.Errorf("%s has no timer:hrtimer_expire_entry or irq:softirq_entry events: record with -e timer:hrtimer_expire_entry -e irq:softirq_entry", path)
	}
	for _, p := range all {
		k := &c.kick
		if p.own {
			k = &c.own
		}
		k.n++
		if p.chance {
			k.chances++
		}
		if p.pulled {
			k.pulled++
		}
	}
	if g, ok, err := schedstatGained(path); err != nil {
		return nil, err
	} else if ok {
		c.schedstat = g
	}
	return c, nil
}

// schedstatGained sums lb_gained for CPU_IDLE over every CPU and domain
// of the recipe's /proc/schedstat snapshots around the trace's run
// (scriptutil.SchedstatBeside); ok false when they are not beside it.
func schedstatGained(path string) (gained int, ok bool, err error) {
	d, _, err := scriptutil.SchedstatBeside(path)
	if err != nil || d == nil {
		return 0, false, err
	}
	for _, c := range d.CPUs {
		for _, sd := range c.Domains {
			gained += int(sd.LB[0].Gained)
		}
	}
	return gained, true, nil
}
