package whatif

import (
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Timer slack worked by hand on one CPU (the clock starts at t0; no
// machine noise, so a switch costs nothing). L, a SCHED_FIFO task, runs
// 0–100 µs and sleeps 1,000 µs: its hrtimer fires at 1,100. F runs
// 100–200 and sleeps 930 (its timer due at 1,130), G runs 200–300 and
// sleeps 860 (due at 1,160). With a 50 µs slack L's interrupt at 1,100
// expires F's timer too (due 30 µs later) but not G's (60 µs later): F's
// waking is at 1,100 and it waits for L's 50 µs run, so it switches in at
// 1,150 with a latency of 50 µs; without slack F wakes at 1,130, switches
// in at the same 1,150 (L still runs), 20 µs. A real-time F has no slack
// (hrtimer_nanosleep), so it wakes at 1,130 either way, and its own
// interrupt then expires G's timer (due 30 µs later). G wakes at 1,160
// otherwise.
func TestTimerSlackByHand(t *testing.T) {
	const us = ms / 1000
	for _, c := range []struct {
		name        string
		slack       int64
		fPrio       int32
		fWake       int64
		coalesced   int64
		gWake, fRun int64
	}{
		{"slack 50us", 50 * us, 120, 1100 * us, 1, 1160 * us, 1150 * us},
		{"no slack", 0, 120, 1130 * us, 0, 1160 * us, 1150 * us},
		{"real-time follower", 50 * us, 90, 1130 * us, 1, 1130 * us, 1150 * us},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			lt := b.task("cyc", 90, 0, true, CauseStart, 100*us, 50*us)
			ft := b.task("sw", c.fPrio, 0, false, CauseStart, 100*us, 100*us)
			gt := b.task("sl", 120, 0, false, CauseStart, 100*us, 100*us)
			for _, x := range []struct {
				task  int32
				sleep int64
			}{{lt, 1000 * us}, {ft, 930 * us}, {gt, 860 * us}} {
				a := &b.w.Tasks[x.task].Activations[1]
				a.Cause, a.IRQ, a.SleepNS, a.ReleaseNS = CauseArrival, IRQHard, x.sleep, t0+1100*us
			}
			w, res, ch := replayWithSlack(t, b, c.slack)
			wakes := map[int64]int64{}
			for _, e := range ch.wakings {
				wakes[e.Int(timeline.PID)] = e.Time - t0
			}
			tid := func(i int32) int64 { return int64(w.Tasks[i].TID) }
			if got := wakes[tid(ft)]; got != c.fWake {
				t.Errorf("F woken at %d µs, want %d", got/us, c.fWake/us)
			}
			if got := wakes[tid(gt)]; got != c.gWake {
				t.Errorf("G woken at %d µs, want %d", got/us, c.gWake/us)
			}
			if got := wakes[tid(lt)]; got != 1100*us {
				t.Errorf("L woken at %d µs, want 1100", got/us)
			}
			if r := ch.firstRunAfter(tid(ft), t0+1000*us); r == nil || r.start-t0 != c.fRun {
				t.Errorf("F's second run %+v, want it to start at %d µs", r, c.fRun/us)
			}
			if res.Stats.TimersCoalesced != c.coalesced {
				t.Errorf("timers coalesced %d, want %d", res.Stats.TimersCoalesced, c.coalesced)
			}
		})
	}
}

// The tick is an hrtimer: on a busy CPU a CFS sleeper's timer due within
// the slack after a tick fires in the tick's interrupt. One CPU, ticks
// every 4 ms from the clock's start: F runs 0–100 µs and sleeps, its
// timer due 30 µs after the tick at 4,000 µs (or 60 µs after it, beyond
// the slack); H, a hog, keeps the CPU busy, so that tick runs.
func TestTimerSlackTickByHand(t *testing.T) {
	const us = ms / 1000
	for _, c := range []struct {
		name      string
		slack     int64
		after     int64 // the timer's due time after the tick
		fWake     int64
		coalesced int64
	}{
		{"within the slack", 50 * us, 30 * us, 4000 * us, 1},
		{"beyond the slack", 50 * us, 60 * us, 4060 * us, 0},
		{"no slack", 0, 30 * us, 4030 * us, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			ft := b.task("sw", 120, 0, true, CauseStart, 100*us, 100*us)
			b.task("hog", 120, 0, false, CauseStart, 10*ms)
			a := &b.w.Tasks[ft].Activations[1]
			a.Cause, a.IRQ, a.SleepNS, a.ReleaseNS = CauseArrival, IRQHard, 3900*us+c.after, t0+4000*us+c.after
			w, res, ch := replayWithSlack(t, b, c.slack)
			var got []int64
			for _, e := range ch.wakings {
				if e.Int(timeline.PID) == int64(w.Tasks[ft].TID) {
					got = append(got, e.Time-t0)
				}
			}
			if len(got) != 1 || got[0] != c.fWake {
				t.Errorf("F's wakings at %v ns, want one at %d µs", got, c.fWake/us)
			}
			if res.Stats.TimersCoalesced != c.coalesced {
				t.Errorf("timers coalesced %d, want %d", res.Stats.TimersCoalesced, c.coalesced)
			}
		})
	}
}

// replayWithSlack replays b's workload by hand with the given timer
// slack, the invariants checked.
func replayWithSlack(t *testing.T, b *builder, slack int64) (*Workload, *Result, *checker) {
	t.Helper()
	w := b.done(t)
	cfg := testConfig()
	cfg.TimerSlackNS = slack
	res, ch := replayChecked(t, w, cfg)
	if ch.fails > 0 {
		t.Fatalf("%d invariant failures", ch.fails)
	}
	return w, res, ch
}

// A task's timer fired early twice in a row, its second before the first
// one's own due time: neither due time fires it again. One CPU: L, a
// SCHED_FIFO task, takes timer interrupts at 1,000 and 1,015 µs (5 µs
// runs); F's timers are due at 1,040 and, after a 3 µs run from 1,005,
// at 1,028. L's first interrupt fires F's first timer, L's second F's
// second (13 µs early), before 1,040: F wakes at 1,000 and 1,015 only.
func TestTimerSlackTwiceBeforeDue(t *testing.T) {
	const us = ms / 1000
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	lt := b.task("cyc", 90, 0, true, CauseStart, 100*us, 5*us, 5*us)
	ft := b.task("sw", 120, 0, false, CauseStart, 100*us, 3*us, 3*us)
	for _, x := range []struct {
		task, k int32
		sleep   int64
	}{{lt, 1, 900 * us}, {lt, 2, 10 * us}, {ft, 1, 840 * us}, {ft, 2, 20 * us}} {
		a := &b.w.Tasks[x.task].Activations[x.k]
		a.Cause, a.IRQ, a.SleepNS, a.ReleaseNS = CauseArrival, IRQHard, x.sleep, t0+1000*us
	}
	w, res, ch := replayWithSlack(t, b, 50*us)
	var got []int64
	for _, e := range ch.wakings {
		if e.Int(timeline.PID) == int64(w.Tasks[ft].TID) {
			got = append(got, (e.Time-t0)/us)
		}
	}
	if want := []int64{1000, 1015}; !slices.Equal(got, want) {
		t.Errorf("F's wakings at %v µs, want %v", got, want)
	}
	if res.Stats.TimersCoalesced != 2 || res.Stats.Arrivals != 4 {
		t.Errorf("timers coalesced %d, arrivals %d; want 2 and 4", res.Stats.TimersCoalesced, res.Stats.Arrivals)
	}
}
