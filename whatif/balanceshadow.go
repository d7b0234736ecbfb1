package whatif

import (
	"fmt"
	"math"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// BalancePass is one load_balance() pass a kernel trace shows moving
// tasks, with what the model's rules make of the loads at that moment.
//
// A pass is the run of sched_migrate_task records onto one CPU, in one
// context, less than a millisecond apart, that are not a wakeup's
// placement. Its idle type comes from the records' common_flags: written
// in softirq context (the tick's SCHED_SOFTIRQ) beside a running task it
// is CPU_NOT_IDLE, beside the idle task CPU_IDLE (the CPU's own tick, or
// the nohz idle balancer balancing for itself: its passes for other idle
// CPUs are written on its own CPU onto theirs, and are left out); outside
// interrupts it is newidle_balance(),
// run from the switch-out of the task that blocked, which on a
// preemptible kernel (CONFIG_PREEMPTION, as Debian's PREEMPT_DYNAMIC
// builds) stops at the first task it detaches: each such move is a pass.
type BalancePass struct {
	TimeNS         int64
	Idle           IdleType
	DstCPU, SrcCPU int32
	// Level names the lowest domain of DstCPU spanning SrcCPU and Domain
	// is its index among DstCPU's domains (schedstat's domainN).
	Level  string
	Domain int
	// Local and Busiest are the groups of that domain holding DstCPU and
	// SrcCPU, as the shadow reads them just before the first move
	// (update_sg_lb_stats, classified by the policy); SrcGroup is the
	// latter's index in the domain's groups, BusiestGroup the one the
	// policy's update_sd_pick_busiest chose (-1 none): where they differ
	// the kernel's state was not the shadow's.
	Local, Busiest         SGStats
	SrcGroup, BusiestGroup int
	// Balanced: the policy's find_busiest_group would have found no
	// imbalance; MigrationType and Imbalance are calculate_imbalance's
	// otherwise.
	Balanced      bool
	MigrationType MigrationType
	Imbalance     int64
	// Moved is the number of tasks the pass moved and MovedLoad the sum
	// of their load_avg as detach_tasks reads them: as of each task's
	// last update, not decayed to now.
	Moved     int
	MovedLoad uint64
}

// balancePassGapNS: moves of one pass come microseconds apart.
const balancePassGapNS = 1000000

// BalanceShadow reads a kernel trace with the PELT shadow of WakeShadow
// (loads redone from the trace's own switches, wakeups and updates) and
// returns each balance pass it shows moving tasks, scored by pol's
// classification and calculate_imbalance on d's domains. The kernel sums
// each pass's imbalance in /proc/schedstat (lb_imbalance), so where a
// trace shows every pass that found an imbalance (lb_failed zero), the
// sum over the passes is a check of the model's load arithmetic against
// the kernel's own (FIDELITY.md round 95). Records without common_flags
// (a replay's output) cannot be classified: such a trace gives no passes.
//
// dq, when not nil, holds the trace's delayed dequeues
// (ReadDelayedDequeues): the blocks DELAY_DEQUEUE kept queued stay on
// their CPU's queue until the trace dates their dequeue.
func BalanceShadow(r timeline.EventReader, d *model.Domains, pol Policy, dq *DelayedDequeues) ([]BalancePass, error) {
	if d == nil || pol == nil {
		return nil, fmt.Errorf("balance shadow: domains and a policy are needed")
	}
	// The jiffy only paces task_h_load's cache, which the passes do not
	// read.
	s := newBalanceShadow(pol, 250, dq)
	var out []BalancePass
	var last int64
	for r.Next() {
		e := r.Event()
		if e.Kind == timeline.SchedMigrateTask {
			if p, ok := s.balanceMove(e, d, pol, out, last); ok {
				if p != nil {
					out = append(out, *p)
				}
				cur := &out[len(out)-1]
				cur.Moved++
				cur.MovedLoad += s.tasks[e.Int32(timeline.PID)].avg.loadAvg
				last = e.Time
			}
		}
		s.event(e)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// balanceMove says whether e, a sched_migrate_task, is a balance pass's
// move of a queued task onto the CPU writing it, and returns a new pass
// when it starts one (nil when it continues the last of passes, which
// ended at last).
func (s *wakeShadow) balanceMove(e *timeline.Event, d *model.Domains, pol Policy, passes []BalancePass, last int64) (*BalancePass, bool) {
	if !e.IsSet(timeline.CPU) || !e.IsSet(timeline.DestCPU) || !e.IsSet(timeline.CommonFlags) || timeline.CheckCPUs(e) != nil {
		return nil, false
	}
	c, pid := e.Int32(timeline.CPU), e.Int32(timeline.PID)
	if e.Int32(timeline.DestCPU) != c || int(c) >= len(d.CPUs) {
		return nil, false
	}
	if int(c) < len(s.open) && s.open[c] != nil && s.open[c].pid == pid {
		return nil, false // a wakeup's placement
	}
	t := s.tasks[pid]
	if t == nil || !t.onRQ || t.cpu < 0 || t.cpu == c || int(t.cpu) >= len(d.CPUs) {
		return nil, false
	}
	var idle IdleType
	switch fl := e.Int(timeline.CommonFlags) & (flagSoftIRQ | flagHardIRQ | flagNMI); {
	case fl == flagSoftIRQ && e.Int32(timeline.CommonPID) != 0:
		idle = CPUNotIdle
	case fl == flagSoftIRQ:
		idle = CPUIdle
	case fl == 0:
		idle = CPUNewlyIdle
	default:
		return nil, false
	}
	if n := len(passes); n > 0 {
		p := &passes[n-1]
		if idle != CPUNewlyIdle && p.DstCPU == c && p.SrcCPU == t.cpu && p.Idle == idle && e.Time-last < balancePassGapNS {
			return nil, true
		}
	}
	var sd *model.SchedDomain
	level := 0
	for i, x := range d.CPUs[c].Domains {
		if inSpan(x.Span, int(t.cpu)) {
			sd, level = x, i
			break
		}
	}
	if sd == nil {
		return nil, false
	}
	env := shadowLBEnv(sd, int(c), idle)
	p := &BalancePass{TimeNS: e.Time, Idle: idle, DstCPU: c, SrcCPU: t.cpu, Level: sd.Name, Domain: level}
	groups := sd.Groups()
	stats := make([]SGStats, len(groups))
	sds := s.sdStats(sd, d, pol, env, e.Time, stats)
	for i := 1; i < len(groups); i++ {
		if inSpan(groups[i].Span, int(t.cpu)) {
			p.Busiest = stats[i]
			p.SrcGroup = i
		}
	}
	if sds.Local == nil || !inSpan(groups[0].Span, int(c)) {
		return nil, false
	}
	p.Local = *sds.Local
	p.BusiestGroup = sds.BusiestIdx
	if sds.Busiest == nil || pol.Decide(env, sds) != ForceBalance {
		p.Balanced = true
	} else {
		pol.CalculateImbalance(env, sds)
		p.MigrationType, p.Imbalance = env.MigrationType, env.Imbalance
	}
	return p, true
}

// newBalanceShadow is the PELT shadow for pol's balancer checks, with the
// trace's delayed dequeues dq (nil: none) and pol's count of them; hz
// paces only task_h_load's cache and wakee_flips, which the checks do not
// read, and the busy passes' jiffies.
func newBalanceShadow(pol Policy, hz int, dq *DelayedDequeues) *wakeShadow {
	k := pol.Knobs()
	s := newWakeShadow(WakeShadowOptions{ImbalancePct: 100, LLCSize: 1, HZ: hz, InitUtilTrueWeight: k.InitUtilTrueWeight})
	s.dq, s.countDelayed = dq, !k.HNrRunnable
	return s
}

// groupStats sums a group's CPUs as update_sg_lb_stats does, from the
// shadow's run queues brought up to now (update_blocked_averages). What
// the trace cannot show is left at its rest value: util_est (util is
// util_avg alone), RT pressure on capacity, the group's sgc->imbalance
// flag. On a newly idle balance the pass's own CPU still holds the task whose
// switch-out runs it (the trace writes that switch after the pass): it is
// not counted as running there.
func (s *wakeShadow) groupStats(g *model.SchedGroup, d *model.Domains, dst int32, idle IdleType, now int64, sgs *SGStats) {
	for _, c := range g.Span {
		r := s.rq(int32(c))
		s.updRQ(r, now)
		nr := r.nr
		if idle == CPUNewlyIdle && int32(c) == dst && r.curr > 0 && nr > 0 {
			nr--
		}
		orig := uint64(capacityScale)
		if c < len(d.Capacity) && d.Capacity[c] > 0 {
			orig = uint64(d.Capacity[c])
		}
		capacity := r.capacityOf(orig)
		nrFair := r.nrFair
		if idle == CPUNewlyIdle && int32(c) == dst && r.currFair && nrFair > 0 {
			nrFair--
		}
		sgs.GroupLoad += r.avg.loadAvg
		sgs.GroupUtil += min(r.avg.utilAvg, orig)
		sgs.GroupRunnable += r.avg.runnableAvg
		sgs.SumNrRunning += uint32(nr)
		sgs.SumHNrRunning += uint32(nrFair)
		if s.countDelayed {
			sgs.SumHNrRunning += uint32(r.nrDelayed)
		}
		if nr > 1 {
			sgs.Overload = true
		}
		if nr == 0 {
			sgs.IdleCPUs++
		}
		sgs.GroupCapacity += capacity
	}
	sgs.GroupWeight = uint32(g.Weight)
	sgs.Flags = g.Flags
	sgs.Cores = uint32(g.Cores)
}

// BusyTally is one CPU's periodic busy balance passes at one of its
// domains, as BusyBalanceShadow times and scores them: how many passes,
// and how many found an imbalance (the kernel's lb_count and lb_count -
// lb_balanced of CPU_NOT_IDLE in /proc/schedstat).
type BusyTally struct {
	CPU, Domain int
	Level       string
	Passes      int
	Unbalanced  int
}

// busyShadowGapNS: BusyBalanceShadow times no passes across a stretch of
// a trace longer than this without records.
const busyShadowGapNS = 10_000_000_000

// BusyBalanceShadow scores every periodic busy balance pass of a kernel
// trace, not only those the trace shows moving tasks (BalanceShadow): at
// each jiffy (hz a second from the trace's first record) a CPU running a
// task balances each of its domains whose busy interval has passed since
// its last pass (get_sd_balance_interval: balance_interval ×
// busy_factor, less a jiffy where the policy's kernel does), as
// rebalance_domains does; should_we_balance leaves the pass to the local
// group's first idle CPU (on an idle core first, from v6.6), else its
// first CPU (a pass that is not its own is counted balanced, as the
// kernel's goto out_balanced counts it, and ends that CPU's walk up the
// domains); the pass is unbalanced where
// the policy's find_busiest_group returns a busiest group with an
// imbalance, on the shadow's run queues. balance_interval is reset to
// min_interval after an unbalanced pass and doubles (to max_interval)
// after a balanced one. The kernel's idle passes, which also restart a
// domain's interval, are not timed: where a CPU idles often its busy
// passes come at other ticks than the kernel's; nor are any across a
// stretch of over 10 s without records. Set beside the kernel's
// busy counters, the unbalanced shares check the model's group
// classification and calculate_imbalance at every pass, balanced ones
// included (FIDELITY.md round 149).
func BusyBalanceShadow(r timeline.EventReader, d *model.Domains, pol Policy, hz int, dq *DelayedDequeues) ([]BusyTally, error) {
	if d == nil || pol == nil || hz <= 0 {
		return nil, fmt.Errorf("busy balance shadow: domains, a policy and HZ are needed")
	}
	k := pol.Knobs()
	s := newBalanceShadow(pol, hz, dq)
	jiffy := int64(1000000000 / hz)
	maxInterval := max(int64(hz)*int64(len(d.CPUs))/10, 1)
	type state struct {
		interval int64 // balance_interval, ms
		last     int64 // last_balance, jiffies
		tally    BusyTally
	}
	st := make([][]state, len(d.CPUs))
	for c := range d.CPUs {
		st[c] = make([]state, len(d.CPUs[c].Domains))
		for i, sd := range d.CPUs[c].Domains {
			st[c][i] = state{interval: int64(sd.BalanceInterval), last: math.MinInt64 / 2, tally: BusyTally{CPU: c, Domain: i, Level: sd.Name}}
		}
	}
	var start, next int64
	var scratch []SGStats
	for r.Next() {
		e := r.Event()
		if start == 0 && e.Time > 0 {
			start = e.Time
			next = start + jiffy
		}
		if start != 0 && e.Time-next > busyShadowGapNS {
			// A stretch without records that long is no run to time
			// passes in (and would cost a loop per jiffy): skip it.
			next += (e.Time - next) / jiffy * jiffy
		}
		for start != 0 && e.Time >= next && next <= math.MaxInt64-jiffy {
			j := (next - start) / jiffy
			s.settleDelayed(next)
			for c := range d.CPUs {
				if s.rq(int32(c)).curr <= 0 {
					continue
				}
				for i, sd := range d.CPUs[c].Domains {
					x := &st[c][i]
					iv := (x.interval*int64(sd.BusyFactor)*int64(hz) + 999) / 1000
					if k.IntervalMinusOne {
						iv--
					}
					iv = min(max(iv, 1), maxInterval)
					if j < x.last+iv {
						continue
					}
					x.last = j
					x.tally.Passes++
					own := s.shouldWeBalanceBusy(d, sd, c, k.IdleCoreBalance)
					if own && s.busyUnbalanced(sd, d, pol, c, next, &scratch) {
						x.tally.Unbalanced++
						x.interval = int64(sd.MinInterval)
					} else if x.interval < int64(sd.MaxInterval) {
						x.interval *= 2
					}
					if !own {
						break // continue_balancing = 0
					}
				}
			}
			next += jiffy
		}
		s.event(e)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	var out []BusyTally
	for c := range st {
		for i := range st[c] {
			if st[c][i].tally.Passes > 0 {
				out = append(out, st[c][i].tally)
			}
		}
	}
	return out, nil
}

// shouldWeBalanceBusy is should_we_balance() for a busy CPU c at sd (the
// engine's Sim.shouldWeBalance on the shadow's run queues): the first
// idle CPU of the local group's balance mask balances it (from v6.6,
// idleCore, above the SMT level one on a fully idle core first), else
// the mask's first CPU.
func (s *wakeShadow) shouldWeBalanceBusy(d *model.Domains, sd *model.SchedDomain, c int, idleCore bool) bool {
	gs := sd.Groups()
	if len(gs) == 0 || len(gs[0].BalanceMask) == 0 {
		return false
	}
	idle := func(x int) bool { r := s.rq(int32(x)); return r.curr <= 0 && r.nr == 0 }
	byCore := idleCore && sd.Flags&model.SDShareCPUCapacity == 0
	idleSMT := -1
	for _, x := range gs[0].BalanceMask {
		if !idle(x) {
			continue
		}
		if byCore && !coreIdleIn(d, x, idle) {
			if idleSMT < 0 {
				idleSMT = x
			}
			continue
		}
		return x == c
	}
	if idleSMT >= 0 {
		return idleSMT == c
	}
	return gs[0].BalanceMask[0] == c
}

// coreIdleIn is is_core_idle(): every SMT sibling of x is idle.
func coreIdleIn(d *model.Domains, x int, idle func(int) bool) bool {
	for _, y := range smtSpan(d, x) {
		if y != x && !idle(y) {
			return false
		}
	}
	return true
}

// busyUnbalanced is find_busiest_group() for busy CPU c at sd on the
// shadow's run queues at now: a busiest group and an imbalance.
func (s *wakeShadow) busyUnbalanced(sd *model.SchedDomain, d *model.Domains, pol Policy, c int, now int64, scratch *[]SGStats) bool {
	env := shadowLBEnv(sd, c, CPUNotIdle)
	n := len(sd.Groups())
	if cap(*scratch) < n {
		*scratch = make([]SGStats, n)
	}
	stats := (*scratch)[:n]
	clear(stats)
	sds := s.sdStats(sd, d, pol, env, now, stats)
	if sds.Local == nil || sds.Busiest == nil || pol.Decide(env, sds) != ForceBalance {
		return false
	}
	pol.CalculateImbalance(env, sds)
	return env.Imbalance > 0
}

// shadowLBEnv is the lb_env of a balance pass by CPU c at sd.
func shadowLBEnv(sd *model.SchedDomain, c int, idle IdleType) *LBEnv {
	return &LBEnv{SDFlags: sd.Flags, ImbalancePct: uint64(sd.ImbalancePct), SpanWeight: sd.SpanWeight,
		ImbNUMANr: sd.ImbNUMANr, CacheNiceTries: sd.CacheNiceTries, HasParent: sd.Parent != nil, DstCPU: c, Idle: idle}
}

// sdStats is update_sd_lb_stats() on the shadow's run queues at now:
// every group of sd, the local one first (Groups' order), summed into
// stats (one per group) and classified by pol, which picks the busiest
// among the others.
func (s *wakeShadow) sdStats(sd *model.SchedDomain, d *model.Domains, pol Policy, env *LBEnv, now int64, stats []SGStats) *SDStats {
	sds := &SDStats{BusiestIdx: -1, PreferSibling: sd.Child != nil && sd.Child.Flags&model.SDPreferSibling != 0}
	for i, g := range sd.Groups() {
		sgs := &stats[i]
		s.groupStats(g, d, int32(env.DstCPU), env.Idle, now, sgs)
		sgs.GroupType = pol.Classify(env, sgs)
		if sgs.GroupType == GroupOverloaded && sgs.GroupCapacity > 0 {
			sgs.AvgLoad = sgs.GroupLoad * capacityScale / sgs.GroupCapacity
		}
		sds.TotalLoad += sgs.GroupLoad
		sds.TotalCapacity += sgs.GroupCapacity
		switch {
		case i == 0:
			sds.Local = sgs
		case pol.PickBusiest(env, sds, sgs):
			sds.Busiest, sds.BusiestIdx = sgs, i
		}
	}
	return sds
}
