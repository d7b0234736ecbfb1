package whatif

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/internal/arrowtest"
	"github.com/schedreplay/replay/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtures are the committed real traces (the 6.1 guests' and this
// machine's 6.18 recordings), plus those matched by the glob in
// $REPLAY_EXTRA_FIXTURES: the guests' larger recordings, kept out of the
// repository (REPLAY_EXTRA_FIXTURES='../../shared/fixtures/kernels/*/*.perf.data'),
// or the 93 repeat recordings, left out of every run for time
// (REPLAY_EXTRA_FIXTURES='../fixtures/kernels/repeats/*/r*/*.perf.data.gz').
func fixtures(t testing.TB) []string {
	fs, _ := filepath.Glob("../fixtures/kernels/*/*.perf.data")
	gz, _ := filepath.Glob("../fixtures/kernels/*/*.perf.data.gz") // the two-vCPU guests' stress-ng
	local, _ := filepath.Glob("../fixtures/local-6.18/*.perf.data")
	fs = append(append(fs, gz...), local...)
	if g := os.Getenv("REPLAY_EXTRA_FIXTURES"); g != "" {
		extra, err := filepath.Glob(g)
		if err != nil {
			t.Fatalf("REPLAY_EXTRA_FIXTURES: %v", err)
		}
		fs = append(fs, extra...)
	}
	if len(fs) == 0 {
		t.Skip("no real fixtures")
	}
	return fs
}

// largestFixture is the biggest real fixture file, for benchmarks.
func largestFixture(tb testing.TB) string {
	var big string
	var bigSize int64
	for _, f := range fixtures(tb) {
		if st, err := os.Stat(f); err == nil && st.Size() > bigSize {
			big, bigSize = f, st.Size()
		}
	}
	return big
}

// fixtureTIDs extracts the real trace at path, skipping the test when
// the file is absent, and maps each task's index in the workload to its
// TID, for tests that name the trace's tasks as perf script does.
func fixtureTIDs(t *testing.T, path string) (*Workload, map[int32]int32) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skip(err)
	}
	w, _ := extractFixture(t, path)
	tid := make(map[int32]int32, len(w.Tasks))
	for i, tk := range w.Tasks {
		tid[int32(i)] = tk.TID
	}
	return w, tid
}

func extractFixture(t testing.TB, path string) (*Workload, *Metrics) {
	t.Helper()
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, obs, err := ExtractAndMeasure(r, r.Meta().Topology, r.Meta().Source.OSRelease)
	if err != nil {
		t.Fatal(err)
	}
	return w, obs
}

// Every real fixture replays with the invariants holding, with fixed work
// and with work bounded by the recorded exit times, with and without
// Config.ReapAnyChild (then a wait-any parent also saw each of its
// children's exits once): run time equals demand
// (less what an exit deadline cut), every edge and arrival fires once
// (or was cut) (Sim.checkInvariants), no CPU runs two tasks at once and
// time is monotonic (checker).
func TestFixturesReplayInvariants(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			w, _ := extractFixture(t, f)
			p, _ := LookupPolicy("v6.1")
			for seed := uint64(0); seed < 3; seed++ {
				cfg := DefaultConfig(p)
				cfg.Seed = seed
				for _, arr := range []ArrivalMode{ArrivalsRelative, ArrivalsAbsolute} {
					for _, dl := range []bool{false, true} {
						for _, reap := range []bool{false, true} {
							cfg.Arrivals, cfg.ExitDeadlines, cfg.ReapAnyChild = arr, dl, reap
							ch := checkerFor(t, cfg, w)
							if _, err := Replay(w, cfg, ch); err != nil {
								t.Fatalf("seed %d arrivals %d exit deadlines %v reap any child %v: %v", seed, arr, dl, reap, err)
							}
						}
					}
				}
			}
		})
	}
}

// The extracted workload accounts for the trace: each task's demand equals
// the run time the analysis measures for it (its timehist run slices), and
// extraction is deterministic. The one exception is the recorder itself:
// perf pins itself to each CPU in turn at start-up (it is the prev of each
// CPU's first sched_switch, R to migration/N), and the analysis books each
// of those CPUs busy with it from the trace start, while the workload books
// its time once, from where it was last seen.
//
// A trace with switches it did not record (Workload.LostSwitchIns > 0,
// this machine's 6.18 recordings) is held to less: timehist starts such a
// run at the CPU's previous switch, extraction not before the task's
// wakeup either; a task whose switch-outs are lost (schbench-m1-t2's
// tokio-rt-worker, only ever seen switching in) gets no run time from
// timehist, which books a run at its switch-out, but its demand up to
// the next task seen on that CPU from extraction. So only the totals are
// held, within 10 %.
func TestExtractDemandMatchesRunTime(t *testing.T) {
	for _, f := range fixtures(t) {
		w, _ := extractFixture(t, f)
		r, err := ingest.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analysis.Run(r, analysis.Options{})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		run := map[int32]int64{}
		for _, ts := range rep.Tasks {
			run[ts.TID] = ts.RunNS
		}
		var totDemand, totRun int64
		for _, tk := range w.Tasks {
			if tk.Comm == "perf" {
				continue
			}
			demand := tk.DemandNS()
			totDemand += demand
			totRun += run[tk.TID]
			d := demand - run[tk.TID]
			if (d > 1000 || d < -1000) && w.LostSwitchIns == 0 {
				t.Errorf("%s: task %d (%s) demand %d, analysis run time %d", f, tk.TID, tk.Comm, demand, run[tk.TID])
			}
		}
		if w.LostSwitchIns > 0 && (totDemand < totRun*9/10 || totDemand > totRun*11/10) {
			t.Errorf("%s: demand %d, not within 10%% of the analysis run time %d", f, totDemand, totRun)
		}
		w2, _ := extractFixture(t, f)
		if !reflect.DeepEqual(w, w2) {
			t.Errorf("%s: extraction not deterministic", f)
		}
	}
}

// --save-workload and reading it back give the same workload, and the
// same file bytes twice.
func TestWorkloadRoundTrip(t *testing.T) {
	f := fixtures(t)[0]
	w, _ := extractFixture(t, f)
	// A mask, as --affinity would set, and the command's tree carried.
	w.Tasks[len(w.Tasks)-1].Allowed = []int{0, 1}
	if !slices.ContainsFunc(w.Tasks, func(t Task) bool { return t.Command }) {
		t.Errorf("%s: no task of the recorded command to carry through save/load", f)
	}
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
	if err := SaveWorkload(p1, w); err != nil {
		t.Fatal(err)
	}
	if err := SaveWorkload(p2, w); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(p1)
	b2, _ := os.ReadFile(p2)
	if !bytes.Equal(b1, b2) {
		t.Error("workload file not byte-identical")
	}
	if !IsWorkloadFile(p1) || IsWorkloadFile(f) {
		t.Error("IsWorkloadFile")
	}
	w2, err := LoadWorkload(p1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w.Tasks, w2.Tasks) || !reflect.DeepEqual(w.Edges, w2.Edges) || !reflect.DeepEqual(w.IdleWakeNS, w2.IdleWakeNS) ||
		!reflect.DeepEqual(w.IdleWakeLocalNS, w2.IdleWakeLocalNS) || !reflect.DeepEqual(w.IdleWakeRemoteNS, w2.IdleWakeRemoteNS) || !reflect.DeepEqual(w.IdleWakeForkNS, w2.IdleWakeForkNS) ||
		!reflect.DeepEqual(w.PreemptWakeNS, w2.PreemptWakeNS) || !reflect.DeepEqual(w.PreemptWakeLocalNS, w2.PreemptWakeLocalNS) || !reflect.DeepEqual(w.PreemptWakeRTNS, w2.PreemptWakeRTNS) || !reflect.DeepEqual(w.TickSwitchNS, w2.TickSwitchNS) || !reflect.DeepEqual(w.Stalls, w2.Stalls) ||
		w.StartNS != w2.StartNS || w.EndNS != w2.EndNS || w.Kernel != w2.Kernel || !reflect.DeepEqual(w.Topology, w2.Topology) ||
		!reflect.DeepEqual(w.Cmdline, w2.Cmdline) || w.NewidleChances != w2.NewidleChances || w.NewidlePulls != w2.NewidlePulls ||
		w.TickPhaseNS != w2.TickPhaseNS || w.Flips != w2.Flips || !reflect.DeepEqual(w.BalancePulls, w2.BalancePulls) ||
		!reflect.DeepEqual(w.IRQCurrent, w2.IRQCurrent) {
		t.Error("workload changed through save/load")
	}
	if len(w.BalancePulls) == 0 {
		t.Errorf("%s: no balance pulls to carry through save/load", f)
	}
	if len(w.IRQCurrent) == 0 {
		t.Errorf("%s: no interrupt wakeup of a running task (IRQCurrent) to carry through save/load", f)
	}
	moves, raced := 0, 0
	for _, e := range w2.Edges {
		if e.Kind == EdgeMove {
			moves++
		}
		if e.Raced {
			raced++
		}
	}
	if moves == 0 {
		t.Errorf("%s: no stopper move (EdgeMove) read back", f)
	}
	if raced == 0 {
		t.Errorf("%s: no raced wakeup (Edge.Raced) read back", f)
	}
	tickSoft := 0
	for _, tk := range w2.Tasks {
		for _, a := range tk.Activations {
			if a.TickSoftIRQ {
				tickSoft++
			}
		}
	}
	if tickSoft == 0 {
		t.Errorf("%s: no tick-softirq arrival (Activation.TickSoftIRQ) read back", f)
	}
	if w.NewidleChances == 0 {
		t.Errorf("%s: no newidle chances counted", f)
	}
	if len(w.Cmdline) == 0 {
		t.Errorf("%s: no recorded command line extracted", f)
	}
	// guest-A's hackbench: its tick grid, read independently from `perf
	// script -F cpu,time,event` (the sched_stat_runtime records with no
	// other record on their CPU within 50 µs, times modulo 4 ms in 10 µs
	// bins: the densest 200 µs window starts at 0.98 ms).
	if strings.Contains(f, "guest-A-2s2c2t-2numa/hackbench") && w.TickPhaseNS != 980000 {
		t.Errorf("%s: tick phase %d ns, want 980000", f, w.TickPhaseNS)
	}
	if w.Flips.Placements == 0 {
		t.Errorf("%s: no telling placements for the starting wakee_flips", f)
	}
	// Replaying the file read back gives the same simulated schedule.
	p, _ := LookupPolicy("v6.1")
	cfg := DefaultConfig(p)
	s1, s2 := filepath.Join(dir, "s1.arrow"), filepath.Join(dir, "s2.arrow")
	if _, err := ReplayToFile(s1, w, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := ReplayToFile(s2, w2, cfg); err != nil {
		t.Fatal(err)
	}
	b1, _ = os.ReadFile(s1)
	b2, _ = os.ReadFile(s2)
	if !bytes.Equal(b1, b2) {
		t.Error("replay of the saved workload differs from the replay of the extracted one")
	}
}

// A workload file is written in record batches of at most
// workloadBatchRows rows (a large trace's in one batch passed arrow-go's
// 256 MiB bound on a message body, and LoadWorkload refused the file
// --save-workload had written). Saved with a bound of 100 rows, the
// fixture's file has one batch per 100 rows, and read back and saved
// again with the usual bound it gives the bytes of the usual save.
func TestWorkloadFileInBatches(t *testing.T) {
	w, _ := extractFixture(t, fixtures(t)[0])
	dir := t.TempDir()
	one, small, again := filepath.Join(dir, "one.arrow"), filepath.Join(dir, "small.arrow"), filepath.Join(dir, "again.arrow")
	if err := SaveWorkload(one, w); err != nil {
		t.Fatal(err)
	}
	usual := workloadBatchRows
	defer func() { workloadBatchRows = usual }()
	workloadBatchRows = 100
	if err := SaveWorkload(small, w); err != nil {
		t.Fatal(err)
	}
	fr := arrowtest.OpenFile(t, small)
	rows, batches := int64(0), int64(fr.NumRecords())
	for i := range fr.NumRecords() {
		rec, err := fr.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		rows += rec.NumRows()
	}
	if want := (rows + 99) / 100; batches != want || rows <= 100 {
		t.Fatalf("%d rows in %d batches, want %d batches of at most 100 rows (and more than one)", rows, batches, want)
	}
	w2, err := LoadWorkload(small)
	if err != nil {
		t.Fatal(err)
	}
	workloadBatchRows = usual
	if err := SaveWorkload(again, w2); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(one)
	b2, _ := os.ReadFile(again)
	if !bytes.Equal(b1, b2) {
		t.Error("the workload read from batches of 100 rows saves other bytes than the workload itself")
	}
}

func TestPinnedCPUOf(t *testing.T) {
	for comm, want := range map[string]int32{
		"ksoftirqd/3": 3, "migration/12": 12, "kworker/5:1": 5, "kworker/5:1H": 5, "kworker/u16:0": -1,
		"kworker/3:0-events": 3, "cpuhp/0": 0, "schbench-worker": -1, "rcu_preempt": -1, "foo/3": -1,
	} {
		if got := PinnedCPUOf(comm); got != want {
			t.Errorf("PinnedCPUOf(%q) = %d, want %d", comm, got, want)
		}
	}
}

// Same input, policy and seed give a byte-identical simulated timeline.
func TestDeterministicOutput(t *testing.T) {
	f := fixtures(t)[0]
	w, _ := extractFixture(t, f)
	p, _ := LookupPolicy("v6.1")
	cfg := DefaultConfig(p)
	cfg.Seed = 7
	dir := t.TempDir()
	var files [2][]byte
	for i := range files {
		path := filepath.Join(dir, fmt.Sprintf("sim%d.arrow", i))
		if _, err := ReplayToFile(path, w, cfg); err != nil {
			t.Fatal(err)
		}
		files[i], _ = os.ReadFile(path)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("simulated timeline differs between two identical runs")
	}
	// The file is an ordinary timeline.
	r, err := timeline.Open(filepath.Join(dir, "sim0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Meta().Source.Format != "replay whatif" || r.Meta().Source.Extra["policy"] != "v6.1" || r.Meta().Topology == nil {
		t.Errorf("meta %+v", r.Meta().Source)
	}
}

// digestSink hashes the simulated events.
type digestSink struct {
	h interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
	n int
}

func (d *digestSink) Emit(e *timeline.Event) error {
	d.n++
	fmt.Fprintf(d.h, "%d %s", e.Time, e.Name)
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		if e.IsSet(c) {
			if c.IsString() {
				fmt.Fprintf(d.h, " %s=%s", c.Name(), e.Str(c))
			} else {
				fmt.Fprintf(d.h, " %s=%d", c.Name(), e.Int(c))
			}
		}
	}
	d.h.Write([]byte{'\n'})
	return nil
}

type golden struct {
	Fixture      string   `json:"fixture"`
	Policy       string   `json:"policy"`
	Seed         uint64   `json:"seed"`
	Events       int      `json:"events"`
	EventsSHA256 string   `json:"events_sha256"`
	Metrics      *Metrics `json:"metrics"`
	Stats        *Stats   `json:"stats"`
}

// Golden simulated output for the small real fixture guest-D schbench:
// the metrics, the replay statistics and a hash of every simulated event.
// Run with -update after an intended change and review the diff.
func TestGoldenGuestD(t *testing.T) {
	f := "../fixtures/kernels/guest-D-1s8c1t/schbench.perf.data"
	if _, err := os.Stat(f); err != nil {
		t.Skip(err)
	}
	w, _ := extractFixture(t, f)
	p, _ := LookupPolicy("v6.1")
	cfg := DefaultConfig(p)
	d := &digestSink{h: sha256.New()}
	res, err := Replay(w, cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	// The analysis of the output finds the engine's own wakeup placements
	// by the records the kernel's would leave (analysis's
	// MigrationsAtWakeup; the trace's 57 of 167 are
	// TestMigrationsAtWakeupOnARealTrace's).
	if m := res.Metrics.MigrationsAtWakeup; m == nil || *m != res.Stats.MigrationsWakeup {
		t.Errorf("the output shows %v migrations at a wakeup, the engine made %d", m, res.Stats.MigrationsWakeup)
	}
	g := golden{Fixture: "guest-D-1s8c1t/schbench.perf.data", Policy: "v6.1", Events: d.n,
		EventsSHA256: hex.EncodeToString(d.h.Sum(nil)), Metrics: res.Metrics, Stats: res.Stats}
	got, _ := json.MarshalIndent(g, "", "  ")
	got = append(got, '\n')
	path := "testdata/golden_guest-D_schbench_v6.1.json"
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("simulated output differs from %s (run with -update if intended):\n%s", path, got)
	}
}

// BenchmarkReplay measures simulated scheduler events per second on one
// core for the largest real fixture, or for the workload file named by
// REPLAY_BENCH_WORKLOAD (a large trace's, saved with --save-workload:
// BENCHMARKS.md), with REPLAY_BENCH_SET's --set if given.
func BenchmarkReplay(b *testing.B) {
	var w *Workload
	if path := os.Getenv("REPLAY_BENCH_WORKLOAD"); path != "" {
		var err error
		if w, err = LoadWorkload(path); err != nil {
			b.Fatal(err)
		}
	} else {
		w, _ = extractFixture(b, largestFixture(b))
	}
	p, _ := LookupPolicy("v6.1")
	cfg := DefaultConfig(p)
	if kv := os.Getenv("REPLAY_BENCH_SET"); kv != "" {
		// One --set, to time the engine with a model option changed
		// (BENCHMARKS.md: balance_phase=own).
		st, err := ParseSetting(kv)
		if err == nil {
			err = st.Apply(&cfg)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var events int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := New(w, cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		st, err := s.Run()
		if err != nil {
			b.Fatal(err)
		}
		events += st.Events
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkLoadWorkload reads a workload file: the one named by
// $REPLAY_BENCH_WORKLOAD, else the largest fixture's workload saved to a
// temporary file (`replay whatif -i FILE.arrow`'s start).
func BenchmarkLoadWorkload(b *testing.B) {
	path := os.Getenv("REPLAY_BENCH_WORKLOAD")
	if path == "" {
		w, _ := extractFixture(b, largestFixture(b))
		path = filepath.Join(b.TempDir(), "w.arrow")
		if err := SaveWorkload(path, w); err != nil {
			b.Fatal(err)
		}
	}
	var acts int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w, err := LoadWorkload(path)
		if err != nil {
			b.Fatal(err)
		}
		_, acts, _, _, _ = w.Stats()
	}
	b.ReportMetric(float64(acts)*float64(b.N)/b.Elapsed().Seconds(), "activations/s")
}

// BenchmarkExtract measures workload extraction alone (every tally and
// the edge and activation building, no decoding) in trace events per
// second on one core, over the largest real fixture's events held in
// memory.
func BenchmarkExtract(b *testing.B) {
	evs := largestFixtureEvents(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Extract(&noiseReader{evs: evs}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(evs))/b.Elapsed().Seconds(), "events/s")
}
