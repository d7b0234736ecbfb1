package model

import (
	_ "embed"
	"fmt"
	"sort"
)

// Preset is a named machine from the scheduler discussions this tool exists
// for.
type Preset struct {
	Name string
	// Description says what machine it is and what was assumed.
	Description string
	// Spec is the compact spec (with modifiers) that builds it.
	Spec string
	// JSON, when set, is the machine as a topology file (its Spec
	// empty): for a machine the compact spec cannot say, such as
	// clusters whose CPU numbers interleave.
	JSON []byte
}

//go:embed presets/juno-r0.json
var junoR0 []byte

var presets = map[string]*Preset{
	"hikey": {Name: "hikey",
		Description: "HiKey (Kirin 620): 8x Cortex-A53 arm64, two clusters of 4 CPUs, each cluster with its own L2 (the LLC), one package, one node, no SMT",
		Spec:        "sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64"},
	"juno-r0": {Name: "juno-r0",
		Description: "Arm Juno r0: 2x Cortex-A57 (CPUs 1-2, capacity 1024) and 4x Cortex-A53 (CPUs 0, 3-5, capacity 446), a cluster each with its own L2, one node; the capacities and clusters LISA records for its Juno test traces",
		JSON:        junoR0},
	"vm40-smt2": {Name: "vm40-smt2",
		Description: "40-CPU x86 VM: one socket of 20 cores x 2 threads, one LLC, one node, QEMU-style numbering (siblings 0,1)",
		Spec:        "sockets=1,cores=20,threads=2"},
	"power8-22c-smt8": {Name: "power8-22c-smt8",
		Description: "IBM POWER8, 22 cores x SMT8 = 176 CPUs: 2 chips of 11 cores, one NUMA node each (distance 20 assumed), L2/L3 private per core",
		Spec:        "sockets=2,cores=11,threads=8,numa=2,llc=core,arch=powerpc"},
	"arm64-2node-224": {Name: "arm64-2node-224",
		Description: "2-node 224-CPU arm64 server, modelled as a Cavium ThunderX2 (inferred): 2 sockets x 28 cores x SMT4, one LLC per socket, one node per socket, distance 20",
		Spec:        "sockets=2,cores=28,threads=4,numa=2,arch=arm64"},
	"epyc2-2s64c": {Name: "epyc2-2s64c",
		Description: "2x AMD EPYC 7742 (Rome, 2nd generation): 2 sockets x 64 cores x 2 threads = 256 CPUs, an L3 per 4-core CCX (16 LLCs per socket), NPS1 (one node per socket, distance 32), Linux numbering (cpu i and i+128 are siblings)",
		Spec:        "sockets=2,cores=64,threads=2,llc=4,numa=2,numbering=interleaved,distance=32"},
	"spr-2s56c": {Name: "spr-2s56c",
		Description: "2x Intel Xeon Platinum 8480+ (Sapphire Rapids): 2 sockets x 56 cores x 2 threads = 224 CPUs, one 105 MB L3 per socket, L2 per core, SNC off (one node per socket, distance 21), Linux numbering (cpu i and i+112 are siblings)",
		Spec:        "sockets=2,cores=56,threads=2,numa=2,numbering=interleaved,distance=21"},
}

// Presets lists the named machines, sorted by name.
func Presets() []Preset {
	var out []Preset
	for _, p := range presets {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PresetNames lists the preset names, sorted.
func PresetNames() []string {
	var out []string
	for _, p := range Presets() {
		out = append(out, p.Name)
	}
	return out
}

func buildPreset(name string) (*Topology, error) {
	p := presets[name]
	if p == nil {
		return nil, fmt.Errorf("unknown preset %q; known: %v", name, PresetNames())
	}
	var t *Topology
	var err error
	if p.JSON != nil {
		t, err = ParseTopologyBytes(p.JSON)
	} else {
		t, err = ParseSpec(p.Spec)
	}
	if err != nil {
		return nil, fmt.Errorf("preset %s: %v", name, err)
	}
	t.Source = "preset " + name + ": " + p.Description
	return t, nil
}
