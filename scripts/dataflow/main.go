// Command dataflow replays a message-passing recording made with the write
// and read system-call tracepoints beside the sched ones, with the data
// flow those show in place of the wakeups a sched-only trace keeps: every
// message written is a wake edge of its writer (at the writer's progress
// when it wrote), and every read of a reader starts a new activation that
// needs one message (a token) to run. A reader whose messages came before
// it reached a read runs on without sleeping; one that reaches a read with
// nothing written sleeps until the next write to it wakes it, as a read on
// an empty socket does. The replay then knows every write, where a
// sched-only workload knows only the 17 % of them that found their reader
// asleep (FIDELITY.md rounds 51–52).
//
// It answers one question: whether the replay's misses on hackbench's
// median are missing information (the hidden writes) or the scheduler
// model. It prints the replay's fidelity under the traced kernel's policy,
// as `replay whatif --validate` does, for each seed.
//
//	go run ./scripts/dataflow [-seeds 0-2] [-size 100] [-syscall-exit] [-flips N] [-paired] [-o SIM.arrow] [-cost] TRACE
//
// -cost prints, instead of replaying, what a reader's activation costs:
// its demand against the messages it read, a least-squares line whose
// intercept is the block and wakeup (FIDELITY.md round 54).
//
// -syscall-exit uses what the system calls add about preemption: under
// voluntary preemption (the guests' kernels) a wakeup inside a write call
// preempts its waker at the call's return at the earliest, so each
// wakeup's stretch without a preemption point (Edge.NoPreemptNS) runs to
// that return; the herd, one write waking every child, then stays one
// burst as in the trace. -flips and -paired set the replay's wakee_flips
// start and its wakeup pairing, to test what they change.
//
// A message is a write or read of -size bytes (hackbench's DATASIZE: 100)
// by any task. A write's reader is named by the writes that woke one:
// within a group of writers (those that woke a common reader) a
// descriptor is one reader's. A writer that never woke a reader joins the
// group of the writer created nearest it (tid), as hackbench forks a
// group's senders one after another. Every reader must then get as many
// messages as it read, or the trace is refused.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

func main() {
	seeds := flag.String("seeds", "0-2", "seeds to replay (a range a-b or a list)")
	size := flag.Int64("size", 100, "the message size in bytes: writes and reads of this count are messages")
	flips := flag.Int64("flips", -1, "wakee_flips of the tasks alive at the trace start (-1: the replay's inference)")
	out := flag.String("o", "", "write the first seed's simulated schedule to this timeline file")
	paired := flag.Bool("paired", false, "pair each wakeup with the activation the trace started with it (--paired-wakeups)")
	sysExit := flag.Bool("syscall-exit", false, "a wakeup inside a write call cannot preempt its waker before the call returns (voluntary preemption)")
	cost := flag.Bool("cost", false, "print the readers' activation cost (demand against messages read, least squares) instead of replaying")
	args := scriptutil.ParseArgs("usage: dataflow [-seeds 0-2] [-size 100] [-syscall-exit] [-flips N] [-paired] [-o SIM.arrow] [-cost] TRACE", true)
	ss, err := scriptutil.ParseSeeds(*seeds)
	if err == nil {
		err = run(os.Stdout, args[0], *size, *flips, ss, *out, *sysExit, *paired, *cost)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataflow:", err)
		os.Exit(1)
	}
}

// trace is a recording's workload and observed metrics, with the topology
// and kernel release its headers give.
type trace struct {
	wl     *whatif.Workload
	obs    *whatif.Metrics
	topo   *model.Topology
	kernel string
}

// extract reads path as `replay whatif --validate` does.
func extract(path string) (trace, error) {
	r, err := ingest.Open(path)
	if err != nil {
		return trace{}, err
	}
	defer r.Close()
	meta := r.Meta()
	wl, obs, err := whatif.ExtractAndMeasure(r, meta.Topology, meta.Source.OSRelease)
	if err != nil {
		return trace{}, err
	}
	return trace{wl, obs, meta.Topology, meta.Source.OSRelease}, nil
}

// costFit is a least-squares line through the readers' activations: their
// demand against the messages they read (sys_enter_read of a message
// between the activation's wakeup and its block), in ns.
type costFit struct {
	acts, oneMsg int
	a, b         float64
	oneMsgMedian float64
}

// fitCost measures what an activation of a reader costs beyond its
// messages (the intercept): the block and wakeup a reader that goes on
// without blocking does not go through (whatif/wakeoverhead.go). An
// activation ending the task's recorded life, or reading nothing, is left
// out.
func fitCost(wl *whatif.Workload, fl *flow) costFit {
	var c costFit
	var n, sx, sy, sxx, sxy float64
	var one []float64
	for i := range wl.Tasks {
		t := &wl.Tasks[i]
		reads := fl.reads[t.TID]
		if len(reads) == 0 {
			continue
		}
		for k := 0; k+1 < len(t.Activations); k++ {
			a, next := &t.Activations[k], &t.Activations[k+1]
			block := next.ReleaseNS - next.SleepNS
			lo := sort.Search(len(reads), func(j int) bool { return reads[j] >= a.ReleaseNS })
			hi := sort.Search(len(reads), func(j int) bool { return reads[j] > block })
			m := float64(hi - lo)
			if m == 0 {
				continue
			}
			d := float64(a.DemandNS)
			n, sx, sy, sxx, sxy = n+1, sx+m, sy+d, sxx+m*m, sxy+m*d
			if m == 1 {
				one = append(one, d)
			}
		}
	}
	c.acts, c.oneMsg = int(n), len(one)
	if den := n*sxx - sx*sx; den != 0 {
		c.b = (n*sxy - sx*sy) / den
		c.a = (sy - c.b*sx) / n
	}
	if len(one) > 0 {
		slices.Sort(one)
		c.oneMsgMedian = one[(len(one)-1)/2]
	}
	return c
}

func run(w io.Writer, path string, size, flips int64, seeds []int, out string, syscallExit, paired, cost bool) error {
	fl, err := readFlow(path, size)
	if err != nil {
		return err
	}
	tr, err := extract(path)
	if err != nil {
		return err
	}
	wl, obs := tr.wl, tr.obs
	if cost {
		c := fitCost(wl, fl)
		fmt.Fprintf(w, "reader activations that read messages: %d; demand = %.4f ms + %.4f ms per message (least squares); %d read one message, median demand %.3f ms\n",
			c.acts, c.a/1e6, c.b/1e6, c.oneMsg, c.oneMsgMedian/1e6)
		return nil
	}
	st, err := transform(wl, fl, tr.topo, syscallExit)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(w, "trace: %s\n", path)
	fmt.Fprintf(w, "data flow: %d messages from %d writers to %d readers; %d recorded wakeups of a reader by a writer replaced by %d write edges; %d read activations; %d wakeups held to their write call's return\n",
		st.messages, st.writers, st.readers, st.removed, st.messages, st.readActs, st.syscallStretches)
	pol, err := whatif.PolicyForKernel(tr.kernel)
	if err != nil {
		return err
	}
	for i, s := range seeds {
		cfg := whatif.DefaultConfig(pol)
		cfg.Seed, cfg.Topology, cfg.Kernel = uint64(s), tr.topo, tr.kernel
		if flips >= 0 {
			cfg.WakeeFlips = flips
		}
		cfg.PairedWakeups = paired
		// The work model replay whatif --validate uses by default.
		cfg.SetAutoWork(wl)
		var res *whatif.Result
		if i == 0 && out != "" {
			res, err = whatif.ReplayToFile(out, wl, cfg)
		} else {
			res, err = whatif.Replay(wl, cfg, nil)
		}
		if err != nil {
			return err
		}
		f := whatif.Compare(pol.Name(), obs, res.Metrics, res.Stats)
		if i == 0 {
			if err := f.WriteTable(w); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "seed %d: p50 %+.3f p95 %+.3f p99 %+.3f, wakeups %d, migrations %d (wake_affine moves %d), involuntary switches %d\n", s,
			f.RelError["wakeup_p50_ns"], f.RelError["wakeup_p95_ns"], f.RelError["wakeup_p99_ns"],
			len(res.Metrics.Latencies()), res.Metrics.Migrations, res.Stats.TTWUMoveAffine, res.Metrics.InvoluntarySwitches)
	}
	return nil
}

// message is one write of a message.
type message struct {
	tid   int32
	fd    int64
	at    int64 // when it went in: the writer's sched_waking of its reader, else the middle of the write
	woke  int32 // the one task a sched_waking inside the write named, -1 if none or several
	nwoke int
}

// flow is what readFlow finds in the trace.
type flow struct {
	writes []message
	reads  map[int32][]int64 // per reader: its reads' sys_enter_read times
	runs   map[int32][][2]int64
	comm   map[int32]string
	// calls: per task, its write system calls [enter, exit] (any size),
	// in time order.
	calls map[int32][][2]int64
}

// readFlow reads the messages, the reads and each task's runs (from its
// switches) out of the trace.
func readFlow(path string, size int64) (*flow, error) {
	fl := &flow{reads: map[int32][]int64{}, runs: map[int32][][2]int64{}, comm: map[int32]string{}, calls: map[int32][][2]int64{}}
	open := map[int32]*message{}
	enter := map[int32]int64{} // per task: the write it is in (-1: none)
	since := map[int32]int64{} // per CPU: when its running task switched in
	first := int64(-1)
	seenWrite, seenRead := false, false
	err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		if first < 0 && e.Time > 0 {
			first = e.Time
		}
		tid := e.Int32(timeline.CommonPID)
		if e.IsSet(timeline.CommonComm) {
			fl.comm[tid] = e.Str(timeline.CommonComm)
		}
		switch {
		case e.Kind == timeline.SchedSwitch:
			c := e.Int32(timeline.CPU)
			start, ok := since[c]
			if !ok {
				start = first
			}
			if p := e.Int32(timeline.PrevPID); p != 0 {
				fl.runs[p] = append(fl.runs[p], [2]int64{start, e.Time})
			}
			since[c] = e.Time
		case e.Kind == timeline.SchedWaking:
			if m := open[tid]; m != nil {
				m.nwoke++
				if m.nwoke == 1 {
					m.woke, m.at = e.Int32(timeline.PID), e.Time
				}
			}
		case e.Name == "syscalls:sys_enter_write":
			seenWrite = true
			enter[tid] = e.Time
			if n, _ := e.IntField("count"); n == size {
				fd, _ := e.IntField("fd")
				open[tid] = &message{tid: tid, fd: fd, woke: -1}
			}
		case e.Name == "syscalls:sys_exit_write":
			at, ok := enter[tid]
			if !ok || at < 0 {
				break
			}
			fl.calls[tid] = append(fl.calls[tid], [2]int64{at, e.Time})
			enter[tid] = -1
			if m := open[tid]; m != nil {
				if m.nwoke != 1 {
					m.woke, m.at = -1, (at+e.Time)/2
				}
				fl.writes = append(fl.writes, *m)
				delete(open, tid)
			}
		case e.Name == "syscalls:sys_enter_read":
			seenRead = true
			if n, _ := e.IntField("count"); n == size {
				fl.reads[tid] = append(fl.reads[tid], e.Time)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seenWrite || !seenRead {
		return nil, fmt.Errorf("%s has no syscalls:sys_enter_write or sys_enter_read events: record with -e syscalls:sys_enter_write -e syscalls:sys_exit_write -e syscalls:sys_enter_read -e syscalls:sys_exit_read", path)
	}
	if len(fl.writes) == 0 {
		return nil, fmt.Errorf("%s: no write of %d bytes (-size)", path, size)
	}
	return fl, nil
}

// progress is the run time of a task before t (its runs sorted by start).
func progress(runs [][2]int64, t int64) int64 {
	var p int64
	for _, v := range runs {
		if v[0] >= t {
			break
		}
		p += min(v[1], t) - v[0]
	}
	return p
}

// attribute names each message's reader (see the package comment).
func attribute(fl *flow) (map[int]int32, error) {
	isReader := func(t int32) bool { return len(fl.reads[t]) > 0 }
	// Groups: union of each writer with the readers it woke.
	groups := scriptutil.Groups{}
	var writers []int32
	for _, m := range fl.writes {
		if !slices.Contains(writers, m.tid) {
			writers = append(writers, m.tid)
		}
		if m.woke >= 0 && isReader(m.woke) {
			groups.Join(m.tid, m.woke)
		}
	}
	slices.Sort(writers)
	evidence := map[int32]bool{}
	for _, m := range fl.writes {
		if m.woke >= 0 && isReader(m.woke) {
			evidence[m.tid] = true
		}
	}
	group := map[int32]int32{}
	for _, wr := range writers {
		if evidence[wr] {
			group[wr] = groups.Find(wr)
		}
	}
	for i, wr := range writers {
		if evidence[wr] {
			continue
		}
		// The nearest writer by tid with evidence (the lower on a tie).
		best := int32(-1)
		for d := 1; best < 0 && d < len(writers); d++ {
			for _, j := range []int{i - d, i + d} {
				if j >= 0 && j < len(writers) && evidence[writers[j]] && best < 0 {
					best = writers[j]
				}
			}
		}
		if best < 0 {
			return nil, fmt.Errorf("no write woke a reader: the messages' readers cannot be named")
		}
		group[wr] = groups.Find(best)
	}
	type key struct {
		group int32
		fd    int64
	}
	votes := map[key]map[int32]int{}
	for _, m := range fl.writes {
		if m.woke >= 0 && isReader(m.woke) {
			k := key{group[m.tid], m.fd}
			if votes[k] == nil {
				votes[k] = map[int32]int{}
			}
			votes[k][m.woke]++
		}
	}
	reader := map[key]int32{}
	for k, v := range votes {
		if len(v) > 1 {
			return nil, fmt.Errorf("descriptor %d of writer group %d woke %d readers: one reader per descriptor expected", k.fd, k.group, len(v))
		}
		for t := range v {
			reader[k] = t
		}
	}
	out := make(map[int]int32, len(fl.writes))
	count := map[int32]int{}
	for i, m := range fl.writes {
		rd, ok := reader[key{group[m.tid], m.fd}]
		if !ok {
			return nil, fmt.Errorf("writer %d's descriptor %d never woke a reader of its group: its messages' reader cannot be named", m.tid, m.fd)
		}
		out[i] = rd
		count[rd]++
	}
	for rd, reads := range fl.reads {
		if count[rd] != len(reads) {
			return nil, fmt.Errorf("reader %d read %d messages and was written %d", rd, len(reads), count[rd])
		}
	}
	return out, nil
}

// stats says what transform did.
type stats struct {
	messages, writers, readers, removed, readActs int
	// syscallStretches: wakeups given the rest of their write call as a
	// stretch without a preemption point (-syscall-exit).
	syscallStretches int
}

// transform rewrites wl (extracted from the same trace) with the data
// flow: each reader's activations from its first read on become one per
// read, each started by a message; each message is a wake edge of its
// writer; the recorded wakeups of readers by writers go.
func transform(wl *whatif.Workload, fl *flow, topo *model.Topology, syscallExit bool) (*stats, error) {
	if topo != nil {
		for _, c := range topo.CPUs {
			if c.Capacity != 0 && c.Capacity != 1024 {
				return nil, fmt.Errorf("CPU %d has capacity %d: the run time to demand scaling is not done here (capacity 1024 only)", c.ID, c.Capacity)
			}
		}
	}
	readerOf, err := attribute(fl)
	if err != nil {
		return nil, err
	}
	index := map[int32]int32{}
	for i := range wl.Tasks {
		index[wl.Tasks[i].TID] = int32(i)
	}
	// starts[t][k] is where activation k of task t begins in its demand.
	starts := func(ti int32) []int64 {
		acts := wl.Tasks[ti].Activations
		s := make([]int64, len(acts)+1)
		for k, a := range acts {
			s[k+1] = s[k] + a.DemandNS
		}
		return s
	}
	task := func(tid int32) (int32, error) {
		ti, ok := index[tid]
		if !ok {
			return 0, fmt.Errorf("task %d of the data flow is not in the workload", tid)
		}
		s := starts(ti)
		if run := progress(fl.runs[tid], 1<<62); run != s[len(s)-1] {
			return 0, fmt.Errorf("task %d ran %d ns by its switches, its workload's demand is %d ns", tid, run, s[len(s)-1])
		}
		return ti, nil
	}
	st := &stats{readers: len(fl.reads), messages: len(fl.writes)}
	isReader := map[int32]bool{}
	readerTIDs := make([]int32, 0, len(fl.reads))
	for tid := range fl.reads {
		readerTIDs = append(readerTIDs, tid)
	}
	slices.Sort(readerTIDs)
	for _, tid := range readerTIDs {
		ti, err := task(tid)
		if err != nil {
			return nil, err
		}
		isReader[ti] = true
	}
	isWriter := map[int32]bool{}
	for _, m := range fl.writes {
		ti, err := task(m.tid)
		if err != nil {
			return nil, err
		}
		if !isWriter[ti] {
			st.writers++
		}
		isWriter[ti] = true
	}
	var edges []whatif.Edge
	recorded := map[int64]whatif.Edge{} // the writers' recorded wakeups of readers, by time
	for _, e := range wl.Edges {
		if e.Kind == whatif.EdgeWake && isWriter[e.Waker] && isReader[e.Wakee] {
			recorded[e.TimeNS] = e
			st.removed++
			continue
		}
		edges = append(edges, e)
	}
	// Readers: the activation holding the first read ends there (asleep,
	// waiting for its first message); one activation per read follows.
	readActs := map[int32][]int32{} // per reader: read i's activation
	type cut struct {
		k      int     // the activation holding the first read
		starts []int64 // the old activations' starts
		reads  []int64 // the reads' progress points
	}
	cuts := map[int32]*cut{}
	for _, tid := range readerTIDs {
		ti := index[tid]
		tk := &wl.Tasks[ti]
		s := starts(ti)
		q := make([]int64, len(fl.reads[tid]))
		for i, at := range fl.reads[tid] {
			q[i] = progress(fl.runs[tid], at)
		}
		old := tk.Activations
		k := sort.Search(len(old), func(i int) bool { return s[i+1] > q[0] })
		if k == len(old) {
			return nil, fmt.Errorf("reader %d's first read at %d ns of its run time is past its demand", tid, q[0])
		}
		acts := append([]whatif.Activation(nil), old[:k+1]...)
		acts[k].DemandNS, acts[k].End, acts[k].EndState = q[0]-s[k], whatif.EndSleep, "S"
		last := old[len(old)-1]
		for i := range q {
			end := s[len(s)-1]
			if i+1 < len(q) {
				end = q[i+1]
			}
			a := old[k]
			a.DemandNS, a.Cause, a.End, a.EndState = end-q[i], whatif.CauseWake, whatif.EndSleep, "S"
			a.ReleaseNS, a.SleepNS = fl.reads[tid][i], 0
			if i+1 == len(q) {
				a.End, a.EndState = last.End, last.EndState
			}
			readActs[ti] = append(readActs[ti], int32(len(acts)))
			acts = append(acts, a)
		}
		tk.Activations = acts
		cuts[ti] = &cut{k: k, starts: s, reads: q}
		st.readActs += len(q)
	}
	// The reader's other edges: as a waker, moved to the activation now
	// holding their progress point; as a wakee, those that started a
	// replaced activation no longer start one.
	for i := range edges {
		e := &edges[i]
		if c := cuts[e.Waker]; c != nil && int(e.WakerAct) >= c.k {
			p := c.starts[e.WakerAct] + e.OffsetNS
			if p < c.reads[0] {
				e.WakerAct, e.OffsetNS = int32(c.k), p-c.starts[c.k]
			} else {
				j := sort.Search(len(c.reads), func(i int) bool { return c.reads[i] > p }) - 1
				e.WakerAct, e.OffsetNS = readActs[e.Waker][j], p-c.reads[j]
			}
			e.NoPreemptNS = min(e.NoPreemptNS, wl.Tasks[e.Waker].Activations[e.WakerAct].DemandNS-e.OffsetNS)
		}
		if c := cuts[e.Wakee]; c != nil && int(e.WakeeAct) > c.k {
			e.Causal, e.Awaits, e.Raced = false, false, false
			e.WakeeAct = int32(len(wl.Tasks[e.Wakee].Activations) - 1)
		}
	}
	// A reader's host stalls were dated in its old activations: dropped.
	stalls := wl.HostStalls[:0]
	for _, h := range wl.HostStalls {
		if !isReader[h.Task] {
			stalls = append(stalls, h)
		}
	}
	wl.HostStalls = stalls
	// From here on the activations stay as they are: each task's starts
	// are computed once.
	startsOf := map[int32][]int64{}
	cachedStarts := func(ti int32) []int64 {
		if s, ok := startsOf[ti]; ok {
			return s
		}
		s := starts(ti)
		startsOf[ti] = s
		return s
	}
	// The messages, each to its reader's next read in time order.
	order := make([]int, len(fl.writes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return fl.writes[order[a]].at < fl.writes[order[b]].at })
	next := map[int32]int{}
	for _, i := range order {
		m := fl.writes[i]
		wi, ri := index[m.tid], index[readerOf[i]]
		s := cachedStarts(wi)
		acts := wl.Tasks[wi].Activations
		p := progress(fl.runs[m.tid], m.at)
		k := min(sort.Search(len(acts), func(i int) bool { return s[i+1] > p }), len(acts)-1)
		off := min(max(p-s[k], 0), acts[k].DemandNS)
		e := whatif.Edge{Kind: whatif.EdgeWake, Causal: true, Waker: wi, WakerAct: int32(k), OffsetNS: off,
			Wakee: ri, WakeeAct: readActs[ri][next[ri]], TimeNS: m.at, WakerCPU: -1, Target: -1}
		next[ri]++
		// A message that woke its reader keeps what the recorded wakeup
		// carried (its CPUs, WF_SYNC, the stretch without a preemption
		// point after it); the hidden ones have none of that.
		if r, ok := recorded[m.at]; ok && m.woke >= 0 {
			e.WakerCPU, e.Target, e.Sync = r.WakerCPU, r.Target, r.Sync
			e.NoPreemptNS = min(r.NoPreemptNS, acts[k].DemandNS-off)
		}
		edges = append(edges, e)
	}
	if syscallExit {
		for i := range edges {
			e := &edges[i]
			tid := wl.Tasks[e.Waker].TID
			calls := fl.calls[tid]
			j := sort.Search(len(calls), func(j int) bool { return calls[j][1] >= e.TimeNS })
			if j == len(calls) || calls[j][0] > e.TimeNS {
				continue
			}
			// Under voluntary preemption a wakeup inside a system call
			// preempts its waker at the call's return at the earliest.
			s := cachedStarts(e.Waker)
			end := progress(fl.runs[tid], calls[j][1]) - s[e.WakerAct]
			end = min(end, wl.Tasks[e.Waker].Activations[e.WakerAct].DemandNS)
			if np := end - e.OffsetNS; np > e.NoPreemptNS {
				e.NoPreemptNS = np
				st.syscallStretches++
			}
		}
	}
	wl.Edges = edges
	wl.Index()
	if err := wl.Validate(); err != nil {
		return nil, fmt.Errorf("the rewritten workload: %w", err)
	}
	return st, nil
}
