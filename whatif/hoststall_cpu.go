package whatif

import (
	"cmp"
	"fmt"
	"slices"
)

// Host stalls left on the CPU (Config.HostStallCPU, `--set host_stall=cpu`).
//
// By default a host stall travels with the task it fell on: it is part of
// that task's demand at the point of its progress where the trace shows it
// (hoststall.go). What the host descheduled was the vCPU, though, at a
// wall-clock time, whichever task the guest ran there. Under this option
// the stalls are taken out of the demand and put back on their vCPU's
// wall clock: from TimeNS for WallNS, CPU c makes no progress on whatever
// task the replay runs there, and its tick and a wakeup preemption wait
// for the stall's end as they do for a travelling stall. A replay that
// leaves c idle then loses the stall: an idle vCPU the host does not run
// costs the guest nothing until a wakeup (the idle-wake delays,
// Workload.IdleWakeNS, are drawn from the trace as before).
//
// The task's wall time in a stall is still charged to it (the guest's
// clock runs on, as the trace's sched_stat_runtime shows): only its
// progress stops.

// stallSpan is a stretch [from, to) of wall time a CPU's vCPU was stalled.
type stallSpan struct{ from, to int64 }

// withStallsOnCPUs returns a copy of w whose activations' demand leaves
// out their host stalls (edges and no-preemption stretches moved to match,
// HostStalls empty), and the stalls' wall-clock stretches per CPU (of
// ncpu), sorted and merged. A stall on a CPU the replay's topology does
// not have is dropped: there is no vCPU to leave it on.
func (w *Workload) withStallsOnCPUs(ncpu int) (*Workload, [][]stallSpan, error) {
	spans := make([][]stallSpan, ncpu)
	if len(w.HostStalls) == 0 {
		return w, spans, nil
	}
	for i, h := range w.HostStalls {
		if h.TimeNS == 0 {
			return nil, nil, fmt.Errorf("whatif: host_stall=cpu: host stall %d has no wall-clock time (a workload file written before they were kept: extract it again from the trace)", i)
		}
		if int(h.CPU) < ncpu {
			spans[h.CPU] = append(spans[h.CPU], stallSpan{h.TimeNS, h.TimeNS + h.WallNS})
		}
	}
	for c, ss := range spans {
		slices.SortFunc(ss, func(a, b stallSpan) int { return cmp.Compare(a.from, b.from) })
		out := ss[:0]
		for _, s := range ss {
			if n := len(out); n > 0 && s.from <= out[n-1].to {
				out[n-1].to = max(out[n-1].to, s.to)
				continue
			}
			out = append(out, s)
		}
		spans[c] = out
	}
	c := *w
	c.HostStalls = nil
	c.Tasks = slices.Clone(w.Tasks)
	c.Edges = slices.Clone(w.Edges)
	for ti := range c.Tasks {
		t := &c.Tasks[ti]
		t.Activations = slices.Clone(t.Activations)
		for ai := range t.Activations {
			a := &t.Activations[ai]
			stalls := w.HostStalls[a.StallLo:a.StallHi]
			a.StallLo, a.StallHi = 0, 0
			if len(stalls) == 0 {
				continue
			}
			// without maps an offset into the demand to the same point of
			// the demand without the stalls (a point inside a stall to
			// its start).
			without := func(off int64) int64 {
				n := off
				for _, h := range stalls {
					if h.OffsetNS >= off {
						break
					}
					n -= min(off, h.OffsetNS+h.LenNS) - h.OffsetNS
				}
				return n
			}
			for ei := a.EdgeLo; ei < a.EdgeHi; ei++ {
				e := &c.Edges[ei]
				from := without(e.OffsetNS)
				if e.NoPreemptNS > 0 {
					e.NoPreemptNS = without(e.OffsetNS+e.NoPreemptNS) - from
				}
				e.OffsetNS = from
			}
			a.DemandNS = without(a.DemandNS)
		}
	}
	return &c, spans, nil
}

// workIn is the wall time in [from, to) that r's vCPU ran, outside its
// stalls (from >= r.currStart: the cursor only moves forward).
func (r *rq) workIn(from, to int64) int64 {
	if to <= from {
		return 0
	}
	r.skipStalls()
	n := to - from
	for _, s := range r.stalls[r.stallIdx:] {
		if s.from >= to {
			break
		}
		if s.to > from {
			n -= min(s.to, to) - max(s.from, from)
		}
	}
	return n
}

// timeForWork is the first time from `from` (>= r.currStart) at which r's
// vCPU has run `work` ns outside its stalls: a run that would end in a
// stall ends at the stall's end.
func (r *rq) timeForWork(from, work int64) int64 {
	r.skipStalls()
	at := from
	for _, s := range r.stalls[r.stallIdx:] {
		if s.to <= at {
			continue
		}
		if s.from > at {
			if work <= s.from-at {
				return at + work
			}
			work -= s.from - at
		}
		if work == 0 {
			return at
		}
		at = s.to
	}
	return at + work
}

// stallEnd is the end of r's stall that `at` falls in, or `at`.
func (r *rq) stallEnd(at int64) int64 {
	r.skipStalls()
	for _, s := range r.stalls[r.stallIdx:] {
		if s.from > at {
			break
		}
		if at < s.to {
			return s.to
		}
	}
	return at
}

// skipStalls moves the cursor past the stalls over before the running
// task's last charge.
func (r *rq) skipStalls() {
	for r.stallIdx < len(r.stalls) && r.stalls[r.stallIdx].to <= r.currStart {
		r.stallIdx++
	}
}
