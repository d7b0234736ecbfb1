package analysis

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The oracles are perf 6.1's own outputs for the real traces: `perf sched
// timehist` (one row per sched_switch) and `perf sched latency` (per
// command). These helpers render the analysis the way perf prints it so
// the comparison is exact to perf's printed precision.

// timehistRow is one row of perf sched timehist, times in microseconds
// (perf truncates every value to whole microseconds).
type timehistRow struct {
	timeUS          int64
	cpu             int
	tid             int // 0 for <idle>
	name            string
	waitUS, delayUS int64
	runUS           int64
}

func (r timehistRow) String() string {
	return fmt.Sprintf("%d.%06d [%04d] %s[%d] wait %d.%03d delay %d.%03d run %d.%03d", r.timeUS/1e6, r.timeUS%1e6, r.cpu, r.name, r.tid,
		r.waitUS/1000, r.waitUS%1000, r.delayUS/1000, r.delayUS%1000, r.runUS/1000, r.runUS%1000)
}

var timehistLine = regexp.MustCompile(`^\s*(\d+)\.(\d{6}) \[(\d+)\]\s+(.*?)\s+(\d+)\.(\d{3})\s+(\d+)\.(\d{3})\s+(\d+)\.(\d{3})\s*$`)

func readMaybeGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		r = z
	}
	return io.ReadAll(r)
}

func parseTimehist(b []byte) ([]timehistRow, error) {
	var rows []timehistRow
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		m := timehistLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
		r := timehistRow{timeUS: n(1)*1e6 + n(2), cpu: int(n(3)), name: m[4],
			waitUS: n(5)*1000 + n(6), delayUS: n(7)*1000 + n(8), runUS: n(9)*1000 + n(10)}
		if r.name != "<idle>" {
			i := strings.LastIndexByte(r.name, '[')
			if i < 0 {
				return nil, fmt.Errorf("timehist row %q: no [tid]", sc.Text())
			}
			id := strings.TrimSuffix(r.name[i+1:], "]")
			if j := strings.IndexByte(id, '/'); j >= 0 {
				id = id[:j]
			}
			tid, err := strconv.Atoi(id)
			if err != nil {
				return nil, fmt.Errorf("timehist row %q: %v", sc.Text(), err)
			}
			r.tid, r.name = tid, r.name[:i]
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}

// sliceRow renders a slice as timehist would print it.
func sliceRow(s *Slice) timehistRow {
	return timehistRow{timeUS: s.End / 1000, cpu: int(s.CPU), tid: int(s.TID), name: s.Comm,
		waitUS: s.Wait / 1000, delayUS: s.SchDelay / 1000, runUS: s.Run / 1000}
}

// collectSlices keeps the slices in memory.
type collectSlices struct{ s []Slice }

func (c *collectSlices) WriteSlice(s *Slice) error { c.s = append(c.s, *s); return nil }

// compareTimehist checks the slices against perf's rows one by one and
// returns how many matched.
func compareTimehist(t *testing.T, name string, want []timehistRow, got []Slice, exited *int) int {
	t.Helper()
	var rows []timehistRow
	for i := range got {
		if !got[i].Truncated {
			rows = append(rows, sliceRow(&got[i]))
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%s: %d timehist rows, perf printed %d", name, len(rows), len(want))
	}
	matched, bad := 0, 0
	for i := 0; i < len(rows) && i < len(want); i++ {
		g, w := rows[i], want[i]
		if g.timeUS == w.timeUS && g.cpu == w.cpu && g.tid == w.tid && g.waitUS == w.waitUS && g.delayUS == w.delayUS && g.runUS == w.runUS {
			matched++
			continue
		}
		// perf keys a row by the sample's thread, which the kernel reports
		// as -1 for a task's last switch-out after it exited; perf then
		// books the row to a thread ":-1" with its own history. The
		// analysis keeps prev_pid, so only time, CPU and run time compare.
		if w.tid == -1 && g.timeUS == w.timeUS && g.cpu == w.cpu && g.runUS == w.runUS {
			*exited++
			continue
		}
		if bad++; bad <= 10 {
			t.Errorf("%s: timehist row %d:\n got  %v\n want %v", name, i, g, w)
		}
	}
	return matched
}

// perfTimestamp prints ns as perf's timestamp__scnprintf_usec does.
func perfTimestamp(ns int64) string {
	return fmt.Sprintf("%d.%06d", ns/1e9, ns%1e9/1e3)
}

// latencyLines renders merged task stats as perf sched latency's table
// rows and its TOTAL line.
func latencyLines(ts []TaskStats) []string {
	var out []string
	var allRuntime, allCount int64
	for _, t := range ts {
		if t.Switches == 0 {
			continue
		}
		allRuntime += t.RuntimeNS
		allCount += t.Switches
		var head string
		if t.Merged > 1 {
			head = fmt.Sprintf("  %s:(%d) ", t.Comm, t.Merged)
		} else {
			head = fmt.Sprintf("  %s:%d ", t.Comm, t.TID)
		}
		for len(head) < 24 {
			head += " "
		}
		out = append(out, head+fmt.Sprintf("|%11.3f ms |%9d | avg:%8.3f ms | max:%8.3f ms | max start: %12s s | max end: %12s s",
			float64(t.RuntimeNS)/1e6, t.Switches, float64(t.AvgDelayNS)/1e6, float64(t.MaxDelayNS)/1e6,
			perfTimestamp(t.MaxDelayStartNS), perfTimestamp(t.MaxDelayAtNS)))
	}
	out = append(out, fmt.Sprintf("  TOTAL:                |%11.3f ms |%9d |", float64(allRuntime)/1e6, allCount))
	return out
}

// parseLatency returns perf sched latency's task rows and TOTAL line.
func parseLatency(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "  ") && strings.Contains(l, "|") && !strings.HasPrefix(l, "  Task ") {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

func compareLatency(t *testing.T, name string, want []string, got []TaskStats) int {
	t.Helper()
	named := append([]TaskStats(nil), got...)
	for i := range named {
		named[i].Comm = named[i].perfName
	}
	lines := latencyLines(MergeByComm(named))
	if len(lines) != len(want) {
		t.Errorf("%s: %d latency lines, perf printed %d", name, len(lines), len(want))
	}
	matched, bad := 0, 0
	for i := 0; i < len(lines) && i < len(want); i++ {
		if lines[i] == want[i] {
			matched++
			continue
		}
		if bad++; bad <= 10 {
			t.Errorf("%s: latency line %d:\n got  %q\n want %q", name, i, lines[i], want[i])
		}
	}
	return matched
}

// oracleCase is a real trace with perf's outputs for it.
type oracleCase struct {
	name              string
	trace             string // perf.data
	timehist, latency string // oracle files
}

// repoRoot is the module root (the parent of this package).
func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}

// oracleCases finds every perf.data with oracles: the kernels' traces in
// ../shared/fixtures and the copies in the repository's fixtures (perf's
// outputs beside them in oracle/), and the traces recorded on the project
// machine in ../shared/fixtures/recorded (outputs of the perf installed
// here, in testdata/oracle/recorded; see its README).
func oracleCases(t *testing.T) []oracleCase {
	var cases []oracleCase
	seen := map[string]bool{}
	shared := filepath.Join(repoRoot(), "..", "shared", "fixtures")
	for _, root := range []string{filepath.Join(shared, "kernels"), filepath.Join(repoRoot(), "fixtures", "kernels")} {
		traces, _ := filepath.Glob(filepath.Join(root, "*", "*.perf.data"))
		gz, _ := filepath.Glob(filepath.Join(root, "*", "*.perf.data.gz"))
		for _, tr := range append(traces, gz...) {
			guest, base := filepath.Base(filepath.Dir(tr)), strings.TrimSuffix(filepath.Base(tr), ".gz")
			dirs := []string{filepath.Join("testdata", "oracle", guest), filepath.Join(filepath.Dir(tr), "oracle")}
			cases = addCase(cases, seen, guest+"/"+base, tr, dirs, false)
		}
	}
	// The repeat, holdout, system-call, Debian 6.12 and affinity
	// recordings (fixtures/kernels/{repeats,holdout,syscalls,v6.12,
	// affinity}/GUEST/rN/, 148 traces) and the six workloads under 6.1 and
	// 6.12 on one day (crosskernel/vK/GUEST/rN/, 144) carry perf sched
	// latency's output only (their guest ran no full timehist): -short
	// (the race run) leaves them out.
	var repeats []string
	if !testing.Short() {
		for _, set := range []string{"repeats", "holdout", "syscalls", "v6.12", "affinity", "crosskernel/*"} {
			fs, _ := filepath.Glob(filepath.Join(repoRoot(), "fixtures", "kernels", set, "*", "*", "*.perf.data.gz"))
			repeats = append(repeats, fs...)
		}
	}
	for _, tr := range repeats {
		rep := filepath.Dir(tr)
		set := filepath.Base(filepath.Dir(filepath.Dir(rep)))
		if filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(rep)))) == "crosskernel" {
			set = "crosskernel/" + set
		}
		name := set + "/" + filepath.Base(filepath.Dir(rep)) + "/" + filepath.Base(rep) + "/" + strings.TrimSuffix(filepath.Base(tr), ".gz")
		cases = addCase(cases, seen, name, tr, []string{filepath.Join(rep, "oracle")}, true)
	}
	recorded, _ := filepath.Glob(filepath.Join(shared, "recorded", "*.data"))
	for _, tr := range recorded {
		base := filepath.Base(tr)
		cases = addCase(cases, seen, "recorded/"+base, tr, []string{filepath.Join("testdata", "oracle", "recorded")}, false)
	}
	if len(cases) == 0 {
		t.Skip("no perf.data fixtures with oracles (../shared absent and none in fixtures/)")
	}
	return cases
}

// unpacked is the case's trace as a plain file: a gzipped fixture (the
// two-vCPU guests' stress-ng) is unpacked into the test's temporary
// directory, since perfdata and perf itself read files.
func (c oracleCase) unpacked(t *testing.T) string {
	if !strings.HasSuffix(c.trace, ".gz") {
		return c.trace
	}
	b, err := readMaybeGzip(c.trace)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(c.trace), ".gz"))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// addCase adds trace when dirs hold its oracles: both, or with
// latencyOnly perf sched latency's alone.
func addCase(cases []oracleCase, seen map[string]bool, name, trace string, dirs []string, latencyOnly bool) []oracleCase {
	if seen[name] {
		return cases
	}
	base := strings.TrimSuffix(filepath.Base(trace), ".gz")
	c := oracleCase{name: name, trace: trace}
	c.timehist = findOracle(dirs, base+".timehist.txt")
	c.latency = findOracle(dirs, base+".latency.txt")
	if c.latency == "" || c.timehist == "" && !latencyOnly {
		return cases
	}
	seen[name] = true
	return append(cases, c)
}

func findOracle(dirs []string, file string) string {
	for _, d := range dirs {
		for _, p := range []string{filepath.Join(d, file), filepath.Join(d, file+".gz")} {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	return ""
}

// checkOracle runs the analysis on events and compares with c's oracles.
func checkOracle(t *testing.T, c oracleCase, r timeline.EventReader) {
	t.Helper()
	sl := &collectSlices{}
	rep, err := Run(r, Options{Slices: sl})
	if err != nil {
		t.Fatal(err)
	}
	var want []timehistRow
	var n, exited int
	if c.timehist != "" {
		th, err := readMaybeGzip(c.timehist)
		if err != nil {
			t.Fatal(err)
		}
		if want, err = parseTimehist(th); err != nil {
			t.Fatal(err)
		}
		n = compareTimehist(t, c.name, want, sl.s, &exited)
	}
	lt, err := readMaybeGzip(c.latency)
	if err != nil {
		t.Fatal(err)
	}
	wl := parseLatency(lt)
	m := compareLatency(t, c.name, wl, rep.Tasks)
	t.Logf("%s: timehist %d/%d rows equal (+%d of exited tasks perf books to \":-1\": time, CPU, run time equal), latency %d/%d lines equal",
		c.name, n, len(want), exited, m, len(wl))
}
