package whatif

import "github.com/schedreplay/replay/timeline"

// newidleTally counts, in a schedule (a trace's or a replay's), the
// chances a CPU had to pull a waiting task when its task left it, and how
// many it took. A chance is a task leaving a CPU (blocking or exiting: not
// a preemption) with nothing queued locally, while another CPU runs one
// task and has a CFS task queued behind it that may move (not a per-CPU
// kernel thread by its name, PinnedCPUOf): newidle_balance runs there,
// and if it runs it finds that task. A pull is the CPU switching straight to
// a task migrated onto it while queued, other than by its wakeup's
// placement (whose sched_migrate_task follows its sched_waking on the
// waker's CPU), during the run of the task that now leaves and at most
// newidlePullWindowNS before the switch: the pass runs inside that task's
// schedule(). A task the periodic balancer moved onto the CPU earlier and
// that waited there is a task queued locally: no pass, no chance.
//
// The kernel's share of chances taken is hidden state made visible: with
// NI_RANDOM a pass runs with its domain's newidle success ratio over the
// last ~1024 calls, which the kernel carries into a recording from
// whatever ran before it, and hardly updates within a recording
// (FIDELITY.md round 25: the 6.1 guests took 20–22 % of schbench's
// chances, the replay starting every domain at the boot value 512/1024
// 43–46 %). Extraction keeps the trace's counts in the workload, so the
// replay starts each domain's ratio there (niRatioFrom), and the fidelity
// report measures the replay the same way.
type newidleTally struct {
	Chances, Pulls int

	curr       []int32  // per CPU: running pid (0 idle)
	switches   []uint64 // per CPU: sched_switch events so far
	queued     []int    // per CPU: movable CFS tasks queued, not running
	lastWaking []int32  // per CPU: pid of the CPU's last event if a sched_waking, else -1
	tasks      map[int32]*tallyTask
}

type tallyTask struct {
	queued bool
	qcpu   int32
	pulled bool
	// pullSeq, pullAt: the pulling CPU's switch count and the time at the
	// migration that made pulled true.
	pullSeq uint64
	pullAt  int64
	on      int32 // CPU running it, or -1
	movable bool  // CFS (prio >= 100) and not a per-CPU kernel thread
}

func newNewidleTally() *newidleTally {
	return &newidleTally{tasks: map[int32]*tallyTask{}}
}

func (n *newidleTally) task(p int32) *tallyTask {
	t := n.tasks[p]
	if t == nil {
		t = &tallyTask{on: -1}
		n.tasks[p] = t
	}
	return t
}

func (n *newidleTally) grow(c int32) {
	for int(c) >= len(n.curr) {
		n.curr = append(n.curr, 0)
		n.switches = append(n.switches, 0)
		n.queued = append(n.queued, 0)
		n.lastWaking = append(n.lastWaking, -1)
	}
}

func (n *newidleTally) enqueue(t *tallyTask, c int32, pulled bool) {
	if c < 0 {
		return
	}
	n.grow(c)
	n.dequeue(t)
	t.queued, t.qcpu, t.pulled = true, c, pulled
	if t.movable {
		n.queued[c]++
	}
}

func (n *newidleTally) dequeue(t *tallyTask) {
	if t.queued {
		if t.movable {
			n.queued[t.qcpu]--
		}
		t.queued = false
	}
}

// classify notes whether t may be pulled, from the prio and name an
// event gives it.
func (n *newidleTally) classify(t *tallyTask, prio int64, comm string) {
	if t.queued {
		return // counted under its old class; the next enqueue re-counts
	}
	t.movable = prio >= 100 && PinnedCPUOf(comm) < 0
}

// observe feeds one event (in time order); lost records make it forget
// which tasks are queued where.
func (n *newidleTally) observe(e *timeline.Event) {
	if e.Kind == timeline.Lost {
		n.lost()
		return
	}
	if !e.IsSet(timeline.CPU) || timeline.CheckCPUs(e) != nil {
		// No CPU, or one out of range (the Measurer sees events before
		// extraction rejects them): nothing to index.
		return
	}
	c := e.Int32(timeline.CPU)
	n.grow(c)
	lw := n.lastWaking[c]
	n.lastWaking[c] = -1
	switch e.Kind {
	case timeline.SchedSwitch:
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		if prev != 0 {
			pt := n.task(prev)
			pt.on = -1
			n.dequeue(pt)
			st := e.Str(timeline.PrevState)
			if st == "R" || st == "R+" {
				n.classify(pt, prioOr(e, timeline.PrevPrio), e.Str(timeline.PrevComm))
				n.enqueue(pt, c, false)
			} else if prev != next {
				n.chance(c, next, e.Time)
			}
		}
		if next != 0 {
			nt := n.task(next)
			n.dequeue(nt)
			if nt.on >= 0 && int(nt.on) < len(n.curr) && n.curr[nt.on] == next {
				n.curr[nt.on] = 0
			}
			nt.on = c
		}
		n.curr[c] = next
		n.switches[c]++
	case timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew:
		// sched_wakeup comes after its placement's migration: a trace
		// with sched_waking has queued the task already.
		p := e.Int32(timeline.PID)
		if p == 0 || !e.IsSet(timeline.TargetCPU) {
			return
		}
		t := n.task(p)
		if t.on >= 0 {
			return // woken while still running (ttwu_runnable)
		}
		if !t.queued {
			n.classify(t, prioOr(e, timeline.Prio), e.Str(timeline.Comm))
			n.enqueue(t, e.Int32(timeline.TargetCPU), false)
		}
		if e.Kind == timeline.SchedWaking {
			n.lastWaking[c] = p
		}
	case timeline.SchedMigrateTask:
		p := e.Int32(timeline.PID)
		if t := n.tasks[p]; t != nil && t.queued && e.IsSet(timeline.DestCPU) {
			d := e.Int32(timeline.DestCPU)
			n.enqueue(t, d, lw != p)
			t.pullSeq, t.pullAt = n.switches[d], e.Time
		}
	case timeline.SchedProcessExit:
		// A kernel's task exits running, but a replay stops a task queued
		// at its recorded exit deadline where it stands (Config's exit
		// deadlines): it leaves the queue there, or every later chance
		// would count it.
		if t := n.tasks[e.Int32(timeline.PID)]; t != nil {
			n.dequeue(t)
		}
	}
}

// lost forgets which tasks are queued where: after lost records that is
// not known, and a task left queued by them would make chances that were
// not there.
func (n *newidleTally) lost() {
	for _, t := range n.tasks {
		n.dequeue(t)
	}
}

// newidlePullWindowNS bounds the time from a newidle pass's migration to
// its switch. The 6.1 guests' passes (under QEMU TCG) take 30–300 µs from
// the migration to the switch (FIDELITY.md round 103: 203 of the 221
// moves during the leaving task's run on the two-vCPU hackbench
// recordings within 0.3 ms, 13 at 1–4 ms: the periodic balancer's moves
// before a block, which /proc/schedstat counts apart); a pass on real
// hardware takes microseconds.
const newidlePullWindowNS = 1_000_000

// chance counts a CPU left by a blocking or exiting task at now, before
// its next task (0: idle) is taken off its queue.
func (n *newidleTally) chance(c, next int32, now int64) {
	if next != 0 {
		t := n.tasks[next]
		if t == nil || !t.queued || t.qcpu != c {
			return // not recorded queued here: no evidence either way
		}
		if t.pulled && t.movable && t.pullSeq == n.switches[c] && now-t.pullAt <= newidlePullWindowNS {
			n.Chances++
			n.Pulls++
		}
		return // a task queued here: no newidle pass
	}
	for o := range n.curr {
		if int32(o) != c && n.curr[o] != 0 && n.queued[o] > 0 {
			n.Chances++
			return
		}
	}
}

// prioOr is the event's prio field c, or 120 (a CFS task) when the
// trace does not give it.
func prioOr(e *timeline.Event, c timeline.Col) int64 {
	if e.IsSet(c) {
		return e.Int(c)
	}
	return 120
}

// minNewidleChances is the fewest chances from which the replay takes the
// trace's share: below it the boot value stays.
const minNewidleChances = 30

// niRatioFrom is the NI_RANDOM success ratio (of 1024) that makes a pass
// run with the share of chances the trace took; ok is false when the
// trace has too few chances to say.
func niRatioFrom(pulls, chances int) (ratio int64, ok bool) {
	if chances < minNewidleChances || pulls < 0 || pulls > chances {
		return 0, false
	}
	r := (int64(pulls)*1024+int64(chances)/2)/int64(chances) - 1
	return min(max(r, 0), 1023), true
}

// niStartRatio is where NI_RANDOM's success ratio starts on every domain:
// Config.NIRatio when set; else, when the traced kernel ran NI_RANDOM (its
// policy has it, or newidle_ratio=share says so), the trace's share of
// newidle chances taken, the state that kernel carried into the
// recording; else the boot value 512. A
// trace of a kernel without NI_RANDOM says nothing of that state: its
// share comes from other rules.
func niStartRatio(cfg Config, w *Workload) int64 {
	if cfg.NIRatio > 0 {
		return int64(cfg.NIRatio - 1)
	}
	if p, err := PolicyForKernel(w.Kernel); cfg.NIRatio < 0 || err == nil && p.Knobs().NIRandom {
		if r, ok := niRatioFrom(w.NewidlePulls, w.NewidleChances); ok {
			return r
		}
	}
	return 512
}
