package whatif

import (
	"fmt"
	"sort"
	"strings"

	"github.com/schedreplay/replay/model"
)

// GroupType is enum group_type (v5.5+, kernel-lb.md §3.7), in
// pulling-priority order: a higher value is busier.
type GroupType int

// Group types of v5.5–v6.5 (v6.6 inserts group_smt_balance before
// group_asym_packing; its policy maps onto this order).
const (
	GroupHasSpare GroupType = iota
	GroupFullyBusy
	GroupMisfitTask
	GroupSMTBalance
	GroupAsymPacking
	GroupImbalanced
	GroupOverloaded
)

var groupTypeNames = []string{"has_spare", "fully_busy", "misfit_task", "smt_balance", "asym_packing", "imbalanced", "overloaded"}

func (g GroupType) String() string { return "group_" + groupTypeNames[g] }

// MigrationType is enum migration_type.
type MigrationType int

const (
	MigrateLoad MigrationType = iota
	MigrateUtil
	MigrateTask
	MigrateMisfit
)

var migrationTypeNames = []string{"migrate_load", "migrate_util", "migrate_task", "migrate_misfit"}

func (m MigrationType) String() string { return migrationTypeNames[m] }

// IdleType is enum cpu_idle_type of a balance pass.
type IdleType int

const (
	CPUIdle IdleType = iota
	CPUNotIdle
	CPUNewlyIdle
)

// SGStats is struct sg_lb_stats: one group's statistics as
// update_sg_lb_stats gathers them (§3.6).
type SGStats struct {
	AvgLoad       uint64 // group_load × 1024 / capacity (overloaded groups only)
	GroupLoad     uint64 // Σ cpu_load (cfs load_avg incl. blocked)
	GroupCapacity uint64
	GroupUtil     uint64 // Σ cpu_util
	GroupRunnable uint64 // Σ cpu_runnable
	SumNrRunning  uint32 // Σ rq->nr_running (all classes)
	SumHNrRunning uint32 // Σ cfs.h_nr_running
	IdleCPUs      uint32
	GroupWeight   uint32
	GroupType     GroupType
	MisfitLoad    uint64
	// MinCapacity, MaxCapacity: the least and most capacity_of of the
	// group's CPUs (sgc->min_capacity, max_capacity), which the misfit
	// and asymmetric-capacity rules compare.
	MinCapacity, MaxCapacity uint64
	// Imbalanced is the group's sgc->imbalance flag; Overload records a CPU
	// with more than one task.
	Imbalanced bool
	Overload   bool
	// Overutilized: a CPU of the group is overutilized (SG_OVERUTILIZED,
	// with EAS only).
	Overutilized bool
	// Flags are the group's flags (the child domain's, sg->flags).
	Flags model.SDFlags
	// Cores is the number of SMT cores in the group (sg->cores, v6.6+).
	Cores uint32
	// RunnableLoad is Σ over the group's CPUs of the load_avg of their
	// queued CFS tasks: v5.4's runnable_load_avg. Filled only for
	// policies whose Knobs ask for it (RunnableLoad).
	RunnableLoad uint64
	// LoadPerTask is v5.4's load_per_task (legacy policies only).
	LoadPerTask uint64
}

// SDStats is struct sd_lb_stats.
type SDStats struct {
	Busiest, Local *SGStats
	// BusiestIdx is the index of the busiest group in the domain's group
	// list (-1 none).
	BusiestIdx    int
	TotalLoad     uint64
	TotalCapacity uint64
	AvgLoad       uint64
	PreferSibling bool
}

// LBEnv is struct lb_env: one load_balance() pass.
type LBEnv struct {
	// Domain parameters.
	SDFlags         model.SDFlags
	ImbalancePct    uint64
	SpanWeight      int
	ImbNUMANr       int
	CacheNiceTries  int
	NrBalanceFailed int
	HasParent       bool

	DstCPU int
	Idle   IdleType
	// DstCapacity is capacity_of(DstCPU).
	DstCapacity uint64

	Imbalance     int64
	MigrationType MigrationType
	// SrcGroupType is the busiest group's type (lb_env's src_grp_type up
	// to v5.4, which find_busiest_queue and need_active_balance read).
	SrcGroupType GroupType
}

// Verdict is the outcome of find_busiest_group's decision sequence.
type Verdict int

const (
	Balanced Verdict = iota
	ForceBalance
)

// DetachTask is what a policy may look at when detach_tasks() considers a
// task.
type DetachTask struct {
	Load    uint64 // task_h_load (= load_avg without cgroups)
	UtilEst uint64 // task_util_est
	FitsSrc bool   // task fits capacity_of(src) (misfit)
}

// Policy is the swappable part of the load balancer (kernel-lb.md §4.0):
// group classification, update_sd_pick_busiest, the decision sequence of
// find_busiest_group, calculate_imbalance, the detach_tasks acceptance
// rule and need_active_balance, plus the knobs that changed with them.
// Everything else (statistics, find_busiest_queue, can_migrate_task,
// intervals, wakeup placement) is shared simulator code.
type Policy interface {
	Name() string
	// Kernels names the kernel range and upstream commits it models.
	Kernels() string
	Knobs() Knobs
	// Classify is group_classify().
	Classify(env *LBEnv, sgs *SGStats) GroupType
	// PickBusiest is update_sd_pick_busiest(): should sgs replace the
	// current busiest?
	PickBusiest(env *LBEnv, sds *SDStats, sgs *SGStats) bool
	// Decide is find_busiest_group's sequence after the statistics.
	Decide(env *LBEnv, sds *SDStats) Verdict
	// CalculateImbalance sets env.MigrationType and env.Imbalance.
	CalculateImbalance(env *LBEnv, sds *SDStats)
	// AcceptForDetach decides whether detach_tasks() takes t, updating
	// env.Imbalance when it does.
	AcceptForDetach(env *LBEnv, t DetachTask) bool
	// NeedActiveBalance is need_active_balance() for a pass that moved
	// nothing (after nr_balance_failed was incremented).
	NeedActiveBalance(env *LBEnv) bool
}

// Knobs are the version-dependent settings that changed together with a
// policy (§4.0).
type Knobs struct {
	// IntervalMinusOne: the busy balance interval is one jiffy shorter
	// (v5.10+).
	IntervalMinusOne bool
	// NewidleGate516: newidle_balance is gated by avg_idle against the
	// lowest domain's max_newidle_lb_cost (v5.16+) rather than against
	// sysctl_sched_migration_cost.
	NewidleGate516 bool
	// SISUtil: select_idle_cpu's scan budget is SIS_UTIL's nr_idle_scan
	// (v6.0+); otherwise the scan is unlimited: the older SIS_PROP budget
	// (avg_idle against the measured avg_scan_cost) is not modelled.
	SISUtil bool
	// SelectIdleCapacity: on a machine of unequal capacities (an
	// SD_ASYM_CPUCAPACITY domain), select_idle_sibling takes target, prev
	// and the recently used CPU only where the wakee's utilisation fits
	// the CPU (asym_fits_cpu) and scans the asymmetric domain for an idle
	// CPU it fits, else the idle one of most capacity
	// (select_idle_capacity: b7a331615d25, v5.7, in its v5.10 form with
	// b4c9c9f15649); without uclamp, which is not modelled. Off: wakeups
	// are placed as on equal CPUs (and wake_cap, v4.10-v5.7, is not
	// modelled).
	SelectIdleCapacity bool
	// RunnableInNumaOrWake etc. are not needed by v6.1.
	// AllPinnedEarly: LBF_ALL_PINNED is set before the nr_running > 1 test
	// and cleared by an active balance's kick (v5.12 on, 8a41dfcda7a3);
	// before, out_one_pinned set it when the busiest CPU's current task
	// could not be pushed.
	AllPinnedEarly bool
	// IdleCoreBalance: should_we_balance lets an idle CPU on a fully idle
	// core balance a domain above the SMT level before an idle CPU whose
	// sibling is busy, and the first such CPU only when no core of the
	// local group is idle (b1bfeab9b002 "sched/fair: Consider the idle
	// state of the whole core for load balance", v6.6, with its fix
	// 6d7e4782bcf5 "sched/fair: Fix the decision for load balance", v6.7
	// and 6.6.y, which stops the group's first CPU balancing too). Before,
	// the local group's first idle CPU balanced, core or not.
	IdleCoreBalance bool
	// ClusterWakeup: on a machine with clusters (an SD_CLUSTER domain,
	// sched_cluster_active) select_idle_sibling takes an idle prev or
	// recently used CPU at once only when it shares the target's cluster
	// (cpus_share_resources), scans the target's cluster before the rest
	// of the LLC, and falls back to those CPUs when the scan finds
	// nothing ("sched/fair: Scan cluster before scanning LLC in wake-up
	// path", 8881e1639f1f, with 22165f61d0c4, v6.7). The domains must
	// be built by v6.7+ rules (the trace's kernel, or --kernel) for the
	// flag to exist.
	ClusterWakeup bool
	// EEVDF: the per-CPU discipline is EEVDF (v6.6+) instead of CFS.
	EEVDF bool
	// DelayDequeue: EEVDF's DELAY_DEQUEUE and DELAY_ZERO (v6.12+): a task
	// that blocks while not eligible stays queued until picked or woken.
	DelayDequeue bool
	// BaseSlice070: EEVDF's base slice is 0.70 ms × the CPU factor
	// (v6.15+, 2ae891b82695) instead of 0.75 ms.
	BaseSlice070 bool
	// ForkHalfDeadline: a forked task's first deadline is half a slice
	// (PLACE_DEADLINE_INITIAL honoured at its first enqueue, c40dd90ac045,
	// v6.12). Before, wake_up_new_task placed it a second time without
	// ENQUEUE_INITIAL: a full slice.
	ForkHalfDeadline bool
	// ForkNoPreempt: a fork (WF_FORK) never wakeup-preempts under EEVDF
	// (e837456fdca8, NEXT_BUDDY's re-implementation, v6.19; in 6.18.y from
	// May 2026). Its other rule, a task's wakeup rescheduling a waker no
	// longer eligible, was reverted before v6.19 (15257cc2f905) and is not
	// modelled; NEXT_BUDDY itself is off (default off again from v6.19-rc7).
	ForkNoPreempt bool
	// NIRandom: NI_RANDOM, newidle balancing run per domain with its
	// measured success rate (33cf66d88306 "sched/fair: Proportional
	// newidle balance", v6.19; backported to the 6.1, 6.6 and 6.12 stable
	// series in December 2025 and January 2026: the 6.1.192 guests of
	// fixtures/kernels list it in sched/features). On in `v6.1`, `v6.6`
	// and `v6.12` (those LTS series as they are now), off in `v6.10` and
	// `latest` (FIDELITY.md round 74: this project's 6.18.44 probably
	// runs it, but its replays meet fewer goals with it).
	NIRandom bool
	// NewidleBumpOnFail: v6.17's 155213a2aed4, a newidle pass that pulls
	// nothing counts as costing half as much again as the domain's
	// max_newidle_lb_cost, which is capped at sysctl_sched_migration_cost
	// + 200 ns: failing passes shut the gate (reverted with NI_RANDOM's
	// series).
	NewidleBumpOnFail bool
	// DelayedMigrateLoadOnly: the balancer moves a delayed task only to
	// migrate load (61b82dfb6b7e "sched/fair: Do not try to migrate delayed
	// dequeue task", v6.14); before, for any migration type. A moved one
	// stays delayed on its new CPU.
	DelayedMigrateLoadOnly bool
	// PlaceRelDeadline: PLACE_REL_DEADLINE (82e9d0456e06 "sched/fair:
	// Avoid re-setting virtual deadline on 'migrations'", v6.12): a task
	// dequeued other than to sleep (moved by the balancer or the stopper)
	// keeps its deadline relative to its vruntime, where before its
	// placement on the new CPU gave it a fresh request.
	PlaceRelDeadline bool
	// LagClampMaxSlice: update_entity_lag clamps the lag to the largest
	// queued slice plus one tick (6e3c0a4e1ad1 "sched/fair: Fix lag
	// clamp", v7.0; in the 6.18 stable series, 6.18.35's fair.c) instead
	// of max(2 × the task's slice, one tick).
	LagClampMaxSlice bool
	// ReschedIneligible: update_curr also reschedules a task that is no
	// longer eligible once its pick-time slice protection is over
	// (85e511df3cec "sched/eevdf: Allow shorter slices to wakeup-preempt",
	// v6.12: did_preempt_short, renamed resched_next_slice in v6.17).
	// Without it (v6.6–v6.11) update_curr reschedules only in the update
	// that finds the request used up (update_deadline), with others queued.
	ReschedIneligible bool
	// ReschedUnprotected: update_curr reschedules whenever the slice
	// protection is over and others are queued, eligible or not
	// (0b9ca2dcabc3 "sched/fair: Always trigger resched at the end of a
	// protected period", v6.17).
	ReschedUnprotected bool
	// WakeupPickDelayed: the wakeup-preemption check picks with
	// pick_next_entity, so a delayed task it picks is dequeued for good and
	// the pick is made again (ac8e69e69363 and its fix 9f6d929ee2c6; in
	// 6.18.y from May 2026).
	WakeupPickDelayed bool
	// DeadlineTree: the EEVDF tree is sorted by deadline (2227a957e1d5
	// "sched/eevdf: Sort the rbtree by virtual deadline", v6.8), and the
	// pick is its leftmost eligible entity: among equal deadlines the one
	// inserted first. Before, sorted by vruntime, the tie went by the
	// tree's shape (not modelled: the smaller vruntime here).
	DeadlineTree bool
	// InitUtilTrueWeight: a new task's initial util_avg (and runnable_avg)
	// is the cfs_rq's util_avg × the task's weight / (its load_avg + 1),
	// capped at half the spare capacity (72bffbf57c52 "sched/fair: Fix
	// initial util_avg calculation", v6.10). Before it a 64-bit kernel
	// multiplied by the scaled weight (1024 × larger), so the cap always
	// won: each new task got half of what its CPU's util left.
	InitUtilTrueWeight bool
	// WakeupStatsAllowed: find_idlest_group's group statistics
	// (update_sg_wakeup_stats) sum only the CPUs the task may use, the
	// group's capacity still all of them (82d6e01a0699 "sched/fair: Only
	// update stats for allowed CPUs when looking for dst group", v6.19; in
	// the 6.1.y, 6.6.y and 6.18.y stable series from July 2026). Before
	// it an idle CPU the task may not use made its group look idle. Only
	// a task with an affinity (Task.Allowed) sees the difference.
	WakeupStatsAllowed bool
	// HNrRunnable: the balancer counts a CPU's CFS tasks without the
	// delayed-dequeue ones (cfs.h_nr_runnable: 1a49104496d3 "sched/fair:
	// Use the new cfs_rq.h_nr_runnable", v6.14) in sum_h_nr_running,
	// find_busiest_queue, need_active_balance's and update_sg_lb_stats'
	// reduced-capacity tests and the nohz kick; before, cfs.h_nr_running
	// (h_nr_queued), which counts them (6.12.y took the counter, c2a295bffeaf,
	// for wake_affine_idle's sync test, not this use). Only a run queue with
	// delayed tasks (DelayDequeue) sees the difference.
	HNrRunnable bool
	// RunnableBoost: find_busiest_queue's migrate_util compares CPUs by
	// their boosted utilisation, max(util_avg, runnable_avg, util_est)
	// (cpu_util_cfs_boost: 7d0583cf9ec7 "sched/fair, cpufreq: Introduce
	// 'runnable boosting'", v6.5, with c2e164ac33f7 "sched/fair: Remove
	// util_est boosting", v6.6). Before, by cpu_util_cfs. Only above the
	// LLC (the one place migrate_util is used); its schedutil and EAS uses
	// are not modelled.
	RunnableBoost bool
	// MigrateEligibleFirst: can_migrate_task leaves a task that is not
	// eligible on its CPU (EEVDF, PLACE_LAG) where it is, while the
	// domain's nr_balance_failed is 0 and the destination has entities
	// queued (873199d27bb2 "sched/core: Prioritize migrating eligible
	// tasks in sched_balance_rq()", v6.14).
	MigrateEligibleFirst bool
	// ForkNumaIdleDiff: find_idlest_group keeps a new task on its NUMA
	// node under imb_numa_nr only while the nodes' idle CPUs differ by at
	// most 2 (adjust_numa_imbalance, "sched/numa: Apply imbalance
	// limitations consistently", v6.0); before, whenever the node had
	// room.
	ForkNumaIdleDiff bool
	// UtilEstRunnableSkip: util_est_update records a sleep's sample
	// without moving the EWMA when the task was runnable for more than 1 %
	// of capacity longer than it ran (50181c0cff31 "sched/pelt: Avoid
	// underestimation of task utilization"; in 6.6.y's fair.c at 6.6.150,
	// not in 6.1.y's at 6.1.166).
	UtilEstRunnableSkip bool
	// UtilEstSingle: util_est is the EWMA alone (11137d384996
	// "sched/fair: Simplify util_est", v6.9): no separate last sample, an
	// equal sample or a change under 1 % ends the update with the
	// unchanged flag set.
	UtilEstSingle bool
	// StatRuntimeAllClasses: sched_stat_runtime comes from every class's
	// runtime accounting (real-time and stop tasks too) and has no
	// vruntime field (v6.8+).
	StatRuntimeAllClasses bool
	// StatRuntimeRT: update_curr_rt emits sched_stat_runtime too, with
	// vruntime 0 (v5.16 [~ver], the RT class's schedstats; 6.1's rt.c
	// has it, and the guests' traces show it for SCHED_FIFO tasks); the
	// stopper does not. Before, only CFS's update_curr emits it.
	StatRuntimeRT bool
	// BaseSlice: CFS's sched_slice is at least the minimum granularity
	// (sched feature BASE_SLICE, v5.13+). Before it a low-weight task's
	// slice could be far shorter.
	BaseSlice bool
	// ImbalancePctDefault and BusyFactor, when non-zero, replace sd_init's
	// imbalance_pct for domains that are neither SMT nor LLC (125 up to
	// v5.9, 117 from v5.10) and busy_factor (32 / 16) of the kernel whose
	// domains are built: they changed together with the policies.
	ImbalancePctDefault, BusyFactor int
	// RunnableLoad asks the engine to fill SGStats.RunnableLoad (v5.4's
	// runnable_load_avg, for legacy policies).
	RunnableLoad bool
	// IdlestByLoad: find_idlest_group as it was up to v5.4 (v5.5 reworked
	// it by group type, 57abff067a08): the group of least runnable load,
	// blocked load breaking near ties, and for a wakeup first the group
	// with the CPU of most spare capacity (findIdlestGroupByLoad).
	IdlestByLoad bool
}

// GroupStatsHook is implemented by policies that look at the domain's
// statistics while update_sd_lb_stats gathers them: legacy's
// prefer-sibling demotion (a non-local group is re-classified against
// the local group's statistics) and v6.6's group_smt_balance (set only on
// the load-balance path, never for wakeup statistics). The engine calls
// AdjustGroup for every group right after update_sg_lb_stats (and
// Classify), before update_sd_pick_busiest; the local group comes first,
// so sds.Local is set when a non-local group is adjusted. A policy that
// changes sgs.GroupType to overloaded sets sgs.AvgLoad itself.
type GroupStatsHook interface {
	AdjustGroup(env *LBEnv, sds *SDStats, sgs *SGStats, local bool)
}

var policies = map[string]func() Policy{}

// RegisterPolicy makes a policy available by name (policy files call it
// from init).
func RegisterPolicy(name string, f func() Policy) { policies[name] = f }

// PolicyNames lists the registered policies, sorted.
func PolicyNames() []string {
	var n []string
	for k := range policies {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// LookupPolicy returns the named policy, or one changed by switchable
// commits: POLICY~ID (reverted) and POLICY+ID (applied), in order.
func LookupPolicy(name string) (Policy, error) {
	base, ops := name, ""
	if i := strings.IndexAny(name, "~+"); i >= 0 {
		base, ops = name[:i], name[i:]
	}
	f, ok := policies[base]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(PolicyNames(), ", "))
	}
	p := f()
	// POLICY~ID reverts and POLICY+ID applies a switchable commit, in
	// order, as WithCommits names its results: a changed policy can be
	// named wherever a policy can (--policy, --baseline, and so
	// --validate without a comparison).
	for ops != "" {
		sep := ops[0]
		ops = ops[1:]
		id := ops
		if i := strings.IndexAny(ops, "~+"); i >= 0 {
			id, ops = ops[:i], ops[i:]
		} else {
			ops = ""
		}
		if id == "" {
			return nil, fmt.Errorf("policy %q: a commit ID after %q", name, string(sep))
		}
		var err error
		if sep == '~' {
			p, err = WithCommits(p, []string{id}, nil)
		} else {
			p, err = WithCommits(p, nil, []string{id})
		}
		if err != nil {
			return nil, fmt.Errorf("policy %q: %v", name, err)
		}
	}
	return p, nil
}

// kernelRanges maps kernel releases to the policy whose range holds them
// (kernel-lb.md §4.0), newest first: the first entry whose lower bound
// the release reaches.
var kernelRanges = []struct {
	major, minor int
	policy       string
}{
	{6, 15, "latest"}, {6, 12, "v6.12"}, {6, 10, "v6.10"}, {6, 4, "v6.6"}, {5, 18, "v6.1"}, {5, 11, "numa-float"},
	{5, 10, "llc-nr-running"}, {5, 7, "runnable-avg"}, {5, 6, "rework-numa2"},
	{5, 5, "rework"}, {4, 15, "legacy"}, {4, 0, "legacy-presibfix"},
}

// stableBefore lists the switchable changes a stable series took at a
// known sublevel: a release of that series named with an earlier,
// nonzero sublevel lacks the change its policy has. Only sublevels
// checked against the stable tree's own history are listed; a release
// that names none (6.12, or a distribution's 6.1.0-57) keeps the
// policy's default, as its true sublevel is not in the name.
var stableBefore = []struct {
	major, minor, sublevel int
	commit                 string
}{
	// NI_RANDOM reached 6.12.y in 6.12.65 (linux-stable-rc's 6.12.65-rc1,
	// January 2026); Debian's 6.12.57, whose sched/features list no
	// NI_RANDOM, is one such release (FIDELITY.md round 110).
	{6, 12, 65, "33cf66d88306"},
}

// mainlineAdds lists the switchable changes a mainline release inside a
// policy's range took: a release at or after major.minor gets them
// applied to the range's policy (v6.14's three balancer changes, which
// `latest` has, on `v6.12` for a 6.14 kernel).
var mainlineAdds = []struct {
	major, minor int
	policy       string
	commit       string
}{
	{6, 14, "v6.12", "61b82dfb6b7e"},
	{6, 14, "v6.12", "1a49104496d3"},
	{6, 14, "v6.12", "873199d27bb2"},
}

// PolicyForKernel picks the policy modelling a kernel release: the one
// whose range holds it (legacy from v4.15, where the prefer-sibling
// "+1" rule is taken to have landed [unverified, kernel-lb.md §9.2];
// legacy-presibfix for older v4.x), less the stable series' changes
// its sublevel predates (stableBefore), plus the changes of a later
// mainline release inside the range (mainlineAdds). Releases before v4.0
// get an error.
func PolicyForKernel(release string) (Policy, error) {
	kv, err := model.ParseKernelVersion(release)
	if err != nil {
		return nil, err
	}
	for _, r := range kernelRanges {
		if kv.AtLeast(r.major, r.minor) {
			if _, ok := policies[r.policy]; ok {
				name := r.policy
				for _, b := range stableBefore {
					if kv.Major == b.major && kv.Minor == b.minor && kv.Patch > 0 && kv.Patch < b.sublevel {
						name += "~" + b.commit
					}
				}
				for _, a := range mainlineAdds {
					if a.policy == r.policy && kv.AtLeast(a.major, a.minor) {
						name += "+" + a.commit
					}
				}
				return LookupPolicy(name)
			}
			break
		}
	}
	return nil, fmt.Errorf("no policy models kernel %s (known: %s); choose one with --policy", release, strings.Join(PolicyNames(), ", "))
}

// applyDomainKnobs overrides sd_init's version-dependent tunables with a
// policy's (Knobs.ImbalancePctDefault, Knobs.BusyFactor). Zero knobs
// leave the domains as the kernel's rules built them.
func applyDomainKnobs(d *model.Domains, k Knobs) {
	if k.ImbalancePctDefault == 0 && k.BusyFactor == 0 {
		return
	}
	for _, cd := range d.CPUs {
		for _, sd := range cd.Domains {
			if k.BusyFactor != 0 {
				sd.BusyFactor = k.BusyFactor
			}
			if k.ImbalancePctDefault != 0 && sd.Flags&(model.SDShareCPUCapacity|model.SDShareLLC) == 0 {
				sd.ImbalancePct = k.ImbalancePctDefault
			}
		}
	}
}
