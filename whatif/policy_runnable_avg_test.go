package whatif

import "testing"

// runnableCase: a 2-CPU group with 3 tasks, util 1000 but runnable 3000
// (tasks waiting), against an idle 2-CPU group (util 100), above the LLC.
// v5.7's runnable test makes the busiest overloaded (3 > 2 and 2048*117 <
// 3000*100) -> spare-capacity path: migrate_util max(2048, 100) - 100 =
// 1948. Before v5.7 (rework-numa2) it has spare capacity: migrate_task,
// idle difference (2-0)>>1 = 1.
var runnableCase = lbCase{
	name: "runnable classifies", env: LBEnv{ImbalancePct: 117, Idle: CPUIdle},
	local:     SGStats{GroupCapacity: 2048, GroupWeight: 2, IdleCPUs: 2, GroupUtil: 100, GroupRunnable: 100},
	busy:      SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 1000, GroupRunnable: 3000, GroupLoad: 3000},
	wantLocal: GroupHasSpare, wantBusy: GroupOverloaded, verdict: ForceBalance, mt: MigrateUtil, imb: 1948,
}

func TestRunnableAvgDecisions(t *testing.T) {
	p := mustPolicy(t, "runnable-avg")
	checkLB(t, p, []lbCase{runnableCase})
	// 2 tasks on 2 CPUs, util 1000 (spare by util), runnable 2500 > 117%
	// of 2048: not has_spare but fully busy.
	g := &SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 2, GroupUtil: 1000, GroupRunnable: 2500}
	if got := p.Classify(&LBEnv{ImbalancePct: 117}, g); got != GroupFullyBusy {
		t.Errorf("got %v, want group_fully_busy", got)
	}
	if got := mustPolicy(t, "rework-numa2").Classify(&LBEnv{ImbalancePct: 117}, g); got != GroupHasSpare {
		t.Errorf("rework-numa2: got %v, want group_has_spare", got)
	}
	c := runnableCase
	c.wantBusy, c.mt, c.imb = GroupHasSpare, MigrateTask, 1
	checkLB(t, mustPolicy(t, "rework-numa2"), []lbCase{c})
}
