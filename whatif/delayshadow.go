package whatif

import (
	"slices"

	"github.com/schedreplay/replay/timeline"
)

// DelayedDequeues is what a kernel trace's sleep statistics say about the
// blocks an EEVDF kernel with DELAY_DEQUEUE (v6.12 on) kept on their run
// queue: a task that blocks while not eligible stays queued, its weight
// in the CPU's load and its task in nr_running and h_nr_queued, until a
// pick meets it (its final dequeue) or a waking requeues it
// (ttwu_runnable). No trace records the flag; the schedule statistics
// date it:
//   - a sched_stat_sleep (or _blocked, _iowait), written at the wakeup,
//     measures the sleep from the dequeue that ended the task's time on
//     the queue. Dated from the block, the block dequeued it. Dated from
//     a later switch on its CPU (the pick that met it: its rq clock is
//     read a few µs before the switch is written) with no switch to idle
//     between (a pick that finds nothing runnable dequeues every delayed
//     task), the final dequeue came there. Dated later from no switch, it
//     is not taken: the wakeup's rq clock was behind its record (a batch
//     of wakeups from the wake list's IPI dates sleeps up to 0.2 ms late),
//     which a 6.1 guest, with no delayed dequeue, shows too;
//   - a task switched in again with no sleep statistics since its block,
//     woken meanwhile with no switch to idle on its CPU before, its wait
//     (sched_stat_wait) dated from the block (put_prev_entity starts it
//     for a task left queued), was never dequeued: the waking requeued
//     it.
//
// A block straight to idle is never delayed (nothing else queued, the
// task was eligible). On a 6.1 recording, whose kernel has no delayed
// dequeue, the same rules flag 1.2 % of the blocks, the false alarms; on
// a 6.12 one of the same workload, 29 % (TestDelayedDequeuesFalseAlarms).
// The PELT shadow
// (wakeshadow.go) keeps those tasks queued as the kernel did (FIDELITY.md
// round 150); without schedstats (a replay's output, a trace recorded
// without them) there are none.
type DelayedDequeues struct {
	// until: per delayed block (task, the block's switch time), when its
	// final dequeue came; untilRequeue where the waking requeued it.
	until map[blockAt]int64
	// Blocks: the blocks whose fate the statistics date (dequeued at the
	// block or later); Delayed, Requeued: of those, the ones kept queued
	// until a later dequeue, and those the waking requeued.
	Blocks, Delayed, Requeued int
}

// DelayStats counts blocks and their delayed dequeues, a replay's (Stats)
// as DelayedDequeues counts a trace's: Blocks, of fair tasks with another
// task on their queue; Delayed, those kept queued; Requeued, those a
// waking found still queued.
type DelayStats struct {
	Blocks   int64 `json:"blocks"`
	Delayed  int64 `json:"delayed"`
	Requeued int64 `json:"requeued"`
}

// blockAt names a block: the task and its switch-out's time.
type blockAt struct {
	pid int32
	at  int64
}

// untilRequeue: the block's task stayed queued until a waking requeued it.
const untilRequeue = -1

const (
	// delayedAfterNS: a sleep measured from this long after its block's
	// switch began at a later dequeue, not at the block (whose dequeue
	// the rq clock stamps 1–8 µs before the switch is written on the
	// guests; FIDELITY.md round 130).
	delayedAfterNS = 5000
	// requeueWaitNS: how long after the block the wait that a switch-in's
	// sched_stat_wait measures may begin and still be the wait of a task
	// left queued at that block (put_prev_entity starts it there).
	requeueWaitNS = 50000
)

// delayWatch is DelayedDequeues' scan: each task's open block, and each
// CPU's blocks still watching its switches.
type delayWatch struct {
	d    *DelayedDequeues
	open map[int32]*openDelay
	stat bool // the trace has sleep statistics
	// watching: per CPU, the open blocks there whose CPU has not idled
	// since (picks after an idle switch dequeue nothing they kept).
	watching map[int32][]*openDelay
}

// openDelay is a block not yet settled by its task's sleep statistics or
// switch-in.
type openDelay struct {
	cpu      int32
	block    int64
	waitFrom int64 // -1: no sched_stat_wait since the block
	wokenAt  int64 // the first waking since the block, 0 none
	// picks: the CPU's switches since the block, up to its first switch
	// to idle (idledAt, 0 none yet) or maxPicks of them: the picks a
	// final dequeue may date from, bounded so that memory goes with the
	// blocked tasks, not the trace's length.
	picks   []int64
	idledAt int64
	done    bool // settled: no longer watching
}

const (
	// pickBeforeNS, pickAfterNS: how far a final dequeue's date may fall
	// before and after the switch its pick made.
	pickBeforeNS = 15000
	pickAfterNS  = 5000
	// maxPicks: a delayed task becomes eligible within a few requests of
	// the others on its CPU and is dequeued at the next pick that meets
	// it; so many switches after its block, a later date is not taken.
	maxPicks = 256
)

// atPick says whether b's CPU switched within the window of a pick that
// dequeued at `from`.
func (b *openDelay) atPick(from int64) bool {
	i, _ := slices.BinarySearch(b.picks, from-pickAfterNS)
	return i < len(b.picks) && b.picks[i] <= from+pickBeforeNS
}

// idledBefore says whether b's CPU switched to idle after the block and
// before `to`: that pick dequeued every delayed task there.
func (b *openDelay) idledBefore(to int64) bool { return b.idledAt > 0 && b.idledAt < to }

// switched records a switch on c at `at` in the blocks watching c.
func (w *delayWatch) switched(c int32, at int64, idle bool) {
	ws := w.watching[c]
	if len(ws) == 0 {
		return
	}
	keep := ws[:0]
	for _, b := range ws {
		if b.done || at < b.block {
			if !b.done {
				keep = append(keep, b)
			}
			continue
		}
		b.picks = append(b.picks, at)
		if idle {
			b.idledAt = at
		}
		if !idle && len(b.picks) < maxPicks {
			keep = append(keep, b)
		}
	}
	clear(ws[len(keep):])
	w.watching[c] = keep
}

// settle ends b's watch.
func (w *delayWatch) settle(pid int32, b *openDelay) {
	b.done = true
	delete(w.open, pid)
}

// ReadDelayedDequeues scans r (a kernel trace, read once before the
// shadow reads it again) for the blocks DELAY_DEQUEUE kept queued. It
// returns nil when the trace has no sleep statistics, or names a kernel
// whose policy has no delayed dequeue (before v6.12: what such a trace's
// statistics would show is chance, not the flag).
func ReadDelayedDequeues(r timeline.EventReader) (*DelayedDequeues, error) {
	if m := r.Meta(); m != nil && m.Source.OSRelease != "" {
		if pol, err := PolicyForKernel(m.Source.OSRelease); err == nil && !pol.Knobs().DelayDequeue {
			return nil, nil
		}
	}
	return scanDelayedDequeues(r)
}

// scanDelayedDequeues is ReadDelayedDequeues for any kernel (a test reads
// a 6.1 trace's statistics with it for the rules' false alarms).
func scanDelayedDequeues(r timeline.EventReader) (*DelayedDequeues, error) {
	w := &delayWatch{d: &DelayedDequeues{until: map[blockAt]int64{}}, open: map[int32]*openDelay{}, watching: map[int32][]*openDelay{}}
	for r.Next() {
		w.event(r.Event())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if !w.stat {
		return nil, nil
	}
	return w.d, nil
}

func (w *delayWatch) event(e *timeline.Event) {
	switch e.Kind {
	case timeline.Lost:
		// What the lost records held is not known.
		clear(w.open)
		clear(w.watching)
	case timeline.SchedSwitch:
		c, next := e.Int32(timeline.CPU), e.Int32(timeline.NextPID)
		cpuOK := e.IsSet(timeline.CPU) && timeline.CheckCPUs(e) == nil
		if cpuOK {
			w.switched(c, e.Time, next == 0)
		}
		if b := w.open[next]; b != nil {
			// Switched in with no sleep statistics since the block.
			if b.wokenAt > 0 && b.waitFrom >= 0 && b.waitFrom <= b.block+requeueWaitNS && !b.idledBefore(b.wokenAt) {
				w.d.until[blockAt{next, b.block}] = untilRequeue
				w.d.Blocks++
				w.d.Requeued++
			}
			w.settle(next, b)
		}
		prev := e.Int32(timeline.PrevPID)
		if st := e.Str(timeline.PrevState); cpuOK && prev > 0 && next > 0 && blockedState(st) {
			// (A block straight to idle left no other task queued: the
			// task was eligible, dequeued.)
			if b := w.open[prev]; b != nil {
				w.settle(prev, b)
			}
			b := &openDelay{cpu: c, block: e.Time, waitFrom: -1}
			w.open[prev] = b
			w.watching[c] = append(w.watching[c], b)
		}
	case timeline.SchedStatSleep, timeline.SchedStatBlocked, timeline.SchedStatIOWait:
		w.stat = true
		pid := e.Int32(timeline.PID)
		b := w.open[pid]
		if b == nil || !e.IsSet(timeline.Delay) {
			return
		}
		w.settle(pid, b)
		w.d.Blocks++
		if from := e.Time - e.Int(timeline.Delay); from > b.block+delayedAfterNS && b.atPick(from) && !b.idledBefore(from-pickAfterNS) {
			w.d.until[blockAt{pid, b.block}] = from
			w.d.Delayed++
		}
	case timeline.SchedStatWait:
		if b := w.open[e.Int32(timeline.PID)]; b != nil && e.IsSet(timeline.Delay) {
			b.waitFrom = e.Time - e.Int(timeline.Delay)
		}
	case timeline.SchedWaking:
		if b := w.open[e.Int32(timeline.PID)]; b != nil && b.wokenAt == 0 {
			b.wokenAt = e.Time
		}
	}
}

// blockedState: a switch-out in this state took the task off its queue
// to sleep (S, D, I and their combinations), the only dequeue
// DELAY_DEQUEUE delays; not a preemption (R), an exit (X, Z) or a stop
// (T, t).
func blockedState(st string) bool {
	return st != "" && st[0] != 'R' && !exiting(st) && st[0] != 'T' && st[0] != 't'
}

// delayedUntil says whether the block of pid at `at` was delayed, and
// until when (untilRequeue: its requeue).
func (d *DelayedDequeues) delayedUntil(pid int32, at int64) (int64, bool) {
	if d == nil {
		return 0, false
	}
	u, ok := d.until[blockAt{pid, at}]
	return u, ok
}
