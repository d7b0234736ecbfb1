package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/whatif"
)

// --work auto (the default) bounds tasks by their exit times when the
// recorded command line says the workload stops at a deadline (the
// schbench fixture was recorded with `schbench -r 3`), replays fixed work
// otherwise (hackbench), says which in the output, and gives exactly what
// the explicit mode gives.
func TestWhatifWorkAuto(t *testing.T) {
	dir := t.TempDir()
	root := repoRoot(t)
	type out struct {
		F struct {
			Work     string             `json:"work"`
			KS       float64            `json:"ks"`
			RelError map[string]float64 `json:"rel_error"`
			Stats    map[string]any     `json:"replay_stats"`
		} `json:"fidelity"`
	}
	get := func(in string, extra ...string) (out, result) {
		args := append([]string{"whatif", "-i", in, "--validate", "--format", "json"}, extra...)
		r := run(t, dir, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var o out
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return o, r
	}
	sch := filepath.Join(root, "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
	auto, r := get(sch)
	if !strings.HasPrefix(auto.F.Work, "until-exit (auto") || !strings.Contains(auto.F.Work, "schbench -r 3") {
		t.Errorf("schbench default work %q, want until-exit from `schbench -r 3`", auto.F.Work)
	}
	if !strings.Contains(r.stderr, "work until-exit") {
		t.Errorf("no note on stderr: %q", r.stderr)
	}
	explicit, _ := get(sch, "--work", "until-exit")
	fixed, _ := get(sch, "--work", "fixed")
	if explicit.F.Work != "until-exit" || fixed.F.Work != "fixed" {
		t.Errorf("explicit modes reported as %q and %q", explicit.F.Work, fixed.F.Work)
	}
	if auto.F.KS != explicit.F.KS || auto.F.Stats["deadline_cuts"] != explicit.F.Stats["deadline_cuts"] {
		t.Errorf("auto and --work until-exit differ: KS %v vs %v, cuts %v vs %v", auto.F.KS, explicit.F.KS, auto.F.Stats["deadline_cuts"], explicit.F.Stats["deadline_cuts"])
	}
	// The modes differ where a task meets its exit deadline: not on
	// guest-A's, whose replay (its host stalls shortened where it ran
	// with fewer vCPUs busy than the trace, FIDELITY.md round 85) ends
	// before the deadlines; on guest-B's, ten tasks are cut there.
	schB := filepath.Join(root, "fixtures", "kernels", "guest-B-1s4c2t", "schbench.perf.data")
	untilB, _ := get(schB, "--work", "until-exit")
	fixedB, _ := get(schB, "--work", "fixed")
	if cuts, _ := untilB.F.Stats["deadline_cuts"].(float64); cuts == 0 || untilB.F.RelError["idle_ns"] == fixedB.F.RelError["idle_ns"] {
		t.Errorf("until-exit: %v deadline cuts, idle rel. error %v; fixed %v: the mode had no effect", untilB.F.Stats["deadline_cuts"], untilB.F.RelError["idle_ns"], fixedB.F.RelError["idle_ns"])
	}
	hb, r := get(filepath.Join(root, "fixtures", "kernels", "guest-A-2s2c2t-2numa", "hackbench.perf.data"))
	if hb.F.Work != "fixed (auto)" || strings.Contains(r.stderr, "work until-exit") {
		t.Errorf("hackbench default work %q (stderr %q), want fixed", hb.F.Work, r.stderr)
	}
	if r := run(t, dir, "whatif", "-i", sch, "--work", "sometimes"); r.code == 0 || !strings.Contains(r.stderr, "want auto, fixed or until-exit") {
		t.Errorf("bad --work accepted (exit %d): %s", r.code, r.stderr)
	}
}

// --validate says how many host stalls the trace shows (a guest's vCPUs
// descheduled by its host) and their share of the demand, in the table
// and in JSON, the same count the saved workload holds; a comparison's
// fidelity report says it too.
func TestWhatifReportsHostStalls(t *testing.T) {
	dir := t.TempDir()
	sch := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
	var o struct {
		F struct {
			HostStalls  int   `json:"host_stalls"`
			HostStallNS int64 `json:"host_stall_ns"`
			DemandNS    int64 `json:"demand_ns"`
		} `json:"fidelity"`
	}
	w := validateJSON(t, dir, sch, &o)
	n, ns := w.HostStallTotal()
	if o.F.HostStalls == 0 || o.F.HostStalls != n || o.F.HostStallNS != ns || o.F.DemandNS <= ns {
		t.Errorf("JSON host stalls %d (%d ns of %d), the workload file %d (%d ns)", o.F.HostStalls, o.F.HostStallNS, o.F.DemandNS, n, ns)
	}
	for _, args := range [][]string{
		{"whatif", "-i", sch, "--validate"},
		{"whatif", "-i", sch, "--validate", "-p", "rework", "--runs", "2", "--progress", "never"},
	} {
		r := run(t, dir, args...)
		if want := fmt.Sprintf("trace: %d host stalls of busy vCPUs", n); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("%v: exit %d, no %q in\n%s", args, r.code, want, r.stdout)
		}
	}
}

// --validate says how many wakeups the trace shows leaving their waker
// running on with the reschedule they set pending, and for how long in
// all, in the table and in JSON: the saved workload's no_preempt_ns
// column (hackbench's herd on 6.12 among them: whatif's
// TestNoPreemptWakeLoopOnARealTrace).
func TestWhatifReportsNoPreemptWakeups(t *testing.T) {
	dir := t.TempDir()
	hb := filepath.Join(repoRoot(t), "fixtures", "kernels", "v6.12", "guest-P-1s2c1t", "r2", "hackbench.perf.data.gz")
	var o struct {
		F struct {
			N  int   `json:"no_preempt_wakeups"`
			NS int64 `json:"no_preempt_ns"`
		} `json:"fidelity"`
	}
	w := validateJSON(t, dir, hb, &o)
	n, ns := 0, int64(0)
	for _, e := range w.Edges {
		if e.NoPreemptNS > 0 {
			n++
			ns += e.NoPreemptNS
		}
	}
	if n == 0 || o.F.N != n || o.F.NS != ns {
		t.Errorf("JSON no_preempt_wakeups %d (%d ns), the workload file %d (%d ns)", o.F.N, o.F.NS, n, ns)
	}
	wantValidateLine(t, dir, hb, fmt.Sprintf("trace: %d wakeups left their waker running on with the reschedule they set pending", n))
}

// --validate says how many of some things the trace showed, in the table
// and in JSON, each the saved workload's own count: the periodic balances
// that moved tasks (the workload's balance_pull rows; 6.12 guest-P r4
// among them: whatif's TestBalancePullOnARealTrace) and the interrupt
// wakeups that interrupted a task (its irq_current rows; guest-N r6's
// hackbench: whatif's TestIRQFlipOnARealTrace) and those raised on
// another CPU than their wakee's (its irq_cpu column; guest-Q r1's hogs,
// 19: whatif's TestIRQCPUByHand reads the column by hand).
func TestWhatifReportsTraceCounts(t *testing.T) {
	for _, c := range []struct {
		name, key, line string
		path            []string
		count           func(*whatif.Workload) int
	}{
		{"balance pulls", "balance_pulls", "trace: %d periodic balances moved tasks",
			[]string{"v6.12", "guest-P-1s2c1t", "r4", "hackbench.perf.data.gz"},
			func(w *whatif.Workload) int { return len(w.BalancePulls) }},
		{"interrupted tasks", "irq_current", "trace: %d interrupt wakeups came while a task ran on their CPU",
			[]string{"repeats", "guest-N-2s1c1t-2numa", "r6", "hackbench.perf.data.gz"},
			func(w *whatif.Workload) int { return len(w.IRQCurrent) }},
		{"interrupts on another CPU", "irq_elsewhere", "trace: %d interrupt wakeups ran on another CPU than their wakee's",
			[]string{"affinity", "guest-Q-1s2c2t", "r1", "taskset-hogs.perf.data.gz"},
			func(w *whatif.Workload) int {
				n := 0
				for _, tk := range w.Tasks {
					for _, a := range tk.Activations {
						if a.IRQCPUPlus1 > 0 {
							n++
						}
					}
				}
				return n
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(append([]string{repoRoot(t), "fixtures", "kernels"}, c.path...)...)
			var o struct {
				F map[string]json.RawMessage `json:"fidelity"`
			}
			w := validateJSON(t, dir, p, &o)
			var got int
			if err := json.Unmarshal(o.F[c.key], &got); err != nil {
				t.Fatalf("JSON %s: %v", c.key, err)
			}
			if n := c.count(w); n == 0 || got != n {
				t.Errorf("JSON %s %d, the workload file %d", c.key, got, n)
			}
			wantValidateLine(t, dir, p, fmt.Sprintf(c.line, c.count(w)))
		})
	}
}

// --validate says how many wake edges the replay takes as WF_SYNC (the
// trace has no wake flags; extraction infers them), in the table and in
// JSON, the count the saved workload's sync column holds.
func TestWhatifReportsSyncWakeups(t *testing.T) {
	dir := t.TempDir()
	hb := filepath.Join(repoRoot(t), "fixtures", "kernels", "repeats", "guest-D-1s8c1t", "r4", "hackbench.perf.data.gz")
	var o struct {
		F struct {
			SyncWakeups int `json:"sync_wakeups"`
		} `json:"fidelity"`
	}
	w := validateJSON(t, dir, hb, &o)
	n, sync := 0, 0
	for _, e := range w.Edges {
		if e.Kind == whatif.EdgeWake {
			n++
			if e.Sync {
				sync++
			}
		}
	}
	if sync == 0 || o.F.SyncWakeups != sync {
		t.Errorf("JSON sync_wakeups %d, the workload file %d of %d wake edges", o.F.SyncWakeups, sync, n)
	}
	wantValidateLine(t, dir, hb, fmt.Sprintf("trace: %d of %d wake edges taken as WF_SYNC", sync, n))
}

// wantValidateLine runs whatif --validate on trace in dir and wants its
// table to hold the line want.
func wantValidateLine(t *testing.T, dir, trace, want string) {
	t.Helper()
	r := run(t, dir, "whatif", "-i", trace, "--validate")
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("exit %d, no %q in\n%s", r.code, want, r.stdout)
	}
}

// validateJSON runs whatif --validate --format json on trace in dir,
// saving its workload, decodes the report into out and returns the
// workload read back from the file.
func validateJSON(t *testing.T, dir, trace string, out any) *whatif.Workload {
	t.Helper()
	wl := filepath.Join(dir, "w.arrow")
	r := run(t, dir, "whatif", "-i", trace, "--validate", "--format", "json", "--save-workload", wl)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), out); err != nil {
		t.Fatal(err)
	}
	w, err := whatif.LoadWorkload(wl)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// --validate reports the switch charge's pools (how many gaps, each
// pool's median) in the table and in JSON when the replay moves them,
// the values of the saved workload's pools (TestSwitchChargeFixture
// checks those against perf's own dump), and not with --set
// switch_charge=off.
func TestWhatifReportsSwitchCharge(t *testing.T) {
	dir := t.TempDir()
	sch := filepath.Join(repoRoot(t), "fixtures", "kernels", "v6.12", "guest-M-1s1c2t", "r3", "schbench.perf.data.gz")
	var o struct {
		F struct {
			SwitchCharge *whatif.SwitchChargeSummary `json:"switch_charge"`
		} `json:"fidelity"`
	}
	w := validateJSON(t, dir, sch, &o)
	if want := w.SwitchChargeSummary(); want == nil || o.F.SwitchCharge == nil || *o.F.SwitchCharge != *want {
		t.Errorf("JSON switch charge %+v, the workload file's %+v", o.F.SwitchCharge, want)
	}
	wantValidateLine(t, dir, sch, "trace: at 1751 switches the kernel charged the next task")
	r := run(t, dir, "whatif", "-i", sch, "--validate", "--set", "switch_charge=off")
	if r.code != 0 || strings.Contains(r.stdout, "switches the kernel charged") {
		t.Errorf("switch_charge=off: exit %d, still reported:\n%s", r.code, r.stdout)
	}
}

// A text trace names no machine, so --topology is the machine it was
// recorded on: its capacities scale the runs into demand (by hand: 10 runs
// 2 ms on CPU 1, capacity 512, so 1 ms of demand at capacity 1024), and
// the replay, starting 10 on the same CPU, takes the trace's 2 ms (it took
// 4 ms when the demand ignored the capacities). Both extraction paths:
// with --validate and without. whatif notes what it leaves out of
// capacity-aware placement, and says nothing of it on a machine of equal
// capacities.
func TestWhatifTextTraceTakesTopologyCapacity(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.txt")
	text := " swapper 0 [001] 1000.001000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=10 next_prio=120\n" +
		" a 10 [001] 1000.003000: sched:sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n"
	if err := os.WriteFile(trace, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "sockets=1,cores=2,capacity=0:1024/1:512"
	r := run(t, dir, "whatif", "-i", trace, "--topology", spec, "--validate", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "differ in capacity") {
		t.Errorf("no note of what the model leaves out on unequal CPUs:\n%s", r.stderr)
	}
	var out struct {
		Fidelity struct {
			Observed, Simulated map[string]any
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if o, s := out.Fidelity.Observed["cpu_time_ns"], out.Fidelity.Simulated["cpu_time_ns"]; o != 2e6 || s != 2e6 {
		t.Errorf("cpu_time_ns observed %v, simulated %v; want 2 ms both", o, s)
	}
	if r := run(t, dir, "whatif", "-i", trace, "--topology", "sockets=1,cores=2"); r.code != 0 || strings.Contains(r.stderr, "capacity") {
		t.Errorf("equal capacities: exit %d, stderr %q", r.code, r.stderr)
	}
	// Without --validate the workload comes from the other extraction path.
	wl := filepath.Join(dir, "w.arrow")
	if r := run(t, dir, "whatif", "-i", trace, "--topology", spec, "--save-workload", wl); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	w, err := whatif.LoadWorkload(wl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range w.Tasks {
		if tk.TID != 10 {
			continue
		}
		if d := tk.DemandNS(); d != 1000000 {
			t.Errorf("task 10's demand %d ns, want 1 ms", d)
		}
		return
	}
	t.Fatal("task 10 not in the saved workload")
}

// Energy-aware placement from the command line: two tasks waking each
// other on the Juno r0 preset (which carries an Energy Model) under a
// v5.4 kernel are placed by find_energy_efficient_cpu (the replay's
// eas_prev and eas_moved count its choices); --set eas=off leaves them
// to the ordinary path, and --set eas=on on a machine without an Energy
// Model is refused, saying why.
func TestWhatifEAS(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.txt")
	var b strings.Builder
	sw := func(cpu int, ts float64, prev string, ppid int, state, next string, npid int) {
		fmt.Fprintf(&b, " %s %d [%03d] %.6f: sched:sched_switch: prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%s ==> next_comm=%s next_pid=%d next_prio=120\n",
			prev, ppid, cpu, ts, prev, ppid, state, next, npid)
	}
	wake := func(cpu int, ts float64, waker string, wpid int, wakee string, pid, target int) {
		fmt.Fprintf(&b, " %s %d [%03d] %.6f: sched:sched_waking: comm=%s pid=%d prio=120 target_cpu=%03d\n", waker, wpid, cpu, ts, wakee, pid, target)
	}
	ts := 1000.0
	sw(0, ts, "swapper/0", 0, "R", "a", 10)
	for i := 0; i < 20; i++ {
		wake(0, ts+0.001, "a", 10, "b", 11, 3)
		sw(0, ts+0.001, "a", 10, "S", "swapper/0", 0)
		sw(3, ts+0.00101, "swapper/3", 0, "R", "b", 11)
		wake(3, ts+0.002, "b", 11, "a", 10, 0)
		sw(3, ts+0.002, "b", 11, "S", "swapper/3", 0)
		sw(0, ts+0.00201, "swapper/0", 0, "R", "a", 10)
		ts += 0.002
	}
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	placed := func(args ...string) int64 {
		t.Helper()
		r := run(t, dir, append([]string{"whatif", "-i", trace, "--validate", "--format", "json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		var out struct {
			Fidelity struct {
				Stats struct {
					Prev  int64 `json:"eas_prev"`
					Moved int64 `json:"eas_moved"`
				} `json:"replay_stats"`
			}
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		return out.Fidelity.Stats.Prev + out.Fidelity.Stats.Moved
	}
	if n := placed("--topology", "juno-r0", "--kernel", "5.4.0"); n < 20 {
		t.Errorf("EAS placed %d wakeups under 5.4 on juno-r0; want the 40 exchanges' less those merged, at least 20", n)
	}
	if n := placed("--topology", "juno-r0", "--kernel", "5.4.0", "--set", "eas=off"); n != 0 {
		t.Errorf("eas=off: EAS placed %d wakeups", n)
	}
	if n := placed("--topology", "juno-r0", "--kernel", "4.19.0"); n != 0 {
		t.Errorf("4.19 (before EAS): EAS placed %d wakeups", n)
	}
	r := run(t, dir, "whatif", "-i", trace, "--topology", "sockets=1,cores=4", "--set", "eas=on")
	if r.code == 0 || !strings.Contains(r.stderr, "no Energy Model") {
		t.Errorf("eas=on without an Energy Model: exit %d, stderr %s", r.code, r.stderr)
	}
}
