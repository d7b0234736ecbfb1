// Package synth generates the workloads of the benchmarks the scheduler
// load-balancing discussions were argued with (schbench, hackbench,
// ebizzy) as whatif.Workload values, the artifact trace extraction
// produces, so `replay whatif -i synth.arrow` replays them on any machine
// under any policy. The semantics follow ../shared/design/kernel-lb.md §7;
// docs/synth.md says how faithful each generator is.
//
// A generator runs the benchmark's own protocol on an ideal machine (every
// runnable thread runs at once, at capacity 1024, with no scheduling
// delay) to decide the nominal activations and who wakes whom; the replay
// then imposes the modelled machine. Randomness comes only from the seed;
// the same options and seed give the same workload (and byte-identical
// files).
package synth

import (
	"fmt"
	"sort"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

// Result is a generated workload with what the benchmark measures.
type Result struct {
	Workload *whatif.Workload
	// Name is the benchmark ("schbench", "hackbench", "ebizzy").
	Name string
	// Command is the benchmark command line the workload stands for.
	Command string
	// Measured are the TIDs whose wakeups (schbench: workers) or run time
	// (ebizzy: worker threads; hackbench: children) the benchmark reports.
	Measured []int32
	// Wakers (schbench): the TIDs whose wakeups of Measured tasks are the
	// measured ones (the message threads).
	Wakers []int32
	// MeasureFromNS, MeasureToNS bound the measured interval (simulated
	// time; schbench's warmup and -z reset, ebizzy's -S deadline);
	// MeasureToNS 0 = until the end.
	MeasureFromNS, MeasureToNS int64
	// RecordNS (ebizzy) is the CPU time of one record at capacity 1024.
	RecordNS int64
}

// builder assembles a workload.
type builder struct {
	w     *whatif.Workload
	limit int64 // activations + edges allowed
	n     int64
}

// MaxItems bounds the activations plus wake edges a generator builds
// (about 120 bytes each): the Workload type holds every activation and
// edge in memory (Task.Activations, Workload.Edges are slices and
// whatif.Replay takes the whole value), so a generator cannot stream.
const MaxItems = 40_000_000

// maxItems is MaxItems (tests lower it).
var maxItems int64 = MaxItems

func newBuilder(topo *model.Topology, source string) *builder {
	w := &whatif.Workload{StartNS: 0, Topology: topo, Source: source}
	return &builder{w: w, limit: maxItems}
}

func (b *builder) grow() error {
	b.n++
	if b.n > b.limit {
		return fmt.Errorf("synth: the workload needs more than %d activations and wake edges (the Workload type holds them all in memory); use a shorter run or fewer loops", b.limit)
	}
	return nil
}

// task adds a task and returns its index.
func (b *builder) task(tid, pid int32, comm string, startCPU int32) int32 {
	b.w.Tasks = append(b.w.Tasks, whatif.Task{TID: tid, PID: pid, Comm: comm, Prio: 120, Pinned: -1, StartCPU: startCPU})
	return int32(len(b.w.Tasks) - 1)
}

// act appends an activation to task t and returns its index.
func (b *builder) act(t int32, cause whatif.Cause, release, sleep, demand int64) (int32, error) {
	if err := b.grow(); err != nil {
		return 0, err
	}
	if demand < 1 {
		demand = 1
	}
	tk := &b.w.Tasks[t]
	tk.Activations = append(tk.Activations, whatif.Activation{DemandNS: demand, Cause: cause, ReleaseNS: release, SleepNS: sleep, End: whatif.EndSleep, EndState: "S", CPU: -1})
	return int32(len(tk.Activations) - 1), nil
}

// last is the last activation of task t.
func (b *builder) last(t int32) *whatif.Activation {
	as := b.w.Tasks[t].Activations
	return &as[len(as)-1]
}

// edge adds a wake (or fork) edge from waker's activation wa at offset to
// wakee's activation ea.
func (b *builder) edge(kind whatif.EdgeKind, causal bool, waker, wa int32, offset int64, wakee, ea int32, at int64) error {
	if err := b.grow(); err != nil {
		return err
	}
	b.w.Edges = append(b.w.Edges, whatif.Edge{Kind: kind, Causal: causal, Waker: waker, WakerAct: wa, OffsetNS: offset,
		Wakee: wakee, WakeeAct: ea, TimeNS: at, WakerCPU: -1, Target: -1})
	return nil
}

// finish sorts the edges, indexes them on their activations, sets the
// time span and validates.
func (b *builder) finish(end int64) (*whatif.Workload, error) {
	w := b.w
	sort.SliceStable(w.Edges, func(i, j int) bool {
		a, c := &w.Edges[i], &w.Edges[j]
		if a.Waker != c.Waker {
			return a.Waker < c.Waker
		}
		if a.WakerAct != c.WakerAct {
			return a.WakerAct < c.WakerAct
		}
		if a.OffsetNS != c.OffsetNS {
			return a.OffsetNS < c.OffsetNS
		}
		return a.TimeNS < c.TimeNS
	})
	for i := 0; i < len(w.Edges); {
		e := w.Edges[i]
		j := i
		for j < len(w.Edges) && w.Edges[j].Waker == e.Waker && w.Edges[j].WakerAct == e.WakerAct {
			j++
		}
		a := &w.Tasks[e.Waker].Activations[e.WakerAct]
		a.EdgeLo, a.EdgeHi = int32(i), int32(j)
		i = j
	}
	w.EndNS = end
	for i := range w.Tasks {
		for _, a := range w.Tasks[i].Activations {
			if e := a.ReleaseNS + a.DemandNS; e > w.EndNS {
				w.EndNS = e
			}
		}
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("synth: internal error: %w", err)
	}
	return w, nil
}

// rng is SplitMix64: the generators' only source of randomness.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn is uniform in [0, n) (0 for n <= 0).
func (r *rng) intn(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return int64(r.next() % uint64(n))
}

// float is uniform in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

func onlineCPUs(topo *model.Topology) int {
	if topo == nil {
		return 1
	}
	n := 0
	for _, c := range topo.CPUs {
		if c.Online {
			n++
		}
	}
	if n == 0 {
		n = topo.NrCPUs
	}
	if n < 1 {
		n = 1
	}
	return n
}
