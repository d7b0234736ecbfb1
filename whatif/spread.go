package whatif

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// Spread sets a replay's error beside the kernel's own run-to-run spread:
// other recordings of the same workload on the same machine and kernel
// are scored against each other as Compare scores a replay against its
// trace. The goals are per recording, and a kernel booted again does not
// always meet them against itself (FIDELITY.md round 49: a p95 one
// recording of schbench meets against another 18 % of the time), so a
// miss means most when the replay also falls outside the range the
// kernel's recordings span.
type Spread struct {
	// Recordings counts the recordings, the validated trace first;
	// Pairs the ordered pairs of them (n × (n − 1)).
	Recordings int          `json:"recordings"`
	Pairs      int          `json:"pairs"`
	Goals      []SpreadGoal `json:"goals"`
}

// SpreadGoal is one of Compare's goals over the recordings: the range its
// quantity (GoalValue) spans, the replay's value and whether it lies in
// that range, and how many ordered pairs of recordings meet the goal, one
// taken as the observed side and the other as if it were the replay.
type SpreadGoal struct {
	Metric    string  `json:"metric"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	Simulated float64 `json:"simulated"`
	Within    bool    `json:"within"`
	KernelMet int     `json:"kernel_met"`
	// KernelNotCompared: the pairs whose observed side records no wakeup,
	// where a latency goal compares nothing (Goal.NotCompared): neither
	// met nor missed.
	KernelNotCompared int `json:"kernel_not_compared,omitempty"`
	// Band, for a latency goal, places the validated trace's goal band
	// (GoalBand) in every recording: a percentile range says whether the
	// replay's percentile lies among the kernel's, the band by how many
	// wakeups (per cent) the recordings and the replay put on its fast
	// side.
	Band *SpreadBand `json:"band,omitempty"`
}

// SpreadBand is the share of wakeups below the validated trace's band of
// a latency goal ((1 − tol)·x, x the trace's percentile), in per cent:
// the lowest and highest over the recordings, and the replay's.
type SpreadBand struct {
	BelowMin  float64 `json:"below_low_min"`
	BelowMax  float64 `json:"below_low_max"`
	Simulated float64 `json:"simulated_below_low"`
	Within    bool    `json:"within"`
}

// GoalValue is the quantity goal metric is about in m: a wakeup-latency
// percentile in ns, or for the idle goal the idle share of idle plus CPU
// time (Compare scores idle against the total CPU time; a range of
// shares compares recordings of different lengths).
func GoalValue(metric string, m *Metrics) float64 {
	switch metric {
	case "wakeup_p50_ns":
		return float64(m.WakeupP50NS)
	case "wakeup_p95_ns":
		return float64(m.WakeupP95NS)
	case "wakeup_p99_ns":
		return float64(m.WakeupP99NS)
	}
	if t := m.IdleNS + m.CPUTimeNS; t > 0 {
		return float64(m.IdleNS) / float64(t)
	}
	return 0
}

// NewSpread scores the recordings' observed metrics obs (at least two,
// the validated trace first) against each other and places sim, the
// replay's, in their range.
func NewSpread(obs []*Metrics, sim *Metrics) *Spread {
	sp := &Spread{Recordings: len(obs), Pairs: len(obs) * (len(obs) - 1)}
	for _, g := range Compare("", sim, sim, nil).Goals {
		sg := SpreadGoal{Metric: g.Metric, Low: math.Inf(1), High: math.Inf(-1), Simulated: GoalValue(g.Metric, sim)}
		for _, o := range obs {
			v := GoalValue(g.Metric, o)
			sg.Low, sg.High = min(sg.Low, v), max(sg.High, v)
		}
		sg.Within = sg.Simulated >= sg.Low && sg.Simulated <= sg.High
		sg.Band = spreadBand(g.Metric, obs, sim)
		sp.Goals = append(sp.Goals, sg)
	}
	for i := range obs {
		for j := range obs {
			if i == j {
				continue
			}
			for k, g := range Compare("", obs[i], obs[j], nil).Goals {
				switch {
				case g.NotCompared:
					sp.Goals[k].KernelNotCompared++
				case g.Met:
					sp.Goals[k].KernelMet++
				}
			}
		}
	}
	return sp
}

// spreadBand places the band of latency goal metric around obs[0]'s
// percentile in every recording and the replay; nil for another goal or
// when a side has no wakeups.
func spreadBand(metric string, obs []*Metrics, sim *Metrics) *SpreadBand {
	g, ok := lookupLatencyGoal(metric)
	if !ok || len(sim.latencies) == 0 {
		return nil
	}
	x := obs[0].value(metric)
	shareBelow := func(m *Metrics) float64 { return share(g.countBelow(m.latencies, x), len(m.latencies)) }
	b := &SpreadBand{BelowMin: math.Inf(1), BelowMax: math.Inf(-1), Simulated: shareBelow(sim)}
	for _, o := range obs {
		if len(o.latencies) == 0 {
			return nil
		}
		v := shareBelow(o)
		b.BelowMin, b.BelowMax = min(b.BelowMin, v), max(b.BelowMax, v)
	}
	b.Within = b.Simulated >= b.BelowMin && b.Simulated <= b.BelowMax
	return b
}

// writeTable prints the spread under the fidelity table's goals.
func (sp *Spread) writeTable(b io.Writer) {
	fmt.Fprintf(b, "kernel spread over %d recordings (%d ordered pairs scored as replay against trace):\n", sp.Recordings, sp.Pairs)
	for _, g := range sp.Goals {
		in := "outside"
		if g.Within {
			in = "within"
		}
		lo, hi, v := spreadCell(g.Metric, g.Low), spreadCell(g.Metric, g.High), spreadCell(g.Metric, g.Simulated)
		nc := ""
		if g.KernelNotCompared > 0 {
			nc = fmt.Sprintf(" (%d not compared: no wakeups on the observed side)", g.KernelNotCompared)
		}
		fmt.Fprintf(b, "spread %-24s recordings %s..%s, replay %s (%s); the kernel meets the goal in %d of %d pairs%s\n",
			g.Metric, lo, hi, v, in, g.KernelMet, sp.Pairs, nc)
		if bd := g.Band; bd != nil {
			in := "outside"
			if bd.Within {
				in = "within"
			}
			fmt.Fprintf(b, "       %-24s below the trace's band: recordings %.1f..%.1f%%, replay %.1f%% (%s)\n", "", bd.BelowMin, bd.BelowMax, bd.Simulated, in)
		}
	}
}

// spreadCell formats a goal quantity: ns as ms, the idle share as a percentage.
func spreadCell(metric string, v float64) string {
	if strings.HasSuffix(metric, "_ns") {
		return fmt.Sprintf("%.4f ms", v/1e6)
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}
