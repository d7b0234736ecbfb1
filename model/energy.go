package model

import (
	"fmt"
	"sort"
)

// PerfDomain is one performance domain of the kernel's Energy Model
// (struct em_perf_domain, kernel/power/energy_model.c): CPUs that change
// frequency together, and the performance states they run at. Energy-aware
// scheduling (EAS, v5.0) needs it; a topology without one has no EAS.
type PerfDomain struct {
	// CPUs of the domain (its cpufreq policy's related_cpus).
	CPUs []int `json:"cpus"`
	// States in ascending frequency, as the kernel's table keeps them.
	States []PerfState `json:"states"`
}

// PerfState is one performance state (struct em_cap_state, v5.0): a
// frequency and the power drawn running at it. Only the ratios of the
// powers across domains matter to the scheduler's choices.
type PerfState struct {
	KHz   uint64 `json:"khz"`
	Power uint64 `json:"power_mw"`
}

// Limits on an Energy Model from untrusted input.
const (
	maxPerfStates = 1024
	maxPower      = 1 << 32 // mW; far above any CPU's
	maxKHz        = 1 << 32
)

// Cost is the state's em_cap_state cost: power scaled by the domain's
// highest frequency over the state's (em_create_pd: cost = power * fmax /
// freq, integer division). Energy of a run at this state is then cost *
// utilisation / the CPU's capacity.
func (d *PerfDomain) Cost(i int) uint64 {
	fmax := d.States[len(d.States)-1].KHz
	return d.States[i].Power * fmax / d.States[i].KHz
}

// validatePerfDomains checks that the domains name each online CPU at
// most once, within range, that each has states in strictly ascending
// frequency with positive power, and that the CPUs of one domain share a
// capacity (the kernel takes a domain's capacity from its first CPU).
func (t *Topology) validatePerfDomains() error {
	seen := map[int]int{}
	for k, d := range t.PerfDomains {
		if len(d.CPUs) == 0 {
			return fmt.Errorf("topology: perf_domains[%d] lists no CPUs", k)
		}
		if len(d.States) == 0 || len(d.States) > maxPerfStates {
			return fmt.Errorf("topology: perf_domains[%d] (cpus %s) has %d states; want 1..%d", k, FormatCPUList(d.CPUs), len(d.States), maxPerfStates)
		}
		capc := -1
		for _, c := range d.CPUs {
			if c < 0 || c >= t.NrCPUs {
				return fmt.Errorf("topology: perf_domains[%d] names cpu%d, beyond the %d CPUs", k, c, t.NrCPUs)
			}
			if j, dup := seen[c]; dup {
				return fmt.Errorf("topology: cpu%d is in perf_domains[%d] and perf_domains[%d]; a CPU belongs to one performance domain", c, j, k)
			}
			seen[c] = k
			cc := t.CPUs[c].Capacity
			if cc == 0 {
				cc = 1024
			}
			if capc >= 0 && cc != capc {
				return fmt.Errorf("topology: perf_domains[%d] mixes capacities %d and %d (cpu%d); a performance domain's CPUs are of one kind", k, capc, cc, c)
			}
			capc = cc
		}
		for i, s := range d.States {
			if s.KHz == 0 || s.KHz >= maxKHz || s.Power == 0 || s.Power >= maxPower {
				return fmt.Errorf("topology: perf_domains[%d] state %d is %d kHz at %d mW; want both positive and below 2^32", k, i, s.KHz, s.Power)
			}
			if i > 0 && s.KHz <= d.States[i-1].KHz {
				return fmt.Errorf("topology: perf_domains[%d] states are not in ascending frequency (%d kHz after %d kHz)", k, s.KHz, d.States[i-1].KHz)
			}
		}
	}
	return nil
}

// EnergyModel returns the performance domains covering the online CPUs,
// each sorted by CPU, in the order of their first CPU (the kernel's
// rd->pd list runs the other way, which the what-if engine follows);
// nil when the topology has none or they leave an online CPU out
// (build_perf_domains then gives up on EAS).
func (t *Topology) EnergyModel() []PerfDomain {
	if len(t.PerfDomains) == 0 {
		return nil
	}
	in := map[int]bool{}
	out := make([]PerfDomain, 0, len(t.PerfDomains))
	for _, d := range t.PerfDomains {
		var cpus []int
		for _, c := range d.CPUs {
			if c >= 0 && c < len(t.CPUs) && t.CPUs[c].Online {
				cpus = append(cpus, c)
				in[c] = true
			}
		}
		if len(cpus) == 0 {
			continue
		}
		sort.Ints(cpus)
		out = append(out, PerfDomain{CPUs: cpus, States: d.States})
	}
	for _, c := range t.CPUs {
		if c.Online && !in[c.ID] {
			return nil
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPUs[0] < out[j].CPUs[0] })
	return out
}
