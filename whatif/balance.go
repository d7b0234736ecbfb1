package whatif

import (
	"cmp"
	"slices"

	"github.com/schedreplay/replay/model"
)

// sdState is the per-CPU copy of a struct sched_domain's mutable fields.
type sdState struct {
	sd                 *model.SchedDomain
	groups             []*model.SchedGroup // local group first
	balanceInterval    int64               // ms
	lastBalance        int64               // jiffies
	nrBalanceFailed    int
	maxNewidleLbCost   int64 // ns
	lastDecayMaxLbCost int64 // jiffies
	// NI_RANDOM's success statistics (newidle_call, newidle_success,
	// newidle_ratio: sd_init starts them at a 50 % success rate).
	niCall, niSuccess, niRatio int64
	// capNextUpdate is the local group's sgc->next_update (jiffies): a
	// newly idle pass refreshes the CPU's capacity only after it.
	capNextUpdate int64
}

// Load-balance flags (LBF_*).
const (
	lbfAllPinned = 1 << iota
	lbfNeedBreak
	lbfDstPinned
	lbfSomePinned
	lbfActiveLB
)

type lbRun struct {
	LBEnv
	st      *sdState
	level   int
	cpus    []bool // env->cpus
	src     int
	flags   int
	loop    int
	loopMax int
	loopBrk int
	// newDstCPU: with lbfDstPinned, the CPU of the local group a task
	// dst may not run on may go to (can_migrate_task's new_dst_cpu).
	newDstCPU int
	// scratch holds the pass's group statistics (newLBRun).
	scratch *lbScratch
	sumUtil uint64 // update_sd_lb_stats' sum_util, for update_idle_cpu_scan
}

// balanceInterval is get_sd_balance_interval().
func (s *Sim) balanceInterval(st *sdState, busy bool) int64 {
	ms := st.balanceInterval
	if busy {
		ms *= int64(st.sd.BusyFactor)
	}
	j := s.msecsToJiffies(ms)
	if busy && s.knobs.IntervalMinusOne {
		j--
	}
	if j < 1 {
		j = 1
	}
	if j > s.maxLBInterval {
		j = s.maxLBInterval
	}
	return j
}

// triggerLoadBalance is trigger_load_balance() from the tick.
func (s *Sim) triggerLoadBalance(r *rq, idleAtTick bool) {
	if len(r.sd) == 0 {
		return
	}
	if s.jiffies() >= r.nextBalance {
		idle := CPUNotIdle
		if idleAtTick {
			idle = CPUIdle
		}
		// run_rebalance_domains (same instant, after the tick).
		chance := idleAtTick && s.waitingElsewhere(r)
		s.updateBlockedAverages(r)
		r.inBalance = true
		was := s.balancingOn(r.cpu, r.curr)
		s.rebalanceDomains(r, idle, MigrationSourcePeriodic)
		s.endBalancing(was)
		r.inBalance = false
		if idleAtTick {
			s.stats.IdleTickPasses++
			if chance {
				s.stats.IdleTickChances++
			}
			if r.nrRunning() > 0 {
				s.stats.IdleTickPulls++
			}
		}
		if r.curr == nil && r.nrRunning() > 0 {
			s.schedule(r, "")
		}
	}
	if !idleAtTick {
		s.nohzBalancerKick(r)
	}
}

// waitingElsewhere: a CPU other than r's runs a task with another queued
// behind it (scripts/idlepulls' chance for an idle CPU's balance).
func (s *Sim) waitingElsewhere(r *rq) bool {
	for _, o := range s.cpus {
		if o != r && o.curr != nil && o.nrRunning() >= 2 {
			return true
		}
	}
	return false
}

// Migration sources for statistics.
const (
	MigrationSourcePeriodic = iota
	MigrationSourceNewidle
	MigrationSourceNohz
	// MigrationSourceAffinity: a task moved by the stopper it woke
	// (EdgeMove), not by load balancing.
	MigrationSourceAffinity
)

// rebalanceDomains is rebalance_domains() (§3.1).
func (s *Sim) rebalanceDomains(r *rq, idle IdleType, source int) {
	cont := true
	busy := idle != CPUIdle
	j := s.jiffies()
	next := j + 60*int64(s.cfg.HZ)
	needDecay := false
	var maxCost int64
	for _, st := range r.sd {
		// The regular visit decays max_newidle_lb_cost (a pass skipped
		// by the newidle gate never does).
		needDecay = s.updateNewidleCost(st, 0, 0)
		maxCost += st.maxNewidleLbCost
		if !cont {
			if needDecay {
				continue
			}
			break
		}
		interval := s.balanceInterval(st, busy)
		if j >= st.lastBalance+interval {
			moved := s.loadBalance(r, st, idle, &cont, source)
			if moved > 0 {
				idle = CPUNotIdle
				if r.idle() {
					idle = CPUIdle
				}
				busy = idle != CPUIdle
			}
			st.lastBalance = j
			interval = s.balanceInterval(st, busy)
		}
		if st.lastBalance+interval < next {
			next = st.lastBalance + interval
		}
	}
	if needDecay {
		// The rq-wide maximum decays with them, kept at
		// sysctl_sched_migration_cost or more.
		r.maxIdleBalanceCost = max(s.cfg.MigrationCostNS, maxCost)
	}
	// nohz.next_balance is left to the idle balancer (6.1's
	// rebalance_domains does not lower it).
	r.nextBalance = next
}

// updateNextBalance is update_next_balance(): next is lowered to when
// st's idle balance interval next falls due.
func (s *Sim) updateNextBalance(st *sdState, next *int64) {
	if n := st.lastBalance + s.balanceInterval(st, false); n < *next {
		*next = n
	}
}

// moveNextBalance is newidle_balance's exit: rq->next_balance becomes
// *next if that is sooner.
func (s *Sim) moveNextBalance(r *rq, next *int64) {
	if *next < r.nextBalance {
		r.nextBalance = *next
	}
}

// updateBlockedAverages decays an idle CPU's blocked PELT signals to now.
func (s *Sim) updateBlockedAverages(r *rq) { s.updateRQLoad(r) }

// shouldWeBalance is should_we_balance() (§3.5): of the local group's
// CPUs only one balances the domain, the first idle one, else the group's
// first. From v6.6 (Knobs.IdleCoreBalance) above the SMT level the first
// idle CPU on a fully idle core goes first, as it has a whole core's
// capacity to pull onto, then the first idle CPU whose sibling is busy.
func (s *Sim) shouldWeBalance(e *lbRun) bool {
	if !e.cpus[e.DstCPU] {
		return false
	}
	if e.Idle == CPUNewlyIdle {
		return true
	}
	local := e.st.groups[0]
	byCore := s.knobs.IdleCoreBalance && e.SDFlags&model.SDShareCPUCapacity == 0
	idleSMT := -1
	for _, c := range local.BalanceMask {
		if !e.cpus[c] || !s.cpus[c].idle() {
			continue
		}
		if byCore && !s.coreIdle(c) {
			if idleSMT < 0 {
				idleSMT = c
			}
			continue
		}
		return c == e.DstCPU
	}
	if idleSMT >= 0 {
		return idleSMT == e.DstCPU
	}
	return local.BalanceMask[0] == e.DstCPU
}

// coreIdle is is_core_idle(): every SMT sibling of c is idle.
func (s *Sim) coreIdle(c int) bool {
	for _, x := range s.smtSiblings(c) {
		if x != c && !s.cpus[x].idle() {
			return false
		}
	}
	return true
}

// lbScratch is one load_balance() pass's storage: the env, its CPU mask and
// the domain's group statistics, kept on the Sim and reused because a
// replay runs hundreds of thousands of passes (allocating them was a third
// of the engine's allocations). Passes can nest (a pass's attach may run
// another CPU's newly idle pass), so there is one per depth.
type lbScratch struct {
	run   lbRun
	sds   SDStats
	stats []SGStats
	cands []*simTask // detach_tasks' candidates
}

// newLBRun is load_balance()'s struct lb_env for dst balancing st's
// domain as idle: the domain's constants, its span as the CPUs to look at.
// The run lives until the matching endLBRun.
func (s *Sim) newLBRun(st *sdState, dst int, idle IdleType) *lbRun {
	sd := st.sd
	if s.lbDepth == len(s.lbScratch) {
		s.lbScratch = append(s.lbScratch, &lbScratch{run: lbRun{cpus: make([]bool, s.ncpu)}})
	}
	sc := s.lbScratch[s.lbDepth]
	s.lbDepth++
	cpus := sc.run.cpus
	clear(cpus)
	sc.run = lbRun{st: st, level: sd.Level, cpus: cpus, loopBrk: 32, scratch: sc}
	e := &sc.run
	e.SDFlags, e.ImbalancePct, e.SpanWeight = sd.Flags, uint64(sd.ImbalancePct), sd.SpanWeight
	e.ImbNUMANr, e.CacheNiceTries, e.NrBalanceFailed = sd.ImbNUMANr, sd.CacheNiceTries, st.nrBalanceFailed
	e.HasParent = sd.Parent != nil
	e.DstCPU, e.Idle = dst, idle
	e.DstCapacity = s.cpus[dst].cpuCapacity // findBusiestGroup refreshes it
	for _, c := range sd.Span {
		e.cpus[c] = true
	}
	return e
}

// loadBalance is load_balance() (§3.4). It returns the number of tasks
// moved.
func (s *Sim) loadBalance(r *rq, st *sdState, idle IdleType, cont *bool, source int) int {
	sd := st.sd
	e := s.newLBRun(st, r.cpu, idle)
	defer s.endLBRun()
	s.stats.LBAttempts++
	switch idle {
	case CPUNewlyIdle:
		s.stats.LBNewidle++
	case CPUIdle:
		s.stats.LBIdle++
	}
	var src *rq
	var busiest, moved int
	// A pass whose busiest CPU had only tasks pinned there goes again
	// without that CPU (the redo label), while CPUs outside the local
	// group are left; out_balanced then backs the interval off as
	// all-pinned (the flag stays set across the redo).
	for {
		if !s.shouldWeBalance(e) {
			*cont = false
			return s.lbOutBalanced(e, r.cpu, idle)
		}
		sds, bi := s.findBusiestGroup(e)
		if sds == nil {
			return s.lbOutBalanced(e, r.cpu, idle)
		}
		busiest = s.findBusiestQueue(e, st.groups[bi])
		if busiest < 0 {
			return s.lbOutBalanced(e, r.cpu, idle)
		}
		e.src = busiest
		src = s.cpus[busiest]
		moved = 0
		if s.knobs.AllPinnedEarly {
			e.flags |= lbfAllPinned
		}
		if src.nrRunning() <= 1 {
			break
		}
		e.flags |= lbfAllPinned
		e.loopMax = s.cfg.NrMigrate
		if n := src.nrRunning(); n < e.loopMax {
			e.loopMax = n
		}
		for {
			n := s.detachAttach(e, source)
			moved += n
			if e.flags&lbfNeedBreak != 0 {
				e.flags &^= lbfNeedBreak
				continue
			}
			// Tasks dst may not run on that another CPU of the local
			// group may: go on from the same source to that CPU
			// (more_balance, not redo), dst left out of the pass.
			if e.flags&lbfDstPinned != 0 && e.Imbalance > 0 {
				e.cpus[e.DstCPU] = false
				e.DstCPU = e.newDstCPU
				e.flags &^= lbfDstPinned
				e.loop, e.loopBrk = 0, 32
				continue
			}
			break
		}
		// We failed to reach balance because of affinity: the parent
		// domain's group gets the imbalance flag, which classifies it
		// group_imbalanced there.
		if k, ok := s.parentGroupKey(st, r.cpu); ok && e.flags&lbfSomePinned != 0 && e.Imbalance > 0 {
			s.sgcImb[k] = true
		}
		if e.flags&lbfAllPinned == 0 {
			break
		}
		e.cpus[busiest] = false
		if s.cpusWithin(e.cpus, st.groups[0].BalanceMask) {
			return s.outAllPinned(st, idle)
		}
		e.loop, e.loopBrk = 0, 32
	}
	if moved == 0 {
		s.stats.LBFailed++
		if idle != CPUNewlyIdle {
			st.nrBalanceFailed++
		}
		e.NrBalanceFailed = st.nrBalanceFailed
		if s.pol.NeedActiveBalance(&e.LBEnv) || s.reducedCapacitySource(e, src) {
			// The stopper can only be sent for a current task that may
			// run on dst (whatever its class: an RT one is preempted by
			// the stopper too); when it may not (a per-CPU kthread, or
			// the idle task), load_balance leaves by out_one_pinned: no
			// kick, the failure count kept, the interval backed off.
			// Before v5.12 (8a41dfcda7a3) the flag is set on the way out.
			if src.curr == nil || !src.curr.allowed(r.cpu) {
				return s.outOnePinned(st, idle, e.flags&lbfAllPinned != 0 || !s.knobs.AllPinnedEarly)
			}
			if !src.activeBalance {
				src.activeBalance = true
				s.stats.ActiveBalances++
				s.push(event{t: s.now + s.cfg.StopperLatencyNS, kind: evActive, cpu: int32(busiest), a: int32(r.cpu)})
			}
		}
	} else {
		st.nrBalanceFailed = 0
		s.stats.LBMoved += int64(moved)
		if idle == CPUIdle {
			s.stats.LBGainedIdle += int64(moved)
		}
	}
	st.balanceInterval = int64(sd.MinInterval)
	return moved
}

// hNrBalance is the count of r's CFS tasks the load balancer reads:
// cfs.h_nr_running, which counts delayed-dequeue tasks, until v6.14's
// h_nr_runnable (Knobs.HNrRunnable) left them out.
func (s *Sim) hNrBalance(r *rq) int {
	if s.knobs.HNrRunnable {
		return r.nrCFS
	}
	return r.nrCFS + r.nrDelayed
}

// reducedCapacitySource is need_active_balance()'s rule for a source CPU
// slowed by other classes (every kernel the policies model): an idle
// destination takes the only CFS task of a source whose capacity is
// reduced, when the destination has more.
func (s *Sim) reducedCapacitySource(e *lbRun, src *rq) bool {
	dst := s.cpus[e.DstCPU]
	return e.Idle != CPUNotIdle && s.hNrBalance(src) == 1 && checkCPUCapacity(src, e.ImbalancePct) &&
		src.cpuCapacity*e.ImbalancePct < dst.cpuCapacity*100
}

// lbOutBalanced is load_balance()'s out_balanced label for e's pass on
// cpu: balanced although affinity may have stood in the way, so the
// parent's group loses its imbalance flag unless every task was pinned
// (the flag stays set across a redo), then outBalanced.
func (s *Sim) lbOutBalanced(e *lbRun, cpu int, idle IdleType) int {
	allPinned := e.flags&lbfAllPinned != 0
	if k, ok := s.parentGroupKey(e.st, cpu); ok && !allPinned {
		delete(s.sgcImb, k)
	}
	return s.outBalanced(e.st, idle, allPinned)
}

// parentGroupKey is sd->parent->groups->sgc for cpu's domain st: the
// parent domain's group holding cpu; ok false at the top domain.
func (s *Sim) parentGroupKey(st *sdState, cpu int) (sgcKey, bool) {
	p := st.sd.Parent
	if p == nil {
		return sgcKey{}, false
	}
	for _, x := range s.cpus[cpu].sd {
		if x.sd == p {
			return sgcKey{p.Level, x.groups[0].ID}, true
		}
	}
	return sgcKey{}, false
}

// outBalanced is the out_balanced/out_one_pinned exit: reset the failure
// count and back the interval off (not for newidle passes).
func (s *Sim) outBalanced(st *sdState, idle IdleType, allPinned bool) int {
	s.stats.LBBalanced++
	st.nrBalanceFailed = 0
	return s.outOnePinned(st, idle, allPinned)
}

// outOnePinned is the out_one_pinned exit, which out_balanced falls into:
// back the interval off (not for newidle passes).
func (s *Sim) outOnePinned(st *sdState, idle IdleType, allPinned bool) int {
	if idle == CPUNewlyIdle {
		return 0
	}
	if (allPinned && st.balanceInterval < 512) || st.balanceInterval < int64(st.sd.MaxInterval) {
		st.balanceInterval *= 2
	}
	return 0
}

// cpusWithin reports whether the CPUs set in mask are all in span
// (cpumask_subset).
func (s *Sim) cpusWithin(mask []bool, span []int) bool {
	for c, on := range mask {
		if on && !inSpan(span, c) {
			return false
		}
	}
	return true
}

// endLBRun releases the newest newLBRun's storage.
func (s *Sim) endLBRun() { s.lbDepth-- }

func (s *Sim) outAllPinned(st *sdState, idle IdleType) int { return s.outBalanced(st, idle, true) }

// findBusiestGroup is find_busiest_group(): update_sd_lb_stats, the
// policy's decision and calculate_imbalance. It returns the statistics
// and the busiest group's index, or nil when balanced.
func (s *Sim) findBusiestGroup(e *lbRun) (*SDStats, int) {
	sc := e.scratch
	e.sumUtil = 0 // per pass: a redo starts again
	sc.sds = SDStats{BusiestIdx: -1}
	sds := &sc.sds
	child := e.st.sd.Child
	sds.PreferSibling = child != nil && child.Flags&model.SDPreferSibling != 0
	if cap(sc.stats) < len(e.st.groups) {
		sc.stats = make([]SGStats, len(e.st.groups))
	}
	stats := sc.stats[:len(e.st.groups)]
	clear(stats)
	overload, overutilized := false, false
	// update_group_capacity for the local group: at the lowest domain it
	// is update_cpu_capacity (higher levels sum the CPUs' values, which
	// the group statistics below do).
	if child == nil && (e.Idle != CPUNewlyIdle || s.jiffies() >= e.st.capNextUpdate) {
		j := s.msecsToJiffies(e.st.balanceInterval)
		e.st.capNextUpdate = s.jiffies() + min(max(j, 1), s.maxLBInterval)
		s.updateCPUCapacity(s.cpus[e.DstCPU])
	}
	// capacity_of(dst_cpu) as the groups' tests read it: after the
	// update above (and unchanged until find_busiest_queue).
	e.DstCapacity = s.cpus[e.DstCPU].cpuCapacity
	for i, g := range e.st.groups {
		sgs := &stats[i]
		s.updateSGLBStats(e, g, sgs, i == 0)
		if s.hook != nil {
			if i == 0 {
				sds.Local = sgs
			}
			s.hook.AdjustGroup(&e.LBEnv, sds, sgs, i == 0)
		}
		if sgs.Overload {
			overload = true
		}
		if sgs.Overutilized {
			overutilized = true
		}
		if i == 0 {
			sds.Local = sgs
		} else if s.pol.PickBusiest(&e.LBEnv, sds, sgs) {
			sds.Busiest, sds.BusiestIdx = sgs, i
		}
		sds.TotalLoad += sgs.GroupLoad
		sds.TotalCapacity += sgs.GroupCapacity
		e.sumUtil += sgs.GroupUtil
	}
	if e.st.sd.Parent == nil {
		s.rdOverload = overload
	}
	s.noteOverutilized(e.st.sd.Parent == nil, overutilized)
	s.updateIdleCPUScan(e)
	if s.easBalanced() || s.pol.Decide(&e.LBEnv, sds) != ForceBalance {
		return nil, -1
	}
	e.SrcGroupType = sds.Busiest.GroupType
	s.pol.CalculateImbalance(&e.LBEnv, sds)
	if e.Imbalance == 0 {
		return nil, -1
	}
	return sds, sds.BusiestIdx
}

// updateSGLBStats is update_sg_lb_stats() (§3.6); group capacity is
// Σ capacity_of(), which RT pressure lowers (updateCPUCapacity).
func (s *Sim) updateSGLBStats(e *lbRun, g *model.SchedGroup, sgs *SGStats, local bool) {
	for _, c := range g.Span {
		if !e.cpus[c] {
			continue
		}
		r := s.cpus[c]
		sgs.GroupLoad += s.cpuLoad(c)
		sgs.GroupUtil += s.cpuUtil(c)
		sgs.GroupRunnable += s.cpuRunnable(c)
		sgs.SumHNrRunning += uint32(s.hNrBalance(r))
		n := r.nrRunning()
		sgs.SumNrRunning += uint32(n)
		if n > 1 {
			sgs.Overload = true
		}
		if n == 0 && r.idle() {
			sgs.IdleCPUs++
		}
		sgs.GroupCapacity += r.cpuCapacity
		if sgs.MinCapacity == 0 || r.cpuCapacity < sgs.MinCapacity {
			sgs.MinCapacity = r.cpuCapacity
		}
		sgs.MaxCapacity = max(sgs.MaxCapacity, r.cpuCapacity)
		if s.eas != nil && !sgs.Overutilized && s.cpuOverutilized(c) {
			sgs.Overutilized = true // SG_OVERUTILIZED
		}
		if e.SDFlags&model.SDAsymCPUCapacity != 0 {
			// A misfit task (misfit.go); from v5.5 not looked for in
			// the local group.
			if s.misfitOn && !(s.misfitV6 && local) && sgs.MisfitLoad < r.misfitTaskLoad {
				sgs.MisfitLoad = r.misfitTaskLoad
				sgs.Overload = true
			}
		} else if !local && e.Idle != CPUNotIdle && s.reducedCapMisfit && s.hNrBalance(r) == 1 &&
			checkCPUCapacity(r, e.ImbalancePct) && sgs.MisfitLoad < s.cpuLoad(c) {
			// A non-local CPU running one CFS task with its capacity
			// reduced (RT pressure) by more than the domain's
			// imbalance_pct, seen by an idle balancer: a misfit by its
			// load (sched_reduced_capacity, v6.0; policies with
			// MisfitLoadSym).
			sgs.MisfitLoad = s.cpuLoad(c)
		}
	}
	sgs.GroupWeight = uint32(g.Weight)
	sgs.Flags = g.Flags
	sgs.Cores = uint32(g.Cores)
	if s.knobs.RunnableLoad {
		for _, c := range g.Span {
			if e.cpus[c] {
				sgs.RunnableLoad += s.runnableLoad(s.cpus[c])
			}
		}
	}
	// group_imbalanced(): the group's sgc->imbalance, at every level.
	sgs.Imbalanced = s.sgcImb[sgcKey{e.level, g.ID}]
	sgs.GroupType = s.pol.Classify(&e.LBEnv, sgs)
	if sgs.GroupType == GroupOverloaded && sgs.GroupCapacity > 0 {
		sgs.AvgLoad = sgs.GroupLoad * capacityScale / sgs.GroupCapacity
	}
}

// updateIdleCPUScan is update_idle_cpu_scan() (SIS_UTIL, v6.0): periodic
// passes at the LLC-sized domain set the LLC's idle-scan budget from its
// average utilisation.
func (s *Sim) updateIdleCPUScan(e *lbRun) {
	if !s.knobs.SISUtil || e.Idle == CPUNewlyIdle {
		return
	}
	sh := s.llc[e.DstCPU]
	if e.SpanWeight != sh.weight {
		return
	}
	llcW := uint64(sh.weight)
	x := e.sumUtil / llcW
	pct := e.ImbalancePct
	tmp := x * x * pct * pct / (10000 * capacityScale)
	if tmp > capacityScale {
		tmp = capacityScale
	}
	sh.nrIdleScan = int((capacityScale - tmp) * llcW / capacityScale)
}

// findBusiestQueue is find_busiest_queue() (§3.9).
func (s *Sim) findBusiestQueue(e *lbRun, g *model.SchedGroup) int {
	// The kernel starts from load 0 over capacity 1 and util 0: a CPU
	// whose load (or util) is 0 is never the busiest.
	best := -1
	bestLoad, bestCap := uint64(0), uint64(1)
	var bestUtil, bestMisfit uint64
	bestNr := 0
	dstCap := e.DstCapacity
	for _, c := range g.Span {
		if !e.cpus[c] {
			continue
		}
		r := s.cpus[c]
		nr := s.hNrBalance(r)
		if nr == 0 {
			continue
		}
		if !s.misfitV6 && e.SrcGroupType == GroupMisfitTask {
			// Up to v5.4: the CPU of the biggest misfit.
			if r.misfitTaskLoad > bestMisfit {
				best, bestMisfit = c, r.misfitTaskLoad
			}
			continue
		}
		if e.SDFlags&model.SDAsymCPUCapacity != 0 && s.misfitOn {
			// A lone task is not pulled to a CPU of less capacity
			// (v4.20's misfit series; not clearly more, capacity_greater,
			// from v5.13 [~ver]: the policies with v6.0's
			// reduced-capacity misfit).
			n, smaller := nr, dstCap < r.cpuCapacity
			if !s.misfitV6 {
				n = r.nrRunning()
			} else if s.reducedCapMisfit {
				smaller = !capacityGreater(dstCap, r.cpuCapacity)
			}
			if n == 1 && smaller {
				continue
			}
		}
		switch e.MigrationType {
		case MigrateLoad:
			// cpu_load() against the imbalance, scaled by capacity_of()
			// against the other CPUs: a CPU that other classes slow is
			// the busier, and its single task may move.
			load := s.cpuLoad(c)
			if nr == 1 && int64(load) > e.Imbalance && !checkCPUCapacity(r, e.ImbalancePct) {
				continue
			}
			if load*bestCap > bestLoad*r.cpuCapacity {
				best, bestLoad, bestCap = c, load, r.cpuCapacity
			}
		case MigrateUtil:
			u := s.cpuUtil(c)
			if s.knobs.RunnableBoost {
				u = s.cpuUtilBoost(c)
			}
			if nr <= 1 {
				continue
			}
			if u > bestUtil {
				best, bestUtil = c, u
			}
		case MigrateTask:
			if nr > bestNr {
				best, bestNr = c, nr
			}
		case MigrateMisfit:
			if r.misfitTaskLoad > bestMisfit {
				best, bestMisfit = c, r.misfitTaskLoad
			}
		}
	}
	return best
}

// capacityGreater is capacity_greater(): a over b by more than about 5 %.
func capacityGreater(a, b uint64) bool { return a*1024 > b*1078 }

// cfsTasksTailFirst lists a rq's CFS tasks from the tail of cfs_tasks
// (least recently enqueued or picked first), in ts's storage.
func (s *Sim) cfsTasksTailFirst(ts []*simTask, r *rq) []*simTask {
	ts = ts[:0]
	if r.curr != nil && !r.curr.rt {
		ts = append(ts, r.curr)
	}
	ts = append(ts, r.tree...)
	slices.SortStableFunc(ts, func(a, b *simTask) int { return cmp.Compare(a.mru, b.mru) })
	return ts
}

// canMigrateTask is can_migrate_task() (§3.10): per-CPU kthreads stay, the
// running task stays (unless active balance), cache-hot tasks stay until
// the domain failed more than cache_nice_tries times.
func (s *Sim) canMigrateTask(e *lbRun, p *simTask, src *rq) bool {
	if p.delayed && s.knobs.DelayedMigrateLoadOnly && e.MigrationType != MigrateLoad {
		// Blocked, still queued (delayed dequeue): from v6.14 moved only
		// to migrate load (the stopper's lb_env leaves migrate_load, the
		// zero value), and the test comes first, before the pinned flags;
		// it stays delayed where it goes.
		return false
	}
	if s.knobs.MigrateEligibleFirst && s.eevdf && st(e).nrBalanceFailed == 0 {
		// From v6.14 a task not eligible where it waits is left there
		// while the domain's balancing has not failed, if dst has
		// entities queued (it would not be eligible there either).
		if dst := s.cpus[e.DstCPU]; dst.nrCFS+dst.nrDelayed > 0 && !src.eligible(p) {
			return false
		}
	}
	if p.pinned >= 0 {
		return false
	}
	if !p.allowed(e.DstCPU) {
		e.flags |= lbfSomePinned
		// Remember a CPU of the local group p may run on, to revisit p
		// if the other tasks cannot meet the imbalance; not for a
		// newly idle pass, once per iteration, nor in active balance.
		if e.Idle == CPUNewlyIdle || e.flags&(lbfDstPinned|lbfActiveLB) != 0 {
			return false
		}
		for _, c := range e.st.groups[0].BalanceMask {
			if e.cpus[c] && p.allowed(c) {
				e.flags |= lbfDstPinned
				e.newDstCPU = c
				break
			}
		}
		return false
	}
	e.flags &^= lbfAllPinned
	if src.curr == p {
		return false
	}
	if e.flags&lbfActiveLB != 0 {
		return true
	}
	if !s.taskHot(e, p, src) || st(e).nrBalanceFailed > e.CacheNiceTries {
		return true
	}
	return false
}

func st(e *lbRun) *sdState { return e.st }

// taskHot is task_hot(): SMT siblings share caches; the src's next/last
// buddy is hot when dst has tasks; otherwise hot when it ran within
// sysctl_sched_migration_cost.
func (s *Sim) taskHot(e *lbRun, p *simTask, src *rq) bool {
	if p.rt {
		return false
	}
	if e.SDFlags&model.SDShareCPUCapacity != 0 {
		return false
	}
	if s.cpus[e.DstCPU].nrRunning() > 0 && (src.next == p || src.last == p) {
		return true
	}
	if p.execStart < 0 {
		return false
	}
	return s.now-p.execStart < s.cfg.MigrationCostNS
}

// detachAttach is detach_tasks() followed by attach_tasks().
func (s *Sim) detachAttach(e *lbRun, source int) int {
	src, dst := s.cpus[e.src], s.cpus[e.DstCPU]
	if e.Imbalance <= 0 {
		return 0
	}
	var picked []*simTask
	e.scratch.cands = s.cfsTasksTailFirst(e.scratch.cands, src)
	cands := e.scratch.cands
	for _, p := range cands {
		if e.Idle != CPUNotIdle && src.nrRunning()-len(picked) <= 1 {
			break
		}
		e.loop++
		if e.loop > e.loopMax {
			break
		}
		if e.loop > e.loopBrk {
			e.loopBrk += 32
			e.flags |= lbfNeedBreak
			break
		}
		if !s.canMigrateTask(e, p, src) {
			src.toHead(p)
			continue
		}
		dt := DetachTask{Load: max(s.taskHLoad(p), 1), UtilEst: p.utilEstValue()}
		if !s.pol.AcceptForDetach(&e.LBEnv, dt) {
			src.toHead(p)
			continue
		}
		picked = append(picked, p)
		if s.cfg.Preemption && e.Idle == CPUNewlyIdle {
			break
		}
		if e.Imbalance <= 0 {
			break
		}
	}
	// detach_tasks list_add()s each task it detaches at the head of
	// env->tasks and attach_tasks takes them from the head: they reach
	// dst in the reverse of the order they left src. With equal vruntimes
	// (a herd woken together, all at min_vruntime less the sleeper
	// credit) that is dst's run order: the task detached last (the most
	// recently queued or run of those moved) runs first there.
	s.moveTasks(picked, src, dst, source)
	return len(picked)
}

// moveTasks detaches picked from src, then attaches them to dst in the
// reverse order, as detach_tasks and attach_tasks do. Each side updates its
// run queue's clock once (DEQUEUE_NOCLOCK, ENQUEUE_NOCLOCK), so only the
// first update_curr of each finds time run and ends with the reschedule
// rule (Sim.noClock for the others).
func (s *Sim) moveTasks(picked []*simTask, src, dst *rq, source int) {
	resched := false
	for i, p := range picked {
		s.noClock = i > 0
		resched = s.detachQueued(p, src, dst, source) || resched
	}
	for i := len(picked) - 1; i >= 0; i-- {
		s.noClock = i < len(picked)-1
		s.attachQueued(picked[i], dst)
	}
	s.noClock = false
	if resched {
		s.lbResched(src, dst)
	}
}

// lbResched is resched_curr(src) from the balancer's dequeue on dst (an
// IPI; its delay drawn as a remote wakeup's): made only if the pick
// switches src's task.
func (s *Sim) lbResched(src, dst *rq) {
	if src.reschedPending || src.currOnRQ() == nil || s.eevdfPick(src) == src.curr {
		return
	}
	w, irq := s.wakerCPU1, s.irqCPU1
	s.wakerCPU1, s.irqCPU1 = dst.cpu+1, 0
	s.reschedLater(src)
	s.wakerCPU1, s.irqCPU1 = w, irq
}

// migrateQueued moves a queued (not running) task between run queues:
// detach_task + attach_task, with PELT detached/attached at once and
// vruntime re-based.
func (s *Sim) migrateQueued(p *simTask, src, dst *rq, source int) {
	s.moveTasks([]*simTask{p}, src, dst, source)
}

// detachQueued is detach_task(): p leaves src (dequeued, its vruntime
// made relative to src's min_vruntime), counted as a migration to dst.
// resched: the dequeue's update_curr asked to reschedule src's task
// (lbResched, once the tasks are attached).
func (s *Sim) detachQueued(p *simTask, src, dst *rq, source int) (resched bool) {
	s.updateCurr(src)
	// Under EEVDF the dequeue's update_curr ends with the reschedule rule,
	// p still counted.
	resched = s.eevdf && !s.noClock && s.eevdfReschedCurr(src, src.nrCFS+src.nrDelayed)
	s.updateTaskLoad(src, p)
	if s.eevdf {
		s.eevdfUpdateLag(src, p)
		if s.knobs.PlaceRelDeadline {
			p.deadline -= p.vruntime
			p.relDeadline = true
		}
	}
	src.treeRemove(p)
	if src.next == p {
		src.next = nil
	}
	if src.last == p {
		src.last = nil
	}
	if p.delayed {
		// Its util_est left at its delayed dequeue.
		src.nrDelayed--
	} else {
		src.nrCFS--
		if src.utilEst >= p.utilEstEnq {
			src.utilEst -= p.utilEstEnq
		} else {
			src.utilEst = 0
		}
	}
	src.loadWeight -= p.weight
	src.avg.detach(&p.avg, p.weight)
	s.updateRQLoad(src)
	if !s.eevdf {
		p.vruntime -= src.minVruntime
		s.updateMinVruntime(src)
	}
	p.execStart = -1
	cpu, cur := dst.cpu, (*simTask)(nil)
	if s.lb.cpu >= 0 {
		cpu, cur = s.lb.cpu, s.lb.cur
	}
	s.emitMigrate(p, src.cpu, dst.cpu, cpu, cur)
	switch source {
	case MigrationSourcePeriodic:
		s.stats.MigrationsPeriodic++
	case MigrationSourceNewidle:
		s.stats.MigrationsNewidle++
	case MigrationSourceNohz:
		s.stats.MigrationsNohz++
	case MigrationSourceAffinity:
		s.stats.MigrationsAffinity++
	default:
		s.stats.MigrationsActive++
	}
	return resched
}

// attachQueued is attach_task(): p, detached, is enqueued on dst, which
// checks it for a wakeup preemption.
func (s *Sim) attachQueued(p *simTask, dst *rq) {
	s.updateRQLoad(dst)
	s.enqueue(dst, p, enqMigrated)
	s.wakeupPreempt(dst, p)
}

// activeBalanceStop is active_load_balance_cpu_stop(): the stopper on the
// busiest CPU preempts its current task and pushes one migratable task
// (scanning from the tail of cfs_tasks) to dst.
func (s *Sim) activeBalanceStop(busiest, dstCPU int) {
	// The stopper (migration/N) moves the task, where the workload has
	// that thread (else pid 0).
	defer s.endBalancing(s.balancingOn(busiest, s.stopperOf(busiest)))
	src := s.cpus[busiest]
	src.activeBalance = false
	if src.nrCFS <= 1 && src.curr == nil || src.nrRunning() < 1 {
		return
	}
	dst := s.cpus[dstCPU]
	var sd *sdState
	for _, x := range dst.sd {
		if inSpan(x.sd.Span, busiest) {
			sd = x
			break
		}
	}
	if sd == nil {
		return
	}
	// active_load_balance_cpu_stop's lb_env: the domain of dst that spans
	// busiest, CPU_IDLE, LBF_ACTIVE_LB.
	e := s.newLBRun(sd, dstCPU, CPUIdle)
	defer s.endLBRun()
	e.flags = lbfActiveLB
	// The stopper preempts the running task, which becomes migratable.
	preempted := src.curr != nil && !src.curr.rt
	if preempted {
		s.preemptForStopper(src)
	}
	e.scratch.cands = s.cfsTasksTailFirst(e.scratch.cands, src)
	for _, p := range e.scratch.cands {
		if p == src.curr || !s.canMigrateTask(e, p, src) {
			continue
		}
		sd.nrBalanceFailed = 0
		s.migrateQueued(p, src, dst, -1)
		break
	}
	if src.curr == nil && (preempted || src.nrRunning() > 0) {
		// The stopper sleeps: __schedule picks from the classes below
		// it, fair's balance running newidle_balance if nothing is
		// left, then the idle task (do_idle: the tick stops).
		s.schedule(src, "")
		if src.curr == nil && src.stopperShown != nil {
			s.emitSwitch(src, nil, nil, "")
		}
	}
}

// preemptForStopper switches the current task out in state R+ (the
// stopper runs) and leaves the CPU to be rescheduled after the push.
func (s *Sim) preemptForStopper(r *rq) {
	prev := r.curr
	s.updateCurr(r)
	s.updateTaskLoad(r, prev)
	prev.state = tsQueued
	r.treeInsert(prev)
	s.updateRT(r)
	r.curr = nil
	r.gen++
	s.clearResched(r)
	// The output names the CPU's stopper (migration/N) where the workload
	// has it, as the kernel's trace does: switched to here, and out of
	// (state S) at the CPU's next switch (emitSwitch).
	st := s.stopperOf(r.cpu)
	s.emitSwitch(r, prev, st, "R")
	r.stopperShown = st
}

// stopperOf is the workload's stopper thread of CPU c (migration/c), nil
// if the trace never showed it.
func (s *Sim) stopperOf(c int) *simTask {
	if s.stoppers == nil {
		s.stoppers = make([]*simTask, s.ncpu)
		for _, t := range s.tasks {
			if t.stop && t.pinned >= 0 && int(t.pinned) < s.ncpu && s.stoppers[t.pinned] == nil {
				s.stoppers[t.pinned] = t
			}
		}
	}
	if c < 0 || c >= len(s.stoppers) {
		return nil
	}
	return s.stoppers[c]
}

// updateNewidleCost is update_newidle_cost(): a pass costlier than the
// domain's max_newidle_lb_cost raises it; otherwise, once a second (HZ
// jiffies), it decays by 253/256. It reports whether it decayed. With
// NI_RANDOM a pass (cost > 0) also counts as a call, with success its
// weight when it pulled (0 from rebalance_domains' visit).
func (s *Sim) updateNewidleCost(st *sdState, cost, success int64) bool {
	if cost > 0 && s.knobs.NIRandom {
		st.updateNewidleStats(success)
	}
	if cost > st.maxNewidleLbCost {
		st.maxNewidleLbCost = cost
		if s.knobs.NewidleBumpOnFail {
			st.maxNewidleLbCost = min(cost, s.cfg.MigrationCostNS+200)
		}
		st.lastDecayMaxLbCost = s.jiffies()
		return false
	}
	if s.jiffies() > st.lastDecayMaxLbCost+int64(s.cfg.HZ) {
		st.maxNewidleLbCost = st.maxNewidleLbCost * 253 / 256
		st.lastDecayMaxLbCost = s.jiffies()
		return true
	}
	return false
}

// updateNewidleStats is update_newidle_stats(): the success ratio over
// the last ~1024 calls, halved each time the calls reach 1024.
func (st *sdState) updateNewidleStats(success int64) {
	st.niCall++
	st.niSuccess += success
	if st.niCall >= 1024 {
		st.niRatio = st.niSuccess
		st.niCall /= 2
		st.niSuccess /= 2
	}
}

// newidleBalance is newidle_balance() with the v5.16 gate (§3.2). The
// modelled cost of each load_balance feeds max_newidle_lb_cost. On its
// way out it moves the CPU's next periodic balance forward to when the
// idle intervals of the domains it looked at fall due ("Move the next
// balance forward", update_next_balance): a CPU going idle with tasks
// left to pull is balanced as CPU_IDLE within a jiffy or two, by the nohz
// ILB (FIDELITY.md round 24).
func (s *Sim) newidleBalance(r *rq) {
	if len(r.sd) == 0 {
		return
	}
	r.idleStamp = s.now
	nextBalance := s.jiffies() + int64(s.cfg.HZ)
	defer s.moveNextBalance(r, &nextBalance)
	sd0 := r.sd[0]
	skip := !s.rdOverload || r.avgIdle < sd0.maxNewidleLbCost
	if !s.knobs.NewidleGate516 {
		skip = !s.rdOverload || r.avgIdle < s.cfg.MigrationCostNS
	}
	if skip {
		s.updateNextBalance(sd0, &nextBalance)
		s.stats.NewidleSkipped++
		s.nohzNewidleBalance(r)
		return
	}
	s.updateBlockedAverages(r)
	var curCost int64
	pulled := 0
	for _, st := range r.sd {
		s.updateNextBalance(st, &nextBalance)
		if r.avgIdle < curCost+st.maxNewidleLbCost {
			break
		}
		if st.sd.Flags&model.SDBalanceNewidle != 0 {
			weight := int64(1)
			if s.knobs.NIRandom {
				// NI_RANDOM (33cf66d88306): a 1024-sided die; the pass
				// runs with the domain's success rate, and a success
				// counts 1/rate.
				d1k := int64(s.niRand() % 1024)
				weight = 1 + st.niRatio
				if d1k > weight {
					st.updateNewidleStats(0)
					continue
				}
				weight = (1024 + weight/2) / weight
			}
			cont := true
			n := s.loadBalance(r, st, CPUNewlyIdle, &cont, MigrationSourceNewidle)
			pulled += n
			cost := s.cfg.NewidleC0NS + s.cfg.NewidleC1NS*int64(st.sd.SpanWeight) + s.cfg.NewidleC2NS*int64(n)
			// The kernel measures the pass in wall time (sched_clock_cpu):
			// a host deschedule of the vCPU during it is part of its cost.
			cost += s.stallWithin(r.cpu, s.now, cost)
			if n == 0 && s.knobs.NewidleBumpOnFail {
				cost = 3 * st.maxNewidleLbCost / 2
			}
			success := int64(0)
			if n > 0 {
				success = weight
			}
			s.updateNewidleCost(st, cost, success)
			curCost += cost
		}
		if pulled > 0 || r.nrRunning() > 0 {
			break
		}
	}
	if curCost > r.maxIdleBalanceCost {
		r.maxIdleBalanceCost = curCost
	}
	if pulled > 0 {
		r.idleStamp = 0
	} else {
		s.nohzNewidleBalance(r)
	}
}

// nohzNewidleBalance is nohz_newidle_balance(): a CPU going idle for long
// enough (avg_idle at least sysctl_sched_migration_cost) while the idle
// CPUs' blocked load is due for a refresh refreshes it itself as it enters
// idle (NOHZ_NEWILB_KICK, run by nohz_run_idle_balance), with no IPI.
func (s *Sim) nohzNewidleBalance(r *rq) {
	if r.avgIdle < s.cfg.MigrationCostNS {
		return
	}
	if !s.nohz.hasBlocked || s.now < s.nohz.nextBlocked {
		return
	}
	r.newILB = true
}

// noteWakeOnIdle updates avg_idle when a task is woken onto a CPU whose
// idle_stamp is set (ttwu_do_activate).
func (s *Sim) noteWakeOnIdle(r *rq) {
	if r.idleStamp == 0 {
		return
	}
	delta := s.now - r.idleStamp
	r.avgIdle += (delta - r.avgIdle) / 8
	if max := 2 * r.maxIdleBalanceCost; r.avgIdle > max {
		r.avgIdle = max
	}
	r.idleStamp = 0
}

// The nohz kick flags (NOHZ_STATS_KICK, NOHZ_BALANCE_KICK, NOHZ_NEXT_KICK).
const (
	kickStats   = 1
	kickBalance = 2
	kickNext    = 4
)

// nohzBalancerKick is nohz_balancer_kick() on a busy CPU's tick (§3.3).
func (s *Sim) nohzBalancerKick(r *rq) {
	if s.nohz.idle[r.cpu] {
		s.nohz.idle[r.cpu] = false
		s.nohz.nrCPUs--
	}
	if s.nohz.nrCPUs == 0 {
		return
	}
	flags := 0
	if s.nohz.hasBlocked && s.now > s.nohz.nextBlocked {
		flags = kickStats
	}
	asymKick := s.asymCap && s.dom.Kernel.AtLeast(5, 1) && s.dom.CPUs[r.cpu].AsymCPUCapacity != nil
	if s.jiffies() >= s.nohz.nextBalance {
		if r.nrRunning() >= 2 || !s.dom.Kernel.AtLeast(5, 1) && r.misfitTaskLoad > 0 {
			// (Up to v5.0 any misfit kicks here too.)
			flags = kickStats | kickBalance
		} else if len(r.sd) > 0 && s.hNrBalance(r) >= 1 && checkCPUCapacity(r, uint64(r.sd[0].sd.ImbalancePct)) {
			// A CFS task on a CPU whose capacity RT pressure reduced:
			// the idle balancer may find it a better CPU.
			flags = kickStats | kickBalance
		} else if asymKick {
			// From v5.1 a CPU of an asymmetric domain kicks for a
			// misfit a bigger CPU may take, and skips the LLC test:
			// such machines balance for capacity, not cache.
			if s.checkMisfitStatus(r) {
				flags = kickStats | kickBalance
			}
		} else if llc := s.dom.CPUs[r.cpu].LLC; llc != nil {
			busy := 0
			for _, c := range llc.Span {
				if !s.nohz.idle[c] {
					busy++
				}
			}
			if busy > 1 {
				flags = kickStats | kickBalance
			}
		}
	}
	if s.nohz.needsUpdate {
		// A CPU entered nohz idle since the last update: the ILB
		// recomputes nohz.next_balance (NOHZ_NEXT_KICK).
		flags |= kickNext
	}
	if flags == 0 {
		return
	}
	if flags&kickBalance != 0 {
		s.nohz.nextBalance = s.jiffies() + 1
	}
	ilb := -1
	for c := 0; c < s.ncpu; c++ {
		if s.nohz.idle[c] && c != r.cpu && s.cpus[c].idle() {
			ilb = c
			break
		}
	}
	if ilb < 0 {
		return
	}
	// kick_ilb ORs the flags into the ILB's; only the first kick sends
	// the IPI.
	pending := s.nohz.kickFlags[ilb] != 0
	s.nohz.kickFlags[ilb] |= flags
	if pending {
		return
	}
	s.stats.NohzKicks++
	// The kick is an IPI to an idle CPU: on a host that runs fewer vCPUs
	// than want to run, the kicked one balances only once the host runs
	// it (kickIdle's idle exit, a remote wakeup's).
	d := s.cfg.IPILatencyNS
	if s.cfg.NohzKickIdleExit && s.hostContended() {
		d = max(d, s.idleExitDelay(s.cpus[ilb], true))
	}
	s.push(event{t: s.now + d, kind: evNohzKick, cpu: int32(ilb)})
}

// nohzCSD is nohz_csd_func(): the kick's IPI lands on the ILB, which
// takes the kick's flags and balances only if it is still idle
// (idle_cpu: nothing running or queued; the engine enqueues a wakee at
// once, so a pending wake list shows as queued). Work that reached it
// during the IPI drops the kick; the next busy tick kicks again.
func (s *Sim) nohzCSD(ilb int) {
	if !s.cpus[ilb].idle() {
		s.nohz.kickFlags[ilb] = 0
		s.stats.NohzKicksDropped++
		return
	}
	s.nohzIdleBalance(ilb)
}

// nohzIdleBalance is _nohz_idle_balance() on the kicked ILB, with the
// flags its kicks left: refresh the blocked averages of idle CPUs
// (STATS), run their periodic balance as CPU_IDLE when due (BALANCE),
// from ilb+1 wrapping, ilb last; and set nohz.next_balance to the earliest
// of theirs.
func (s *Sim) nohzIdleBalance(ilb int) {
	defer s.endBalancing(s.balancingOn(ilb, s.cpus[ilb].curr))
	flags := s.nohz.kickFlags[ilb]
	s.nohz.kickFlags[ilb] = 0
	if flags&kickStats != 0 {
		s.nohz.hasBlocked = false
	}
	if flags&kickNext != 0 {
		s.nohz.needsUpdate = false
	}
	j := s.jiffies()
	next := j + 60*int64(s.cfg.HZ)
	visited, blocked := false, false
	for k := 1; k <= s.ncpu; k++ {
		c := (ilb + k) % s.ncpu
		r := s.cpus[c]
		if !s.nohz.idle[c] || !r.idle() {
			continue
		}
		if flags&kickStats != 0 {
			s.updateBlockedAverages(r)
			// rq->has_blocked_load: signals not yet decayed to 0 keep
			// nohz.has_blocked set, so the refreshes go on every 32 ms.
			blocked = blocked || r.avg.loadAvg != 0 || r.avg.utilAvg != 0 || r.avg.runnableAvg != 0 || r.avgRT.utilAvg != 0
		}
		if flags&kickBalance != 0 && j >= r.nextBalance {
			s.rebalanceDomains(r, CPUIdle, MigrationSourceNohz)
		}
		if r.nextBalance < next {
			next = r.nextBalance
		}
		visited = true
	}
	// Any kick that visited an idle CPU sets nohz.next_balance to the
	// earliest of theirs.
	if visited {
		s.nohz.nextBalance = next
	}
	if flags&kickStats != 0 {
		s.nohz.nextBlocked = s.now + 32*1000000
	}
	if blocked {
		s.nohz.hasBlocked = true
	}
}

// runnableLoad is v5.4's cfs_rq runnable_load_avg: the load_avg of the
// queued CFS tasks (running one included), as last updated.
func (s *Sim) runnableLoad(r *rq) uint64 {
	var l uint64
	if r.curr != nil && !r.curr.rt {
		l += r.curr.avg.loadAvg
	}
	for _, p := range r.tree {
		l += p.avg.loadAvg
	}
	return l
}
