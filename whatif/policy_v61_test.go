package whatif

import (
	"testing"

	"github.com/schedreplay/replay/model"
)

// Decisions of the v6.1 policy on constructed group statistics, with the
// answers worked out by hand from the kernel's rules (kernel-lb.md §4.2,
// §4.4–4.6).
func TestV61Decisions(t *testing.T) {
	p := newV61()
	type tc struct {
		name          string
		env           LBEnv
		local, busy   SGStats
		preferSibling bool
		verdict       Verdict
		mt            MigrationType
		imb           int64
	}
	llc := model.SDShareLLC | model.SDBalanceNewidle
	cases := []tc{
		{
			// 2 tasks + 1 on one CPU, dst idle, MC (LLC) domain of single-CPU
			// groups: overloaded busiest, has-spare local -> nr_running
			// spreading (16b0a7a1a0af): (3-0)>>1 = 1 task.
			name: "llc overloaded single cpu", env: LBEnv{SDFlags: llc, ImbalancePct: 117, Idle: CPUIdle},
			local:   SGStats{GroupCapacity: 1024, GroupWeight: 1, IdleCPUs: 1},
			busy:    SGStats{GroupCapacity: 1024, GroupWeight: 1, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 1024, GroupRunnable: 3072},
			verdict: ForceBalance, mt: MigrateTask, imb: 1,
		},
		{
			// Above the LLC (DIE): spare capacity path, imbalance = local
			// capacity - local util = 4096 - 1000.
			name: "die overloaded uses util", env: LBEnv{SDFlags: model.SDBalanceNewidle, ImbalancePct: 117, Idle: CPUIdle},
			local:   SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 3, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1000, GroupRunnable: 1000},
			busy:    SGStats{GroupCapacity: 4096, GroupWeight: 4, SumNrRunning: 6, SumHNrRunning: 6, GroupUtil: 4096, GroupRunnable: 6000},
			verdict: ForceBalance, mt: MigrateUtil, imb: 3096,
		},
		{
			// NUMA allowance (v6.0 imb-nr-dst): idle difference 3-1 = 2 <=
			// NUMA_IMBALANCE_MIN and local.sum_nr_running+1 = 2 <= imb_numa_nr
			// = 2 -> 0, then >>1 = 0: no busiest.
			name: "numa allowance", env: LBEnv{SDFlags: model.SDNUMA, ImbalancePct: 117, Idle: CPUIdle, ImbNUMANr: 2},
			local:   SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 3, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 300, GroupRunnable: 300},
			busy:    SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 1, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 2000, GroupRunnable: 2000},
			verdict: ForceBalance, mt: MigrateTask, imb: 0,
		},
		{
			// The unsigned idle_cpus difference of v6.1: an overloaded
			// busiest with 2 idle CPUs in an LLC domain (no prefer_sibling,
			// weight 4) against a local group with 1: (1-2) wraps to
			// 4294967295, >>1 = 2147483647.
			name: "idle_cpus underflow", env: LBEnv{SDFlags: llc, ImbalancePct: 117, Idle: CPUIdle},
			local:   SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 1, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 3000, GroupRunnable: 3000},
			busy:    SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 2, SumNrRunning: 5, SumHNrRunning: 5, GroupUtil: 4000, GroupRunnable: 9000},
			verdict: ForceBalance, mt: MigrateTask, imb: 2147483647,
		},
		{
			// Busy dst, busiest only fully busy: balanced (step 7).
			name: "busy dst fully busy", env: LBEnv{SDFlags: llc, ImbalancePct: 117, Idle: CPUNotIdle},
			local:   SGStats{GroupCapacity: 1024, GroupWeight: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024},
			busy:    SGStats{GroupCapacity: 1024, GroupWeight: 1, SumNrRunning: 1, SumHNrRunning: 1, GroupUtil: 1024, GroupRunnable: 1024},
			verdict: Balanced,
		},
	}
	for _, c := range cases {
		env := c.env
		l, b := c.local, c.busy
		l.GroupType = p.Classify(&env, &l)
		b.GroupType = p.Classify(&env, &b)
		sds := &SDStats{Local: &l, Busiest: &b, PreferSibling: c.preferSibling,
			TotalLoad: l.GroupLoad + b.GroupLoad, TotalCapacity: l.GroupCapacity + b.GroupCapacity}
		v := p.Decide(&env, sds)
		if v != c.verdict {
			t.Errorf("%s: verdict %v (local %v busiest %v), want %v", c.name, v, l.GroupType, b.GroupType, c.verdict)
			continue
		}
		if v != ForceBalance {
			continue
		}
		p.CalculateImbalance(&env, sds)
		if env.MigrationType != c.mt || env.Imbalance != c.imb {
			t.Errorf("%s: %v imbalance %d, want %v %d", c.name, env.MigrationType, env.Imbalance, c.mt, c.imb)
		}
	}
}

// Group classification with the v5.7 runnable test: 2 tasks on 2 CPUs
// whose runnable sum exceeds 117% of capacity are not "has spare" (fully
// busy), and with a third task the group is overloaded by runnable alone.
func TestV61Classify(t *testing.T) {
	p := newV61()
	env := &LBEnv{ImbalancePct: 117}
	g := &SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 2, GroupUtil: 1000, GroupRunnable: 2500}
	if got := p.Classify(env, g); got != GroupFullyBusy {
		t.Errorf("got %v, want group_fully_busy", got)
	}
	g.SumNrRunning = 3
	if got := p.Classify(env, g); got != GroupOverloaded {
		t.Errorf("got %v, want group_overloaded", got)
	}
	g.GroupRunnable = 1000
	if got := p.Classify(env, g); got != GroupHasSpare {
		t.Errorf("got %v, want group_has_spare (util and runnable low)", got)
	}
}

// detach_tasks' v5.10 load rule: (load >> nr_balance_failed) > imbalance
// rejects; after two failures a 1000-load task fits a 300 imbalance.
func TestV61DetachShrBound(t *testing.T) {
	p := newV61()
	env := &LBEnv{MigrationType: MigrateLoad, Imbalance: 300}
	if p.AcceptForDetach(env, DetachTask{Load: 1000}) {
		t.Error("accepted with no failures")
	}
	env.NrBalanceFailed = 2
	if !p.AcceptForDetach(env, DetachTask{Load: 1000}) || env.Imbalance != -700 {
		t.Errorf("after 2 failures: imbalance %d", env.Imbalance)
	}
	env = &LBEnv{MigrationType: MigrateTask, NrBalanceFailed: 4, CacheNiceTries: 1}
	if !p.NeedActiveBalance(env) {
		t.Error("migrate_task after cache_nice_tries+2 failures should ask for active balance")
	}
	env.MigrationType = MigrateUtil
	if p.NeedActiveBalance(env) {
		t.Error("v5.10+: failed util imbalances never trigger active balance")
	}
}

// PELT: a task running from zero reaches util ~512 after 32 periods
// (half-life), ~1000 after 300 ms; it decays by half in 32 ms of sleep.
func TestPELT(t *testing.T) {
	var a avg
	period := int64(1024 * 1024)
	for i := int64(1); i <= 32; i++ {
		a.update(i*period, 1, 1, true, 1024, capacityScale)
	}
	if a.utilAvg < 490 || a.utilAvg > 530 {
		t.Errorf("util after 32 periods %d, want ~512", a.utilAvg)
	}
	for i := int64(33); i <= 300; i++ {
		a.update(i*period, 1, 1, true, 1024, capacityScale)
	}
	if a.utilAvg < 1000 || a.loadAvg < 1000 {
		t.Errorf("util %d load %d after 300 periods, want > 1000", a.utilAvg, a.loadAvg)
	}
	u := a.utilAvg
	a.update(332*period, 0, 0, false, 1024, capacityScale)
	if a.utilAvg < u/2-15 || a.utilAvg > u/2+15 {
		t.Errorf("util after 32 periods asleep %d, want ~%d", a.utilAvg, u/2)
	}
	// y^32 = 1/2 with the kernel's truncation (y^0 is stored as 2^32-1).
	if decayLoad(1<<20, 32) != 1<<19-1 {
		t.Errorf("decay_load(2^20, 32) = %d", decayLoad(1<<20, 32))
	}
}

func TestPolicyRegistry(t *testing.T) {
	if p, err := PolicyForKernel("6.1.0-57-amd64"); err != nil || p.Name() != "v6.1" {
		t.Errorf("PolicyForKernel(6.1) = %v, %v", p, err)
	}
	for rel, want := range map[string]string{"5.4.0": "legacy", "4.9.0": "legacy-presibfix", "5.5.1": "rework", "5.6": "rework-numa2",
		"5.8.0": "runnable-avg", "5.10.0": "llc-nr-running", "5.15.0": "numa-float", "6.6.0": "v6.6", "6.10.3": "v6.10", "6.11.0": "v6.10",
		"6.12.0": "v6.12", "6.13.4": "v6.12", "6.14.9": "v6.12+61b82dfb6b7e+1a49104496d3+873199d27bb2", "6.15.0": "latest", "6.18.44-fc-v769": "latest",
		// 6.12.y took NI_RANDOM in 6.12.65: a release naming an earlier
		// sublevel is replayed without it; one naming none keeps it.
		"6.12.57+deb12-amd64": "v6.12~33cf66d88306", "6.12.64": "v6.12~33cf66d88306", "6.12.65": "v6.12", "6.12": "v6.12"} {
		if p, err := PolicyForKernel(rel); err != nil || p.Name() != want {
			t.Errorf("PolicyForKernel(%s) = %v, %v; want %s", rel, p, err, want)
		}
	}
	if _, err := PolicyForKernel("3.10.0"); err == nil {
		t.Error("3.10 has no policy; want an error")
	}
	if _, err := LookupPolicy("nope"); err == nil {
		t.Error("want an error for an unknown policy")
	}
}
