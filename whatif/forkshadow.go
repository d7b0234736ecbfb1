package whatif

import (
	"fmt"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// ForkPlacement is one fork a kernel trace shows placed (its
// sched_wakeup_new), beside where the model's find_idlest_cpu puts it on
// the run queues the PELT shadow redoes from the trace up to that moment.
type ForkPlacement struct {
	TimeNS int64
	// Child is the new task's pid; CPU the forking CPU (where
	// wake_up_new_task ran: the parent's).
	Child int32
	CPU   int32
	// Kernel is the CPU the trace shows the child placed on (target_cpu),
	// Model the one the model's rules choose on the shadow's state.
	Kernel, Model int32
}

// ForkShadow reads a kernel trace with the PELT shadow of WakeShadow and
// scores each fork it shows against the model's fork balancing
// (select_task_rq_fair with SD_BALANCE_FORK: find_idlest_cpu from the
// highest domain with the flag, by the engine's own code) on d's domains
// under pol. Where the two agree, the model's rules take the kernel's
// decisions from the kernel's own loads, and a replay that places a fork
// elsewhere got there by a different state (FIDELITY.md round 97). What
// the trace cannot show is left at its rest value: util_est (a CPU's
// util is its util_avg), RT pressure on capacity, the task's affinity
// (every CPU allowed).
// dq, when not nil, holds the trace's delayed dequeues, kept queued as in
// BalanceShadow.
func ForkShadow(r timeline.EventReader, d *model.Domains, pol Policy, dq *DelayedDequeues) ([]ForkPlacement, error) {
	if d == nil || pol == nil {
		return nil, fmt.Errorf("fork shadow: domains and a policy are needed")
	}
	k := pol.Knobs()
	f := &shadowFork{s: newBalanceShadow(pol, 250, dq),
		d: d, pol: pol, numaDiff: k.ForkNumaIdleDiff}
	var out []ForkPlacement
	for r.Next() {
		e := r.Event()
		if e.Time > 0 && e.IsSet(timeline.CPU) && timeline.CheckCPUs(e) == nil {
			c := e.Int32(timeline.CPU)
			switch {
			case e.Kind == timeline.SchedSwitch && e.Int32(timeline.NextPID) == 0:
				f.idleSince(c, e.Time)
			case e.Kind == timeline.SchedWakeupNew && e.IsSet(timeline.TargetCPU) && int(c) < len(d.CPUs) &&
				e.Int32(timeline.TargetCPU) >= 0 && int(e.Int32(timeline.TargetCPU)) < len(d.CPUs):
				if p, ok := f.place(e, c); ok {
					out = append(out, p)
				}
			}
		}
		f.s.event(e)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// place runs fork balancing for the sched_wakeup_new e written on c,
// before the shadow takes the child in.
func (f *shadowFork) place(e *timeline.Event, c int32) (ForkPlacement, bool) {
	var sd *model.SchedDomain
	for _, x := range f.d.CPUs[c].Domains {
		if x.Flags&model.SDBalanceFork != 0 {
			sd = x
		}
	}
	if sd == nil {
		return ForkPlacement{}, false
	}
	f.now = e.Time
	m := findIdlestCPU(f, sd, int(c), model.SDBalanceFork)
	return ForkPlacement{TimeNS: e.Time, Child: e.Int32(timeline.PID), CPU: c, Kernel: e.Int32(timeline.TargetCPU), Model: int32(m)}, true
}

// shadowFork is the fork shadow's run queues as a forkMachine.
type shadowFork struct {
	s        *wakeShadow
	d        *model.Domains
	pol      Policy
	numaDiff bool // the policy's ForkNumaIdleDiff
	now      int64
	idle0    []int64 // per CPU: when it last switched to idle
}

func (f *shadowFork) idleSince(c int32, t int64) {
	for int(c) >= len(f.idle0) {
		f.idle0 = append(f.idle0, 0)
	}
	f.idle0[c] = t
}

// rq is CPU c's shadow run queue brought up to now. (The kernel reads an
// idle CPU's averages as its last update left them, which for an idle
// CPU is its nohz blocked-load refresh, at most ~32 ms old and not in the
// trace; read so stale from the CPU's last record instead, the exact CPU
// among near-equal idle ones moved as much either way, the choice between
// the forking CPU and another no more.)
func (f *shadowFork) rq(c int) *shadowRQ {
	r := f.s.rq(int32(c))
	f.s.updRQ(r, f.now)
	return r
}

func (f *shadowFork) capacity(c int) uint64 {
	if c < len(f.d.Capacity) && f.d.Capacity[c] > 0 {
		return uint64(f.d.Capacity[c])
	}
	return capacityScale
}

func (f *shadowFork) groupStats(g *model.SchedGroup, pct uint64, _ int) wakeupStats {
	ws := wakeupStats{weight: uint64(g.Weight)}
	var runnable uint64
	for _, c := range g.Span {
		r := f.rq(c)
		capc := f.capacity(c)
		ws.load += r.avg.loadAvg
		ws.util += min(r.avg.utilAvg, capc)
		runnable += r.avg.runnableAvg
		ws.nr += r.nr
		ws.capacity += capc
		if r.curr == 0 && r.nr == 0 {
			ws.idle++
		}
	}
	sgs := &SGStats{GroupCapacity: ws.capacity, GroupUtil: ws.util, GroupRunnable: runnable,
		SumNrRunning: uint32(ws.nr), GroupWeight: uint32(ws.weight)}
	ws.classify(f.pol, &LBEnv{ImbalancePct: pct}, sgs)
	return ws
}

func (f *shadowFork) allowed(int) bool { return true }

func (f *shadowFork) idle(c int) (bool, int64) {
	r := f.rq(c)
	var t int64
	if c < len(f.idle0) {
		t = f.idle0[c]
	}
	return r.curr == 0 && r.nr == 0, t
}

func (f *shadowFork) load(c int) uint64                                  { return f.rq(c).avg.loadAvg }
func (f *shadowFork) domainsOf(c int) []*model.SchedDomain               { return f.d.CPUs[c].Domains }
func (f *shadowFork) groupsOf(sd *model.SchedDomain) []*model.SchedGroup { return sd.Groups() }
func (f *shadowFork) numaIdleDiff() bool                                 { return f.numaDiff }
