package analysis

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

var update = flag.Bool("update", false, "rewrite the expect sections of testdata/*.txtar")

// The hand-built timelines are txtar files:
//
//	-- trace --
//	# TIME CPU EVENT FIELD=VALUE ...   (TIME in ns; fields are timeline columns)
//	100 0 sched_switch prev_pid=10 prev_comm=a prev_state=S next_pid=0
//	-- levels --      (optional) a domain level per line: NAME SPAN SPAN ...
//	SMT 0-1 2-3
//	-- options --     (optional) "perf-latency 6.7", "cpus N" (as trace metadata says)
//	-- expect --
//	(the rendered report; go test -run Golden -update rewrites it)
//
// prev_state_raw is filled in from prev_state with the 6.x kernel values
// unless given.

type txtarFile struct {
	comment string
	names   []string
	data    map[string]string
}

func parseTxtar(s string) txtarFile {
	f := txtarFile{data: map[string]string{}}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur != "" {
			f.data[cur] = b.String()
		} else {
			f.comment = b.String()
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		t := strings.TrimRight(line, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			cur = strings.TrimSpace(t[3 : len(t)-3])
			f.names = append(f.names, cur)
			continue
		}
		b.WriteString(line)
	}
	flush()
	return f
}

func (f txtarFile) format() string {
	var b strings.Builder
	b.WriteString(f.comment)
	for _, n := range f.names {
		fmt.Fprintf(&b, "-- %s --\n", n)
		b.WriteString(f.data[n])
	}
	return b.String()
}

// parseTraceText reads the trace section into events.
func parseTraceText(s string) ([]timeline.Event, error) {
	var evs []timeline.Event
	for i, line := range strings.Split(s, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want TIME CPU EVENT [FIELD=VALUE...]", i+1)
		}
		var e timeline.Event
		t, err := strconv.ParseInt(f[0], 0, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: time: %v", i+1, err)
		}
		e.Time, e.Name, e.Kind = t, f[2], timeline.KindOf(f[2])
		if f[1] != "-" {
			cpu, err := strconv.ParseInt(f[1], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: cpu: %v", i+1, err)
			}
			e.SetInt(timeline.CPU, cpu)
		}
		for _, kv := range f[3:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not FIELD=VALUE", i+1, kv)
			}
			c, ok := timeline.LookupCol(k)
			if !ok {
				return nil, fmt.Errorf("line %d: no column %q", i+1, k)
			}
			if c.IsString() {
				e.SetStr(c, v)
				continue
			}
			n, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", i+1, k, err)
			}
			e.SetInt(c, n)
		}
		if e.IsSet(timeline.PrevState) && !e.IsSet(timeline.PrevStateRaw) {
			if raw, ok := prevStateRaw[e.Str(timeline.PrevState)]; ok {
				e.SetInt(timeline.PrevStateRaw, raw)
			}
		}
		evs = append(evs, e)
	}
	return evs, nil
}

func parseLevelsText(s string) (*SpanLevels, error) {
	sl := &SpanLevels{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		l := len(sl.Names)
		sl.Names = append(sl.Names, f[0])
		for _, sp := range f[1:] {
			cpus, err := model.ParseCPUList(sp)
			if err != nil {
				return nil, err
			}
			for _, c := range cpus {
				for len(sl.Spans) <= c {
					sl.Spans = append(sl.Spans, nil)
				}
				for len(sl.Spans[c]) <= l {
					sl.Spans[c] = append(sl.Spans[c], nil)
				}
				sl.Spans[c][l] = cpus
			}
		}
	}
	return sl, nil
}

// renderReport prints everything the analysis says, for golden files.
func renderReport(r *Report, slices []Slice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "trace %d..%d\n", r.StartNS, r.EndNS)
	fmt.Fprintln(&b, "slices (cpu tid comm start end run wait sch_delay wakeup state flags):")
	for _, s := range slices {
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{s.Idle, "idle"}, {s.Migrated, "migrated"}, {s.SpansLoss, "spans_loss"}, {s.SwitchMismatch, "switch_mismatch"}, {s.Truncated, "truncated"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		state := s.State
		if state == "" {
			state = "-"
		}
		fmt.Fprintf(&b, "  %d %d %s %d %d %d %d %d %d %s %s\n", s.CPU, s.TID, s.Comm, s.Start, s.End, s.Run, s.Wait, s.SchDelay, s.Wakeup, state, strings.Join(flags, ","))
	}
	d := r.WakeupLatency
	fmt.Fprintf(&b, "wakeup_latency count=%d mean=%.1f p50=%d p90=%d p95=%d p99=%d p999=%d max=%d spanning_loss=%d unfinished=%d\n",
		d.Count, d.MeanNS, d.P50NS, d.P90NS, d.P95NS, d.P99NS, d.P999NS, d.MaxNS, d.SpanningLoss, d.Unfinished)
	fmt.Fprintln(&b, "tasks (perf sched latency):")
	ts := append([]TaskStats(nil), r.Tasks...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].TID < ts[j].TID })
	for _, t := range ts {
		fmt.Fprintf(&b, "  tid=%d pid=%d comm=%s runtime=%d run=%d switches=%d delays=%d avg=%d max=%d max_start=%d max_at=%d spanning_loss=%d\n",
			t.TID, t.PID, t.Comm, t.RuntimeNS, t.RunNS, t.Switches, t.Delays, t.AvgDelayNS, t.MaxDelayNS, t.MaxDelayStartNS, t.MaxDelayAtNS, t.SpanningLoss)
	}
	for _, c := range r.CPUs {
		fmt.Fprintf(&b, "cpu %d busy=%d idle=%d\n", c.CPU, c.BusyNS, c.IdleNS)
	}
	lv := func(v []int64, total int64) string {
		var parts []string
		for i, n := range r.Levels {
			parts = append(parts, fmt.Sprintf("%s=%d", n, v[i]))
		}
		return strings.Join(append(parts, fmt.Sprintf("total=%d", total)), " ")
	}
	fmt.Fprintf(&b, "idle_while_runnable %s\n", lv(r.IdleWhileRunnable, r.IdleWhileRunnableTotal))
	fmt.Fprintf(&b, "migrations (%s) %s\n", r.MigrationsSource, lv(r.Migrations, r.MigrationsTotal))
	fmt.Fprintf(&b, "run_migrations %s\n", lv(r.RunMigrations, r.RunMigrationsTotal))
	fmt.Fprintf(&b, "involuntary=%d lost_events=%d lost_rows=%d task_delays_spanning_loss=%d slices=%d\n",
		r.InvoluntarySwitches, r.LostEvents, r.LostRows, r.TaskDelaysSpanningLoss, r.Slices)
	return b.String()
}

func runTxtar(f txtarFile) (string, error) {
	evs, err := parseTraceText(f.data["trace"])
	if err != nil {
		return "", err
	}
	var opts Options
	if s, ok := f.data["levels"]; ok {
		lv, err := parseLevelsText(s)
		if err != nil {
			return "", err
		}
		opts.Levels = lv
	}
	for _, line := range strings.Split(f.data["options"], "\n") {
		var n int
		switch line = strings.TrimSpace(line); {
		case line == "":
		case line == "perf-latency 6.7":
			opts.TaskDelays = PerfLatency67
		case strings.HasPrefix(line, "cpus "):
			if _, err := fmt.Sscanf(line, "cpus %d", &n); err != nil {
				return "", fmt.Errorf("option %q: %v", line, err)
			}
			opts.NumCPUs = n
		default:
			return "", fmt.Errorf("unknown option %q", line)
		}
	}
	sl := &collectSlices{}
	opts.Slices = sl
	r, err := Run(&timeline.SliceReader{Events: evs}, opts)
	if err != nil {
		return "", err
	}
	if int64(len(sl.s)) != r.Slices {
		return "", fmt.Errorf("report counts %d slices, sink got %d", r.Slices, len(sl.s))
	}
	return renderReport(r, sl.s), nil
}

func TestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no testdata/*.txtar")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f := parseTxtar(string(b))
			got, err := runTxtar(f)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if _, ok := f.data["expect"]; !ok {
					f.names = append(f.names, "expect")
				}
				f.data["expect"] = got
				if err := os.WriteFile(path, []byte(f.format()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := f.data["expect"]; got != want {
				t.Errorf("%s: report differs (go test -run Golden -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}
