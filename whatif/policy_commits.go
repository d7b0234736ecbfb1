package whatif

import (
	"fmt"
	"sort"
	"strings"
)

// Upstream changes that can be taken out of a policy or added to one
// (`replay whatif --policy v6.1 --revert 16b0a7a1a0af`): each is one switch
// of the rule set (lbRules) or of the knobs. NUMA allowance changes are
// the separate --numa-rule knob; the legacy policies have no switches.
type commitRule struct {
	ID, Title, Kernel string
	set               func(p *reworkPolicy, on bool)
	get               func(p *reworkPolicy) bool
}

var commitRules = []commitRule{
	{"070f5e860ee2", "sched/fair: Take into account runnable_avg to classify group", "v5.7",
		func(p *reworkPolicy, on bool) { p.r.Runnable = on }, func(p *reworkPolicy) bool { return p.r.Runnable }},
	{"16b0a7a1a0af", "sched/fair: Ensure tasks spreading in LLC during LB", "v5.10",
		func(p *reworkPolicy, on bool) { p.r.LLCNrRunning = on }, func(p *reworkPolicy) bool { return p.r.LLCNrRunning }},
	{"e9b9734b7465", "sched/fair: Reduce cases for active balance (failure-count active balance only for migrate_task)", "v5.12",
		func(p *reworkPolicy, on bool) { p.r.ActiveTaskOnly = on }, func(p *reworkPolicy) bool { return p.r.ActiveTaskOnly }},
	{"8a41dfcda7a3", "sched/fair: Don't set LBF_ALL_PINNED unnecessarily (set before the nr_running test, cleared by an active balance's kick)", "v5.12",
		func(p *reworkPolicy, on bool) { p.knobs.AllPinnedEarly = on }, func(p *reworkPolicy) bool { return p.knobs.AllPinnedEarly }},
	{"c5b0a7eefc70", "sched/fair: Remove sysctl_sched_migration_cost condition (newidle gate)", "v5.16",
		func(p *reworkPolicy, on bool) { p.knobs.NewidleGate516 = on }, func(p *reworkPolicy) bool { return p.knobs.NewidleGate516 }},
	{"b4c9c9f15649", "sched/fair: Prefer prev cpu in asymmetric wakeup path (with b7a331615d25, v5.7: select_idle_capacity on machines of unequal capacities)", "v5.10",
		func(p *reworkPolicy, on bool) { p.knobs.SelectIdleCapacity = on }, func(p *reworkPolicy) bool { return p.knobs.SelectIdleCapacity }},
	{"70fb5ccf2ebb", "sched/fair: Introduce SIS_UTIL to search idle CPU based on sum of util_avg", "v6.0",
		func(p *reworkPolicy, on bool) { p.knobs.SISUtil = on }, func(p *reworkPolicy) bool { return p.knobs.SISUtil }},
	{"91dcf1e8068e", "sched/fair: Fix imbalance overflow", "v6.4",
		func(p *reworkPolicy, on bool) { p.r.OverflowGuard = on }, func(p *reworkPolicy) bool { return p.r.OverflowGuard }},
	{"fee1759e4f04", "sched/fair: Determine active load balance for SMT sched groups (+ d24cb0d9113f, sibling imbalance, ad468232c3eb: one switch)", "v6.6",
		func(p *reworkPolicy, on bool) { p.r.SMTBalance = on }, func(p *reworkPolicy) bool { return p.r.SMTBalance }},
	{"b1bfeab9b002", "sched/fair: Consider the idle state of the whole core for load balance (+ 6d7e4782bcf5, its fix, v6.7 and 6.6.y: one switch)", "v6.6",
		func(p *reworkPolicy, on bool) { p.knobs.IdleCoreBalance = on }, func(p *reworkPolicy) bool { return p.knobs.IdleCoreBalance }},
	{"7d0583cf9ec7", "sched/fair, cpufreq: Introduce 'runnable boosting' (find_busiest_queue's migrate_util by max(util, runnable); + c2e164ac33f7, v6.6, no util_est boosting: one switch)", "v6.5",
		func(p *reworkPolicy, on bool) { p.knobs.RunnableBoost = on }, func(p *reworkPolicy) bool { return p.knobs.RunnableBoost }},
	{"147f3efaa241", "sched/fair: Implement an EEVDF-like scheduling policy (run queue)", "v6.6",
		func(p *reworkPolicy, on bool) { p.knobs.EEVDF = on }, func(p *reworkPolicy) bool { return p.knobs.EEVDF }},
	{"8881e1639f1f", "sched/fair: Scan cluster before scanning LLC in wake-up path (+ 22165f61d0c4, prev or the recently used CPU after a failed scan: one switch)", "v6.7",
		func(p *reworkPolicy, on bool) { p.knobs.ClusterWakeup = on }, func(p *reworkPolicy) bool { return p.knobs.ClusterWakeup }},
	{"3af7524b1419", "sched/fair: Use all little CPUs for CPU-bound workloads (util detach relaxed)", "v6.8",
		func(p *reworkPolicy, on bool) { p.r.UtilShrBound = on }, func(p *reworkPolicy) bool { return p.r.UtilShrBound }},
	{"72bffbf57c52", "sched/fair: Fix initial util_avg calculation (a new task's util_avg per unit of load, not half the spare capacity)", "v6.10",
		func(p *reworkPolicy, on bool) { p.knobs.InitUtilTrueWeight = on }, func(p *reworkPolicy) bool { return p.knobs.InitUtilTrueWeight }},
	{"c40dd90ac045", "sched: Initialize the vruntime of a new task when it is first enqueued (a fork's first deadline half a slice)", "v6.12",
		func(p *reworkPolicy, on bool) { p.knobs.ForkHalfDeadline = on }, func(p *reworkPolicy) bool { return p.knobs.ForkHalfDeadline }},
	{"1a49104496d3", "sched/fair: Use the new cfs_rq.h_nr_runnable (the balancer's task counts leave delayed-dequeue tasks out)", "v6.14",
		func(p *reworkPolicy, on bool) { p.knobs.HNrRunnable = on }, func(p *reworkPolicy) bool { return p.knobs.HNrRunnable }},
	{"873199d27bb2", "sched/core: Prioritize migrating eligible tasks in sched_balance_rq() (a task not eligible stays until the domain's balancing fails)", "v6.14",
		func(p *reworkPolicy, on bool) { p.knobs.MigrateEligibleFirst = on }, func(p *reworkPolicy) bool { return p.knobs.MigrateEligibleFirst }},
	{"61b82dfb6b7e", "sched/fair: Do not try to migrate delayed dequeue task (unless migrating load)", "v6.14",
		func(p *reworkPolicy, on bool) { p.knobs.DelayedMigrateLoadOnly = on }, func(p *reworkPolicy) bool { return p.knobs.DelayedMigrateLoadOnly }},
	{"82e9d0456e06", "sched/fair: Avoid re-setting virtual deadline on 'migrations' (PLACE_REL_DEADLINE)", "v6.12",
		func(p *reworkPolicy, on bool) { p.knobs.PlaceRelDeadline = on }, func(p *reworkPolicy) bool { return p.knobs.PlaceRelDeadline }},
	{"85e511df3cec", "sched/eevdf: Allow shorter slices to wakeup-preempt (update_curr reschedules an ineligible task past its pick-time protection)", "v6.12",
		func(p *reworkPolicy, on bool) { p.knobs.ReschedIneligible = on }, func(p *reworkPolicy) bool { return p.knobs.ReschedIneligible }},
	{"0b9ca2dcabc3", "sched/fair: Always trigger resched at the end of a protected period", "v6.17",
		func(p *reworkPolicy, on bool) { p.knobs.ReschedUnprotected = on }, func(p *reworkPolicy) bool { return p.knobs.ReschedUnprotected }},
	{"6e3c0a4e1ad1", "sched/fair: Fix lag clamp (the largest queued slice plus one tick)", "v7.0",
		func(p *reworkPolicy, on bool) { p.knobs.LagClampMaxSlice = on }, func(p *reworkPolicy) bool { return p.knobs.LagClampMaxSlice }},
	{"2227a957e1d5", "sched/eevdf: Sort the rbtree by virtual deadline (ties picked in insertion order)", "v6.8",
		func(p *reworkPolicy, on bool) { p.knobs.DeadlineTree = on }, func(p *reworkPolicy) bool { return p.knobs.DeadlineTree }},
	{"152e11f6df29", "sched/fair: Implement delayed dequeue (EEVDF run queue)", "v6.12",
		func(p *reworkPolicy, on bool) { p.knobs.DelayDequeue = on }, func(p *reworkPolicy) bool { return p.knobs.DelayDequeue }},
	{"2ae891b82695", "sched: Reduce the default slice to avoid tasks getting an extra tick (EEVDF base slice 0.70 ms)", "v6.15",
		func(p *reworkPolicy, on bool) { p.knobs.BaseSlice070 = on }, func(p *reworkPolicy) bool { return p.knobs.BaseSlice070 }},
	{"e837456fdca8", "sched/fair: Reimplement NEXT_BUDDY to align with EEVDF goals (a fork never preempts; the rest reverted or off)", "v6.19",
		func(p *reworkPolicy, on bool) { p.knobs.ForkNoPreempt = on }, func(p *reworkPolicy) bool { return p.knobs.ForkNoPreempt }},
	{"82d6e01a0699", "sched/fair: Only update stats for allowed CPUs when looking for dst group (find_idlest_group, a task with an affinity)", "v6.19",
		func(p *reworkPolicy, on bool) { p.knobs.WakeupStatsAllowed = on }, func(p *reworkPolicy) bool { return p.knobs.WakeupStatsAllowed }},
	{"33cf66d88306", "sched/fair: Proportional newidle balance (NI_RANDOM)", "v6.19",
		func(p *reworkPolicy, on bool) { p.knobs.NIRandom = on }, func(p *reworkPolicy) bool { return p.knobs.NIRandom }},
	{"155213a2aed4", "sched/fair: Bump sd->max_newidle_lb_cost when newidle balance fails", "v6.17",
		func(p *reworkPolicy, on bool) { p.knobs.NewidleBumpOnFail = on }, func(p *reworkPolicy) bool { return p.knobs.NewidleBumpOnFail }},
	{"ac8e69e69363", "sched/fair: Fix wakeup_preempt_fair() vs delayed dequeue (+ 9f6d929ee2c6)", "v7.1",
		func(p *reworkPolicy, on bool) { p.knobs.WakeupPickDelayed = on }, func(p *reworkPolicy) bool { return p.knobs.WakeupPickDelayed }},
}

// CommitInfo describes a switchable upstream change.
type CommitInfo struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Kernel string `json:"kernel"`
}

// Commits lists the changes WithCommits accepts.
func Commits() []CommitInfo {
	out := make([]CommitInfo, len(commitRules))
	for i, c := range commitRules {
		out[i] = CommitInfo{c.ID, c.Title, c.Kernel}
	}
	return out
}

// PolicyCommits lists, for a policy built from the rule set, the
// switchable commits it includes (nil for the legacy policies).
func PolicyCommits(p Policy) []string {
	rp, ok := asRules(p)
	if !ok {
		return nil
	}
	var ids []string
	for _, c := range commitRules {
		if c.get(rp) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func asRules(p Policy) (*reworkPolicy, bool) {
	rp, ok := p.(*reworkPolicy)
	if !ok {
		return nil, false
	}
	q := *rp
	return &q, true
}

func findCommit(id string) (*commitRule, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if len(id) < 7 {
		return nil, fmt.Errorf("commit %q: give at least 7 hex digits", id)
	}
	for i := range commitRules {
		c := &commitRules[i]
		if strings.HasPrefix(c.ID, id) || (len(id) > len(c.ID) && strings.HasPrefix(id, c.ID)) {
			return c, nil
		}
	}
	var known []string
	for _, c := range commitRules {
		known = append(known, c.ID)
	}
	sort.Strings(known)
	return nil, fmt.Errorf("commit %s is not a switchable change (known: %s; NUMA allowance: --numa-rule)", id, strings.Join(known, ", "))
}

// WithCommits returns p with the given upstream changes taken out
// (revert) or added (apply); the name records them ("v6.1~16b0a7a1a0af",
// "rework+16b0a7a1a0af"). Reverting a change the policy lacks, or
// applying one it has, is an error.
func WithCommits(p Policy, revert, apply []string) (Policy, error) {
	if len(revert) == 0 && len(apply) == 0 {
		return p, nil
	}
	rp, ok := asRules(p)
	if !ok {
		return nil, fmt.Errorf("policy %s is not built from switchable commits (the legacy policies)", p.Name())
	}
	for _, op := range []struct {
		ids []string
		on  bool
		sep string
	}{{revert, false, "~"}, {apply, true, "+"}} {
		for _, id := range op.ids {
			c, err := findCommit(id)
			if err != nil {
				return nil, err
			}
			if c.get(rp) == op.on {
				verb := "does not include"
				if op.on {
					verb = "already includes"
				}
				return nil, fmt.Errorf("policy %s %s %s (%s)", p.Name(), verb, c.ID, c.Title)
			}
			c.set(rp, op.on)
			rp.name += op.sep + c.ID
			if op.on {
				rp.kernels += "; applied " + c.ID
			} else {
				rp.kernels += "; reverted " + c.ID
			}
		}
	}
	return rp, nil
}
