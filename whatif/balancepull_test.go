package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

func nPull(t int64, cpu, ctx int32, flags int64, pid, orig, dest int32) timeline.Event {
	e := nMigrate(t, cpu, pid, orig, dest)
	e.SetInt(timeline.CommonPID, int64(ctx))
	e.SetInt(timeline.CommonFlags, flags)
	return e
}

// Workload.BalancePulls from a trace's sched_migrate_task records, by
// hand. 10 runs on CPU 0 and 40 on CPU 1 throughout. (a) At 5 ms a
// record on CPU 0 in softirq context (0x11), 10 running, moves 50 from
// CPU 1 onto CPU 0: a periodic balance's pull. (b) A second record of
// that pass 10 µs later is the same balance. (c) At 9 ms CPU 1's record
// with no task running (its idle balance, or the nohz balancer's for it):
// not the busy CPU's own phase, left out. (d) At 10 ms a record in task
// context (0x01: a wakeup's placement or a newly idle pull): left out.
// (e) At 12 ms CPU 0's softirq moves 51 onto CPU 1 (a push, the nohz
// balancer's for another CPU): left out. (f) At 14 ms the softirq flag
// with the hard-IRQ one (0x19): not the balance softirq's. (g) At 20 ms
// CPU 1's softirq, 40 running, pulls 51 from CPU 0: a pull.
func TestBalancePullsFromSoftIRQMigrations(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 10),
		nSwitch(1*ms, 1, 0, "R", 40),
		nPull(5*ms, 0, 10, 0x11, 50, 1, 0),
		nPull(5*ms+10000, 0, 10, 0x11, 51, 1, 0),
		nPull(9*ms, 1, 0, 0x11, 50, 0, 1),
		nPull(10*ms, 0, 10, 0x01, 50, 1, 0),
		nPull(12*ms, 0, 10, 0x11, 51, 0, 1),
		nPull(14*ms, 0, 10, 0x19, 50, 1, 0),
		nPull(20*ms, 1, 40, 0x11, 51, 0, 1),
		nSwitch(30*ms, 0, 10, "S", 0),
		nSwitch(30*ms, 1, 40, "S", 0),
	}}
	w := mustExtract(t, r)
	if got, want := fmt.Sprint(w.BalancePulls), fmt.Sprintf("[{0 1 %d} {1 0 %d}]", 5*ms, 20*ms); got != want {
		t.Errorf("balance pulls %s, want %s", got, want)
	}
}

// On a real trace: Debian 6.12's hackbench, guest-P r4. perf's own reading
// of the records (`perf script -s` with a Python handler printing
// common_flags): CPU 0's tick softirq at 6.433752251 (0x35, 453 running)
// moves 454 from CPU 1, the first of fifteen tasks that pass pulls within
// 0.1 ms, right after the herd of 6.4274. Extraction keeps it as one
// pull. The replay (seed 0) has the herd on the other CPU (its parent
// moved 63 ms before); with the trace's phase its first pull of the herd
// comes within a tick of the trace's, on the replay's less loaded CPU;
// with its own phase (`balance_phase=own`) it came tens of ms later
// (FIDELITY.md round 82).
func TestBalancePullOnARealTrace(t *testing.T) {
	const path = "../fixtures/kernels/v6.12/guest-P-1s2c1t/r4/hackbench.perf.data.gz"
	const at = 6433752251
	w, _ := extractFixture(t, path)
	found := false
	for _, p := range w.BalancePulls {
		if p.TimeNS == at {
			found = p.CPU == 0 && p.Src == 1
		} else if p.CPU == 0 && p.TimeNS > at && p.TimeNS < at+balancePullGapNS {
			t.Errorf("a second pull of the same pass at %d", p.TimeNS)
		}
	}
	if !found {
		t.Fatalf("no pull onto CPU 0 from CPU 1 at %d in %v", at, w.BalancePulls)
	}
	firstBatch := func(phase bool) int64 {
		cfg := DefaultConfig(mustPolicy(t, "v6.12"))
		cfg.BalancePhase = phase
		cfg.WakeeFlips = 0 // as measured in round 82, before the start flips were fitted from wake_affine_weight's pulls
		m := collectKinds(timeline.SchedMigrateTask)
		if _, err := Replay(w, cfg, m); err != nil {
			t.Fatal(err)
		}
		n := map[int64]int{}
		for _, e := range m.ev {
			if e.Time > 6427500000 {
				n[e.Time]++
			}
		}
		first := int64(-1)
		for tm, k := range n {
			if k >= 5 && (first < 0 || tm < first) {
				first = tm
			}
		}
		return first
	}
	if got := firstBatch(true); got < at-4*ms || got > at+4*ms {
		t.Errorf("the replay's first pull of five or more after the herd at %d, want within a tick of the trace's %d", got, int64(at))
	}
	if got := firstBatch(false); got >= at-4*ms && got <= at+4*ms {
		t.Errorf("with its own phase the replay pulls at %d, within a tick of the trace's: the test shows nothing", got)
	}
}

// Which CPU a pull makes due, by hand, at the tick of t0 + 8 ms (jiffy j),
// every CPU having balanced at j with its next balance 25 jiffies on. Two
// CPUs in one domain; the trace's pull went onto CPU 0 from CPU 1. (a)
// CPU 0 holds two runnable tasks and CPU 1 one: CPU 0 is the busier side
// in the replay, so CPU 1, the side that can pull, gets the due balance
// (its domain's last_balance j − its interval, next_balance j) and CPU 0
// is left alone. (b) One each: a tie goes to the trace's CPU 0. (c) CPU 1
// holds two and CPU 0 one: CPU 0, as the trace.
func TestBalancePullsDueChoosesTheLessLoaded(t *testing.T) {
	for _, c := range []struct {
		name   string
		nr     [2]int
		wantOn int
	}{
		{"the trace's CPU busier", [2]int{2, 1}, 1},
		{"a tie", [2]int{1, 1}, 0},
		{"the trace's CPU less loaded", [2]int{1, 2}, 0},
	} {
		s, j := pullAtTick(t, "sockets=1,cores=2,threads=1")
		for i, r := range s.cpus {
			r.nrCFS = c.nr[i] // the runnable CFS tasks, by hand
		}
		s.balancePullsDue()
		for i, r := range s.cpus {
			due := r.nextBalance == j && r.sd[0].lastBalance == j-s.balanceInterval(r.sd[0], true)
			untouched := r.nextBalance == j+25 && r.sd[0].lastBalance == j
			if want := i == c.wantOn; want && !due || !want && !untouched {
				t.Errorf("%s: CPU %d: next_balance %d, last_balance %d (jiffy %d); want it made due: %v", c.name, i, r.nextBalance, r.sd[0].lastBalance, j, want)
			}
		}
	}
}

// A pull between two CPUs of a larger domain makes nothing due: which
// side would pull is not known.
func TestBalancePullInALargerDomain(t *testing.T) {
	s, j := pullAtTick(t, "sockets=1,cores=4,threads=1")
	s.balancePullsDue()
	for i, r := range s.cpus {
		if r.nextBalance != j+25 || r.sd[0].lastBalance != j {
			t.Errorf("CPU %d: next_balance %d, last_balance %d; want %d and %d", i, r.nextBalance, r.sd[0].lastBalance, j+25, j)
		}
	}
	if s.nextPull != 1 {
		t.Errorf("next pull %d, want 1 (this one passed)", s.nextPull)
	}
}

// pullAtTick is a machine of spec at the tick of t0 + 8 ms (jiffy j)
// with one hog on CPU 0 and the trace's pull onto CPU 0 from CPU 1 just
// after that tick; every CPU balanced at j, its next balance 25 jiffies
// on.
func pullAtTick(t *testing.T, spec string) (*Sim, int64) {
	t.Helper()
	b := newBuilder(t, spec)
	b.task("hog0", 120, 0, true, CauseStart, 100*ms)
	b.w.BalancePulls = []BalancePull{{CPU: 0, Src: 1, TimeNS: t0 + 8*ms + 100000}}
	s, _ := newSim(t, b.done(t), testConfig())
	s.now = t0 + 8*ms
	j := s.jiffies()
	for _, r := range s.cpus {
		r.nextBalance = j + 25
		for _, st := range r.sd {
			st.lastBalance = j
		}
	}
	return s, j
}
