package whatif

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
)

func TestRecordedCommand(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    string
	}{
		{"/usr/bin/perf sched record -o a.data -- taskset -c 1 stress-ng --cpu 2", "taskset -c 1 stress-ng --cpu 2"},
		{"perf sched record -z -o x.data hackbench -g 2", "hackbench -g 2"},
		{"perf record -e sched:sched_switch -C 0 -o x taskset 3 w", "taskset 3 w"},
		{"perf record -g -- numactl -N 0 w", "numactl -N 0 w"},
		{"perf record -a", ""},
		{"trace-cmd record -e sched taskset -c 1 w", ""},
		{"", ""},
	} {
		got := strings.Join(RecordedCommand(strings.Fields(c.cmdline)), " ")
		if got != c.want {
			t.Errorf("RecordedCommand(%q) = %q, want %q", c.cmdline, got, c.want)
		}
	}
}

// taskset (util-linux) and numactl as a recorded command's wrappers; the
// masks worked out by hand (0x5 = CPUs 0 and 2; node 1 of the two-node
// machine holds CPUs 2 and 3).
func TestCommandAffinity(t *testing.T) {
	topo, err := model.ParseSpec("sockets=2,cores=2,threads=1,numa=2")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd     string
		cpus    []int
		why     string
		wantErr bool
	}{
		{"taskset -c 1 stress-ng", []int{1}, "taskset -c 1", false},
		{"taskset --cpu-list 0,2-3 w", []int{0, 2, 3}, "taskset --cpu-list 0,2-3", false},
		{"taskset 0x5 w", []int{0, 2}, "taskset 0x5", false},
		{"taskset 5 w", []int{0, 2}, "taskset 5", false},
		{"taskset -ac 3 w", []int{3}, "taskset -ac 3", false},
		{"taskset -a 0x10 w", []int{4}, "taskset -a 0x10", false},
		{"/usr/bin/taskset -c 1 w", []int{1}, "/usr/bin/taskset -c 1", false},
		{"taskset -p 0x3 1234", nil, "", false},
		{"taskset -c 1", nil, "", false},
		{"taskset -c x w", nil, "", true},
		{"taskset 0xg w", nil, "", true},
		{"taskset 0 w", nil, "", true},
		{"numactl -C 1-2 w", []int{1, 2}, "numactl -C 1-2", false},
		{"numactl --physcpubind=3 w", []int{3}, "numactl --physcpubind=3", false},
		{"numactl --cpunodebind=1 --membind=1 w", []int{2, 3}, "numactl --cpunodebind=1 --membind=1", false},
		{"numactl -N 1 -C 0-2 w", []int{2}, "numactl -N 1 -C 0-2", false},
		{"numactl -m 0 -N 0 w", []int{0, 1}, "numactl -m 0 -N 0", false},
		{"numactl -C all w", []int{0, 1, 2, 3}, "numactl -C all", false},
		{"numactl -l w", nil, "", false},
		{"numactl -C +0 w", nil, "", true},
		{"numactl -N 5 w", nil, "", true},
		{"numactl --strange w", nil, "", false},
		{"stress-ng --cpu 2", nil, "", false},
	} {
		cpus, why, ok, err := CommandAffinity(strings.Fields(c.cmd), topo)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: error %v, want error %v", c.cmd, err, c.wantErr)
			continue
		}
		if ok != (c.cpus != nil) || !reflect.DeepEqual(cpus, c.cpus) || (ok && why != c.why) {
			t.Errorf("%q: %v %q ok %v, want %v %q", c.cmd, cpus, why, ok, c.cpus, c.why)
		}
	}
}

// affinityWorkload: perf (the recorder), its workload child (perf-exec
// until it execs: the command's root) forking a child, a kworker pinned
// by name and another task; the command line given.
func affinityWorkload(t *testing.T, cmdline string) *Workload {
	b := newBuilder(t, "sockets=1,cores=4,threads=1")
	b.w.Cmdline = strings.Fields(cmdline)
	b.task("perf", 120, 0, false, CauseArrival, 1*ms)
	root := b.task("stress-ng", 120, 0, false, CauseArrival, 1*ms, 1*ms)
	child := b.task("stress-ng", 120, 1, false, CauseFork, 1*ms)
	b.task("kworker/2:1", 120, 2, false, CauseArrival, 1*ms)
	b.task("other", 120, 3, false, CauseArrival, 1*ms)
	b.w.Edges = append(b.w.Edges, Edge{Kind: EdgeFork, Causal: true, Waker: root, WakerAct: 0, OffsetNS: 1 * ms, Wakee: child, WakeeAct: 0})
	// The root ran first on CPU 0 (before taskset's sched_setaffinity),
	// then on 1; the child on 1 and then on 3.
	b.w.Tasks[root].Activations[1].CPU = 1
	b.w.Tasks[root].Activations[1].Cause = CauseArrival
	b.w.Tasks[child].Activations = append(b.w.Tasks[child].Activations, Activation{DemandNS: ms, Cause: CauseArrival, End: EndSleep, EndState: "S", CPU: 3})
	w := b.done(t)
	w.Tasks[root].Command = true
	markDescendants(w, []int32{root})
	return w
}

func TestApplyAffinity(t *testing.T) {
	w := affinityWorkload(t, "perf sched record -- taskset -c 1 stress-ng --cpu 1")
	if !w.Tasks[2].Command || w.Tasks[0].Command || w.Tasks[4].Command {
		t.Fatalf("command tree: %v %v %v, want the forked child only besides the root", w.Tasks[0].Command, w.Tasks[2].Command, w.Tasks[4].Command)
	}
	notes, err := ApplyAffinity(w, w.Topology, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	// The root's first activation (CPU 0) came before the mask; the
	// child's second (CPU 3) contradicts it.
	want := []AffinityNote{{From: "command line", Why: "taskset -c 1", Who: "command", CPUs: "1", Tasks: 2, Outside: 1, Named: 2}}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("notes %+v, want %+v", notes, want)
	}
	if !reflect.DeepEqual(w.Tasks[1].Allowed, []int{1}) || w.Tasks[0].Allowed != nil || w.Tasks[3].Allowed != nil {
		t.Errorf("masks %v %v %v", w.Tasks[0].Allowed, w.Tasks[1].Allowed, w.Tasks[3].Allowed)
	}

	// Rules after the command line's, a later one winning; a per-CPU
	// kthread named by a rule keeps its CPU; off drops the inference.
	notes, err = ApplyAffinity(w, w.Topology, []AffinityRule{{"stress-ng", []int{1, 3}}, {"102", []int{2}}, {"kworker/2:1", []int{0}}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{model.FormatCPUList(w.Tasks[1].Allowed), model.FormatCPUList(w.Tasks[2].Allowed)}; !reflect.DeepEqual(got, []string{"1,3", "2"}) {
		t.Errorf("masks after the rules %v, want [1,3 2]", got)
	}
	if w.Tasks[3].Allowed != nil {
		t.Errorf("the kworker took a mask %v", w.Tasks[3].Allowed)
	}
	// The command line's note and the kworker's are left with no task:
	// stress-ng's holds the root (CPU 0 before its first run inside the
	// mask, on 1: none outside), the tid rule the child (CPUs 1 then 3,
	// never inside 2: both outside).
	want = []AffinityNote{{From: "--affinity", Who: "stress-ng", CPUs: "1,3", Tasks: 1}, {From: "--affinity", Who: "102", CPUs: "2", Tasks: 1, Outside: 2}}
	if !reflect.DeepEqual(notes, want) {
		t.Errorf("notes %+v, want %+v", notes, want)
	}
	if _, err := ApplyAffinity(w, w.Topology, nil, false); err != nil || w.Tasks[1].Allowed != nil || len(w.AffinityNotes) != 0 {
		t.Errorf("off: err %v, mask %v, notes %v", err, w.Tasks[1].Allowed, w.AffinityNotes)
	}

	for _, c := range []struct {
		rules []AffinityRule
		cmd   string
		err   string
	}{
		{[]AffinityRule{{"nosuch", []int{1}}}, "", "no task of the workload is nosuch"},
		{[]AffinityRule{{"other", []int{4}}}, "", "CPU 4 is beyond the machine's 4 CPUs"},
		{nil, "perf record -- taskset -c 7 w", "beyond the machine's 4 CPUs"},
		{nil, "perf record -- taskset -c x w", "taskset -c x"},
	} {
		w := affinityWorkload(t, c.cmd)
		_, err := ApplyAffinity(w, w.Topology, c.rules, true)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v %q: error %v, want %q", c.rules, c.cmd, err, c.err)
		}
	}
	// A command line's mask with no command found in the trace says so.
	w = affinityWorkload(t, "perf record -- taskset -c 1 hackbench")
	for i := range w.Tasks {
		w.Tasks[i].Command = false
	}
	notes, err = ApplyAffinity(w, w.Topology, nil, true)
	if err != nil || len(notes) != 1 || notes[0].Tasks != 0 || !strings.Contains(notes[0].String(), "the trace shows no task of the recorded command") {
		t.Errorf("no command found: %v, %+v", err, notes)
	}
	for i := range w.Tasks {
		if w.Tasks[i].Allowed != nil {
			t.Errorf("task %d took a mask %v", i, w.Tasks[i].Allowed)
		}
	}
	if _, err := ApplyAffinity(w, w.Topology, []AffinityRule{{"command", []int{1}}}, true); err == nil || !strings.Contains(err.Error(), "no recorded command") {
		t.Errorf("command without a perf-exec: %v", err)
	}
}

func TestParseAffinityRule(t *testing.T) {
	for _, c := range []struct {
		in   string
		want AffinityRule
		err  bool
	}{
		{"command=0-1", AffinityRule{"command", []int{0, 1}}, false},
		{"1234=3,1", AffinityRule{"1234", []int{1, 3}}, false},
		{" stress-ng = 2", AffinityRule{"stress-ng", []int{2}}, false},
		{"stress-ng", AffinityRule{}, true},
		{"=1", AffinityRule{}, true},
		{"x=", AffinityRule{}, true},
		{"x=a", AffinityRule{}, true},
	} {
		got, err := ParseAffinityRule(c.in)
		if (err != nil) != c.err || (!c.err && !reflect.DeepEqual(got, c.want)) {
			t.Errorf("ParseAffinityRule(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// Two hogs allowed CPU 1 only, on two CPUs, by hand: A runs on CPU 1 from
// t0 with B queued there, both for 10 ms. CPU 0 stays idle throughout
// (its idle balances find only tasks it may not take), and the two share
// CPU 1: the last ends at t0+20 ms. Without the mask CPU 0's first idle
// balance pulls B and both end by t0+10 ms and a little.
func TestAffinityKeepsTasksOnTheirCPU(t *testing.T) {
	for _, masked := range []bool{true, false} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		a := b.task("a", 120, 1, true, CauseStart, 10*ms)
		bt := b.task("b", 120, 1, false, CauseStart, 10*ms)
		w := b.done(t)
		if masked {
			w.Tasks[a].Allowed, w.Tasks[bt].Allowed = []int{1}, []int{1}
		}
		_, ch := replayChecked(t, w, testConfig())
		var end int64
		on0 := 0
		for _, r := range ch.runs {
			end = max(end, r.end)
			if r.cpu == 0 {
				on0++
			}
		}
		if masked && (on0 != 0 || end != t0+20*ms) {
			t.Errorf("masked: %d runs on CPU 0, last end t0%+d ns; want none, t0+20 ms", on0, end-t0)
		}
		if !masked && (on0 == 0 || end >= t0+15*ms) {
			t.Errorf("unmasked: %d runs on CPU 0, last end t0%+d ns; want some, before t0+15 ms", on0, end-t0)
		}
	}
}

// select_task_rq's rules for a restricted wakee, by hand on four CPUs:
// W sleeps on CPU 0 and is woken by a task on CPU 1.
//   - allowed {2}: one CPU, taken at once (cpumask_any, no
//     select_task_rq_fair);
//   - allowed {2,3}, CPUs 2 and 3 busy: wake_affine is off (the waker's
//     CPU is not allowed) and select_idle_sibling's scan finds no idle
//     CPU it may use, so its answer, prev (CPU 0), is not allowed:
//     select_fallback_rq takes the first allowed CPU of CPU 0's node, 2.
func TestAffinityWakeupPlacement(t *testing.T) {
	for _, c := range []struct {
		allowed []int
		want    int32
	}{{[]int{2}, 2}, {[]int{2, 3}, 2}, {[]int{3}, 3}} {
		b := newBuilder(t, "sockets=1,cores=4,threads=1")
		waker := b.task("waker", 120, 1, true, CauseStart, 2*ms)
		wt := b.task("w", 120, 0, false, CauseWake, 1*ms)
		b.task("h2", 120, 2, true, CauseStart, 10*ms)
		b.task("h3", 120, 3, true, CauseStart, 10*ms)
		b.edge(waker, 0, 1*ms, wt, 0)
		w := b.done(t)
		w.Tasks[wt].Allowed = c.allowed
		_, ch := replayChecked(t, w, testConfig())
		r := ch.firstRunAfter(int64(100+wt), 0)
		if r == nil || r.cpu != int64(c.want) {
			t.Errorf("allowed %v: W ran first %+v, want on CPU %d", c.allowed, r, c.want)
		}
	}
}

// A wakee allowed one CPU skips select_task_rq_fair, and with it
// record_wakee: its waker's wakee_flips do not count it; allowed two, it
// goes through select_task_rq_fair, which counts the flip (the waker's
// first, from none).
func TestAffinityOneCPUSkipsRecordWakee(t *testing.T) {
	for _, c := range []struct {
		allowed []int
		flips   uint32
	}{{[]int{2}, 0}, {[]int{2, 3}, 1}} {
		s := handSim(t, "sockets=1,cores=4,threads=1", "v6.1", "waker", "w")
		waker, w := s.tasks[0], s.tasks[1]
		handSet(s, s.cpus[1], waker, 0, 0, tsRunning)
		w.state, w.cpu = tsSleeping, 0
		w.setMask(c.allowed, 4)
		_, _, cpu := s.selectWoken(w, waker, 1)
		if waker.wakeeFlips != c.flips || cpu != c.allowed[0] {
			t.Errorf("allowed %v: waker's wakee_flips %d, placed on %d; want %d, %d", c.allowed, waker.wakeeFlips, cpu, c.flips, c.allowed[0])
		}
	}
}

// can_migrate_task's LBF_DST_PINNED and load_balance's retry, on run
// queues set by hand: two cores of two SMT threads (MC groups {0,1} and
// {2,3}), v6.1. CPU 2 runs X with A and B queued, both allowed CPUs 1
// and 2 only; CPUs 0, 1 and 3 are idle. CPU 0's MC balance (idle) finds
// group {2,3} busiest, both groups with spare capacity; with the SMT
// child preferring siblings, calculate_imbalance asks for (3 − 0) / 2 =
// 1 task (migrate_task) from CPU 2. X runs; A and B may not run on CPU 0,
// so the first of them can_migrate_task sees notes CPU 1 (the local
// group's first CPU it may use: LBF_DST_PINNED), and with the imbalance
// unmet the pass goes on from CPU 2 to CPU 1, which takes that one task.
// The imbalance met, the parent's group is not flagged. Before the retry
// was modelled nothing moved.
func TestAffinityDstPinnedRetry(t *testing.T) {
	s := handSim(t, "sockets=1,cores=2,threads=2", "v6.1", "x", "a", "b")
	r0, r1, r2 := s.cpus[0], s.cpus[1], s.cpus[2]
	x, a, bt := s.tasks[0], s.tasks[1], s.tasks[2]
	a.setMask([]int{1, 2}, 4)
	bt.setMask([]int{1, 2}, 4)
	handSet(s, r2, x, 1*ms, 0, tsRunning)
	handSet(s, r2, a, 1*ms, 0, tsQueued)
	handSet(s, r2, bt, 1*ms, 0, tsQueued)
	var mc *sdState
	for _, st := range r0.sd {
		if st.sd.SpanWeight == 4 {
			mc = st
		}
	}
	if mc == nil {
		t.Fatal("no MC domain")
	}
	cont := true
	moved := s.loadBalance(r0, mc, CPUIdle, &cont, 0)
	if moved != 1 || r1.nrCFS != 1 || r0.nrCFS != 0 || s.cpus[2].nrCFS != 2 {
		t.Fatalf("moved %d: CPUs 0, 1, 2 hold %d, %d, %d; want one task moved to CPU 1", moved, r0.nrCFS, r1.nrCFS, s.cpus[2].nrCFS)
	}
	if len(s.sgcImb) != 0 {
		t.Errorf("group imbalance flags %v after a met imbalance", s.sgcImb)
	}
	for _, p := range []*simTask{a, bt} {
		if p.cpu == 0 {
			t.Errorf("task %d moved to CPU 0, which it may not use", p.id)
		}
	}
}

// LBF_SOME_PINNED and the parent's group imbalance flag, by hand on the
// same machine: CPU 1 runs X with A queued, both allowed CPU 1 only.
// CPU 0's SMT balance (idle) can move neither (SOME_PINNED, and no other
// CPU in its local group {0}: no DST_PINNED), the imbalance stays, so the
// MC group {0,1} is flagged (sgc->imbalance) and classified
// group_imbalanced in CPU 2's MC statistics. Every task was pinned, so
// the pass ends all-pinned and the flag stays; a later balanced pass at
// the SMT level that is not all-pinned clears it.
func TestAffinitySomePinnedFlagsParentGroup(t *testing.T) {
	s := handSim(t, "sockets=1,cores=2,threads=2", "v6.1", "x", "a")
	r0, r1 := s.cpus[0], s.cpus[1]
	x, a := s.tasks[0], s.tasks[1]
	x.setMask([]int{1}, 4)
	a.setMask([]int{1}, 4)
	handSet(s, r1, x, 1*ms, 0, tsRunning)
	handSet(s, r1, a, 1*ms, 0, tsQueued)
	smt, mcOf0 := r0.sd[0], r0.sd[1]
	if smt.sd.SpanWeight != 2 || mcOf0.sd.SpanWeight != 4 {
		t.Fatalf("domains of CPU 0: %d and %d CPUs", smt.sd.SpanWeight, mcOf0.sd.SpanWeight)
	}
	key := sgcKey{mcOf0.sd.Level, mcOf0.groups[0].ID}
	cont := true
	if moved := s.loadBalance(r0, smt, CPUIdle, &cont, 0); moved != 0 {
		t.Fatalf("moved %d pinned tasks", moved)
	}
	if !s.sgcImb[key] {
		t.Fatal("the MC group {0,1} is not flagged imbalanced")
	}
	// CPU 2's view of the MC level: group {0,1} is group_imbalanced.
	var mc2 *sdState
	for _, st := range s.cpus[2].sd {
		if st.sd.SpanWeight == 4 {
			mc2 = st
		}
	}
	e := s.newLBRun(mc2, 2, CPUIdle)
	var sgs SGStats
	for _, g := range mc2.groups {
		if g.ID == key.id {
			s.updateSGLBStats(e, g, &sgs, false)
		}
	}
	s.endLBRun()
	if sgs.GroupType != GroupImbalanced {
		t.Errorf("group {0,1} classified %v at CPU 2's MC pass, want group_imbalanced", sgs.GroupType)
	}
	// A balanced SMT pass of CPU 0 (nothing to pull: CPU 1 left with one
	// task) is not all-pinned: it clears the flag.
	a.state = tsSleeping
	r1.treeRemove(a)
	r1.nrCFS--
	r1.loadWeight -= a.weight
	s.loadBalance(r0, smt, CPUIdle, &cont, 0)
	if s.sgcImb[key] {
		t.Error("a balanced pass left the flag set")
	}
}

// find_idlest_group reads the group's imbalance flag too (group_classify
// in update_sg_wakeup_stats), by hand on two cores of two SMT threads:
// the parent forks on CPU 0 while X runs on CPU 2; at the MC level both
// groups have one idle CPU and spare capacity, so the child stays in the
// local group {0,1}; with that group flagged imbalanced (affinity left
// an imbalance under it) it is the busier type and the child goes to
// {2,3}.
func TestAffinityImbalancedGroupAtFork(t *testing.T) {
	for _, flagged := range []bool{false, true} {
		s := handSim(t, "sockets=1,cores=2,threads=2", "v6.1", "parent", "x", "child")
		handSet(s, s.cpus[0], s.tasks[0], 0, 0, tsRunning)
		handSet(s, s.cpus[2], s.tasks[1], 0, 0, tsRunning)
		var mc *sdState
		for _, st := range s.cpus[0].sd {
			if st.sd.SpanWeight == 4 {
				mc = st
			}
		}
		if flagged {
			s.sgcImb[sgcKey{mc.sd.Level, mc.groups[0].ID}] = true
		}
		g := findIdlestGroup(simFork{s, s.tasks[2]}, mc.sd, 0)
		switch {
		case !flagged && g != nil:
			t.Errorf("unflagged: the child leaves for group %v, want the local group", g.Span)
		case flagged && (g == nil || g.Span[0] != 2):
			t.Errorf("flagged: group %v, want {2,3}", g)
		}
	}
}

// The 6.1 guest-Q (four vCPUs, two cores of two SMT threads) running
// commands under taskset -c 1-3 (fixtures/kernels/affinity, three boots):
// CPU 0 idles beside its sibling CPU 1. The command line gives the hogs'
// tree (the root and its four stressors) and hackbench's (the root and
// its 80 children) CPUs 1-3, which the traces bear out (no activation
// outside); no replay runs them on CPU 0 (checker). The hogs' traces idle
// 2.7-2.8 s, 1.9 s of it CPU 0 beside a runnable sibling: the replays'
// idle and idle-while-runnable come within 5 % of it (seeds 0-2: r1
// +2.3, +0.5, +0.6 % and +3.7, +1.1, +1.2 %; r2 +0.3, +1.0, +0.2 % and
// +0.3, +0.6, +0.4 %; r3 −3.0, −3.8, −3.7 % and −0.4, −0.8, −0.7 %),
// where without the mask they were 72 % and 99 % under.
func TestAffinityGuestFixture(t *testing.T) {
	for _, c := range []struct {
		name  string
		tasks int
	}{{"r1/taskset-hogs", 5}, {"r1/taskset-hackbench", 81}, {"r2/taskset-hogs", 5}, {"r2/taskset-hackbench", 81}, {"r3/taskset-hogs", 5}, {"r3/taskset-hackbench", 81}} {
		f := "../fixtures/kernels/affinity/guest-Q-1s2c2t/" + c.name + ".perf.data.gz"
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s: %v", f, err)
		}
		obs, results := maskedReplays(t, f, func(notes []AffinityNote) bool {
			return len(notes) == 1 && notes[0].Tasks == c.tasks && notes[0].CPUs == "1-3" && notes[0].Outside == 0
		})
		if !strings.HasSuffix(c.name, "taskset-hogs") {
			continue
		}
		for seed, res := range results {
			for _, m := range []struct {
				what     string
				sim, obs int64
			}{{"idle", res.Metrics.IdleNS, obs.IdleNS}, {"idle while runnable", res.Metrics.IdleWhileRunnableNS, obs.IdleWhileRunnableNS}} {
				if d := float64(m.sim-m.obs) / float64(m.obs); d < -0.05 || d > 0.05 {
					t.Errorf("seed %d: %s %d ns against the trace's %d (%+.3f)", seed, m.what, m.sim, m.obs, d)
				}
			}
		}
	}
}

// find_idlest_group's statistics of the CPUs the child may use
// (82d6e01a0699, v6.1's and latest's; not v6.12's), by hand on two cores
// of two SMT threads: the parent forks on CPU 3, CPU 2 idle; CPUs 0 and 1
// idle; the child may use CPUs 1-3. Counting every CPU, group {0,1} has
// two idle CPUs against the local group's one and the child goes there,
// to CPU 1 (the one it may use); counting only CPU 1, both groups have
// one and it stays local, on CPU 2.
func TestAffinityWakeupStatsAllowed(t *testing.T) {
	for _, c := range []struct {
		policy string
		want   int
	}{{"v6.1", 2}, {"latest", 2}, {"v6.12", 1}, {"v6.1~82d6e01a0699", 1}} {
		s := handSim(t, "sockets=1,cores=2,threads=2", "v6.1", "parent", "child")
		pol, err := LookupPolicy(c.policy)
		if err != nil {
			t.Fatal(err)
		}
		s.knobs.WakeupStatsAllowed = pol.Knobs().WakeupStatsAllowed
		parent, child := s.tasks[0], s.tasks[1]
		handSet(s, s.cpus[3], parent, 0, 0, tsRunning)
		child.setMask([]int{1, 2, 3}, 4)
		var mc *sdState
		for _, st := range s.cpus[3].sd {
			if st.sd.SpanWeight == 4 {
				mc = st
			}
		}
		if got := findIdlestCPU(simFork{s, child}, mc.sd, 3, model.SDBalanceFork); got != c.want {
			t.Errorf("%s: the child placed on CPU %d, want %d", c.policy, got, c.want)
		}
	}
}

// The recorded taskset workload (this machine's 6.18, fixtures/local-6.18/
// workloads/taskset-c1-cpu2*): two stress-ng CPU hogs under taskset -c 1
// on two CPUs, alone and beside an unrestricted hog started before perf.
// The command line gives the process tree CPU 1; no replay runs any of
// its tasks elsewhere once there (checker). Alone, the trace's idle time
// is CPU 0's whole second: the replay without the mask spread the hogs
// over both CPUs (idle 98 % under the trace's, the goal missed), with it
// idles as the trace did (within 1 %).
func TestAffinityFixture(t *testing.T) {
	for _, name := range []string{"taskset-c1-cpu2", "taskset-c1-cpu2-bg"} {
		f := "../fixtures/local-6.18/workloads/" + name + ".perf.data"
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s: %v", f, err)
		}
		// The root (perf-exec, then taskset, then stress-ng) and its two
		// CPU stressors.
		obs, results := maskedReplays(t, f, func(notes []AffinityNote) bool {
			return len(notes) == 1 && notes[0].Tasks == 3 && notes[0].CPUs == "1" && notes[0].Why == "taskset -c 1" && notes[0].Outside == 0
		})
		if name != "taskset-c1-cpu2" {
			continue
		}
		for seed, res := range results {
			f := Compare("latest", obs, res.Metrics, res.Stats)
			idle := float64(res.Metrics.IdleNS-obs.IdleNS) / float64(obs.IdleNS)
			if idle < -0.01 || idle > 0.01 {
				t.Errorf("seed %d: idle %d ns against the trace's %d (%+.3f)", seed, res.Metrics.IdleNS, obs.IdleNS, idle)
			}
			for _, g := range f.Goals {
				if g.Metric == "idle_ns/total_cpu_time" && !g.Met {
					t.Errorf("seed %d: the idle goal missed: %+v", seed, g)
				}
			}
		}
	}
}

// The recorded command line is untrusted input (perf.data's CMDLINE):
// whatever its words, reading a mask from it neither panics nor returns a
// mask that is empty, unsorted or beyond model.MaxCPUs.
func FuzzCommandAffinity(f *testing.F) {
	for _, s := range []string{
		"perf sched record -- taskset -c 1 stress-ng",
		"perf record -o x taskset 0xff,ffffffff w",
		"perf record -- numactl --cpunodebind=0,1 --physcpubind=0-3 w",
		"perf record -- numactl -N all -C all w",
		"perf record -- taskset -ac 0-8191 w",
		"perf record -e x -- taskset --cpu-list 3,1 w",
	} {
		f.Add(s)
	}
	topo, err := model.ParseSpec("sockets=2,cores=2,threads=1,numa=2")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, _, ok, err := CommandAffinity(RecordedCommand(strings.Fields(s)), topo)
		if err != nil || !ok {
			if ok || cpus != nil {
				t.Fatalf("%q: mask %v with ok %v, error %v", s, cpus, ok, err)
			}
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("%q: an empty mask", s)
		}
		for i, c := range cpus {
			if c < 0 || c >= model.MaxCPUs || (i > 0 && c <= cpus[i-1]) {
				t.Fatalf("%q: mask %v not ascending below %d", s, cpus, model.MaxCPUs)
			}
		}
	})
}

// maskedReplays extracts the recording at path, gives its tasks the masks
// its command line names (the notes must pass want), and replays it under
// its kernel's policy and work model with seeds 0-2, the checker holding
// every task to its mask: the trace's metrics and the three results.
func maskedReplays(t *testing.T, path string, want func([]AffinityNote) bool) (*Metrics, []*Result) {
	t.Helper()
	w, obs := extractFixture(t, path)
	notes, err := ApplyAffinity(w, w.Topology, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if !want(notes) {
		t.Fatalf("%s: notes %+v", path, notes)
	}
	p, err := PolicyForKernel(w.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	var results []*Result
	for seed := uint64(0); seed < 3; seed++ {
		cfg := DefaultConfig(p)
		cfg.Seed = seed
		cfg.SetAutoWork(w)
		res, err := Replay(w, cfg, checkerFor(t, cfg, w))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	return obs, results
}
