package whatif

import "github.com/schedreplay/replay/model"

// Energy-aware scheduling (EAS) as mainline v5.0 brought it (732cd75b8c92
// "sched/fair: Select an energy-efficient CPU on task wake-up" and its
// series): on a machine of unequal capacities with an Energy Model and
// schedutil, a wakeup goes where the Energy Model says the machine spends
// least (find_energy_efficient_cpu), not to an idle CPU, and the load
// balancer stands down, as long as no CPU is overutilized (its utilisation
// over 80 % of its capacity). Once one is, the root domain is flagged
// overutilized and the ordinary paths run until a top-level balance finds
// none. Phones and Arm boards run this; x86 has no Energy Model.

// easPerfDomain is one rd->pd entry: a performance domain's CPUs, their
// original capacity (arch_scale_cpu_capacity of its first CPU), and its
// states' frequencies and em_create_pd costs.
type easPerfDomain struct {
	cpus     []int
	scaleCPU uint64
	khz      []uint64
	cost     []uint64
}

// easState is rd->pd and rd->overutilized.
type easState struct {
	pds          []easPerfDomain
	overutilized bool
}

// EAS settings (Config.EAS).
const (
	EASAuto = "" // on where the kernel (v5.0+) and the machine have it
	EASOn   = "on"
	EASOff  = "off"
)

// initEAS is build_perf_domains(): EAS runs when the kernel has it (v5.0
// on, or Config.EAS on for a development tree), the topology carries an
// Energy Model covering every online CPU, the CPUs differ in capacity
// (sched_asym_cpucapacity). schedutil is taken as the governor: the
// model has no other. It returns why EAS is off when it was asked for and
// cannot run.
func (s *Sim) initEAS(topo *model.Topology) string {
	switch s.cfg.EAS {
	case EASOff:
		return ""
	case EASAuto:
		if !s.dom.Kernel.AtLeast(5, 0) {
			return ""
		}
	}
	em := topo.EnergyModel()
	s.initSMT()
	switch {
	case em == nil:
		return "the topology has no Energy Model (perf_domains) covering every online CPU"
	case !s.asymCap:
		return "the CPUs do not differ in capacity (no SD_ASYM_CPUCAPACITY domain)"
	}
	st := &easState{}
	// build_perf_domains walks the CPUs up and puts each new domain at
	// the head of rd->pd: the list runs from the domain of the highest
	// first CPU down, the order ties between domains' energies go by.
	for k := len(em) - 1; k >= 0; k-- {
		pd := em[k]
		d := easPerfDomain{cpus: pd.CPUs, scaleCPU: uint64(s.dom.Capacity[pd.CPUs[0]])}
		for i, ps := range pd.States {
			d.khz = append(d.khz, ps.KHz)
			d.cost = append(d.cost, pd.Cost(i))
		}
		st.pds = append(st.pds, d)
	}
	s.eas = st
	return ""
}

// cpuOverutilized is cpu_overutilized(): the CPU's utilisation does not
// fit its capacity_of with the 20 % margin.
func (s *Sim) cpuOverutilized(c int) bool {
	return !fitsCapacity(s.cpuUtil(c), s.cpus[c].cpuCapacity)
}

// updateOverutilizedStatus is update_overutilized_status(): an enqueue
// or a tick on an overutilized CPU flags the root domain (v5.0 meant to
// skip a fork's enqueue, but its test reads a flags word already
// overwritten, so every enqueue checks). Only a top-level balance clears
// it (noteOverutilized).
func (s *Sim) updateOverutilizedStatus(c int) {
	if s.eas != nil && !s.eas.overutilized && s.cpuOverutilized(c) {
		s.eas.overutilized = true
		s.stats.EASOverutilized++
	}
}

// noteOverutilized is update_sd_lb_stats()'s write of rd->overutilized
// from the groups' SG_OVERUTILIZED: a balance over the top domain sets or
// clears it, one lower down only sets it.
func (s *Sim) noteOverutilized(top, ou bool) {
	switch {
	case s.eas == nil:
	case top:
		if ou && !s.eas.overutilized {
			s.stats.EASOverutilized++
		}
		s.eas.overutilized = ou
	case ou && !s.eas.overutilized:
		s.eas.overutilized = true
		s.stats.EASOverutilized++
	}
}

// easBalanced is find_busiest_group()'s EAS gate: with an Energy Model
// and no CPU overutilized the balance ends balanced, after
// update_sd_lb_stats has refreshed the flag.
func (s *Sim) easBalanced() bool { return s.eas != nil && !s.eas.overutilized }

// cpuUtilNext is cpu_util_next(): CPU c's utilisation were p to run on
// dst: its util_avg with p's taken off where p's util sits (task_cpu) and
// dst is elsewhere, or added where dst is c; then at least its util_est
// (with p's own on dst), capped at the original capacity.
func (s *Sim) cpuUtilNext(c int, p *simTask, dst int) uint64 {
	r := s.cpus[c]
	util := r.avg.utilAvg
	switch tc := int(p.cpu); {
	case tc == c && dst != c:
		util -= min(util, p.avg.utilAvg)
	case tc != c && dst == c:
		util += p.avg.utilAvg
	}
	ue := r.utilEst
	if dst == c {
		ue += p.utilEstOwn()
	}
	return min(max(util, ue), r.capacity)
}

// computeEnergy is compute_energy(): the Energy Model's estimate of the
// machine's energy were p to run on dst, summed over the performance
// domains. A domain runs at the lowest state covering its busiest CPU's
// utilisation with schedutil's 25 % headroom, and spends that state's
// cost per unit of utilisation summed over its CPUs (em_pd_energy). The
// utilisation counted is schedutil's ENERGY_UTIL: CFS and RT (the model
// has no deadline tasks or IRQ time), capped at the capacity.
func (s *Sim) computeEnergy(p *simTask, dst int) uint64 {
	var energy uint64
	for i := range s.eas.pds {
		pd := &s.eas.pds[i]
		var maxUtil, sumUtil uint64
		for _, c := range pd.cpus {
			u := min(s.cpuUtilNext(c, p, dst)+s.cpus[c].avgRT.utilAvg, pd.scaleCPU)
			maxUtil = max(maxUtil, u)
			sumUtil += u
		}
		energy += pd.energy(maxUtil, sumUtil)
	}
	return energy
}

// energy is em_pd_energy(): the frequency schedutil would ask for
// maxUtil (map_util_freq: 1.25 times the top frequency scaled by
// maxUtil over the capacity), rounded up to a state, that state's cost
// times sumUtil over the capacity.
func (pd *easPerfDomain) energy(maxUtil, sumUtil uint64) uint64 {
	n := len(pd.khz)
	fmax := pd.khz[n-1]
	freq := (fmax + fmax>>2) * maxUtil / pd.scaleCPU
	i := 0
	for i < n-1 && pd.khz[i] < freq {
		i++
	}
	return pd.cost[i] * sumUtil / pd.scaleCPU
}

// findEnergyEfficientCPU is find_energy_efficient_cpu() (v5.0): -1 while
// the root domain is overutilized (the ordinary wakeup path decides);
// else, within the lowest
// asymmetric domain of the waking CPU that spans prev, prev or, from each
// performance domain, the allowed CPU with the most spare capacity that p
// fits with the 20 % margin, whichever the Energy Model says spends least,
// a CPU other than prev only when it saves more than 1/16 of prev's
// energy.
func (s *Sim) findEnergyEfficientCPU(p *simTask, prev, cpu int) int {
	if s.eas.overutilized {
		return -1
	}
	var span []int
	for sd := s.dom.CPUs[cpu].AsymCPUCapacity; sd != nil; sd = sd.Parent {
		if inSpan(sd.Span, prev) {
			span = sd.Span
			break
		}
	}
	if span == nil {
		return -1
	}
	s.syncEntityLoadAvg(p, prev)
	// v5.0 returns prev for a task of no utilisation, a test that never
	// holds there: _task_util_est ORs in a flag bit, so it is at least 1.
	const none = ^uint64(0)
	prevEnergy, bestEnergy, best := none, none, prev
	for i := range s.eas.pds {
		pd := &s.eas.pds[i]
		maxSpare, maxSpareCPU := uint64(0), -1
		for _, c := range pd.cpus {
			if !inSpan(span, c) || !p.allowed(c) {
				continue
			}
			util := s.cpuUtilNext(c, p, c)
			capc := s.cpus[c].cpuCapacity
			if !fitsCapacity(util, capc) {
				continue
			}
			if c == prev {
				prevEnergy = s.computeEnergy(p, prev)
				bestEnergy = min(bestEnergy, prevEnergy)
				continue
			}
			if spare := capc - util; spare > maxSpare {
				maxSpare, maxSpareCPU = spare, c
			}
		}
		if maxSpareCPU >= 0 {
			if e := s.computeEnergy(p, maxSpareCPU); e < bestEnergy {
				bestEnergy, best = e, maxSpareCPU
			}
		}
	}
	if prevEnergy == none || prevEnergy-bestEnergy > prevEnergy>>4 {
		if best == prev {
			s.stats.EASPrev++
		} else {
			s.stats.EASMoved++
		}
		return best
	}
	s.stats.EASPrev++
	return prev
}
