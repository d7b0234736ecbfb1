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
	// latest includes every switchable commit but NI_RANDOM (left off:
	// FIDELITY.md round 74) and the newidle cost bump reverted with it
	// (155213a2aed4, which no policy turns on).
	if got := PolicyCommits(mustPolicy(t, "latest")); len(got) != len(commitRules)-2 || slices.Contains(got, "33cf66d88306") || slices.Contains(got, "155213a2aed4") {
		t.Errorf("latest includes %v, want every switchable commit but 33cf66d88306 and 155213a2aed4", got)
	}
	// The registered policies are not modified.
	if !mustPolicy(t, "v6.6").(*reworkPolicy).r.LLCNrRunning {
		t.Error("registry policy modified")
	}
}

// A policy name may carry switchable commits, POLICY~ID (reverted) and
// POLICY+ID (applied), in order, as WithCommits names its results; an
// abbreviated ID names the commit in full.
func TestLookupPolicyWithCommits(t *testing.T) {
	for _, c := range []struct {
		name, want string
		ni         bool
	}{
		{"v6.1~33cf66d", "v6.1~33cf66d88306", false},
		{"latest+33cf66d88306", "latest+33cf66d88306", true},
		{"v6.12~33cf66d88306+e837456fdca8+ac8e69e69363+0b9ca2dcabc3+6e3c0a4e1ad1+61b82dfb6b7e+82d6e01a0699+1a49104496d3+873199d27bb2", "v6.12~33cf66d88306+e837456fdca8+ac8e69e69363+0b9ca2dcabc3+6e3c0a4e1ad1+61b82dfb6b7e+82d6e01a0699+1a49104496d3+873199d27bb2", false},
	} {
		p, err := LookupPolicy(c.name)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Name() != c.want || p.Knobs().NIRandom != c.ni {
			t.Errorf("%s: name %s NI_RANDOM %v, want %s %v", c.name, p.Name(), p.Knobs().NIRandom, c.want, c.ni)
		}
	}
	// The last is latest, spelled as v6.12 changed.
	p, _ := LookupPolicy("v6.12~33cf66d88306+e837456fdca8+ac8e69e69363+0b9ca2dcabc3+6e3c0a4e1ad1+61b82dfb6b7e+82d6e01a0699+1a49104496d3+873199d27bb2")
	if p.Knobs() != mustPolicy(t, "latest").Knobs() {
		t.Errorf("v6.12 changed into latest: knobs %+v, want latest's", p.Knobs())
	}
	for _, bad := range []string{"v6.1~", "v6.1+33cf66d", "nope~33cf66d", "legacy~33cf66d88306", "v6.1~33cf66", "v6.1~0000000"} {
		if _, err := LookupPolicy(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
