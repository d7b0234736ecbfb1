package whatif

import "github.com/schedreplay/replay/model"

// PolicyV61 is the load-balancer policy of Linux v6.1 (the v6.1 LTS, the
// kernel that recorded the fixtures), valid for v5.18–v6.3 (kernel-lb.md
// §4.6). It is the v5.5 rework (0b0695f2b34a "sched/fair: Rework
// load_balance()": group types, migration types) with
//   - runnable_avg in group classification (v5.7, 070f5e860ee2 "sched/fair:
//     Take into account runnable_avg to classify group");
//   - tasks spread by nr_running inside LLC domains (v5.10, 16b0a7a1a0af
//     "sched/fair: Ensure tasks spreading in LLC during LB") and the v5.10
//     set: busy interval minus one jiffy, the shr_bound detach rule ("Relax
//     constraint on task's load during load balance"), active balance only
//     for migrate_task failures and misfits ("Reduce cases for active
//     balance");
//   - the NUMA imbalance allowance applied to the destination with
//     imb_numa_nr (e496132ebedd, v5.18; "sched/numa: Apply imbalance
//     limitations consistently", v6.0): allow up to NUMA_IMBALANCE_MIN (2)
//     tasks while local.sum_nr_running+1 <= imb_numa_nr, then halve;
//   - the unsigned idle_cpus difference in calculate_imbalance kept as the
//     kernel computes it (the lsub_positive fix came later);
//   - newidle gate of v5.16 and SIS_UTIL wakeup scans (v6.0, 70fb5ccf2ebb).
//
// Not included (later than v6.1): the v6.4 imbalance-overflow guard
// (91dcf1e8068e), the ~v6.2 LBF_ALL_PINNED placement, group_smt_balance and
// sibling_imbalance (v6.6). Misfit (asymmetric or reduced capacity) needs
// RT/IRQ pressure or asymmetric CPUs, which the simulator does not produce;
// the misfit rules are present for completeness.
type PolicyV61 struct{}

func init() { RegisterPolicy("v6.1", func() Policy { return PolicyV61{} }) }

func (PolicyV61) Name() string { return "v6.1" }

func (PolicyV61) Kernels() string {
	return "v5.18–v6.3 (v6.1 LTS): 0b0695f2b34a + 070f5e860ee2 + 16b0a7a1a0af + e496132ebedd + v6.0 NUMA/SIS_UTIL (70fb5ccf2ebb)"
}

func (PolicyV61) Knobs() Knobs {
	return Knobs{IntervalMinusOne: true, NewidleGate516: true, SISUtil: true}
}

// groupHasCapacity is group_has_capacity() with the v5.7 runnable test.
func groupHasCapacity(pct uint64, sgs *SGStats) bool {
	if sgs.SumNrRunning < sgs.GroupWeight {
		return true
	}
	if sgs.GroupCapacity*pct < sgs.GroupRunnable*100 {
		return false
	}
	return sgs.GroupCapacity*100 > sgs.GroupUtil*pct
}

// groupIsOverloaded is group_is_overloaded() with the v5.7 runnable test.
func groupIsOverloaded(pct uint64, sgs *SGStats) bool {
	if sgs.SumNrRunning <= sgs.GroupWeight {
		return false
	}
	if sgs.GroupCapacity*100 < sgs.GroupUtil*pct {
		return true
	}
	return sgs.GroupCapacity*pct < sgs.GroupRunnable*100
}

// Classify is group_classify(): overloaded, imbalanced, (asym packing: not
// modelled), misfit, fully busy, has spare.
func (PolicyV61) Classify(env *LBEnv, sgs *SGStats) GroupType {
	switch {
	case groupIsOverloaded(env.ImbalancePct, sgs):
		return GroupOverloaded
	case sgs.Imbalanced:
		return GroupImbalanced
	case sgs.MisfitLoad > 0:
		return GroupMisfitTask
	case !groupHasCapacity(env.ImbalancePct, sgs):
		return GroupFullyBusy
	}
	return GroupHasSpare
}

// PickBusiest is update_sd_pick_busiest() for symmetric machines.
func (PolicyV61) PickBusiest(env *LBEnv, sds *SDStats, sgs *SGStats) bool {
	if sgs.SumHNrRunning == 0 {
		return false
	}
	b := sds.Busiest
	if sgs.GroupType == GroupMisfitTask && (sds.Local == nil || sds.Local.GroupType != GroupHasSpare) {
		// Misfit tasks only move to a group with spare capacity (and, on
		// asymmetric systems, more capacity: not modelled).
		return false
	}
	if b == nil {
		return true
	}
	if sgs.GroupType > b.GroupType {
		return true
	}
	if sgs.GroupType < b.GroupType {
		return false
	}
	switch sgs.GroupType {
	case GroupOverloaded:
		return sgs.AvgLoad > b.AvgLoad
	case GroupImbalanced:
		return false
	case GroupAsymPacking:
		return false
	case GroupMisfitTask:
		return sgs.MisfitLoad >= b.MisfitLoad
	case GroupFullyBusy:
		// avg_load is only computed for overloaded groups, so this keeps
		// the first fully busy group found.
		return sgs.AvgLoad > b.AvgLoad
	case GroupHasSpare:
		if sgs.IdleCPUs > b.IdleCPUs {
			return false
		}
		if sgs.IdleCPUs == b.IdleCPUs && sgs.SumNrRunning <= b.SumNrRunning {
			return false
		}
		return true
	}
	return false
}

// Decide is find_busiest_group()'s decision sequence (§4.2 steps 2–8).
func (PolicyV61) Decide(env *LBEnv, sds *SDStats) Verdict {
	local, busiest := sds.Local, sds.Busiest
	if busiest == nil || busiest.SumHNrRunning == 0 {
		return Balanced
	}
	switch busiest.GroupType {
	case GroupMisfitTask, GroupAsymPacking, GroupImbalanced:
		return ForceBalance
	}
	if local.GroupType > busiest.GroupType {
		return Balanced
	}
	if local.GroupType == GroupOverloaded {
		if local.AvgLoad >= busiest.AvgLoad {
			return Balanced
		}
		sds.AvgLoad = sds.TotalLoad * capacityScale / sds.TotalCapacity
		if local.AvgLoad >= sds.AvgLoad {
			return Balanced
		}
		if 100*busiest.AvgLoad <= env.ImbalancePct*local.AvgLoad {
			return Balanced
		}
	}
	if sds.PreferSibling && local.GroupType == GroupHasSpare && busiest.SumNrRunning > local.SumNrRunning+1 {
		return ForceBalance
	}
	if busiest.GroupType != GroupOverloaded {
		if env.Idle == CPUNotIdle {
			return Balanced
		}
		if busiest.GroupWeight > 1 && local.IdleCPUs <= busiest.IdleCPUs+1 {
			return Balanced
		}
		if busiest.SumHNrRunning == 1 {
			return Balanced
		}
	}
	return ForceBalance
}

const numaImbalanceMin = 2

// CalculateImbalance is calculate_imbalance() of v6.1.
func (PolicyV61) CalculateImbalance(env *LBEnv, sds *SDStats) {
	local, busiest := sds.Local, sds.Busiest
	switch busiest.GroupType {
	case GroupMisfitTask:
		// Symmetric domain with a reduced-capacity CPU (v6.0): pull its load.
		if env.SDFlags&model.SDAsymCPUCapacity != 0 {
			env.MigrationType, env.Imbalance = MigrateMisfit, 1
		} else {
			env.MigrationType, env.Imbalance = MigrateLoad, int64(busiest.MisfitLoad)
		}
		return
	case GroupAsymPacking:
		env.MigrationType, env.Imbalance = MigrateTask, int64(busiest.SumHNrRunning)
		return
	case GroupImbalanced:
		env.MigrationType, env.Imbalance = MigrateTask, 1
		return
	}
	if local.GroupType == GroupHasSpare {
		if busiest.GroupType > GroupFullyBusy && env.SDFlags&model.SDShareLLC == 0 {
			// Use the spare capacity of the local group without
			// overloading it (outside the LLC only, 16b0a7a1a0af).
			env.MigrationType = MigrateUtil
			c := local.GroupCapacity
			if local.GroupUtil > c {
				c = local.GroupUtil
			}
			env.Imbalance = int64(c - local.GroupUtil)
			if env.Idle != CPUNotIdle && env.Imbalance == 0 {
				env.MigrationType, env.Imbalance = MigrateTask, 1
			}
			return
		}
		env.MigrationType = MigrateTask
		if busiest.GroupWeight == 1 || sds.PreferSibling {
			// lsub_positive: busiest - local, floored at 0.
			nr := int64(busiest.SumNrRunning) - int64(local.SumNrRunning)
			if nr < 0 {
				nr = 0
			}
			env.Imbalance = nr
		} else {
			// max_t(long, 0, local->idle_cpus - busiest->idle_cpus): the
			// subtraction is of unsigned ints and wraps when busiest has
			// more idle CPUs (fixed upstream after v6.1).
			d := int64(local.IdleCPUs - busiest.IdleCPUs) // uint32 wrap, as the kernel
			if d < 0 {
				d = 0
			}
			env.Imbalance = d
		}
		if env.SDFlags&model.SDNUMA != 0 {
			// adjust_numa_imbalance(imbalance, local->sum_nr_running + 1, imb_numa_nr)
			if int(local.SumNrRunning)+1 <= env.ImbNUMANr && env.Imbalance <= numaImbalanceMin {
				env.Imbalance = 0
			}
		}
		env.Imbalance >>= 1
		return
	}
	if local.GroupType < GroupOverloaded {
		// Local fully busy: compute its avg_load and the domain's.
		local.AvgLoad = local.GroupLoad * capacityScale / local.GroupCapacity
		sds.AvgLoad = sds.TotalLoad * capacityScale / sds.TotalCapacity
	}
	env.MigrationType = MigrateLoad
	// Unsigned, as in v6.1: a local group busier than the domain average
	// wraps its term to a huge value (guarded only from v6.4, 91dcf1e8068e).
	env.Imbalance = loadImbalance(busiest, local, sds)
}

// AcceptForDetach is detach_tasks()'s acceptance by migration type with
// the v5.10 shr_bound load rule.
func (PolicyV61) AcceptForDetach(env *LBEnv, t DetachTask) bool {
	switch env.MigrationType {
	case MigrateLoad:
		l := t.Load
		if l < 1 {
			l = 1
		}
		sh := env.NrBalanceFailed
		if sh > 63 {
			sh = 63
		}
		if int64(l>>uint(sh)) > env.Imbalance {
			return false
		}
		env.Imbalance -= int64(l)
	case MigrateUtil:
		if int64(t.UtilEst) > env.Imbalance {
			return false
		}
		env.Imbalance -= int64(t.UtilEst)
	case MigrateTask:
		env.Imbalance--
	case MigrateMisfit:
		if t.FitsSrc {
			return false
		}
		env.Imbalance = 0
	}
	return true
}

// NeedActiveBalance is need_active_balance() of v5.10+ (no asym packing,
// no reduced-capacity source: the model has no RT/IRQ pressure).
func (PolicyV61) NeedActiveBalance(env *LBEnv) bool {
	if env.MigrationType == MigrateTask && env.NrBalanceFailed > env.CacheNiceTries+2 {
		return true
	}
	return env.MigrationType == MigrateMisfit
}
