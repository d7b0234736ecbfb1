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
	"math"
	"path/filepath"

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
	// StampEachWake (schbench 2023 -R): each wakeup of a measured task
	// carries its own timestamp (the request's), not the batch's.
	StampEachWake bool
	// Tasks, Activations, Edges count the workload's.
	Tasks, Activations, Edges int64
}

// StreamOptions tune Stream.
type StreamOptions struct {
	// TempDir holds the writer's temporary files ("": the output's
	// directory).
	TempDir string
	// Batch is how many activations (and edges) are held in memory before
	// a sorted batch is spilled (0: whatif.DefaultStreamBatch).
	Batch int
	// IdleWakeNS is recorded as the workload's idle-exit delays.
	IdleWakeNS []int64
}

// Stream generates g's workload on topo into the workload file path
// without holding it: activations and edges go to a
// whatif.WorkloadWriter as they are generated, so memory is bounded by
// the tasks and the batch, not the run length. The file is
// byte-identical to SaveWorkload(path, Generate(topo).Workload) with the
// same IdleWakeNS. The Result has no Workload.
func Stream(g Generator, topo *model.Topology, path string, opt StreamOptions) (*Result, error) {
	dir := opt.TempDir
	if dir == "" {
		dir = filepath.Dir(path)
	}
	ww := whatif.NewWorkloadWriter(dir, opt.Batch)
	defer ww.Close()
	b := newStreamBuilder(topo, ww)
	res, err := g.generate(b)
	if err != nil {
		return nil, err
	}
	hdr := res.Workload
	hdr.IdleWakeNS = opt.IdleWakeNS
	if err := ww.Finish(path, hdr); err != nil {
		return nil, err
	}
	res.Workload = nil
	res.Tasks = int64(len(hdr.Tasks))
	res.Activations, res.Edges = ww.Counts()
	return res, nil
}

// generateInMemory runs g with an in-memory builder.
func generateInMemory(g Generator, topo *model.Topology) (*Result, error) {
	res, err := g.generate(newBuilder(topo))
	if err != nil {
		return nil, err
	}
	nt, na, ne, _, _ := res.Workload.Stats()
	res.Tasks, res.Activations, res.Edges = int64(nt), int64(na), int64(ne)
	return res, nil
}

// builder assembles a workload: in memory (a whatif.Workload holding
// every activation and edge), or streaming it into a
// whatif.WorkloadWriter. Streaming, it holds the tasks and each task's
// last (open) activation only: a generator may change its last
// activation (demand, end) until it adds the next one, and may point
// edges at any activation, earlier ones included.
type builder struct {
	w     *whatif.Workload
	limit int64 // activations + edges allowed (in memory)
	n     int64

	// Streaming: out receives the closed activations and every edge.
	out   *whatif.WorkloadWriter
	nacts []int32 // activations per task so far
	endNS int64   // max release + demand of the activations passed on
	nedge int64
}

// MaxItems bounds the activations plus wake edges a generator builds in
// memory (about 120 bytes each): Generate returns a Workload holding them
// all, which `replay synth --policy` replays. Stream (`replay synth -o`
// alone) has no such bound.
const MaxItems = 40_000_000

// maxItems is MaxItems (tests lower it).
var maxItems int64 = MaxItems

func newBuilder(topo *model.Topology) *builder {
	w := &whatif.Workload{StartNS: 0, Topology: topo}
	return &builder{w: w, limit: maxItems}
}

func newStreamBuilder(topo *model.Topology, out *whatif.WorkloadWriter) *builder {
	b := newBuilder(topo)
	b.out, b.limit = out, math.MaxInt64
	return b
}

// checkSize refuses a workload of about n activations and edges that
// would not fit in memory (streaming has no bound).
func (b *builder) checkSize(name string, n float64, shorten string) error {
	if b.out == nil && n > float64(b.limit) {
		return fmt.Errorf("%s: about %.0f activations and wake edges, more than %d held in memory for --policy; use %s, or write the workload with -o alone (streamed, no bound) and replay the file", name, n, b.limit, shorten)
	}
	return nil
}

func (b *builder) grow() error {
	b.n++
	if b.n > b.limit {
		return fmt.Errorf("synth: the workload needs more than %d activations and wake edges held in memory; use a shorter run or fewer loops, or write it with -o alone (streamed)", b.limit)
	}
	return nil
}

// task adds a task and returns its index.
func (b *builder) task(tid, pid int32, comm string, startCPU int32) int32 {
	b.w.Tasks = append(b.w.Tasks, whatif.Task{TID: tid, PID: pid, Comm: comm, Prio: 120, Pinned: -1, StartCPU: startCPU})
	b.nacts = append(b.nacts, 0)
	return int32(len(b.w.Tasks) - 1)
}

// flush passes task t's open activation on to the writer.
func (b *builder) flush(t int32) error {
	tk := &b.w.Tasks[t]
	if len(tk.Activations) == 0 {
		return nil
	}
	a := tk.Activations[0]
	if e := a.ReleaseNS + a.DemandNS; e > b.endNS {
		b.endNS = e
	}
	tk.Activations = tk.Activations[:0]
	return b.out.AddActivation(t, b.nacts[t]-1, a)
}

// act appends an activation to task t and returns its index.
func (b *builder) act(t int32, cause whatif.Cause, release, sleep, demand int64) (int32, error) {
	if err := b.grow(); err != nil {
		return 0, err
	}
	if demand < 1 {
		demand = 1
	}
	if b.out != nil {
		if err := b.flush(t); err != nil {
			return 0, err
		}
	}
	tk := &b.w.Tasks[t]
	tk.Activations = append(tk.Activations, whatif.Activation{DemandNS: demand, Cause: cause, ReleaseNS: release, SleepNS: sleep, End: whatif.EndSleep, EndState: "S", CPU: -1})
	b.nacts[t]++
	return b.nacts[t] - 1, nil
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
	e := whatif.Edge{Kind: kind, Causal: causal, Waker: waker, WakerAct: wa, OffsetNS: offset,
		Wakee: wakee, WakeeAct: ea, TimeNS: at, WakerCPU: -1, Target: -1}
	if b.out != nil {
		b.nedge++
		return b.out.AddEdge(e)
	}
	b.w.Edges = append(b.w.Edges, e)
	return nil
}

// finish sorts the edges, indexes them on their activations, sets the
// time span and validates. Streaming, it passes the open activations on
// and returns the header (tasks without activations) for
// WorkloadWriter.Finish, which sorts and validates.
func (b *builder) finish(end int64) (*whatif.Workload, error) {
	w := b.w
	if b.out != nil {
		for t := range w.Tasks {
			if err := b.flush(int32(t)); err != nil {
				return nil, err
			}
			w.Tasks[t].Activations = nil
		}
		w.EndNS = max(end, b.endNS)
		return w, nil
	}
	w.Index()
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
