package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/schedreplay/replay/internal/arrowtest"
	"github.com/schedreplay/replay/timeline"
)

func goldenReport(t *testing.T, name string, sink SliceSink) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	f := parseTxtar(string(b))
	evs, err := parseTraceText(f.data["trace"])
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Slices: sink}
	if s, ok := f.data["levels"]; ok {
		if opts.Levels, err = parseLevelsText(s); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Run(&timeline.SliceReader{Events: evs}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestJSONKeys pins the JSON layout the issue specifies.
func TestJSONKeys(t *testing.T) {
	r := goldenReport(t, "migration.txtar", nil)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf, ByTask); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"wakeup_latency", "tasks", "cpus", "idle_while_runnable_ns", "migrations", "involuntary_switches"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
	keysOf := func(raw json.RawMessage) []string {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.Token()
		var keys []string
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		return keys
	}
	check := func(what string, raw json.RawMessage, want []string) {
		t.Helper()
		got := keysOf(raw)
		if !reflect.DeepEqual(got[:min(len(got), len(want))], want) {
			t.Errorf("%s keys %v, want %v first", what, got, want)
		}
	}
	check("wakeup_latency", m["wakeup_latency"], []string{"count", "mean_ns", "p50_ns", "p90_ns", "p95_ns", "p99_ns", "p999_ns", "max_ns"})
	var tasks, cpus []json.RawMessage
	json.Unmarshal(m["tasks"], &tasks)
	json.Unmarshal(m["cpus"], &cpus)
	if len(tasks) == 0 || len(cpus) != 4 {
		t.Fatalf("%d tasks, %d cpus", len(tasks), len(cpus))
	}
	want := []string{"tid", "pid", "comm", "runtime_ns", "switches", "delays", "avg_delay_ns", "max_delay_ns", "max_delay_at_ns"}
	got := keysOf(tasks[0])
	for _, k := range want {
		if !strings.Contains(" "+strings.Join(got, " ")+" ", " "+k+" ") {
			t.Errorf("task keys %v lack %q", got, k)
		}
	}
	check("cpus", cpus[0], []string{"cpu", "busy_ns", "idle_ns"})
	check("idle_while_runnable_ns", m["idle_while_runnable_ns"], []string{"SMT", "MC", "total"})
	check("migrations", m["migrations"], []string{"SMT", "MC", "total"})
	var irr map[string]int64
	json.Unmarshal(m["idle_while_runnable_ns"], &irr)
	if irr["SMT"] != 700 || irr["MC"] != 1000 || irr["total"] != 1700 {
		t.Errorf("idle_while_runnable_ns %v", irr)
	}
}

func TestTableAndCSV(t *testing.T) {
	r := goldenReport(t, "migration.txtar", nil)
	for _, by := range []string{ByTask, ByComm, ByCPU, ByDomain} {
		var tb, cb bytes.Buffer
		if err := r.WriteTable(&tb, by); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(tb.String(), "Wakeup latency") || !strings.Contains(tb.String(), "Idle while runnable, ms: total 0.002 (SMT 0.001, MC 0.001)") {
			t.Errorf("by %s: table:\n%s", by, tb.String())
		}
		if err := r.WriteCSV(&cb, by); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&cb).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{ByTask: 1 + 6, ByComm: 1 + 6, ByCPU: 1 + 4, ByDomain: 1 + 3}[by]
		if len(rows) != want {
			t.Errorf("by %s: %d csv rows, want %d: %v", by, len(rows), want, rows)
		}
	}
}

// TestSliceFile writes the slices of a hand-built trace to an Arrow file
// and reads them back.
func TestSliceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "slices.arrow")
	sf, err := CreateSliceFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := &collectSlices{}
	r := goldenReport(t, "lost.txtar", teeSlices{sf, mem})
	if err := sf.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left %d files, want only slices.arrow", len(ents))
	}
	fr := arrowtest.OpenFile(t, path)
	if !fr.Schema().Equal(SliceSchema) {
		t.Errorf("schema %v", fr.Schema())
	}
	var n int
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		tid := rec.Column(1).(*array.Int32)
		start := rec.Column(4).(*array.Int64)
		delay := rec.Column(8).(*array.Int64)
		loss := rec.Column(13).(*array.Boolean)
		trunc := rec.Column(15).(*array.Boolean)
		for j := 0; j < int(rec.NumRows()); j++ {
			s := mem.s[n]
			if tid.Value(j) != s.TID || delay.Value(j) != s.SchDelay || loss.Value(j) != s.SpansLoss || trunc.Value(j) != s.Truncated ||
				start.IsNull(j) != (s.Start < 0) || (s.Start >= 0 && start.Value(j) != s.Start) {
				t.Errorf("row %d differs from %+v", n, s)
			}
			n++
		}
	}
	if int64(n) != r.Slices {
		t.Errorf("%d rows, want %d", n, r.Slices)
	}

	// Abort leaves nothing.
	sf, err = CreateSliceFile(filepath.Join(dir, "aborted.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	sf.Abort()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("abort left %d files", len(ents))
	}
}

type teeSlices []SliceSink

func (t teeSlices) WriteSlice(s *Slice) error {
	for _, x := range t {
		if err := x.WriteSlice(s); err != nil {
			return err
		}
	}
	return nil
}

// TestPerfReproducesOracles re-runs the installed perf on each trace and
// checks it prints the committed oracles (the guests' perf was the same
// 6.1 build as this machine's), so the oracles stay perf's own output.
func TestPerfReproducesOracles(t *testing.T) {
	if !havePerf() {
		t.Skip("perf not installed")
	}
	out, _ := exec.Command("perf", "--version").Output()
	if !strings.HasPrefix(string(out), "perf version 6.1.") {
		t.Skipf("oracles are perf 6.1's; installed: %s", out)
	}
	for _, c := range oracleCases(t) {
		trace := c.unpacked(t)
		for _, o := range []struct{ sub, file string }{{"latency", c.latency}, {"timehist", c.timehist}} {
			if o.file == "" {
				continue // a repeat recording: perf sched latency's output only
			}
			want, err := readMaybeGzip(o.file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := exec.Command("perf", "sched", o.sub, "-i", trace).Output()
			if err != nil {
				t.Errorf("%s: perf sched %s: %v", c.name, o.sub, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: perf sched %s output differs from %s", c.name, o.sub, o.file)
			}
		}
	}
}
