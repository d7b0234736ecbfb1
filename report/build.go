package report

import (
	"fmt"
	"strings"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

// Input is what a report is built from: the trace, the machine, and the
// policies to replay it under.
type Input struct {
	Reader timeline.EventReader
	// Name is how the report names the input (its path).
	Name string
	// Domains are the traced machine's sched domains (nil: no topology;
	// then nothing is replayed) and Topology the machine they come from.
	Domains  *model.Domains
	Topology *model.Topology
	Kernel   string
	// Baseline is the policy the others are compared with (the traced
	// kernel's); nil replays nothing, and NoSimulation then says why.
	Baseline     whatif.Policy
	NoSimulation string
	Policies     []whatif.Policy
	// Seed is the seed of the replays drawn (timeline, CDF, bars,
	// fidelity): the same schedule `replay whatif --seed` writes.
	Seed uint64
	// Runs is the number of seeds per policy for the deltas
	// (whatif.ComparePolicies, seeds derived from Seed); at least 2.
	Runs     int
	Arrivals whatif.ArrivalMode
	// MaxRects bounds the timeline's rectangles (0: DefaultMaxRects).
	MaxRects int
}

// DefaultMaxRects keeps a report of a large trace to a few MB.
const DefaultMaxRects = 12000

// Run is one measured schedule: observed, or one policy's replay.
type Run struct {
	Name     string
	Schedule *Schedule
	Report   *analysis.Report
	// Metrics are whatif's metrics (fidelity and deltas).
	Metrics *whatif.Metrics
}

// Data is everything the report shows.
type Data struct {
	Input    string
	Meta     *timeline.Meta
	Topology string // model.Domains.WriteTree
	Events   int64
	Observed Run
	// Baseline and Policies are the replays with Input.Seed (nil/empty
	// when nothing was simulated; NoSimulation says why).
	Baseline     *Run
	Policies     []Run
	NoSimulation string
	Fidelity     *whatif.Fidelity
	Seed         uint64
	// Comparison is whatif.ComparePolicies' result (nil without --policy).
	Comparison *whatif.PolicyComparison
	MaxRects   int
}

// teeReader passes events to the workload extractor and to the analyses
// of the observed schedule, so the trace is read once (standard input
// works too).
type teeReader struct {
	timeline.EventReader
	n   int64
	to  []func(*timeline.Event) error
	err error
}

func (t *teeReader) Next() bool {
	if !t.EventReader.Next() {
		return false
	}
	t.n++
	for _, f := range t.to {
		if err := f(t.EventReader.Event()); err != nil && t.err == nil {
			t.err = err
		}
	}
	return true
}

func (t *teeReader) Err() error {
	if t.err != nil {
		return t.err
	}
	return t.EventReader.Err()
}

// WorstWakeups is how many of the trace's longest wakeups the report
// lists with their context (`replay latency --by wakeup`).
const WorstWakeups = 10

// analysisOptions are the options analysis.Run derives from a trace's
// metadata, for an Analyzer fed event by event.
func analysisOptions(m *timeline.Meta, d *model.Domains, sink analysis.SliceSink) analysis.Options {
	o := analysis.Options{Slices: sink, Worst: WorstWakeups}
	if d != nil {
		o.Levels = analysis.FromDomains(d)
		o.NumCPUs = d.NrCPUs
	}
	if m != nil {
		o.PreferWaking = m.Source.Records("sched_waking")
		o.NumCPUs = max(o.NumCPUs, m.Source.NrCPUsOnline, m.Source.NrCPUs)
		for _, c := range m.Summary.CPUs {
			o.NumCPUs = max(o.NumCPUs, c+1)
		}
	}
	return o
}

// Build reads the trace once (measuring it as `replay latency` does and
// extracting its workload), replays the workload under the baseline and
// each policy for every seed, and gathers what the report shows.
func Build(in Input) (*Data, error) {
	meta := in.Reader.Meta()
	d := &Data{Input: in.Name, Meta: meta, Seed: in.Seed, MaxRects: in.MaxRects, NoSimulation: in.NoSimulation}
	if d.MaxRects <= 0 {
		d.MaxRects = DefaultMaxRects
	}
	if in.Domains != nil {
		var b strings.Builder
		if err := in.Domains.WriteTree(&b); err != nil {
			return nil, err
		}
		d.Topology = b.String()
	}
	obs := NewSchedule()
	a := analysis.New(analysisOptions(meta, in.Domains, obs))
	tee := &teeReader{EventReader: in.Reader, to: []func(*timeline.Event) error{obs.add, a.Add}}
	var meas *whatif.Measurer
	simulate := in.Baseline != nil
	if simulate && in.Domains == nil {
		simulate, d.NoSimulation = false, "the trace has no topology (give one with --topology)"
	}
	if simulate {
		meas = whatif.NewTraceMeasurer(in.Domains, in.Domains.NrCPUs, meta)
		tee.to = append(tee.to, meas.Emit)
	}
	var w *whatif.Workload
	if simulate {
		var err error
		if w, err = whatif.ExtractWith(tee, whatif.ExtractOptions{Topology: in.Topology}); err != nil {
			if tee.err != nil {
				return nil, tee.err
			}
			if len(in.Policies) > 0 {
				return nil, fmt.Errorf("extracting the workload: %w", err)
			}
			simulate, d.NoSimulation = false, "the workload could not be extracted: "+err.Error()
		}
	}
	for tee.Next() {
	}
	if err := tee.Err(); err != nil {
		return nil, err
	}
	d.Events = tee.n
	rep, err := a.Finish()
	if err != nil {
		return nil, err
	}
	rep.NoteDropped(meta)
	d.Observed = Run{Name: "observed", Schedule: obs, Report: rep}
	if !simulate {
		return d, nil
	}
	obsMetrics, _, err := meas.Finish()
	if err != nil {
		return nil, err
	}
	d.Observed.Metrics = obsMetrics
	// CPU affinity as replay whatif takes it by default: the recorded
	// command line's taskset or numactl.
	topo := in.Topology
	if topo == nil {
		topo = meta.Topology
	}
	if _, err := whatif.ApplyAffinity(w, topo, nil, true); err != nil {
		return nil, err
	}

	config := func(p whatif.Policy) whatif.Config {
		cfg := whatif.DefaultConfig(p)
		cfg.Seed, cfg.Arrivals, cfg.Topology, cfg.Kernel = in.Seed, in.Arrivals, in.Topology, in.Kernel
		// The work model replay whatif uses by default (--work auto).
		cfg.SetAutoWork(w)
		return cfg
	}
	for i, pol := range append([]whatif.Policy{in.Baseline}, in.Policies...) {
		sched := NewSchedule()
		o := analysisOptions(nil, in.Domains, sched)
		o.PreferWaking = true // the replay emits sched_waking
		sa := analysis.New(o)
		res, err := whatif.Replay(w, config(pol), analyzerSink{sa, sched})
		if err != nil {
			return nil, fmt.Errorf("replay under %s: %w", pol.Name(), err)
		}
		srep, err := sa.Finish()
		if err != nil {
			return nil, err
		}
		r := Run{Name: pol.Name(), Schedule: sched, Report: srep, Metrics: res.Metrics}
		if i == 0 {
			r.Name = "baseline " + pol.Name()
			d.Baseline = &r
			d.Fidelity = whatif.Compare(pol.Name(), obsMetrics, res.Metrics, res.Stats)
			d.Fidelity.Affinity = w.AffinityNotes
		} else {
			d.Policies = append(d.Policies, r)
		}
	}
	if len(in.Policies) > 0 {
		cmp, err := whatif.ComparePolicies(w, whatif.PolicyCompareConfig{
			Base: config(in.Baseline), Baseline: in.Baseline, Policies: in.Policies, Runs: in.Runs, Seed: in.Seed})
		if err != nil {
			return nil, err
		}
		d.Comparison = cmp
	}
	return d, nil
}

// analyzerSink measures a replay's events as they are emitted.
type analyzerSink struct {
	a *analysis.Analyzer
	s *Schedule
}

func (s analyzerSink) Emit(e *timeline.Event) error {
	s.s.Add(e)
	return s.a.Add(e)
}

// fidelityMetrics are the rows of the fidelity table (whatif's keys).
var fidelityMetrics = []struct {
	key, unit string
	get       func(*whatif.Metrics) int64
}{
	{"wakeup_p50_ns", "ns", func(m *whatif.Metrics) int64 { return m.WakeupP50NS }},
	{"wakeup_p95_ns", "ns", func(m *whatif.Metrics) int64 { return m.WakeupP95NS }},
	{"wakeup_p99_ns", "ns", func(m *whatif.Metrics) int64 { return m.WakeupP99NS }},
	{"wakeup_p999_ns", "ns", func(m *whatif.Metrics) int64 { return m.WakeupP999NS }},
	{"wakeup_max_ns", "ns", func(m *whatif.Metrics) int64 { return m.WakeupMaxNS }},
	{"idle_ns", "ns", func(m *whatif.Metrics) int64 { return m.IdleNS }},
	{"idle_while_runnable_ns", "ns", func(m *whatif.Metrics) int64 { return m.IdleWhileRunnableNS }},
	{"migrations", "", func(m *whatif.Metrics) int64 { return m.Migrations }},
	{"involuntary_switches", "", func(m *whatif.Metrics) int64 { return m.InvoluntarySwitches }},
	{"makespan_ns", "ns", func(m *whatif.Metrics) int64 { return m.MakespanNS }},
}

// Runs lists the observed schedule, then the baseline and each policy.
func (d *Data) Runs() []Run {
	out := []Run{d.Observed}
	if d.Baseline != nil {
		out = append(out, *d.Baseline)
	}
	return append(out, d.Policies...)
}
