package whatif

import "github.com/schedreplay/replay/model"

// The `legacy` policy: the load balancer of Linux v4.15?–v5.4, as shipped
// in v5.4 (kernel-lb.md §4.1; the v5.4 rules were read in linux-5.4.286
// kernel/sched/fair.c), before 0b0695f2b34a "sched/fair: Rework
// load_balance()" (v5.5):
//   - group statistics in runnable_load_avg (group_load = Σ
//     runnable_load_avg of the CPUs, here the load_avg of their queued
//     tasks), sum_nr_running = Σ cfs.h_nr_running, avg_load always
//     computed, load_per_task = group_load / sum_nr_running;
//   - group types group_other < misfit_task < imbalanced < overloaded,
//     where overloaded is group_no_capacity (more tasks than CPUs and util
//     above capacity/imbalance_pct); group_other is reported as
//     group_has_spare (the engine's lowest type);
//   - the prefer-sibling demotion in update_sd_lb_stats: when the child
//     domain has SD_PREFER_SIBLING and the local group has capacity, a
//     non-local group with more than one task more than the local group
//     (sum_nr_running > local + 1) is marked group_no_capacity. That is
//     Srikar Dronamraju's "sched: Prefer sibling only if local group is
//     under-utilized" (~v4.15–v4.19; commit id not found, kernel-lb.md §9.2);
//   - find_busiest_group's avg_load tests (imbalance_pct, idle_cpus for
//     CPU_IDLE), calculate_imbalance in load units with
//     load_above_capacity, and fix_small_imbalance, which moves one task's
//     load when the average imbalance is below one task;
//   - detach_tasks rejects a task whose load/2 exceeds the imbalance;
//     active balance after cache_nice_tries+2 failed passes.
//
// Tunables of v5.4: imbalance_pct 125 above the LLC, busy_factor 32, CFS
// run queues, newidle gated by sysctl_sched_migration_cost, SIS_PROP (not
// modelled: the scan is unlimited).
// Engine-level parts stay the engine's (v6.1 find_busiest_queue by
// cpu_load, v5.5+ fork placement, should_we_balance).
type legacyPolicy struct {
	// presibfix: demote whenever the group has more than one task (the
	// rule before Srikar Dronamraju's change).
	presibfix bool
}

func init() {
	RegisterPolicy("legacy", func() Policy { return legacyPolicy{} })
}

func (p legacyPolicy) Name() string {
	if p.presibfix {
		return "legacy-presibfix"
	}
	return "legacy"
}

func (p legacyPolicy) Kernels() string {
	if p.presibfix {
		return "v4.x before the prefer-sibling fix (~v4.15, reconstructed): avg_load/load_per_task, demotion when a group has > 1 task"
	}
	return "v4.15?–v5.4 (v5.4 read): avg_load/load_per_task, fix_small_imbalance, group_no_capacity, prefer-sibling \"+1\" demotion"
}

func (legacyPolicy) Knobs() Knobs {
	return Knobs{ImbalancePctDefault: 125, BusyFactor: 32, RunnableLoad: true, IdlestByLoad: true}
}

// legacyHasCapacity is v5.4's group_has_capacity().
func legacyHasCapacity(pct uint64, sgs *SGStats) bool {
	if sgs.SumNrRunning < sgs.GroupWeight {
		return true
	}
	return sgs.GroupCapacity*100 > sgs.GroupUtil*pct
}

// legacyIsOverloaded is v5.4's group_is_overloaded() (group_no_capacity).
func legacyIsOverloaded(pct uint64, sgs *SGStats) bool {
	if sgs.SumNrRunning <= sgs.GroupWeight {
		return false
	}
	return sgs.GroupCapacity*100 < sgs.GroupUtil*pct
}

// Classify answers for the engine's wakeup/fork statistics (v5.5+ types,
// no runnable test); the load-balance classification is AdjustGroup's.
func (legacyPolicy) Classify(env *LBEnv, sgs *SGStats) GroupType {
	switch {
	case legacyIsOverloaded(env.ImbalancePct, sgs):
		return GroupOverloaded
	case sgs.Imbalanced:
		return GroupImbalanced
	case sgs.MisfitLoad > 0:
		return GroupMisfitTask
	case !legacyHasCapacity(env.ImbalancePct, sgs):
		return GroupFullyBusy
	}
	return GroupHasSpare
}

// legacyClassify is v5.4's group_classify() given group_no_capacity.
func legacyClassify(noCapacity bool, sgs *SGStats) GroupType {
	switch {
	case noCapacity:
		return GroupOverloaded
	case sgs.Imbalanced:
		return GroupImbalanced
	case sgs.MisfitLoad > 0:
		return GroupMisfitTask
	}
	return GroupHasSpare // group_other
}

// AdjustGroup turns the engine's statistics into v5.4's (runnable load,
// CFS task counts, avg_load and load_per_task always) and applies the
// prefer-sibling demotion to non-local groups.
func (p legacyPolicy) AdjustGroup(env *LBEnv, sds *SDStats, sgs *SGStats, local bool) {
	sgs.GroupLoad = sgs.RunnableLoad
	sgs.SumNrRunning = sgs.SumHNrRunning
	sgs.AvgLoad = 0
	if sgs.GroupCapacity > 0 {
		sgs.AvgLoad = sgs.GroupLoad * capacityScale / sgs.GroupCapacity
	}
	sgs.LoadPerTask = 0
	if sgs.SumNrRunning > 0 {
		sgs.LoadPerTask = sgs.GroupLoad / uint64(sgs.SumNrRunning)
	}
	noCap := legacyIsOverloaded(env.ImbalancePct, sgs)
	if !local && sds.PreferSibling && sds.Local != nil && legacyHasCapacity(env.ImbalancePct, sds.Local) {
		l := sds.Local
		if (p.presibfix && sgs.SumNrRunning > 1) || (!p.presibfix && sgs.SumNrRunning > l.SumNrRunning+1) {
			noCap = true
		}
	}
	sgs.GroupType = legacyClassify(noCap, sgs)
}

// PickBusiest is v5.4's update_sd_pick_busiest() (v5.0's read): a misfit
// group only when its biggest CPU is smaller than the local group's and
// the local group has capacity; on an asymmetric domain, not a group of
// at most one task per CPU whose smallest CPU is bigger than the local
// group's smallest, and of two misfit groups the bigger misfit.
func (legacyPolicy) PickBusiest(env *LBEnv, sds *SDStats, sgs *SGStats) bool {
	if sgs.GroupType == GroupMisfitTask && (sds.Local == nil ||
		!fitsCapacity(sgs.MaxCapacity, sds.Local.MaxCapacity) || !legacyHasCapacity(env.ImbalancePct, sds.Local)) {
		return false
	}
	b := sds.Busiest
	if b == nil {
		b = &SGStats{GroupType: GroupHasSpare} // busiest_stat's initial value
	}
	if sgs.GroupType > b.GroupType {
		return true
	}
	if sgs.GroupType < b.GroupType {
		return false
	}
	if sgs.AvgLoad <= b.AvgLoad {
		return false
	}
	if env.SDFlags&model.SDAsymCPUCapacity != 0 {
		if sgs.SumNrRunning <= sgs.GroupWeight && sds.Local != nil && fitsCapacity(sds.Local.MinCapacity, sgs.MinCapacity) {
			return false
		}
		if sgs.GroupType == GroupMisfitTask && sgs.MisfitLoad < b.MisfitLoad {
			return false
		}
	}
	return true
}

// Decide is v5.4's find_busiest_group() after the statistics (§4.1 steps
// 3–11; the EAS and asym-packing gates do not apply).
func (legacyPolicy) Decide(env *LBEnv, sds *SDStats) Verdict {
	local, busiest := sds.Local, sds.Busiest
	if busiest == nil || busiest.SumNrRunning == 0 {
		return Balanced
	}
	sds.AvgLoad = sds.TotalLoad * capacityScale / sds.TotalCapacity
	if busiest.GroupType == GroupImbalanced {
		return ForceBalance
	}
	if env.Idle != CPUNotIdle && legacyHasCapacity(env.ImbalancePct, local) && busiest.GroupType == GroupOverloaded {
		return ForceBalance
	}
	if busiest.GroupType == GroupMisfitTask {
		return ForceBalance
	}
	if local.AvgLoad >= busiest.AvgLoad {
		return Balanced
	}
	if local.AvgLoad >= sds.AvgLoad {
		return Balanced
	}
	if env.Idle == CPUIdle {
		if busiest.GroupType != GroupOverloaded && local.IdleCPUs <= busiest.IdleCPUs+1 {
			return Balanced
		}
	} else if 100*busiest.AvgLoad <= env.ImbalancePct*local.AvgLoad {
		return Balanced
	}
	return ForceBalance
}

// CalculateImbalance is v5.4's calculate_imbalance() (load units, unsigned
// arithmetic as the kernel's unsigned long).
func (legacyPolicy) CalculateImbalance(env *LBEnv, sds *SDStats) {
	local, busiest := sds.Local, sds.Busiest
	env.MigrationType = MigrateLoad
	if busiest.GroupType == GroupImbalanced && sds.AvgLoad < busiest.LoadPerTask {
		busiest.LoadPerTask = sds.AvgLoad
	}
	if busiest.GroupType != GroupMisfitTask && (busiest.AvgLoad <= sds.AvgLoad || local.AvgLoad >= sds.AvgLoad) {
		env.Imbalance = 0
		fixSmallImbalance(env, sds)
		return
	}
	lac := ^uint64(0)
	if busiest.GroupType == GroupOverloaded && local.GroupType == GroupOverloaded {
		lac = uint64(busiest.SumNrRunning) * capacityScale
		if lac > busiest.GroupCapacity {
			lac = (lac - busiest.GroupCapacity) * 1024 / busiest.GroupCapacity
		} else {
			lac = ^uint64(0)
		}
	}
	maxPull := busiest.AvgLoad - sds.AvgLoad
	if lac < maxPull {
		maxPull = lac
	}
	a := maxPull * busiest.GroupCapacity
	if b := (sds.AvgLoad - local.AvgLoad) * local.GroupCapacity; b < a {
		a = b
	}
	env.Imbalance = int64(a / capacityScale)
	if busiest.GroupType == GroupMisfitTask && env.Imbalance < int64(busiest.MisfitLoad) {
		env.Imbalance = int64(busiest.MisfitLoad)
	}
	if env.Imbalance < int64(busiest.LoadPerTask) {
		fixSmallImbalance(env, sds)
	}
}

// fixSmallImbalance is v5.4's fix_small_imbalance(): move one task's load
// when that brings the groups closer, or when it increases the capacity
// in use. (For an empty local group load_per_task is the dst CPU's, 0.)
func fixSmallImbalance(env *LBEnv, sds *SDStats) {
	local, busiest := sds.Local, sds.Busiest
	imbn := uint64(2)
	if local.SumNrRunning == 0 {
		local.LoadPerTask = 0
	} else if busiest.LoadPerTask > local.LoadPerTask {
		imbn = 1
	}
	s := busiest.LoadPerTask * capacityScale / busiest.GroupCapacity
	if busiest.AvgLoad+s >= local.AvgLoad+s*imbn {
		env.Imbalance = int64(busiest.LoadPerTask)
		return
	}
	now := busiest.GroupCapacity*min(busiest.LoadPerTask, busiest.AvgLoad) +
		local.GroupCapacity*min(local.LoadPerTask, local.AvgLoad)
	now /= capacityScale
	var move uint64
	if busiest.AvgLoad > s {
		move += busiest.GroupCapacity * min(busiest.LoadPerTask, busiest.AvgLoad-s)
	}
	var t uint64
	if busiest.AvgLoad*busiest.GroupCapacity < busiest.LoadPerTask*capacityScale {
		t = busiest.AvgLoad * busiest.GroupCapacity / local.GroupCapacity
	} else {
		t = busiest.LoadPerTask * capacityScale / local.GroupCapacity
	}
	move += local.GroupCapacity * min(local.LoadPerTask, local.AvgLoad+t)
	move /= capacityScale
	if move > now {
		env.Imbalance = int64(busiest.LoadPerTask)
	}
}

// AcceptForDetach is v5.4's detach_tasks() rule: reject a task whose
// load/2 exceeds the remaining imbalance.
func (legacyPolicy) AcceptForDetach(env *LBEnv, t DetachTask) bool {
	if int64(t.Load/2) > env.Imbalance {
		return false
	}
	env.Imbalance -= int64(t.Load)
	return true
}

// NeedActiveBalance is v5.4's need_active_balance(): for a misfit
// busiest group (its running task can move no other way), else after
// more than cache_nice_tries+2 failures (the reduced-capacity source
// rule is the engine's, Sim.reducedCapacitySource).
func (legacyPolicy) NeedActiveBalance(env *LBEnv) bool {
	if env.SrcGroupType == GroupMisfitTask {
		return true
	}
	return env.NrBalanceFailed > env.CacheNiceTries+2
}
