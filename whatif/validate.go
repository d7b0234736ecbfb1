package whatif

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// Metrics are what fidelity compares; the JSON keys are the issue's.
type Metrics struct {
	WakeupP50NS         int64 `json:"wakeup_p50_ns"`
	WakeupP95NS         int64 `json:"wakeup_p95_ns"`
	WakeupP99NS         int64 `json:"wakeup_p99_ns"`
	WakeupP999NS        int64 `json:"wakeup_p999_ns"`
	WakeupMaxNS         int64 `json:"wakeup_max_ns"`
	IdleNS              int64 `json:"idle_ns"`
	IdleWhileRunnableNS int64 `json:"idle_while_runnable_ns"`
	Migrations          int64 `json:"migrations"`
	InvoluntarySwitches int64 `json:"involuntary_switches"`
	MakespanNS          int64 `json:"makespan_ns"`
	// IdleTailNS: the stretch after the last scheduling event, every CPU
	// idle, left out of the window (analysis.Options.TrimIdleTail).
	IdleTailNS int64 `json:"idle_tail_ns,omitempty"`
	// SilentCPUs: the machine's CPUs with no scheduling event at all,
	// counted idle throughout (analysis.Options.SilentCPUsIdle).
	SilentCPUs int `json:"silent_cpus,omitempty"`
	// WakeupsLeftOut: the replay's wakeups of arrivals whose waking the
	// trace did not record (Activation.Untraced), left out of its
	// measure as the trace's has none; the output has them.
	WakeupsLeftOut int64 `json:"wakeups_left_out,omitempty"`
	// RunsTimedByRuntime: runs whose switch-in the trace did not record,
	// on a CPU it showed idle, started at their task's own
	// sched_stat_runtime (analysis.Report.RunsTimedByRuntime).
	RunsTimedByRuntime int64 `json:"runs_timed_by_runtime,omitempty"`
	// RepeatSwitchIns: switch-ins of a task already switched in since its
	// wakeup, no switch-out recorded between; its wakeup is measured to
	// the first (analysis.Options.FirstSwitchIn), not to these as perf
	// sched timehist does.
	RepeatSwitchIns int64 `json:"repeat_switch_ins,omitempty"`
	CPUTimeNS       int64 `json:"cpu_time_ns"`
	// Per level (not part of the flat METRICS; reported beside).
	IdleWhileRunnableByLevel map[string]int64 `json:"idle_while_runnable_by_level,omitempty"`
	MigrationsByLevel        map[string]int64 `json:"migrations_by_level,omitempty"`
	// MigrationsAtWakeup: the migrations that moved a task its CPU had
	// just woken (analysis.Report.MigrationsAtWakeup): select_task_rq's,
	// as against the balancer's. FIDELITY.md round 83 found a placement
	// error by them. Nil when the schedule has no sched_migrate_task,
	// which is what shows them (a replay's output always has).
	MigrationsAtWakeup *int64 `json:"migrations_at_wakeup,omitempty"`
	WakeupCount        int64  `json:"wakeup_count"`
	// NewidleChances, NewidlePulls: a CPU left by a blocking task with a
	// task waiting on another busy CPU, and how often it pulled one
	// (pullrate.go).
	NewidleChances int `json:"newidle_chances"`
	NewidlePulls   int `json:"newidle_pulls"`
	// WakeupByPlace: the wakeup latencies split by where the wakee ran
	// (PlaceNames: a CPU idle at the wakeup, the waker's busy CPU,
	// another busy CPU, each busy one split by whether the wakee got it
	// by preempting a runnable task or after a block, and another's
	// preempting ones at the CPU's first switch after the wakeup;
	// wakeplace.go).
	WakeupByPlace map[string]PlaceStats `json:"wakeup_by_place,omitempty"`
	// WakeChoices: where the wakeup path sent the sleeping wakees,
	// against their previous CPU (analysis.Report.WakeChoices); nil
	// without sched_waking.
	WakeChoices *analysis.WakeChoices `json:"wake_choices,omitempty"`

	latencies []int64
	// worst: the longest wakeups with their context, when the measurer
	// was asked for them (Worst).
	worst []analysis.WorstWakeup
}

// Worst returns the longest wakeups the metrics kept (nil unless asked
// for: ExtractAndMeasureWorst, Config.Worst).
func (m *Metrics) Worst() []analysis.WorstWakeup { return m.worst }

// metricKeys are the keys of rel_error, in report order.
var metricKeys = []string{"wakeup_p50_ns", "wakeup_p95_ns", "wakeup_p99_ns", "wakeup_p999_ns", "wakeup_max_ns",
	"idle_ns", "idle_while_runnable_ns", "migrations", "involuntary_switches", "makespan_ns", "cpu_time_ns"}

func (m *Metrics) value(k string) int64 {
	switch k {
	case "wakeup_p50_ns":
		return m.WakeupP50NS
	case "wakeup_p95_ns":
		return m.WakeupP95NS
	case "wakeup_p99_ns":
		return m.WakeupP99NS
	case "wakeup_p999_ns":
		return m.WakeupP999NS
	case "wakeup_max_ns":
		return m.WakeupMaxNS
	case "idle_ns":
		return m.IdleNS
	case "idle_while_runnable_ns":
		return m.IdleWhileRunnableNS
	case "migrations":
		return m.Migrations
	case "involuntary_switches":
		return m.InvoluntarySwitches
	case "makespan_ns":
		return m.MakespanNS
	case "cpu_time_ns":
		return m.CPUTimeNS
	}
	// Per-level keys: "idle_while_runnable_ns.MC", "migrations.NUMA".
	if lvl, ok := strings.CutPrefix(k, "idle_while_runnable_ns."); ok {
		return m.IdleWhileRunnableByLevel[lvl]
	}
	if lvl, ok := strings.CutPrefix(k, "migrations."); ok {
		return m.MigrationsByLevel[lvl]
	}
	return 0
}

// Measurer runs the analysis on a stream of events (observed or
// simulated); its wakeup latencies also give the KS distance.
type Measurer struct {
	a  *analysis.Analyzer
	ni *newidleTally
	pl *placeTally
	// skipWaking: the next sched_waking is an untraced arrival's
	// (Activation.Untraced), left out as the trace has none; leftOut
	// counts them.
	skipWaking bool
	leftOut    int64
	// worst: the longest wakeups asked for (analysis.Options.Worst).
	worst int
}

// NewMeasurer prepares the analysis of a simulated schedule with the
// machine's domain levels. The simulator writes sched_waking, so wakeup
// latency starts there, as perf's does on a trace that has it.
func NewMeasurer(d *model.Domains, ncpu int) *Measurer {
	return newMeasurer(d, ncpu, true, 0)
}

// NewTraceMeasurer prepares the analysis of a recorded trace, whose
// metadata tells whether it records sched_waking: a trace of
// sched_wakeup alone times its wakeups from sched_wakeup (as perf sched
// timehist does), where NewMeasurer's analysis would see none. The
// analysis turns to sched_waking at the first one it sees either way.
func NewTraceMeasurer(d *model.Domains, ncpu int, meta *timeline.Meta) *Measurer {
	return newTraceMeasurer(d, ncpu, meta, 0)
}

// newTraceMeasurer is NewTraceMeasurer keeping the worst longest wakeups.
func newTraceMeasurer(d *model.Domains, ncpu int, meta *timeline.Meta, worst int) *Measurer {
	return newMeasurer(d, ncpu, meta != nil && meta.Source.Records("sched_waking"), worst)
}

// worst: keep the longest wakeups with their context (Metrics.Worst).
func newMeasurer(d *model.Domains, ncpu int, preferWaking bool, worst int) *Measurer {
	m := &Measurer{ni: newNewidleTally(), pl: newPlaceTally(), worst: worst}
	m.pl.waking = preferWaking
	opts := analysis.Options{NumCPUs: ncpu, PreferWaking: preferWaking, TrimIdleTail: true, SilentCPUsIdle: true, FirstSwitchIn: true, Worst: worst}
	if d != nil {
		opts.Levels = analysis.FromDomains(d)
	}
	m.a = analysis.New(opts)
	return m
}

// Emit feeds one event (Measurer is a Sink).
func (m *Measurer) Emit(e *timeline.Event) error {
	if m.skipWaking && e.Kind == timeline.SchedWaking {
		m.skipWaking = false
		m.leftOut++
		return nil
	}
	observed := e.Time != 0 || e.Kind == timeline.Lost
	if observed {
		m.ni.observe(e)
		m.pl.before(e)
	}
	if err := m.a.Add(e); err != nil {
		return err
	}
	if observed {
		m.pl.after(e)
	}
	return nil
}

// Finish computes the metrics.
func (m *Measurer) Finish() (*Metrics, *analysis.Report, error) {
	rep, err := m.a.Finish()
	if err != nil {
		return nil, nil, err
	}
	mt := &Metrics{
		WakeupP50NS: rep.WakeupLatency.P50NS, WakeupP95NS: rep.WakeupLatency.P95NS, WakeupP99NS: rep.WakeupLatency.P99NS,
		WakeupP999NS: rep.WakeupLatency.P999NS, WakeupMaxNS: rep.WakeupLatency.MaxNS, WakeupCount: rep.WakeupLatency.Count,
		IdleWhileRunnableNS: rep.IdleWhileRunnableTotal, Migrations: rep.MigrationsTotal,
		InvoluntarySwitches: rep.InvoluntarySwitches, MakespanNS: rep.EndNS - rep.StartNS, IdleTailNS: rep.IdleTailNS, SilentCPUs: rep.SilentCPUs,
		RunsTimedByRuntime: rep.RunsTimedByRuntime, WakeupsLeftOut: m.leftOut, RepeatSwitchIns: rep.WakeupLatency.RepeatSwitchIns,
		NewidleChances: m.ni.Chances, NewidlePulls: m.ni.Pulls,
		WakeupByPlace: m.pl.stats(), WakeChoices: rep.WakeChoices,
	}
	if rep.CountsMigrationsAtWakeup() {
		v := rep.MigrationsAtWakeupTotal
		mt.MigrationsAtWakeup = &v
	}
	for _, c := range rep.CPUs {
		mt.IdleNS += c.IdleNS
		mt.CPUTimeNS += c.BusyNS
	}
	if len(rep.Levels) > 0 {
		mt.IdleWhileRunnableByLevel = map[string]int64{}
		mt.MigrationsByLevel = map[string]int64{}
		for i, l := range rep.Levels {
			mt.IdleWhileRunnableByLevel[l] = rep.IdleWhileRunnable[i]
			mt.MigrationsByLevel[l] = rep.Migrations[i]
		}
	}
	mt.latencies = rep.WakeupLatencies()
	mt.worst = rep.Worst
	if m.worst > 0 && mt.worst == nil {
		// Asked for, none to list: an empty list, not an absent one.
		mt.worst = []analysis.WorstWakeup{}
	}
	return mt, rep, nil
}

// KS is the two-sample Kolmogorov–Smirnov distance between sorted samples.
func KS(a, b []int64) float64 {
	if len(a) == 0 || len(b) == 0 {
		if len(a) == len(b) {
			return 0
		}
		return 1
	}
	i, j := 0, 0
	d := 0.0
	for i < len(a) && j < len(b) {
		x := a[i]
		if b[j] < x {
			x = b[j]
		}
		for i < len(a) && a[i] == x {
			i++
		}
		for j < len(b) && b[j] == x {
			j++
		}
		if v := math.Abs(float64(i)/float64(len(a)) - float64(j)/float64(len(b))); v > d {
			d = v
		}
	}
	return d
}

// Fidelity is the comparison `replay whatif --validate` reports.
type Fidelity struct {
	Policy    string             `json:"policy"`
	Observed  *Metrics           `json:"observed"`
	Simulated *Metrics           `json:"simulated"`
	RelError  map[string]float64 `json:"rel_error"`
	KS        float64            `json:"ks"`
	// Goals are the targets and whether each holds.
	Goals []Goal `json:"goals"`
	Stats *Stats `json:"replay_stats"`
	// Work is how tasks' work was bounded: "fixed" or "until-exit", with
	// the evidence when --work auto chose it.
	Work string `json:"work,omitempty"`
	// LostSwitchIns is Workload.LostSwitchIns: switches the trace did
	// not record, inferred by extraction. The observed metrics time such
	// a run's start from its task's own sched_stat_runtime when the CPU
	// looked idle (Metrics.RunsTimedByRuntime), else from the CPU's last
	// switch, so a large count makes them approximate.
	LostSwitchIns int `json:"lost_switch_ins,omitempty"`
	// LostSwitchOuts is Workload.LostSwitchOuts: switches to idle the
	// trace did not record, inferred by extraction, each ending its
	// task's run at its last record. The observed metrics, as perf sched
	// timehist does, book those stretches to idle.
	LostSwitchOuts int `json:"lost_switch_outs,omitempty"`
	// DisplacedWoken is Workload.DisplacedWoken: tasks a lost switch-in
	// left runnable that a waking then showed had blocked.
	DisplacedWoken int `json:"displaced_woken,omitempty"`
	// RacedWakeups counts the workload's Edge.Raced: wakings that came
	// while the wakee was still on its CPU, blocking, and that extraction
	// took as what woke it (no waking followed before its switch-in).
	RacedWakeups int `json:"raced_wakeups,omitempty"`
	// EnqueueAfterStall counts the workload's Edge.EnqueueAfterStall:
	// wakeups queued only after a host stall of their waker inside
	// try_to_wake_up.
	EnqueueAfterStall int `json:"enqueue_after_stall,omitempty"`
	// ChargedWakeups counts the workload's Edge.Charged: wakings the
	// trace shows right after an update_curr of their waker that no path
	// the model has explains, which the replay makes there too.
	ChargedWakeups int `json:"charged_wakeups,omitempty"`
	// SyncWakeups, Wakeups: the workload's wake edges and those with
	// Edge.Sync, WF_SYNC inferred (the trace has no wake flags), which
	// the replay's wake_affine takes as sync wakeups.
	SyncWakeups int `json:"sync_wakeups,omitempty"`
	Wakeups     int `json:"-"`
	// NoPreemptWakeups, NoPreemptNS: the wake edges with
	// Edge.NoPreemptNS (the trace's TIF_NEED_RESCHED shows their waker
	// ran on with the reschedule they set pending) and those stretches'
	// total demand, inside which the replay preempts no waker.
	NoPreemptWakeups int   `json:"no_preempt_wakeups,omitempty"`
	NoPreemptNS      int64 `json:"no_preempt_ns,omitempty"`
	// BalancePulls: the periodic balances the trace shows moving tasks
	// (Workload.BalancePulls), whose phase the replay takes.
	BalancePulls int `json:"balance_pulls,omitempty"`
	// IRQCurrent: the interrupt-context wakings the trace shows
	// interrupting a task (Workload.IRQCurrent), whose wakee flips the
	// replay counts on that task.
	IRQCurrent int `json:"irq_current,omitempty"`
	// IRQElsewhere: the arrivals whose interrupt the trace shows on
	// another CPU than their wakee's (Activation.IRQCPUPlus1), whose IPI
	// the replay sends from there (Config.IRQIPI).
	IRQElsewhere int `json:"irq_elsewhere,omitempty"`
	// HostStalls, HostStallNS: how many host stalls the trace shows in
	// the tasks' demand and their total (Workload.HostStalls): a guest's
	// vCPUs descheduled by its host, which the replay keeps in the work.
	HostStalls  int   `json:"host_stalls,omitempty"`
	HostStallNS int64 `json:"host_stall_ns,omitempty"`
	// IRQWakeStall: the stalls the trace's real-time interrupt wakeups met
	// before their switch-in (StallModel.IRQWakeStall, IRQWakeStallsNS),
	// which the replay's interrupt wakeup preemptions meet too.
	IRQWakeStall *IRQWakeStallSummary `json:"irq_wake_stall,omitempty"`
	// SwitchCharge: the medians of the gaps the kernel charged to the next
	// task at a switch (Workload.SwitchCharge*), when the replay moves
	// them (Config.SwitchCharge with the machine's noise).
	SwitchCharge *SwitchChargeSummary `json:"switch_charge,omitempty"`
	// Spread, with other recordings of the same workload (--spread): the
	// kernel's own run-to-run spread beside the replay's error.
	Spread *Spread `json:"spread,omitempty"`
	// DemandNS is the workload's total demand, for HostStallNS's share.
	DemandNS int64 `json:"demand_ns,omitempty"`
	// Affinity: where the tasks' CPU masks came from (the recorded
	// command line, --affinity) and the activations the trace ran outside
	// them (Workload.AffinityNotes).
	Affinity []AffinityNote `json:"affinity,omitempty"`
	// GoalBands place each latency goal's band in both distributions
	// (goalband.go).
	GoalBands []GoalBand `json:"goal_bands,omitempty"`
	// MergedAsFast: the replay's latency percentiles had the wakeups it
	// lacks each been the fastest (mergedAsFast); nil when it lacks none
	// or merged no wake edge.
	MergedAsFast *MergedAsFast `json:"merged_as_fast,omitempty"`
	// Worst are both schedules' longest wakeups with their context, when
	// asked for (`--validate --worst N`): what the tail each percentile
	// summarises is made of, side by side.
	Worst *WorstWakeups `json:"worst,omitempty"`
}

// WorstWakeups are the trace's and the replay's longest wakeups
// (analysis.Options.Worst).
type WorstWakeups struct {
	Observed  []analysis.WorstWakeup `json:"observed"`
	Simulated []analysis.WorstWakeup `json:"simulated"`
}

// IdleGoalMetric is the idle goal's Goal.Metric: the idle-time
// difference as a share of the observed idle plus CPU time, judged on
// the idle_ns row.
const IdleGoalMetric = "idle_ns/total_cpu_time"

// Goal is one fidelity target.
type Goal struct {
	Metric string  `json:"metric"`
	Limit  float64 `json:"limit"`
	Value  float64 `json:"value"`
	Met    bool    `json:"met"`
	// NotCompared: a wakeup-latency goal on a trace that records no
	// wakeup (sched_switch alone). Both sides' percentiles are zeros, so
	// the goal says nothing about the replay: neither met nor missed.
	NotCompared bool `json:"not_compared,omitempty"`
}

// Compare builds the fidelity report. rel_error is (sim − obs) / obs,
// rounded to 4 decimals; 0 when both are 0 and 1 when only the observed
// value is 0. Goals are the targets: |rel_error| of p50 and p95
// within 0.15, of p99 within 0.25, and the idle-time difference within 5 %
// of the observed total CPU time (idle + busy).
func Compare(policy string, obs, sim *Metrics, st *Stats) *Fidelity {
	f := &Fidelity{Policy: policy, Observed: obs, Simulated: sim, RelError: map[string]float64{}, Stats: st}
	if obs.worst != nil || sim.worst != nil {
		f.Worst = &WorstWakeups{Observed: obs.worst, Simulated: sim.worst}
		for _, w := range []*[]analysis.WorstWakeup{&f.Worst.Observed, &f.Worst.Simulated} {
			if *w == nil {
				*w = []analysis.WorstWakeup{}
			}
		}
	}
	for _, k := range metricKeys {
		o, s := obs.value(k), sim.value(k)
		switch {
		case o == 0 && s == 0:
			f.RelError[k] = 0
		case o == 0:
			f.RelError[k] = 1
		default:
			f.RelError[k] = round4(float64(s-o) / float64(o))
		}
	}
	f.KS = round4(KS(obs.latencies, sim.latencies))
	total := float64(obs.IdleNS + obs.CPUTimeNS)
	idleErr := 0.0
	if total > 0 {
		idleErr = math.Abs(float64(sim.IdleNS-obs.IdleNS)) / total
	}
	add := func(m string, lim, v float64, compared bool) {
		f.Goals = append(f.Goals, Goal{Metric: m, Limit: lim, Value: round4(v), Met: compared && v <= lim, NotCompared: !compared})
	}
	for _, g := range latencyGoals {
		add(g.metric, float64(g.tolPct)/100, math.Abs(f.RelError[g.metric]), obs.WakeupCount > 0)
	}
	add(IdleGoalMetric, 0.05, idleErr, true)
	f.GoalBands = goalBands(obs, sim)
	f.MergedAsFast = mergedAsFast(obs, sim, st)
	return f
}

// MergedAsFast is what the replay's wakeup-latency percentiles would be
// had each wakeup it lacks been the fastest: the trace's count less the
// replay's, at most the wake edges the replay merged into a run
// (Stats.EdgesPending: a wakee not yet blocked, so no wakeup), counted as
// waits of 0. A bound, not a measure: the trace's own waits for those
// wakeups are not known one by one. Where it brings a missed percentile
// close, the miss is the merges' more than the waits': on guest-D's
// stress-ng the switch pairs' merged fast wakeups made most of the p95's
// overshoot (FIDELITY.md round 96).
type MergedAsFast struct {
	Missing int64 `json:"missing"`
	P50NS   int64 `json:"wakeup_p50_ns"`
	P95NS   int64 `json:"wakeup_p95_ns"`
	P99NS   int64 `json:"wakeup_p99_ns"`
	// RelError is each percentile's (sim − obs) / obs, as Fidelity's.
	RelError map[string]float64 `json:"rel_error"`
}

// mergedAsFast computes MergedAsFast from the two schedules' sorted
// latencies (nil when the replay lacks no wakeup or merged none).
func mergedAsFast(obs, sim *Metrics, st *Stats) *MergedAsFast {
	if st == nil || st.EdgesPending == 0 || obs.WakeupCount <= sim.WakeupCount || len(sim.latencies) == 0 {
		return nil
	}
	m := min(obs.WakeupCount-sim.WakeupCount, st.EdgesPending)
	x := sim.latencies
	// The nearest-rank percentile (analysis.nearestRank) of x with m
	// zeros before it.
	pct := func(pm int64) int64 {
		n := int64(len(x)) + m
		rank := max((pm*n+999)/1000, 1)
		if rank <= m {
			return 0
		}
		return x[rank-m-1]
	}
	mf := &MergedAsFast{Missing: m, P50NS: pct(500), P95NS: pct(950), P99NS: pct(990), RelError: map[string]float64{}}
	for _, c := range []struct {
		metric string
		v      int64
	}{{"wakeup_p50_ns", mf.P50NS}, {"wakeup_p95_ns", mf.P95NS}, {"wakeup_p99_ns", mf.P99NS}} {
		if o := obs.value(c.metric); o != 0 {
			mf.RelError[c.metric] = round4(float64(c.v-o) / float64(o))
		}
	}
	return mf
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// pullShare is "pulls/chances (share)" of a schedule's newidle tally.
func pullShare(m *Metrics) string {
	if m.NewidleChances == 0 {
		return "0/0"
	}
	return fmt.Sprintf("%d/%d (%.0f%%)", m.NewidlePulls, m.NewidleChances, 100*float64(m.NewidlePulls)/float64(m.NewidleChances))
}

// remotePreemptNote says when, on a trace with host stalls (a guest), the
// trace's wakeups that preempted another busy CPU's task at its first
// switch after the wakeup (the IPI's own preemption) waited much longer
// than the replay's: the IPI reached a vCPU the host had descheduled
// more often than the replay's host model has it (the running task's own
// stalls, and with Config.BusyHostWait a wait for a host core outside
// them; FIDELITY.md rounds 32 and 84). Not the whole preempting class:
// on the two-vCPU guests most of it waited through other tasks' turns
// (round 147). Both sides need minSamples such wakeups, and the trace's
// median 4 times and 1 ms above the replay's.
func (f *Fidelity) remotePreemptNote() string {
	if f.HostStalls == 0 {
		return ""
	}
	k := PlaceNames[placeOtherBusyFirst]
	o, s := f.Observed.WakeupByPlace[k], f.Simulated.WakeupByPlace[k]
	if o.Count < minSamples || s.Count < minSamples || o.P50NS < 4*s.P50NS || o.P50NS-s.P50NS < 1e6 {
		return ""
	}
	return fmt.Sprintf("remote wakeup preemptions at the CPU's first switch: the trace's waited %.3f ms (p50 of %d), the replay's %.3f ms (of %d): the host ran the preempted vCPU late more often than the replay's host model has it (FIDELITY.md rounds 32 and 84)",
		float64(o.P50NS)/1e6, o.Count, float64(s.P50NS)/1e6, s.Count)
}

// countOrDash is a count the schedule may not show: "-" when it cannot.
func countOrDash(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

// placeCell is "count p50/p95 ms" of one wakeup place.
func placeCell(p PlaceStats) string {
	return fmt.Sprintf("%d %.3f/%.3f ms", p.Count, float64(p.P50NS)/1e6, float64(p.P95NS)/1e6)
}

// WriteTable prints the fidelity report for people.
func (f *Fidelity) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fidelity of policy %s (simulated vs observed)\n", f.Policy)
	if f.Work != "" {
		fmt.Fprintf(&b, "work: %s\n", f.Work)
	}
	for _, n := range f.Affinity {
		fmt.Fprintf(&b, "trace: %s\n", n)
	}
	if f.LostSwitchIns > 0 {
		timed := int64(0)
		if f.Observed != nil {
			timed = f.Observed.RunsTimedByRuntime
		}
		fmt.Fprintf(&b, "trace: %d switches to a task not recorded (inferred from its later events); the observed metrics start %d runs on a CPU the trace showed idle at their task's own sched_stat_runtime there (its time less its runtime), the others at the CPU's last recorded switch\n", f.LostSwitchIns, timed)
		if f.DisplacedWoken > 0 {
			fmt.Fprintf(&b, "trace: %d tasks such a switch took off their CPU were woken before they ran again, so had blocked there, not been preempted: replayed as sleeps\n", f.DisplacedWoken)
		}
	}
	if f.LostSwitchOuts > 0 {
		fmt.Fprintf(&b, "trace: %d switches to idle not recorded (the CPU showed its idle task while a task was believed running there); each such run ends at its task's last record there, and the observed metrics, as perf sched timehist does, book the rest to idle\n", f.LostSwitchOuts)
	}
	if f.Observed != nil && f.Observed.RepeatSwitchIns > 0 {
		fmt.Fprintf(&b, "trace: %d switch-ins of a task already switched in since its wakeup, its switch-out not recorded (lost, or its CPU's buffer closed first at the recording's end): each such wakeup is measured to the task's first switch-in (perf sched timehist measures it to the later one)\n", f.Observed.RepeatSwitchIns)
	}
	if f.Simulated != nil && f.Simulated.WakeupsLeftOut > 0 {
		fmt.Fprintf(&b, "replay: %d wakeups of tasks the trace shows neither woken nor switched in left out of the simulated metrics, as the trace has no latency for them (the replay's output has them)\n", f.Simulated.WakeupsLeftOut)
	}
	if f.ChargedWakeups > 0 {
		fmt.Fprintf(&b, "trace: %d wakeups came at most %d µs after their waker's own update_curr that no modelled path explains (the exit path's before it wakes the parent, a CPU-time clock's): the replay updates the waker there too\n", f.ChargedWakeups, chargedWindowNS/1000)
	}
	if f.RacedWakeups > 0 {
		fmt.Fprintf(&b, "trace: %d wakeups came while their wakee was still on its CPU, blocking (switched out asleep right after, switched in with no later waking): replayed as what woke it, held until it blocks\n", f.RacedWakeups)
	}
	if f.EnqueueAfterStall > 0 {
		fmt.Fprintf(&b, "trace: %d wakeups were queued only after a host stall of their waker inside try_to_wake_up (the stall between the waking and the enqueue's first record): queued after that stall in the replay too where it sends them to another CPU than the waker's, their latency counting from the waking (--set wake_stall=off: at once)\n", f.EnqueueAfterStall)
	}
	if f.SyncWakeups > 0 {
		fmt.Fprintf(&b, "trace: %d of %d wake edges taken as WF_SYNC (inferred: the waker left its CPU within 50 µs, or the wakee was pulled onto its waker's CPU as only WF_SYNC does, or the two woke only each other, mostly leaving at once)\n", f.SyncWakeups, f.Wakeups)
	}
	if f.NoPreemptWakeups > 0 {
		fmt.Fprintf(&b, "trace: %d wakeups left their waker running on with the reschedule they set pending (its TIF_NEED_RESCHED flag shown set until it switched out: no preemption point, as in a wake-up loop under a wait-queue lock or the rest of a system call), %.1f ms in all: the replay preempts no waker inside them\n", f.NoPreemptWakeups, float64(f.NoPreemptNS)/1e6)
	}
	if f.BalancePulls > 0 {
		fmt.Fprintf(&b, "trace: %d periodic balances moved tasks (sched_migrate_task in their tick's softirq): those between the two CPUs of a domain set the replay balancer's phase (--set balance_phase=own: not)\n", f.BalancePulls)
	}
	if f.IRQCurrent > 0 {
		fmt.Fprintf(&b, "trace: %d interrupt wakeups came while a task ran on their CPU: record_wakee counts them in that task's wakee_flips, which its children inherit (--set irq_flip=own: in those of the replay's task where they fire)\n", f.IRQCurrent)
	}
	if f.IRQElsewhere > 0 {
		fmt.Fprintf(&b, "trace: %d interrupt wakeups ran on another CPU than their wakee's (RCU's grace-period kthread, woken from the softirq of the CPU that ended the grace period): by default the replay places them as on the wakee's own CPU and sends their IPI from the trace's, which an idle vCPU on a contended host waits for (--set irq_ipi=off: from the wakee's own; irq_cpu=trace: placed from the trace's CPU too)\n", f.IRQElsewhere)
	}
	if f.HostStalls > 0 && f.DemandNS > 0 {
		fmt.Fprintf(&b, "trace: %d host stalls of busy vCPUs, %.1f ms, %.0f%% of the tasks' demand (kept where they were in each task's work)\n",
			f.HostStalls, float64(f.HostStallNS)/1e6, 100*float64(f.HostStallNS)/float64(f.DemandNS))
	}
	if q := f.IRQWakeStall; q != nil {
		if q.Stalls > 0 {
			fmt.Fprintf(&b, "trace: %.1f%% of the real-time wakeups an interrupt raised on the busy CPU they woke met a stall before their switch-in (%d stalls, median %.3f ms; all the trace's stalls: median %.3f ms): the replay's interrupt wakeup preemptions meet one as often, by default one of those %d (--set irq_stall=all: one of all)\n",
				100*q.Share, q.Stalls, float64(q.P50NS)/1e6, float64(q.AllP50NS)/1e6, q.Stalls)
		} else {
			fmt.Fprintf(&b, "trace: %.1f%% of the real-time wakeups an interrupt raised on the busy CPU they woke met a stall before their switch-in (fewer than %d: too few to draw from): the replay's interrupt wakeup preemptions meet one as often, one of all the trace's stalls (median %.3f ms)\n",
				100*q.Share, minIRQStalls, float64(q.AllP50NS)/1e6)
		}
	}
	for _, s := range []struct {
		name string
		m    *Metrics
	}{{"trace", f.Observed}, {"replay", f.Simulated}} {
		if s.m != nil && s.m.IdleTailNS > 0 {
			fmt.Fprintf(&b, "%s: its last %.3f ms hold no scheduling event, every CPU idle: left out of its window (idle time, makespan)\n", s.name, float64(s.m.IdleTailNS)/1e6)
		}
		if s.m != nil && s.m.SilentCPUs > 0 {
			fmt.Fprintf(&b, "%s: %d of the machine's CPUs have no scheduling event at all: counted idle throughout\n", s.name, s.m.SilentCPUs)
		}
	}
	if f.Observed != nil && f.Observed.WakeupCount == 0 {
		// A trace of sched_switch alone: its latency percentiles are
		// zeros, and the latency goals compare nothing.
		fmt.Fprintf(&b, "trace: no wakeup followed by its switch-in (no sched_waking or sched_wakeup recorded?): the wakeup-latency goals compare nothing\n")
	}
	if c := f.SwitchCharge; c != nil && c.Switches > 0 {
		fmt.Fprintf(&b, "trace: at %d switches the kernel charged the next task the run from the leaving task's last update (median %.0f µs after a preemption, %.0f µs after a block a task's wakeup ends, %.0f µs after one an interrupt's does): replayed so (--set switch_charge=off: not)\n",
			c.Switches, float64(c.PreemptP50NS)/1e3, float64(c.BlockP50NS)/1e3, float64(c.BlockIRQP50NS)/1e3)
	}
	if c := f.SwitchCharge; c != nil && c.LongBlocks > 0 {
		fmt.Fprintf(&b, "trace: at %d blocks that run was a quarter tick or more (%.1f ms in all: a host stall, or a run on with the reschedule pending, between the task's last update and its switch), which the kernel charged to the task switched in: replayed so at those activations' ends (--set switch_charge=pools: drawn from the shorter ones)\n",
			c.LongBlocks, float64(c.LongNS)/1e6)
	}
	fmt.Fprintf(&b, "%-24s %16s %16s %10s\n", "metric", "observed", "simulated", "rel_error")
	for _, k := range metricKeys {
		fmt.Fprintf(&b, "%-24s %16d %16d %+10.4f\n", k, f.Observed.value(k), f.Simulated.value(k), f.RelError[k])
	}
	fmt.Fprintf(&b, "%-24s %16d %16d\n", "wakeups", f.Observed.WakeupCount, f.Simulated.WakeupCount)
	fmt.Fprintf(&b, "%-24s %16s %16s\n", "newidle_pulls/chances", pullShare(f.Observed), pullShare(f.Simulated))
	fmt.Fprintf(&b, "%-24s %16s %16s\n", "migrations_at_wakeup", countOrDash(f.Observed.MigrationsAtWakeup), countOrDash(f.Simulated.MigrationsAtWakeup))
	if st := f.Stats; st != nil && st.IdleTicks > 0 {
		// The idle CPUs' own ticks and the balancing they raised (--set
		// idle_tick=N); the trace's side needs its timer and softirq
		// events: scripts/idlepulls.
		fmt.Fprintf(&b, "%-24s %16s %16d\n", "idle_ticks", "-", st.IdleTicks)
		fmt.Fprintf(&b, "%-24s %16s %16s\n", "idle_tick pass/wait/pull", "-", fmt.Sprintf("%d/%d/%d", st.IdleTickPasses, st.IdleTickChances, st.IdleTickPulls))
		fmt.Fprintf(&b, "%-24s %16s %16s\n", "idle 4-16ms ticked/all", "-", fmt.Sprintf("%d/%d", st.IdleMidTicked, st.IdleMidPeriods))
		fmt.Fprintf(&b, "%-24s %16s %16s\n", "idle tick/jiffy few|many", "-", fmt.Sprintf("%s|%s", perPeriod(st.IdleTicksFewBusy, st.IdlePeriodsFewBusy), perPeriod(st.IdleTicksManyBusy, st.IdlePeriodsManyBusy)))
	}
	if f.Observed.WakeChoices != nil || f.Simulated.WakeChoices != nil {
		// What the wakeup path chose (analysis/wakechoice.go): a sleeping
		// wakee whose previous CPU was another than the waking one kept
		// there, pulled to the waking CPU, or sent elsewhere; one whose
		// previous CPU was the waking one left there or moved.
		or, ol := choiceCells(f.Observed.WakeChoices)
		sr, sl := choiceCells(f.Simulated.WakeChoices)
		fmt.Fprintf(&b, "%-24s %16s %16s\n", "wake: kept/pulled/other", or, sr)
		fmt.Fprintf(&b, "%-24s %16s %16s\n", "wake: stayed/moved", ol, sl)
	}
	if f.Observed.WakeupByPlace != nil || f.Simulated.WakeupByPlace != nil {
		// Where the wakees ran: count, p50 and p95 (ms) of each place,
		// each split under the place it splits.
		for _, i := range []int{placeIdle, placeWaker, placeWakerPreempt, placeWakerBlock, placeOtherBusy, placeOtherBusyPreempt, placeOtherBusyFirst, placeOtherBusyBlock} {
			k := PlaceNames[i]
			label := "wakeups@" + k
			switch i {
			case placeWakerPreempt, placeOtherBusyPreempt:
				label = "  ..preempting"
			case placeOtherBusyFirst:
				label = "    ..at its first switch"
			case placeWakerBlock, placeOtherBusyBlock:
				label = "  ..after a block"
			}
			fmt.Fprintf(&b, "%-24s %28s %28s\n", label, placeCell(f.Observed.WakeupByPlace[k]), placeCell(f.Simulated.WakeupByPlace[k]))
		}
	}
	var lv []string
	for l := range f.Observed.MigrationsByLevel {
		lv = append(lv, l)
	}
	sort.Strings(lv)
	for _, l := range lv {
		fmt.Fprintf(&b, "%-24s %16d %16d\n", "migrations."+l, f.Observed.MigrationsByLevel[l], f.Simulated.MigrationsByLevel[l])
	}
	for _, l := range lv {
		fmt.Fprintf(&b, "%-24s %16d %16d\n", "idle_while_runnable."+l, f.Observed.IdleWhileRunnableByLevel[l], f.Simulated.IdleWhileRunnableByLevel[l])
	}
	fmt.Fprintf(&b, "KS distance of wakeup latency: %.4f\n", f.KS)
	if st := f.Stats; st != nil && st.NIRatioStart != nil {
		fmt.Fprintf(&b, "NI_RANDOM: each domain's newidle success ratio started at %d of 1024\n", *st.NIRatioStart)
	}
	if st := f.Stats; st != nil && (st.WakeeFlipsStart > 0 || st.WakeeFlipsFit != nil) {
		fmt.Fprintf(&b, "wakee_flips: the tasks alive at the trace start began with %d", st.WakeeFlipsStart)
		if fl := st.WakeeFlipsFit; fl != nil {
			fmt.Fprintf(&b, " (the trace's placements: %d by a waker alone, %d explained by %d, %d by 0; %d wake_affine_weight pulls, %d explained by %d, %d by 0)",
				fl.Placements, fl.Explained, fl.WakeeFlips, fl.ExplainedAt0, fl.WeightPlacements, fl.WeightExplained, fl.WakeeFlips, fl.WeightExplainedAt0)
		}
		b.WriteString("\n")
	}
	if st := f.Stats; st != nil && st.RecordingEndNS > 0 {
		fmt.Fprintf(&b, "recording window: the replay's output ends where perf stops (its last activation and its command's process tree done); %d events after that are not written (--full-window keeps them)\n", st.EventsAfterRecording)
	}
	if st := f.Stats; st != nil && (st.DeadlineCuts > 0 || st.RunOnTasks > 0) {
		// --work until-exit: the work the recorded exits bounded, both
		// ways (a task still running at its exit is cut; a spinner done
		// early runs on to it).
		fmt.Fprintf(&b, "exit deadlines: %d tasks stopped at their recorded exit (%.1f ms of demand cut), %d spinners ran on to it (%.1f ms past their demand)\n",
			st.DeadlineCuts+st.StrandedCuts, float64(st.DeadlineCutNS)/1e6, st.RunOnTasks, float64(st.RunOnNS)/1e6)
	}
	if st := f.Stats; st != nil {
		// The replay's counted rules: how often each applied, and the
		// milliseconds it moved (format: the count's %d, then the ms' %.1f).
		for _, l := range []struct {
			n, ns  int64
			format string
		}{
			{st.TraceEndRunOnTasks, st.TraceEndRunOnNS, "trace end: %d tasks the trace's end cut short were done with their recorded demand before it and ran on to it (%.1f ms past their demand)\n"},
			{st.WakeOverheadSkips, st.WakeOverheadNS, "wake overhead: %d activations went on without blocking (their wakeup came first) and skipped the block and wakeup their demand includes, %.1f ms (each task's median activation demand; --set wake_overhead=keep: not)\n"},
			{st.BusyHostWaits, st.BusyHostWaitNS, "host waits: %d wakeup preemptions sent to another busy vCPU, outside its task's own host stalls, waited for a host core (%.1f ms in all; the task fired no wakeup meanwhile; --set busy_host_wait=off: not)\n"},
			{st.IRQWakeStalls, st.IRQWakeStallNS, "interrupt wakeup stalls: %d of the replay's wakeup preemptions raised by an interrupt on their own CPU met a stall before the switch, %.1f ms in all\n"},
			{st.LongSwitchCharges, st.LongSwitchChargeNS, "long switch charges: %d of the replay's blocks came where the trace's had such a run, and charged the task switched in %.1f ms of it (at most what the leaving task ran since its last update)\n"},
			{st.HostStallsShortened, st.HostStallShortenedNS, "host stalls shortened: %d of the trace's host stalls came where the replay ran fewer vCPUs busy than the trace had then, and kept only the share the host's contention leaves (1 - H/busy): %.1f ms of demand less (--set stall_contention=off: not)\n"},
		} {
			if l.n > 0 {
				fmt.Fprintf(&b, l.format, l.n, float64(l.ns)/1e6)
			}
		}
	}
	if st := f.Stats; st != nil && st.Delay.Blocks > 0 {
		fmt.Fprintf(&b, "delayed dequeue: %d of the replay's %d blocks with another task queued kept their task queued (not eligible), %d of those until a waking requeued it (a v6.12+ trace's schedstats date the kernel's: scripts/delayshare)\n",
			st.Delay.Delayed, st.Delay.Blocks, st.Delay.Requeued)
	}
	if st := f.Stats; st != nil && st.RepliesAwaited > 0 {
		fmt.Fprintf(&b, "hidden waits: wakers slept %d times where the trace shows their wakee preempting them, until the broadcast or reply the wakee's activation made, which the trace hid (--set herd_awaits=off: not for broadcasts)\n", st.RepliesAwaited)
	}
	if st := f.Stats; st != nil && st.StartPELTTasks > 0 && !st.StartPELTHeavy {
		fmt.Fprintf(&b, "start PELT: %d tasks running or runnable at the trace start began with the averages of their running and runnable shares of its first %d ms, loads summing %d (their weights: %d; --set start_pelt=heavy starts them there)\n",
			st.StartPELTTasks, startPELTWindowNS/1000000, st.StartPELTLoad, st.StartPELTWeight)
	}
	if st := f.Stats; st != nil && st.EdgesFired > 0 && st.EdgesPending*4 > st.EdgesFired {
		// A wakeup that finds its wakee still running or queued from its
		// previous activation is not a wakeup in the replay: the replay's
		// order departed from the trace's (docs/whatif.md, "Wake edges").
		fmt.Fprintf(&b, "replay order: %d of the %d wake edges fired found their wakee not yet blocked, where the trace's woke a sleeper: the replay ran wakers ahead of their wakees, and has fewer wakeups than the trace", st.EdgesPending, st.EdgesFired)
		if p := st.EdgesPendingBy; p != nil {
			fmt.Fprintf(&b, " (the wakee running on the waker's CPU %d, on another %d; queued on the waker's %d, on another %d; otherwise %d)", p.RunningHere, p.Running, p.QueuedHere, p.Queued, p.Other)
		}
		b.WriteString("\n")
	}
	if mf := f.MergedAsFast; mf != nil && f.Observed != nil && mf.Missing*20 >= f.Observed.WakeupCount {
		fmt.Fprintf(&b, "merged as fast: had the replay's %d missing wakeups (the trace's count less its own, wake edges it merged into a run) each been the fastest, its p50, p95 and p99 would be %.3f, %.3f and %.3f ms (%+.4f, %+.4f, %+.4f): a bound on how much of a miss the merges make\n",
			mf.Missing, float64(mf.P50NS)/1e6, float64(mf.P95NS)/1e6, float64(mf.P99NS)/1e6,
			mf.RelError["wakeup_p50_ns"], mf.RelError["wakeup_p95_ns"], mf.RelError["wakeup_p99_ns"])
	}
	if note := f.remotePreemptNote(); note != "" {
		fmt.Fprintln(&b, note)
	}
	for _, g := range f.Goals {
		v := "MET"
		switch {
		case g.NotCompared:
			v = "NOT COMPARED (no wakeups in the trace)"
		case !g.Met:
			v = "MISSED"
		}
		fmt.Fprintf(&b, "goal %-24s <= %.2f: %.4f %s\n", g.Metric, g.Limit, g.Value, v)
	}
	writeGoalBands(&b, f.GoalBands)
	if f.Spread != nil {
		f.Spread.writeTable(&b)
	}
	if f.Worst != nil {
		writeWorst(&b, "the trace's", f.Worst.Observed)
		writeWorst(&b, "the replay's", f.Worst.Simulated)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeWorst lists one schedule's longest wakeups as `replay latency --by
// wakeup` does.
func writeWorst(b io.Writer, whose string, ws []analysis.WorstWakeup) {
	fmt.Fprintf(b, "%s %d longest wakeups:\n", whose, len(ws))
	analysis.WriteWorstRows(b, ws)
}

// teeReader feeds every event it reads to a Measurer.
type teeReader struct {
	timeline.EventReader
	m   *Measurer
	err error
}

func (t *teeReader) Next() bool {
	if !t.EventReader.Next() {
		return false
	}
	if err := t.m.Emit(t.EventReader.Event()); err != nil && t.err == nil {
		t.err = err
	}
	return true
}

func (t *teeReader) Err() error {
	if t.err != nil {
		return t.err
	}
	return t.EventReader.Err()
}

// ExtractAndMeasure reads a trace once, building the workload and the
// observed metrics (with domains built from topo under kernel; topo is
// also the recorded machine when the trace names none).
func ExtractAndMeasure(r timeline.EventReader, topo *model.Topology, kernel string) (*Workload, *Metrics, error) {
	return ExtractAndMeasureWorst(r, topo, kernel, 0)
}

// ExtractAndMeasureWorst is ExtractAndMeasure keeping the trace's worst
// longest wakeups with their context (Metrics.Worst; `whatif --validate
// --worst`).
func ExtractAndMeasureWorst(r timeline.EventReader, topo *model.Topology, kernel string, worst int) (*Workload, *Metrics, error) {
	var d *model.Domains
	ncpu := 0
	if topo != nil {
		var err error
		if d, err = model.BuildDomains(topo, kernel); err != nil {
			return nil, nil, err
		}
		ncpu = d.NrCPUs
	}
	m := newTraceMeasurer(d, ncpu, r.Meta(), worst)
	t := &teeReader{EventReader: r, m: m}
	w, err := ExtractWith(t, ExtractOptions{Topology: topo})
	if err != nil {
		return nil, nil, err
	}
	if t.err != nil {
		return nil, nil, t.err
	}
	obs, _, err := m.Finish()
	if err != nil {
		return nil, nil, err
	}
	return w, obs, nil
}

// Latencies returns every wakeup latency the metrics were computed from
// (ns, sorted), for plots.
func (m *Metrics) Latencies() []int64 { return m.latencies }

// perPeriod is n per tick period of idle time, "-" without any.
func perPeriod(n int64, periods float64) string {
	if periods <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(n)/periods)
}
