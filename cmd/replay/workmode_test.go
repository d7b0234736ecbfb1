package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
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
	if auto.F.RelError["idle_ns"] == fixed.F.RelError["idle_ns"] {
		t.Errorf("until-exit and fixed give the same idle time (rel. error %v): the mode had no effect", fixed.F.RelError["idle_ns"])
	}
	hb, r := get(filepath.Join(root, "fixtures", "kernels", "guest-A-2s2c2t-2numa", "hackbench.perf.data"))
	if hb.F.Work != "fixed (auto)" || strings.Contains(r.stderr, "work until-exit") {
		t.Errorf("hackbench default work %q (stderr %q), want fixed", hb.F.Work, r.stderr)
	}
	if r := run(t, dir, "whatif", "-i", sch, "--work", "sometimes"); r.code == 0 || !strings.Contains(r.stderr, "want auto, fixed or until-exit") {
		t.Errorf("bad --work accepted (exit %d): %s", r.code, r.stderr)
	}
}
