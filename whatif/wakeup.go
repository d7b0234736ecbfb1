package whatif

import "github.com/schedreplay/replay/model"

// cpuLoad is cpu_load(): the cfs_rq's load_avg as stored (blocked load
// included, not decayed at read time: staleness is part of the model).
func (s *Sim) cpuLoad(c int) uint64 { return s.cpus[c].avg.loadAvg }

// cpuRunnable is cpu_runnable().
func (s *Sim) cpuRunnable(c int) uint64 { return s.cpus[c].avg.runnableAvg }

// cpuUtil is cpu_util_cfs(): max(util_avg, util_est) capped at capacity.
func (s *Sim) cpuUtil(c int) uint64 {
	r := s.cpus[c]
	u := r.avg.utilAvg
	if r.utilEst > u {
		u = r.utilEst
	}
	if u > r.capacity {
		u = r.capacity
	}
	return u
}

// cpuUtilBoost is cpu_util_cfs_boost() (7d0583cf9ec7 "runnable
// boosting", v6.5, without util_est boosting, c2e164ac33f7, v6.6):
// max(util_avg, runnable_avg, util_est) capped at capacity. Contention
// (runnable above util) makes a CPU look as busy as its queue is.
func (s *Sim) cpuUtilBoost(c int) uint64 {
	r := s.cpus[c]
	u := max(r.avg.utilAvg, r.avg.runnableAvg, r.utilEst)
	return min(u, r.capacity)
}

// availableIdle is available_idle_cpu(): idle and (no vCPU preemption
// model) not preempted; a CPU with an idle exit in flight is not idle.
func (s *Sim) availableIdle(c int) bool {
	r := s.cpus[c]
	return r.idle() && !r.waking
}

func (s *Sim) domains(c int) []*model.SchedDomain { return s.dom.CPUs[c].Domains }

func (s *Sim) cpusShareCache(a, b int) bool { return s.dom.CPUs[a].LLCID == s.dom.CPUs[b].LLCID }

// smtSpan is cpu_smt_mask(c): the span of c's SMT domain
// (SD_SHARE_CPUCAPACITY), or c alone.
func smtSpan(d *model.Domains, c int) []int {
	for _, sd := range d.CPUs[c].Domains {
		if sd.Flags&model.SDShareCPUCapacity != 0 {
			return sd.Span
		}
	}
	return []int{c}
}

// smtActive is sched_smt_active(): some CPU has an SMT sibling.
func (s *Sim) smtActive() bool {
	s.initSMT()
	return s.smtOn
}

// smtSiblings is cpu_smt_mask(c) (the CPU itself included).
func (s *Sim) smtSiblings(c int) []int {
	s.initSMT()
	return s.smtSib[c]
}

func (s *Sim) initSMT() {
	if s.smtSib != nil {
		return
	}
	s.smtSib = make([][]int, s.ncpu)
	for c := 0; c < s.ncpu; c++ {
		s.smtSib[c] = smtSpan(s.dom, c)
		if len(s.smtSib[c]) > 1 {
			s.smtOn = true
		}
		if s.dom.CPUs[c].AsymCPUCapacity != nil {
			s.asymCap = true
		}
		for _, sd := range s.domains(c) {
			if sd.Flags&model.SDCluster != 0 {
				s.cluster = true
			}
		}
	}
}

// clusterActive is sched_cluster_active (v6.7) where the policy scans
// clusters first (Knobs.ClusterWakeup): some CPU has a domain flagged
// SD_CLUSTER, which only domains built by v6.7+ rules have.
func (s *Sim) clusterActive() bool {
	s.initSMT()
	return s.cluster && s.knobs.ClusterWakeup
}

// cpusShareResources is cpus_share_resources() (v6.7): a and b share
// their cluster, or their LLC on a machine without clusters.
func (s *Sim) cpusShareResources(a, b int) bool {
	return s.dom.CPUs[a].ShareID == s.dom.CPUs[b].ShareID
}

// asymCapActive is sched_asym_cpucap_active() where the policy places
// wakeups by capacity (Knobs.SelectIdleCapacity).
func (s *Sim) asymCapActive() bool {
	s.initSMT()
	return s.asymCap && s.knobs.SelectIdleCapacity
}

// fitsCapacity is fits_capacity(): util fits capacity with a 20 % margin.
func fitsCapacity(util, capacity uint64) bool { return util*1280 < capacity*1024 }

func inSpan(span []int, c int) bool {
	for _, x := range span {
		if x == c {
			return true
		}
	}
	return false
}

// recordWakee is record_wakee() on the waker (wakee_flips, decayed each
// second).
func (s *Sim) recordWakee(w, p *simTask) {
	recordWakeeFlip(&w.wakeeFlips, &w.wakeeFlipTS, &w.lastWakee, p.id, s.jiffies(), int64(s.cfg.HZ))
}

// recordWakeeFlip is record_wakee()'s bookkeeping of a waker's flips,
// decay stamp and last wakee, at jiffy j: halved once when more than hz
// jiffies passed since the stamp, one more when the wakee changed. The
// engine's and the wake shadow's (wakeshadow.go). halved and flipped say
// what it did, for counts that share the stamp and last wakee (flipAll).
func recordWakeeFlip(flips *uint32, decayTS *int64, last *int32, wakee int32, j, hz int64) (halved, flipped bool) {
	if j > *decayTS+hz {
		*flips >>= 1
		*decayTS = j
		halved = true
	}
	if *last != wakee {
		*last = wakee
		*flips++
		flipped = true
	}
	return halved, flipped
}

// flipAll does to each count in c what a recordWakeeFlip on a count
// sharing their stamp and last wakee did: the extraction's fit and the
// wake shadow keep one count per candidate start (flipCandidates).
func flipAll(c []uint32, halved, flipped bool) {
	for k := range c {
		if halved {
			c[k] >>= 1
		}
		if flipped {
			c[k]++
		}
	}
}

// wakeWide is wake_wide(): a one-to-many waker whose wakees also flip.
func (s *Sim) wakeWide(waker, p *simTask, wakerCPU int) bool {
	return wideFlips(waker.wakeeFlips, p.wakeeFlips, uint32(s.dom.CPUs[wakerCPU].LLCSize))
}

// wideFlips is wake_wide()'s test on the waker's and the wakee's flips,
// the LLC's size the factor.
func wideFlips(master, slave, factor uint32) bool {
	if master < slave {
		master, slave = slave, master
	}
	return !(slave < factor || master < slave*factor)
}

// selectTaskRqFair is select_task_rq_fair() (§5.2): the affine fast path
// (wake_affine then select_idle_sibling within the target's LLC) for
// wakeups, the find_idlest_cpu slow path for forks; energy-aware
// placement first where EAS runs. waker nil: an interrupt/timer wakeup
// on cpu.
func (s *Sim) selectTaskRqFair(p *simTask, prev, cpu int, waker *simTask, fork bool) int {
	newCPU := prev
	wantAffine := false
	flag := model.SDBalanceWake
	if fork {
		flag = model.SDBalanceFork
		newCPU = cpu
	} else {
		if s.eas != nil {
			if c := s.findEnergyEfficientCPU(p, prev, cpu); c >= 0 {
				return c
			}
		}
		wide := waker != nil && s.wakeWide(waker, p, cpu)
		wantAffine = !wide && !s.wakeCap(p, cpu, prev) && p.allowed(cpu)
	}
	var slow *model.SchedDomain
	for _, sd := range s.domains(cpu) {
		if wantAffine && sd.Flags&model.SDWakeAffine != 0 && inSpan(sd.Span, prev) {
			if cpu != prev {
				newCPU = s.wakeAffine(sd, p, cpu, prev, waker)
			}
			slow = nil
			break
		}
		if sd.Flags&flag != 0 {
			slow = sd
		} else if !wantAffine {
			break
		}
	}
	if slow != nil {
		if !fork {
			// find_idlest_cpu brings a wakee's util up to prev's last
			// update (sync_entity_load_avg) for the spare-capacity test.
			s.syncEntityLoadAvg(p, prev)
		}
		return findIdlestCPU(simFork{s, p}, slow, cpu, flag)
	}
	if fork {
		return newCPU
	}
	return s.selectIdleSibling(p, prev, newCPU, waker, cpu)
}

// syncEntityLoadAvg is sync_entity_load_avg(): a sleeping task's PELT
// averages brought up to its previous CPU's last update, before a
// placement reads its utilisation.
func (s *Sim) syncEntityLoadAvg(p *simTask, prev int) {
	if to := s.cpus[prev].avg.lastUpdate; to > p.avg.lastUpdate {
		p.updateAvg(to, 0, false)
	}
}

// wakeCap is wake_cap() (v4.10-v5.7): on a machine whose smaller of the
// waking and previous CPUs falls an eighth or more short of the biggest
// CPU, a wakee whose utilisation (synced to prev) does not fit that
// smaller capacity with the 20 % margin is not woken affine: it takes
// the slow path over the domains SD_BALANCE_WAKE marks there.
func (s *Sim) wakeCap(p *simTask, cpu, prev int) bool {
	if !s.wakeCapOn {
		return false
	}
	minCap := min(s.cpus[prev].capacity, s.cpus[cpu].capacity)
	if s.maxCapOrig-minCap < s.maxCapOrig>>3 {
		return false
	}
	s.syncEntityLoadAvg(p, prev)
	return !fitsCapacity(p.utilEstValue(), minCap)
}

// wakeAffine is wake_affine(): wake_affine_idle, then wake_affine_weight.
// WF_SYNC (s.syncWake) is inferred from the trace (Edge.Sync).
func (s *Sim) wakeAffine(sd *model.SchedDomain, p *simTask, this, prev int, waker *simTask) int {
	target := -1
	sync := s.syncWake && waker != nil
	if s.availableIdle(this) && s.cpusShareCache(this, prev) {
		if s.availableIdle(prev) {
			target = prev
		} else {
			target = this
		}
	} else if sync && s.cpus[this].nrRunning()-s.cpus[this].nrDelayed == 1 {
		target = this
	} else if s.availableIdle(prev) {
		target = prev
	}
	if target < 0 && s.wakeAffineWeight(sd, p, this, prev, waker, sync) {
		target = this
	}
	if target == this {
		s.stats.TTWUMoveAffine++
		return this
	}
	return prev
}

// wakeAffineWeight is wake_affine_weight(): whether the waker's CPU
// (this), with the wakee's load added (and, on WF_SYNC, the waker's own
// taken off), is less loaded than prev without it, prev's side biased by
// half the domain's imbalance_pct. A waker whose own load exceeds its
// CPU's (a stale cpu_load) takes this CPU at once; wake_affine counts
// that too (ttwu_move_affine).
func (s *Sim) wakeAffineWeight(sd *model.SchedDomain, p *simTask, this, prev int, waker *simTask, sync bool) bool {
	thisLoad := int64(s.cpuLoad(this))
	var cur int64
	if sync {
		// Read before the wakee's: wake_affine_weight returns at once
		// when the waker outweighs its CPU (task_h_load caches h_load).
		cur = int64(s.taskHLoad(waker))
		if cur > thisLoad {
			return true
		}
	}
	return wakeAffineWeightPulls(thisLoad, int64(s.cpuLoad(prev)), int64(s.taskHLoad(p)), cur, sd.ImbalancePct,
		s.cpus[this].cpuCapacity, s.cpus[prev].cpuCapacity, sync)
}

// wakeAffineWeightPulls is wake_affine_weight()'s arithmetic on the loads
// it reads: this CPU's and prev's cpu_load, the wakee's and (on WF_SYNC)
// the waker's task_h_load, the domain's imbalance_pct and the CPUs'
// capacity_of. The engine's and the wake shadow's (wakeshadow.go).
func wakeAffineWeightPulls(thisLoad, prevLoad, taskLoad, curLoad int64, imbalancePct int, capThis, capPrev uint64, sync bool) bool {
	if sync {
		if curLoad > thisLoad {
			return true
		}
		thisLoad -= curLoad
	}
	thisEff := (thisLoad + taskLoad) * 100 * int64(capPrev)
	prevEff := (prevLoad - taskLoad) * (100 + int64(imbalancePct-100)/2) * int64(capThis) // s64: may go below 0
	if sync {
		// Equal loads: let select_idle_sibling consider stacking the
		// wakee on the waker.
		prevEff++
	}
	return thisEff < prevEff
}

// selectIdleSibling is select_idle_sibling() of v6.1 (§5.4): target, prev
// and recent_used_cpu fast checks, then the LLC scan (idle core when
// has_idle_cores, else an idle CPU within SIS_UTIL's budget), else target;
// with v6.7's cluster rules (Knobs.ClusterWakeup, 8881e1639f1f and
// 22165f61d0c4) prev and the recently used CPU are taken at once only
// inside the target's cluster, else after a scan that found nothing.
func (s *Sim) selectIdleSibling(p *simTask, prev, target int, waker *simTask, wakerCPU int) int {
	// On a machine of unequal capacities a CPU is taken only where the
	// wakee's utilisation, brought up to prev's last update
	// (sync_entity_load_avg), fits it (asym_fits_cpu).
	asym := s.asymCapActive()
	var util uint64
	if asym {
		s.syncEntityLoadAvg(p, prev)
		util = p.utilEstValue()
	}
	fits := func(c int) bool { return !asym || fitsCapacity(util, s.cpus[c].cpuCapacity) }
	if s.availableIdle(target) && p.allowed(target) && fits(target) {
		return target
	}
	// With clusters (v6.7) an idle prev or recently used CPU outside the
	// target's cluster is kept for after the scan, which looks in the
	// target's cluster first.
	cluster := s.clusterActive()
	prevAff := -1
	if prev != target && s.cpusShareCache(prev, target) && s.availableIdle(prev) && p.allowed(prev) && fits(prev) {
		if !cluster || s.cpusShareResources(prev, target) {
			return prev
		}
		prevAff = prev
	}
	// A per-CPU kthread waker (IO completion) stacks the wakee on its CPU.
	if waker != nil && waker.pinned >= 0 && prev == wakerCPU && s.cpus[prev].nrRunning() <= 1 && fits(prev) {
		return prev
	}
	r := int(p.recentUsedCPU)
	p.recentUsedCPU = int32(prev)
	if r != prev && r != target && r >= 0 && r < s.ncpu && s.cpusShareCache(r, target) && s.availableIdle(r) && p.allowed(r) && fits(r) {
		if !cluster || s.cpusShareResources(r, target) {
			return r
		}
	} else {
		r = -1
	}
	if asym {
		if sd := s.dom.CPUs[target].AsymCPUCapacity; sd != nil {
			if i := s.selectIdleCapacity(p, sd, target, util); i >= 0 {
				return i
			}
			return target
		}
	}
	sd := s.dom.CPUs[target].LLC
	if sd == nil {
		return target
	}
	hasIdleCore := false
	if s.smtActive() {
		hasIdleCore = s.llc[target].hasIdleCores
		if !hasIdleCore && s.cpusShareCache(prev, target) {
			for _, c := range s.smtSiblings(prev) {
				if c != prev && inSpan(sd.Span, c) && p.allowed(c) && s.availableIdle(c) {
					return c
				}
			}
		}
	}
	if i := s.selectIdleCPU(p, sd, hasIdleCore, target); i >= 0 {
		return i
	}
	if prevAff >= 0 {
		return prevAff
	}
	if r >= 0 {
		return r
	}
	return target
}

// selectIdleCapacity is select_idle_capacity(): over the asymmetric
// domain sd from target, wrapping, the first idle CPU whose capacity
// (capacity_of) util fits, else the idle CPU of most capacity, else -1.
func (s *Sim) selectIdleCapacity(p *simTask, sd *model.SchedDomain, target int, util uint64) int {
	best, bestCap := -1, uint64(0)
	n := len(sd.Span)
	start := 0
	for start < n && sd.Span[start] < target {
		start++
	}
	for k := 0; k < n; k++ {
		c := sd.Span[(start+k)%n]
		if !p.allowed(c) || !s.availableIdle(c) {
			continue
		}
		capc := s.cpus[c].cpuCapacity
		if fitsCapacity(util, capc) {
			return c
		}
		if capc > bestCap {
			best, bestCap = c, capc
		}
	}
	return best
}

// selectIdleCPU is select_idle_cpu(): one pass over the LLC from
// target+1, wrapping; from v6.7 (Knobs.ClusterWakeup) on a machine with
// clusters the target's cluster is scanned first, then the rest of the
// LLC, one SIS_UTIL budget for both.
func (s *Sim) selectIdleCPU(p *simTask, sd *model.SchedDomain, hasIdleCore bool, target int) int {
	sc := idleScan{nr: 1 << 30, idleCPU: -1, skip: s.scratchSkip[:0]}
	c := s.selectIdleCPUScans(p, sd, hasIdleCore, target, &sc)
	// Keep the mask's storage for the next wakeup (it was never kept, so
	// every core or cluster scan allocated).
	s.scratchSkip = sc.skip[:0]
	return c
}

// selectIdleCPUScans is selectIdleCPU's body, over the scan state sc.
func (s *Sim) selectIdleCPUScans(p *simTask, sd *model.SchedDomain, hasIdleCore bool, target int, sc *idleScan) int {
	if s.knobs.SISUtil {
		// v6.0 SIS_UTIL: an overloaded LLC is not scanned at all, even
		// for an idle core; the budget is only consumed by the idle-CPU
		// scan.
		sc.nr = s.llc[target].nrIdleScan + 1
		if sc.nr == 1 {
			return -1
		}
	}
	if s.clusterActive() {
		// sd->groups, the target's group of the LLC domain, built from a
		// cluster level (sg->flags & SD_CLUSTER).
		if g := sd.LocalGroup(); g != nil && g.Flags&model.SDCluster != 0 {
			if c, done := s.scanIdle(p, g.Span, target, hasIdleCore, sc); done {
				return c
			}
			sc.skip = append(sc.skip, g.Span...)
		}
	}
	if c, done := s.scanIdle(p, sd.Span, target, hasIdleCore, sc); done {
		return c
	}
	if hasIdleCore {
		s.llc[target].hasIdleCores = false
	}
	return sc.idleCPU
}

// idleScan is select_idle_cpu's state across its scans: the SIS_UTIL
// budget, the idle CPU a core scan found on a busy core, and the CPUs
// taken out of the mask (a scanned core's siblings, a scanned cluster).
type idleScan struct {
	nr, idleCPU int
	skip        []int
}

// scanIdle is one of select_idle_cpu's for_each_cpu_wrap loops over span
// (ascending) from target+1: with hasIdleCore the first core whose
// siblings are all idle (select_idle_core), else the first idle CPU within
// the budget (__select_idle_cpu). done reports the scan's answer: a CPU,
// or -1 when the budget ran out.
func (s *Sim) scanIdle(p *simTask, span []int, target int, hasIdleCore bool, sc *idleScan) (cpu int, done bool) {
	start := 0
	for i, c := range span {
		if c > target {
			start = i
			break
		}
		if i == len(span)-1 {
			start = 0
		}
	}
	for k := 0; k < len(span); k++ {
		c := span[(start+k)%len(span)]
		if !p.allowed(c) || containsInt(sc.skip, c) {
			continue
		}
		if hasIdleCore {
			sib := s.smtSiblings(c)
			all := true
			for _, x := range sib {
				sc.skip = append(sc.skip, x)
				if !s.availableIdle(x) {
					all = false
				} else if sc.idleCPU < 0 && p.allowed(x) {
					sc.idleCPU = x
				}
			}
			if all {
				return c, true
			}
			continue
		}
		sc.nr--
		if sc.nr <= 0 {
			return -1, true
		}
		if s.availableIdle(c) {
			return c, true
		}
	}
	return -1, false
}

// wakeupStats are find_idlest_group's per-group statistics (without the
// forking task, which is not queued yet).
type wakeupStats struct {
	load, util, nr, idle, weight, capacity uint64
	typ                                    GroupType
	avgLoad                                uint64
}

// forkMachine is what find_idlest_cpu reads of the machine it places a
// new task on: the engine's run queues (simFork), or the run queues the
// fork shadow redoes from a kernel trace (forkshadow.go), which so scores
// the kernel's own placements by the engine's rules.
type forkMachine interface {
	// groupStats is update_sg_wakeup_stats for g, a group of a domain
	// at level, classified (group_classify reads the group's
	// sgc->imbalance there too).
	groupStats(g *model.SchedGroup, pct uint64, level int) wakeupStats
	// allowed: the new task may run on c; idle: c is available_idle_cpu
	// (since idleStamp); load its cpu_load.
	allowed(c int) bool
	idle(c int) (idle bool, idleStamp int64)
	load(c int) uint64
	domainsOf(c int) []*model.SchedDomain
	groupsOf(sd *model.SchedDomain) []*model.SchedGroup
	// numaIdleDiff is the policy's ForkNumaIdleDiff knob.
	numaIdleDiff() bool
}

// simFork is the engine as a forkMachine, for task p.
type simFork struct {
	s *Sim
	p *simTask
}

func (f simFork) groupStats(g *model.SchedGroup, pct uint64, level int) wakeupStats {
	var only *simTask
	if f.s.knobs.WakeupStatsAllowed {
		only = f.p
	}
	return f.s.groupWakeupStats(g, pct, f.s.sgcImb[sgcKey{level, g.ID}], only)
}
func (f simFork) allowed(c int) bool { return f.p.allowed(c) }
func (f simFork) idle(c int) (bool, int64) {
	return f.s.availableIdle(c), f.s.cpus[c].idleStamp
}
func (f simFork) load(c int) uint64 {
	if f.s.knobs.IdlestByLoad {
		return f.s.runnableLoad(f.s.cpus[c]) // weighted_cpuload, v5.4
	}
	return f.s.cpuLoad(c)
}
func (f simFork) idlestByLoad() bool { return f.s.knobs.IdlestByLoad }
func (f simFork) cpuLoads(c int) (runnable, load, spare uint64) {
	r := f.s.cpus[c]
	return f.s.runnableLoad(r), f.s.cpuLoad(c), r.cpuCapacity - min(r.cpuCapacity, f.s.cpuUtilWithout(c, f.p))
}
func (f simFork) capacity(c int) uint64                              { return f.s.cpus[c].cpuCapacity }
func (f simFork) taskUtil() uint64                                   { return f.p.avg.utilAvg }
func (f simFork) domainsOf(c int) []*model.SchedDomain               { return f.s.domains(c) }
func (f simFork) groupsOf(sd *model.SchedDomain) []*model.SchedGroup { return f.s.groupsOf(sd) }
func (f simFork) numaIdleDiff() bool                                 { return f.s.knobs.ForkNumaIdleDiff }

// loadForkMachine is what find_idlest_group read of the machine up to
// v5.4 (findIdlestGroupByLoad): per CPU its runnable_load_avg, its cfs
// load_avg and its spare capacity without the task (capacity_of less
// cpu_util_without, at least 0); capacity_of; the task's util_avg.
type loadForkMachine interface {
	forkMachine
	idlestByLoad() bool
	cpuLoads(c int) (runnable, load, spare uint64)
	capacity(c int) uint64
	taskUtil() uint64
}

// cpuUtilWithout is cpu_util_without(): CPU c's utilisation with p's
// taken off where p's util sits (task_cpu); p, waking, is in neither
// run queue nor util_est.
func (s *Sim) cpuUtilWithout(c int, p *simTask) uint64 {
	if int(p.cpu) != c {
		return s.cpuUtil(c)
	}
	r := s.cpus[c]
	util := r.avg.utilAvg - min(r.avg.utilAvg, p.avg.utilAvg)
	return min(max(util, r.utilEst), r.capacity)
}

// findIdlestGroupByLoad is find_idlest_group() up to v5.4: over the
// groups the task may use, the remote one of least runnable load per
// capacity (another replacing it only when lighter by the imbalance, or
// within it and lighter in load_avg by half the imbalance_pct), and the
// remote one holding the CPU of most spare capacity. A wakeup (not a
// fork, whose util is not set yet) stays local while the local group's
// most spare capacity exceeds half the task's util and, raised by half
// the imbalance_pct, the remote best; else goes to the group of most
// spare capacity if that exceeds half the util. Then the load test: the
// idlest group unless the local one is about as light.
func findIdlestGroupByLoad(m loadForkMachine, sd *model.SchedDomain, cpu int, flag model.SDFlags) *model.SchedGroup {
	const none = ^uint64(0)
	pct := uint64(sd.ImbalancePct)
	scale := 100 + (pct-100)/2
	imb := uint64(capacityScale) * (pct - 100) / 100
	var idlest, mostSpareSG *model.SchedGroup
	minRunnable, minAvg := none, none
	thisRunnable, thisAvg := none, none
	var mostSpare, thisSpare uint64
	for _, g := range m.groupsOf(sd) {
		if !anyAllowed(m, g) {
			continue
		}
		var runnable, load, maxSpare, capacity uint64
		for _, c := range g.Span {
			r, l, sp := m.cpuLoads(c)
			runnable += r
			load += l
			maxSpare = max(maxSpare, sp)
			capacity += m.capacity(c)
		}
		capacity = max(capacity, 1)
		avgLoad := load * capacityScale / capacity
		runnable = runnable * capacityScale / capacity
		if inSpan(g.Span, cpu) {
			thisRunnable, thisAvg, thisSpare = runnable, avgLoad, maxSpare
			continue
		}
		if minRunnable > runnable+imb {
			minRunnable, minAvg, idlest = runnable, avgLoad, g
		} else if runnable < minRunnable+imb && 100*minAvg > scale*avgLoad {
			minAvg, idlest = avgLoad, g
		}
		if mostSpare < maxSpare {
			mostSpare, mostSpareSG = maxSpare, g
		}
	}
	if flag&model.SDBalanceFork == 0 {
		u := m.taskUtil()
		if thisSpare > u/2 && scale*thisSpare > 100*mostSpare {
			return nil
		}
		if mostSpare > u/2 {
			return mostSpareSG
		}
	}
	if idlest == nil {
		return nil
	}
	if sd.Flags&model.SDNUMA != 0 && minRunnable+imb >= thisRunnable {
		return nil
	}
	if minRunnable > thisRunnable+imb {
		return nil
	}
	if thisRunnable < minRunnable+imb && 100*thisAvg < scale*minAvg {
		return nil
	}
	return idlest
}

// findIdlestCPU is find_idlest_cpu() (§5.5): descend from sd picking the
// idlest group and its idlest CPU at each level with the flag.
func findIdlestCPU(m forkMachine, sd *model.SchedDomain, cpu int, flag model.SDFlags) int {
	for sd != nil {
		if sd.Flags&flag == 0 {
			sd = sd.Child
			continue
		}
		var g *model.SchedGroup
		if lm, ok := m.(loadForkMachine); ok && lm.idlestByLoad() {
			g = findIdlestGroupByLoad(lm, sd, cpu, flag)
		} else {
			g = findIdlestGroup(m, sd, cpu)
		}
		if g == nil {
			sd = sd.Child
			continue
		}
		nc := findIdlestGroupCPU(m, g, cpu)
		if nc == cpu {
			sd = sd.Child
			continue
		}
		cpu = nc
		w := sd.SpanWeight
		sd = nil
		for _, x := range m.domainsOf(cpu) {
			if x.SpanWeight >= w {
				break
			}
			if x.Flags&flag != 0 {
				sd = x
			}
		}
	}
	return cpu
}

func (s *Sim) groupWakeupStats(g *model.SchedGroup, pct uint64, imbalanced bool, only *simTask) wakeupStats {
	ws := wakeupStats{weight: uint64(g.Weight)}
	var runnable uint64
	for _, c := range g.Span {
		// sgc->capacity: every CPU of the group, whatever the task may
		// use; the sums below only over those it may (only non-nil,
		// WakeupStatsAllowed).
		ws.capacity += s.cpus[c].cpuCapacity
		if only != nil && !only.allowed(c) {
			continue
		}
		ws.load += s.cpuLoad(c)
		ws.util += s.cpuUtil(c)
		runnable += s.cpuRunnable(c)
		ws.nr += uint64(s.cpus[c].nrRunning())
		if s.cpus[c].idle() {
			ws.idle++
		}
	}
	// The policy's arguments live on the Sim: passed through an interface
	// they would be allocated at every fork's group search.
	sgs, env := &s.wakeSGS, &s.wakeEnv
	*sgs = SGStats{GroupCapacity: ws.capacity, GroupUtil: ws.util, GroupRunnable: runnable,
		SumNrRunning: uint32(ws.nr), GroupWeight: uint32(ws.weight), Imbalanced: imbalanced}
	*env = LBEnv{ImbalancePct: pct}
	ws.classify(s.pol, env, sgs)
	return ws
}

// classify sets the group type from sgs (update_sg_wakeup_stats'
// group_classify) and, for a busy group, avg_load.
func (ws *wakeupStats) classify(pol Policy, env *LBEnv, sgs *SGStats) {
	ws.typ = pol.Classify(env, sgs)
	if ws.typ == GroupFullyBusy || ws.typ == GroupOverloaded {
		ws.avgLoad = ws.load * capacityScale / ws.capacity
	}
}

// anyAllowed: the task may run on some CPU of g (find_idlest_group
// passes over a group it may not).
func anyAllowed(m forkMachine, g *model.SchedGroup) bool {
	for _, c := range g.Span {
		if m.allowed(c) {
			return true
		}
	}
	return false
}

// findIdlestGroup is find_idlest_group() as v5.5 reworked it, by group
// type (the legacy policies' is findIdlestGroupByLoad).
func findIdlestGroup(m forkMachine, sd *model.SchedDomain, cpu int) *model.SchedGroup {
	pct := uint64(sd.ImbalancePct)
	var idlest, local *model.SchedGroup
	var is, ls wakeupStats
	for _, g := range m.groupsOf(sd) {
		if !anyAllowed(m, g) {
			continue
		}
		ws := m.groupStats(g, pct, sd.Level)
		if inSpan(g.Span, cpu) {
			local, ls = g, ws
			continue
		}
		if idlest == nil || updatePickIdlest(&is, &ws) {
			idlest, is = g, ws
		}
	}
	if idlest == nil {
		return nil
	}
	if local == nil {
		return idlest
	}
	if ls.typ < is.typ {
		return nil
	}
	if ls.typ > is.typ {
		return idlest
	}
	switch ls.typ {
	case GroupOverloaded, GroupFullyBusy:
		imb := uint64(capacityScale) * (pct - 100) / 100
		if sd.Flags&model.SDNUMA != 0 && is.avgLoad+imb >= ls.avgLoad {
			return nil
		}
		if is.avgLoad >= ls.avgLoad+imb {
			return nil
		}
		if 100*ls.avgLoad <= pct*is.avgLoad {
			return nil
		}
	case GroupHasSpare:
		if sd.Flags&model.SDNUMA != 0 {
			// NUMA allowance: stay while the local node has room
			// (allow_numa_imbalance, v5.18); from v6.0 only while the
			// nodes' idle CPUs differ by at most NUMA_IMBALANCE_MIN too
			// (adjust_numa_imbalance). imb_numa_nr is bounded by the
			// local group's CPUs the task may use (every task's
			// nr_cpus_allowed is below NR_CPUS).
			imbNr := sd.ImbNUMANr
			n := 0
			for _, c := range local.Span {
				if m.allowed(c) {
					n++
				}
			}
			imbNr = min(imbNr, n)
			if int(ls.nr)+1 <= imbNr {
				d := int(ls.idle) - int(is.idle)
				if d < 0 {
					d = -d
				}
				if !m.numaIdleDiff() || d <= numaImbalanceMin {
					return nil
				}
			}
		}
		if ls.idle >= is.idle {
			return nil
		}
	case GroupImbalanced, GroupAsymPacking, GroupSMTBalance, GroupMisfitTask:
		// Equal types the slow path does not weigh (a group flagged
		// imbalanced by affinity on both sides): stay local.
		return nil
	}
	return idlest
}

func updatePickIdlest(idlest, ws *wakeupStats) bool {
	if ws.typ < idlest.typ {
		return true
	}
	if ws.typ > idlest.typ {
		return false
	}
	switch ws.typ {
	case GroupOverloaded, GroupFullyBusy:
		return ws.avgLoad < idlest.avgLoad
	case GroupHasSpare:
		if ws.idle > idlest.idle {
			return true
		}
		return ws.idle == idlest.idle && ws.util < idlest.util
	}
	return false
}

// findIdlestGroupCPU is find_idlest_group_cpu(): without cpuidle states
// (the traced VMs), the most recently idled CPU; else the least loaded.
func findIdlestGroupCPU(m forkMachine, g *model.SchedGroup, cpu int) int {
	if len(g.Span) == 1 {
		return g.Span[0]
	}
	best, latest := -1, int64(-1)
	least, leastLoad := cpu, ^uint64(0)
	for _, c := range g.Span {
		if !m.allowed(c) {
			continue
		}
		if idle, st := m.idle(c); idle {
			if st > latest || best < 0 {
				best, latest = c, st
			}
		} else if best < 0 {
			if l := m.load(c); l < leastLoad {
				least, leastLoad = c, l
			}
		}
	}
	if best >= 0 {
		return best
	}
	return least
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// groupsOf is sd.Groups() from the CPU's balancing state, which holds
// them already: the model builds the list at every call.
func (s *Sim) groupsOf(sd *model.SchedDomain) []*model.SchedGroup {
	if sd.CPU < len(s.cpus) {
		for _, st := range s.cpus[sd.CPU].sd {
			if st.sd == sd {
				return st.groups
			}
		}
	}
	return sd.Groups()
}
