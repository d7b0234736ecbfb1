package model

import (
	"strings"
	"testing"
)

// The juno-r0 preset carries LISA's Energy Model for the board (its
// plat_info.yml nrg-model active states): the costs below are em_create_pd's
// power * fmax / freq, worked by hand (A53: 42 mW at 450 MHz of 850 MHz
// is 42 * 850 / 450 = 79.3 -> 79; A57: 160 mW at 450 of 1100 MHz is
// 391.1 -> 391; the top state's cost is its power).
func TestJunoR0EnergyModel(t *testing.T) {
	top, err := ParseSpec("juno-r0")
	if err != nil {
		t.Fatal(err)
	}
	em := top.EnergyModel()
	if len(em) != 2 {
		t.Fatalf("energy model %+v; want two performance domains", em)
	}
	for _, tc := range []struct {
		pd         int
		cpus       string
		state      int
		khz, power uint64
		cost       uint64
	}{
		{0, "0,3-5", 0, 450000, 42, 79},
		{0, "0,3-5", 4, 850000, 119, 119},
		{1, "1-2", 0, 450000, 160, 391},
		{1, "1-2", 3, 950000, 454, 525},
		{1, "1-2", 4, 1100000, 583, 583},
	} {
		d := em[tc.pd]
		if got := FormatCPUList(d.CPUs); got != tc.cpus {
			t.Errorf("pd%d cpus %s; want %s", tc.pd, got, tc.cpus)
		}
		s := d.States[tc.state]
		if s.KHz != tc.khz || s.Power != tc.power {
			t.Errorf("pd%d state %d %+v; want %d kHz at %d mW", tc.pd, tc.state, s, tc.khz, tc.power)
		}
		if got := d.Cost(tc.state); got != tc.cost {
			t.Errorf("pd%d state %d cost %d; want %d", tc.pd, tc.state, got, tc.cost)
		}
	}
	sym, err := ParseSpec("sockets=1,cores=4")
	if err != nil {
		t.Fatal(err)
	}
	if sym.EnergyModel() != nil {
		t.Error("a spec without perf_domains has an energy model")
	}
}

// An Energy Model that leaves an online CPU out gives none (the kernel's
// build_perf_domains gives up on EAS), and bad ones are refused, naming
// what is wrong.
func TestPerfDomainsValidate(t *testing.T) {
	base := func() *Topology {
		top, err := ParseSpec("sockets=1,cores=4,capacity=0:1024/1:1024/2:512/3:512")
		if err != nil {
			t.Fatal(err)
		}
		return top
	}
	st := []PerfState{{500000, 100}, {1000000, 300}}
	top := base()
	top.PerfDomains = []PerfDomain{{CPUs: []int{0, 1}, States: st}}
	if err := top.Validate(); err != nil {
		t.Fatal(err)
	}
	if top.EnergyModel() != nil {
		t.Error("an energy model leaving cpus 2-3 out was taken")
	}
	for _, tc := range []struct {
		name string
		pds  []PerfDomain
		want string
	}{
		{"ok", []PerfDomain{{CPUs: []int{0, 1}, States: st}, {CPUs: []int{3, 2}, States: st}}, ""},
		{"no cpus", []PerfDomain{{States: st}}, "lists no CPUs"},
		{"no states", []PerfDomain{{CPUs: []int{0}}}, "has 0 states"},
		{"beyond", []PerfDomain{{CPUs: []int{4}, States: st}}, "names cpu4, beyond the 4 CPUs"},
		{"twice", []PerfDomain{{CPUs: []int{0, 1}, States: st}, {CPUs: []int{1}, States: st}}, "cpu1 is in perf_domains[0] and perf_domains[1]"},
		{"mixed", []PerfDomain{{CPUs: []int{1, 2}, States: st}}, "mixes capacities 1024 and 512"},
		{"descending", []PerfDomain{{CPUs: []int{0}, States: []PerfState{{1000000, 300}, {500000, 100}}}}, "not in ascending frequency"},
		{"zero power", []PerfDomain{{CPUs: []int{0}, States: []PerfState{{500000, 0}}}}, "want both positive"},
	} {
		top := base()
		top.PerfDomains = tc.pds
		err := top.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v; want one saying %q", tc.name, err, tc.want)
		}
		if tc.want == "" {
			em := top.EnergyModel()
			if len(em) != 2 || FormatCPUList(em[1].CPUs) != "2-3" {
				t.Errorf("%s: energy model %+v; want domains 0-1 and 2-3", tc.name, em)
			}
		}
	}
}
