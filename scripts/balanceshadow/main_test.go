package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/whatif"
)

// TestComparison: the ratio is printed only where the kernel failed no
// pass, the counts agree and every pass is in one unit (load, util or
// tasks).
func TestComparison(t *testing.T) {
	busy := func(cpu int32, imb int64, moved int, mt whatif.MigrationType) whatif.BalancePass {
		return whatif.BalancePass{Idle: whatif.CPUNotIdle, DstCPU: cpu, SrcCPU: 1 - cpu, Imbalance: imb, Moved: moved, MigrationType: mt}
	}
	passes := []whatif.BalancePass{busy(0, 900, 3, whatif.MigrateLoad), busy(0, 200, 1, whatif.MigrateLoad), busy(1, 50, 1, whatif.MigrateUtil), busy(1, 2, 1, whatif.MigrateTask)}
	// A domain and idle type neither side saw is left out.
	lb := func(busy model.LBCounters) [3]model.LBCounters { return [3]model.LBCounters{{}, busy, {}} }
	diff := &model.Schedstat{CPUs: []model.SchedstatCPU{
		{CPU: 0, Domains: []model.SchedstatDomain{{Name: "domain0", LB: lb(model.LBCounters{Count: 5, Balanced: 3, Imbalance: 1000, Gained: 4})}}},
		{CPU: 1, Domains: []model.SchedstatDomain{{Name: "domain0", LB: lb(model.LBCounters{Count: 3, Balanced: 1, Imbalance: 52, Gained: 2})}}},
	}}
	var b bytes.Buffer
	printComparison(&b, passes, diff)
	out := b.String()
	for _, want := range []string{
		"    0  domain0  busy                     2      1000      4      0 |              2      1100     4 | 1.10",
		"    1  domain0  busy                     2        52      2      0 |              2        52     2 | (mixed units)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	diff.CPUs[0].Domains[0].LB[1].Failed = 1
	b.Reset()
	printComparison(&b, passes, diff)
	if strings.Contains(out, " idle ") {
		t.Errorf("an idle row neither side saw:\n%s", out)
	}
	if !strings.Contains(b.String(), "(failed passes unseen)") {
		t.Errorf("a failed pass not flagged:\n%s", b.String())
	}
	diff.CPUs[0].Domains[0].LB[1].Failed = 0
	diff.CPUs[0].Domains[0].LB[1].Gained = 5
	b.Reset()
	printComparison(&b, passes, diff)
	if !strings.Contains(b.String(), "(counts differ)") {
		t.Errorf("differing counts not flagged:\n%s", b.String())
	}
}

// TestSchedstatBeside finds the recipe's snapshots for a trace named
// WORKLOAD.perf.data[.gz] and none for other names.
func TestSchedstatBeside(t *testing.T) {
	d, where, err := scriptutil.SchedstatBeside("../../fixtures/kernels/repeats/guest-N-2s1c1t-2numa/r5/hackbench.perf.data.gz")
	if err != nil || d == nil || !strings.Contains(where, "schedstat.hackbench.after.txt") {
		t.Fatalf("%v %q %v", d, where, err)
	}
	// guest-N r5's cpu1: two busy passes, 15199 summed, 21 pulled (the
	// snapshots' own difference).
	if k := d.CPUs[1].Domains[0].LB[1]; k.Passes() != 2 || k.Imbalance != 15199 || k.Gained != 21 {
		t.Errorf("cpu1 busy %+v", k)
	}
	if d, _, err := scriptutil.SchedstatBeside("/tmp/no/such.arrow"); d != nil || err != nil {
		t.Errorf("%v %v", d, err)
	}
}

// TestPrintBusy: each tally beside the kernel's busy counters of its CPU
// and domain, shares rounded; a domain the kernel's snapshot lacks, or no
// snapshot, leaves the kernel's side empty.
func TestPrintBusy(t *testing.T) {
	ts := []whatif.BusyTally{{CPU: 0, Domain: 0, Level: "MC", Passes: 40, Unbalanced: 10}, {CPU: 1, Domain: 1, Level: "NUMA", Passes: 3}}
	lb := func(busy model.LBCounters) [3]model.LBCounters {
		return [3]model.LBCounters{{Count: 99}, busy, {Count: 98}}
	}
	diff := &model.Schedstat{CPUs: []model.SchedstatCPU{
		{CPU: 0, Domains: []model.SchedstatDomain{{Name: "domain0", LB: lb(model.LBCounters{Count: 48, Balanced: 36})}}},
		{CPU: 1, Domains: []model.SchedstatDomain{{Name: "domain0", LB: lb(model.LBCounters{Count: 7, Balanced: 7})}}},
	}}
	var b bytes.Buffer
	printBusy(&b, ts, diff)
	for _, want := range []string{
		"    0  MC                 40         10  25 % |             48         12  25 %",
		"    1  NUMA                3          0   0 % | -",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	b.Reset()
	printBusy(&b, ts[:1], nil)
	if !strings.HasSuffix(b.String(), "  25 % | -\n") {
		t.Errorf("no snapshot: %q", b.String())
	}
}

// TestBusySums: totals per kernel release (a Debian release string's
// major.minor), over the rows the kernel's snapshot has; a trace without
// a snapshot adds nothing.
func TestBusySums(t *testing.T) {
	ts := []whatif.BusyTally{{CPU: 0, Level: "MC", Passes: 40, Unbalanced: 10}, {CPU: 1, Domain: 1, Level: "NUMA", Passes: 3, Unbalanced: 3}}
	diff := &model.Schedstat{CPUs: []model.SchedstatCPU{
		{CPU: 0, Domains: []model.SchedstatDomain{{Name: "domain0", LB: [3]model.LBCounters{{}, {Count: 50, Balanced: 40}, {}}}}},
		{CPU: 1, Domains: []model.SchedstatDomain{{Name: "domain0"}}},
	}}
	b := busySums{}
	b.add("6.12.57+deb13-amd64", ts, diff)
	b.add("6.12.57+deb13-amd64", ts, diff)
	b.add("6.1.0-41-amd64", ts, nil)
	var out bytes.Buffer
	b.print(&out)
	if want := "all 2 traces of 6.12: the model 80 busy passes, 25.0 % unbalanced; the kernel 100, 20.0 %\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
