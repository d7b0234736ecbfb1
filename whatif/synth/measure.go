package synth

import (
	"fmt"
	"io"
	"sort"

	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

// Measure is a whatif.Sink computing what the benchmark itself reports
// from the simulated schedule: schbench's worker wakeup latency (the
// message thread's batch timestamp, taken once before it wakes a batch,
// to the worker running), ebizzy's records (CPU time of its threads
// before the deadline / RecordNS) and cpu-migrations, hackbench's time
// from the go message to the last child's exit.
type Measure struct {
	res      *Result
	measured map[int32]bool
	wakers   map[int32]bool
	stamp    map[int32]int64 // waker: its batch timestamp since it last ran in (-1 none)
	pending  map[int32]int64 // wakee: the stamp of its wakeup
	curr     []int32
	since    []int64

	Latencies  []int64 // ns
	RunNS      int64   // CPU time of the measured tasks in the window
	Migrations int64   // sched_migrate_task of measured tasks (schbench: in the window; others: the whole run, as perf stat counts)
	GoNS       int64   // first wakeup of a measured task by a task that is not measured (-1 none)
	LastExitNS int64   // last exit of a measured task (-1 none)
	lastNS     int64
}

// NewMeasure measures res's benchmark.
func NewMeasure(res *Result) *Measure {
	m := &Measure{res: res, measured: map[int32]bool{}, wakers: map[int32]bool{}, stamp: map[int32]int64{}, pending: map[int32]int64{}, GoNS: -1, LastExitNS: -1}
	for _, t := range res.Measured {
		m.measured[t] = true
	}
	for _, t := range res.Wakers {
		m.wakers[t] = true
	}
	return m
}

func (m *Measure) inWindow(t int64) bool {
	return t >= m.res.MeasureFromNS && (m.res.MeasureToNS == 0 || t < m.res.MeasureToNS)
}

// book adds the run time of cpu's current task up to now, clipped to the
// window.
func (m *Measure) book(cpu int, now int64) {
	if cpu >= len(m.curr) || !m.measured[m.curr[cpu]] {
		return
	}
	lo, hi := m.since[cpu], now
	if lo < m.res.MeasureFromNS {
		lo = m.res.MeasureFromNS
	}
	if m.res.MeasureToNS > 0 && hi > m.res.MeasureToNS {
		hi = m.res.MeasureToNS
	}
	if hi > lo {
		m.RunNS += hi - lo
	}
}

// Emit implements whatif.Sink.
func (m *Measure) Emit(e *timeline.Event) error {
	m.lastNS = e.Time
	cpu := int(e.Int(timeline.CPU))
	for cpu >= len(m.curr) {
		m.curr = append(m.curr, 0)
		m.since = append(m.since, 0)
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		m.book(cpu, e.Time)
		next := e.Int32(timeline.NextPID)
		m.curr[cpu], m.since[cpu] = next, e.Time
		if m.wakers[next] {
			m.stamp[next] = -1
		}
		if st, ok := m.pending[next]; ok {
			delete(m.pending, next)
			if m.inWindow(e.Time) {
				m.Latencies = append(m.Latencies, e.Time-st)
			}
		}
	case timeline.SchedWaking:
		waker, wakee := e.Int32(timeline.CommonPID), e.Int32(timeline.PID)
		if !m.measured[wakee] {
			break
		}
		if !m.measured[waker] && m.GoNS < 0 {
			m.GoNS = e.Time
		}
		if m.wakers[waker] {
			st, ok := m.stamp[waker]
			if !ok || st < 0 || m.res.StampEachWake {
				st = e.Time
				m.stamp[waker] = st
			}
			m.pending[wakee] = st
		}
	case timeline.SchedMigrateTask:
		// schbench's window is its stats'; ebizzy's and hackbench's
		// migrations are perf stat's, over the whole run.
		if m.measured[e.Int32(timeline.PID)] && (m.res.Name != "schbench" || m.inWindow(e.Time)) {
			m.Migrations++
		}
	case timeline.SchedProcessExit:
		if m.measured[e.Int32(timeline.PID)] && e.Time > m.LastExitNS {
			m.LastExitNS = e.Time
		}
	}
	return nil
}

// Finish books the running tasks' time up to the last event.
func (m *Measure) Finish() {
	for c := range m.curr {
		m.book(c, m.lastNS)
		m.since[c] = m.lastNS
	}
	sort.Slice(m.Latencies, func(i, j int) bool { return m.Latencies[i] < m.Latencies[j] })
}

// Percentile of the wakeup latencies (ns; -1 without samples), nearest
// rank.
func (m *Measure) Percentile(p float64) int64 {
	n := len(m.Latencies)
	if n == 0 {
		return -1
	}
	i := int(p/100*float64(n)+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= n {
		i = n - 1
	}
	return m.Latencies[i]
}

// Records is ebizzy's record count: the measured threads' CPU time in the
// window over the time of one record.
func (m *Measure) Records() int64 {
	if m.res.RecordNS <= 0 {
		return 0
	}
	return m.RunNS / m.res.RecordNS
}

// Report is what a run of the benchmark prints, from the simulated
// schedule.
type Report struct {
	Benchmark string `json:"benchmark"`
	Command   string `json:"command"`
	Policy    string `json:"policy"`
	// schbench
	Samples int64            `json:"samples,omitempty"`
	Pct     map[string]int64 `json:"wakeup_latency_us,omitempty"`
	// ebizzy
	Records       int64   `json:"records,omitempty"`
	RecordsPerSec float64 `json:"records_per_sec,omitempty"`
	// hackbench
	TimeS float64 `json:"time_s,omitempty"`

	Migrations       int64 `json:"cpu_migrations"`
	AllMigrations    int64 `json:"all_migrations"`
	EdgesPending     int64 `json:"wakeups_pending"`
	InvoluntarySwaps int64 `json:"involuntary_switches"`
}

// Percentiles schbench prints.
var Percentiles = []float64{50, 75, 90, 95, 99, 99.5, 99.9}

func pctName(p float64) string { return fmt.Sprintf("p%g", p) }

// Run replays res's workload under cfg and returns the benchmark's
// report.
func Run(res *Result, cfg whatif.Config) (*Report, *whatif.Result, error) {
	rep, out, _, err := run(res, cfg)
	return rep, out, err
}

// run is Run that also returns the measure (its sorted latencies).
func run(res *Result, cfg whatif.Config) (*Report, *whatif.Result, *Measure, error) {
	m := NewMeasure(res)
	out, err := whatif.Replay(res.Workload, cfg, m)
	if err != nil {
		return nil, nil, nil, err
	}
	m.Finish()
	rep := &Report{Benchmark: res.Name, Command: res.Command, Policy: cfg.Policy.Name(), Migrations: m.Migrations}
	if out.Stats != nil {
		rep.EdgesPending = out.Stats.EdgesPending
	}
	if out.Metrics != nil {
		rep.AllMigrations = out.Metrics.Migrations
		rep.InvoluntarySwaps = out.Metrics.InvoluntarySwitches
	}
	switch res.Name {
	case "schbench":
		rep.Samples = int64(len(m.Latencies))
		rep.Pct = map[string]int64{}
		for _, p := range Percentiles {
			rep.Pct[pctName(p)] = m.Percentile(p) / 1000
		}
		if n := len(m.Latencies); n > 0 {
			rep.Pct["min"] = m.Latencies[0] / 1000
			rep.Pct["max"] = m.Latencies[n-1] / 1000
		}
	case "ebizzy":
		rep.Records = m.Records()
		if d := res.MeasureToNS - res.MeasureFromNS; d > 0 {
			rep.RecordsPerSec = float64(rep.Records) / (float64(d) / 1e9)
		}
	case "hackbench":
		if m.GoNS >= 0 && m.LastExitNS >= m.GoNS {
			rep.TimeS = float64(m.LastExitNS-m.GoNS) / 1e9
		}
	}
	return rep, out, m, nil
}

// WriteText prints the report as the benchmark would, roughly.
func (r *Report) WriteText(w io.Writer) error {
	var err error
	p := func(f string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, f, a...)
		}
	}
	p("%s under %s\n", r.Command, r.Policy)
	switch r.Benchmark {
	case "schbench":
		p("Wakeup Latencies percentiles (usec), %d samples\n", r.Samples)
		for _, q := range Percentiles {
			star := " "
			if q == 99 {
				star = "*"
			}
			p("\t%s%gth: %d\n", star, q, r.Pct[pctName(q)])
		}
		p("\tmin=%d, max=%d\n", r.Pct["min"], r.Pct["max"])
	case "ebizzy":
		p("%d records/s (%d records)\n", int64(r.RecordsPerSec), r.Records)
	case "hackbench":
		p("Time: %.3f\n", r.TimeS)
	}
	p("cpu-migrations %d (all tasks %d), involuntary switches %d, pending wakeups %d\n", r.Migrations, r.AllMigrations, r.InvoluntarySwaps, r.EdgesPending)
	return err
}
