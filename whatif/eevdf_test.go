package whatif

import (
	"fmt"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// policyConfig is testConfig under another policy.
func policyConfig(t *testing.T, name string) Config {
	t.Helper()
	p, err := LookupPolicy(name)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig(p)
	c.IdleWake = false
	return c
}

// latestWithout is latest's configuration with the given commits reverted.
func latestWithout(t *testing.T, revert []string) Config {
	t.Helper()
	cfg := policyConfig(t, "latest")
	p, err := WithCommits(cfg.Policy, revert, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = p
	return cfg
}

// firstStart replays w under cfg and returns when task index ti first ran.
func firstStart(t *testing.T, w *Workload, cfg Config, ti int32, what string) int64 {
	t.Helper()
	_, ch := replayChecked(t, w, cfg)
	r := ch.firstRunAfter(int64(100+ti), 0)
	if r == nil {
		t.Fatalf("%s: task %d never ran", what, ti)
	}
	return r.start
}

// Delayed dequeue (v6.12+), by hand. Two CPUs in one LLC, HZ 250, EEVDF
// base slice 0.75 ms × 2 = 1.5 ms (a start-of-trace task's first request
// is half that). B runs on CPU 0 from t0 with A queued there (both at
// vruntime 0); B runs 1 ms and blocks, its timer wakes it 0.5 ms later
// (t0+1.5 ms). At the block v_B = 1 ms > V = 0.5 ms: B is not eligible.
//   - v6.10 (no delayed dequeue): B leaves the queue; its timer wakeup
//     goes through select_task_rq, which finds CPU 1 idle: B runs there
//     at once, at t0+1.5 ms.
//   - v6.12: B stays queued on CPU 0, and its wakeup requeues it there
//     without select_task_rq. Its lag is still negative (V = 0.75 ms with
//     A at 0.5 ms), so it keeps its place and does not preempt A. A's
//     first request (0.75 ms) ends at t0+1.75 ms; nothing reschedules it
//     until the tick at t0+4 ms, where pick_eevdf takes B (eligible once
//     v_A ≥ 1 ms; deadlines equal at 2.25 ms, the queued entity first).
//     B runs on CPU 0 at t0+4 ms, 2.5 ms after its wakeup.
func TestDelayedDequeueKeepsWakeeOnItsCPU(t *testing.T) {
	for _, c := range []struct {
		policy string
		cpu    int64
		at     int64
		delay  DelayStats
	}{{"v6.10", 1, t0 + 1500000, DelayStats{}}, {"v6.12", 0, t0 + 4*ms, DelayStats{Blocks: 2, Delayed: 1, Requeued: 1}}} {
		// The replay's counts: under v6.12 both of B's blocks come with
		// A queued, the first delayed and requeued by its timer, the
		// second (at t0+5 ms, v_B 2 ms against A's 3: V 2.5) eligible;
		// before, nothing is counted.
		if d := checkSecondRunOfB(t, c.policy, policyConfig(t, c.policy), t0+1500000, c.cpu, c.at); d != c.delay {
			t.Errorf("%s: delayed dequeue counts %+v, want %+v", c.policy, d, c.delay)
		}
	}
}

// A delayed task requeued by an interrupt's wakeup that the trace shows
// raised on another CPU (Activation.IRQCPUPlus1) takes its IPI from there
// as a sleeping wakee does (irqRaisedCPU): the setting above under v6.12
// with B's timer shown on CPU 1. B still requeues on CPU 0 and runs there
// at the tick, t0+4 ms; its sched_waking is written on CPU 1 (irq_ipi, the
// default), on CPU 0 without it.
func TestRequeueDelayedIRQElsewhere(t *testing.T) {
	for _, c := range []struct {
		ipi    bool
		waking int64
	}{{true, 1}, {false, 0}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		bt := b.task("b", 120, 0, true, CauseStart, 1*ms, 1*ms)
		b.task("a", 120, 0, false, CauseStart, 20*ms)
		a := &b.w.Tasks[bt].Activations[1]
		a.Cause, a.SleepNS, a.ReleaseNS, a.IRQCPUPlus1 = CauseArrival, 500000, t0+1500000, 2
		cfg := policyConfig(t, "v6.12")
		cfg.IRQIPI = c.ipi
		_, ch := replayChecked(t, b.done(t), cfg)
		if got := ch.firstRunAfter(100, t0); got == nil || got.cpu != 0 || got.start != t0+4*ms {
			t.Errorf("irq_ipi %v: B's second run %+v, want cpu 0 at t0+4 ms", c.ipi, got)
		}
		var on []int64
		for _, e := range ch.wakings {
			if e.Int(timeline.PID) == int64(b.w.Tasks[bt].TID) {
				on = append(on, e.Int(timeline.CPU))
			}
		}
		if len(on) != 1 || on[0] != c.waking {
			t.Errorf("irq_ipi %v: B's wakings on CPUs %v, want one on CPU %d", c.ipi, on, c.waking)
		}
	}
}

// checkSecondRunOfB replays the setting of
// TestDelayedDequeueKeepsWakeeOnItsCPU (B's timer at wakeAt) under cfg and
// checks where and when B runs after its wakeup.
func checkSecondRunOfB(t *testing.T, name string, cfg Config, wakeAt, cpu, at int64) DelayStats {
	t.Helper()
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	bt := b.task("b", 120, 0, true, CauseStart, 1*ms, 1*ms)
	b.task("a", 120, 0, false, CauseStart, 20*ms)
	a := &b.w.Tasks[bt].Activations[1]
	a.Cause, a.SleepNS, a.ReleaseNS = CauseArrival, wakeAt-t0-1*ms, wakeAt
	res, ch := replayChecked(t, b.done(t), cfg)
	got := ch.firstRunAfter(100, t0)
	if got == nil {
		t.Fatalf("%s: B never ran again", name)
	}
	if got.cpu != cpu || got.start != at {
		t.Errorf("%s: B's second run on cpu %d at t0%+d ns, want cpu %d at t0%+d ns", name, got.cpu, got.start-t0, cpu, at-t0)
	}
	return res.Stats.Delay
}

// The reschedule of a task whose request is used up comes at the next
// update_curr with others queued, here a wakeup's enqueue, not only at
// the tick (v6.6 update_deadline; v6.18 update_curr), by hand. One CPU,
// HZ 250, base slice 0.75 ms (a start-of-trace task's first request half
// that). A runs from t0 with C queued, both at vruntime 0 (deadlines
// 0.375 ms). A's request ends at t0+0.375 ms (next deadline 1.125 ms),
// with nothing to reschedule it then. At t0+1 ms a timer wakes W (placed
// at V = 0.5 ms): pick_eevdf would take C (eligible, deadline 0.375 ms),
// not W, so the wakeup itself does not preempt, but A's used-up request
// does: C runs at t0+1 ms. Without that rule C waited for the tick at
// t0+4 ms.
func TestUsedUpRequestReschedulesAtWakeup(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("a", 120, 0, true, CauseStart, 20*ms)
	ct := b.task("c", 120, 0, false, CauseStart, 1*ms)
	wt := b.task("w", 120, 0, false, CauseArrival, 1*ms)
	a := &b.w.Tasks[wt].Activations[0]
	a.ReleaseNS = t0 + 1*ms
	w := b.done(t)
	_, ch := replayChecked(t, w, policyConfig(t, "v6.6"))
	r := ch.firstRunAfter(int64(100+ct), 0)
	if r == nil {
		t.Fatal("C never ran")
	}
	if r.start != t0+1*ms {
		t.Errorf("C first ran at t0%+d ns, want t0+1 ms", r.start-t0)
	}
}

// The base slice: 0.75 ms × the CPU factor to v6.14, 0.70 ms from v6.15
// (latest) and in the 6.6 and 6.12 LTS series, which took 2ae891b82695
// (6.10 and 6.11 never did), by hand with the setting above on one CPU
// (factor 1): A's first request is half a slice, 0.375 ms (v6.10) or 0.35
// ms (the others). A timer wakes W at t0+0.36 ms: with 0.70 ms A's
// request is used up, so the enqueue reschedules and C (the earliest
// eligible deadline) runs at t0+0.36 ms; under v6.10 A's request still
// runs, W's wakeup does not preempt (pick_eevdf takes C, not W), and C
// waits for the tick at t0+4 ms.
func TestBaseSlice070(t *testing.T) {
	for _, c := range []struct {
		policy string
		at     int64
	}{{"v6.10", t0 + 4*ms}, {"v6.6", t0 + 360000}, {"v6.12", t0 + 360000}, {"latest", t0 + 360000}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 20*ms)
		ct := b.task("c", 120, 0, false, CauseStart, 1*ms)
		wt := b.task("w", 120, 0, false, CauseArrival, 1*ms)
		b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 360000
		w := b.done(t)
		_, ch := replayChecked(t, w, policyConfig(t, c.policy))
		r := ch.firstRunAfter(int64(100+ct), 0)
		if r == nil {
			t.Fatalf("%s: C never ran", c.policy)
		}
		if r.start != c.at {
			t.Errorf("%s: C first ran at t0%+d ns, want t0%+d ns", c.policy, r.start-t0, c.at-t0)
		}
	}
}

// A forked child inherits its parent's wakee_flips (dup_task_struct;
// sched_fork does not reset them), so wake_wide can see a one-to-many
// waker's children as flipping too. By hand, on 2 CPUs (sd_llc_size 2):
// the parent has flipped 6 times when it forks C, and 13 times when it
// wakes C: master 13, slave 6; 6 >= 2 and 13 >= 6 × 2, so the wakeup is
// wide (no affine pull). A child starting from 0 flips (slave 0 < 2) is
// never woken wide.
func TestForkInheritsWakeeFlips(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	pt := b.task("parent", 120, 0, true, CauseStart, 10*ms)
	ct := b.task("child", 120, 0, false, CauseFork, ms)
	b.w.Tasks[ct].Forked = true
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: pt, OffsetNS: ms, Wakee: ct})
	w := b.done(t)
	s, _ := newSim(t, w, testConfig())
	parent, child := s.tasks[pt], s.tasks[ct]
	parent.wakeeFlips = 6
	s.fork(s.cpus[0], parent, child)
	if child.wakeeFlips != 6 {
		t.Fatalf("child's wakee_flips %d, want the parent's 6", child.wakeeFlips)
	}
	parent.wakeeFlips = 13
	if !s.wakeWide(parent, child, 0) {
		t.Error("wake_wide(parent 13 flips, child 6) = false, want true")
	}
}

// The tick reschedules a used-up request when others are queued, delayed
// ones included (update_curr tests nr_queued), so a delayed task can be
// picked, and dequeued, while nothing else is runnable. By hand, the
// setting of TestDelayedDequeueKeepsWakeeOnItsCPU under v6.12 with B's
// timer at t0+6 ms: at the t0+4 ms tick A (v 3 ms, deadline 3.75 ms) has
// used up its request, B (v 1 ms, deadline 2.25 ms) is eligible (V = 2
// ms) with the earlier deadline: picked, it leaves the queue (lag +1 ms
// clipped to 0) and A runs on. B's timer then wakes a task no longer
// queued: select_task_rq finds CPU 1 idle, and B runs there at t0+6 ms.
// Counting only runnable tasks, the tick skipped the pick, B was still
// delayed at its wakeup and ran on CPU 0.
func TestTickPicksDelayedTask(t *testing.T) {
	// Counted: B's block with A queued, delayed, not requeued (the tick's
	// pick dequeued it); its second block, alone on CPU 1, is not.
	if d := checkSecondRunOfB(t, "v6.12", policyConfig(t, "v6.12"), t0+6*ms, 1, t0+6*ms); d != (DelayStats{Blocks: 1, Delayed: 1}) {
		t.Errorf("delayed dequeue counts %+v, want 1 block, 1 delayed, none requeued", d)
	}
}

// Delayed dequeue and the 0.70 ms base slice switch like the other
// commits: latest without 152e11f6df29 keeps its base slice and queues no
// delayed task (B of TestDelayedDequeueKeepsWakeeOnItsCPU goes to the idle
// CPU 1 at its wakeup); v6.12 with 2ae891b82695, e837456fdca8,
// ac8e69e69363, 0b9ca2dcabc3, 6e3c0a4e1ad1 and 61b82dfb6b7e applied and 33cf66d88306 (NI_RANDOM, which the 6.12 LTS
// series took, left off in latest: FIDELITY.md round 74) reverted has latest's
// knobs.
func TestEEVDFCommitsSwitch(t *testing.T) {
	p, err := WithCommits(mustPolicy(t, "latest"), []string{"152e11f6df29"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Knobs(); k.DelayDequeue || !k.BaseSlice070 {
		t.Errorf("latest~152e11f6df29 knobs %+v", k)
	}
	q, err := WithCommits(mustPolicy(t, "v6.12"), []string{"33cf66d88306"}, []string{"e837456fdca8", "ac8e69e69363", "0b9ca2dcabc3", "6e3c0a4e1ad1", "61b82dfb6b7e", "82d6e01a0699", "1a49104496d3", "873199d27bb2"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Knobs() != mustPolicy(t, "latest").Knobs() {
		t.Errorf("v6.12~33cf66d88306+e837456fdca8+ac8e69e69363+0b9ca2dcabc3+6e3c0a4e1ad1+61b82dfb6b7e+82d6e01a0699+1a49104496d3+873199d27bb2 knobs %+v, want latest's", q.Knobs())
	}
	cfg := policyConfig(t, "latest")
	cfg.Policy = p
	checkSecondRunOfB(t, "latest~152e11f6df29", cfg, t0+1500000, 1, t0+1500000)
}

// Slice protection (Config.SliceProtection), by hand. Four CPUs in one LLC
// (base slice 0.7 ms × (1 + log2 4) = 2.1 ms; a start-of-trace task's first
// request half that, 1.05 ms), latest, HZ 250, every task pinned to CPU 0.
// A runs from t0 with C queued, both at vruntime 0 (deadlines 1.05 ms). A
// timer wakes W at t0+tw (placed at V = tw/2, deadline V + 2.1 ms): the
// pick is C (eligible, earliest deadline; A, past V, is not), never W, so
// the wakeup preempts only through update_curr's reschedule of an
// unprotected A, and otherwise C waits for the tick at t0+4 ms.
//   - deadline (RUN_TO_PARITY): A is protected to its deadline, 1.05 ms
//     of its run: C runs at t0+4 ms for tw = 0.5 and 0.8 ms.
//   - base: to min(1.05, 0.7) = 0.7 ms: C at t0+4 ms for tw = 0.5 ms,
//     at t0+0.8 ms for tw = 0.8 ms.
//   - none: never protected: C runs at the wakeup, t0+tw.
func TestSliceProtection(t *testing.T) {
	for _, c := range []struct {
		mode   string
		tw, at int64
	}{
		{SliceProtectDeadline, 500000, t0 + 4*ms}, {SliceProtectDeadline, 800000, t0 + 4*ms},
		{SliceProtectBase, 500000, t0 + 4*ms}, {SliceProtectBase, 800000, t0 + 800000},
		{SliceProtectNone, 500000, t0 + 500000}, {SliceProtectNone, 800000, t0 + 800000},
	} {
		b := newBuilder(t, "sockets=1,cores=4,threads=1")
		b.task("a", 120, 0, true, CauseStart, 20*ms)
		ct := b.task("c", 120, 0, false, CauseStart, 1*ms)
		wt := b.task("w", 120, 0, false, CauseArrival, 1*ms)
		b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + c.tw
		for i := range b.w.Tasks {
			b.w.Tasks[i].Pinned = 0
		}
		w := b.done(t)
		cfg := policyConfig(t, "latest")
		cfg.SliceProtection = c.mode
		what := fmt.Sprintf("%s, W at t0+%d ns", c.mode, c.tw)
		if got := firstStart(t, w, cfg, ct, what); got != c.at {
			t.Errorf("%s: C first ran at t0%+d ns, want t0%+d ns", what, got-t0, c.at-t0)
		}
	}
}

// Slice protection is an EEVDF setting: a CFS policy refuses it, and an
// unknown value is refused by name.
func TestSliceProtectionRefused(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("a", 120, 0, true, CauseStart, 1*ms)
	w := b.done(t)
	for _, c := range []struct{ policy, mode string }{{"v6.1", SliceProtectNone}, {"latest", "half"}} {
		cfg := policyConfig(t, c.policy)
		cfg.SliceProtection = c.mode
		if _, err := Replay(w, cfg, nil); err == nil {
			t.Errorf("%s with slice_protection=%s: no error", c.policy, c.mode)
		}
	}
	if _, err := ParseSetting("slice_protection=sometimes"); err == nil {
		t.Error("slice_protection=sometimes parsed")
	}
	var cfg Config
	s, err := ParseSetting("slice_protection=none")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&cfg); err != nil || cfg.SliceProtection != SliceProtectNone {
		t.Errorf("slice_protection=none: %v, %q", err, cfg.SliceProtection)
	}
}

// forkScenario is one CPU where A (nice 0) runs from t0 with C (prio
// cPrio) queued, both start-of-trace tasks, and A forks F (1 ms of work)
// 0.2 ms into its run; it returns the workload and F.
func forkScenario(t *testing.T, cPrio int32) (*Workload, int32) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	at := b.task("a", 120, 0, true, CauseStart, 20*ms)
	b.task("c", cPrio, 0, false, CauseStart, 20*ms)
	ft := b.task("f", 120, 0, false, CauseFork, 1*ms)
	b.w.Tasks[ft].Forked = true
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: at, OffsetNS: 200000, Wakee: ft})
	return b.done(t), ft
}

// A fork never wakeup-preempts from e837456fdca8 (latest), by hand. One
// CPU, HZ 250, base slice 0.70 ms (a start-of-trace task's first request
// half that, 0.35 ms). A (nice 0) runs from t0 with C (nice 19, weight 15)
// queued, both at vruntime 0; A is protected to its deadline, 0.35 ms. At
// 0.2 ms of its run A forks F: V = 0.2 × 1024 / 1039 ms, just below A, so A
// is no longer eligible and its protection no longer counts; F is placed at
// V with half a slice, deadline V + 0.35 ms, earlier than C's (0.35 ms ×
// 1024 / 15): EEVDF would pick F. Before the change F preempts at once
// (t0+0.2 ms); with it nothing reschedules A until the tick at t0+4 ms,
// where F, still the earliest eligible deadline, runs.
func TestForkDoesNotPreempt(t *testing.T) {
	for _, c := range []struct {
		revert []string
		at     int64
	}{{nil, t0 + 4*ms}, {[]string{"e837456fdca8"}, t0 + 200000}} {
		w, ft := forkScenario(t, 139)
		if got := firstStart(t, w, latestWithout(t, c.revert), ft, fmt.Sprint("revert ", c.revert)); got != c.at {
			t.Errorf("revert %v: F first ran at t0%+d ns, want t0%+d ns", c.revert, got-t0, c.at-t0)
		}
	}
}

// A fork's first deadline is half a slice from c40dd90ac045 (v6.12); in
// 6.6 (and 6.10–6.11) wake_up_new_task placed the child again without
// ENQUEUE_INITIAL, a full slice. By hand, one CPU, HZ 250, base slice
// 0.70 ms (first requests of start-of-trace tasks 0.35 ms). A (nice 0)
// runs from t0 with C (nice 3, weight 526) queued, both at vruntime 0;
// C's deadline 0.35 × 1024 / 526 = 0.681 ms. At 0.2 ms A forks F: V =
// 0.2 × 1024 / 1550 = 0.132 ms, below A, which is no longer eligible.
// Half a slice: F's deadline 0.132 + 0.35 = 0.482 ms, the earliest
// eligible, and F preempts at once (t0+0.2 ms). A full slice: 0.832 ms,
// later than C's, so C is the pick and F waits. (This engine reschedules
// A there, ineligible and so unprotected, and runs C from 0.2 ms; 6.6's
// check_preempt_wakeup preempts only for the wakee and runs A on to the
// tick, then C. Either way, at the tick at 8 ms the runner's vruntime is
// far past V and F, at 0.132 ms, is the one eligible task: it runs at
// t0+8 ms.)
func TestForkHalfDeadline(t *testing.T) {
	for _, c := range []struct {
		policy string
		at     int64
	}{{"v6.12", t0 + 200000}, {"v6.12~c40dd90ac045", t0 + 8*ms}, {"v6.6", t0 + 8*ms}} {
		w, ft := forkScenario(t, 123)
		if got := firstStart(t, w, policyConfig(t, c.policy), ft, c.policy); got != c.at {
			t.Errorf("%s: F first ran at t0%+d ns, want t0%+d ns", c.policy, got-t0, c.at-t0)
		}
	}
}

// The wakeup-preemption check dequeues a delayed task it picks and picks
// again from ac8e69e69363 (latest), by hand. One CPU, HZ 250, base slice
// 0.70 ms (first requests 0.35 ms). B runs from t0 with A queued, both at
// vruntime 0; B runs 0.2 ms and blocks while V = 0.1 ms: not eligible, it
// stays queued (delayed). A runs from t0+0.2 ms, protected to 0.35 ms. A
// timer wakes W at t0+0.5 ms: A at 0.3 ms, V = 0.25 ms, so A is no longer
// eligible; W is placed at V (deadline at least 0.6 ms) and B, eligible
// again with its deadline 0.35 ms, is what EEVDF picks. Before the change
// that pick is not W, nothing preempts, and W waits for the tick at
// t0+4 ms; with it B is dequeued for good and the pick made again finds W
// (A, at 0.3 ms against V = 0.275 ms, is still not eligible): W runs at
// t0+0.5 ms.
func TestWakeupPickDequeuesDelayed(t *testing.T) {
	for _, c := range []struct {
		revert []string
		at     int64
	}{{nil, t0 + 500000}, {[]string{"ac8e69e69363"}, t0 + 4*ms}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("b", 120, 0, true, CauseStart, 200000)
		b.task("a", 120, 0, false, CauseStart, 20*ms)
		wt := b.task("w", 120, 0, false, CauseArrival, 1*ms)
		b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 500000
		w := b.done(t)
		if got := firstStart(t, w, latestWithout(t, c.revert), wt, fmt.Sprint("revert ", c.revert)); got != c.at {
			t.Errorf("revert %v: W first ran at t0%+d ns, want t0%+d ns", c.revert, got-t0, c.at-t0)
		}
	}
}

// NI_RANDOM's bookkeeping (33cf66d88306), by hand. sd_init starts a domain
// at 512 calls, 256 successes, ratio 512 (50 %). 512 passes that pull
// nothing bring the calls to 1024: the ratio becomes the successes, 256,
// and both halve (512, 128). The die then lets a pass run when
// d1k <= 1 + 256, and a success counts (1024 + 257/2) / 257 = 4: one
// success after 511 more empty calls makes 1024 calls, 128 + 4 = 132
// successes: ratio 132.
func TestNIRandomStats(t *testing.T) {
	st := &sdState{niCall: 512, niSuccess: 256, niRatio: 512}
	for range 512 {
		st.updateNewidleStats(0)
	}
	if st.niRatio != 256 || st.niCall != 512 || st.niSuccess != 128 {
		t.Fatalf("after 512 empty calls: call %d success %d ratio %d, want 512 128 256", st.niCall, st.niSuccess, st.niRatio)
	}
	weight := 1 + st.niRatio
	weight = (1024 + weight/2) / weight
	if weight != 4 {
		t.Fatalf("weight %d, want 4", weight)
	}
	for range 511 {
		st.updateNewidleStats(0)
	}
	st.updateNewidleStats(weight)
	if st.niRatio != 132 {
		t.Errorf("ratio %d, want 132", st.niRatio)
	}
	// The commit switches the knob: on in the LTS policies (their stable
	// series took it), off in v6.10 and latest.
	for _, c := range []struct {
		policy string
		on     bool
	}{{"v6.1", true}, {"v6.6", true}, {"v6.10", false}, {"v6.12", true}, {"latest", false}} {
		if got := mustPolicy(t, c.policy).Knobs().NIRandom; got != c.on {
			t.Errorf("%s: NI_RANDOM %v, want %v", c.policy, got, c.on)
		}
		var revert, apply []string
		if c.on {
			revert = []string{"33cf66d88306"}
		} else {
			apply = []string{"33cf66d88306"}
		}
		p, err := WithCommits(mustPolicy(t, c.policy), revert, apply)
		if err != nil {
			t.Fatal(err)
		}
		if p.Knobs().NIRandom == c.on {
			t.Errorf("%s: 33cf66d88306 does not switch NI_RANDOM", c.policy)
		}
	}
}

// A wakee with a positive lag preempts a protected running task by making
// it ineligible (PLACE_LAG), by hand: the mechanism of this machine's
// schbench -t 4 cycle (FIDELITY.md round 23). One CPU, HZ 250, latest
// (base slice 0.7 ms; a start-of-trace task's first request half that).
// Y runs from t0 with X queued, both at vruntime 0. At the tick (t0+4 ms)
// Y's request is used up (v_Y = 4 ms, next deadline 4.7 ms) and it is not
// eligible (V = 2 ms): X runs. X blocks at t0+5 ms with v_X = 1 ms while
// V = (1 + 4)/2 = 2.5 ms: lag +1.5 ms, eligible, so dequeued at once.
// Y runs, protected to its deadline (4.7 ms). X's timer wakes it at
// t0+5.15 ms (v_Y = 4.15 ms): placed with its lag inflated for the one
// task queued, 1.5 × 2, at v_X = 1.15 ms, V becomes 2.65 ms, Y is behind
// it and no longer eligible, and pick_eevdf takes X: X runs at once, at
// t0+5.15 ms. Placed with lag 0 it would sit at V beside an eligible,
// protected Y and wait for the tick at t0+8 ms (a failing mutation
// checked). With one task queued any positive lag does it, inflated or
// not (uninflated: v_X = 2.65 ms, V = 3.4 ms): this checks that the lag
// is kept across the sleep, not the inflation.
func TestPositiveLagWakeePreempts(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("y", 120, 0, true, CauseStart, 20*ms)
	xt := b.task("x", 120, 0, false, CauseStart, 1*ms, 1*ms)
	a := &b.w.Tasks[xt].Activations[1]
	a.Cause, a.SleepNS = CauseArrival, 150000
	_, ch := replayChecked(t, b.done(t), policyConfig(t, "latest"))
	first := ch.firstRunAfter(int64(100+xt), 0)
	if first == nil || first.start != t0+4*ms || first.end != t0+5*ms {
		t.Fatalf("X's first run %+v, want t0+4 ms to t0+5 ms", first)
	}
	r := ch.firstRunAfter(int64(100+xt), first.start)
	if r == nil {
		t.Fatal("X never ran again")
	}
	if r.start != t0+5150000 {
		t.Errorf("X's wakeup ran at t0%+d ns, want t0+5.15 ms", r.start-t0)
	}
}

// record_wakee runs on current, so a wakeup from interrupt context counts
// as a flip of the task it interrupted (of a fair, unpinned wakee:
// select_task_rq_fair's). By hand, on 2 CPUs sharing the LLC
// (sd_llc_size 2), v6.1 at HZ 250 (the flips halve on a task's first
// record_wakee after jiffy 250, t0+4 ms): P runs on CPU 0 and C on CPU 1
// from t0; timer wakeups (arrivals) of four tasks whose last CPU is 0 at
// t0+4.5, 5, 5.5 and 6 ms interrupt P (four different wakees: flips 0
// halved, then 4); of two on CPU 1 at t0+4.5 and 5 ms interrupt C (2
// flips); each preempts and runs 10 µs. C blocks after 6 ms of work and
// a hog H arrives on CPU 1 at t0+7 ms. At 9 ms of its work P, alone on
// CPU 0, wakes C with WF_SYNC: record_wakee makes P's flips 5, and
// wake_wide (master 5 >= 2 x slave 2, slave 2 >= 2) is true, so no
// wake_affine: C stays on its busy previous CPU 1. Counting only
// task-context wakeups, P has 1 flip and C 0: not wide, and
// wake_affine_idle takes the waker's CPU (sync, P alone on it), which
// select_idle_sibling keeps (CPU 1 busy): C would run on CPU 0. The
// interrupt wakeups of a real-time task and of a per-CPU kernel thread
// at t0+6.5 and 7 ms are not flips (select_task_rq_fair is not called).
func TestInterruptWakeupFlipsCurrent(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	pt := b.task("p", 120, 0, true, CauseStart, 20*ms)
	ct := b.task("c", 120, 1, true, CauseStart, 6*ms, ms)
	ht := b.task("h", 120, 1, false, CauseArrival, 20*ms)
	b.w.Tasks[ht].Activations[0].ReleaseNS = t0 + 7*ms
	irq := func(comm string, prio, cpu int32, at int64) {
		k := b.task(comm, prio, cpu, false, CauseArrival, 10000)
		b.w.Tasks[k].Activations[0].ReleaseNS = at
	}
	irq("k0a", 120, 0, t0+9*ms/2)
	irq("k0b", 120, 0, t0+5*ms)
	irq("k0c", 120, 0, t0+11*ms/2)
	irq("k0d", 120, 0, t0+6*ms)
	irq("k1a", 120, 1, t0+9*ms/2)
	irq("k1b", 120, 1, t0+5*ms)
	// Not flips: a real-time wakee and a per-CPU kernel thread.
	irq("rt0", 50, 0, t0+13*ms/2)
	irq("kworker/0:1", 120, 0, t0+7*ms)
	b.edge(pt, 0, 9*ms, ct, 1)
	b.w.Edges[len(b.w.Edges)-1].Sync = true
	w := b.done(t)
	s, ch := newSim(t, w, testConfig())
	if _, err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if got := s.tasks[pt].wakeeFlips; got != 5 {
		t.Errorf("P's wakee_flips %d, want 5 (four interrupt wakeups, then C)", got)
	}
	if got := s.tasks[ct].wakeeFlips; got != 2 {
		t.Errorf("C's wakee_flips %d, want 2 (two interrupt wakeups)", got)
	}
	r := ch.firstRunAfter(int64(w.Tasks[ct].TID), t0+7*ms)
	if r == nil {
		t.Fatal("C never ran after its wakeup")
	}
	if r.cpu != 1 {
		t.Errorf("C ran on CPU %d after P's wakeup, want its previous CPU 1 (wake_wide)", r.cpu)
	}
	t.Log(ch.namedRuns(map[int64]string{int64(w.Tasks[pt].TID): "P", int64(w.Tasks[ct].TID): "C", int64(w.Tasks[ht].TID): "H"}))
}

// --set wakee_flips=N starts every task alive at the trace start with N
// flips (what it did before the recording is not in the trace); a task
// the trace shows forked starts with its parent's at the fork.
func TestInitialWakeeFlips(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	pt := b.task("parent", 120, 0, true, CauseStart, 10*ms)
	ot := b.task("other", 120, 1, true, CauseStart, 10*ms)
	ct := b.task("child", 120, 0, false, CauseFork, ms)
	b.w.Tasks[ct].Forked = true
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: pt, OffsetNS: ms, Wakee: ct})
	w := b.done(t)
	for _, n := range []uint32{0, 6} {
		cfg := testConfig()
		s, err := ParseSetting(fmt.Sprintf("wakee_flips=%d", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(&cfg); err != nil {
			t.Fatal(err)
		}
		sim, _ := newSim(t, w, cfg)
		parent, other, child := sim.tasks[pt], sim.tasks[ot], sim.tasks[ct]
		if parent.wakeeFlips != n || other.wakeeFlips != n || child.wakeeFlips != 0 {
			t.Errorf("wakee_flips=%d: parent %d, other %d, child before its fork %d; want %d, %d, 0", n, parent.wakeeFlips, other.wakeeFlips, child.wakeeFlips, n, n)
		}
		sim.fork(sim.cpus[0], parent, child)
		if child.wakeeFlips != n {
			t.Errorf("wakee_flips=%d: child's %d after the fork, want the parent's", n, child.wakeeFlips)
		}
	}
}

// update_curr's reschedule rule by kernel version, by hand. One CPU, HZ
// 250, A (nice 0) running alone from t0; base slice 0.70 ms (v6.6, v6.12,
// latest) or 0.75 ms (v6.10); times in ms, vruntimes in ms of nice-0 time.
// The tick at t0+4 finds A's request used up (its first, half a slice,
// ended at 0.35) with nobody else queued: a new deadline 4 + s, no
// reschedule, and A's pick-time protection is over. At t0+4.1 W1 (nice 1,
// weight 820, vslice s × 1024/820: 0.874 or 0.937) arrives at V = 4.1,
// deadline 4.974 (5.037): A, eligible with the earlier deadline (4.7;
// 4.75), is the pick, so no preemption in any version. At t0+4.3 W2 (nice
// 1) arrives: A at 4.3 has not used up its request; V = (1024 × 4.3 + 820
// × 4.1) / 1844 = 4.211, so A is no longer eligible and the pick is W1
// (deadline before W2's 4.211 + 0.874), not the wakee.
//   - v6.6, v6.10: update_curr reschedules only on a used-up request, so
//     nothing switches until the tick at t0+8 finds A's (4.7; 4.75) used
//     up: W1 runs at t0+8.
//   - v6.12 (85e511df3cec): A, past its protection and not eligible, is
//     rescheduled by the enqueue's update_curr: W1 runs at t0+4.3.
//   - latest (0b9ca2dcabc3): past its protection is enough: W1 at t0+4.3.
func TestReschedRuleByVersion(t *testing.T) {
	for _, c := range []struct {
		policy string
		at     int64
	}{{"v6.6", t0 + 8*ms}, {"v6.10", t0 + 8*ms}, {"v6.12", t0 + 4300000}, {"latest", t0 + 4300000}} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 20*ms)
		w1 := b.task("w1", 121, 0, false, CauseArrival, 1*ms)
		w2 := b.task("w2", 121, 0, false, CauseArrival, 1*ms)
		b.w.Tasks[w1].Activations[0].ReleaseNS = t0 + 4100000
		b.w.Tasks[w2].Activations[0].ReleaseNS = t0 + 4300000
		if got := firstStart(t, b.done(t), policyConfig(t, c.policy), w1, c.policy); got != c.at {
			t.Errorf("%s: W1 first ran at t0%+d ns, want t0%+d ns", c.policy, got-t0, c.at-t0)
		}
	}
}

// eevdfReschedCurr on a run queue set by hand (one CPU, three nice-0
// tasks, slice 0.7, vruntimes in ms from min_vruntime 0): A running at 1.0
// (picked with deadline 0.8, its protection; renewed to 1.5), Q queued at
// 0.5 (deadline 1.2), X queued at 3.0 (deadline 3.7). V = (1.0 + 0.5 +
// 3.0) / 3 = 1.5: A is eligible but Q, eligible with the earlier deadline,
// is the better pick. With A at 2.0 instead (deadline renewed to 2.2, or
// picked with 2.1 and still protected), V = 1.833 and A is not eligible.
// Each case asks whether the update_curr the kernel runs now reschedules
// A.
func TestEEVDFReschedCurrRule(t *testing.T) {
	cases := []struct {
		what                  string
		vA, dl, vprot         int64
		crossed               bool
		nr                    int
		v66, v610, v612, last bool
	}{
		{"eligible, past its protection", 1 * ms, 1500000, 800000, false, 3, false, false, false, true},
		{"not eligible, past its protection", 2 * ms, 2200000, 800000, false, 3, false, false, true, true},
		{"request used up since the last update", 1 * ms, 1500000, 800000, true, 3, true, true, true, true},
		{"request used up, alone", 1 * ms, 1500000, 800000, true, 1, false, false, false, false},
		{"not eligible, still protected", 2 * ms, 2100000, 2100000, false, 3, false, false, false, false},
	}
	for _, policy := range []string{"v6.6", "v6.10", "v6.12", "latest"} {
		for _, c := range cases {
			b := newBuilder(t, "sockets=1,cores=1,threads=1")
			b.task("a", 120, 0, true, CauseStart, 20*ms)
			b.task("q", 120, 0, false, CauseStart, 20*ms)
			b.task("x", 120, 0, false, CauseStart, 20*ms)
			s, _ := newSim(t, b.done(t), policyConfig(t, policy))
			r := s.cpus[0]
			a, q, x := s.tasks[0], s.tasks[1], s.tasks[2]
			a.vruntime, a.deadline, a.vprot, a.state = c.vA, c.dl, c.vprot, tsRunning
			q.vruntime, q.deadline, q.state = 500000, 1200000, tsQueued
			x.vruntime, x.deadline, x.state = 3*ms, 3700000, tsQueued
			r.curr = a
			r.treeInsert(q)
			r.treeInsert(x)
			r.nrCFS = 3
			r.deadlineCrossed = c.crossed
			want := map[string]bool{"v6.6": c.v66, "v6.10": c.v610, "v6.12": c.v612, "latest": c.last}[policy]
			if got := s.eevdfReschedCurr(r, c.nr); got != want {
				t.Errorf("%s, %s: reschedule %v, want %v", policy, c.what, got, want)
			}
			if r.deadlineCrossed {
				t.Errorf("%s, %s: the used-up request was not consumed", policy, c.what)
			}
		}
	}
}

// A sleeping task reniced keeps its lag, not its vlag (reweight_entity:
// vlag × old weight / new weight), by hand. One CPU, latest, HZ 1000
// (ticks every ms), base slice 0.70 ms, a start-of-trace task's first
// request half that; vruntimes in ms. A (nice 0) runs from t0 with B (nice
// 0) queued, both at 0. The tick at t0+1 ends A's request (deadline 1.7)
// and B runs; B blocks at t0+1.3 at 0.3, eligible (V = 0.65), so it leaves
// with vlag 0.35. Its next activation, an arrival at t0+1.5, the trace
// shows at nice 5 (weight 335, vslice 2.1397): its vlag becomes 0.35 ×
// 1024/335 = 1.06985. With A at 1.2 alone, place_entity inflates it by
// (1024 + 335)/1024: B at 1.2 − 1.41986 = −0.21986 (without the scaling
// 1.2 − 0.46450 = 0.73550), and A, not eligible with B that far behind,
// is preempted. B, at 3.0567 virtual ms per ms, keeps its protection to
// its deadline (0.7 ms of its time) and is switched out at the tick at
// t0+3, at 4.365 (5.320). A then runs, picked again at each tick (B not
// eligible) until it passes B: at 4.365 after t0+6.165, so B runs again at
// the tick at t0+7 (without the scaling at t0+8).
func TestRenicedSleeperLag(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("a", 120, 0, true, CauseStart, 20*ms)
	bt := b.task("b", 120, 0, false, CauseStart, 300000, 5*ms)
	a := &b.w.Tasks[bt].Activations[1]
	a.Cause, a.SleepNS, a.ReleaseNS = CauseArrival, 200000, t0+1500000
	a.Prio, a.OwnPrio = 125, true
	cfg := policyConfig(t, "latest")
	cfg.HZ = 1000
	_, ch := replayChecked(t, b.done(t), cfg)
	starts := ch.runStarts(int64(100 + bt))
	if want := []int64{1 * ms, 1500000, 7 * ms}; fmt.Sprint(starts[:min(3, len(starts))]) != fmt.Sprint(want) {
		t.Errorf("B's runs start at t0 + %v ns, want %v", starts, want)
	}
}

// handSim is a replay whose run queues a test sets by hand (handSet): one
// nice-0 task per name (20 ms of work, none run yet: the builder's start
// CPU and running flag matter only to Run), the clock at t0.
func handSim(t *testing.T, topo, policy string, names ...string) *Sim {
	t.Helper()
	b := newBuilder(t, topo)
	for _, n := range names {
		b.task(n, 120, 0, false, CauseStart, 20*ms)
	}
	s, _ := newSim(t, b.done(t), policyConfig(t, policy))
	s.now = t0
	return s
}

// handSet puts t on r by hand, started, at vruntime v with deadline dl:
// running (curr, protected to dl), queued, or delayed (tsSleeping: blocked
// while still in the tree, as delayed dequeue leaves it).
func handSet(s *Sim, r *rq, t *simTask, v, dl int64, state tstate) {
	t.trig[0] = true
	s.startActivation(t, 0)
	t.cpu = int32(r.cpu)
	t.vruntime, t.deadline = v, dl
	r.loadWeight += t.weight
	t.state = state
	switch state {
	case tsRunning:
		r.nrCFS++
		t.vprot = dl
		r.curr, r.currStart = t, s.now
	case tsQueued:
		r.nrCFS++
		r.treeInsert(t)
	case tsSleeping:
		t.delayed = true
		r.nrDelayed++
		r.treeInsert(t)
	}
}

// PLACE_REL_DEADLINE (v6.12), by hand: two CPUs (base slice 0.7 ms × 2 =
// 1.4 ms; 0.75 × 2 = 1.5 ms in v6.10), vruntimes in ms. CPU 0 runs A at
// 1.0 with C queued at 0.2, its deadline 0.7 (0.5 of its request left);
// CPU 1 runs D at 3.0. The balancer moves C: its lag on CPU 0 is V − v =
// 0.6 − 0.2 = 0.4, inflated on CPU 1 by (1024 + 1024)/1024 to 0.8, so C
// is placed at 3.0 − 0.8 = 2.2. From v6.12 it keeps the 0.5 left of its
// request (deadline 2.7); before, it got a fresh one (2.2 + 1.5 = 3.7).
func TestPlaceRelDeadline(t *testing.T) {
	for _, c := range []struct {
		policy   string
		deadline int64
	}{{"v6.10", 3700000}, {"v6.12", 2700000}, {"latest", 2700000}} {
		s := handSim(t, "sockets=1,cores=2,threads=1", c.policy, "a", "c", "d")
		r0, r1 := s.cpus[0], s.cpus[1]
		a, ct, d := s.tasks[0], s.tasks[1], s.tasks[2]
		handSet(s, r0, a, 1*ms, 1500000, tsRunning)
		handSet(s, r0, ct, 200000, 700000, tsQueued)
		handSet(s, r1, d, 3*ms, 3500000, tsRunning)
		s.migrateQueued(ct, r0, r1, MigrationSourcePeriodic)
		if ct.vruntime != 2200000 || ct.deadline != c.deadline {
			t.Errorf("%s: C moved to vruntime %d, deadline %d; want 2200000, %d", c.policy, ct.vruntime, ct.deadline, c.deadline)
		}
	}
}

// A delayed task's wakeup takes its lag before the running task is
// charged (requeue_delayed_entity comes before any update_curr), by hand.
// One CPU, latest, HZ 1000, base slice 0.70 ms (first requests 0.35);
// vruntimes in ms. D runs from t0 with A queued (both at 0) and blocks at
// t0+0.9 at 0.9, not eligible (V = 0.45): delayed, its deadline renewed to
// 1.6. A runs; the tick at t0+1 charges it to 0.1. D wakes at t0+1.95:
// with A as last charged V = 0.5, so D's lag is negative and it keeps 0.9
// and 1.6. The wakeup check's update_curr then charges A to 1.05 (request
// used up: deadline 1.75, a reschedule) and D, eligible (V = 0.975), runs
// at t0+1.95. The tick at t0+3 ends its request at 1.95 and A runs
// (protected to 1.75); the tick at t0+4 ends A's at 2.05 and D, eligible
// (V = 2.0), runs. Charging A first (V = 0.975, D's lag positive) had
// placed D again at 1.05 (deadline 1.75): it left the CPU at 2.1 and,
// not eligible at t0+4 (V = 2.075), ran only at t0+5.
func TestRequeueDelayedBeforeCharge(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	dt := b.task("d", 120, 0, true, CauseStart, 900000, 10*ms)
	b.task("a", 120, 0, false, CauseStart, 20*ms)
	a := &b.w.Tasks[dt].Activations[1]
	a.Cause, a.SleepNS, a.ReleaseNS = CauseArrival, 1050000, t0+1950000
	cfg := policyConfig(t, "latest")
	cfg.HZ = 1000
	_, ch := replayChecked(t, b.done(t), cfg)
	starts := ch.runStarts(int64(100 + dt))
	if want := []int64{0, 1950000, 4 * ms}; fmt.Sprint(starts[:min(3, len(starts))]) != fmt.Sprint(want) {
		t.Errorf("D's runs start at t0 + %v ns, want %v", starts, want)
	}
}

// A request used up is renewed from the vruntime of the kernel's next
// update_curr, not at a milestone only this engine charges at, by hand.
// Two CPUs (base slice 0.7 ms × 2 = 1.4 ms; a start-of-trace task's first
// request 0.7), latest, HZ 250; vruntimes in ms. A runs alone on CPU 0
// from t0 (its request ends at 0.7, unseen) and at t0+2 wakes X, which
// runs on the idle CPU 1. At t0+3 a timer wakes W (a first arrival, lag
// 0) on CPU 0, CPU 1 being busy: the enqueue's update_curr renews A's
// request at 3.0 (deadline 4.4) with nobody else queued, so no
// reschedule; W is placed at V = 3.0 with deadline 4.4. A is eligible and
// past its protection, the deadlines tie, and from v6.8 the queued entity
// wins the tie: W is the pick and preempts A at t0+3. Renewed at the
// milestone (t0+2: deadline 3.4), A kept the CPU until the tick at t0+4.
func TestDeadlineRenewedByKernelUpdate(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	at := b.task("a", 120, 0, true, CauseStart, 20*ms)
	xt := b.task("x", 120, 1, false, CauseWake, 10*ms)
	wt := b.task("w", 120, 0, false, CauseArrival, 1*ms)
	b.edge(at, 0, 2*ms, xt, 0)
	b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 3*ms
	w := b.done(t)
	_, ch := replayChecked(t, w, policyConfig(t, "latest"))
	if r := ch.firstRunAfter(int64(100+xt), 0); r == nil || r.cpu != 1 {
		t.Fatalf("X's first run %+v, want on CPU 1", r)
	}
	if r := ch.firstRunAfter(int64(100+wt), 0); r == nil || r.start != t0+3*ms || r.cpu != 0 {
		t.Errorf("W's first run %+v, want on CPU 0 at t0+3 ms", r)
	}
}

// The lag clamp, by hand: one CPU (base slice 0.70 ms), HZ 250. A runs
// at vruntime 10 ms with T queued at 0: V = 5 ms, T's lag 5 ms. Clamped
// to max(2 × 0.7, 4) = 4 ms before 6e3c0a4e1ad1, to 0.7 + 4 = 4.7 ms
// (the largest slice plus a tick) in latest.
func TestLagClamp(t *testing.T) {
	for _, c := range []struct {
		policy string
		vlag   int64
	}{{"v6.12", 4 * ms}, {"latest", 4700000}} {
		s := handSim(t, "sockets=1,cores=1,threads=1", c.policy, "a", "t")
		r, a, q := s.cpus[0], s.tasks[0], s.tasks[1]
		a.vruntime, a.deadline, a.state = 10*ms, 10700000, tsRunning
		q.vruntime, q.deadline, q.state = 0, 700000, tsQueued
		r.curr = a
		r.treeInsert(q)
		r.nrCFS = 2
		s.eevdfUpdateLag(r, q)
		if q.vlag != c.vlag {
			t.Errorf("%s: vlag %d, want %d", c.policy, q.vlag, c.vlag)
		}
	}
}

// The balancer and a delayed task, on run queues set by hand: two CPUs
// (base slice 1.4 ms), vruntimes in ms. CPU 0 runs A at 1.0 with D
// delayed in its tree at 2.0 (deadline 2.6: blocked while not eligible);
// CPU 1 runs C at 3.0. v6.12 (6.12.19's can_migrate_task has no test for
// it) may move D whatever the migration type; from v6.14 (61b82dfb6b7e,
// latest) only to migrate load, and with 873199d27bb2 (v6.14, latest) not
// at all while the domain's balancing has not failed: a delayed task is
// not eligible, and CPU 1 has C queued (latest~873199d27bb2 isolates
// 61b82dfb6b7e's rule). Moved, D stays delayed on CPU 1: in its
// tree and load, not runnable (nr_running unchanged). Its lag on CPU 0 is
// V − v = 1.5 − 2.0 = −0.5, inflated by 2048/1024 on CPU 1: D at 3.0 + 1.0
// = 4.0, keeping the 0.6 left of its request (PLACE_REL_DEADLINE):
// deadline 4.6. Its util_est left CPU 0 at its delayed dequeue and joins
// CPU 1 only when it wakes.
func TestDelayedTaskMove(t *testing.T) {
	for _, c := range []struct {
		policy     string
		typ        MigrationType
		canMigrate bool
	}{{"v6.12", MigrateTask, true}, {"v6.12", MigrateLoad, true}, {"latest", MigrateTask, false}, {"latest", MigrateUtil, false}, {"latest", MigrateLoad, false}, {"latest~873199d27bb2", MigrateLoad, true}} {
		s := handSim(t, "sockets=1,cores=2,threads=1", c.policy, "a", "d", "c")
		s.now = t0 + 10*ms
		r0, r1 := s.cpus[0], s.cpus[1]
		a, d, ct := s.tasks[0], s.tasks[1], s.tasks[2]
		handSet(s, r0, a, 1*ms, 1500000, tsRunning)
		handSet(s, r1, ct, 3*ms, 3500000, tsRunning)
		handSet(s, r0, d, 2*ms, 2600000, tsSleeping)
		// util_est: A's is enqueued on CPU 0; D's (300, as enqueued
		// before it blocked) left at its delayed dequeue, so the move
		// takes none from CPU 0 and adds none to 1.
		a.utilEstEnq, r0.utilEst, d.ueEwma, d.utilEstEnq = 200, 200, 300, 300
		e := s.newLBRun(r1.sd[0], 1, CPUIdle)
		e.MigrationType = c.typ
		if got := s.canMigrateTask(e, d, r0); got != c.canMigrate {
			t.Errorf("%s, %v: can_migrate_task %v, want %v", c.policy, c.typ, got, c.canMigrate)
		}
		s.endLBRun()
		if !c.canMigrate {
			continue
		}
		s.migrateQueued(d, r0, r1, MigrationSourcePeriodic)
		if !d.delayed || d.cpu != 1 || r0.nrDelayed != 0 || r1.nrDelayed != 1 || r1.nrCFS != 1 || r1.loadWeight != 2048 || len(r1.tree) != 1 {
			t.Errorf("%s: after the move D delayed %v on CPU %d; CPU 0 %d delayed, CPU 1 %d delayed, %d runnable, load %d, %d in the tree", c.policy, d.delayed, d.cpu, r0.nrDelayed, r1.nrDelayed, r1.nrCFS, r1.loadWeight, len(r1.tree))
		}
		if r0.utilEst != 200 || r1.utilEst != 0 {
			t.Errorf("%s: util_est after the move %d on CPU 0, %d on CPU 1; want 200, 0", c.policy, r0.utilEst, r1.utilEst)
		}
		if d.vruntime != 4*ms || d.deadline != 4600000 {
			t.Errorf("%s: D placed at %d, deadline %d; want 4000000, 4600000", c.policy, d.vruntime, d.deadline)
		}
	}
}

// A request used up is renewed by the kernel's update_curr even when this
// engine charged the task at the same instant, by hand: one CPU, latest,
// HZ 250 (slice 0.7 ms, a first request 0.35), vruntimes in ms. A runs
// alone from t0 and at t0+2 (its milestone) wakes W on its CPU: the
// enqueue's update_curr renews A's request at 2.0 (deadline 2.7), nobody
// else queued; W, a first wakeup, is placed at V = 2.0 with deadline 2.7.
// A is eligible and past its protection, the deadlines tie and the queued
// task wins (v6.8 on): W runs at t0+2. Left stale (0.35), A's deadline
// won the pick and W waited for the tick at t0+4.
func TestDeadlineRenewedAtMilestoneInstant(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	at := b.task("a", 120, 0, true, CauseStart, 20*ms)
	wt := b.task("w", 120, 0, false, CauseWake, 1*ms)
	b.edge(at, 0, 2*ms, wt, 0)
	if got := firstStart(t, b.done(t), policyConfig(t, "latest"), wt, "latest"); got != t0+2*ms {
		t.Errorf("W first ran at t0%+d ns, want t0+2 ms", got-t0)
	}
}

// The enqueue's update_curr runs before the wakee is counted, on a run
// queue set by hand: one CPU, latest, vruntimes in ms. A runs at 1.0
// (deadline 1.5, picked with 0.8: past its protection). W wakes (a first
// wakeup, lag 0): with A alone the update_curr finds nobody else queued and
// asks for no reschedule (counted, latest's rule had rescheduled A at any
// wakeup); with Q queued at 0.5 it does.
func TestEnqueueReschedBeforeWakee(t *testing.T) {
	for _, withQ := range []bool{false, true} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("a", 120, 0, true, CauseStart, 20*ms)
		b.task("q", 120, 0, false, CauseStart, 20*ms)
		b.task("w", 120, 0, false, CauseArrival, 1*ms)
		s, _ := newSim(t, b.done(t), policyConfig(t, "latest"))
		s.now = t0
		r, a, q, w := s.cpus[0], s.tasks[0], s.tasks[1], s.tasks[2]
		handSet(s, r, a, 1*ms, 1500000, tsRunning)
		a.vprot = 800000
		if withQ {
			handSet(s, r, q, 500000, 1200000, tsQueued)
		}
		w.trig[0] = true
		s.startActivation(w, 0)
		s.enqueue(r, w, enqWakeup)
		if r.enqResched != withQ {
			t.Errorf("Q queued %v: the enqueue's update_curr asked for a reschedule %v, want %v", withQ, r.enqResched, withQ)
		}
	}
}

// A delayed task's requeue runs update_curr's reschedule rule, on a run
// queue set by hand: one CPU, vruntimes in ms. A runs at 1.0 (deadline
// 1.5, past its protection of 0.8), Q is queued at 0.5 (deadline 1.2) and
// D is delayed at 2.0 (deadline 2.6). D wakes: V = (1.0 + 0.5 + 2.0) / 3
// = 1.167, its lag negative, so it keeps its place and is not eligible;
// the pick is Q, not the wakee, so the wakeup check alone switches
// nothing. Only latest's rule (past its protection, others queued)
// reschedules A, and Q runs; in v6.12 A is eligible and its request not
// used up, so A runs on.
func TestRequeueDelayedReschedRule(t *testing.T) {
	for _, c := range []struct {
		policy string
		runs   string
	}{{"v6.12", "a"}, {"latest", "q"}} {
		s := handSim(t, "sockets=1,cores=1,threads=1", c.policy, "a", "q", "d")
		r, a, q, d := s.cpus[0], s.tasks[0], s.tasks[1], s.tasks[2]
		handSet(s, r, a, 1*ms, 1500000, tsRunning)
		a.vprot = 800000
		handSet(s, r, q, 500000, 1200000, tsQueued)
		handSet(s, r, d, 2*ms, 2600000, tsSleeping)
		s.requeueDelayed(d, nil, -1)
		if d.vruntime != 2*ms || d.deadline != 2600000 || d.delayed {
			t.Fatalf("%s: D requeued at %d, deadline %d, delayed %v; want 2000000, 2600000, false", c.policy, d.vruntime, d.deadline, d.delayed)
		}
		if got := r.curr; got == nil || got.w.Comm != c.runs {
			t.Errorf("%s: %s runs after D's wakeup, want %s", c.policy, commOf(got), c.runs)
		}
	}
}

// From v6.12 a fork runs no update_curr on the parent's CPU, by hand: two
// CPUs, HZ 250, base slice 0.7 ms (a start-of-trace task's first request
// 0.35), vruntimes in ms. A runs alone on CPU 0 from t0 and at t0+2 forks
// C, which goes to the idle CPU 1. At t0+2.5 a timer wakes W (lag 0) on
// CPU 0.
//   - v6.6: the fork's update_curr renewed A's used-up request at 2.0
//     (deadline 2.7). W is placed at V = 2.5 (deadline 3.2); A, eligible
//     with the earlier deadline, is the pick, and W waits for the tick at
//     t0+4, which finds A's request used up.
//   - v6.12, latest: A's request is renewed only by W's enqueue, at 2.5
//     (deadline 3.2), with nobody else queued; the deadlines tie and the
//     queued W wins: it runs at t0+2.5.
func TestForkRunsNoUpdateCurr(t *testing.T) {
	for _, c := range []struct {
		policy string
		at     int64
	}{{"v6.6", t0 + 4*ms}, {"v6.12", t0 + 2500000}, {"latest", t0 + 2500000}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		at := b.task("a", 120, 0, true, CauseStart, 20*ms)
		ct := b.task("c", 120, 1, false, CauseFork, 10*ms)
		b.w.Tasks[ct].Forked = true
		b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: at, OffsetNS: 2 * ms, Wakee: ct})
		wt := b.task("w", 120, 0, false, CauseArrival, 1*ms)
		b.w.Tasks[wt].Activations[0].ReleaseNS = t0 + 2500000
		cfg := policyConfig(t, c.policy)
		_, ch := replayChecked(t, b.done(t), cfg)
		if r := ch.firstRunAfter(int64(100+ct), 0); r == nil || r.cpu != 1 {
			t.Fatalf("%s: C's first run %+v, want on CPU 1", c.policy, r)
		}
		if r := ch.firstRunAfter(int64(100+wt), 0); r == nil || r.start != c.at || r.cpu != 0 {
			t.Errorf("%s: W's first run %+v, want on CPU 0 at t0%+d ns", c.policy, r, c.at-t0)
		}
	}
}

// commOf names a task for a test's message ("none" for an idle CPU).
func commOf(t *simTask) string {
	if t == nil {
		return "none"
	}
	return t.w.Comm
}

// The balancer's dequeue runs update_curr's reschedule rule on the CPU it
// pulls from, with the pulled task still counted, at the first task of a
// pass only (its clock is updated once: later dequeues find no time run),
// on run queues set by hand: two CPUs, vruntimes in ms. CPU 0 runs A at
// 1.0 with Q queued at 0.5 (deadline 1.2) and the tasks to pull; CPU 1
// runs D. Once they are gone V = (1.0 + 0.5) / 2 = 0.75 on CPU 0 and the
// pick is Q, so a reschedule switches A out for Q.
//   - Pulling C at 0.6 (deadline 1.3), A's request used up (deadline 0.9,
//     not yet renewed): every EEVDF kernel reschedules.
//   - The same, A's request not used up (deadline 1.5) but past its
//     protection (0.8): latest's rule (0b9ca2dcabc3), and v6.12's, A not
//     being eligible (V = (1.0 + 0.5 + 0.6) / 3 = 0.7 with C counted).
//   - Pulling C at 2.0 (deadline 2.7) instead: with C counted V = 1.167
//     and A is eligible, so only latest's rule.
//   - Pulling C1 at 3.0 (deadline 3.7), then C2 at 0.6, in one pass: at
//     the first dequeue V = 1.275 and A is eligible (v6.12: no); at the
//     second, V = 0.7, the rule is not evaluated. Only latest's.
//   - Still protected (to 1.5): no version.
//
// Left to CPU 0's next tick, A ran on.
func TestBalancerDequeueResched(t *testing.T) {
	type pulled struct{ v, dl int64 }
	cases := []struct {
		what          string
		dl, vprot     int64
		pull          []pulled
		v66, v612, lt bool
	}{
		{"request used up", 900000, 900000, []pulled{{600000, 1300000}}, true, true, true},
		{"past its protection", 1500000, 800000, []pulled{{600000, 1300000}}, false, true, true},
		{"past its protection, eligible with C counted", 1500000, 800000, []pulled{{2 * ms, 2700000}}, false, false, true},
		{"two in one pass", 1500000, 800000, []pulled{{3 * ms, 3700000}, {600000, 1300000}}, false, false, true},
		{"protected", 1500000, 1500000, []pulled{{600000, 1300000}}, false, false, false},
	}
	for _, policy := range []string{"v6.6", "v6.12", "latest"} {
		for _, c := range cases {
			names := []string{"a", "q", "d"}
			for range c.pull {
				names = append(names, "c")
			}
			s := handSim(t, "sockets=1,cores=2,threads=1", policy, names...)
			r0, r1 := s.cpus[0], s.cpus[1]
			a, q, d := s.tasks[0], s.tasks[1], s.tasks[2]
			handSet(s, r0, a, 1*ms, c.dl, tsRunning)
			a.vprot = c.vprot
			handSet(s, r0, q, 500000, 1200000, tsQueued)
			handSet(s, r1, d, 3*ms, 3500000, tsRunning)
			var picked []*simTask
			for i, p := range c.pull {
				ct := s.tasks[3+i]
				handSet(s, r0, ct, p.v, p.dl, tsQueued)
				picked = append(picked, ct)
			}
			s.moveTasks(picked, r0, r1, MigrationSourcePeriodic)
			want := "a"
			if map[string]bool{"v6.6": c.v66, "v6.12": c.v612, "latest": c.lt}[policy] {
				want = "q"
			}
			if got := commOf(r0.curr); got != want {
				t.Errorf("%s, %s: %s runs on CPU 0 after the pull, want %s", policy, c.what, got, want)
			}
		}
	}
}

// Before v6.12 a fork's update_curr can reschedule the parent while the
// EEVDF pick is still the parent; an RT child forked onto its CPU then
// runs at once (the class comes first), on a run queue set by hand: one
// CPU, v6.6, vruntimes in ms. A runs at 1.0 with its request used up
// (deadline 0.9) and Q queued at 2.0 (deadline 2.7): the fork's
// update_curr renews A's request (1.7) and, Q queued, reschedules; the
// fair pick is A (Q, above V = 1.5, is not eligible), and the RT child C
// runs.
func TestForkReschedRTChild(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	b.task("a", 120, 0, true, CauseStart, 20*ms)
	b.task("q", 120, 0, false, CauseStart, 20*ms)
	ct := b.task("c", 50, 0, false, CauseFork, 1*ms)
	b.w.Tasks[ct].Forked = true
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: 0, OffsetNS: 1 * ms, Wakee: ct})
	s, _ := newSim(t, b.done(t), policyConfig(t, "v6.6"))
	s.now = t0
	r, a, q, c := s.cpus[0], s.tasks[0], s.tasks[1], s.tasks[2]
	handSet(s, r, a, 1*ms, 900000, tsRunning)
	handSet(s, r, q, 2*ms, 2700000, tsQueued)
	s.fork(r, a, c)
	if !c.rt {
		t.Fatalf("C is not a real-time task")
	}
	if got := commOf(r.curr); got != "c" {
		t.Errorf("%s runs after the fork, want c", got)
	}
}

// Before v6.12 a fork runs update_curr on the parent's CPU, and its
// reschedule rule with it, by hand: two CPUs, HZ 250, base slice 0.7 ms (start-of-trace
// requests 0.35), vruntimes in ms. A runs on CPU 0 from t0 with B queued
// there (both pinned to it, at 0, deadlines 0.35); at t0+1 A forks C,
// pinned to CPU 1. v6.6: the fork's update_curr finds A's request used up
// with B queued: B runs at t0+1 (V = 0.5, B eligible with the earlier
// deadline). v6.12, latest: no update_curr there; the tick at t0+4 finds
// it. (Left as a crossing to the next update, v6.6 too waited for the
// tick.)
func TestForkUpdateCurrResched(t *testing.T) {
	for _, c := range []struct {
		policy string
		at     int64
	}{{"v6.6", t0 + 1*ms}, {"v6.12", t0 + 4*ms}, {"latest", t0 + 4*ms}} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		at := b.task("a", 120, 0, true, CauseStart, 20*ms)
		bt := b.task("b", 120, 0, false, CauseStart, 20*ms)
		ct := b.task("c", 120, 1, false, CauseFork, 10*ms)
		b.w.Tasks[at].Pinned, b.w.Tasks[bt].Pinned, b.w.Tasks[ct].Pinned = 0, 0, 1
		b.w.Tasks[ct].Forked = true
		b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: at, OffsetNS: 1 * ms, Wakee: ct})
		if got := firstStart(t, b.done(t), policyConfig(t, c.policy), bt, c.policy); got != c.at {
			t.Errorf("%s: B first ran at t0%+d ns, want t0%+d ns", c.policy, got-t0, c.at-t0)
		}
	}
}

// The pick at a switch sees the task being switched out as cfs_rq->curr
// (pick_next_task_fair picks before put_prev_entity), on a run queue set
// by hand: one CPU, nice 0, vruntimes in ms. A runs at 1.0, Q is queued at
// 1.2 (deadline 1.7), X at 1.5 (deadline 2.2): V = 1.233, A and Q
// eligible, X not. A reschedule switches A out for Q when A's deadline
// ties Q's (1.7, past its protection: the queued entity wins the tie), and
// keeps A when A is still protected (deadline 1.9): RUN_TO_PARITY. Put
// back in the tree first and picked like any queued task, A lost to Q's
// earlier deadline though protected; the tie it loses either way (put
// back, it is the last inserted). The tie is v6.8's rule (2227a957e1d5, a
// tree sorted by deadline); 6.6's heap search starts from curr and, on
// this two-node tree, would keep A (its tie order depends on the tree's
// shape: not modelled).
func TestPickAtSwitchSeesPrevAsCurr(t *testing.T) {
	for _, c := range []struct {
		what      string
		dl, vprot int64
		runs      string
		policies  []string
	}{
		{"deadline tie, past its protection", 1700000, 800000, "q", []string{"v6.12", "latest"}},
		{"protected", 1900000, 1900000, "a", []string{"v6.6", "v6.12", "latest"}},
	} {
		for _, policy := range c.policies {
			s := handSim(t, "sockets=1,cores=1,threads=1", policy, "a", "q", "x")
			r, a, q, x := s.cpus[0], s.tasks[0], s.tasks[1], s.tasks[2]
			handSet(s, r, a, 1*ms, c.dl, tsRunning)
			a.vprot = c.vprot
			handSet(s, r, q, 1200000, 1700000, tsQueued)
			handSet(s, r, x, 1500000, 2200000, tsQueued)
			s.preempt(r)
			if got := commOf(r.curr); got != c.runs {
				t.Errorf("%s, %s: %s runs after the switch, want %s", policy, c.what, got, c.runs)
			}
		}
	}
}

// Equal deadlines, on a run queue set by hand: one CPU, vruntimes in ms.
// A runs at 2.0 (deadline 2.7); Q1 is queued at 1.2 and then Q2 at 1.0,
// both with deadline 1.9: V = 1.4, both eligible, A not. From v6.8 the
// tree is sorted by deadline and equal keys go right of those already
// there, so the pick (its leftmost eligible entity) is Q1, inserted first.
// 6.6's tree, sorted by vruntime, has Q1 at the root and Q2 on its left;
// its heap search finds the earliest deadline in that left branch: Q2 (as
// the smaller vruntime here).
func TestDeadlineTieInsertionOrder(t *testing.T) {
	for _, c := range []struct{ policy, pick string }{{"v6.6", "q2"}, {"v6.10", "q1"}, {"v6.12", "q1"}, {"latest", "q1"}} {
		s := handSim(t, "sockets=1,cores=1,threads=1", c.policy, "a", "q1", "q2")
		r, a, q1, q2 := s.cpus[0], s.tasks[0], s.tasks[1], s.tasks[2]
		handSet(s, r, a, 2*ms, 2700000, tsRunning)
		handSet(s, r, q1, 1200000, 1900000, tsQueued)
		handSet(s, r, q2, 1*ms, 1900000, tsQueued)
		if got := commOf(s.eevdfPick(r)); got != c.pick {
			t.Errorf("%s: pick_eevdf %s, want %s", c.policy, got, c.pick)
		}
	}
}

// A task DELAY_DEQUEUE keeps queued is an entity on the queue that is not
// runnable (se_runnable is false for sched_delayed, __update_load_avg_se
// takes !!on_rq for its load), by hand: one CPU, v6.12; D, delayed from
// t0 with its averages at 0, is brought to 32 PELT periods (32 × 1,024
// µs) later by its final dequeue, or by an update while still queued.
// Its load_avg is then 1024 × (1 − y^32) = 512 (within the divider's
// rounding), its runnable_avg and util_avg 0. Taken as off the queue, as
// the engine did before, its load stayed at 0.
func TestDelayedTaskPELT(t *testing.T) {
	for _, how := range []string{"final dequeue", "update while queued"} {
		s := handSim(t, "sockets=1,cores=1,threads=1", "v6.12", "a", "d")
		r := s.cpus[0]
		a, d := s.tasks[0], s.tasks[1]
		handSet(s, r, a, 1*ms, 1500000, tsRunning)
		handSet(s, r, d, 2*ms, 2600000, tsSleeping)
		d.avg = avg{lastUpdate: t0}
		s.now = t0 + 32*1024*1000
		if how == "final dequeue" {
			s.finishDelayed(r, d)
		} else {
			s.updateTaskLoad(r, d)
		}
		if l := d.avg.loadAvg; l < 500 || l > 525 || d.avg.runnableAvg != 0 || d.avg.utilAvg != 0 {
			t.Errorf("%s: D's load_avg %d runnable_avg %d util_avg %d; want about 512, 0, 0", how, l, d.avg.runnableAvg, d.avg.utilAvg)
		}
	}
}
