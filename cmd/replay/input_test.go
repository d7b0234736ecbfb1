package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Every command that reads one trace takes it as -i FILE or as its one
// argument, with the same output either way; both at once, or two
// arguments, is a usage error (exit 2) naming what was given.
func TestInputAsArgument(t *testing.T) {
	dir := t.TempDir()
	trace := fixturePerfData(t)[0]
	cases := []struct{ cmd, flags []string }{
		{[]string{"info"}, nil},
		{[]string{"info"}, []string{"--json"}},
		{[]string{"latency"}, []string{"-f", "json"}},
		{[]string{"topology"}, []string{"-f", "tree"}},
		{[]string{"whatif"}, []string{"--validate", "-f", "json"}},
		{[]string{"export", "pprof"}, []string{"-o", "out.pb.gz"}},
	}
	for _, tc := range cases {
		args := append(append([]string{}, tc.cmd...), tc.flags...)
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			withFlag := run(t, dir, append(append([]string{}, args...), "-i", trace)...)
			if withFlag.code != 0 {
				t.Fatalf("-i FILE: exit %d: %s", withFlag.code, withFlag.stderr)
			}
			// The argument before the flags, as perf users type it.
			withArg := run(t, dir, append(append(append([]string{}, tc.cmd...), trace), tc.flags...)...)
			if withArg.code != 0 {
				t.Fatalf("FILE as argument: exit %d: %s", withArg.code, withArg.stderr)
			}
			if withArg.stdout != withFlag.stdout {
				t.Errorf("FILE as argument and -i FILE differ:\n%s\n---\n%s", withArg.stdout, withFlag.stdout)
			}
			both := run(t, dir, append(append([]string{}, args...), "-i", trace, trace)...)
			if both.code != 2 || !strings.Contains(both.stderr, "given twice") {
				t.Errorf("-i FILE and FILE: exit %d, stderr %q; want 2 and \"given twice\"", both.code, both.stderr)
			}
			two := run(t, dir, append(append([]string{}, args...), trace, trace)...)
			if two.code != 2 || !strings.Contains(two.stderr, "reads one trace") {
				t.Errorf("two arguments: exit %d, stderr %q; want 2 and \"reads one trace\"", two.code, two.stderr)
			}
		})
	}
}

// A workload file given to a command that reads traces says what it is
// and which command reads it (exit 1), rather than the timeline reader's
// "no replay_version"; replay whatif -i reads it, and replay info
// summarises it: its counts are those whatif said it wrote.
func TestWorkloadFileToTraceCommands(t *testing.T) {
	dir := t.TempDir()
	wl := dir + "/w.arrow"
	save := run(t, dir, "whatif", "-i", fixturePerfData(t)[0], "--save-workload", wl)
	if save.code != 0 {
		t.Fatalf("whatif --save-workload: exit %d: %s", save.code, save.stderr)
	}
	for _, args := range [][]string{{"latency"}, {"script"}, {"report", "-o", dir + "/r.html"}, {"export", "pprof", "-o", dir + "/p.pb.gz"}} {
		r := run(t, dir, append(args, "-i", wl)...)
		if r.code != 1 || !strings.Contains(r.stderr, "is a replay workload file") || !strings.Contains(r.stderr, "replay whatif -i reads it") {
			t.Errorf("%s -i workload: exit %d, stderr %q; want 1 and what the file is", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := run(t, dir, "whatif", "-i", wl); r.code != 0 {
		t.Errorf("whatif -i workload: exit %d: %s", r.code, r.stderr)
	}
	var tasks, acts, edges int
	if _, err := fmt.Sscanf(save.stderr[strings.Index(save.stderr, "wrote the workload ("):], "wrote the workload (%d tasks, %d activations, %d wake edges)", &tasks, &acts, &edges); err != nil {
		t.Fatalf("whatif's message %q: %v", save.stderr, err)
	}
	info := run(t, dir, "info", "--json", "-i", wl)
	if info.code != 0 {
		t.Fatalf("info -i workload: exit %d: %s", info.code, info.stderr)
	}
	var got struct {
		Kind        string `json:"kind"`
		Tasks       int    `json:"tasks"`
		Activations int    `json:"activations"`
		Edges       int    `json:"wake_edges"`
	}
	if err := json.Unmarshal([]byte(info.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "replay workload" || got.Tasks != tasks || got.Activations != acts || got.Edges != edges {
		t.Errorf("info: %+v; want a replay workload of %d tasks, %d activations, %d wake edges", got, tasks, acts, edges)
	}
}

// replay info counts a workload's hidden waits: guest-P's 6.1 messaging
// recording has one, its start barrier's broadcast (whatif's
// TestHerdOnMessaging), and no request/reply pair.
func TestWorkloadInfoHiddenWaits(t *testing.T) {
	dir := t.TempDir()
	wl := dir + "/w.arrow"
	f := filepath.Join(repoRoot(t), "fixtures", "kernels", "crosskernel", "v6.1", "guest-P-1s2c1t", "r3", "messaging.perf.data.gz")
	if r := run(t, dir, "whatif", "-i", f, "--save-workload", wl); r.code != 0 {
		t.Fatalf("whatif --save-workload: exit %d: %s", r.code, r.stderr)
	}
	info := run(t, dir, "info", "--json", "-i", wl)
	var got struct {
		Herd  *int `json:"awaits_herd"`
		Reply *int `json:"awaits_reply"`
	}
	if err := json.Unmarshal([]byte(info.stdout), &got); err != nil || info.code != 0 {
		t.Fatalf("info: exit %d, %v: %s", info.code, err, info.stderr)
	}
	if got.Herd == nil || *got.Herd != 1 || got.Reply == nil || *got.Reply != 0 {
		t.Errorf("info: awaits_herd %v, awaits_reply %v; want 1 and 0", got.Herd, got.Reply)
	}
	if text := run(t, dir, "info", "-i", wl); !strings.Contains(text.stdout, "hidden waits: wake edges whose waker waits for a broadcast the trace hid 1 ") {
		t.Errorf("info text lacks the hidden waits line:\n%s", text.stdout)
	}
}

// A text trace without its wakings' context (perf script's) is replayed
// with a warning that interrupt wakeups are taken for the interrupted
// task's; a perf.data, which has the flags, gets none.
func TestNoWakeContextWarning(t *testing.T) {
	dir := t.TempDir()
	text := run(t, dir, "whatif", "-i", filepath.Join(repoRoot(t), "fixtures", "text", "perf_script_ns_fields.txt"), "--topology", "sockets=1,cores=2,threads=1")
	if text.code != 0 || !strings.Contains(text.stderr, "records no wakeup's context") {
		t.Errorf("perf script text: exit %d, stderr %q; want 0 and the warning", text.code, text.stderr)
	}
	data := run(t, dir, "whatif", "-i", fixturePerfData(t)[0])
	if data.code != 0 || strings.Contains(data.stderr, "records no wakeup's context") {
		t.Errorf("perf.data: exit %d, stderr %q; want 0 and no warning", data.code, data.stderr)
	}
}
