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
	// Imbalanced is the group's sgc->imbalance flag; Overload records a CPU
	// with more than one task.
	Imbalanced bool
	Overload   bool
	// Flags are the group's flags (the child domain's, sg->flags).
	Flags model.SDFlags
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

	Imbalance     int64
	MigrationType MigrationType
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
	// (v6.0+); otherwise SIS_PROP.
	SISUtil bool
	// RunnableInNumaOrWake etc. are not needed by v6.1.
	// AllPinnedEarly: LBF_ALL_PINNED is set before the nr_running > 1 test
	// (~v6.2+).
	AllPinnedEarly bool
	// EEVDF: the per-CPU discipline is EEVDF (v6.6+) instead of CFS.
	EEVDF bool
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

// LookupPolicy returns the named policy.
func LookupPolicy(name string) (Policy, error) {
	f, ok := policies[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(PolicyNames(), ", "))
	}
	return f(), nil
}

// PolicyForKernel picks the policy modelling a kernel release: the one
// whose range holds it. Only v6.1 (v5.18–v6.3) exists so far; other
// releases get an error naming what exists.
func PolicyForKernel(release string) (Policy, error) {
	kv, err := model.ParseKernelVersion(release)
	if err != nil {
		return nil, err
	}
	if kv.AtLeast(5, 18) && !kv.AtLeast(6, 4) {
		return LookupPolicy("v6.1")
	}
	return nil, fmt.Errorf("no policy models kernel %s yet (known: %s; v6.1 covers v5.18–v6.3); choose one with --policy", release, strings.Join(PolicyNames(), ", "))
}
