package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/timeline"
)

// One trace, many renderings: `replay info --json` and `replay latency -f
// json` must give the same answers from each, to the precision the
// rendering keeps. Each input states what its format cannot carry; the
// comparison checks exactly that and nothing looser:
//
//   - counts (events by kind, CPUs, tasks, lost, wakeup-latency samples,
//     per-task switches and delays, migrations, involuntary switches) are
//     equal;
//   - a time printed in µs is off by less than 1 µs: the kernel and
//     trace-cmd round ns to the nearest µs (ns2usecs), perf script
//     truncates; so an absolute time (first_ns, start_ns, max_delay_at_ns)
//     and a difference of two times (a wakeup latency, a percentile, a
//     mean, duration_ns) differ by < 1000 ns, and a sum of n intervals
//     (run_ns, busy_ns) by < 1000·n ns;
//   - tracefs latency-format counts µs from the ring buffer's reset
//     (time_start), which the text does not give: absolute times are
//     compared relative to the trace's start;
//   - tasks[].pid (the tgid) is -1 unless the input carries it: trace.dat
//     has no tgid (the tracefs record-tgid text does), perf script prints
//     it only with the pid column (-F pid or multi-threaded sessions);
//   - perf script text without --show-task-events has no perf:comm,
//     perf:fork and perf:exit rows: they are missing from events_by_kind,
//     the tasks they alone name are not counted, and the time range is
//     that of the samples;
//   - the trace-cmd sched_switch plugin (report default) prints prev_state
//     without the "+" of R+ (bits 0-7 only): answers are still equal, since
//     R and R+ both mean the task stayed runnable (involuntary switch).
//
// The source block describes the file (format, compression, host) and is
// not compared, except the CPU count where the text carries it.
type equivInput struct {
	path     string // under fixtures/
	usec     bool   // times printed in µs
	relative bool   // latency-format: µs since an unknown time_start
	tgid     bool   // carries the tgid (tasks[].pid)
	sideband bool   // perf script text with --show-task-events
	nrCPUs   bool   // carries the CPU count
	// topology: the reference's machine, for a text that does not carry
	// it (perf script), so the per-level answers are compared too.
	topology string
}

var equivGroups = []struct {
	ref    equivInput
	inputs []equivInput
}{
	{
		ref: equivInput{path: "tracedat/recorded.v7zstd.dat", nrCPUs: true},
		inputs: []equivInput{
			{path: "tracedat/recorded.v6.dat.gz", nrCPUs: true},
			{path: "tracedat/recorded.v7none.dat.gz", nrCPUs: true},
			{path: "text/tracefs_trace_default.txt", usec: true, nrCPUs: true},
			{path: "text/tracefs_trace_noirqinfo.txt", usec: true, nrCPUs: true},
			{path: "text/tracefs_trace_record_tgid.txt", usec: true, tgid: true, nrCPUs: true},
			{path: "text/tracefs_trace_latency.txt", usec: true, relative: true, nrCPUs: true},
			{path: "text/tracecmd_report_default.txt", usec: true, nrCPUs: true},
			{path: "text/tracecmd_report_noplugins.txt", usec: true, nrCPUs: true},
			{path: "text/tracecmd_report_raw.txt", usec: true, nrCPUs: true},
			{path: "text/tracecmd_report_latency_noplugins.txt.gz", usec: true, nrCPUs: true},
			{path: "tracedat/recorded.report-R-t.txt.gz", nrCPUs: true},
		},
	},
	{
		ref: equivInput{path: "perf/perf_sched_pipe.data", tgid: true, sideband: true},
		inputs: []equivInput{
			// The pipe stream's header: two CPUs, one socket.
			{path: "perf/perf_sched_pipe.data.script.txt.gz", tgid: true, sideband: true, topology: "sockets=1,cores=2,threads=1"},
			{path: "text/perf_script_ns_fields.txt", tgid: true, topology: "sockets=1,cores=2,threads=1"},
			{path: "text/perf_script_default.txt", usec: true, topology: "sockets=1,cores=2,threads=1"},
		},
	},
}

func TestEquivalentInputsSameAnswers(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	for _, g := range equivGroups {
		ref := answersOf(t, dir, filepath.Join(root, "fixtures", g.ref.path), "")
		// Samples only (for texts without side-band rows): time range and
		// task count of the reference without perf:comm/fork/exit.
		samples := samplesOnly(t, filepath.Join(root, "fixtures", g.ref.path))
		for _, in := range g.inputs {
			t.Run(in.path, func(t *testing.T) {
				got := answersOf(t, dir, filepath.Join(root, "fixtures", in.path), in.topology)
				c := &comparer{t: t, in: in, ref: g.ref}
				c.info(ref.info, got.info, samples)
				c.latency(ref.latency, got.latency, ref.info, samples)
				if c.bad == 0 {
					t.Logf("info and latency agree with %s: %d values compared (%d longest delays tied to the µs)", g.ref.path, c.n, c.ties)
				}
			})
		}
	}
}

type answers struct {
	info, latency map[string]any
}

func answersOf(t *testing.T, dir, path, topology string) answers {
	t.Helper()
	var a answers
	latency := []string{"latency", "-f", "json", "-i", path}
	if topology != "" {
		latency = append(latency, "--topology", topology)
	}
	for _, x := range []struct {
		args []string
		out  *map[string]any
	}{
		{[]string{"info", "--json", "-i", path}, &a.info},
		{latency, &a.latency},
	} {
		r := run(t, dir, x.args...)
		if r.code != 0 {
			t.Fatalf("replay %s: exit %d: %s", strings.Join(x.args, " "), r.code, r.stderr)
		}
		if err := json.Unmarshal([]byte(r.stdout), x.out); err != nil {
			t.Fatalf("replay %s: %v\n%s", strings.Join(x.args, " "), err, r.stdout)
		}
	}
	return a
}

type sampleSummary struct {
	first, last int64
	tasks       int
}

// samplesOnly summarises a trace without its perf side-band rows, as
// `replay info` would a text that has none.
func samplesOnly(t *testing.T, path string) sampleSummary {
	r, err := ingest.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := timeline.Summarize(noSideband{r})
	if err != nil {
		t.Fatal(err)
	}
	return sampleSummary{first: m.Summary.FirstNS, last: m.Summary.LastNS, tasks: m.Summary.Tasks}
}

type noSideband struct{ timeline.EventReader }

func (r noSideband) Next() bool {
	for r.EventReader.Next() {
		if k := r.Event().Kind; k != timeline.PerfComm && k != timeline.PerfFork && k != timeline.PerfExit {
			return true
		}
	}
	return false
}

type comparer struct {
	t       *testing.T
	in, ref equivInput
	bad     int
	n       int // values compared
	ties    int // longest delays that tie to the µs
}

func (c *comparer) errorf(format string, a ...any) {
	c.t.Helper()
	if c.bad++; c.bad <= 20 {
		c.t.Errorf(format, a...)
	}
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

// near checks |got - want| < tol (exact when tol is 0).
func (c *comparer) near(path string, got, want any, tol float64) {
	c.t.Helper()
	c.n++
	g, ok1 := num(got)
	w, ok2 := num(want)
	if !ok1 || !ok2 {
		c.errorf("%s: got %v, want %v", path, got, want)
		return
	}
	if tol == 0 && g != w || tol > 0 && math.Abs(g-w) >= tol {
		c.errorf("%s: got %v, want %v (tolerance %v)", path, g, w, tol)
	}
}

// tick is the error bound of one printed time, and of a difference of two.
func (c *comparer) tick() float64 {
	if c.in.usec {
		return 1000
	}
	return 0
}

func (c *comparer) info(ref, got map[string]any, samples sampleSummary) {
	c.t.Helper()
	kinds := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m["events_by_kind"].(map[string]any) {
			if c.ref.sideband && !c.in.sideband && strings.HasPrefix(k, "perf:") {
				continue // no side-band lines in the text
			}
			out[k] = v
		}
		return out
	}
	rk, gk := kinds(ref), kinds(got)
	var total float64
	for k, v := range rk {
		c.near("info.events_by_kind."+k, gk[k], v, 0)
		total += v.(float64)
	}
	for k := range gk {
		if _, ok := rk[k]; !ok {
			c.errorf("info.events_by_kind.%s: %v, not in the reference", k, gk[k])
		}
	}
	c.near("info.events", got["events"], total, 0)
	if fmt.Sprint(got["cpus"]) != fmt.Sprint(ref["cpus"]) {
		c.errorf("info.cpus: got %v, want %v", got["cpus"], ref["cpus"])
	}
	if fmt.Sprint(got["lost"]) != fmt.Sprint(ref["lost"]) || got["dropped"] != nil {
		c.errorf("info.lost/dropped: got %v %v, want %v", got["lost"], got["dropped"], ref["lost"])
	}
	first, last, tasks := ref["first_ns"], ref["last_ns"], ref["tasks"]
	if c.ref.sideband && !c.in.sideband {
		first, last, tasks = float64(samples.first), float64(samples.last), float64(samples.tasks)
	}
	c.near("info.tasks", got["tasks"], tasks, 0)
	if !c.in.relative {
		c.near("info.first_ns", got["first_ns"], first, c.tick())
		c.near("info.last_ns", got["last_ns"], last, c.tick())
	}
	c.near("info.duration_ns", got["duration_ns"], last.(float64)-first.(float64), c.tick())
	if c.in.nrCPUs {
		rs, gs := ref["source"].(map[string]any), got["source"].(map[string]any)
		c.near("info.source.nr_cpus", gs["nr_cpus"], rs["nr_cpus"], 0)
	}
}

// absolute times in the latency answers.
var absTimes = map[string]bool{"start_ns": true, "end_ns": true, "max_delay_at_ns": true, "max_delay_start_ns": true}

func (c *comparer) latency(ref, got, refInfo map[string]any, samples sampleSummary) {
	c.t.Helper()
	refStart, gotStart := ref["start_ns"].(float64), got["start_ns"].(float64)
	bounds := map[string]float64{"start_ns": refStart, "end_ns": ref["end_ns"].(float64)}
	if c.ref.sideband && !c.in.sideband {
		// The analysis spans the rows: without side-band rows, the samples.
		bounds = map[string]float64{"start_ns": float64(samples.first), "end_ns": float64(samples.last)}
	}
	switches, _ := num(refInfo["events_by_kind"].(map[string]any)["sched_switch"])
	var walk func(path string, r, g any, slices float64)
	walk = func(path string, r, g any, slices float64) {
		switch rv := r.(type) {
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok {
				c.errorf("%s: got %v, want an object", path, g)
				return
			}
			if n, ok := num(rv["switches"]); ok {
				slices = n + 1 // a task's run slices
			}
			for k, x := range rv {
				p := path + "." + k
				_, isObj := x.(map[string]any)
				_, isList := x.([]any)
				switch {
				case isObj || isList:
					walk(p, x, gv[k], slices)
				case (k == "max_delay_at_ns" || k == "max_delay_start_ns") && c.in.usec:
					// Delays equal to the µs may tie in the text: which one
					// is "the" longest can differ; its length may not.
					off := 0.0 // the text's time base minus the reference's
					if c.in.relative {
						off = gotStart - refStart
					}
					at, start := gv["max_delay_at_ns"].(float64)-off, gv["max_delay_start_ns"].(float64)-off
					if math.Abs(at-rv["max_delay_at_ns"].(float64)) >= c.tick() {
						c.near(p+" (another delay as long)", at-start, rv["max_delay_ns"], c.tick())
						c.ties++
						break
					}
					c.near(p, gv[k].(float64)-off, x, c.tick())
				case k == "pid" && !c.in.tgid:
					c.near(p, gv[k], -1.0, 0)
				case k == "pid" && !c.ref.tgid:
					// the text knows the tgid the reference lacks
				case absTimes[k] && c.in.relative:
					c.near(p+" (from start)", gv[k].(float64)-gotStart, x.(float64)-refStart, c.tick())
				case absTimes[k]:
					want := x
					if b, ok := bounds[k]; ok && path == "latency" {
						want = b
					}
					c.near(p, gv[k], want, c.tick())
				case strings.HasSuffix(k, "_ns") && (k == "run_ns" || k == "busy_ns" || k == "idle_ns"):
					c.near(p, gv[k], x, c.tick()*slices)
				case strings.HasSuffix(path, "_ns") && k == "total":
					c.near(p, gv[k], x, c.tick()*(switches+2))
				case strings.HasSuffix(k, "_ns") && k != "runtime_ns":
					c.near(p, gv[k], x, c.tick())
				default:
					walk(p, x, gv[k], slices)
				}
			}
			for k := range gv {
				if _, ok := rv[k]; !ok {
					c.errorf("%s.%s: %v, not in the reference", path, k, gv[k])
				}
			}
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(rv) {
				c.errorf("%s: got %d items, want %d", path, len(gv), len(rv))
				return
			}
			// Rows are matched by key (tid, cpu), not position: a rounded
			// time can reorder rows that tie.
			rs, gs := keyed(rv), keyed(gv)
			for i := range rs {
				walk(fmt.Sprintf("%s[%s]", path, rs[i].key), rs[i].v, gs[i].v, switches+2)
			}
		default:
			if fmt.Sprint(r) != fmt.Sprint(g) {
				if _, isNum := num(r); isNum {
					c.near(path, g, r, 0)
				} else {
					c.errorf("%s: got %v, want %v", path, g, r)
				}
			}
		}
	}
	walk("latency", ref, got, switches+2)
}

type keyedItem struct {
	key string
	v   any
}

func keyed(items []any) []keyedItem {
	out := make([]keyedItem, len(items))
	for i, it := range items {
		k := fmt.Sprint(i)
		if m, ok := it.(map[string]any); ok {
			for _, name := range []string{"tid", "cpu", "comm", "level"} {
				if v, ok := m[name]; ok {
					k = fmt.Sprintf("%s=%v", name, v)
					break
				}
			}
		}
		out[i] = keyedItem{k, it}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}
