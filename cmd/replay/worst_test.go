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
