package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

var replayBin string

// TestMain builds the replay binary once, so the tests run it as a user
// does (exit codes, stderr, files left behind).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "replay-bin-*")
	if err != nil {
		panic(err)
	}
	replayBin = filepath.Join(dir, "replay")
	if out, err := exec.Command("go", "build", "-o", replayBin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// fixturePerfData lists the perf.data files in the repository's fixtures.
func fixturePerfData(t testing.TB) []string {
	root := repoRoot(t)
	var files []string
	for _, pat := range []string{"fixtures/kernels/*/*.perf.data", "fixtures/perf/*.data"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no perf.data fixtures found")
	}
	return files
}

type result struct {
	stdout, stderr string
	code           int
}

func run(t testing.TB, dir string, args ...string) result {
	cmd := exec.Command(replayBin, args...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{o.String(), e.String(), code}
}

func notebookCheck(t *testing.T) string {
	tool := filepath.Join(repoRoot(t), "..", "shared", "tools", "notebook-check", "run")
	_, errTool := os.Stat(tool)
	_, errNode := exec.LookPath("node")
	if errTool != nil || errNode != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("notebook-check needs %s and node (tool: %v, node: %v)", tool, errTool, errNode)
		}
		t.Skip("notebook-check or node not available")
	}
	return tool
}

// Every timeline written from the real fixtures opens in apache-arrow JS,
// polars and DuckDB, they agree with each other, and DuckDB's counts per
// event equal the summary replay stored.
func TestNotebooksReadTimelines(t *testing.T) {
	tool := notebookCheck(t)
	dir := t.TempDir()
	var files []string
	metas := map[string]*timeline.Meta{}
	for _, in := range fixturePerfData(t) {
		base := strings.TrimSuffix(filepath.Base(filepath.Dir(in))+"-"+filepath.Base(in), ".data")
		for _, ext := range []string{".arrow", ".parquet"} {
			out := filepath.Join(dir, base+ext)
			if r := run(t, dir, "ingest", "--progress=never", in, "-o", out); r.code != 0 {
				t.Fatalf("ingest %s: exit %d: %s", in, r.code, r.stderr)
			}
			r, err := timeline.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			metas[out] = r.Meta()
			r.Close()
			files = append(files, out)
		}
	}
	// The run-slice table of `replay latency --slices` is an Arrow file too.
	slices := filepath.Join(dir, "slices.arrow")
	if r := run(t, dir, "latency", "-i", fixturePerfData(t)[0], "--slices", slices); r.code != 0 {
		t.Fatalf("latency --slices: exit %d: %s", r.code, r.stderr)
	}
	for _, res := range runNotebookCheck(t, tool, []string{"--quiet", "--expect-columns", "cpu,tid,comm,start_ns,end_ns,run_ns,sch_delay_ns"}, []string{slices}) {
		if !res.OK {
			t.Errorf("%s: notebook-check failed: %v", res.Path, res.Problems)
		}
	}
	// So are a simulated schedule and a saved workload (replay whatif).
	sim, wl := filepath.Join(dir, "sim.arrow"), filepath.Join(dir, "workload.arrow")
	kin := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-D-1s8c1t", "schbench.perf.data")
	if r := run(t, dir, "whatif", "-i", kin, "-o", sim, "--save-workload", wl); r.code != 0 {
		t.Fatalf("whatif: exit %d: %s", r.code, r.stderr)
	}
	for _, res := range runNotebookCheck(t, tool, []string{"--quiet", "--expect-columns", "table"}, []string{wl}) {
		if !res.OK {
			t.Errorf("%s: notebook-check failed: %v", res.Path, res.Problems)
		}
	}
	if r, err := timeline.Open(sim); err != nil {
		t.Fatal(err)
	} else {
		metas[sim] = r.Meta()
		r.Close()
		files = append(files, sim)
	}
	var arrows, parquets []string
	for _, f := range files {
		if strings.HasSuffix(f, ".parquet") {
			parquets = append(parquets, f)
		} else {
			arrows = append(arrows, f)
		}
	}
	common := []string{"--quiet", "--expect-columns", "ts,event,cpu,common_pid,common_comm,prev_state,next_pid,fields,callchain",
		"--expect-metadata", "replay_version,source,summary"}
	// DuckDB reads Parquet only here, so only Parquet gets the SQL check.
	sql := []string{"--sql", "SELECT event, count(*) AS n FROM t GROUP BY event ORDER BY event"}
	for _, group := range []struct {
		args  []string
		files []string
	}{{common, arrows}, {append(append([]string{}, common...), sql...), parquets}} {
		for _, res := range runNotebookCheck(t, tool, group.args, group.files) {
			m := metas[res.Path]
			if !res.OK {
				t.Errorf("%s: notebook-check failed: %v", res.Path, res.Problems)
				continue
			}
			if !strings.HasSuffix(res.Path, ".parquet") {
				continue
			}
			if len(res.SQL) != 1 || !res.SQL[0].OK {
				t.Errorf("%s: sql failed", res.Path)
				continue
			}
			got := map[string]int64{}
			for _, row := range res.SQL[0].Rows {
				got[row["event"].(string)] = int64(row["n"].(float64))
			}
			if len(got) != len(m.Summary.EventsByKind) {
				t.Errorf("%s: DuckDB sees %d event kinds, summary %d", res.Path, len(got), len(m.Summary.EventsByKind))
			}
			for k, n := range m.Summary.EventsByKind {
				if got[k] != n {
					t.Errorf("%s: DuckDB counts %d %s events, summary %d", res.Path, got[k], k, n)
				}
			}
		}
	}
}

// The default Arrow output is LZ4-compressed (as Feather's writer does) and
// --compress none is for readers without codecs: apache-arrow JS with no
// codec registered opens the latter, and the former only with one.
func TestNotebooksReadCompression(t *testing.T) {
	tool := notebookCheck(t)
	dir := t.TempDir()
	in := fixturePerfData(t)[0]
	def, none := filepath.Join(dir, "default.arrow"), filepath.Join(dir, "none.arrow")
	for _, c := range []struct {
		out  string
		args []string
	}{{def, nil}, {none, []string{"--compress", "none"}}} {
		if r := run(t, dir, append([]string{"ingest", "--progress=never", in, "-o", c.out}, c.args...)...); r.code != 0 {
			t.Fatalf("ingest: exit %d: %s", r.code, r.stderr)
		}
	}
	for _, res := range runNotebookCheck(t, tool, []string{"--quiet"}, []string{def}) {
		if !res.OK {
			t.Errorf("%s with codecs: %v", res.Path, res.Problems)
		}
	}
	for _, res := range runNotebookCheck(t, tool, []string{"--quiet", "--no-codecs"}, []string{none, def}) {
		switch {
		case res.Path == none && !res.OK:
			t.Errorf("--compress none without codecs: %v", res.Problems)
		case res.Path == def && res.OK:
			t.Errorf("the default output opened without codecs: it is not compressed")
		}
	}
}

type checkResult struct {
	Path     string   `json:"path"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
	SQL      []struct {
		OK   bool             `json:"ok"`
		Rows []map[string]any `json:"rows"`
	} `json:"sql"`
}

// runNotebookCheck runs the checker on files and returns one result per
// file. A non-zero exit is reported through the results' ok and problems.
func runNotebookCheck(t *testing.T, tool string, args, files []string) []checkResult {
	cmd := exec.Command(tool, append(args, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("notebook-check: %v\n%s", err, stderr.String())
	}
	var res []checkResult
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r checkResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("notebook-check output %q: %v (stderr: %s)", line, err, stderr.String())
		}
		res = append(res, r)
	}
	if len(res) != len(files) {
		t.Fatalf("notebook-check gave %d results for %d files; stderr: %s", len(res), len(files), stderr.String())
	}
	return res
}

// Bad input: a clear message naming the file, exit status 1, and no
// output file. Usage mistakes: exit status 2.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := fixturePerfData(t)[0]
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, file, want string
	}{
		{"wrong magic", write("garbage.data", []byte("this is not a trace at all, not even close")), "unrecognised trace format"},
		{"empty", write("empty.data", nil), "unrecognised trace format"},
		{"truncated header", write("trunc-header.data", data[:50]), "trunc-header.data"},
		{"missing", filepath.Join(dir, "nope.data"), "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-")+".arrow")
			r := run(t, dir, "ingest", "--progress=never", tc.file, "-o", out)
			if r.code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) || !strings.HasPrefix(r.stderr, "replay: ") {
				t.Errorf("stderr %q does not say %q", r.stderr, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("output %s was left behind", out)
			}
		})
	}
	if r := run(t, dir, "ingest", "--format", "csv", good); r.code != 2 {
		t.Errorf("bad --format: exit %d, want 2 (%s)", r.code, r.stderr)
	}
	if r := run(t, dir, "ingest", "--no-such-flag"); r.code != 2 {
		t.Errorf("unknown flag: exit %d, want 2 (%s)", r.code, r.stderr)
	}
	// Nothing else is left in the directory: no temp files from the writer.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "out-") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// The demo runs on the embedded trace and prints its summary.
func TestDemo(t *testing.T) {
	r := run(t, t.TempDir(), "demo")
	if r.code != 0 {
		t.Fatalf("demo: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"replay ingest", "sched_switch", "cpus:", "0-7 (8)", "sd_llc", "Wakeup latency", "fidelity of policy v6.1", "trace: 1502 host stalls of busy vCPUs", "KS distance", "llc-nr-running (v5.10", "95% CI", "Wakeup Latencies percentiles (usec)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// Same input, same bytes out.
func TestIngestDeterministic(t *testing.T) {
	dir := t.TempDir()
	in := fixturePerfData(t)[0]
	var outs [][]byte
	for i, ext := range []string{".arrow", ".arrow", ".parquet", ".parquet"} {
		out := filepath.Join(dir, string(rune('a'+i))+ext)
		if r := run(t, dir, "ingest", "--progress=never", in, "-o", out); r.code != 0 {
			t.Fatalf("ingest: %s", r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b)
	}
	if !bytes.Equal(outs[0], outs[1]) || !bytes.Equal(outs[2], outs[3]) {
		t.Error("two ingests of the same trace differ")
	}
}

// A damaged timeline file gives an error naming the file and exit 1, not
// the Arrow library's panic (exit 2 and a stack trace before the reader
// recovered them).
func TestDamagedTimeline(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.arrow")
	if r := run(t, dir, "ingest", "--progress=never", fixturePerfData(t)[0], "-o", good); r.code != 0 {
		t.Fatalf("ingest: exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// Flip bytes in the body: every 97th byte of the middle half.
	for i := len(data) / 4; i < len(data)*3/4; i += 97 {
		data[i] ^= 0xff
	}
	bad := filepath.Join(dir, "bad.arrow")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"latency", "-i", bad}, {"whatif", "-i", bad}} {
		r := run(t, dir, cmd...)
		if r.code != 1 || !strings.HasPrefix(r.stderr, "replay: ") || !strings.Contains(r.stderr, "bad.arrow") || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and an error naming the file", cmd[0], r.code, r.stderr)
		}
	}
	// One byte flipped at each of 200 places: where it lands in the IPC
	// metadata rather than a compressed body, the Arrow library panics
	// (5 of these 199 did, on this fixture's timeline, before the reader
	// recovered them); the reader must end with an error or events.
	orig, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flip := filepath.Join(dir, "flip.arrow")
	for k := 1; k < 200; k++ {
		b := append([]byte(nil), orig...)
		b[len(b)*k/200] ^= 0xff
		if err := os.WriteFile(flip, b, 0o644); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("byte %d flipped: panic %v", len(b)*k/200, p)
				}
			}()
			r, err := timeline.Open(flip)
			if err != nil {
				return
			}
			defer r.Close()
			for r.Next() {
			}
		}()
	}
}

// A raw trace with a CPU number no kernel has: a clear error naming the
// file and the event, exit 1, no output file left (this 2-line perf script
// text used to have `replay latency` and `replay whatif` killed for memory).
func TestBadCPUNumber(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.txt")
	text := " a 1 [99999999] 1000.000001: sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120\n" +
		" b 2 [99999999] 1000.000002: sched:sched_switch: prev_comm=b prev_pid=2 prev_prio=120 prev_state=S ==> next_comm=a next_pid=1 next_prio=120\n"
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.arrow")
	for _, cmd := range [][]string{{"latency", "-i", in}, {"info", "-i", in}, {"ingest", "--progress=never", in, "-o", out},
		{"whatif", "-i", in, "--topology", "sockets=1,cores=2,threads=1"}} {
		r := run(t, dir, cmd...)
		if r.code != 1 || !strings.Contains(r.stderr, "bad.txt: event 0 at 1000000001000 ns: sched_switch: cpu 99999999 outside 0..8191") {
			t.Errorf("%v: exit %d, stderr %q", cmd, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("ingest left an output file")
	}
}

// TestTruncatedTraceIsReported: a perf.data cut short (its first 100,000
// bytes) is read as far as it goes, and every command that reads it says
// on stderr what it could not use; latency also puts it in its JSON. The
// bytes missing are the data section's end from the file header
// (perf_file_header: data.offset at byte 40, data.size at 48) less the
// file's length. The intact file gives an empty "dropped" and no warning.
func TestTruncatedTraceIsReported(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(repoRoot(t), "fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	const cut = 100000
	dataEnd := binary.LittleEndian.Uint64(data[40:48]) + binary.LittleEndian.Uint64(data[48:56])
	wantMissing := int64(dataEnd) - cut
	trunc := filepath.Join(dir, "trunc.data")
	if err := os.WriteFile(trunc, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	const reason = "data section bytes missing (file truncated)"
	r := run(t, dir, "latency", "-f", "json", trunc)
	if r.code != 0 {
		t.Fatalf("latency: exit %d: %s", r.code, r.stderr)
	}
	var rep struct {
		Dropped map[string]int64 `json:"dropped"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Dropped[reason] != wantMissing {
		t.Errorf("dropped %v, want %q %d", rep.Dropped, reason, wantMissing)
	}
	want := fmt.Sprintf("%s: %d", reason, wantMissing)
	for _, args := range [][]string{
		{"latency", trunc},
		{"ingest", "--progress=never", trunc, "-o", filepath.Join(dir, "t.arrow")},
		{"latency", filepath.Join(dir, "t.arrow")},
		{"export", "perfetto", trunc, "-o", filepath.Join(dir, "t.pb")},
		{"whatif", "--validate", "--topology", "sockets=1,cores=2", trunc},
		{"report", trunc, "-o", filepath.Join(dir, "t.html")},
	} {
		r := run(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stderr, "trace could not be read") || !strings.Contains(r.stderr, want) {
			t.Errorf("%v: exit %d, stderr %q lacks %q", args, r.code, r.stderr, want)
		}
	}
	if !strings.Contains(run(t, dir, "latency", trunc).stdout, "Not analysed (the trace's reader could not use them): "+want) {
		t.Errorf("latency's table does not say what it left out")
	}
	if page, err := os.ReadFile(filepath.Join(dir, "t.html")); err != nil || !strings.Contains(string(page), "not read</td><td>"+want) {
		t.Errorf("the report's summary does not say what it left out (%v)", err)
	}
	r = run(t, dir, "latency", "-f", "json", good)
	rep.Dropped = nil
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("intact: exit %d, %v: %s", r.code, err, r.stderr)
	}
	if rep.Dropped == nil || len(rep.Dropped) != 0 || strings.Contains(r.stderr, "could not be read") {
		t.Errorf("intact file: dropped %v, stderr %q", rep.Dropped, r.stderr)
	}
}
