package analysis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// Migrations at a wakeup, by hand, on 2 CPUs. (a) CPU 0 wakes 20 and the
// next record there moves it from CPU 1: one. (b) A waking, a
// sched_stat_runtime, then the move: not one (try_to_wake_up writes
// nothing between its waking and its move; a waker that blocks right
// after and pulls its wakee in a newly idle balance writes its dequeue's
// update_curr first). (c) A waking of 21, then a move of
// 22 (a balance's): not one. (d) A waking of 23, a switch on that CPU,
// then a move of 23: not one (the wakeup's placement comes before any
// switch). (e) A move with no waking before it: not one. (f) A waking
// of 24 on CPU 1, then a move of 24 written on CPU 0: not one. (g) A
// waking of 25 and its move, then a second move of 25 on that CPU: one,
// not two. Every move is from CPU 1 to CPU 0 (the MC level).
func TestMigrationsAtWakeup(t *testing.T) {
	waking := func(tm int64, cpu int, pid int64) timeline.Event {
		return ev(tm, timeline.SchedWaking, cpu, func(e *timeline.Event) {
			e.SetInt(timeline.PID, pid)
			e.SetInt(timeline.TargetCPU, 1)
		})
	}
	move := func(tm int64, cpu int, pid int64) timeline.Event {
		return ev(tm, timeline.SchedMigrateTask, cpu, func(e *timeline.Event) {
			e.SetInt(timeline.PID, pid)
			e.SetInt(timeline.OrigCPU, 1)
			e.SetInt(timeline.DestCPU, 0)
		})
	}
	runtime := func(tm int64, cpu int, pid int64) timeline.Event {
		return ev(tm, timeline.SchedStatRuntime, cpu, func(e *timeline.Event) {
			e.SetInt(timeline.PID, pid)
			e.SetInt(timeline.Runtime, 100)
		})
	}
	evs := []timeline.Event{
		sw(100, 0, 0, "R", 10),
		sw(100, 1, 0, "R", 11),
		waking(1000, 0, 20), move(1010, 0, 20), // (a)
		waking(2000, 0, 20), runtime(2005, 0, 10), move(2010, 0, 20), // (b)
		waking(3000, 0, 21), move(3010, 0, 22), // (c)
		waking(4000, 0, 23), sw(4005, 0, 10, "R", 30), move(4010, 0, 23), // (d)
		move(5000, 0, 26),                      // (e)
		waking(6000, 1, 24), move(6010, 0, 24), // (f)
		waking(7000, 0, 25), move(7010, 0, 25), move(7020, 0, 25), // (g)
	}
	rep, err := Run(&timeline.SliceReader{Events: evs}, Options{Levels: twoCoreLevels(t)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.MigrationsTotal != 8 || rep.MigrationsAtWakeupTotal != 2 {
		t.Errorf("migrations %d, at a wakeup %d; want 8 and 2 (a, g)", rep.MigrationsTotal, rep.MigrationsAtWakeupTotal)
	}
	if len(rep.MigrationsAtWakeup) != 1 || rep.MigrationsAtWakeup[0] != 2 {
		t.Errorf("at a wakeup by level %v (%v), want [2] at MC", rep.MigrationsAtWakeup, rep.Levels)
	}
}

// On real traces, against `perf script -F cpu,event,trace` read by awk (a
// sched_migrate_task whose pid the CPU's previous record, a sched_waking,
// named): 6.1's hackbench on guest-N r6, 15 of its 86 migrations; guest-D's
// schbench, 57 of 167 (37 more if sched_stat records were let in between:
// newly idle pulls by a waker that blocked).
func TestMigrationsAtWakeupOnARealTrace(t *testing.T) {
	for _, c := range []struct {
		path          string
		all, atWakeup int64
	}{
		{"../fixtures/kernels/repeats/guest-N-2s1c1t-2numa/r6/hackbench.perf.data.gz", 86, 15},
		{"../fixtures/kernels/guest-D-1s8c1t/schbench.perf.data", 167, 57},
	} {
		rep := runPerfFixture(t, c.path)
		if rep.MigrationsTotal != c.all || rep.MigrationsAtWakeupTotal != c.atWakeup {
			t.Errorf("%s: migrations %d, at a wakeup %d; want perf's %d and %d", c.path, rep.MigrationsTotal, rep.MigrationsAtWakeupTotal, c.all, c.atWakeup)
		}
		// --by domain's CSV carries it beside the migrations.
		var csv strings.Builder
		if err := rep.WriteCSV(&csv, ByDomain); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(",%d,%d,", c.all, c.atWakeup); !strings.HasPrefix(csv.String(), "level,idle_while_runnable_ns,migrations,migrations_at_wakeup,run_migrations\n") || !strings.Contains(csv.String(), want) {
			t.Errorf("%s: --by domain CSV %q, want the column and %q", c.path, csv.String(), want)
		}
	}
}

// A trace without sched_migrate_task cannot show migrations at a wakeup:
// --by domain's table prints "-" and its CSV an empty cell, not a 0 that
// reads as "none happened"; with the event, the count (0 here) is printed.
func TestMigrationsAtWakeupUnknownWithoutTheEvent(t *testing.T) {
	base := []timeline.Event{
		sw(100, 0, 0, "R", 10),
		sw(100, 1, 0, "R", 11),
		sw(200, 1, 11, "S", 0),
		sw(300, 0, 10, "R", 11), // 11 ran on CPU 1, now on CPU 0: a switch-in migration
	}
	withMove := append(append([]timeline.Event(nil), base[:3]...),
		ev(250, timeline.SchedMigrateTask, 1, func(e *timeline.Event) {
			e.SetInt(timeline.PID, 11)
			e.SetInt(timeline.OrigCPU, 1)
			e.SetInt(timeline.DestCPU, 0)
		}), base[3])
	for _, c := range []struct {
		name          string
		evs           []timeline.Event
		table, csvRow string
	}{
		{"switch-ins only", base, "total  0.000  1  -  1", "total,0,1,,1"},
		{"sched_migrate_task", withMove, "total  0.000  1  0  1", "total,0,1,0,1"},
	} {
		rep, err := Run(&timeline.SliceReader{Events: c.evs}, Options{Levels: twoCoreLevels(t)})
		if err != nil {
			t.Fatal(err)
		}
		var tb, cb strings.Builder
		if err := rep.WriteTable(&tb, ByDomain); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteCSV(&cb, ByDomain); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(strings.Fields(lastLine(tb.String())), "  "); got != c.table {
			t.Errorf("%s: table's total row %q, want %q", c.name, got, c.table)
		}
		if got := lastLine(cb.String()); got != c.csvRow {
			t.Errorf("%s: CSV's total row %q, want %q", c.name, got, c.csvRow)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// twoCoreLevels are the domain levels of 6.1 on two cores (MC alone).
func twoCoreLevels(t *testing.T) Levels {
	t.Helper()
	topo, err := model.ParseSpec("sockets=1,cores=2,threads=1")
	if err != nil {
		t.Fatal(err)
	}
	d, err := model.BuildDomains(topo, "6.1")
	if err != nil {
		t.Fatal(err)
	}
	return FromDomains(d)
}

// runPerfFixture analyzes a perf.data fixture (gzipped or not) with perf
// 6.7's task delays.
func runPerfFixture(t *testing.T, path string) *Report {
	t.Helper()
	b, err := readMaybeGzip(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "t.perf.data")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := perfdata.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := Run(r, Options{TaskDelays: PerfLatency67})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
