package whatif

// Host stalls under the replay's own contention.
//
// A host stall the trace shows (hoststall.go) travels with its task's
// demand: the same work took that much more wall time at that point of
// it. How likely the stall was depends on the host's contention then:
// with k vCPUs busy on a host that runs H of them at once, a busy vCPU
// is descheduled 1 − H/k of the time (none with k ≤ H), which the
// eight-vCPU guests' stalls follow (guest-B's hackbench: 64 % of busy
// time stalled with eight busy, H = 2.7, where 1 − H/8 = 66 %). Where
// the replay reaches a stall with fewer vCPUs busy than the trace had
// when it recorded it (a straggler that runs on alone after the others
// finished, while the trace's ran among them), the host would have
// descheduled that vCPU for that share of it only: the rest of the stall
// goes, and the task's demand with it. The replay never lengthens or
// adds a stall where it is busier than the trace (the stalls are lower
// bounds already, and the busy host wait of noise.go covers the IPIs;
// lengthening by the same ratio, measured, met fewer goals).
//
// Before this (FIDELITY.md round 85) a stall kept its recorded length
// whatever the replay's contention: on guest-B's hackbench one task ran
// its last 118 ms alone, most of it in stalls recorded with eight vCPUs
// busy, and the replay's makespan came out 15 % long.

// stallShare is the share of a busy vCPU's time a host running hostCores
// of them at once deschedules with busy vCPUs busy: 1 − H/busy, at least 0.
func stallShare(hostCores float64, busy int) float64 {
	if busy <= 0 {
		return 0
	}
	return max(0, 1-hostCores/float64(busy))
}

// stallContentionOn: Config.StallContention, with the trace's host
// contention measured and its stalls travelling with the demand.
func (s *Sim) stallContentionOn() bool {
	return s.cfg.StallContention && s.stallsInDemand() && s.w.Stalls.HostCores > 0
}

// stallsInDemand: the machine's noise is modelled (Config.IdleWake), the
// trace's stalls were measured, and its host stalls travel with the
// demand of the task they fell on (not Config.HostStallCPU): the rules
// that reshape or wait for a task's own stalls (stall_contention,
// wake_stall) apply.
func (s *Sim) stallsInDemand() bool {
	return s.cfg.IdleWake && !s.cfg.HostStallCPU && s.w.Stalls != nil
}

// weighStalls weighs each host stall of running task t's activation that
// its progress has reached (armProgress stops at each one's start): with
// n vCPUs busy now and Busy when the trace recorded it, only
// stallShare(n)/stallShare(Busy) of the stall remains; t's progress skips
// the rest.
func (s *Sim) weighStalls(t *simTask) {
	if t.act < 0 || !s.stallContentionOn() {
		return
	}
	a := &t.w.Activations[t.act]
	hc := s.w.Stalls.HostCores
	for t.weighStall < a.StallHi {
		h := &s.w.HostStalls[t.weighStall]
		if h.OffsetNS > t.progress {
			return
		}
		t.weighStall++
		end := min(h.OffsetNS+h.LenNS, a.DemandNS)
		then := stallShare(hc, int(h.Busy))
		if t.progress >= end || then <= 0 {
			continue
		}
		ratio := stallShare(hc, s.busyCPUs()) / then
		if ratio >= 1 {
			continue
		}
		cut := min(int64(float64(h.LenNS)*(1-ratio)), end-t.progress)
		if cut <= 0 {
			continue
		}
		t.progress += cut
		t.stallCutNS += cut
		s.stats.HostStallsShortened++
		s.stats.HostStallShortenedNS += cut
	}
}
