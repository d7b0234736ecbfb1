package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// `replay latency --by wakeup` lists the longest wakeups with their
// context; its first row's latency is the report's maximum, and a bad
// --worst is a usage error (exit 2), not an empty table.
func TestLatencyByWakeup(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
	r := run(t, dir, "latency", "-i", in, "--by", "wakeup", "--worst", "5")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"The 5 longest wakeups", "idle nearby", "schbench"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	r = run(t, dir, "latency", "-i", in, "--by", "wakeup", "--worst", "3", "-f", "json")
	if r.code != 0 {
		t.Fatalf("json: exit %d: %s", r.code, r.stderr)
	}
	var v struct {
		WakeupLatency struct {
			MaxNS int64 `json:"max_ns"`
		} `json:"wakeup_latency"`
		Worst []struct {
			LatencyNS int64 `json:"latency_ns"`
		} `json:"worst_wakeups"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Worst) != 3 || v.Worst[0].LatencyNS != v.WakeupLatency.MaxNS || v.Worst[2].LatencyNS > v.Worst[1].LatencyNS {
		t.Errorf("worst_wakeups %+v, max %d", v.Worst, v.WakeupLatency.MaxNS)
	}
	if r := run(t, dir, "latency", "-i", in, "--by", "wakeup", "--worst", "0"); r.code != 2 || !strings.Contains(r.stderr, "--worst 0") {
		t.Errorf("--worst 0: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}

// `whatif --validate --worst N` lists both schedules' longest wakeups: in
// JSON under fidelity.worst, each list's first row the schedule's
// maximum; without --worst the key is absent (the output unchanged). It
// goes with --validate only, and not with CSV or a comparison.
func TestValidateWorst(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
	r := run(t, dir, "whatif", "-i", in, "--validate", "--worst", "4", "-f", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var v struct {
		Fidelity struct {
			Observed, Simulated struct {
				MaxNS int64 `json:"wakeup_max_ns"`
			}
			Worst *struct {
				Observed, Simulated []struct {
					LatencyNS int64 `json:"latency_ns"`
				}
			} `json:"worst"`
		} `json:"fidelity"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	f := v.Fidelity
	if f.Worst == nil || len(f.Worst.Observed) != 4 || len(f.Worst.Simulated) != 4 ||
		f.Worst.Observed[0].LatencyNS != f.Observed.MaxNS || f.Worst.Simulated[0].LatencyNS != f.Simulated.MaxNS {
		t.Errorf("worst %+v; observed max %d, simulated max %d", f.Worst, f.Observed.MaxNS, f.Simulated.MaxNS)
	}
	if r := run(t, dir, "whatif", "-i", in, "--validate", "--worst", "2"); r.code != 0 || !strings.Contains(r.stdout, "the trace's 2 longest wakeups") || !strings.Contains(r.stdout, "the replay's 2 longest wakeups") {
		t.Errorf("table: exit %d\n%s", r.code, r.stdout)
	}
	if r := run(t, dir, "whatif", "-i", in, "--validate", "-f", "json"); r.code != 0 || strings.Contains(r.stdout, `"worst"`) {
		t.Errorf("without --worst: exit %d, worst key present: %v", r.code, strings.Contains(r.stdout, `"worst"`))
	}
	for _, args := range [][]string{
		{"whatif", "-i", in, "--worst", "3"},
		{"whatif", "-i", in, "--validate", "--worst", "0"},
		{"whatif", "-i", in, "--validate", "--worst", "3", "-f", "csv"},
		{"whatif", "-i", in, "--validate", "--worst", "3", "--policy", "v6.1,rework"},
	} {
		if r := run(t, dir, args...); r.code != 2 || !strings.Contains(r.stderr, "--worst") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error about --worst", args, r.code, r.stderr)
		}
	}
}
