package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// build is ParseSpec + BuildDomains, failing the test on error.
func build(t *testing.T, spec, kernel string) *Domains {
	t.Helper()
	top, err := ParseSpec(spec)
	if err != nil {
		t.Fatalf("ParseSpec(%q): %v", spec, err)
	}
	d, err := BuildDomains(top, kernel)
	if err != nil {
		t.Fatalf("BuildDomains(%q, %q): %v", spec, kernel, err)
	}
	checkInvariants(t, d)
	return d
}

// checkInvariants asserts what sched_domain_debug_one() checks: a domain
// contains its CPU, its first group contains the CPU, the groups cover the
// span (without repeats unless SD_OVERLAP) and the parent spans a superset.
func checkInvariants(t *testing.T, d *Domains) {
	t.Helper()
	for _, cd := range d.CPUs {
		for i, sd := range cd.Domains {
			if !sd.span.has(cd.CPU) {
				t.Fatalf("cpu%d domain%d %s: span %v lacks the CPU", cd.CPU, i, sd.Name, sd.Span)
			}
			gs := sd.Groups()
			if len(gs) == 0 || !gs[0].span.has(cd.CPU) {
				t.Fatalf("cpu%d domain%d %s: first group does not hold the CPU", cd.CPU, i, sd.Name)
			}
			cover := newCPUSet(d.NrCPUs)
			for _, g := range gs {
				if !sd.Overlapping() && cover.intersects(g.span) {
					t.Fatalf("cpu%d domain%d %s: repeated CPUs in groups", cd.CPU, i, sd.Name)
				}
				cover = cover.or(g.span)
			}
			if !cover.equal(sd.span) {
				t.Fatalf("cpu%d domain%d %s: groups cover %v, span %v", cd.CPU, i, sd.Name, cover, sd.Span)
			}
			if sd.Parent != nil && !sd.span.subsetOf(sd.Parent.span) {
				t.Fatalf("cpu%d domain%d %s: parent %s is no superset", cd.CPU, i, sd.Name, sd.Parent.Name)
			}
			if i+1 < len(cd.Domains) && cd.Domains[i+1] != sd.Parent {
				t.Fatalf("cpu%d: chain and parent pointers disagree", cd.CPU)
			}
		}
	}
}

func chain(d *Domains, cpu int) string {
	var n []string
	for _, sd := range d.CPUs[cpu].Domains {
		n = append(n, sd.Name+":"+FormatCPUList(sd.Span))
	}
	return strings.Join(n, " ")
}

func groupSpans(sd *SchedDomain) string {
	var g []string
	for _, x := range sd.Groups() {
		g = append(g, FormatCPUList(x.Span))
	}
	return strings.Join(g, " ")
}

func flags(d *Domains, sd *SchedDomain) string { return strings.Join(d.FlagNames(sd.Flags), " ") }

const (
	fNewidle = "SD_BALANCE_NEWIDLE"
	fBase    = "SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE"
)

// TestCornerCases: expected values follow from the kernel rules
// (sd_init, sd_degenerate, sd_parent_degenerate, build_sched_groups) and,
// where a real dump of the same shape exists, agree with it (named).
func TestCornerCases(t *testing.T) {
	for _, tc := range []struct {
		name, spec, kernel string
		cpu                int
		chain              string
		groups             []string // per domain
		flags              []string // per domain
	}{
		{name: "SMT off, one LLC (like guest-D)", spec: "sockets=1,cores=20", kernel: "6.1", cpu: 3,
			chain:  "MC:0-19",
			groups: []string{"3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 0 1 2"},
			flags:  []string{fBase + " SD_SHARE_PKG_RESOURCES SD_PREFER_SIBLING"}},
		{name: "SMT off, two nodes", spec: "sockets=2,cores=4,numa=2", kernel: "6.1", cpu: 5,
			chain:  "MC:4-7 NUMA:0-7",
			groups: []string{"5 6 7 4", "4-7 0-3"},
			flags:  []string{fBase + " SD_SHARE_PKG_RESOURCES SD_PREFER_SIBLING", fBase + " SD_SERIALIZE SD_OVERLAP SD_NUMA"}},
		{name: "single CPU (like guest-K)", spec: "sockets=1", kernel: "6.1", cpu: 0, chain: ""},
		{name: "one core per socket (like guest-J)", spec: "sockets=4,cores=1", kernel: "6.1", cpu: 2,
			chain: "DIE:0-3", groups: []string{"2 3 0 1"}, flags: []string{fBase + " SD_PREFER_SIBLING"}},
		{name: "one SMT core per socket: CLS and MC degenerate", spec: "sockets=2,cores=1,threads=2", kernel: "6.1", cpu: 1,
			chain:  "SMT:0-1 DIE:0-3",
			groups: []string{"1 0", "0-1 2-3"},
			flags:  []string{fBase + " SD_SHARE_CPUCAPACITY SD_SHARE_PKG_RESOURCES SD_PREFER_SIBLING", fBase + " SD_PREFER_SIBLING"}},
		{name: "NUMA with 3 distances (16 within a pair, 32 across)", kernel: "6.1", cpu: 4,
			spec:   "sockets=4,cores=4,numa=4,distance=10:16:32:32/16:10:32:32/32:32:10:16/32:32:16:10",
			chain:  "MC:4-7 NUMA:0-7 NUMA:0-15",
			groups: []string{"4 5 6 7", "4-7 0-3", "0-7 8-15"},
			flags: []string{fBase + " SD_SHARE_PKG_RESOURCES SD_PREFER_SIBLING", fBase + " SD_SERIALIZE SD_OVERLAP SD_NUMA",
				fNewidle + " SD_SERIALIZE SD_OVERLAP SD_NUMA"}},
		{name: "interleaved numbering: cpu i and i+4 are siblings", spec: "sockets=1,cores=4,threads=2,numbering=interleaved", kernel: "6.1", cpu: 5,
			chain:  "SMT:1,5 MC:0-7",
			groups: []string{"5 1", "1,5 2,6 3,7 0,4"}},
		{name: "interleaved numbering, 2 sockets", spec: "sockets=2,cores=2,threads=2,numbering=interleaved,numa=2", kernel: "6.1", cpu: 6,
			chain:  "SMT:2,6 MC:2-3,6-7 NUMA:0-7",
			groups: []string{"6 2", "2,6 3,7", "2-3,6-7 0-1,4-5"}},
		{name: "big.LITTLE clusters (capacity 446/1024)", spec: "sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64,capacity=0-3:446/4-7:1024", kernel: "6.1", cpu: 0,
			chain:  "MC:0-3 DIE:0-7",
			groups: []string{"0 1 2 3", "0-3 4-7"},
			// The asymmetric parent clears the child's SD_PREFER_SIBLING.
			flags: []string{fBase + " SD_SHARE_PKG_RESOURCES", fBase + " SD_ASYM_CPUCAPACITY SD_ASYM_CPUCAPACITY_FULL SD_PREFER_SIBLING"}},
		{name: "big.LITTLE before v5.14: only the asymmetric level, no _FULL", spec: "sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64,capacity=0-3:446/4-7:1024", kernel: "5.10", cpu: 0,
			chain: "MC:0-3 DIE:0-7",
			flags: []string{fBase + " SD_SHARE_PKG_RESOURCES", fBase + " SD_ASYM_CPUCAPACITY SD_PREFER_SIBLING"}},
		{name: "DynamIQ: mixed capacities in one LLC", spec: "sockets=1,cores=8,arch=arm64,capacity=0-5:512/6-7:1024", kernel: "6.12", cpu: 7,
			chain: "MC:0-7",
			flags: []string{fBase + " SD_ASYM_CPUCAPACITY SD_ASYM_CPUCAPACITY_FULL SD_SHARE_LLC SD_PREFER_SIBLING"}},
		{name: "three capacities: a cluster seeing two of them is not _FULL", spec: "sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64,capacity=0-3:400/4-5:800/6-7:1024", kernel: "6.1", cpu: 4,
			chain: "MC:4-7 DIE:0-7",
			flags: []string{fBase + " SD_ASYM_CPUCAPACITY SD_SHARE_PKG_RESOURCES", fBase + " SD_ASYM_CPUCAPACITY SD_ASYM_CPUCAPACITY_FULL SD_PREFER_SIBLING"}},
		{name: "x86 clusters survive from v5.16; SD_CLUSTER from v6.7", spec: "sockets=1,cores=8,clusters=2", kernel: "6.7", cpu: 5,
			chain:  "CLS:4-7 MC:0-7",
			groups: []string{"5 6 7 4", "4-7 0-3"},
			flags:  []string{fBase + " SD_CLUSTER SD_SHARE_PKG_RESOURCES SD_PREFER_SIBLING", fBase + " SD_SHARE_PKG_RESOURCES SD_PREFER_SIBLING"}},
		{name: "no cluster level before v5.16", spec: "sockets=1,cores=8,clusters=2", kernel: "5.15", cpu: 5,
			chain: "MC:0-7", groups: []string{"5 6 7 0 1 2 3 4"}},
		{name: "NUMA inside a package: no DIE (like guest-H)", spec: "sockets=1,cores=8,numa=4", kernel: "6.1", cpu: 2,
			chain: "MC:2-3 NUMA:0-7", groups: []string{"2 3", "2-3 4-5 6-7 0-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := build(t, tc.spec, tc.kernel)
			if got := chain(d, tc.cpu); got != tc.chain {
				t.Fatalf("cpu%d chain %q; want %q", tc.cpu, got, tc.chain)
			}
			for i, sd := range d.CPUs[tc.cpu].Domains {
				if i < len(tc.groups) {
					if got := groupSpans(sd); got != tc.groups[i] {
						t.Errorf("cpu%d domain%d %s groups %q; want %q", tc.cpu, i, sd.Name, got, tc.groups[i])
					}
				}
				if i < len(tc.flags) {
					if got := flags(d, sd); got != tc.flags[i] {
						t.Errorf("cpu%d domain%d %s flags\n got %s\nwant %s", tc.cpu, i, sd.Name, got, tc.flags[i])
					}
				}
			}
		})
	}
}

// The Juno r0 preset is the machine LISA's Juno test traces ran on
// (tests/assets/trace_txt/plat_info.yml at ARM-software/lisa bb5ff50d:
// cpu-capacities 446 for CPUs 0, 3, 4, 5 and 1024 for CPUs 1, 2; its
// freq-domains, Juno's clusters, {0,3,4,5} and {1,2}). Its clusters'
// CPU numbers interleave, which no compact spec says: each is an MC
// domain and an LLC, under one DIE spanning both capacities.
func TestJunoR0Preset(t *testing.T) {
	d := build(t, "juno-r0", "4.19.0-07801-gf317706")
	for _, tc := range []struct {
		cpu, capacity int
		mc            string
	}{{0, 446, "0,3-5"}, {1, 1024, "1-2"}, {2, 1024, "1-2"}, {5, 446, "0,3-5"}} {
		cd := d.CPUs[tc.cpu]
		if got := d.Capacity[tc.cpu]; got != tc.capacity {
			t.Errorf("cpu%d capacity %d; want %d", tc.cpu, got, tc.capacity)
		}
		if len(cd.Domains) != 2 || cd.Domains[0].Name != "MC" || FormatCPUList(cd.Domains[0].Span) != tc.mc || cd.Domains[1].Name != "DIE" {
			t.Fatalf("cpu%d domains %v; want MC %s, DIE 0-5", tc.cpu, cd.Domains, tc.mc)
		}
		if cd.AsymCPUCapacity == nil || cd.AsymCPUCapacity.Name != "DIE" {
			t.Errorf("cpu%d sd_asym_cpucapacity = %v; want DIE", tc.cpu, cd.AsymCPUCapacity)
		}
		// v4.10-v5.7: SD_BALANCE_WAKE on the asymmetric domain and below.
		for _, sd := range cd.Domains {
			if sd.Flags&SDBalanceWake == 0 {
				t.Errorf("cpu%d %s lacks SD_BALANCE_WAKE under 4.19", tc.cpu, sd.Name)
			}
		}
	}
	for _, rel := range []string{"5.8.0", "6.1.0", "4.9.0"} {
		for _, sd := range build(t, "juno-r0", rel).CPUs[0].Domains {
			if sd.Flags&SDBalanceWake != 0 {
				t.Errorf("%s: %s has SD_BALANCE_WAKE; only v4.10-v5.7 set it", rel, sd.Name)
			}
		}
	}
}

// CapacitiesDiffer: by hand, a spec without capacities is symmetric (all
// 1024), so is one naming 1024 everywhere; the Juno's 446 and 1024 differ,
// and so does a spec naming one CPU 512.
func TestCapacitiesDiffer(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want bool
	}{
		{"sockets=1,cores=4", false},
		{"sockets=1,cores=4,capacity=1024", false},
		{"sockets=1,cores=2,capacity=0:1024/1:512", true},
		{"juno-r0", true},
	} {
		top, err := ParseSpec(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := top.CapacitiesDiffer(); got != tc.want {
			t.Errorf("%s: CapacitiesDiffer %v, want %v", tc.spec, got, tc.want)
		}
	}
}

func TestAsymmetricCapacityShortcuts(t *testing.T) {
	d := build(t, "sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64,capacity=0-3:446/4-7:1024", "6.1")
	cd := d.CPUs[1]
	if cd.AsymCPUCapacity == nil || cd.AsymCPUCapacity.Name != "DIE" {
		t.Fatalf("sd_asym_cpucapacity = %v; want the DIE domain", cd.AsymCPUCapacity)
	}
	var caps []int
	for _, g := range cd.Domains[1].Groups() {
		caps = append(caps, g.Capacity, g.MinCapacity, g.MaxCapacity)
	}
	if want := []int{4 * 446, 446, 446, 4096, 1024, 1024}; !equalInts(caps, want) || caps[0] != want[0] {
		t.Errorf("DIE group capacities %v; want %v", caps, want)
	}
	var buf bytes.Buffer
	if err := d.WriteVerbose(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" groups: 1:{ span=1 cap=446 }, 2:{ span=2 cap=446 }, 3:{ span=3 cap=446 }, 0:{ span=0 cap=446 }",
		"groups: 0:{ span=0-3 cap=1784 }, 4:{ span=4-7 cap=4096 }", "root domain span: 0-7 (max cpu_capacity = 1024)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("sched_verbose lacks %q:\n%s", want, buf.String())
		}
	}
	// Three capacity classes: cpu4's lowest _FULL domain is DIE, cpu0 has
	// only DIE too, and no MC domain of cpu0 is asymmetric.
	d = build(t, "sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64,capacity=0-3:400/4-5:800/6-7:1024", "6.1")
	if a := d.CPUs[4].AsymCPUCapacity; a == nil || a.Name != "DIE" {
		t.Errorf("cpu4 sd_asym_cpucapacity %v; want DIE", a)
	}
	if f := d.CPUs[0].Domains[0].Flags; f&SDAsymCPUCapacity != 0 {
		t.Errorf("cpu0 MC is symmetric (all 400) but has %v", d.FlagNames(f))
	}
}

// TestPresets checks CPU counts, LLC counts and the level names each preset
// produces, for the newest kernel and for 6.1 (DIE, SD_SHARE_PKG_RESOURCES).
func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cpus, llcs    int
		nodes         int
		newest, v61   string
		smtOfCPU0     string
		numaNoAffine  bool
		llcSizeOfCPU0 int
	}{
		{"hikey", 8, 2, 1, "MC PKG", "MC DIE", "", false, 4},
		{"juno-r0", 6, 2, 1, "MC PKG", "MC DIE", "", false, 4},
		{"vm40-smt2", 40, 1, 1, "SMT MC", "SMT MC", "0-1", false, 40},
		{"power8-22c-smt8", 176, 22, 2, "SMT PKG NUMA", "SMT DIE NUMA", "0-7", false, 8},
		{"arm64-2node-224", 224, 2, 2, "SMT MC NUMA", "SMT MC NUMA", "0-3", false, 112},
		{"epyc2-2s64c", 256, 32, 2, "SMT MC PKG NUMA", "SMT MC DIE NUMA", "0,128", true, 8},
		{"spr-2s56c", 224, 2, 2, "SMT MC NUMA", "SMT MC NUMA", "0,112", false, 112},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, err := ParseSpec(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if top.NrCPUs != tc.cpus || len(top.Nodes) != max(tc.nodes, 1) && !(tc.nodes == 1 && len(top.Nodes) == 0) {
				t.Fatalf("%d CPUs, %d nodes; want %d, %d", top.NrCPUs, len(top.Nodes), tc.cpus, tc.nodes)
			}
			for kernel, want := range map[string]string{"": tc.newest, "6.1.0-57-amd64": tc.v61} {
				d, err := BuildDomains(top, kernel)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, d)
				llcs := map[int]bool{}
				for _, c := range d.Online {
					llcs[d.CPUs[c].LLCID] = true
					var names []string
					for _, sd := range d.CPUs[c].Domains {
						names = append(names, sd.Name)
					}
					if got := strings.Join(names, " "); got != want {
						t.Fatalf("kernel %q cpu%d levels %q; want %q", kernel, c, got, want)
					}
				}
				if len(llcs) != tc.llcs {
					t.Errorf("kernel %q: %d LLCs; want %d", kernel, len(llcs), tc.llcs)
				}
				if d.CPUs[0].LLCSize != tc.llcSizeOfCPU0 {
					t.Errorf("cpu0 sd_llc_size %d; want %d", d.CPUs[0].LLCSize, tc.llcSizeOfCPU0)
				}
				if tc.smtOfCPU0 != "" && FormatCPUList(d.CPUs[0].Domains[0].Span) != tc.smtOfCPU0 {
					t.Errorf("cpu0 SMT span %v; want %s", d.CPUs[0].Domains[0].Span, tc.smtOfCPU0)
				}
				if n := d.CPUs[0].NUMA; n != nil && (n.Flags&SDWakeAffine == 0) != tc.numaNoAffine {
					t.Errorf("NUMA flags %s (distance %d)", flags(d, n), n.Distance)
				}
			}
		})
	}
}

// TestKernelVersions builds guest-E's topology (a real 6.1 dump with a
// surviving DIE level) under other versions' rules.
func TestKernelVersions(t *testing.T) {
	dir := "testdata/kernels/guest-E-2s4c1t"
	text := func(kernel string) string {
		top, err := ParseSpec(dir)
		if err != nil {
			t.Fatal(err)
		}
		d, err := BuildDomains(top, kernel)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := d.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tc := range []struct {
		kernel string
		want   []string
	}{
		// v6.12: PKG, SD_SHARE_LLC, groups_flags and level files.
		{"6.12.48", []string{
			"domains/cpu0/domain0/flags: SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SHARE_LLC SD_PREFER_SIBLING\n",
			"domains/cpu0/domain1/name: PKG\n", "domains/cpu0/domain0/level: 2\n", "domains/cpu0/domain1/level: 3\n",
			"domains/cpu0/domain1/groups_flags: SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_SHARE_LLC SD_PREFER_SIBLING\n",
			"domains/cpu0/domain0/groups_flags: \n"}},
		{"6.6.80", []string{"domains/cpu0/domain1/name: PKG\n"}},
		{"6.6.30", []string{"domains/cpu0/domain1/name: DIE\n"}},
		// v5.4: procfs, decimal flags with SD_LOAD_BALANCE, busy_factor 32,
		// imbalance_pct 125 outside SMT/LLC levels. 4655 is what public
		// v4.x/v5.x sysctl dumps show for MC.
		{"5.4.0-150-generic", []string{"sched_domain/cpu0/domain0/flags: 4655\n", "sched_domain/cpu0/domain0/busy_factor: 32\n",
			"sched_domain/cpu0/domain1/imbalance_pct: 125\n", "sched_domain/cpu0/domain0/imbalance_pct: 117\n", "sched_domain/cpu0/domain1/name: DIE\n"}},
		// v5.10-5.12: procfs, flags by name, new defaults.
		{"5.10.0-28-amd64", []string{"sched_domain/cpu0/domain1/imbalance_pct: 117\n", "sched_domain/cpu0/domain1/busy_factor: 16\n",
			"sched_domain/cpu0/domain1/flags: SD_BALANCE_NEWIDLE SD_BALANCE_EXEC SD_BALANCE_FORK SD_WAKE_AFFINE SD_PREFER_SIBLING\n"}},
	} {
		got := text(tc.kernel)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("kernel %s: output lacks %q:\n%s", tc.kernel, w, got)
			}
		}
	}
	// SMT on v5.4: 4783 (= MC's 4655 + SD_SHARE_CPUCAPACITY), imbalance 110,
	// as in public v4.x/v5.x dumps.
	d := build(t, "sockets=1,cores=4,threads=2", "5.4")
	if f := d.CPUs[0].Domains[0].Flags.KernelBits(d.Kernel); f != 4783 || d.CPUs[0].Domains[0].ImbalancePct != 110 {
		t.Errorf("v5.4 SMT flags %d imbalance %d; want 4783, 110", f, d.CPUs[0].Domains[0].ImbalancePct)
	}
}

func TestImbNUMANr(t *testing.T) {
	// v6.0+: the level above the LLC gets imb = nr_llcs (or weight/8 when
	// one LLC); NUMA levels above scale by weight/imb_span.
	d := build(t, "epyc2-2s64c", "6.1")
	cd := d.CPUs[0]
	got := []int{}
	for _, sd := range cd.Domains {
		got = append(got, sd.ImbNUMANr)
	}
	// SMT, MC: 0; DIE (16 LLCs): 16, imb_span = NUMA weight 256; NUMA: 16*1.
	if want := []int{0, 0, 16, 16}; !equalInts(got, want) || got[2] != 16 {
		t.Errorf("imb_numa_nr %v; want %v", got, want)
	}
	d = build(t, "spr-2s56c", "6.1")
	// One LLC per node: the (degenerate) PKG level above MC gets
	// imb = weight/8 = 112>>3 = 14, and NUMA (weight 224 = imb_span) x1.
	if n := d.CPUs[0].Domains[2]; n.ImbNUMANr != 14 {
		t.Errorf("spr NUMA imb_numa_nr %d; want 14", n.ImbNUMANr)
	}
}

func TestSpanSanity(t *testing.T) {
	// Two L3 caches that partially overlap: the kernel refuses to build.
	top, err := ParseSpec("sockets=1,cores=6")
	if err != nil {
		t.Fatal(err)
	}
	top.Caches = []Cache{{Level: 3, Type: "Unified", CPUs: []int{0, 1, 2, 3}}, {Level: 3, Type: "Unified", CPUs: []int{2, 3, 4, 5}}}
	_, err = BuildDomains(top, "6.1")
	if err == nil || !strings.Contains(err.Error(), "partially overlap") {
		t.Fatalf("err %v; want a partial-overlap error", err)
	}
}

func TestOfflineCPUs(t *testing.T) {
	top, err := ParseSpec("sockets=1,cores=4,threads=2")
	if err != nil {
		t.Fatal(err)
	}
	top.CPUs[7].Online = false
	d, err := BuildDomains(top, "6.1")
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, d)
	if len(d.CPUs[7].Domains) != 0 || chain(d, 6) != "MC:0-6" || chain(d, 0) != "SMT:0-1 MC:0-6" {
		t.Fatalf("cpu6 %q cpu0 %q", chain(d, 6), chain(d, 0))
	}
	// min_interval comes from the level mask, not the online part of it.
	if got := d.CPUs[0].Domains[1].MinInterval; got != 8 {
		t.Errorf("MC min_interval %d; want 8 (weight of the LLC mask)", got)
	}
}

func TestOutputsJSONAndTree(t *testing.T) {
	d := build(t, "testdata/kernels/guest-G-4s2c2t-4numa-ring", "6.1.0-57-amd64")
	var b bytes.Buffer
	if err := d.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	if err := json.Unmarshal(b.Bytes(), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 16*4 {
		t.Fatalf("%d records; want 64", len(recs))
	}
	r := recs[3] // cpu0 domain3, checked against guest-G's sched_verbose
	if r["cpu"].(float64) != 0 || r["level"].(float64) != 3 || r["name"] != "NUMA" || r["span"] != "0-15" ||
		strings.Join(toStrings(r["groups"]), " ") != "0-7,12-15 4-15" || strings.Join(toStrings(r["group_masks"]), " ") != "0-3 8-11" {
		t.Errorf("record %v", r)
	}
	b.Reset()
	if err := d.WriteTree(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"last-level caches (sd_llc): 4", "CPUs 0-3 share an LLC", "(balanced by 0-3)", "NUMA distances: [10 20 30]"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("tree lacks %q:\n%s", w, b.String())
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestSysfsDirectoryAndTar(t *testing.T) {
	// Write guest-A's dump as a real directory tree: cpu/ and node/.
	src := "testdata/kernels/guest-A-2s2c2t-2numa"
	f := sysfsFiles{}
	for _, n := range []string{"cpu_topology_sysfs.txt", "numa_nodes.txt"} {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := readSysfsDump(bytes.NewReader(b), f); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	for k, v := range f {
		p := filepath.Join(root, "sys/devices/system", k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := build(t, src, "6.1")
	for _, p := range []string{root, filepath.Join(root, "sys/devices/system/cpu")} {
		got := build(t, p, "6.1")
		var a, b bytes.Buffer
		_ = want.WriteVerbose(&a)
		_ = got.WriteVerbose(&b)
		if a.String() != b.String() {
			t.Errorf("%s: domains differ from the dump's", p)
		}
	}
	if _, err := ParseSpec(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no cpuN directories") {
		t.Errorf("empty dir: %v", err)
	}
}

func TestResolve(t *testing.T) {
	_, err := Resolve("", nil)
	if !errors.Is(err, ErrNoTopology) || !strings.Contains(err.Error(), "--topology sockets=1,cores=8,threads=2") || !strings.Contains(err.Error(), "lscpu -p") {
		t.Errorf("no topology: %v", err)
	}
	// A trace's topology (as perf.data gives it: no caches, no distances,
	// online flags unset) is completed and used.
	tr := &Topology{Source: "perf.data header", NrCPUs: 4}
	for i := 0; i < 4; i++ {
		tr.CPUs = append(tr.CPUs, CPU{ID: i, CoreID: i / 2, PackageID: 0, DieID: 0, ClusterID: -1, Node: i / 2,
			ThreadSiblings: []int{i &^ 1, i | 1}, CoreSiblings: []int{0, 1, 2, 3}})
	}
	tr.Nodes = []Node{{ID: 0, CPUs: []int{0, 1}}, {ID: 1, CPUs: []int{2, 3}}}
	got, err := Resolve("", tr)
	if err != nil || got.NrCPUs != 4 || !got.CPUs[3].Online {
		t.Fatalf("Resolve(trace): %v %+v", err, got)
	}
	// Modifiers complete the trace.
	got, err = Resolve("distance=32", tr)
	if err != nil || got.Nodes[0].Distance[1] != 32 || tr.Nodes[0].Distance != nil {
		t.Fatalf("Resolve(distance=32): %v %+v (the trace must stay unchanged)", err, got.Nodes)
	}
	d, err := BuildDomains(got, "6.1")
	if err != nil {
		t.Fatal(err)
	}
	if chain(d, 0) != "SMT:0-1 NUMA:0-3" || d.CPUs[0].Domains[1].Flags&SDWakeAffine != 0 {
		t.Errorf("chain %q flags %s", chain(d, 0), flags(d, d.CPUs[0].Domains[1]))
	}
	// A full spec overrides, but may not have fewer CPUs than the trace.
	if got, err := Resolve("sockets=1,cores=8", tr); err != nil || got.NrCPUs != 8 {
		t.Errorf("override: %v", err)
	}
	if _, err := Resolve("sockets=1,cores=2", tr); err == nil || !strings.Contains(err.Error(), "the trace has 4") {
		t.Errorf("smaller spec: %v", err)
	}
	if _, err := Resolve("capacity=512", nil); !errors.Is(err, ErrNoTopology) {
		t.Errorf("modifier without base: %v", err)
	}
}

func TestBadSpecs(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "empty topology spec"},
		{"cores=0", "cores=0: want a whole number 1.."},
		{"cores=x", "cores=x: want a whole number"},
		{"sockets=3,numa=2", "numa=2: must divide sockets=3"},
		{"sockets=1,cores=6,numa=4", "nodes inside a socket must split its cores evenly"},
		{"frobs=1", `unknown key "frobs"`},
		{"cores", "neither a preset"},
		{"cores=8,llc=3", "llc=3: want socket, die, cluster, node, core or a number of cores dividing cores=8"},
		{"cores=8,llc=cluster", "llc=cluster needs clusters=N"},
		{"sockets=2,numa=2,distance=5", "distance=5: 5 is not 11..255"},
		{"sockets=2,numa=2,distance=10:20:30/20:10:30", "row 1 has 3 entries for 2 nodes"},
		{"sockets=2,numa=2,distance=10:20/20:10/10:10", "3 rows for 2 nodes"},
		{"sockets=2,numa=2,distance=10:20/20", "row 2 has 1 entries"},
		{"sockets=2,distance=20", "distances need numa=2 or more"},
		{"cores=4,capacity=0-3:2000", `capacity "2000" is not 1..1024`},
		{"cores=4,capacity=0-9:512", "cpu4 is beyond the 4 CPUs"},
		{"cores=4,capacity=fast", "want one number 1..1024"},
		{"hikey,cores=4", "a preset or file fixes the machine's shape"},
		{"distance=20", "only modifies a topology"},
		{"sockets=9000,cores=1", "sockets=9000: want a whole number 1..8192"},
		{"cores=4000,threads=4", "at most 8192"},
		{"cores=8,numbering=zigzag", "numbering=zigzag: want adjacent"},
		{"cores=8,arch=sparc", "arch=sparc: want x86, arm64, powerpc"},
		{"cores=8,dies=3", "dies=3: must divide cores=8"},
		{"cores=8,clusters=3", "clusters=3: must divide cores=8"},
		{"cores=8,cores=4", "cores= given twice"},
		{"cores=", "want key=value"},
	} {
		_, err := ParseSpec(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpec(%q) = %v; want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"junk.txt", "hello\n", "not a topology file"},
		{"noheader.txt", "# nothing\n0,0,0,0\n", "not a topology file"},
		{"badcpu.txt", "# CPU,Core,Socket,Node\nx,0,0,0\n", `CPU "x" is not a CPU number`},
		{"hugecpu.txt", "# CPU,Core,Socket,Node\n99999,0,0,0\n", "is not a CPU number 0..8191"},
		{"dup.txt", "# CPU,Core,Socket,Node\n0,0,0,0\n0,0,0,0\n", "CPU 0 listed twice"},
		{"badcore.txt", "# CPU,Core,Socket,Node\n0,a,0,0\n", `CORE "a" is not a number`},
		{"empty.txt", "# CPU,Core,Socket,Node\n", "no CPU lines"},
		{"sysfs.txt", "sys/devices/system/cpu/cpu0/topology/core_id: zero\n", "want a number"},
		{"sysfs2.txt", "sys/devices/system/cpu/cpu0/topology/core_id: 0\nsys/devices/system/cpu/cpu0/topology/thread_siblings_list: 0-9999\n", `bad range "0-9999" (want low-high with low <= high < 8192)`},
		{"sysfs3.txt", "sys/devices/system/cpu/cpu0/topology/core_id: 0\nsys/devices/system/cpu/cpu0/topology/thread_siblings_list: 1\nsys/devices/system/cpu/cpu1/topology/core_id: 0\n", "does not contain cpu0 itself"},
		{"sysfs4.txt", "sys/devices/system/cpu/cpu0/topology/core_id: 0\n== sys/devices/system/node/node0/cpulist\n0\n== sys/devices/system/node/node0/distance\n20\n", "must be 10"},
		{"asym.txt", "sys/devices/system/cpu/cpu0/topology/core_id: 0\nsys/devices/system/cpu/cpu1/topology/core_id: 0\n== node/node0/cpulist\n0\n== node/node0/distance\n10 20\n== node/node1/cpulist\n1\n== node/node1/distance\n30 10\n", "must be symmetric: node0->node1 is 20 but node1->node0 is 30"},
		{"halfdist.txt", "sys/devices/system/cpu/cpu0/topology/core_id: 0\nsys/devices/system/cpu/cpu1/topology/core_id: 0\n== node/node0/cpulist\n0\n== node/node1/cpulist\n1\n== node/node1/distance\n20 10\n", "node0 has no distance row but other nodes have one"},
		{"bad.json", `{"nr_cpus": 2, "cpus": [{"cpu": 0, "online": true}, {"cpu": 1, "online": true, "capacity": 5000}]}`, "capacity 5000"},
		{"bad.tar.gz", "not gzip", "not a gzip file"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ParseSpec(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestLscpuVariants(t *testing.T) {
	// lscpu -p=CPU,CORE,SOCKET,NODE,CLUSTER,CACHE with caches in one
	// colon-separated column, and an offline CPU (lscpu -p -a).
	in := "# CPU,Core,Socket,Node,Cluster,,L1d:L1i:L2\n0,0,0,0,0,,0:0:0\n1,1,0,0,0,,1:1:0\n2,2,0,0,1,,2:2:1\n3,3,0,0,1,,3:3:1\n"
	top, err := ParseLscpu(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if FormatCPUList(top.CPUs[2].ClusterSiblings) != "2-3" || len(top.Caches) != 10 {
		t.Fatalf("clusters %v caches %d", top.CPUs[2].ClusterSiblings, len(top.Caches))
	}
	top.Arch = "arm64"
	d, err := BuildDomains(top, "6.1")
	if err != nil {
		t.Fatal(err)
	}
	if chain(d, 3) != "MC:2-3 DIE:0-3" {
		t.Errorf("chain %q", chain(d, 3))
	}
	in = "# CPU,Core,Socket,Node,,L1d,L1i,L2,L3,Online\n0,0,0,0,,0,0,0,0,Y\n1,1,0,0,,1,1,1,0,N\n"
	top, err = ParseLscpu(strings.NewReader(in))
	if err != nil || top.CPUs[1].Online || !top.CPUs[0].Online {
		t.Fatalf("online column: %v %+v", err, top.CPUs)
	}
}

func TestKernelVersionParsing(t *testing.T) {
	for in, want := range map[string]string{"6.1.0-57-amd64": "6.1 DIE", "v6.7-rc1": "6.7 PKG", "5.10": "5.10 DIE",
		"Linux version 6.12.5-arch1 (gcc)": "6.12 PKG", "": "6.19 PKG"} {
		v, err := ParseKernelVersion(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%d.%d %s", v.Major, v.Minor, v.PkgLevelName()); got != want {
			t.Errorf("%q: %s; want %s", in, got, want)
		}
	}
	for _, bad := range []string{"six", "1.2", "x6.1"} {
		if _, err := ParseKernelVersion(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestFlagNamesRoundTrip(t *testing.T) {
	f, err := ParseFlagNames([]string{"SD_BALANCE_NEWIDLE", "SD_SHARE_PKG_RESOURCES", "SD_SHARE_LLC", "SD_NUMA"})
	if err != nil || f != SDBalanceNewidle|SDShareLLC|SDNUMA {
		t.Fatalf("%v %v", f, err)
	}
	if _, err := ParseFlagNames([]string{"SD_BOGUS"}); err == nil {
		t.Error("SD_BOGUS accepted")
	}
}

func TestArchNamesAndJSONRoundTrip(t *testing.T) {
	for in, want := range map[string]string{"x86_64": "x86", "": "x86", "aarch64": "arm64", "ppc64le": "powerpc", "riscv64": "riscv64"} {
		if got := NormalizeArch(in); got != want {
			t.Errorf("NormalizeArch(%q) = %q; want %q", in, got, want)
		}
	}
	// riscv64 uses the generic default_topology, as arm64 does.
	if got := chain(build(t, "sockets=1,cores=4,threads=2,arch=riscv64", "6.12"), 3); got != "SMT:2-3 MC:0-7" {
		t.Errorf("riscv64 chain %q", got)
	}
	// --format topology output read back through --topology.
	top, err := ParseSpec("testdata/kernels/guest-G-4s2c2t-4numa-ring")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "topo.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var v1, v2 bytes.Buffer
	_ = build(t, "testdata/kernels/guest-G-4s2c2t-4numa-ring", "6.1").WriteVerbose(&v1)
	_ = build(t, p, "6.1").WriteVerbose(&v2)
	if v1.String() != v2.String() {
		t.Errorf("JSON round trip changed the domains")
	}
}
