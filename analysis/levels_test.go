package analysis

import (
	"reflect"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// TestFromDomainsRing adapts the domains of a 4-node ring (distances 20 to
// the neighbours, 30 across): two NUMA levels, the first with overlapping
// spans, so the names are disambiguated and a CPU's waiting tasks count
// in every span that holds it.
func TestFromDomainsRing(t *testing.T) {
	topo, err := model.ParseSpec("sockets=4,cores=2,numa=4,distance=10:20:30:20/20:10:20:30/30:20:10:20/20:30:20:10")
	if err != nil {
		t.Fatal(err)
	}
	d, err := model.BuildDomains(topo, "6.1")
	if err != nil {
		t.Fatal(err)
	}
	lv := FromDomains(d)
	names := lv.Levels()
	if len(names) != 3 || names[0] != "MC" || names[1] != "NUMA" || names[2] != "NUMA-2" {
		t.Fatalf("levels %v, want MC NUMA NUMA-2", names)
	}
	if got := lv.Span(0, 1); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 6, 7}) {
		t.Errorf("cpu0 NUMA span %v", got)
	}
	for _, c := range []struct{ a, b, want int }{{0, 1, 0}, {0, 2, 1}, {0, 6, 1}, {0, 4, 2}, {0, 99, -1}} {
		if got := lv.LevelOf(c.a, c.b); got != c.want {
			t.Errorf("LevelOf(%d,%d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	// CPU 4 (node 2) runs x while y waits on it; CPUs 0 (node 0, across the
	// ring) and 2 (node 1, next to it) are idle: CPU 2 accrues at NUMA,
	// CPU 0 at NUMA-2.
	ev := func(tm int64, cpu int, kind timeline.Kind, set func(e *timeline.Event)) timeline.Event {
		var e timeline.Event
		e.Time, e.Kind, e.Name = tm, kind, kind.String()
		e.SetInt(timeline.CPU, int64(cpu))
		set(&e)
		return e
	}
	sw := func(prev, next int64, state string) func(e *timeline.Event) {
		return func(e *timeline.Event) {
			e.SetInt(timeline.PrevPID, prev)
			e.SetStr(timeline.PrevState, state)
			e.SetInt(timeline.NextPID, next)
		}
	}
	evs := []timeline.Event{
		ev(1000, 0, timeline.SchedSwitch, sw(5, 0, "S")),
		ev(1000, 2, timeline.SchedSwitch, sw(6, 0, "S")),
		ev(1000, 4, timeline.SchedSwitch, sw(0, 10, "R")),
		ev(2000, 4, timeline.SchedWaking, func(e *timeline.Event) { e.SetInt(timeline.PID, 11); e.SetInt(timeline.TargetCPU, 4) }),
		ev(3000, 4, timeline.SchedSwitch, sw(10, 11, "S")),
	}
	r, err := Run(&timeline.SliceReader{Events: evs}, Options{Levels: lv})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 1000, 1000}; !reflect.DeepEqual(r.IdleWhileRunnable, want) || r.IdleWhileRunnableTotal != 2000 {
		t.Errorf("idle while runnable %v total %d, want %v", r.IdleWhileRunnable, r.IdleWhileRunnableTotal, want)
	}
}

func TestPerCPUThread(t *testing.T) {
	for comm, want := range map[string]bool{
		"ksoftirqd/3": true, "migration/12": true, "kworker/3:1": true, "kworker/3:1H-events": true, "kworker/0:1-mm_": true,
		"kworker/u17:2-e": false, "kvm-pit/11627": false, "rcu_preempt": false, "kworker/": false, "migration/x": false, "cpuhp/": false,
	} {
		if got := perCPUThread(comm); got != want {
			t.Errorf("perCPUThread(%q) = %v", comm, got)
		}
	}
}
