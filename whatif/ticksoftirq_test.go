package whatif

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

const softirq = 0x11 // IRQS_OFF | SOFTIRQ: a waking from the tick's softirq

func nSoftWaking(t int64, cpu, waker, wakee, target int32, flags int64) timeline.Event {
	e := nWaking(t, cpu, waker, wakee, target)
	e.SetInt(timeline.CommonFlags, flags)
	return e
}

// Which arrivals the extractor takes as the tick's softirq's, by hand (HZ
// 250, T = 4 ms, window T/4 = 1 ms). Task 10 runs on CPU 0 from 1 ms with
// its ticks recorded at 4, 8, …, 100 ms (25 records: the grid's phase is
// 0); kernel thread 20 sleeps on CPU 1, which is otherwise idle, and is
// woken six times, each run 0.1 ms:
//   - 8.15 ms on CPU 0 in softirq, 0.15 ms after CPU 0's tick record: yes;
//   - 14.5 ms on CPU 0 in softirq, 2.5 ms after the tick at 12: no (some
//     other softirq);
//   - 20.1 ms on CPU 0 in hard IRQ (an hrtimer): no;
//   - 24.3 ms on idle CPU 1 in softirq, 0.3 ms after the grid: yes;
//   - 30 ms on idle CPU 1 in softirq, 2 ms off the grid: no;
//   - 40.9 ms on CPU 0 in softirq, 0.9 ms after the tick record: yes;
//   - 48.6 ms on CPU 0 in softirq by ksoftirqd/0 (17), switched in at
//     48.5 (after the 48 ms tick, whose record it follows): no, the
//     softirq was deferred past the tick's reschedule.
func TestTickSoftIRQExtract(t *testing.T) {
	evs := []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 20, "S", 0),
	}
	for at := int64(4 * ms); at <= 100*ms; at += 4 * ms {
		evs = append(evs, nRuntime(at, 0, 10, hardirq))
	}
	wakes := []struct {
		at          int64
		cpu, waker  int32
		flags       int64
		tickSoftIRQ bool
	}{
		{8*ms + 150000, 0, 10, softirq, true},
		{14*ms + 500000, 0, 10, softirq, false},
		{20*ms + 100000, 0, 10, hardirq, false},
		{24*ms + 300000, 1, 0, softirq, true},
		{30 * ms, 1, 0, softirq, false},
		{40*ms + 900000, 0, 10, softirq, true},
		{48*ms + 600000, 0, 17, softirq, false},
	}
	for _, wk := range wakes {
		evs = append(evs, nSoftWaking(wk.at, wk.cpu, wk.waker, 20, 1, wk.flags),
			nSwitch(wk.at+50000, 1, 0, "R", 20), nSwitch(wk.at+150000, 1, 20, "S", 0))
	}
	evs = append(evs, nSwitch(48*ms+500000, 0, 10, "R", 17), nSwitch(48*ms+700000, 0, 17, "S", 10))
	sortEvents(evs)
	w, err := Extract(&noiseReader{evs: evs})
	if err != nil {
		t.Fatal(err)
	}
	if w.TickPhaseNS != 0 {
		t.Fatalf("tick phase %d ns, want 0", w.TickPhaseNS)
	}
	var k *Task
	for i := range w.Tasks {
		if w.Tasks[i].TID == 20 {
			k = &w.Tasks[i]
		}
	}
	if k == nil {
		t.Fatal("no task 20")
	}
	got := map[int64]bool{}
	for _, a := range k.Activations {
		if a.Cause == CauseArrival {
			got[a.ReleaseNS] = a.TickSoftIRQ
		}
	}
	for _, wk := range wakes {
		v, ok := got[wk.at]
		if !ok {
			t.Errorf("no arrival at %d ns", wk.at)
		} else if v != wk.tickSoftIRQ {
			t.Errorf("arrival at %.2f ms: tick softirq %v, want %v", float64(wk.at)/1e6, v, wk.tickSoftIRQ)
		}
	}
}

// When a tick-softirq arrival fires with --set tick_softirq=on, by hand: kernel thread K alone on
// one CPU (HZ 250, ticks at t0 + 4k ms plus the phase); its first
// activation arrives at t0 + 0.5 ms and runs 0.1 ms, so it blocks at
// t0 + 0.6 ms in the replay; its second is the case's recorded waking.
// As many tick boundaries after the replay's block as the trace's waking
// came after its block (its own tick the boundary nearest it), plus the
// recorded time after that tick (0 if the waking came before it: a grid
// estimated late); without the flag, or with the setting off (the
// default), the recorded sleep after the block.
//   - Blocked at 1.3 ms, woken at 12.2 (0.2 after the 12 ms tick): three
//     boundaries (4, 8, 12); the replay's third after 0.6 is 12 ms: 12.2.
//   - Woken 0.9 ms after the 12 ms boundary (a late tick): 12.9; 0.1
//     before it: 12.
//   - Blocked at 4.1, woken at 4.3: no boundary crossed, the sleep (0.2)
//     kept: 0.8 ms.
//   - Phase 1 ms (ticks at 1, 5, 9, 13): blocked at 1.3, woken at 13.3:
//     three boundaries (5, 9, 13); after 0.6 the third is 9 ms: 9.3. Woken
//     at 12.2, nearest the 13 ms tick: 9.
func TestTickSoftIRQArrival(t *testing.T) {
	for _, c := range []struct {
		what                     string
		phase, block, release    int64
		want, wantWithoutTheFlag int64
	}{
		{"three ticks", 0, 1300000, 12200000, 12200000, 600000 + 10900000},
		{"late tick", 0, 1300000, 12900000, 12900000, 600000 + 11600000},
		{"early tick", 0, 1300000, 11900000, 12 * ms, 600000 + 10600000},
		{"no tick crossed", 0, 4100000, 4300000, 800000, 800000},
		{"phase 1 ms", ms, 1300000, 13300000, 9300000, 600000 + 12000000},
		{"phase 1 ms, early", ms, 1300000, 12200000, 9 * ms, 600000 + 10900000},
	} {
		for _, v := range []struct{ flag, on bool }{{true, true}, {false, true}, {true, false}} {
			flag := v.flag
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			k := b.task("kworker/0:1", 120, 0, false, CauseArrival, 100000, 100000)
			a := b.w.Tasks[k].Activations
			a[0].ReleaseNS = t0 + ms/2
			a[1].Cause, a[1].TickSoftIRQ = CauseArrival, flag
			a[1].ReleaseNS, a[1].SleepNS = t0+c.release, c.release-c.block
			b.w.TickPhaseNS = c.phase
			w := b.done(t)
			cfg := testConfig()
			cfg.HZ, cfg.TickSoftIRQ = 250, v.on
			_, ch := replayChecked(t, w, cfg)
			want := c.want
			if !flag || !v.on {
				want = c.wantWithoutTheFlag
			}
			var at []int64
			for _, e := range ch.wakings {
				at = append(at, e.Time-t0)
			}
			if len(at) != 2 || at[1] != want {
				t.Errorf("%s, flag %v, tick_softirq %v: K's wakings at %v ns after t0, want the second at %d", c.what, flag, v.on, at, want)
			}
		}
	}
}

// Why the tick waits for its softirq (with tick_softirq=on): on one CPU under v6.12 (its LTS
// series' 0.70 ms base slice, HZ 250, vruntimes in ms), hog A (nice 0)
// runs from 0, protected to 0.35 (a task running at the trace start gets
// half a slice), and hog B (nice 0) arrives at 0.5, placed at V = 0.5
// (deadline 1.2): A, past its protection, ties it and the queued B wins.
// The 4 ms tick renews B's request (4, deadline 4.7) and picks A (0.5,
// 1.2; V = 2.25). The 8 ms tick renews A's (4.5, 5.2). Kernel thread K
// (nice -5: weight 3121, vslice 0.7 x 1024/3121 = 0.2297) is woken by
// that tick's softirq, recorded 0.15 ms after it.
//   - As the tick's softirq: the tick's switch waits for it (with the
//     idle-exit and preemption delays off, it is at the waking). A runs
//     on to 4.65; K is placed at V = (4.65 + 4)/2 = 4.325 (deadline
//     4.5547), the earliest eligible deadline (B's is 4.7; A, past V, is
//     not eligible): K runs at 8.15 ms, as the kernel threads the trace
//     shows preempting at the tick.
//   - As a plain arrival at 8.15: the tick has switched to B (4, 4.7),
//     protected (RUN_TO_PARITY) and still eligible at 8.15 (4.15 against
//     V = 4.325), so K waits for the 12 ms tick, where B's renewal lets
//     the pick take K (4.325, deadline 4.5547; A's is 5.2).
func TestTickSoftIRQPreemptsAtTheTick(t *testing.T) {
	for _, c := range []struct {
		flag bool
		runs string
	}{
		{true, "[a@0-5 b@5-40 a@40-81 k@81-82"},
		{false, "[a@0-5 b@5-40 a@40-80 b@80-120 k@120-121"},
	} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 40*ms)
		bt := b.task("b", 120, 0, false, CauseArrival, 40*ms)
		b.w.Tasks[bt].Activations[0].ReleaseNS = t0 + ms/2
		k := b.task("kcompactd0", 115, 0, false, CauseArrival, 100000)
		a := &b.w.Tasks[k].Activations[0]
		a.ReleaseNS, a.TickSoftIRQ = t0+8*ms+150000, c.flag
		w := b.done(t)
		cfg := policyConfig(t, "v6.12")
		cfg.HZ, cfg.TickSoftIRQ = 250, true
		_, ch := replayChecked(t, w, cfg)
		got := fmt.Sprint(ch.namedRuns(map[int64]string{int64(w.Tasks[0].TID): "a", int64(w.Tasks[bt].TID): "b", int64(w.Tasks[k].TID): "k"}))
		if !strings.HasPrefix(got, c.runs) {
			t.Errorf("tick softirq %v: runs %s, want them to start %s", c.flag, got, c.runs)
		}
	}
}

// A held tick's switch draws its delay after the softirq's waking from the
// trace's local wakeup preemptions that switched within a quarter tick
// (HZ 250: 1 ms): guest-N r1's 6.12 schbench pool has a quarter at 3.6 ms
// and more, wakees that waited for a later tick.
func TestSoftirqSwitchDelays(t *testing.T) {
	if got := fmt.Sprint(softirqSwitchDelays([]int64{70000, 3600000, 213000, 999999, 1000000, 3700000}, 4*ms)); got != "[70000 213000 999999]" {
		t.Errorf("pool %s, want [70000 213000 999999]", got)
	}
}
