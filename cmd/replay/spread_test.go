package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestWhatifSpread checks --spread against the recordings' metrics read
// independently, through `replay latency` (the analysis perf's own
// latency output is tested against): the range of each goal's quantity,
// whether the replay lies in it, and the ordered pairs of recordings
// that meet each goal against each other, counted here by the goals'
// definition.
func TestWhatifSpread(t *testing.T) {
	dir := t.TempDir()
	var recs []string
	for _, r := range []string{"r1", "r2", "r3"} {
		recs = append(recs, filepath.Join(repoRoot(t), "fixtures", "kernels", "holdout", "guest-P-1s2c1t", r, "pipe.perf.data.gz"))
	}
	type quantities struct{ p50, p95, p99, idle, cpu float64 }
	var q []quantities
	for _, f := range recs {
		// --first-switch-in: the wakeups --validate measures (r3 has perf's
		// own wakeup switched in twice at the end).
		r := run(t, dir, "latency", "-i", f, "-f", "json", "--first-switch-in")
		if r.code != 0 {
			t.Fatalf("latency %s: exit %d: %s", f, r.code, r.stderr)
		}
		var l struct {
			W struct {
				P50 float64 `json:"p50_ns"`
				P95 float64 `json:"p95_ns"`
				P99 float64 `json:"p99_ns"`
			} `json:"wakeup_latency"`
			CPUs []struct {
				Busy float64 `json:"busy_ns"`
				Idle float64 `json:"idle_ns"`
			} `json:"cpus"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			t.Fatal(err)
		}
		v := quantities{p50: l.W.P50, p95: l.W.P95, p99: l.W.P99}
		for _, c := range l.CPUs {
			v.idle += c.Idle
			v.cpu += c.Busy
		}
		q = append(q, v)
	}
	r := run(t, dir, "whatif", "--validate", "-i", recs[0], "--spread", recs[1], "--spread", recs[2], "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var o struct {
		F struct {
			Simulated struct {
				P50  float64 `json:"wakeup_p50_ns"`
				P95  float64 `json:"wakeup_p95_ns"`
				P99  float64 `json:"wakeup_p99_ns"`
				Idle float64 `json:"idle_ns"`
				CPU  float64 `json:"cpu_time_ns"`
			} `json:"simulated"`
			Spread struct {
				Recordings, Pairs int
				Goals             []struct {
					Metric    string
					Low, High float64
					Simulated float64
					Within    bool
					KernelMet int `json:"kernel_met"`
				}
			} `json:"spread"`
		} `json:"fidelity"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
		t.Fatal(err)
	}
	sp, sim := o.F.Spread, o.F.Simulated
	if sp.Recordings != 3 || sp.Pairs != 6 || len(sp.Goals) != 4 {
		t.Fatalf("spread: %d recordings, %d pairs, %d goals; want 3, 6, 4", sp.Recordings, sp.Pairs, len(sp.Goals))
	}
	for _, g := range sp.Goals {
		var of func(quantities) float64
		var simV float64
		// met: the goal's test of b scored against a (a the observed side).
		var met func(a, b quantities) bool
		rel := func(x, y, lim float64) bool { return math.Abs(y-x)/x <= lim }
		switch g.Metric {
		case "wakeup_p50_ns":
			of, simV = func(v quantities) float64 { return v.p50 }, sim.P50
			met = func(a, b quantities) bool { return rel(a.p50, b.p50, 0.15) }
		case "wakeup_p95_ns":
			of, simV = func(v quantities) float64 { return v.p95 }, sim.P95
			met = func(a, b quantities) bool { return rel(a.p95, b.p95, 0.15) }
		case "wakeup_p99_ns":
			of, simV = func(v quantities) float64 { return v.p99 }, sim.P99
			met = func(a, b quantities) bool { return rel(a.p99, b.p99, 0.25) }
		case "idle_ns/total_cpu_time":
			of, simV = func(v quantities) float64 { return v.idle / (v.idle + v.cpu) }, sim.Idle/(sim.Idle+sim.CPU)
			met = func(a, b quantities) bool { return math.Abs(b.idle-a.idle)/(a.idle+a.cpu) <= 0.05 }
		default:
			t.Fatalf("unexpected goal %q", g.Metric)
		}
		lo, hi, n := math.Inf(1), math.Inf(-1), 0
		for i, a := range q {
			lo, hi = min(lo, of(a)), max(hi, of(a))
			for j, b := range q {
				if i != j && met(a, b) {
					n++
				}
			}
		}
		close := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
		if !close(g.Low, lo) || !close(g.High, hi) || !close(g.Simulated, simV) {
			t.Errorf("%s: range %v..%v, replay %v; the recordings' %v..%v, the replay's %v", g.Metric, g.Low, g.High, g.Simulated, lo, hi, simV)
		}
		if g.Within != (simV >= lo && simV <= hi) {
			t.Errorf("%s: within %v for %v in %v..%v", g.Metric, g.Within, simV, lo, hi)
		}
		if g.KernelMet != n {
			t.Errorf("%s: the kernel meets the goal in %d pairs, counted here %d", g.Metric, g.KernelMet, n)
		}
	}
	tab := run(t, dir, "whatif", "--validate", "-i", recs[0], "--spread", recs[1], "--spread", recs[2])
	if !strings.Contains(tab.stdout, "kernel spread over 3 recordings (6 ordered pairs") {
		t.Errorf("table without the spread:\n%s", tab.stdout)
	}
}

// TestWhatifSpreadRefused: --spread only with --validate of one replay,
// and only with recordings of the trace's CPU count.
func TestWhatifSpreadRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(repoRoot(t), "fixtures", "kernels", "holdout", "guest-P-1s2c1t")
	r1, r2 := filepath.Join(p, "r1", "pipe.perf.data.gz"), filepath.Join(p, "r2", "pipe.perf.data.gz")
	eight := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"whatif", "-i", r1, "--spread", r2}, "--spread goes with --validate"},
		{[]string{"whatif", "--validate", "-i", r1, "--spread", r2, "--policy", "v6.1", "--policy", "rework"}, "not a comparison"},
		{[]string{"whatif", "--validate", "-i", r1, "--spread", eight}, "8 CPUs, the trace 2"},
		{[]string{"whatif", "--validate", "-i", r1, "--spread", r2, "--format", "csv"}, "not CSV"},
	} {
		r := run(t, dir, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args[1:], r.code, r.stderr, tc.want)
		}
	}
}
