package analysis

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// TestOracles reads every real perf.data with replay's own reader and
// checks each sched_switch's run slice against perf sched timehist row by
// row and the per-command delays against perf sched latency line by line.
func TestOracles(t *testing.T) {
	for _, c := range oracleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			r, err := perfdata.Open(c.unpacked(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			checkOracle(t, c, r)
		})
	}
}

// TestKernelDomains analyses the kernels' traces with the domains model
// builds from the topology in each trace, and checks the level names
// against what those kernels printed (fixtures/kernels/README.md) and the
// domain metrics against simple bounds.
func TestKernelDomains(t *testing.T) {
	want := map[string]string{
		"guest-A-2s2c2t-2numa": "SMT MC NUMA",
		"guest-B-1s4c2t":       "SMT MC",
		"guest-D-1s8c1t":       "MC",
	}
	for _, c := range oracleCases(t) {
		guest, _, _ := strings.Cut(c.name, "/")
		levels, ok := want[guest]
		if !ok {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			r, err := perfdata.Open(c.unpacked(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			m := r.Meta()
			if m.Topology == nil {
				t.Fatal("trace has no topology")
			}
			d, err := model.BuildDomains(m.Topology, m.Source.OSRelease)
			if err != nil {
				t.Fatal(err)
			}
			lv := FromDomains(d)
			if got := strings.Join(lv.Levels(), " "); got != levels {
				t.Fatalf("levels %q, want %q", got, levels)
			}
			rep, err := Run(r, Options{Levels: lv})
			if err != nil {
				t.Fatal(err)
			}
			var idle, sum int64
			for _, c := range rep.CPUs {
				idle += c.IdleNS
			}
			for _, v := range rep.IdleWhileRunnable {
				sum += v
			}
			if sum != rep.IdleWhileRunnableTotal || sum > idle {
				t.Errorf("idle while runnable %v (total %d), idle %d", rep.IdleWhileRunnable, rep.IdleWhileRunnableTotal, idle)
			}
			if rep.MigrationsSource != "sched_migrate_task" || rep.MigrationsTotal == 0 {
				t.Errorf("migrations %v total %d from %s", rep.Migrations, rep.MigrationsTotal, rep.MigrationsSource)
			}
			t.Logf("%s: idle while runnable %v ns of %d idle; migrations %v of %d; switch-ins elsewhere %v of %d; involuntary %d; wakeup p99 %d ns",
				lv.Levels(), rep.IdleWhileRunnable, idle, rep.Migrations, rep.MigrationsTotal, rep.RunMigrations, rep.RunMigrationsTotal,
				rep.InvoluntarySwitches, rep.WakeupLatency.P99NS)
		})
	}
}

// TestTimelineFileSameReport checks that a timeline file written from a
// trace gives the same report as the trace itself: the analysis depends on
// the events only, not on their source.
func TestTimelineFileSameReport(t *testing.T) {
	trace := filepath.Join(repoRoot(), "fixtures", "kernels", "guest-A-2s2c2t-2numa", "schbench.perf.data")
	if _, err := os.Stat(trace); err != nil {
		t.Skip(err)
	}
	r, err := perfdata.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(r, Options{})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	r, err = perfdata.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.arrow")
	w, err := timeline.Create(path, timeline.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if err := w.Write(r.Event()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(r.Meta()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	tr, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	got, err := Run(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report from the timeline file differs from the trace's:\n got  %+v\n want %+v", got, want)
	}
}
