package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/whatif"
)

// --affinity and the command line's taskset, on the recorded taskset
// workload (two CPU hogs under taskset -c 1 on two CPUs): by default the
// report says where the mask came from and the replay idles CPU 0 as the
// trace did (idle goal met); --affinity off replays the hogs spread over
// both CPUs (idle goal missed); a rule's mask goes into the saved
// workload, which keeps it when replayed without --affinity; bad rules
// are usage errors (exit 2), rules that name nothing or CPUs the machine
// lacks bad input (exit 1).
func TestWhatifAffinity(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(repoRoot(t), "fixtures", "local-6.18", "workloads", "taskset-c1-cpu2.perf.data")
	idleGoal := func(args ...string) (string, bool) {
		t.Helper()
		r := run(t, dir, append([]string{"whatif", "-i", trace, "--validate"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "goal idle_ns/total_cpu_time") {
				return r.stdout, strings.HasSuffix(l, " MET")
			}
		}
		t.Fatalf("%v: no idle goal in\n%s", args, r.stdout)
		return "", false
	}
	out, met := idleGoal()
	if !strings.Contains(out, "trace: affinity: 3 tasks (command) may run on CPUs 1 only, from the recorded command line's taskset -c 1\n") || !met {
		t.Errorf("default: no affinity line or the idle goal missed:\n%s", out)
	}
	out, met = idleGoal("--affinity", "off")
	if strings.Contains(out, "affinity:") || met {
		t.Errorf("--affinity off: an affinity line or the idle goal met:\n%s", out)
	}
	// The CPU stressors ran on CPU 1 throughout: CPU 0 for them is
	// contradicted by each of their activations, 5 (perf script shows two
	// sched_wakeup_new and three sched_waking of them).
	out, _ = idleGoal("--affinity", "off", "--affinity", "stress-ng-cpu=0")
	if !strings.Contains(out, "trace: affinity: 2 tasks (stress-ng-cpu) may run on CPUs 0 only, from --affinity stress-ng-cpu=0; the trace ran 5 of their activations first outside it") {
		t.Errorf("--affinity stress-ng-cpu=0: no contradicted note:\n%s", out)
	}

	wl := filepath.Join(dir, "w.arrow")
	if r := run(t, dir, "whatif", "-i", trace, "--affinity", "command=1", "--save-workload", wl); r.code != 0 {
		t.Fatalf("save: exit %d: %s", r.code, r.stderr)
	}
	w, err := whatif.LoadWorkload(wl)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tk := range w.Tasks {
		if tk.Allowed != nil {
			n++
			if !tk.Command || !reflect.DeepEqual(tk.Allowed, []int{1}) {
				t.Errorf("task %d (%s): command %v, allowed %v", tk.TID, tk.Comm, tk.Command, tk.Allowed)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d tasks with a mask in the saved workload, want 3", n)
	}
	a := run(t, dir, "whatif", "-i", wl, "-f", "json")
	b := run(t, dir, "whatif", "-i", trace, "-f", "json")
	if !strings.Contains(b.stderr, "replay: affinity: 3 tasks (command) may run on CPUs 1 only") {
		t.Errorf("no affinity line on stderr: %q", b.stderr)
	}
	c := run(t, dir, "whatif", "-i", wl, "-f", "json", "--affinity", "off")
	if a.code != 0 || a.stdout != b.stdout || c.stdout == a.stdout {
		t.Errorf("the saved workload's masks: replayed as the trace's %v, and off differs %v", a.stdout == b.stdout, c.stdout != a.stdout)
	}

	for _, bad := range []struct {
		arg  string
		code int
		want string
	}{
		{"stress-ng", 2, "want WHO=CPUS"},
		{"x=1-", 2, "bad range"},
		{"nosuch=1", 1, "no task of the workload is nosuch"},
		{"command=5", 1, "CPU 5 is beyond the machine's 2 CPUs"},
	} {
		r := run(t, dir, "whatif", "-i", trace, "--affinity", bad.arg)
		if r.code != bad.code || !strings.Contains(r.stderr, bad.want) {
			t.Errorf("--affinity %s: exit %d, %q; want exit %d and %q", bad.arg, r.code, r.stderr, bad.code, bad.want)
		}
	}
}
