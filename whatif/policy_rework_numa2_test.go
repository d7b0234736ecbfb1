package whatif

import "testing"

// rework-numa2 (v5.6): the NUMA pair stays (busiest 2 tasks <= 2 -> 0);
// with 3 tasks the halved idle difference (4-1)>>1 = 1 is kept.
func TestReworkNuma2Decisions(t *testing.T) {
	c := numaPairCase
	c.imb = 0
	c3 := numaPairCase
	c3.name = "numa three"
	c3.busy.SumNrRunning, c3.busy.SumHNrRunning, c3.busy.IdleCPUs = 3, 3, 1
	c3.imb = 1
	checkLB(t, mustPolicy(t, "rework-numa2"), []lbCase{c, c3})
}
