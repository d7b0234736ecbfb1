package whatif

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// The telling placements of hand-built traces, scored by hand. Two cores
// in one LLC (sd_llc_size 2). W (10) runs on CPU 0, X (20) on CPU 1, P
// (30) last ran on CPU 1; all three and T1..T4 (41..44) are alive at the
// start, so each begins with the candidate count N. W wakes T1..T4 (onto
// CPU 1), then P. At P's wakeup W has (N >> 1) + 5 flips (its first
// record_wakee halves the start count, two seconds in; five distinct
// wakees) and P has N, so wake_wide (slave >= 2, master >= 2 slave) is
// true for N = 2 (6 against 2) and N = 3 (6 against 3) only. W leaving its
// CPU 100 µs later makes the wakeup WF_SYNC, so P staying on busy CPU 1
// is explained by N = 2 and 3, and P pulled to CPU 0 by every other N.
func TestFlipFitByHand(t *testing.T) {
	const b = 2000 * ms
	start := []timeline.Event{
		nSwitch(b, 0, 0, "R", 10), nSwitch(b, 1, 0, "R", 30), nSwitch(b+ms, 1, 30, "S", 20),
	}
	for i := int32(1); i <= 4; i++ {
		start = append(start, nWaking(b+2*ms+int64(i)*10000, 0, 10, 40+i, 1))
	}
	wakeP := nWaking(b+3*ms, 0, 10, 30, 1)
	stayed := []int{0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	pulled := []int{1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1}
	none := make([]int, nFlipCandidates)
	for _, c := range []struct {
		name string
		evs  []timeline.Event
		want []int
	}{
		{"stays on its busy previous CPU", []timeline.Event{wakeP, nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, stayed},
		{"pulled to the waker's CPU", []timeline.Event{wakeP, nRuntime(b+3*ms+5000, 0, 10, 1), nMigrate(b+3*ms+10000, 0, 30, 1, 0), nSwitch(b+3*ms+100000, 0, 10, "S", 30)}, pulled},
		{"the waker stays on its CPU too long: not WF_SYNC", []timeline.Event{wakeP, nSwitch(b+3*ms+300000, 0, 10, "S", 0)}, none},
		{"the waker preempted within the window: WF_SYNC's evidence too", []timeline.Event{wakeP, nSwitch(b+3*ms+50000, 0, 10, "R", 50), nSwitch(b+3*ms+100000, 0, 50, "S", 10)}, stayed},
		{"an interrupt's wakeup", []timeline.Event{withFlags(wakeP, hardirq), nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, none},
		{"the waker not alone on its CPU", []timeline.Event{nSwitch(b+2500000, 0, 10, "R", 10), nWaking(b+2600000, 0, 10, 60, 0),
			wakeP, nSwitch(b+3*ms+100000, 0, 10, "S", 60)}, none},
		{"moved elsewhere: says nothing", []timeline.Event{wakeP, nMigrate(b+3*ms+10000, 0, 30, 1, 2), nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, none},
		{"lost records forget the pending placement", []timeline.Event{wakeP, {Kind: timeline.Lost}, nSwitch(b+3*ms+100000, 0, 10, "S", 0)}, none},
	} {
		topo, err := model.ParseSpec("sockets=1,cores=2,threads=1")
		if err != nil {
			t.Fatal(err)
		}
		f := newFlipFit(topo, "6.1.0")
		for _, e := range append(append([]timeline.Event{}, start...), c.evs...) {
			f.observe(&e)
		}
		if got := f.score[:]; fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: scores %v, want %v (candidates %v)", c.name, got, c.want, flipCandidates)
		}
	}
}

// A fork copies the parent's counts (dup_task_struct), for every
// candidate.
func TestFlipFitForkInherits(t *testing.T) {
	topo, _ := model.ParseSpec("sockets=1,cores=2,threads=1")
	f := newFlipFit(topo, "6.1.0")
	const b = 2000 * ms
	for _, e := range []timeline.Event{nSwitch(b, 0, 0, "R", 10), nWaking(b+ms, 0, 10, 41, 1), nFork(b+2*ms, 0, 10, 50)} {
		f.observe(&e)
	}
	want := [nFlipCandidates]uint32{}
	for k, n := range flipCandidates {
		want[k] = n>>1 + 1
	}
	if f.tasks[10].flips != want || f.tasks[50].flips != want {
		t.Errorf("parent %v, child %v; want both %v", f.tasks[10].flips, f.tasks[50].flips, want)
	}
}

func nFork(t int64, cpu, parent, child int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedProcessFork, "sched:sched_process_fork"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.ParentPID, int64(parent))
	e.SetInt(timeline.ChildPID, int64(child))
	return e
}

// The choice: the smallest candidate with the best score, when it
// explains at least max(5, a tenth of the placements) more than 0 does.
func TestFlipFitResult(t *testing.T) {
	for _, c := range []struct {
		n     int
		score [nFlipCandidates]int
		want  FlipFit
	}{
		{13, [nFlipCandidates]int{1, 1, 13, 13, 13, 13, 13, 13, 13, 13, 13}, FlipFit{WakeeFlips: 2, Placements: 13, Explained: 13, ExplainedAt0: 1}},
		{9, [nFlipCandidates]int{0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9}, FlipFit{WakeeFlips: 0, Placements: 9, Explained: 0, ExplainedAt0: 0}},
		{165, [nFlipCandidates]int{149, 149, 149, 149, 149, 149, 149, 149, 164, 161, 154}, FlipFit{WakeeFlips: 0, Placements: 165, Explained: 149, ExplainedAt0: 149}},
		{231, [nFlipCandidates]int{178, 178, 178, 178, 178, 178, 178, 179, 225, 215, 196}, FlipFit{WakeeFlips: 16, Placements: 231, Explained: 225, ExplainedAt0: 178}},
		{132, [nFlipCandidates]int{113, 113, 113, 113, 113, 113, 113, 113, 25, 49, 114}, FlipFit{WakeeFlips: 0, Placements: 132, Explained: 113, ExplainedAt0: 113}},
	} {
		f := &flipFit{n: c.n, score: c.score}
		if got := f.result(); got != c.want {
			t.Errorf("%d placements, scores %v: %+v, want %+v", c.n, c.score, got, c.want)
		}
	}
	// With wake_affine_weight's telling pulls (the shadow's) the scores
	// add, and a count within a hundredth of the placements of the best
	// is as good: the smallest is taken. Guest-M's committed hackbench:
	// 13 waker-alone placements and 291 pulls, 13 + 290 explained by 2
	// against 13 + 291 by 4 to 16 (tolerance 304 / 100 = 3): 2. Guest-P's
	// second boot: 2 and 698, 691 by 2, 696 at best (tolerance 7): 2. Nine
	// placements in all say nothing: 0.
	for _, c := range []struct {
		n, telling    int
		score, called [nFlipCandidates]int
		want          FlipFit
	}{
		{13, 291, [nFlipCandidates]int{1, 1, 13, 13, 13, 13, 13, 13, 13, 13, 13}, [nFlipCandidates]int{12, 12, 290, 290, 291, 291, 291, 291, 291, 289, 284},
			FlipFit{WakeeFlips: 2, Placements: 13, Explained: 13, ExplainedAt0: 1, WeightPlacements: 291, WeightExplained: 290, WeightExplainedAt0: 12}},
		{2, 698, [nFlipCandidates]int{0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2}, [nFlipCandidates]int{15, 15, 689, 689, 690, 692, 692, 694, 694, 694, 694},
			FlipFit{WakeeFlips: 2, Placements: 2, Explained: 2, ExplainedAt0: 0, WeightPlacements: 698, WeightExplained: 689, WeightExplainedAt0: 15}},
		{4, 5, [nFlipCandidates]int{0, 0, 4, 4, 4, 4, 4, 4, 4, 4, 4}, [nFlipCandidates]int{0, 0, 5, 5, 5, 5, 5, 5, 5, 5, 5},
			FlipFit{Placements: 4, WeightPlacements: 5}},
		// The weight evidence can outvote the waker-alone placements.
		{75, 897, [nFlipCandidates]int{64, 64, 40, 40, 36, 32, 32, 30, 28, 26, 20}, [nFlipCandidates]int{243, 243, 586, 586, 600, 700, 725, 725, 725, 720, 700},
			FlipFit{WakeeFlips: 8, Placements: 75, Explained: 32, ExplainedAt0: 64, WeightPlacements: 897, WeightExplained: 725, WeightExplainedAt0: 243}},
	} {
		sh := newWakeShadow(WakeShadowOptions{HZ: fitHZ})
		sh.res.Telling, sh.res.Called = c.telling, c.called
		f := &flipFit{n: c.n, score: c.score, shadow: sh}
		if got := f.result(); got != c.want {
			t.Errorf("%d placements and %d pulls: %+v, want %+v", c.n, c.telling, got, c.want)
		}
	}
	var nilFit *flipFit
	if got := nilFit.result(); got != (FlipFit{}) {
		t.Errorf("no fit (no topology): %+v", got)
	}
}

// The committed recordings' choices. A throw-away reader of `perf script`
// (its own record_wakee replay, without common_flags, so interrupt
// wakeups counted as their task's) chose the same: guest-A's hackbench 16
// (88 of its 89 telling placements, 45 at 0), guest-M's 2 (15 of 15, 3 at
// 0); guest-A's schbench has telling placements that no start count
// explains well (futex wakeups, not WF_SYNC: no clear choice, so 0).
func TestFlipFitFixtures(t *testing.T) {
	for _, c := range []struct {
		path string
		want uint32
	}{
		{"../fixtures/kernels/guest-A-2s2c2t-2numa/hackbench.perf.data", 16},
		{"../fixtures/kernels/guest-M-1s1c2t/hackbench.perf.data", 2},
		{"../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data", 0},
	} {
		w, _ := extractFixture(t, c.path)
		if w.Flips.WakeeFlips != c.want || w.Flips.Placements < minFlipPlacements {
			t.Errorf("%s: %+v, want wakee_flips %d from at least %d telling placements", c.path, w.Flips, c.want, minFlipPlacements)
		}
	}
}

// BenchmarkFlipFit measures the start wakee_flips fit alone (the
// placements' record_wakee replay and the wake shadow's PELT beside it),
// in trace events per second on one core, over the largest real
// fixture's events held in memory, on its own machine's domains;
// "placements" leaves the shadow out, to show what it costs.
func BenchmarkFlipFit(b *testing.B) {
	path := largestFixture(b)
	r, err := ingest.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	dom := tracedDomains(r.Meta().Topology, r.Meta().Source.OSRelease)
	r.Close()
	if dom == nil {
		b.Skip(path, ": no topology")
	}
	evs := largestFixtureEvents(b)
	for _, c := range []struct {
		name   string
		shadow bool
	}{{"placements+shadow", true}, {"placements", false}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f := flipFitOn(dom)
				if !c.shadow {
					f.shadow = nil
				}
				for j := range evs {
					f.observe(&evs[j])
				}
				f.result()
			}
			b.ReportMetric(float64(b.N)*float64(len(evs))/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// The fit gives the replay the kernel's choices. Guest-P's second
// hackbench boot: the kernel kept 1,859 of the 1,889 sleeping wakees
// whose previous CPU was the other one (98 %: perf script's records,
// scripts/wakechoice/check.py; TestWakeChoicesOnFixtures' reading), its
// wake_wide from the flips hackbench's children inherit. The fit starts
// the replay's tasks at 2 (694 of 698 telling pulls and 2 of 2 waker-alone
// placements explained, 15 and 0 at 0), and the replay (seed 0) keeps
// 99 % when measured (each of seeds 0–4); started at 0 it keeps 56 %
// (the median of seeds 0–4, 55–82 %; 59 % before the interrupts' own
// local delays, FIDELITY.md rounds 90 and 144).
func TestFlipFitGivesTheKernelsChoices(t *testing.T) {
	const path = "../fixtures/kernels/repeats/guest-P-1s2c1t/r2/hackbench.perf.data.gz"
	w, obs := extractFixture(t, path)
	if c := obs.WakeChoices; c == nil || c.Kept != 1859 || c.Pulled != 30 {
		t.Fatalf("the trace's choices %+v, want kept 1859, pulled 30", c)
	}
	if fl := w.Flips; fl.WakeeFlips != 2 || fl.WeightPlacements < 600 || fl.WeightExplained*100 < fl.WeightPlacements*98 || fl.WeightExplainedAt0*10 > fl.WeightPlacements {
		t.Errorf("fit %+v, want 2 explaining at least 98 %% of 600 or more telling pulls, at most a tenth from 0", fl)
	}
	keptShare := func(flips int64, seed uint64) float64 {
		cfg := DefaultConfig(mustPolicy(t, "v6.1"))
		cfg.WakeeFlips, cfg.Seed = flips, seed
		m := NewMeasurer(nil, 2)
		if _, err := Replay(w, cfg, m); err != nil {
			t.Fatal(err)
		}
		mt, _, err := m.Finish()
		if err != nil {
			t.Fatal(err)
		}
		c := mt.WakeChoices
		if c == nil || c.Kept+c.Pulled < 300 {
			t.Fatalf("wakee_flips %d: replay's choices %+v", flips, c)
		}
		return float64(c.Kept) / float64(c.Kept+c.Pulled+c.Elsewhere)
	}
	fitted, zero := 1.0, make([]float64, 5)
	for seed := range uint64(5) {
		fitted = min(fitted, keptShare(-1, seed))
		zero[seed] = keptShare(0, seed)
	}
	slices.Sort(zero)
	t.Logf("kept: fitted at least %.3f, from 0 %.3f (median)", fitted, zero[2])
	if fitted < 0.95 || zero[2] > 0.75 {
		t.Errorf("the replay kept at least %.0f %% with the fit, %.0f %% from 0 (median of seeds 0–4); want at least 95 %% and at most 75 %%", 100*fitted, 100*zero[2])
	}
}

// A workload file keeps the fit's evidence: seven integers with the
// wake_affine_weight pulls, the four of files written before them
// without (both read back as written).
func TestFlipFitSaved(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/guest-M-1s1c2t/hackbench.perf.data")
	if w.Flips.WeightPlacements == 0 {
		t.Fatalf("fit %+v: no weight evidence", w.Flips)
	}
	for _, fl := range []FlipFit{w.Flips, {WakeeFlips: 16, Placements: 85, Explained: 84, ExplainedAt0: 42}} {
		w.Flips = fl
		path := filepath.Join(t.TempDir(), "w.arrow")
		if err := SaveWorkload(path, w); err != nil {
			t.Fatal(err)
		}
		w2, err := LoadWorkload(path)
		if err != nil {
			t.Fatal(err)
		}
		if w2.Flips != fl {
			t.Errorf("saved %+v, read back %+v", fl, w2.Flips)
		}
	}
}

// syncDenied's threshold by hand: a wakee that stayed on its busy
// previous CPU where wake_wide() was false at the chosen count at least
// syncPullsMin times, and more than once per syncAgainstRatio of its
// pulls, is woken without WF_SYNC.
func TestSyncDenied(t *testing.T) {
	stayed := func(n int) (s [nFlipCandidates]int) {
		for k := range s {
			s[k] = n
		}
		s[4] = 0 // at a start count of 4 every stay is wake_wide's
		return s
	}
	f := &flipFit{wakees: map[int32]*fitWakee{
		1: {pulled: 20, stayed: stayed(5)},   // 50 > 20: denied
		2: {pulled: 20, stayed: stayed(4)},   // fewer than syncPullsMin
		3: {pulled: 60, stayed: stayed(6)},   // 60 <= 60: pulls outweigh
		4: {pulled: 0, stayed: stayed(30)},   // never pulled
		5: {pulled: 100, stayed: stayed(11)}, // 110 > 100
	}}
	for _, c := range []struct {
		pid   int32
		flips uint32
		want  bool
	}{
		{1, 0, true}, {2, 0, false}, {3, 0, false}, {4, 0, true}, {5, 16, true},
		{1, 4, false}, // explained by wake_wide at that count
		{1, 5, false}, // not a candidate count: no evidence
		{9, 0, false}, // no telling placement
	} {
		if got := f.syncDenied(c.pid, c.flips); got != c.want {
			t.Errorf("wakee %d at %d flips: denied %v, want %v", c.pid, c.flips, got, c.want)
		}
	}
	var nilFit *flipFit
	if nilFit.syncDenied(1, 0) {
		t.Error("no fit (no topology) denies WF_SYNC")
	}
}

// On real recordings the denial follows the kernel's wake paths: a futex
// wake never sets WF_SYNC, a socket's does. schbench's message threads are
// woken by futex from workers that block at once after it, which the
// 50 µs rule took as WF_SYNC on two of the guest-B recordings with the
// timer events (before round 100: 304 and 118 of their wake edges); now
// none is. hackbench's tasks talk through sockets: guest-A's committed
// recording keeps its 315 sync edges, as before (their stays on a busy
// previous CPU are wake_wide's).
func TestSyncDeniedOnFixtures(t *testing.T) {
	for _, c := range []struct {
		file string
		comm string
		want int // sync edges to comm's tasks ("": to any)
	}{
		{"idle-tick/guest-B-1s4c2t/schbench/schbench-1.perf.data.gz", "schbench-msg", 0},
		{"idle-tick/guest-B-1s4c2t/schbench/schbench-2.perf.data.gz", "schbench-msg", 0},
		{"guest-A-2s2c2t-2numa/hackbench.perf.data", "", 315},
	} {
		w, _ := extractFixture(t, filepath.Join("..", "fixtures", "kernels", c.file))
		n := 0
		for _, e := range w.Edges {
			if e.Sync && (c.comm == "" || w.Tasks[e.Wakee].Comm == c.comm) {
				n++
			}
		}
		if n != c.want {
			t.Errorf("%s: %d sync wake edges to %q, want %d", c.file, n, c.comm, c.want)
		}
	}
}
