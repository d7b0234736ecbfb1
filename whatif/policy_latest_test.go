package whatif

import (
	"testing"

	"github.com/schedreplay/replay/model"
)

// idleUnderflowCase: LLC domain of 4-CPU groups without prefer_sibling;
// overloaded busiest (5 tasks, util 4000 > 4096/1.17) with 2 idle CPUs,
// local 3 tasks with 1 idle CPU. Task path by idle CPUs: 1 - 2 as an
// unsigned int wraps to 4294967295, >>1 = 2147483647 (v5.10 to latest);
// with the unmerged lsub_positive fix (IdleUnderflowFixed): 0.
var idleUnderflowCase = lbCase{
	name: "idle_cpus underflow", env: LBEnv{SDFlags: llcFlags, ImbalancePct: 117, Idle: CPUIdle},
	local:     SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 1, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 3000, GroupRunnable: 3000, GroupLoad: 3000, Cores: 4},
	busy:      SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 2, SumNrRunning: 5, SumHNrRunning: 5, GroupUtil: 4000, GroupRunnable: 9000, GroupLoad: 9000, Cores: 4},
	wantLocal: GroupHasSpare, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateTask, imb: 2147483647,
}

func TestLatestDecisions(t *testing.T) {
	p := mustPolicy(t, "latest")
	// prefer_sibling from the busiest group's flags: the local domain's
	// child does not prefer siblings (sds.PreferSibling false) but the
	// busiest group's child does. Local 2 tasks on 4 CPUs (1 idle: dst),
	// busiest 4 tasks on 4 CPUs (fully busy), dst idle. latest:
	// sibling_imbalance (equal cores) 4-2 = 2 > 1 -> force; task path
	// (prefer_sibling) (4-2)>>1 = 1 task.
	c := lbCase{
		name: "prefer_sibling from busiest", env: LBEnv{ImbalancePct: 117, Idle: CPUIdle},
		local:     SGStats{GroupCapacity: 4096, GroupWeight: 4, IdleCPUs: 1, SumNrRunning: 2, SumHNrRunning: 2, GroupUtil: 2048, GroupRunnable: 2048, GroupLoad: 2048, Cores: 4},
		busy:      SGStats{GroupCapacity: 4096, GroupWeight: 4, SumNrRunning: 4, SumHNrRunning: 4, GroupUtil: 4096, GroupRunnable: 4096, GroupLoad: 4096, Cores: 4, Flags: model.SDPreferSibling},
		wantLocal: GroupHasSpare, wantBusy: GroupFullyBusy, verdict: ForceBalance, mt: MigrateTask, imb: 1,
	}
	checkLB(t, p, []lbCase{idleUnderflowCase, c})
	// v6.6 as latest (6.6.0 has the busiest group's flag); v6.1
	// (prefer_sibling from the local child, false here): not overloaded,
	// weight 4 and local idle 1 <= busiest 0 + 1 -> balanced.
	checkLB(t, mustPolicy(t, "v6.6"), []lbCase{c})
	v61 := c
	v61.verdict = Balanced
	checkLB(t, mustPolicy(t, "v6.1"), []lbCase{v61})
	// The underflow fix as a rule.
	q := newV610()
	q.r.IdleUnderflowFixed = true
	u := idleUnderflowCase
	u.imb = 0
	checkLB(t, q, []lbCase{u})
	// 3af7524b1419: after 2 failures a util_est 1000 task fits a 300 util
	// imbalance (1000>>2 = 250); so in v6.1 and v6.6, as their stable
	// series have it now; without the commit it is rejected.
	for _, name := range []string{"latest", "v6.6", "v6.1"} {
		env := &LBEnv{MigrationType: MigrateUtil, Imbalance: 300, NrBalanceFailed: 2}
		if !mustPolicy(t, name).AcceptForDetach(env, DetachTask{UtilEst: 1000}) || env.Imbalance != -700 {
			t.Errorf("%s: util detach after failures, imbalance %d", name, env.Imbalance)
		}
	}
	pre := newV61()
	pre.r.UtilShrBound = false
	if pre.AcceptForDetach(&LBEnv{MigrationType: MigrateUtil, Imbalance: 300, NrBalanceFailed: 2}, DetachTask{UtilEst: 1000}) {
		t.Error("v6.1 without 3af7524b1419 accepted a util_est 1000 task for a 300 imbalance")
	}
}
