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
		sp.Goals = append(sp.Goals, sg)
	}
	for i := range obs {
		for j := range obs {
			if i == j {
				continue
			}
			for k, g := range Compare("", obs[i], obs[j], nil).Goals {
				if g.Met {
					sp.Goals[k].KernelMet++
				}
			}
		}
	}
	return sp
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
		fmt.Fprintf(b, "spread %-24s recordings %s..%s, replay %s (%s); the kernel meets the goal in %d of %d pairs\n",
			g.Metric, lo, hi, v, in, g.KernelMet, sp.Pairs)
	}
}

// spreadCell formats a goal quantity: ns as ms, the idle share as a percentage.
func spreadCell(metric string, v float64) string {
	if strings.HasSuffix(metric, "_ns") {
		return fmt.Sprintf("%.4f ms", v/1e6)
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}
