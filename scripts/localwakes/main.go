// Command localwakes splits the wakeups a task got while another ran on
// the same CPU by who woke whom and how the wakee got that CPU, and counts
// how many waited under 0.2 and 0.4 ms; with -rank it also places the
// running task among the runnable tasks of its own group. It reads any
// timelines, a trace and a replay's output alike, so a replay's local
// wakeup preemptions can be set against the kernel's (FIDELITY.md round
// 60):
//
//	for f in fixtures/kernels/v6.12/*/r*/schbench.perf.data.gz; do
//	    replay whatif -i $f --seed 0 -o /tmp/$(echo $f | tr / _).arrow
//	done
//	go run ./scripts/localwakes -rank fixtures/kernels/v6.12/*/r*/schbench.perf.data.gz \
//	    vs /tmp/fixtures_kernels_v6.12_*schbench.perf.data.gz.arrow
//
// Files before "vs" add up in the first column, those after it in the
// second.
//
// A wakeup is local when its sched_waking ran on a CPU with a task
// switched in (the waker: that task, whether it or an interrupt it took
// woke the wakee) and the wakee was next switched in on that CPU; only a
// wakee's first waking before its switch-in counts. Its latency is from
// that waking to the switch-in. It is keyed by the waker's and the
// wakee's group (the comm, a kernel thread's per-CPU suffix after '/'
// dropped) and by the switched-out task's state: R (the wakee preempted
// it, or the switch was a tick's), S or D (it blocked), idle. -rank
// takes the local wakeups of a task that blocked at the switch to the
// task now running, by a waker of the wakee's group, and ranks the
// running task among the runnable tasks of that group on the CPU by when
// each last ran (0: the one that waited longest). -gap G splits the local
// wakeups whose waker and wakee both last recorded a vruntime
// (sched_stat_runtime) on that CPU by the waker's less the wakee's, below
// G or at and above it: under CFS a wakee at least the wakeup granularity
// behind its waker preempts it (2 ms on two CPUs), so the split shows
// whether a replay preempts more because its rule differs or because its
// gaps do (FIDELITY.md round 91).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

// fastNS are the latency bounds counted.
var fastNS = [2]int64{200000, 400000}

// class is one row: waker group > wakee group, the switched-out state.
type class struct{ waker, wakee, prev string }

// tally is a row's wakeups and those under each of fastNS.
type tally struct {
	n    [2]int    // per column
	fast [2][2]int // per bound of fastNS, per column
}

func (t *tally) add(col int, lat int64) {
	t.n[col]++
	for i, b := range fastNS {
		if lat < b {
			t.fast[i][col]++
		}
	}
}

type pending struct {
	at    int64
	cpu   int32
	waker string
	rank  int // -rank: the running task's rank (-2: not a blocked-then-woken wakeup)
	// gap: -gap's band (-1: not known): 0 the waker's vruntime less the
	// wakee's under the granularity, 1 at or above it.
	gap int
}

// vrec is a task's vruntime at its last sched_stat_runtime, and where.
type vrec struct {
	v   int64
	cpu int32
}

// gapKey is a -gap row: the band and the switched-out state.
type gapKey struct {
	band int
	prev string
}

// counter reads one timeline into the tallies of column col.
type counter struct {
	col     int
	classes map[class]*tally
	ranks   map[int]*tally
	perFile []fileRow

	curr     map[int32]int32  // CPU -> running pid (0 idle)
	comm     map[int32]string // pid -> comm
	lastOut  map[int32]int64  // pid -> last switch-out
	runnable map[int32]int32  // pid -> CPU it is runnable (preempted) on
	blocked  map[int32]int32  // CPU -> pid that blocked at its last switch (-1 none)
	currRank map[int32]int    // CPU -> rank of its running task among its group
	wake     map[int32]pending

	// -gap: the granularity (0: off), each task's last vruntime, and
	// the local wakeups by band and switched-out state.
	gran  int64
	lastV map[int32]vrec
	gaps  map[gapKey]*tally
}

// fileRow is one file's count of -per's class.
type fileRow struct {
	path    string
	col     int
	n, fast int
}

func group(comm string) string {
	if i := strings.IndexByte(comm, '/'); i > 0 {
		return comm[:i]
	}
	return comm
}

func newCounter() *counter {
	return &counter{classes: map[class]*tally{}, ranks: map[int]*tally{}, gaps: map[gapKey]*tally{}}
}

func (c *counter) reset(col int) {
	c.col = col
	c.curr, c.comm, c.lastOut = map[int32]int32{}, map[int32]string{}, map[int32]int64{}
	c.runnable, c.blocked, c.currRank = map[int32]int32{}, map[int32]int32{}, map[int32]int{}
	c.wake = map[int32]pending{}
	c.lastV = map[int32]vrec{}
}

// rankOf is next's rank among the runnable tasks of its group on cpu,
// by last switch-out (-1: it was not among them).
func (c *counter) rankOf(next int32, cpu int32) int {
	g := group(c.comm[next])
	var ws []int32
	for p, on := range c.runnable {
		if on == cpu && group(c.comm[p]) == g {
			ws = append(ws, p)
		}
	}
	sort.Slice(ws, func(a, b int) bool {
		if c.lastOut[ws[a]] != c.lastOut[ws[b]] {
			return c.lastOut[ws[a]] < c.lastOut[ws[b]]
		}
		return ws[a] < ws[b]
	})
	for k, p := range ws {
		if p == next {
			return k
		}
	}
	return -1
}

func (c *counter) event(e *timeline.Event, per class, fr *fileRow) {
	switch e.Kind {
	case timeline.SchedStatRuntime:
		if e.IsSet(timeline.Vruntime) && e.IsSet(timeline.CPU) {
			c.lastV[e.Int32(timeline.PID)] = vrec{e.Int(timeline.Vruntime), e.Int32(timeline.CPU)}
		}
	case timeline.SchedWaking:
		pid, cpu := e.Int32(timeline.PID), e.Int32(timeline.CPU)
		c.comm[pid] = e.Str(timeline.Comm)
		if _, ok := c.wake[pid]; ok {
			return
		}
		run := c.curr[cpu]
		if run == 0 {
			c.wake[pid] = pending{at: e.Time, cpu: -1}
			return
		}
		rk := -2
		if c.blocked[cpu] == pid && group(c.comm[run]) == group(c.comm[pid]) {
			rk = c.currRank[cpu]
		}
		gap := -1
		if wv, ok := c.lastV[run]; ok && c.gran > 0 && wv.cpu == cpu {
			if pv, ok := c.lastV[pid]; ok && pv.cpu == cpu {
				gap = 0
				if wv.v-pv.v >= c.gran {
					gap = 1
				}
			}
		}
		c.wake[pid] = pending{at: e.Time, cpu: cpu, waker: group(c.comm[run]), rank: rk, gap: gap}
	case timeline.SchedSwitch:
		cpu := e.Int32(timeline.CPU)
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		c.comm[prev], c.comm[next] = e.Str(timeline.PrevComm), e.Str(timeline.NextComm)
		st := e.Str(timeline.PrevState)
		if st == "R+" {
			st = "R"
		}
		if prev == 0 {
			st = "idle"
		}
		if prev != 0 {
			c.lastOut[prev] = e.Time
		}
		c.blocked[cpu] = -1
		switch {
		case st == "R":
			c.runnable[prev] = cpu
		case prev != 0:
			delete(c.runnable, prev)
			c.blocked[cpu] = prev
		}
		c.currRank[cpu] = c.rankOf(next, cpu)
		delete(c.runnable, next)
		c.curr[cpu] = next
		p, ok := c.wake[next]
		if !ok {
			return
		}
		delete(c.wake, next)
		if p.cpu != cpu || next == 0 {
			return
		}
		lat := e.Time - p.at
		k := class{p.waker, group(c.comm[next]), st}
		t := c.classes[k]
		if t == nil {
			t = &tally{}
			c.classes[k] = t
		}
		t.add(c.col, lat)
		if k == per {
			fr.n++
			if lat < fastNS[0] {
				fr.fast++
			}
		}
		if p.gap >= 0 {
			g := c.gaps[gapKey{p.gap, st}]
			if g == nil {
				g = &tally{}
				c.gaps[gapKey{p.gap, st}] = g
			}
			g.add(c.col, lat)
		}
		if p.rank >= -1 {
			r := c.ranks[p.rank]
			if r == nil {
				r = &tally{}
				c.ranks[p.rank] = r
			}
			r.add(c.col, lat)
		}
	}
}

func (c *counter) file(path string, col int, per class) error {
	c.reset(col)
	fr := fileRow{path: path, col: col}
	if err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		c.event(e, per, &fr)
		return nil
	}); err != nil {
		return err
	}
	c.perFile = append(c.perFile, fr)
	return nil
}

func (c *counter) print(w io.Writer, cols int, rank, per bool) {
	ks := make([]class, 0, len(c.classes))
	for k := range c.classes {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.waker != b.waker {
			return a.waker < b.waker
		}
		if a.wakee != b.wakee {
			return a.wakee < b.wakee
		}
		return a.prev < b.prev
	})
	cell := func(t *tally, col int) string {
		return fmt.Sprintf("%5d %5d %5d", t.n[col], t.fast[0][col], t.fast[1][col])
	}
	head := "wakeups <0.2ms <0.4ms"
	fmt.Fprintf(w, "%-50s %s", "waker > wakee, switched out", head)
	if cols > 1 {
		fmt.Fprintf(w, " | %s", head)
	}
	fmt.Fprintln(w)
	for _, k := range ks {
		t := c.classes[k]
		fmt.Fprintf(w, "%-50s %s", k.waker+" > "+k.wakee+", "+k.prev, cell(t, 0))
		if cols > 1 {
			fmt.Fprintf(w, " | %s", cell(t, 1))
		}
		fmt.Fprintln(w)
	}
	if rank {
		fmt.Fprintln(w, "rank of the running task (same group) at a blocked task's local wakeup:")
		var rs []int
		for k := range c.ranks {
			rs = append(rs, k)
		}
		sort.Ints(rs)
		for _, k := range rs {
			t := c.ranks[k]
			fmt.Fprintf(w, "  rank %2d %s", k, cell(t, 0))
			if cols > 1 {
				fmt.Fprintf(w, " | %s", cell(t, 1))
			}
			fmt.Fprintln(w)
		}
	}
	if c.gran > 0 {
		fmt.Fprintf(w, "by the waker's vruntime less the wakee's (their last sched_stat_runtime on that CPU), against %d ns:\n", c.gran)
		var gs []gapKey
		for k := range c.gaps {
			gs = append(gs, k)
		}
		sort.Slice(gs, func(i, j int) bool {
			if gs[i].band != gs[j].band {
				return gs[i].band < gs[j].band
			}
			return gs[i].prev < gs[j].prev
		})
		for _, k := range gs {
			band := "below"
			if k.band == 1 {
				band = "at or above"
			}
			fmt.Fprintf(w, "  %-11s switched out %-4s %s", band, k.prev, cell(c.gaps[k], 0))
			if cols > 1 {
				fmt.Fprintf(w, " | %s", cell(c.gaps[k], 1))
			}
			fmt.Fprintln(w)
		}
	}
	if per {
		for _, f := range c.perFile {
			fmt.Fprintf(w, "%d %s: %d of %d under 0.2 ms\n", f.col, f.path, f.fast, f.n)
		}
	}
}

func main() {
	rank := flag.Bool("rank", false, "also rank the running task at a blocked task's local wakeup")
	per := flag.String("per", "", "also print each file's count of this class, as WAKER>WAKEE:STATE (e.g. schbench-worker>schbench-worker:R)")
	gran := flag.Duration("gap", 0, "also split the local wakeups whose waker and wakee both last recorded a vruntime (sched_stat_runtime) on that CPU by the waker's less the wakee's, below or at and above this (CFS's wakeup granularity: 2ms on two CPUs; FIDELITY.md round 91)")
	args := scriptutil.ParseArgs("usage: localwakes [-rank] [-per WAKER>WAKEE:STATE] [-gap DURATION] FILE... [vs FILE...]", false)
	var pc class
	if *per != "" {
		ws, st, ok1 := strings.Cut(*per, ":")
		a, b, ok2 := strings.Cut(ws, ">")
		if !ok1 || !ok2 {
			fmt.Fprintln(os.Stderr, "localwakes: -per wants WAKER>WAKEE:STATE")
			os.Exit(2)
		}
		pc = class{a, b, st}
	}
	c := newCounter()
	c.gran = int64(*gran)
	cols, err := scriptutil.ForEachFile(args, 2, func(col int, p string) error { return c.file(p, col, pc) })
	if err != nil {
		fmt.Fprintln(os.Stderr, "localwakes:", err)
		os.Exit(1)
	}
	c.print(os.Stdout, cols, *rank, *per != "")
}
