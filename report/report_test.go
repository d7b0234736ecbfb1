package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

func fixtures(t testing.TB) []string {
	m, _ := filepath.Glob(filepath.Join(repoRoot(), "fixtures/kernels/*/*.perf.data"))
	if len(m) == 0 {
		t.Fatal("no perf.data fixtures")
	}
	return m
}

// buildFixture builds the report of a real trace as `replay report` does,
// with the baseline of its kernel and extra policies.
func buildFixture(t testing.TB, path string, runs int, policies ...string) *Data {
	t.Helper()
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	meta := r.Meta()
	kernel := meta.Source.OSRelease
	topo, err := model.Resolve("", meta.Topology)
	if err != nil {
		t.Fatal(err)
	}
	d, err := model.BuildDomains(topo, kernel)
	if err != nil {
		t.Fatal(err)
	}
	base, err := whatif.PolicyForKernel(kernel)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(path, filepath.Clean(repoRoot())+"/")
	in := Input{Reader: r, Name: name, Domains: d, Topology: topo, Kernel: kernel, Baseline: base, Runs: runs}
	for _, p := range policies {
		pol, err := whatif.LookupPolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		in.Policies = append(in.Policies, pol)
	}
	data, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFixtures builds and writes the report of every real fixture and
// checks that what it draws is what the analysis measures: the observed
// numbers are `replay latency`'s (analysis.Run on the same file), the CDF
// samples are its wakeups, the red gaps add up to its idle-while-runnable
// total for the observed and every simulated schedule, and a policy
// compared with itself shows no change.
func TestFixtures(t *testing.T) {
	for _, path := range fixtures(t) {
		name := filepath.Base(filepath.Dir(path)) + "/" + filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data := buildFixture(t, path, 3, "v6.1")

			r, err := ingest.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			topo, _ := model.Resolve("", r.Meta().Topology)
			d, _ := model.BuildDomains(topo, r.Meta().Source.OSRelease)
			want, err := analysis.Run(r, analysis.Options{Levels: analysis.FromDomains(d)})
			if err != nil {
				t.Fatal(err)
			}
			got := data.Observed.Report
			if got.WakeupLatency != want.WakeupLatency || got.IdleWhileRunnableTotal != want.IdleWhileRunnableTotal ||
				got.MigrationsTotal != want.MigrationsTotal || got.Slices != want.Slices {
				t.Errorf("observed report differs from analysis.Run:\n got %+v\nwant %+v", got.WakeupLatency, want.WakeupLatency)
			}
			if n := int64(len(data.Observed.Schedule.Latencies)); n != want.WakeupLatency.Count {
				t.Errorf("CDF has %d observed samples, analysis counts %d wakeups", n, want.WakeupLatency.Count)
			}
			// What `latency --plot` draws (analysis.Run's samples) is the
			// report's observed curve, and its percentiles are the analysis's.
			s := data.Observed.Schedule.sortedLatencies()
			if !slices.Equal(s, want.WakeupLatencies()) {
				t.Error("analysis.Run and Schedule collect different samples")
			}
			if len(s) > 0 && (s[len(s)-1] != want.WakeupLatency.MaxNS || s[(len(s)*99+99)/100-1] != want.WakeupLatency.P99NS) {
				t.Errorf("max/p99 of the samples %d/%d, analysis %d/%d", s[len(s)-1], s[(len(s)*99+99)/100-1], want.WakeupLatency.MaxNS, want.WakeupLatency.P99NS)
			}
			if data.Baseline == nil || data.Fidelity == nil || len(data.Policies) != 1 {
				t.Fatalf("no simulation: %q", data.NoSimulation)
			}
			for _, run := range data.Runs() {
				var red int64
				for _, l := range run.Schedule.IdleWhileWaiting() {
					for _, g := range l {
						red += g.End - g.Start
					}
				}
				if red != run.Report.IdleWhileRunnableTotal {
					t.Errorf("%s: red gaps %d ns, analysis idle-while-runnable %d ns", run.Name, red, run.Report.IdleWhileRunnableTotal)
				}
			}
			if data.Baseline.Report.IdleWhileRunnableTotal != data.Baseline.Metrics.IdleWhileRunnableNS {
				t.Errorf("baseline: report analysis %d, whatif metrics %d", data.Baseline.Report.IdleWhileRunnableTotal, data.Baseline.Metrics.IdleWhileRunnableNS)
			}
			if data.Comparison == nil || len(data.Comparison.Results) != 1 {
				t.Fatal("no comparison")
			}
			res := data.Comparison.Results[0]
			for _, k := range whatif.CompareMetricKeys {
				if res.Delta[k] != 0 || res.CI95[k] != [2]float64{} || res.Verdict[k] != whatif.VerdictNone {
					t.Errorf("v6.1 against itself: %s delta %v ci %v %s", k, res.Delta[k], res.CI95[k], res.Verdict[k])
				}
			}
			// The drawn replay is the one `replay whatif` writes with the same seed.
			if data.Fidelity.Simulated != data.Baseline.Metrics {
				t.Error("fidelity is not of the drawn baseline replay")
			}

			var b bytes.Buffer
			if err := Write(&b, data); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			for _, id := range []string{"summary", "topology", "cdf", "worst", "timeline", "domains", "fidelity", "deltas"} {
				if !strings.Contains(html, `<section id="`+id+`">`) {
					t.Errorf("section %s missing", id)
				}
			}
			// The longest wakeups are the analysis's: as many as it has
			// (up to WorstWakeups), the first one its maximum.
			if w := got.Worst; len(w) != min(WorstWakeups, int(want.WakeupLatency.Count)) || len(w) > 0 && w[0].LatencyNS != want.WakeupLatency.MaxNS {
				t.Errorf("%d longest wakeups, the first %+v; analysis max %d", len(w), w, want.WakeupLatency.MaxNS)
			}
			for _, bad := range []string{"http://", "https://", "<link", "src="} {
				if i := strings.Index(html, bad); i >= 0 && !strings.HasPrefix(html[i:], "http://www.w3.org/") {
					t.Errorf("page refers to something outside itself: %q", html[max(0, i-40):min(len(html), i+60)])
				}
			}
			// The fidelity section says where its observed wakeups end
			// sooner than the latency section's (whatif --validate's first
			// switch-in): on guest-M's and guest-P's schbench, perf's own
			// wakeup at the end, switched in again on CPU 1 after CPU 0's
			// buffer closed (0.25 ms against timehist's 11.9 and 2.7 ms).
			n := data.Fidelity.Observed.RepeatSwitchIns
			if (n > 0) != strings.Contains(html, `id="repeat-switch-ins"`) {
				t.Errorf("%d repeat switch-ins, the note shown %v", n, !(n > 0))
			}
			if want := int64(0); strings.HasSuffix(path, "guest-M-1s1c2t/schbench.perf.data") || strings.HasSuffix(path, "guest-P-1s2c1t/schbench.perf.data") {
				if want = 1; n != want {
					t.Errorf("%d repeat switch-ins, want %d", n, want)
				}
			}
			if !strings.Contains(html, "<h3>v6.1</h3>") || !strings.Contains(html, "paired t interval") || !strings.Contains(html, "no significant change") {
				t.Error("the delta table is missing")
			}
			if b.Len() > 3<<20 {
				t.Errorf("report is %d bytes", b.Len())
			}
		})
	}
}

func switchEv(t int64, cpu int32, prev int32, prevComm, state string, next int32, nextComm string) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedSwitch, "sched:sched_switch"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PrevPID, int64(prev))
	e.SetStr(timeline.PrevComm, prevComm)
	e.SetStr(timeline.PrevState, state)
	e.SetInt(timeline.NextPID, int64(next))
	e.SetStr(timeline.NextComm, nextComm)
	return e
}

func wakingEv(t int64, cpu, pid int32, comm string, target int32) timeline.Event {
	var e timeline.Event
	e.Time, e.Kind, e.Name = t, timeline.SchedWaking, "sched:sched_waking"
	e.SetInt(timeline.CPU, int64(cpu))
	e.SetInt(timeline.PID, int64(pid))
	e.SetStr(timeline.Comm, comm)
	e.SetInt(timeline.TargetCPU, int64(target))
	return e
}

// hostileTrace is a two-CPU trace whose task names are markup.
func hostileTrace(comm string, n int) *timeline.SliceReader {
	m := &timeline.SliceReader{Events: make([]timeline.Event, 0, 6*n)}
	m.M.Source = timeline.Source{Format: "test <b>bold</b>", Hostname: comm, Events: []string{"sched:sched_switch", "sched:sched_waking"}, NrCPUs: 2}
	t := int64(1_000_000)
	for i := 0; i < n; i++ {
		// Task 10 runs on cpu0 while task 11 waits there and cpu1 idles;
		// then 11 runs and sleeps.
		m.Events = append(m.Events,
			switchEv(t, 0, 0, "swapper/0", "R", 10, comm),
			wakingEv(t+1000, 0, 11, "w"+comm, 0),
			switchEv(t+50_000, 0, 10, comm, "S", 11, "w"+comm),
			switchEv(t+60_000, 0, 11, "w"+comm, "S", 0, "swapper/0"),
			switchEv(t+61_000, 1, 0, "swapper/1", "R", 10, comm),
			switchEv(t+62_000, 1, 10, comm, "S", 0, "swapper/1"),
		)
		t += 100_000
	}
	return m
}

// TestEscaping: everything from the trace is text on the page; a task
// called <script> must not become markup anywhere (summary, legend,
// tooltips), and a trace without topology says plainly that nothing was
// simulated.
func TestEscaping(t *testing.T) {
	const evil = `<script>document.title="pwned"</script><img src=x onerror=alert(1)>`
	for _, tc := range []struct {
		name     string
		baseline whatif.Policy
		noSim    string
	}{
		{"no-policy", nil, "no policy models kernel \"<i>\""},
		{"no-topology", mustPolicy(t, "v6.1"), "the trace has no topology"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Build(Input{Reader: hostileTrace(evil, 3), Name: "x<y>.data", Baseline: tc.baseline, NoSimulation: tc.noSim})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Write(&b, data); err != nil {
				t.Fatal(err)
			}
			html := b.String()
			for _, bad := range []string{"<script>document", "<img src=x", "<b>bold", "x<y>", "<i>"} {
				if strings.Contains(html, bad) {
					t.Errorf("unescaped %q in the page", bad)
				}
			}
			if !strings.Contains(html, "&lt;script&gt;document.title=") {
				t.Error("the task name is not on the page as text")
			}
			if strings.Count(html, "<script") != 1 {
				t.Errorf("%d script elements, want only the page's own", strings.Count(html, "<script"))
			}
			if !strings.Contains(html, `id="no-simulation"`) || !strings.Contains(html, "No policy was simulated") {
				t.Error("the page does not say that no policy was simulated")
			}
			if data.Observed.Report.IdleWhileRunnableTotal == 0 {
				t.Error("the trace should show idle while runnable")
			}
		})
	}
}

// TestDownsample: past the rectangle budget the timeline merges short
// slices into bins, says so, and stays within the budget's order.
func TestDownsample(t *testing.T) {
	for _, tc := range []struct {
		n, max   int
		sampled  bool
		maxRects int
	}{
		{n: 20, max: 10000, sampled: false},
		{n: 5000, max: 400, sampled: true, maxRects: 800},
		// 100,000 slices: the page must stay small enough to mail.
		{n: 20000, max: DefaultMaxRects, sampled: true, maxRects: 2 * DefaultMaxRects},
	} {
		data, err := Build(Input{Reader: hostileTrace("task", tc.n), Name: "t", MaxRects: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		v := renderTimeline([]laneRun{{"obs", data.Observed.Schedule}}, tc.max)
		if (v.BinNS > 0) != tc.sampled {
			t.Errorf("n=%d: downsampled %v (bin %d), want %v", tc.n, v.BinNS > 0, v.BinNS, tc.sampled)
		}
		if tc.sampled && v.Rects > tc.maxRects {
			t.Errorf("n=%d: %d shapes for a budget of %d", tc.n, v.Rects, tc.max)
		}
		var b bytes.Buffer
		if err := Write(&b, data); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), `id="downsampled"`); got != tc.sampled {
			t.Errorf("n=%d: downsampling note shown %v", tc.n, got)
		}
		if b.Len() > 4<<20 {
			t.Errorf("n=%d: the page is %.1f MB", tc.n, float64(b.Len())/(1<<20))
		}
	}
}

func TestWriteCDFPlot(t *testing.T) {
	dir := t.TempDir()
	s := []Series{{"observed", []int64{0, 5_000, 12_000, 12_000, 80_000, 3_000_000}}, {"baseline v6.1", []int64{4_000, 9_000}}}
	for _, tc := range []struct {
		file string
		ok   bool
	}{{"cdf.svg", true}, {"cdf.png", true}, {"cdf.PNG", true}, {"cdf.pdf", false}} {
		p := filepath.Join(dir, tc.file)
		err := WriteCDFPlot(p, s...)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err %v", tc.file, err)
		}
		if !tc.ok {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(strings.ToLower(tc.file), ".png") {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil || img.Bounds().Dx() < 400 {
				t.Errorf("%s: not a usable PNG (%v)", tc.file, err)
			}
		} else if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("observed (n=6)")) {
			t.Errorf("%s: not the chart", tc.file)
		}
	}
	if err := WriteCDFPlot(filepath.Join(dir, "empty.svg"), Series{"observed", nil}); err == nil {
		t.Error("an empty chart was written")
	}
}

func TestCDFXY(t *testing.T) {
	xy := cdfXY([]int64{0, 2000, 2000, 4000})
	want := [][2]float64{{0.1, 0.25}, {2, 0.75}, {4, 1}}
	if len(xy) != len(want) {
		t.Fatalf("got %v", xy)
	}
	for i, w := range want {
		if xy[i].X != w[0] || xy[i].Y != w[1] {
			t.Errorf("point %d: got %v, want %v", i, xy[i], w)
		}
	}
	big := make([]int64, 100000)
	for i := range big {
		big[i] = int64(i)
	}
	if xy := cdfXY(big); len(xy) > cdfPoints+2 || xy[len(xy)-1].Y != 1 {
		t.Errorf("%d points, last %v", len(xy), xy[len(xy)-1])
	}
}

func mustPolicy(t *testing.T, name string) whatif.Policy {
	p, err := whatif.LookupPolicy(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A command recorded under taskset (this machine's 6.18,
// fixtures/local-6.18/workloads/taskset-c1-cpu2.perf.data): the report's
// replay takes the command line's mask, as replay whatif does, and the
// fidelity section says so; the replay idles CPU 0 as the trace did.
func TestAffinityInReport(t *testing.T) {
	path := filepath.Join(repoRoot(), "fixtures", "local-6.18", "workloads", "taskset-c1-cpu2.perf.data")
	data := buildFixture(t, path, 2)
	var b bytes.Buffer
	if err := Write(&b, data); err != nil {
		t.Fatal(err)
	}
	// html/template escapes the note's apostrophe (&#39;), not the
	// template's own.
	if want := "The replay's CPU affinity: 3 tasks (command) may run on CPUs 1 only, from the recorded command line&#39;s taskset -c 1."; !strings.Contains(b.String(), want) {
		i := strings.Index(b.String(), "CPU affinity")
		t.Errorf("no %q in the fidelity section: %q", want, b.String()[max(0, i-40):min(b.Len(), max(0, i)+200)])
	}
	for _, g := range data.Fidelity.Goals {
		if g.Metric == "idle_ns/total_cpu_time" && !g.Met {
			t.Errorf("the idle goal missed: %+v", g)
		}
	}
}
