package whatif

import "github.com/schedreplay/replay/model"

// The `rework` policy: Linux v5.5, commit 0b0695f2b34a "sched/fair: Rework
// load_balance()" (Vincent Guittot), kernel-lb.md §4.2.
//
// The rework replaced v5.4's avg_load/load_per_task arithmetic with group
// types (has_spare, fully_busy, misfit_task, asym_packing, imbalanced,
// overloaded, classified in that priority) and migration types
// (migrate_load, migrate_util, migrate_task, migrate_misfit):
//   - an overloaded busiest group and a local group with spare capacity
//     are balanced by utilisation: imbalance = local capacity - local util
//     ("use spare capacity without overloading"), and detach_tasks takes a
//     task only if its util_est fits; an idle dst with no spare capacity
//     left pulls one task;
//   - groups with spare capacity are balanced by task count (groups of one
//     CPU, or prefer_sibling) or by idle CPUs;
//   - busy (fully busy / overloaded) groups by load as before;
//   - the v5.4 detach rule "load/2 > imbalance" is kept but relaxed once
//     the domain failed more than cache_nice_tries times; need_active_balance
//     keeps v5.4's failure-count trigger for every migration type.
//
// Domain tunables as in v5.5: imbalance_pct 125 above the LLC, busy_factor
// 32, CFS run queues, newidle gated by sysctl_sched_migration_cost,
// SIS_PROP wakeup scans (not modelled: the scan is unlimited).
//
// reworkPolicy is the rule set shared by the policies from v5.5 on, each a
// set of rule changes named by upstream commit (lbRules); the files
// policy_rework_numa2.go ... policy_latest.go pick the rules of their
// kernel range.
type reworkPolicy struct {
	name, kernels string
	r             lbRules
	knobs         Knobs
}

// lbRules are the rule changes on top of 0b0695f2b34a, one per upstream
// commit or commit series.
type lbRules struct {
	// NUMA imbalance allowance (kernel-lb.md §4.5).
	Numa NumaRule
	// Runnable: group_has_capacity/group_is_overloaded also test
	// runnable_avg (v5.7, 070f5e860ee2).
	Runnable bool
	// LLCNrRunning: inside SD_SHARE_PKG_RESOURCES (LLC) domains an
	// overloaded busiest group is balanced by nr_running, not by spare
	// utilisation (v5.10, 16b0a7a1a0af).
	LLCNrRunning bool
	// ShrBound: detach_tasks rejects a task when (load >>
	// nr_balance_failed) > imbalance (v5.10, "sched/fair: Relax constraint
	// on task's load during load balance") instead of load/2.
	ShrBound bool
	// ActiveTaskOnly: the failure-count active balance only for
	// migrate_task imbalances (v5.12, e9b9734b7465 "sched/fair: Reduce
	// cases for active balance").
	ActiveTaskOnly bool
	// MisfitLoadSym: a misfit busiest on a symmetric domain is balanced by
	// its load (v6.0, reduced-capacity misfit).
	MisfitLoadSym bool
	// OverflowGuard: a fully busy local group at or above the busiest's or
	// the domain's avg_load pulls nothing (v6.4, 91dcf1e8068e "sched/fair:
	// Fix imbalance overflow").
	OverflowGuard bool
	// SMTBalance: group_smt_balance, sibling_imbalance, the SMT pick and
	// force rules, cores per group (v6.6: fee1759e4f04, d24cb0d9113f,
	// "Implement prefer sibling imbalance calculation between asymmetric
	// groups", ad468232c3eb, "Keep a fully_busy SMT sched group as
	// busiest").
	SMTBalance bool
	// PreferSiblingBusiest: prefer_sibling is taken from the busiest
	// group's child flags ("sched/fair: Use the busiest group to set
	// prefer_sibling", Ricardo Neri; 6.6.0's fair.c has it).
	PreferSiblingBusiest bool
	// StrictMisfitPick: same-type misfit groups replace the busiest only
	// with strictly more misfit load (v6.10-era).
	StrictMisfitPick bool
	// UtilShrBound: detach_tasks rejects a migrate_util task when
	// (util_est >> nr_balance_failed) > imbalance (v6.8, 3af7524b1419).
	UtilShrBound bool
	// IdleUnderflowFixed: the idle_cpus difference in calculate_imbalance
	// is floored at 0 ("sched/fair: Fix integer underflow", lsub_positive,
	// Fixes: 16b0a7a1a0af; not merged as of its Feb 2026 repost) instead of
	// wrapping as an unsigned int.
	IdleUnderflowFixed bool
}

// NumaRule is the NUMA imbalance allowance applied in calculate_imbalance
// when the local group has spare capacity (kernel-lb.md §4.5), an
// orthogonal knob of the policies (`replay whatif --numa-rule`).
type NumaRule int

const (
	// NumaNone: no allowance (v5.5).
	NumaNone NumaRule = iota
	// NumaMin2Src: the halved imbalance is dropped when the busiest group
	// runs <= 2 tasks (v5.6–v5.10, b396f52326de).
	NumaMin2Src
	// NumaFloat25: the halved imbalance is dropped when it is <= 2 and the
	// busiest group runs fewer tasks than a quarter of its CPUs (v5.11–v5.16,
	// 7d2b5dd0bcc4, 23e6082a522e).
	NumaFloat25
	// NumaFloat25Span: as NumaFloat25 against a quarter of the domain's
	// span (v5.17 [~ver]).
	NumaFloat25Span
	// NumaImbNrSrc: the halved imbalance is dropped when it is <= 2 and the
	// busiest group runs fewer than sd->imb_numa_nr tasks (v5.18–v5.19,
	// e496132ebedd; the halving order is [unverified]).
	NumaImbNrSrc
	// NumaImbNrDst: the unhalved imbalance is dropped when it is <= 2 and
	// local.sum_nr_running+1 <= imb_numa_nr, then halved (v6.0+, "sched/numa:
	// Apply imbalance limitations consistently").
	NumaImbNrDst
)

var numaRuleNames = []string{"none", "min2-src", "float25", "float25-span", "imb-nr-src", "imb-nr-dst"}

func (r NumaRule) String() string { return numaRuleNames[r] }

// ParseNumaRule parses a NUMA rule name (as String gives it).
func ParseNumaRule(s string) (NumaRule, bool) {
	for i, n := range numaRuleNames {
		if n == s {
			return NumaRule(i), true
		}
	}
	return 0, false
}

// NumaRuleNames lists the NUMA rule names.
func NumaRuleNames() []string { return append([]string(nil), numaRuleNames...) }

// NumaRuled is implemented by policies whose NUMA allowance can be
// replaced.
type NumaRuled interface {
	NumaRule() NumaRule
	WithNumaRule(NumaRule) Policy
}

// WithNumaRule returns p with its NUMA imbalance allowance replaced (the
// name gets a "+numa=RULE" suffix), or false if p has no such knob (the
// legacy policies). v6.1 is replaced by its rule-set form.
func WithNumaRule(p Policy, r NumaRule) (Policy, bool) {
	n, ok := p.(NumaRuled)
	if !ok {
		return p, false
	}
	if n.NumaRule() == r {
		return p, true
	}
	return n.WithNumaRule(r), true
}

func init() {
	RegisterPolicy("rework", func() Policy { return newRework() })
}

func newRework() *reworkPolicy {
	return &reworkPolicy{
		name:    "rework",
		kernels: "v5.5: 0b0695f2b34a \"sched/fair: Rework load_balance()\"",
		knobs:   Knobs{ImbalancePctDefault: 125, BusyFactor: 32},
	}
}

func (p *reworkPolicy) Name() string       { return p.name }
func (p *reworkPolicy) Kernels() string    { return p.kernels }
func (p *reworkPolicy) Knobs() Knobs       { return p.knobs }
func (p *reworkPolicy) NumaRule() NumaRule { return p.r.Numa }

func (p *reworkPolicy) WithNumaRule(r NumaRule) Policy {
	q := *p
	q.r.Numa = r
	q.name = p.name + "+numa=" + r.String()
	return &q
}

// hasCapacity is group_has_capacity() (with the v5.7 runnable test when
// the rules say so).
func (p *reworkPolicy) hasCapacity(pct uint64, sgs *SGStats) bool {
	if p.r.Runnable {
		return groupHasCapacity(pct, sgs)
	}
	if sgs.SumNrRunning < sgs.GroupWeight {
		return true
	}
	return sgs.GroupCapacity*100 > sgs.GroupUtil*pct
}

// isOverloaded is group_is_overloaded().
func (p *reworkPolicy) isOverloaded(pct uint64, sgs *SGStats) bool {
	if p.r.Runnable {
		return groupIsOverloaded(pct, sgs)
	}
	if sgs.SumNrRunning <= sgs.GroupWeight {
		return false
	}
	return sgs.GroupCapacity*100 < sgs.GroupUtil*pct
}

// Classify is group_classify(). group_smt_balance (v6.6) is set by
// AdjustGroup, on the load-balance path only.
func (p *reworkPolicy) Classify(env *LBEnv, sgs *SGStats) GroupType {
	switch {
	case p.isOverloaded(env.ImbalancePct, sgs):
		return GroupOverloaded
	case sgs.Imbalanced:
		return GroupImbalanced
	case sgs.MisfitLoad > 0:
		return GroupMisfitTask
	case !p.hasCapacity(env.ImbalancePct, sgs):
		return GroupFullyBusy
	}
	return GroupHasSpare
}

// AdjustGroup sets group_smt_balance (v6.6, smt_balance()): a non-local
// group of SMT siblings running more than one CFS task, balanced by a dst
// that is not busy, ranks above misfit and below asym packing.
func (p *reworkPolicy) AdjustGroup(env *LBEnv, sds *SDStats, sgs *SGStats, local bool) {
	if !p.r.SMTBalance || local || env.Idle == CPUNotIdle {
		return
	}
	if sgs.Flags&model.SDShareCPUCapacity != 0 && sgs.SumHNrRunning > 1 && sgs.GroupType < GroupSMTBalance {
		sgs.GroupType = GroupSMTBalance
	}
}

// smtVsNonSMT is smt_vs_nonsmt_groups(): exactly one group is SMT.
func smtVsNonSMT(a, b *SGStats) bool {
	return (a.Flags^b.Flags)&model.SDShareCPUCapacity != 0
}

// canHelpMisfit: the balancing CPU is bigger than the misfit group's
// biggest CPU (capacity_greater from v5.13 [~ver], the policies with
// v6.0's reduced-capacity misfit; before, the group's biggest CPU
// smaller than the local group's, group_smaller_max_cpu_capacity).
func (p *reworkPolicy) canHelpMisfit(env *LBEnv, sds *SDStats, sgs *SGStats) bool {
	if p.r.MisfitLoadSym {
		return capacityGreater(env.DstCapacity, sgs.MaxCapacity)
	}
	return fitsCapacity(sgs.MaxCapacity, sds.Local.MaxCapacity)
}

// bigIdleGroup is update_sd_pick_busiest()'s last test on an asymmetric
// domain: a group at most fully busy whose smallest CPU is bigger than
// the balancing side's (capacity_greater over the balancing CPU from
// v5.13 [~ver]; before, the local group's smallest CPU smaller than its
// own) is not emptied onto smaller CPUs.
func (p *reworkPolicy) bigIdleGroup(env *LBEnv, sds *SDStats, sgs *SGStats) bool {
	if env.SDFlags&model.SDAsymCPUCapacity == 0 || sgs.GroupType > GroupFullyBusy {
		return false
	}
	if p.r.MisfitLoadSym {
		return capacityGreater(sgs.MinCapacity, env.DstCapacity)
	}
	return sds.Local != nil && fitsCapacity(sds.Local.MinCapacity, sgs.MinCapacity)
}

// PickBusiest is update_sd_pick_busiest().
func (p *reworkPolicy) PickBusiest(env *LBEnv, sds *SDStats, sgs *SGStats) bool {
	if sgs.SumHNrRunning == 0 {
		return false
	}
	b := sds.Busiest
	// "Don't try to pull misfit tasks we can't help": from v6.0 only on
	// asymmetric domains (a reduced-capacity misfit on a symmetric one is
	// pulled by load whatever the local group).
	asymOnly := p.r.MisfitLoadSym && env.SDFlags&model.SDAsymCPUCapacity == 0
	if sgs.GroupType == GroupMisfitTask && !asymOnly && (sds.Local == nil || sds.Local.GroupType != GroupHasSpare ||
		env.SDFlags&model.SDAsymCPUCapacity != 0 && !p.canHelpMisfit(env, sds, sgs)) {
		return false
	}
	if b == nil {
		return !p.bigIdleGroup(env, sds, sgs)
	}
	if sgs.GroupType > b.GroupType {
		return true
	}
	if sgs.GroupType < b.GroupType {
		return false
	}
	hasSpare := func() bool {
		if sgs.IdleCPUs > b.IdleCPUs {
			return false
		}
		if sgs.IdleCPUs == b.IdleCPUs && sgs.SumNrRunning <= b.SumNrRunning {
			return false
		}
		return true
	}
	fullyBusy := func() bool {
		if !p.r.SMTBalance {
			// avg_load is 0 for fully busy groups: the first one stays.
			return sgs.AvgLoad > b.AvgLoad
		}
		if sgs.AvgLoad < b.AvgLoad {
			return false
		}
		if sgs.AvgLoad == b.AvgLoad && b.Flags&model.SDShareCPUCapacity != 0 {
			return false // keep an SMT busiest
		}
		return true
	}
	switch sgs.GroupType {
	case GroupOverloaded:
		return sgs.AvgLoad > b.AvgLoad
	case GroupImbalanced, GroupAsymPacking:
		return false
	case GroupMisfitTask:
		if p.r.StrictMisfitPick {
			return sgs.MisfitLoad > b.MisfitLoad
		}
		return sgs.MisfitLoad >= b.MisfitLoad
	case GroupSMTBalance:
		if sgs.IdleCPUs != 0 || b.IdleCPUs != 0 {
			return hasSpare()
		}
		return fullyBusy()
	case GroupFullyBusy:
		return fullyBusy() && !p.bigIdleGroup(env, sds, sgs)
	case GroupHasSpare:
		if p.bigIdleGroup(env, sds, sgs) {
			return false
		}
		if p.r.SMTBalance && smtVsNonSMT(b, sgs) {
			// Do not empty an SMT core running one task.
			return !(sgs.Flags&model.SDShareCPUCapacity != 0 && sgs.SumHNrRunning <= 1)
		}
		return hasSpare()
	}
	return false
}

// siblingImbalance is sibling_imbalance() (v6.6): the task imbalance that
// equalises tasks per core, doubled (calculate_imbalance halves it).
func siblingImbalance(env *LBEnv, sds *SDStats) int64 {
	b, l := sds.Busiest, sds.Local
	if env.Idle == CPUNotIdle || b.SumNrRunning == 0 {
		return 0
	}
	nb, nl := int64(b.Cores), int64(l.Cores)
	if nb == nl {
		d := int64(b.SumNrRunning) - int64(l.SumNrRunning)
		if d < 0 {
			d = 0
		}
		return d
	}
	imb := nl*int64(b.SumNrRunning) - nb*int64(l.SumNrRunning)
	if imb < 0 {
		imb = 0
	}
	imb = (2*imb + nl + nb) / (nl + nb)
	if imb <= 1 && l.SumNrRunning == 0 && b.SumNrRunning > 1 {
		imb = 2
	}
	return imb
}

// Decide is find_busiest_group()'s decision sequence (§4.2 steps 2–8,
// with the v6.6 and later changes).
func (p *reworkPolicy) Decide(env *LBEnv, sds *SDStats) Verdict {
	local, busiest := sds.Local, sds.Busiest
	if busiest == nil || busiest.SumHNrRunning == 0 {
		return Balanced
	}
	if p.r.PreferSiblingBusiest {
		sds.PreferSibling = busiest.Flags&model.SDPreferSibling != 0
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
	if sds.PreferSibling && local.GroupType == GroupHasSpare {
		if p.r.SMTBalance {
			if siblingImbalance(env, sds) > 1 {
				return ForceBalance
			}
		} else if busiest.SumNrRunning > local.SumNrRunning+1 {
			return ForceBalance
		}
	}
	if busiest.GroupType != GroupOverloaded {
		if env.Idle == CPUNotIdle {
			return Balanced
		}
		if p.r.SMTBalance && busiest.GroupType == GroupSMTBalance && smtVsNonSMT(local, busiest) {
			return ForceBalance
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

// CalculateImbalance is calculate_imbalance().
func (p *reworkPolicy) CalculateImbalance(env *LBEnv, sds *SDStats) {
	local, busiest := sds.Local, sds.Busiest
	switch busiest.GroupType {
	case GroupMisfitTask:
		if p.r.MisfitLoadSym && env.SDFlags&model.SDAsymCPUCapacity == 0 {
			env.MigrationType, env.Imbalance = MigrateLoad, int64(busiest.MisfitLoad)
		} else {
			env.MigrationType, env.Imbalance = MigrateMisfit, 1
		}
		return
	case GroupAsymPacking:
		env.MigrationType, env.Imbalance = MigrateTask, int64(busiest.SumHNrRunning)
		return
	case GroupSMTBalance:
		env.MigrationType, env.Imbalance = MigrateTask, 1
		return
	case GroupImbalanced:
		env.MigrationType, env.Imbalance = MigrateTask, 1
		return
	}
	if local.GroupType == GroupHasSpare {
		if busiest.GroupType > GroupFullyBusy && !(p.r.LLCNrRunning && env.SDFlags&model.SDShareLLC != 0) {
			// Use the spare capacity of the local group without
			// overloading it.
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
		var d int64 // the unhalved task imbalance
		switch {
		case (busiest.GroupWeight == 1 || sds.PreferSibling) && p.r.SMTBalance:
			d = siblingImbalance(env, sds)
		case busiest.GroupWeight == 1 || sds.PreferSibling:
			d = int64(busiest.SumNrRunning) - int64(local.SumNrRunning)
			if d < 0 {
				d = 0
			}
		case p.r.IdleUnderflowFixed:
			d = int64(local.IdleCPUs) - int64(busiest.IdleCPUs)
			if d < 0 {
				d = 0
			}
		default:
			// Unsigned int subtraction: wraps when busiest has more idle
			// CPUs (only reachable from 16b0a7a1a0af on).
			d = int64(local.IdleCPUs - busiest.IdleCPUs)
		}
		env.Imbalance = p.numaAdjust(env, sds, d)
		return
	}
	if local.GroupType < GroupOverloaded {
		local.AvgLoad = local.GroupLoad * capacityScale / local.GroupCapacity
		if p.r.OverflowGuard && local.AvgLoad >= busiest.AvgLoad {
			env.MigrationType, env.Imbalance = MigrateLoad, 0
			return
		}
		sds.AvgLoad = sds.TotalLoad * capacityScale / sds.TotalCapacity
		if p.r.OverflowGuard && local.AvgLoad >= sds.AvgLoad {
			env.MigrationType, env.Imbalance = MigrateLoad, 0
			return
		}
	}
	env.MigrationType = MigrateLoad
	env.Imbalance = loadImbalance(busiest, local, sds)
}

// loadImbalance is the migrate_load imbalance as the kernel computes it:
// avg_load is unsigned long, so a negative difference wraps to a huge
// value and min() picks the other term; with both negative the result is
// huge (what 91dcf1e8068e "Fix imbalance overflow" guards against, v6.4).
// Every policy from the rework on computes it this way, v6.1 included.
func loadImbalance(busiest, local *SGStats, sds *SDStats) int64 {
	a := (busiest.AvgLoad - sds.AvgLoad) * busiest.GroupCapacity
	b := (sds.AvgLoad - local.AvgLoad) * local.GroupCapacity
	if b < a {
		a = b
	}
	return int64(a / capacityScale)
}

// numaImbalanceMin is NUMA_IMBALANCE_MIN: the tasks a NUMA domain may stay
// imbalanced by while the destination is lightly loaded.
const numaImbalanceMin = 2

// numaAdjust applies the NUMA allowance to the unhalved task imbalance d
// and halves it (the number of tasks to move).
func (p *reworkPolicy) numaAdjust(env *LBEnv, sds *SDStats, d int64) int64 {
	if env.SDFlags&model.SDNUMA == 0 || p.r.Numa == NumaNone {
		return d >> 1
	}
	b, l := sds.Busiest, sds.Local
	switch p.r.Numa {
	case NumaImbNrDst:
		if int(l.SumNrRunning)+1 <= env.ImbNUMANr && d <= numaImbalanceMin {
			d = 0
		}
		return d >> 1
	}
	h := d >> 1
	switch p.r.Numa {
	case NumaMin2Src:
		if b.SumNrRunning <= numaImbalanceMin {
			h = 0
		}
	case NumaFloat25:
		if b.SumNrRunning < b.GroupWeight>>2 && h <= numaImbalanceMin {
			h = 0
		}
	case NumaFloat25Span:
		if int(b.SumNrRunning) < env.SpanWeight>>2 && h <= numaImbalanceMin {
			h = 0
		}
	case NumaImbNrSrc:
		if int(b.SumNrRunning) < env.ImbNUMANr && h <= numaImbalanceMin {
			h = 0
		}
	}
	return h
}

// AcceptForDetach is detach_tasks()'s acceptance by migration type.
func (p *reworkPolicy) AcceptForDetach(env *LBEnv, t DetachTask) bool {
	switch env.MigrationType {
	case MigrateLoad:
		if p.r.ShrBound {
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
			return true
		}
		// v5.5: load/2 > imbalance rejects, relaxed once the domain failed
		// more than cache_nice_tries times.
		if int64(t.Load/2) > env.Imbalance && env.NrBalanceFailed <= env.CacheNiceTries {
			return false
		}
		env.Imbalance -= int64(t.Load)
	case MigrateUtil:
		u := t.UtilEst
		if p.r.UtilShrBound {
			u = shrBound(u, env.NrBalanceFailed)
		}
		if int64(u) > env.Imbalance {
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

// shrBound is shr_bound(): v >> min(n, 63).
func shrBound(v uint64, n int) uint64 {
	if n > 63 {
		n = 63
	}
	return v >> uint(n)
}

// NeedActiveBalance is need_active_balance() (symmetric machines); its
// reduced-capacity source rule, the same in every policy, is the engine's
// (Sim.reducedCapacitySource).
func (p *reworkPolicy) NeedActiveBalance(env *LBEnv) bool {
	if env.MigrationType == MigrateMisfit {
		return true
	}
	failed := env.NrBalanceFailed > env.CacheNiceTries+2
	if p.r.ActiveTaskOnly {
		return failed && env.MigrationType == MigrateTask
	}
	return failed
}
