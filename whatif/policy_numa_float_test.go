package whatif

import (
	"testing"

	"github.com/schedreplay/replay/model"
)

// numaFloatCase: NUMA domain of two 16-CPU nodes; busiest runs 3 tasks (13
// idle CPUs), local is empty. Both have spare capacity; idle difference 3.
//   - min2-src (v5.6–v5.10): 3 > 2 tasks -> (3>>1) = 1 task.
//   - float25 (v5.11–v5.17): 3 < 16/4 and 1 <= 2 -> 0.
//   - imb-nr-dst (v6.0+, imb_numa_nr 2): local 0+1 <= 2 but the unhalved 3
//     > 2 -> 3>>1 = 1.
var numaFloatCase = lbCase{
	name: "numa float", env: LBEnv{SDFlags: model.SDNUMA, ImbalancePct: 117, Idle: CPUIdle, ImbNUMANr: 2, SpanWeight: 32},
	local:     SGStats{GroupCapacity: 16384, GroupWeight: 16, IdleCPUs: 16, Cores: 16},
	busy:      SGStats{GroupCapacity: 16384, GroupWeight: 16, IdleCPUs: 13, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 3072, GroupRunnable: 3072, GroupLoad: 3072, Cores: 16},
	wantLocal: GroupHasSpare, wantBusy: GroupHasSpare, verdict: ForceBalance, mt: MigrateTask, imb: 0,
}

func TestNumaFloatDecisions(t *testing.T) {
	p := mustPolicy(t, "numa-float")
	c5 := numaFloatCase
	c5.name = "numa float, 5 tasks"
	c5.busy.SumNrRunning, c5.busy.SumHNrRunning, c5.busy.IdleCPUs = 5, 5, 11
	c5.imb = 2 // 5 >= 16/4: (16-11)>>1 = 2 kept
	checkLB(t, p, []lbCase{numaFloatCase, c5})
	// The knob: the same policy with v6.0's rule decides like v6.1.
	q, ok := WithNumaRule(p, NumaImbNrDst)
	if !ok || q.Name() != "numa-float+numa=imb-nr-dst" {
		t.Fatalf("WithNumaRule: %v %v", q, ok)
	}
	c := numaFloatCase
	c.imb = 1
	checkLB(t, q, []lbCase{c})
	// float25-span compares with the domain's span (32/4 = 8).
	q, _ = WithNumaRule(p, NumaFloat25Span)
	c5.imb = 0 // 5 < 8 and 2 <= 2
	checkLB(t, q, []lbCase{c5})
}

func TestWithNumaRuleV61(t *testing.T) {
	q, ok := WithNumaRule(mustPolicy(t, "v6.1"), NumaFloat25)
	if !ok || q.Name() != "v6.1+numa=float25" {
		t.Fatalf("%v %v", q, ok)
	}
	checkLB(t, q, []lbCase{numaFloatCase})
	if _, ok := WithNumaRule(mustPolicy(t, "legacy"), NumaNone); ok {
		t.Error("legacy has no NUMA rule knob")
	}
	if r, ok := ParseNumaRule("imb-nr-src"); !ok || r != NumaImbNrSrc || r.String() != "imb-nr-src" {
		t.Error("ParseNumaRule")
	}
}
