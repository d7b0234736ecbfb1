package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// compareFixture is a small real trace for the comparison tests.
func compareFixture(t *testing.T) string {
	return filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
}

func readCSV(t *testing.T, s string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("not RFC 4180 CSV: %v\n%s", err, s)
	}
	return rows
}

// --format csv: a comparison gives one row per policy × metric; a policy
// compared with itself has delta 0 and no significant change; a single
// replay gives one row per metric.
func TestWhatifCompareCSV(t *testing.T) {
	dir := t.TempDir()
	in := compareFixture(t)
	r := run(t, dir, "whatif", "-i", in, "--baseline", "v6.1", "-p", "v6.1,rework", "--runs", "2", "--progress", "never", "--format", "csv")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows := readCSV(t, r.stdout)
	if got := strings.Join(rows[0], ","); got != "policy,metric,baseline,value,delta,delta_pct,ci95_low,ci95_high,verdict,ci95_windows_low,ci95_windows_high" {
		t.Fatalf("header %s", got)
	}
	// 10 metrics plus idle-while-runnable and migrations for each of
	// guest-A's three domain levels (SMT, MC, NUMA), per policy.
	const perPolicy = 10 + 2*3
	if len(rows) != 1+2*perPolicy {
		t.Fatalf("%d rows, want %d", len(rows), 1+2*perPolicy)
	}
	var level []string
	for _, row := range rows[1 : 1+perPolicy] {
		if strings.Contains(row[1], ".") {
			level = append(level, row[1])
		}
	}
	if want := "idle_while_runnable_ns.MC idle_while_runnable_ns.NUMA idle_while_runnable_ns.SMT migrations.MC migrations.NUMA migrations.SMT"; strings.Join(level, " ") != want {
		t.Errorf("per-level metrics %v, want %s", level, want)
	}
	for _, row := range rows[1 : 1+perPolicy] {
		if row[0] != "v6.1" || row[4] != "0" || row[6] != "0" || row[7] != "0" || row[8] != "no significant change" {
			t.Errorf("self-comparison row %v", row)
		}
		// The window bootstrap covers p95 and p99 only.
		win := row[1] == "wakeup_p95_ns" || row[1] == "wakeup_p99_ns"
		if win && (row[9] != "0" || row[10] != "0") || !win && (row[9] != "" || row[10] != "") {
			t.Errorf("self-comparison window columns %v", row)
		}
	}
	if rows[1+perPolicy][0] != "rework" || rows[1+perPolicy][1] != "wakeup_p50_ns" {
		t.Errorf("row %d %v", 1+perPolicy, rows[1+perPolicy])
	}
	r = run(t, dir, "whatif", "-i", in, "--format", "csv")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows = readCSV(t, r.stdout)
	if strings.Join(rows[0], ",") != "policy,metric,value" || len(rows) != 13 || rows[1][1] != "wakeup_p50_ns" {
		t.Errorf("single replay CSV %v", rows)
	}
}

// -o DIR in a comparison: the baseline's and each policy's first-seed
// timeline open as timelines, and `replay latency` on one gives the p99
// of that policy's first-seed replay.
func TestWhatifCompareOutputDir(t *testing.T) {
	dir := t.TempDir()
	in := compareFixture(t)
	out := filepath.Join(dir, "sim")
	r := run(t, dir, "whatif", "-i", in, "--baseline", "v6.1", "-p", "rework", "--runs", "2", "--seed", "3", "--progress", "never", "--format", "json", "-o", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Writing the timelines changes nothing in the report (the window
	// bootstrap then reads the first seed's latencies back from the file).
	if r0 := run(t, dir, "whatif", "-i", in, "--baseline", "v6.1", "-p", "rework", "--runs", "2", "--seed", "3", "--progress", "never", "--format", "json"); r0.stdout != r.stdout {
		t.Error("-o DIR changes the comparison")
	}
	var cmp struct {
		Seeds []uint64 `json:"seeds"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cmp); err != nil || len(cmp.Seeds) != 2 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	for _, p := range []string{"v6.1", "rework"} {
		f := filepath.Join(out, p+".arrow")
		tr, err := timeline.Open(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got := tr.Meta().Source.Extra["policy"]; got != p {
			t.Errorf("%s: policy %q", f, got)
		}
		tr.Close()
		// The policy's first-seed replay alone, and the latency of its file.
		r1 := run(t, dir, "whatif", "-i", in, "-p", p, "--seed", fmt.Sprint(cmp.Seeds[0]), "--format", "json")
		var one struct {
			Metrics struct {
				P99 int64 `json:"wakeup_p99_ns"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(r1.stdout), &one); err != nil {
			t.Fatalf("%v: %s %s", err, r1.stdout, r1.stderr)
		}
		r2 := run(t, dir, "latency", "-i", f, "--format", "json")
		var lat struct {
			WL struct {
				P99 int64 `json:"p99_ns"`
			} `json:"wakeup_latency"`
		}
		if err := json.Unmarshal([]byte(r2.stdout), &lat); err != nil {
			t.Fatalf("%v: %s %s", err, r2.stdout, r2.stderr)
		}
		if lat.WL.P99 != one.Metrics.P99 || lat.WL.P99 == 0 {
			t.Errorf("%s: latency p99 %d, first-seed replay p99 %d", p, lat.WL.P99, one.Metrics.P99)
		}
	}
}

// --validate in a comparison: JSON key fidelity beside baseline and
// results (the baseline's first seed against the observed schedule, as a
// single --validate replay of that seed reports it); the table prints it.
func TestWhatifCompareValidate(t *testing.T) {
	dir := t.TempDir()
	in := compareFixture(t)
	args := []string{"whatif", "-i", in, "--baseline", "v6.1", "-p", "rework", "--runs", "2", "--progress", "never", "--validate"}
	r := run(t, dir, append(args, "--format", "json")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var cmp map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &cmp); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"baseline", "results", "fidelity"} {
		if cmp[k] == nil {
			t.Errorf("no key %s", k)
		}
	}
	var seeds []uint64
	var fid struct {
		Policy   string             `json:"policy"`
		RelError map[string]float64 `json:"rel_error"`
		KS       float64            `json:"ks"`
	}
	if err := json.Unmarshal(cmp["seeds"], &seeds); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cmp["fidelity"], &fid); err != nil {
		t.Fatal(err)
	}
	one := run(t, dir, "whatif", "-i", in, "-p", "v6.1", "--seed", fmt.Sprint(seeds[0]), "--validate", "--format", "json")
	var single struct {
		F struct {
			Policy   string             `json:"policy"`
			RelError map[string]float64 `json:"rel_error"`
			KS       float64            `json:"ks"`
		} `json:"fidelity"`
	}
	if err := json.Unmarshal([]byte(one.stdout), &single); err != nil {
		t.Fatalf("%v: %s", err, one.stderr)
	}
	if fid.Policy != "v6.1" || fid.KS != single.F.KS || fmt.Sprint(fid.RelError) != fmt.Sprint(single.F.RelError) {
		t.Errorf("comparison fidelity %+v, single replay %+v", fid, single.F)
	}
	r = run(t, dir, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "fidelity of policy v6.1") || !strings.Contains(r.stdout, "KS distance") {
		t.Errorf("table without fidelity (exit %d): %s", r.code, r.stdout)
	}
}

// --set: usage errors name the valid keys; a setting is applied to the
// baseline and every policy (reported in the JSON and the table) and
// changes the replay.
func TestWhatifSet(t *testing.T) {
	dir := t.TempDir()
	in := compareFixture(t)
	for _, kv := range []string{"imbalance_pct=117", "imbalance_pct.LLC=117", "hz=123", "bogus=1", "nr_migrate"} {
		r := run(t, dir, "whatif", "-i", in, "--set", kv)
		if r.code != 2 || !strings.Contains(r.stderr, "--set") {
			t.Errorf("--set %s: exit %d, stderr %s", kv, r.code, r.stderr)
		}
		if strings.HasPrefix(kv, "bogus") && !strings.Contains(r.stderr, "imbalance_pct.LEVEL=N") {
			t.Errorf("--set %s: the error does not list the keys: %s", kv, r.stderr)
		}
	}
	base := run(t, dir, "whatif", "-i", in, "-p", "v6.1", "--format", "csv")
	set := run(t, dir, "whatif", "-i", in, "-p", "v6.1", "--format", "csv", "--set", "migration_cost=0", "--set", "hz=1000", "--set", "imbalance_pct.*=100")
	if base.code != 0 || set.code != 0 || base.stdout == set.stdout {
		t.Errorf("--set changes nothing (exit %d %d): %s", base.code, set.code, set.stderr)
	}
	r := run(t, dir, "whatif", "-i", in, "--baseline", "v6.1", "-p", "rework", "--runs", "2", "--progress", "never", "--set", "busy_factor=4", "--set", "imbalance_pct.MC=125", "--format", "json")
	var cmp struct {
		Settings []string `json:"settings"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &cmp); err != nil || fmt.Sprint(cmp.Settings) != "[busy_factor=4 imbalance_pct.MC=125]" {
		t.Errorf("settings %v (%v): %s", cmp.Settings, err, r.stderr)
	}
	r = run(t, dir, "whatif", "-i", in, "--baseline", "v6.1", "-p", "rework", "--runs", "2", "--progress", "never", "--set", "hz=100")
	if !strings.Contains(r.stdout, "parameters (baseline and every policy alike): hz=100") {
		t.Errorf("table: %s", r.stdout)
	}
}

// --sweep: a JSON array with one comparison per grid point, a table with
// one row per point and policy, deterministic output; -o writes each
// point's timelines under DIR/<point>/.
func TestWhatifSweep(t *testing.T) {
	dir := t.TempDir()
	in := compareFixture(t)
	args := []string{"whatif", "-i", in, "--baseline", "v6.1", "-p", "rework", "--runs", "2", "--progress", "never", "--sweep", "hz=250,1000"}
	r := run(t, dir, append(args, "--format", "json", "-o", "sim")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var pts []struct {
		Point   []string          `json:"point"`
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pts); err != nil || len(pts) != 2 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if fmt.Sprint(pts[0].Point, pts[1].Point) != "[hz=250] [hz=1000]" || len(pts[1].Results) != 1 {
		t.Errorf("points %v %v", pts[0].Point, pts[1].Point)
	}
	for _, f := range []string{"hz=250/v6.1.arrow", "hz=1000/rework.arrow"} {
		tr, err := timeline.Open(filepath.Join(dir, "sim", f))
		if err != nil {
			t.Fatal(err)
		}
		if hz := tr.Meta().Source.Extra["hz"]; !strings.HasPrefix(f, "hz="+hz+"/") {
			t.Errorf("%s: hz %s", f, hz)
		}
		tr.Close()
	}
	a, b := run(t, dir, args...), run(t, dir, args...)
	if a.code != 0 || a.stdout != b.stdout {
		t.Fatalf("table not deterministic (exit %d): %s", a.code, a.stderr)
	}
	lines := strings.Split(strings.TrimSpace(a.stdout), "\n")
	if len(lines) != 2+4 || !strings.HasPrefix(lines[5], "hz=1000") || !strings.Contains(lines[5], "rework") {
		t.Errorf("table:\n%s", a.stdout)
	}
	if r := run(t, dir, "whatif", "-i", in, "--sweep", "hz=250,7"); r.code != 2 {
		t.Errorf("bad sweep value: exit %d", r.code)
	}
}
