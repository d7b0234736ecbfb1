package whatif

import (
	"slices"
	"testing"
)

// Reverting 16b0a7a1a0af from v6.1 gives back the util path in an LLC
// domain (the canonical case: migrate_util 1024-600 = 424); applying it to
// runnable-avg gives llc-nr-running's migrate_task 1.
func TestWithCommits(t *testing.T) {
	v61 := mustPolicy(t, "v6.1")
	q, err := WithCommits(v61, []string{"16b0a7a1a0af", "c5b0a7eefc70"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name() != "v6.1~16b0a7a1a0af~c5b0a7eefc70" || q.Knobs().NewidleGate516 {
		t.Errorf("%s %+v", q.Name(), q.Knobs())
	}
	llc, _ := canonicalCases(mustPolicy(t, "rework"))
	checkLB(t, q, []lbCase{llc})
	q, err = WithCommits(mustPolicy(t, "runnable-avg"), nil, []string{"16b0a7a1a0af0000"})
	if err != nil {
		t.Fatal(err)
	}
	llc, _ = canonicalCases(mustPolicy(t, "llc-nr-running"))
	checkLB(t, q, []lbCase{llc})
	if _, err := WithCommits(mustPolicy(t, "rework"), []string{"16b0a7a1a0af"}, nil); err == nil {
		t.Error("reverting a change rework lacks should fail")
	}
	if _, err := WithCommits(mustPolicy(t, "legacy"), []string{"16b0a7a1a0af"}, nil); err == nil {
		t.Error("legacy has no switches")
	}
	if _, err := WithCommits(v61, []string{"deadbeef"}, nil); err == nil {
		t.Error("unknown commit accepted")
	}
	// latest includes every switchable commit but NI_RANDOM, which no
	// policy turns on (Knobs.NIRandom).
	if got := PolicyCommits(mustPolicy(t, "latest")); len(got) != len(commitRules)-1 || slices.Contains(got, "33cf66d88306") {
		t.Errorf("latest includes %v, want every switchable commit but 33cf66d88306", got)
	}
	// The registered policies are not modified.
	if !mustPolicy(t, "v6.6").(*reworkPolicy).r.LLCNrRunning {
		t.Error("registry policy modified")
	}
}
