// Command stallwakes sets a timeline's wakeups onto another, busy CPU
// against that CPU's host stalls: how many land while the target vCPU is
// stalled, how much of those wakees' waits the stalls take, and how many
// vCPUs are stalled at once while all are busy. It reads any timelines, a
// trace and a replay's output alike, so the replay's stalls (which travel
// with each task's demand, hoststall.go) can be set against the host's
// (FIDELITY.md round 93):
//
//	replay whatif -i fixtures/kernels/repeats/guest-D-1s8c1t/r2/hackbench.perf.data.gz --seed 0 -o /tmp/d2.arrow
//	go run ./scripts/stallwakes fixtures/kernels/repeats/guest-D-1s8c1t/r2/hackbench.perf.data.gz vs /tmp/d2.arrow
//
// Files before "vs" add up in the first column, those after it in the
// second.
//
// A stall is an event-free stretch longer than -gap on a CPU running a
// task: a busy CPU records its tick's update_curr every tick period, so a
// longer silence is the host not running that vCPU (the lower bound
// hoststall.go keeps is the same stretch less the time to its first missed
// tick). A wakeup is remote when its sched_waking ran on another CPU than
// the one the wakee is placed on (target_cpu, or the sched_migrate_task of
// it that is the waking CPU's next record, the rule analysis/wakechoice.go
// reads choices by) and that CPU was running a task; it lands in a stall
// when the stretch of the target's silence around the waking is one. Its
// wait runs to the wakee's next switch-in there. A landing also sets the
// stall's rest after the waking against its part before: a waking at a
// random point of the stall has either shorter as often, so a share of
// shorter rests above half says the stalls ended sooner after remote
// wakeups than chance has it. And the stalls that end just after another
// CPU switched to idle are counted against those with such a switch just
// before their midpoint: the host handing the idle vCPU's core to a
// stalled one shows as the first above the second (FIDELITY.md round
// 102).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

// tally is one column's sums.
type tally struct {
	remote, inStall int64 // remote wakeups onto busy CPUs; landed in a stall
	// restNS: for each landing, the rest of its stall after the waking;
	// restShorter: the landings whose rest is shorter than the stall's
	// part before the waking. A waking that falls at a random point of a
	// stall has as much before it as after (half of them shorter), so a
	// share above half says the stall ended sooner after a remote wakeup
	// than chance: on schbench's traces it does, on hackbench's not
	// (FIDELITY.md round 102).
	restNS          []int64
	restShorter     int64
	waited          int64 // those wakeups whose wakee ran next there
	waitNS, stallNS int64 // their waits, and the part inside the target's stalls
	busyNS, busyIn  int64 // busy CPU time, and the part inside stalls
	// stalledAt[k]: time with every CPU busy and k of them stalled.
	stalledAt []int64
	// stalls: the stalls; endAfterIdle: those that ended within
	// handoffWindowNS after another CPU switched to idle; midAfterIdle:
	// those with such a switch within handoffWindowNS before their
	// midpoint, the share chance gives. A vCPU going idle frees its host
	// core for a stalled one: on schbench's traces a quarter of the
	// stalls end so against a twentieth by chance (FIDELITY.md round 102).
	stalls, endAfterIdle, midAfterIdle int64
}

// handoffWindowNS: a stall ending this soon after another CPU switched to
// idle ended with it (the host ran the stalled vCPU on the core the idle
// one left).
const handoffWindowNS = 300000

func (t *tally) add(o *tally) {
	t.remote += o.remote
	t.inStall += o.inStall
	t.restNS = append(t.restNS, o.restNS...)
	t.restShorter += o.restShorter
	t.waited += o.waited
	t.waitNS += o.waitNS
	t.stallNS += o.stallNS
	t.busyNS += o.busyNS
	t.busyIn += o.busyIn
	for len(t.stalledAt) < len(o.stalledAt) {
		t.stalledAt = append(t.stalledAt, 0)
	}
	for k, v := range o.stalledAt {
		t.stalledAt[k] += v
	}
	t.stalls += o.stalls
	t.endAfterIdle += o.endAfterIdle
	t.midAfterIdle += o.midAfterIdle
}

// ev is the part of an event the measure reads.
type ev struct {
	t      int64
	cpu    int32
	kind   timeline.Kind
	pid    int32 // waking, migrate: the task; switch: next
	target int32 // waking: target_cpu; migrate: dest_cpu
}

// span is a stretch [a, b) of a CPU.
type span struct{ a, b int64 }

// timelineOf reads the events the measure needs, in time order; a record
// without a CPU the model can hold is skipped, not allocated for.
func timelineOf(path string) ([]ev, error) {
	var out []ev
	err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		cpu, ok := scriptutil.CPUOf(e)
		if !ok {
			return nil
		}
		x := ev{t: e.Time, cpu: cpu, kind: e.Kind}
		switch e.Kind {
		case timeline.SchedWaking:
			x.pid, x.target = e.Int32(timeline.PID), e.Int32(timeline.TargetCPU)
		case timeline.SchedMigrateTask:
			x.pid, x.target = e.Int32(timeline.PID), e.Int32(timeline.DestCPU)
		case timeline.SchedSwitch:
			x.pid = e.Int32(timeline.NextPID)
		}
		out = append(out, x)
		return nil
	})
	return out, err
}

// measure is one timeline's tally under stall threshold gap.
func measure(evs []ev, gap int64) *tally {
	ncpu := int32(0)
	for _, e := range evs {
		ncpu = max(ncpu, e.cpu+1)
	}
	// Each CPU's stalls: silences longer than gap while it ran a task.
	stalls := make([][]span, ncpu)
	last := make([]int64, ncpu)
	seen := make([]bool, ncpu)
	running := make([]int32, ncpu)
	busySince := make([]int64, ncpu)
	tl := &tally{stalledAt: make([]int64, ncpu+1)}
	for _, e := range evs {
		c := e.cpu
		if seen[c] && running[c] != 0 && e.t-last[c] > gap {
			stalls[c] = append(stalls[c], span{last[c], e.t})
			tl.busyIn += e.t - last[c]
		}
		if e.kind == timeline.SchedSwitch {
			if seen[c] && running[c] != 0 {
				tl.busyNS += e.t - busySince[c]
			}
			running[c] = e.pid
			busySince[c] = e.t
		}
		last[c], seen[c] = e.t, true
	}
	// stallAt is the stall of CPU c that time t falls in, if any.
	stallAt := func(c int32, t int64) (span, bool) {
		s := stalls[c]
		i := sort.Search(len(s), func(i int) bool { return s[i].b > t })
		if i < len(s) && s[i].a <= t {
			return s[i], true
		}
		return span{}, false
	}
	stallOverlap := func(c int32, a, b int64) int64 {
		s := stalls[c]
		var n int64
		for i := sort.Search(len(s), func(i int) bool { return s[i].b > a }); i < len(s) && s[i].a < b; i++ {
			n += min(b, s[i].b) - max(a, s[i].a)
		}
		return n
	}

	// The remote wakeups onto busy CPUs, counted at the waking on the
	// state then, and their waits.
	type pend struct {
		at int64
		on int32
	}
	clear(running)
	prevOn, nextOn := scriptutil.Neighbours(len(evs), func(i int) int32 { return evs[i].cpu })
	moveOf := func(j int) (int32, int32, bool) {
		return evs[j].pid, evs[j].target, evs[j].kind == timeline.SchedMigrateTask
	}
	waits := map[int32]pend{}
	for i, e := range evs {
		switch e.kind {
		case timeline.SchedSwitch:
			running[e.cpu] = e.pid
			p, ok := waits[e.pid]
			if !ok {
				break
			}
			delete(waits, e.pid)
			if p.on != e.cpu {
				break
			}
			tl.waited++
			tl.waitNS += e.t - p.at
			tl.stallNS += stallOverlap(e.cpu, p.at, e.t)
		case timeline.SchedWaking:
			if _, ok := waits[e.pid]; ok {
				break
			}
			on := scriptutil.Placement(i, nextOn, e.pid, e.target, moveOf)
			if on < 0 || on >= ncpu || on == e.cpu || running[on] == 0 {
				break
			}
			tl.remote++
			if st, ok := stallAt(on, e.t); ok {
				tl.inStall++
				tl.restNS = append(tl.restNS, st.b-e.t)
				if st.b-e.t < e.t-st.a {
					tl.restShorter++
				}
			}
			waits[e.pid] = pend{e.t, on}
		case timeline.SchedMigrateTask:
			// Moved before it ran (a balancer's pull): its wait is not
			// the target's.
			if _, ok := waits[e.pid]; ok {
				if !placedBy(evs, prevOn, i) {
					delete(waits, e.pid)
				}
			}
		}
	}

	// The stalls against the other CPUs' switches to idle.
	var toIdle []ev
	for _, e := range evs {
		if e.kind == timeline.SchedSwitch && e.pid == 0 {
			toIdle = append(toIdle, e)
		}
	}
	// idleBefore: a CPU switched to idle in [t - handoffWindowNS, t); not
	// the stalled one, whose first record after the stall ends it.
	idleBefore := func(t int64) bool {
		i := sort.Search(len(toIdle), func(i int) bool { return toIdle[i].t >= t-handoffWindowNS })
		return i < len(toIdle) && toIdle[i].t < t
	}
	for _, s := range stalls {
		for _, x := range s {
			tl.stalls++
			if idleBefore(x.b) {
				tl.endAfterIdle++
			}
			if idleBefore(x.a + (x.b-x.a)/2) {
				tl.midAfterIdle++
			}
		}
	}

	// Time with every CPU busy, by how many are stalled: a sweep over
	// the switches and the stalls' edges.
	type edge struct {
		t         int64
		busy, stl int
	}
	var edges []edge
	clear(running)
	clear(seen)
	for _, e := range evs {
		if e.kind != timeline.SchedSwitch {
			continue
		}
		was := seen[e.cpu] && running[e.cpu] != 0
		now := e.pid != 0
		seen[e.cpu] = true
		running[e.cpu] = e.pid
		switch {
		case was && !now:
			edges = append(edges, edge{e.t, -1, 0})
		case !was && now:
			edges = append(edges, edge{e.t, 1, 0})
		}
	}
	for _, s := range stalls {
		for _, x := range s {
			edges = append(edges, edge{x.a, 0, 1}, edge{x.b, 0, -1})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool { return edges[i].t < edges[j].t })
	busy, stl := 0, 0
	for i, x := range edges {
		if i > 0 && busy == int(ncpu) && stl >= 0 && stl <= int(ncpu) {
			tl.stalledAt[stl] += x.t - edges[i-1].t
		}
		busy += x.busy
		stl += x.stl
	}
	return tl
}

// placedBy: the migrate evs[i] is the placement of its task's waking
// (scriptutil.Placement's rule, looked at from the migrate). prev[i] is the index
// of CPU evs[i].cpu's previous event, -1 none.
func placedBy(evs []ev, prev []int, i int) bool {
	j := prev[i]
	return j >= 0 && evs[j].kind == timeline.SchedWaking && evs[j].pid == evs[i].pid
}

// medianMS is the median of v in milliseconds ("-" for none); the upper
// one of an even count.
func medianMS(v []int64) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.2f", float64(s[len(s)/2])/1e6)
}

func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
}

func print(w io.Writer, cols []*tally, gap time.Duration) {
	row := func(name string, f func(t *tally) string) {
		fmt.Fprintf(w, "%-62s", name)
		for _, t := range cols {
			fmt.Fprintf(w, " %16s", f(t))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "stalls: a busy CPU's event-free stretches over %v\n", gap)
	row("busy CPU time in stalls", func(t *tally) string { return pct(t.busyIn, t.busyNS) })
	row("wakeups onto another busy CPU", func(t *tally) string { return fmt.Sprint(t.remote) })
	row("  landing while it was stalled", func(t *tally) string { return fmt.Sprintf("%d (%s)", t.inStall, pct(t.inStall, t.remote)) })
	row("    the stall's rest after it shorter than its part before", func(t *tally) string { return fmt.Sprintf("%d (%s)", t.restShorter, pct(t.restShorter, t.inStall)) })
	row("    the stall's rest after it, median (ms)", func(t *tally) string { return medianMS(t.restNS) })
	row("  run next there: their waits (ms)", func(t *tally) string { return fmt.Sprintf("%d: %.0f", t.waited, float64(t.waitNS)/1e6) })
	row("  of which in the target's stalls", func(t *tally) string {
		return fmt.Sprintf("%.0f (%s)", float64(t.stallNS)/1e6, pct(t.stallNS, t.waitNS))
	})
	row("stalls ending within 0.3 ms after another CPU went idle", func(t *tally) string {
		return fmt.Sprintf("%d (%s)", t.endAfterIdle, pct(t.endAfterIdle, t.stalls))
	})
	row("  at their midpoint instead (chance)", func(t *tally) string {
		return fmt.Sprintf("%d (%s)", t.midAfterIdle, pct(t.midAfterIdle, t.stalls))
	})
	n := 0
	for _, t := range cols {
		n = max(n, len(t.stalledAt))
	}
	fmt.Fprintln(w, "every CPU busy: share of that time with k CPUs stalled")
	for k := range n {
		row(fmt.Sprintf("  k = %d", k), func(t *tally) string {
			var all int64
			for _, v := range t.stalledAt {
				all += v
			}
			if k >= len(t.stalledAt) {
				return "-"
			}
			return pct(t.stalledAt[k], all)
		})
	}
}

func main() {
	gap := flag.Duration("gap", 5*time.Millisecond, "a busy CPU's event-free stretch longer than this is a host stall (over one tick period: 4 ms at HZ 250)")
	args := scriptutil.ParseArgs("usage: stallwakes [-gap DURATION] FILE... [vs FILE...]", false)
	cols, err := scriptutil.Columns(args, func() *tally { return &tally{} }, func(c *tally, p string) error {
		evs, err := timelineOf(p)
		if err != nil {
			return err
		}
		c.add(measure(evs, int64(*gap)))
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "stallwakes:", err)
		os.Exit(1)
	}
	print(os.Stdout, cols, *gap)
}
