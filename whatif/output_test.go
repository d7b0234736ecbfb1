package whatif

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/timeline"
)

// kindsSink collects a replay's events of the given kinds (their
// fields dropped: the tests read the columns).
type kindsSink struct {
	kinds []timeline.Kind
	ev    []timeline.Event
}

func collectKinds(kinds ...timeline.Kind) *kindsSink { return &kindsSink{kinds: kinds} }

func (s *kindsSink) Emit(e *timeline.Event) error {
	if slices.Contains(s.kinds, e.Kind) {
		c := *e
		c.Fields = nil
		s.ev = append(s.ev, c)
	}
	return nil
}

// sched_stat_runtime by kernel, by hand: one CPU; an RT task (prio 49)
// woken by a timer 1 ms into a CFS hog's 3 ms run runs 0.5 ms, then the
// hog finishes. v5.10 traces CFS runtime only, with vruntime: the hog's two
// slices, 1 ms and 2 ms. 6.1's update_curr_rt traces the RT task's 0.5 ms
// too, with vruntime 0 (as the guests' traces show their SCHED_FIFO
// stress-ng-cyclic), but not the stopper's (migration/0). From v6.8 every
// class accounts through the same function and the field is gone.
func TestStatRuntimeByKernel(t *testing.T) {
	for _, c := range []struct {
		policy, rtComm string
		want           []int64 // runtimes, in order
		vruntime       bool
	}{
		{"llc-nr-running", "rt", []int64{ms, 2 * ms}, true},
		{"v6.1", "rt", []int64{ms, ms / 2, 2 * ms}, true},
		{"v6.1", "migration/0", []int64{ms, 2 * ms}, true},
		{"latest", "rt", []int64{ms, ms / 2, 2 * ms}, false},
	} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		b.task("hog", 120, 0, true, CauseStart, 3*ms)
		rt := b.task(c.rtComm, 49, 0, false, CauseArrival, ms/2)
		b.w.Tasks[rt].Activations[0].ReleaseNS = t0 + ms
		w := b.done(t)
		sr := collectKinds(timeline.SchedStatRuntime)
		if _, err := Replay(w, policyConfig(t, c.policy), Tee{newChecker(t), sr}); err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range sr.ev {
			got = append(got, e.Int(timeline.Runtime))
			if e.IsSet(timeline.Vruntime) != c.vruntime {
				t.Errorf("%s: vruntime field set %v, want %v", c.policy, e.IsSet(timeline.Vruntime), c.vruntime)
			}
			if e.Int(timeline.Runtime) == ms/2 && c.vruntime && e.Int(timeline.Vruntime) != 0 {
				t.Errorf("%s: the RT task's vruntime %d, want 0", c.policy, e.Int(timeline.Vruntime))
			}
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s, %s: runtimes %v, want %v", c.policy, c.rtComm, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s, %s: runtimes %v, want %v", c.policy, c.rtComm, got, c.want)
				break
			}
		}
	}
}

// Every update_curr writes its sched_stat_runtime, by hand: one CPU, HZ
// 250 (ticks at t0 + 4k ms); a CFS hog runs 10 ms from t0, and a timer
// wakes a second CFS task (1 ms of work) at 5.5 ms. The hog's tick at 4 ms
// writes 4 ms in hard-IRQ context (flag 0x08, as the kernel's tick); the
// wakee's enqueue charges the hog 1.5 ms, and the wakee preempts (the
// hog's request, renewed at the tick, is used up); the wakee's switch-out
// at 6.5 ms writes its 1 ms; the tick at 8 ms the hog's 1.5 ms since it
// resumed; its exit at 11 ms the last 3 ms. The hog's four sum to its 10 ms.
func TestStatRuntimeEveryUpdateCurr(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=1,threads=1")
	hog := b.task("hog", 120, 0, true, CauseStart, 10*ms)
	w := b.task("wakee", 120, 0, false, CauseArrival, ms)
	b.w.Tasks[w].Activations[0].ReleaseNS = t0 + 5*ms + ms/2
	sr := collectKinds(timeline.SchedStatRuntime)
	if _, err := Replay(b.done(t), policyConfig(t, "v6.12"), Tee{newChecker(t), sr}); err != nil {
		t.Fatal(err)
	}
	hogTID, wTID := int64(b.w.Tasks[hog].TID), int64(b.w.Tasks[w].TID)
	want := []struct{ at, pid, runtime, flags int64 }{
		{4 * ms, hogTID, 4 * ms, flagHardIRQ},
		{5*ms + ms/2, hogTID, ms + ms/2, 0},
		{6*ms + ms/2, wTID, ms, 0},
		{8 * ms, hogTID, ms + ms/2, flagHardIRQ},
		{11 * ms, hogTID, 3 * ms, 0},
	}
	if len(sr.ev) != len(want) {
		t.Fatalf("%d sched_stat_runtime events, want %d", len(sr.ev), len(want))
	}
	for i, e := range sr.ev {
		got := struct{ at, pid, runtime, flags int64 }{e.Time - t0, e.Int(timeline.PID), e.Int(timeline.Runtime), e.Int(timeline.CommonFlags)}
		if got != want[i] {
			t.Errorf("runtime %d: at, pid, runtime, flags = %v, want %v", i, got, want[i])
		}
	}
}

// The context a wakeup is written in, by hand. One CPU, HZ 250: a CFS hog
// runs 10 ms from t0 and an arrival wakes a second task at 5.5 ms. Its
// sched_waking is written in the arrival's interrupt context
// (Activation.IRQ: flag 0x08 or 0x10) as the hog, the task the interrupt
// found running (common_pid), and so is the enqueue's update_curr of the
// hog that follows; an arrival whose context the trace did not give is
// written as before, common_pid 0 and no flags. The ticks' records are
// hard IRQ in every case. Onto an idle CPU (the hog not started: it
// arrives at 7 ms) a hard-IRQ arrival's waking is the idle task's,
// common_pid 0, with the flag, and there is no running task to update.
func TestWakingContextByHand(t *testing.T) {
	type rec struct {
		kind           timeline.Kind
		at, pid, flags int64
		comm           string
	}
	for _, c := range []struct {
		name    string
		ctx     IRQContext
		hogIdle bool
		want    []rec
	}{
		{"hard IRQ", IRQHard, false, []rec{
			{timeline.SchedStatRuntime, 4 * ms, 100, flagHardIRQ, "hog"},
			{timeline.SchedWaking, 5*ms + ms/2, 100, flagHardIRQ, "hog"},
			{timeline.SchedStatRuntime, 5*ms + ms/2, 100, flagHardIRQ, "hog"},
		}},
		{"softirq", IRQSoft, false, []rec{
			{timeline.SchedStatRuntime, 4 * ms, 100, flagHardIRQ, "hog"},
			{timeline.SchedWaking, 5*ms + ms/2, 100, flagSoftIRQ, "hog"},
			{timeline.SchedStatRuntime, 5*ms + ms/2, 100, flagSoftIRQ, "hog"},
		}},
		{"not given", IRQNone, false, []rec{
			{timeline.SchedStatRuntime, 4 * ms, 100, flagHardIRQ, "hog"},
			{timeline.SchedWaking, 5*ms + ms/2, 0, 0, "swapper/0"},
			{timeline.SchedStatRuntime, 5*ms + ms/2, 100, 0, "hog"},
		}},
		{"onto an idle CPU", IRQHard, true, []rec{
			{timeline.SchedWaking, 5*ms + ms/2, 0, flagHardIRQ, "swapper/0"},
		}},
	} {
		b := newBuilder(t, "sockets=1,cores=1,threads=1")
		hog := b.task("hog", 120, 0, !c.hogIdle, CauseStart, 10*ms)
		w := b.task("wakee", 120, 0, false, CauseArrival, ms)
		b.w.Tasks[w].Activations[0].ReleaseNS = t0 + 5*ms + ms/2
		b.w.Tasks[w].Activations[0].IRQ = c.ctx
		if c.hogIdle {
			b.w.Tasks[hog].Activations[0].Cause = CauseArrival
			b.w.Tasks[hog].Activations[0].ReleaseNS = t0 + 7*ms
		}
		got := collectKinds(timeline.SchedWaking, timeline.SchedStatRuntime)
		if _, err := Replay(b.done(t), policyConfig(t, "v6.1"), Tee{newChecker(t), got}); err != nil {
			t.Fatal(err)
		}
		var recs []rec
		for _, e := range got.ev {
			if e.Time-t0 > 5*ms+ms/2 {
				break
			}
			recs = append(recs, rec{e.Kind, e.Time - t0, e.Int(timeline.CommonPID), e.Int(timeline.CommonFlags), e.Str(timeline.CommonComm)})
		}
		if len(recs) != len(c.want) {
			t.Fatalf("%s: records to 5.5 ms %+v, want %+v", c.name, recs, c.want)
		}
		for i := range recs {
			if recs[i] != c.want[i] {
				t.Errorf("%s: record %d %+v, want %+v", c.name, i, recs[i], c.want[i])
			}
		}
	}
}

// A task's wakeup onto a busy CPU across caches is enqueued by the
// wakelist IPI there (ttwu_queue_cond), in hard IRQ; within a cache the
// waker enqueues it itself, in its own context, on its own CPU, where the
// trace buffers record that enqueue's update_curr of the remote CPU's
// running task (as this machine's eight-vCPU traces show: the hog's
// sched_stat_runtime written on the waker's CPU as the waker). By hand: a
// hog runs on CPU 1 from t0; a task on CPU 0 wakes a kworker pinned to
// CPU 1 1 ms into its run. Its waking is the waker's, no flags, either
// way; the enqueue's update_curr of the hog at 1 ms is written on CPU 1 as
// the hog in hard IRQ on two sockets, on CPU 0 as the waker with no flags
// on one.
func TestWakelistEnqueueContextByHand(t *testing.T) {
	for _, c := range []struct {
		topo    string
		flags   int64
		onWaker bool
	}{{"sockets=2,cores=1,threads=1", flagHardIRQ, false}, {"sockets=1,cores=2,threads=1", 0, true}} {
		b := newBuilder(t, c.topo)
		hog := b.task("hog", 120, 1, true, CauseStart, 10*ms)
		waker := b.task("waker", 120, 0, true, CauseStart, 3*ms)
		kw := b.task("kworker/1:1", 120, 1, false, CauseWake, ms)
		b.edge(waker, 0, ms, kw, 0)
		got := collectKinds(timeline.SchedWaking, timeline.SchedStatRuntime)
		if _, err := Replay(b.done(t), policyConfig(t, "v6.1"), Tee{newChecker(t), got}); err != nil {
			t.Fatal(err)
		}
		hogTID, wakerTID := int64(b.w.Tasks[hog].TID), int64(b.w.Tasks[waker].TID)
		var waking, enq *timeline.Event
		for i := range got.ev {
			e := &got.ev[i]
			switch {
			case e.Time != t0+ms:
			case e.Kind == timeline.SchedWaking:
				waking = e
			case e.Kind == timeline.SchedStatRuntime && e.Int(timeline.PID) == hogTID:
				enq = e
			}
		}
		if waking == nil || enq == nil {
			t.Fatalf("%s: no waking or no update of the hog at 1 ms: %v, %v", c.topo, waking, enq)
		}
		if waking.Int(timeline.CommonPID) != wakerTID || waking.Int(timeline.CommonFlags) != 0 {
			t.Errorf("%s: waking by %d with flags %#x, want the waker's (%d), none", c.topo, waking.Int(timeline.CommonPID), waking.Int(timeline.CommonFlags), wakerTID)
		}
		wantCPU, wantAs, wantComm := int64(1), hogTID, "hog"
		if c.onWaker {
			wantCPU, wantAs, wantComm = 0, wakerTID, "waker"
		}
		if enq.Int(timeline.CPU) != wantCPU || enq.Int(timeline.CommonPID) != wantAs || enq.Str(timeline.CommonComm) != wantComm || enq.Int(timeline.CommonFlags) != c.flags {
			t.Errorf("%s: the enqueue's update of the hog written on CPU %d as %d (%s) with flags %#x, want CPU %d as %d (%s), %#x", c.topo,
				enq.Int(timeline.CPU), enq.Int(timeline.CommonPID), enq.Str(timeline.CommonComm), enq.Int(timeline.CommonFlags), wantCPU, wantAs, wantComm, c.flags)
		}
		if enq.Int(timeline.Runtime) != ms {
			t.Errorf("%s: the enqueue's update charged the hog %d ns, want its 1 ms", c.topo, enq.Int(timeline.Runtime))
		}
	}
}

// wakingContexts counts the sched_waking records of a timeline file by
// the interrupt context they were written in.
func wakingContexts(t *testing.T, path string) map[IRQContext]int {
	t.Helper()
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := map[IRQContext]int{}
	for r.Next() {
		if e := r.Event(); e.Kind == timeline.SchedWaking {
			n[irqContextOf(e.Int(timeline.CommonFlags))]++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// tickGridCount is the extractor's hard-IRQ classes of a timeline file
// against its CPUs' 4 ms tick grid (scripts/tickgrid's check).
func tickGridCount(t *testing.T, path string) TickGridCount {
	t.Helper()
	g := NewTickGridClasses()
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := ExtractWith(r, ExtractOptions{HardIRQRecord: g.Observe}); err != nil {
		t.Fatal(err)
	}
	return g.OnGrid(4000000, 100000, 300000)
}

// A replay's output, read back as a recording, shows its interrupts as
// the trace does. On stress-ng under 6.1 and 6.12 (guest-M), the traces'
// common_flags put 1,662 and 2,236 wakings in hard IRQ and 106 and 62 in
// softirq; the replay writes every arrival's waking in the context its
// trace's was, so its counts are within a few of those (1,660 and 2,233;
// 105 and 58: the replay's order makes a few wakeups redundant, so a
// count is held to 5 % of the trace's or 5 wakings, whichever is more). The
// enqueues those interrupts ran write hard-IRQ update_curr records that
// are not ticks: extracted again, the output has about as many records
// the extractor takes for enqueues as the trace (468 and 751, the output
// 423 and 671; before, none), and its ticks stay on the tick grid. That
// count follows the replay's schedule (how many interrupts find their
// CPU busy): the balancer's phase taken from the trace (FIDELITY.md round
// 82) moved it from 438 and 709, so it is held to 15 %.
func TestReplayOutputInterruptContexts(t *testing.T) {
	for _, c := range []struct {
		path, policy string
	}{
		{"../fixtures/kernels/guest-M-1s1c2t/stressng-mix.perf.data.gz", "v6.1"},
		{"../fixtures/kernels/v6.12/guest-M-1s1c2t/r1/stressng-mix.perf.data.gz", "v6.12"},
	} {
		out := replayFixtureToFile(t, c.path, c.policy)
		trace, sim := wakingContexts(t, c.path), wakingContexts(t, out)
		for _, ctx := range []IRQContext{IRQHard, IRQSoft} {
			if d := sim[ctx] - trace[ctx]; max(d, -d) > max(trace[ctx]/20, 5) || trace[ctx] == 0 {
				t.Errorf("%s: %d wakings in %s, the trace %d (want within 5 %% or 5)", c.path, sim[ctx], ctx, trace[ctx])
			}
		}
		kt, ks := tickGridCount(t, c.path), tickGridCount(t, out)
		t.Logf("%s: trace %+v, replay %+v; wakings trace %v, replay %v", c.path, kt, ks, trace, sim)
		if d := ks.Others - kt.Others; d*100 > 15*kt.Others || -d*100 > 15*kt.Others {
			t.Errorf("%s: %d hard-IRQ enqueue records extracted from the output, the trace %d (want within 15 %%)", c.path, ks.Others, kt.Others)
		}
		if ks.TicksOnGrid*100 < ks.Ticks*95 {
			t.Errorf("%s: %d of the output's %d ticks on the grid", c.path, ks.TicksOnGrid, ks.Ticks)
		}
	}
}

// The output names each record's thread group as the trace does (perf's
// sample pid): on guest-P's schbench every schbench thread (414, its
// message threads and workers 416-425) is in process 414 (`perf script
// -F comm,tid,pid`), and so is every record the replay writes in their
// context; the idle task's are 0/0. Extracting the output again gives the
// tasks the same thread groups.
func TestReplayOutputThreadGroups(t *testing.T) {
	const path = "../fixtures/kernels/guest-P-1s2c1t/schbench.perf.data"
	out := replayFixtureToFile(t, path, "v6.1")
	r, err := ingest.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	for r.Next() {
		e := r.Event()
		if !e.IsSet(timeline.CommonPID) {
			continue
		}
		tid, tg := e.Int(timeline.CommonPID), e.Int(timeline.CommonTGID)
		switch {
		case tid == 0 && (!e.IsSet(timeline.CommonTGID) || tg != 0):
			t.Fatalf("%s at %d: idle's record with tgid %d (set %v)", e.Name, e.Time, tg, e.IsSet(timeline.CommonTGID))
		case tid >= 414 && tid <= 425 && tid != 415 && tg != 414:
			t.Fatalf("%s at %d: schbench thread %d in thread group %d, want 414", e.Name, e.Time, tid, tg)
		case tid >= 414 && tid <= 425 && tid != 415:
			n++
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 1000 {
		t.Errorf("%d records of schbench's threads", n)
	}
	again, _ := extractFixture(t, out)
	for _, tk := range again.Tasks {
		if tk.TID >= 416 && tk.TID <= 425 && tk.PID != 414 {
			t.Errorf("re-extracted task %d (%s): pid %d, want 414", tk.TID, tk.Comm, tk.PID)
		}
	}
}

// An exiting task leaves its CPU in the state its trace showed: Z for a
// child its parent has yet to reap, X for one reaped at once (a thread).
// On the vfork recording (`perf script -F trace`, each prev_pid's last Z
// or X switch-out: 3,859 tasks leave in Z, 144 in X) every task that
// exits in both does so in the trace's state (the replay wrote X for all
// until session 44).
func TestReplayExitStates(t *testing.T) {
	const path = "../fixtures/local-6.18/workloads/stressng-vfork.perf.data"
	out := replayFixtureToFile(t, path, "latest")
	exits := func(p string) map[int64]string {
		r, err := ingest.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		m := map[int64]string{}
		for r.Next() {
			e := r.Event()
			if st := e.Str(timeline.PrevState); e.Kind == timeline.SchedSwitch && st != "" && (st[0] == 'Z' || st[0] == 'X') {
				m[e.Int(timeline.PrevPID)] = st
			}
		}
		return m
	}
	trace, sim := exits(path), exits(out)
	counts := map[string]int{}
	for tid, st := range trace {
		counts[st]++
		if got, ok := sim[tid]; ok && got != st {
			t.Errorf("task %d exits %s in the replay, %s in the trace", tid, got, st)
		}
	}
	if counts["Z"] != 3859 || counts["X"] != 144 {
		t.Errorf("trace exits %v, want Z 3859, X 144 (perf script)", counts)
	}
	if len(sim) < len(trace)*9/10 {
		t.Errorf("%d exits in the replay, %d in the trace", len(sim), len(trace))
	}
}

// replayFixtureToFile replays a real recording (skipped when absent) under
// policy with the default configuration and returns the output timeline's
// path.
func replayFixtureToFile(t *testing.T, path, policy string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	w, _ := extractFixture(t, path)
	out := filepath.Join(t.TempDir(), "sim.arrow")
	if _, err := ReplayToFile(out, w, policyConfig(t, policy)); err != nil {
		t.Fatal(err)
	}
	return out
}

// A sched_migrate_task record is written on the CPU that moves the task,
// in the context of the task running there, as the kernel's set_task_cpu
// traces it (guest-D's stress-ng trace: a wakeup's placement in its
// waker's context, a newly-idle pull in the context of the task leaving
// the CPU). By hand, HZ 250 (ticks at t0+4 ms, ...):
//   - newidle: on two cores, "short" runs on CPU 0 and blocks at 1 ms
//     while two hogs share CPU 1; CPU 0's newly-idle balance pulls the
//     queued hog at 1 ms, written on CPU 0 as "short".
//   - wakeup: on three cores, "waker" on CPU 0 wakes "wakee" at 1 ms,
//     whose previous CPU 1 runs a hog; select_idle_sibling places it on
//     idle CPU 2, written on CPU 0 as "waker".
func TestMigrateContextByHand(t *testing.T) {
	type rec struct {
		at, cpu, pid, from, to int64 // pid: common_pid, the task running on cpu
		moved                  string
	}
	for _, c := range []struct {
		name  string
		build func() *Workload
		want  rec
	}{
		{"newidle pull", func() *Workload {
			b := newBuilder(t, "sockets=1,cores=2,threads=1")
			b.task("short", 120, 0, true, CauseStart, ms)
			b.task("hog1", 120, 1, true, CauseStart, 20*ms)
			b.task("hog2", 120, 1, false, CauseStart, 20*ms)
			return b.done(t)
		}, rec{ms, 0, 100, 1, 0, "hog2"}}, // 100: short
		{"wakeup placement", func() *Workload {
			b := newBuilder(t, "sockets=1,cores=3,threads=1")
			waker := b.task("waker", 120, 0, true, CauseStart, 2*ms)
			b.task("hog", 120, 1, true, CauseStart, 20*ms)
			wakee := b.task("wakee", 120, 1, false, CauseWake, ms)
			b.edge(waker, 0, ms, wakee, 0)
			return b.done(t)
		}, rec{ms, 0, 100, 1, 2, "wakee"}}, // 100: waker
	} {
		got := collectKinds(timeline.SchedMigrateTask)
		if _, err := Replay(c.build(), policyConfig(t, "v6.1"), Tee{newChecker(t), got}); err != nil {
			t.Fatal(err)
		}
		if len(got.ev) == 0 {
			t.Fatalf("%s: no sched_migrate_task", c.name)
		}
		e := got.ev[0]
		r := rec{e.Time - t0, e.Int(timeline.CPU), e.Int(timeline.CommonPID), e.Int(timeline.OrigCPU), e.Int(timeline.DestCPU), e.Str(timeline.Comm)}
		if r != c.want {
			t.Errorf("%s: first sched_migrate_task %+v, want %+v", c.name, r, c.want)
		}
	}
}

// A delayed task's wakeup from another CPU (ttwu_runnable, v6.12+) takes
// the wakee's queue lock from the waker's CPU, with no wakelist: the
// wakeup check's update_curr of the task running on the wakee's CPU is
// written on the waker's CPU, as the waker. By hand (latest, HZ 1000, two
// CPUs in one LLC; vruntimes in ms): D runs on CPU 1 from t0 with A queued
// there (both at 0) and blocks at t0+0.9 ms, not eligible (V = 0.45):
// delayed. A runs; the tick at t0+1 ms charges it 0.1 ms. W, running alone
// on CPU 0, wakes D at t0+1.95 ms: the record of A's update then (0.95 ms
// since the tick) is on CPU 0 as W.
func TestRemoteRequeueDelayedRecordByHand(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	dt := b.task("d", 120, 1, true, CauseStart, 900000, 10*ms)
	at := b.task("a", 120, 1, false, CauseStart, 20*ms)
	wt := b.task("w", 120, 0, true, CauseStart, 20*ms)
	b.edge(wt, 0, 1950000, dt, 1)
	cfg := policyConfig(t, "latest")
	cfg.HZ = 1000
	got := collectKinds(timeline.SchedWaking, timeline.SchedStatRuntime)
	if _, err := Replay(b.done(t), cfg, Tee{newChecker(t), got}); err != nil {
		t.Fatal(err)
	}
	aTID, wTID := int64(b.w.Tasks[at].TID), int64(b.w.Tasks[wt].TID)
	var rec *timeline.Event
	for i := range got.ev {
		if e := &got.ev[i]; e.Kind == timeline.SchedStatRuntime && e.Time == t0+1950000 && e.Int(timeline.PID) == aTID {
			rec = e
		}
	}
	if rec == nil {
		t.Fatal("no update of A at the wakeup")
	}
	if rec.Int(timeline.CPU) != 0 || rec.Int(timeline.CommonPID) != wTID || rec.Str(timeline.CommonComm) != "w" || rec.Int(timeline.Runtime) != 950000 {
		t.Errorf("A's update at the wakeup: CPU %d as %d (%s), %d ns; want CPU 0 as %d (w), 950000 ns",
			rec.Int(timeline.CPU), rec.Int(timeline.CommonPID), rec.Str(timeline.CommonComm), rec.Int(timeline.Runtime), wTID)
	}
}

// A fork whose child goes to another CPU: wake_up_new_task enqueues it
// from the parent's CPU under the child's queue lock, so that enqueue's
// update_curr of the task running there is written on the parent's CPU,
// as the parent. By hand (v6.1, two CPUs in one LLC, no noise): CPU 0
// runs P with two hogs queued behind it, CPU 1 runs H alone; at 1 ms P
// forks C. sched_balance_fork's find_idlest_group sees CPU 0's group
// overloaded (3 tasks on 1 CPU) and CPU 1's fully busy: C goes to CPU 1,
// and H's update of its 1 ms there is written on CPU 0 as P.
func TestRemoteForkEnqueueRecordByHand(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=2,threads=1")
	pt := b.task("p", 120, 0, true, CauseStart, 10*ms)
	b.task("hog0", 120, 0, false, CauseStart, 10*ms)
	b.task("hog1", 120, 0, false, CauseStart, 10*ms)
	ht := b.task("h", 120, 1, true, CauseStart, 10*ms)
	ct := b.task("c", 120, 0, false, CauseFork, ms)
	b.w.Tasks[ct].Forked = true
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: pt, OffsetNS: ms, Wakee: ct})
	got := collectKinds(timeline.SchedWakeupNew, timeline.SchedStatRuntime)
	if _, err := Replay(b.done(t), testConfig(), Tee{newChecker(t), got}); err != nil {
		t.Fatal(err)
	}
	pTID, hTID, cTID := int64(b.w.Tasks[pt].TID), int64(b.w.Tasks[ht].TID), int64(b.w.Tasks[ct].TID)
	var wnew, rec *timeline.Event
	for i := range got.ev {
		e := &got.ev[i]
		switch {
		case e.Time != t0+ms:
		case e.Kind == timeline.SchedWakeupNew && e.Int(timeline.PID) == cTID:
			wnew = e
		case e.Kind == timeline.SchedStatRuntime && e.Int(timeline.PID) == hTID:
			rec = e
		}
	}
	if wnew == nil || wnew.Int(timeline.TargetCPU) != 1 {
		t.Fatalf("C's sched_wakeup_new %v, want at 1 ms onto CPU 1", wnew)
	}
	if rec == nil {
		t.Fatal("no update of H at the fork")
	}
	if rec.Int(timeline.CPU) != 0 || rec.Int(timeline.CommonPID) != pTID || rec.Str(timeline.CommonComm) != "p" || rec.Int(timeline.Runtime) != ms {
		t.Errorf("H's update at the fork: CPU %d as %d (%s), %d ns; want CPU 0 as %d (p), 1 ms",
			rec.Int(timeline.CPU), rec.Int(timeline.CommonPID), rec.Str(timeline.CommonComm), rec.Int(timeline.Runtime), pTID)
	}
}
