package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
)

// The committed schbench recordings with the timer events, counted two
// independent ways. The passes, chances and pulls against a throw-away
// reader of perf script's text of the same files (session 65, perf 6.1's
// `perf script -F pid,cpu,time,event,trace`, the same definitions); the
// tasks CPU_IDLE passes moved against the kernel's own /proc/schedstat
// (lb_gained for CPU_IDLE, saved before and after each recording): the
// trace can only show fewer (passes just outside perf's window count in
// schedstat's), by at most one on these.
func TestMeasure(t *testing.T) {
	for _, c := range []struct {
		file string
		// perf script's reader: idle ticks, those raising SCHED, own
		// and kicked passes.
		idleTicks, raised int
		own, kick         pass
		schedstat         int
		// The idle periods of 4-16 ms and those with an idle tick:
		// another reader of perf script's text (session 66, `perf
		// script -F cpu,time,event,trace --ns`, the same definitions).
		midPeriods, midTicked int
		// The idle ticks and the idle time in tick periods (rounded)
		// with fewer than half the CPUs busy, and with half or more: a
		// third reader of perf script's text (session 67, the same
		// command and definitions).
		fewTicks    int64
		fewPeriods  int
		manyTicks   int64
		manyPeriods int
	}{
		{"guest-D-1s8c1t/schbench/schbench-1.perf.data.gz", 266, 141, pass{133, 77, 65}, pass{37, 11, 5}, 70, 262, 91, 98, 172, 168, 672},
		{"guest-B-1s4c2t/schbench/schbench-3.perf.data.gz", 219, 162, pass{176, 91, 66}, pass{27, 11, 5}, 74, 271, 74, 63, 120, 156, 735},
		{"guest-A-2s2c2t-2numa/schbench/schbench-3.perf.data.gz", 229, 176, pass{194, 107, 28}, pass{67, 43, 4}, 31, 260, 91, 72, 135, 157, 711},
	} {
		path := filepath.Join("..", "..", "fixtures", "kernels", "idle-tick", c.file)
		got, err := measure(path, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.idleTicks != c.idleTicks || got.raised != c.raised || got.own != c.own || got.kick != c.kick {
			t.Errorf("%s: idle ticks %d raising %d, own %+v, kicked %+v; perf script's reader %d, %d, %+v, %+v",
				c.file, got.idleTicks, got.raised, got.own, got.kick, c.idleTicks, c.raised, c.own, c.kick)
		}
		if got.midPeriods != c.midPeriods || got.midTicked != c.midTicked {
			t.Errorf("%s: idle periods of 4-16 ms %d, with an idle tick %d; perf script's reader %d, %d", c.file, got.midPeriods, got.midTicked, c.midPeriods, c.midTicked)
		}
		b := got.byBusy
		if periods := func(ns int64) int { return int(math.Round(float64(ns) / scriptutil.TickNS)) }; b.FewTicks != c.fewTicks || periods(b.FewNS) != c.fewPeriods || b.ManyTicks != c.manyTicks || periods(b.ManyNS) != c.manyPeriods {
			t.Errorf("%s: idle ticks %d in %.1f tick periods with few CPUs busy, %d in %.1f with many; perf script's reader %d in %d, %d in %d",
				c.file, b.FewTicks, float64(b.FewNS)/scriptutil.TickNS, b.ManyTicks, float64(b.ManyNS)/scriptutil.TickNS, c.fewTicks, c.fewPeriods, c.manyTicks, c.manyPeriods)
		}
		if got.schedstat != c.schedstat {
			t.Errorf("%s: schedstat's lb_gained idle %d, want %d", c.file, got.schedstat, c.schedstat)
		}
		if d := got.schedstat - got.gained; d < 0 || d > 1 {
			t.Errorf("%s: %d tasks moved by CPU_IDLE passes in the trace, schedstat %d", c.file, got.gained, got.schedstat)
		}
	}
}

// A trace without the timer and softirq events is refused with what to
// record; a bad -tickfn too.
func TestMeasureWithoutEvents(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "perf", "hackbench.data")
	_, err := measure(path, "0xffffffff81000000")
	if err == nil || !strings.Contains(err.Error(), "irq:softirq_entry") {
		t.Fatalf("err %v, want one naming the events to record", err)
	}
	if _, err := measure(path, "zz"); err == nil || !strings.Contains(err.Error(), "hex") {
		t.Fatalf("bad -tickfn: err %v", err)
	}
}
