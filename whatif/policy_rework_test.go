package whatif

import (
	"testing"

	"github.com/schedreplay/replay/model"
)

// lbCase is one find_busiest_group pass on constructed sg_lb_stats: a
// local and a busiest candidate group, with the expected group types,
// verdict, migration type and imbalance worked out by hand from the
// kernel's rules (kernel-lb.md §4).
type lbCase struct {
	name                string
	env                 LBEnv
	local, busy         SGStats
	preferSibling       bool
	wantLocal, wantBusy GroupType
	verdict             Verdict
	mt                  MigrationType
	imb                 int64
}

// runLB mirrors findBusiestGroup: classify, the policy's statistics hook
// (local group first), pick the busiest, sum the domain, decide, compute
// the imbalance.
func runLB(p Policy, c lbCase) (l, b SGStats, v Verdict, env LBEnv) {
	env = c.env
	l, b = c.local, c.busy
	if l.RunnableLoad == 0 {
		l.RunnableLoad = l.GroupLoad
	}
	if b.RunnableLoad == 0 {
		b.RunnableLoad = b.GroupLoad
	}
	sds := &SDStats{PreferSibling: c.preferSibling, BusiestIdx: -1}
	hook, _ := p.(GroupStatsHook)
	for i, g := range []*SGStats{&l, &b} {
		g.GroupType = p.Classify(&env, g)
		if g.GroupType == GroupOverloaded {
			g.AvgLoad = g.GroupLoad * capacityScale / g.GroupCapacity
		}
		if i == 0 {
			sds.Local = g
		}
		if hook != nil {
			hook.AdjustGroup(&env, sds, g, i == 0)
		}
		if i == 1 && p.PickBusiest(&env, sds, g) {
			sds.Busiest, sds.BusiestIdx = g, 1
		}
		sds.TotalLoad += g.GroupLoad
		sds.TotalCapacity += g.GroupCapacity
	}
	v = p.Decide(&env, sds)
	if v == ForceBalance {
		p.CalculateImbalance(&env, sds)
	}
	return l, b, v, env
}

func checkLB(t *testing.T, p Policy, cases []lbCase) {
	t.Helper()
	for _, c := range cases {
		l, b, v, env := runLB(p, c)
		if l.GroupType != c.wantLocal || b.GroupType != c.wantBusy {
			t.Errorf("%s/%s: local %v busiest %v, want %v %v", p.Name(), c.name, l.GroupType, b.GroupType, c.wantLocal, c.wantBusy)
		}
		if v != c.verdict {
			t.Errorf("%s/%s: verdict %v, want %v", p.Name(), c.name, v, c.verdict)
			continue
		}
		if v == ForceBalance && (env.MigrationType != c.mt || env.Imbalance != c.imb) {
			t.Errorf("%s/%s: %v imbalance %d, want %v %d", p.Name(), c.name, env.MigrationType, env.Imbalance, c.mt, c.imb)
		}
	}
}

func mustPolicy(t *testing.T, name string) Policy {
	t.Helper()
	p, err := LookupPolicy(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Constructed statistics shared by the tests. llcFlags is an MC domain;
// smtCore a group of two SMT siblings (its child's flags).
var (
	llcFlags = model.SDShareLLC | model.SDBalanceNewidle
	smtCore  = model.SDShareCPUCapacity | model.SDShareLLC | model.SDPreferSibling
)

// NUMA: a node with 2 tasks on 4 CPUs, an empty local node. Both groups
// have spare capacity; idle CPUs differ by 4-2 = 2, halved: 1 task.
// v5.5 pulls it; v5.6 (min2-src) keeps a pair of tasks local: busiest has
// <= 2 tasks -> 0.
var numaPairCase = lbCase{
	name: "numa pair", env: LBEnv{SDFlags: model.SDNUMA, ImbalancePct: 125, Idle: CPUIdle, ImbNUMANr: 2},
	local:     SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 4, Cores: 4},
	busy:      SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 2, SumNrRunning: 2, SumHNrRunning: 2, GroupUtil: 2048, GroupRunnable: 2048, GroupLoad: 2048, Cores: 4},
	wantLocal: GroupHasSpare, wantBusy: GroupHasSpare, verdict: ForceBalance, mt: MigrateTask,
}

func TestReworkDecisions(t *testing.T) {
	c := numaPairCase
	c.imb = 1
	checkLB(t, mustPolicy(t, "rework"), []lbCase{c,
		{
			// A 2-CPU group with 3 tasks whose util (1000) is low but
			// runnable (3000) high: without runnable_avg it has spare
			// capacity (nr 3 > 2 but 2048*100 > 1000*117). Both has_spare;
			// local idle 2 > busiest idle 0 + 1, 3 tasks -> force; idle
			// difference 2 >> 1 = 1 task.
			name: "runnable ignored", env: LBEnv{ImbalancePct: 117, Idle: CPUIdle},
			local:     SGStats{GroupCapacity: 2048, GroupWeight: 2, IdleCPUs: 2, GroupUtil: 100, GroupRunnable: 100},
			busy:      SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 1000, GroupRunnable: 3000, GroupLoad: 3000},
			wantLocal: GroupHasSpare, wantBusy: GroupHasSpare, verdict: ForceBalance, mt: MigrateTask, imb: 1,
		},
		{
			// Busy dst, busiest only fully busy, no prefer_sibling: balanced.
			name: "busy dst", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUNotIdle},
			local:     SGStats{GroupCapacity: 1024, GroupWeight: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024},
			busy:      SGStats{GroupCapacity: 1024, GroupWeight: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024},
			wantLocal: GroupFullyBusy, wantBusy: GroupFullyBusy, verdict: Balanced,
		},
	})
}

// v5.5's detach rule: load/2 > imbalance rejects until the domain failed
// more than cache_nice_tries times; util: util_est must fit; active
// balance after cache_nice_tries+2 failures whatever the migration type.
func TestReworkDetachAndActive(t *testing.T) {
	p := mustPolicy(t, "rework")
	env := &LBEnv{MigrationType: MigrateLoad, Imbalance: 400, CacheNiceTries: 1}
	if p.AcceptForDetach(env, DetachTask{Load: 1000}) {
		t.Error("500 > 400 accepted with no failures")
	}
	env.NrBalanceFailed = 2
	if !p.AcceptForDetach(env, DetachTask{Load: 1000}) || env.Imbalance != -600 {
		t.Errorf("after 2 failures (> cache_nice_tries): imbalance %d, want -600", env.Imbalance)
	}
	env = &LBEnv{MigrationType: MigrateUtil, Imbalance: 424}
	if p.AcceptForDetach(env, DetachTask{UtilEst: 1000}) {
		t.Error("util_est 1000 accepted for a 424 util imbalance")
	}
	env = &LBEnv{MigrationType: MigrateUtil, NrBalanceFailed: 4, CacheNiceTries: 1}
	if !p.NeedActiveBalance(env) {
		t.Error("v5.5: a failed util imbalance escalates to active balance")
	}
}
