package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The committed idle-tick recordings, counted against a throw-away reader
// of perf script's text of the same files (session 64, perf 6.1's
// `perf script -F cpu,time,event,trace`, the same definitions): the
// eight-vCPU guest's hackbench and stress-ng mix and the two-vCPU guest's
// idle second.
func TestMeasureAgainstPerfScript(t *testing.T) {
	for _, c := range []struct {
		file string
		want counts
	}{
		{"guest-B-1s4c2t/hackbench.perf.data.gz", counts{periods: 242, ticks: 156, stopped: 32, idleNS: 1257603000, long: 62, first: 40, long2: 18, stopAfterFirst: 7, tickedOn: 11}},
		{"guest-B-1s4c2t/stressng-mix.perf.data.gz", counts{periods: 68, ticks: 124, stopped: 20, idleNS: 1651025000, long: 49, first: 40, long2: 19, stopAfterFirst: 5, tickedOn: 14}},
		{"guest-P-1s2c1t/idle.perf.data.gz", counts{periods: 16, ticks: 25, stopped: 8, idleNS: 2001999000, long: 11, first: 11, long2: 8, stopAfterFirst: 7, tickedOn: 1}},
	} {
		path := filepath.Join("..", "..", "fixtures", "kernels", "idle-tick", c.file)
		got, err := measure(path, "")
		if err != nil {
			t.Fatal(err)
		}
		got.path = ""
		// perf script prints microseconds: its idle total is the sum
		// of rounded period lengths.
		if d := got.idleNS - c.want.idleNS; d < -int64(got.periods)*1000 || d > int64(got.periods)*1000 {
			t.Errorf("%s: idle %d ns, perf script %d", c.file, got.idleNS, c.want.idleNS)
		}
		got.idleNS = c.want.idleNS
		if *got != c.want {
			t.Errorf("%s: %+v, perf script's reader %+v", c.file, *got, c.want)
		}
	}
}

// A trace without the timer events is refused with what to record.
func TestMeasureWithoutTimers(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "perf", "hackbench.data")
	_, err := measure(path, "0xffffffff81000000")
	if err == nil || !strings.Contains(err.Error(), "timer:hrtimer_expire_entry") {
		t.Fatalf("err %v, want one naming the events to record", err)
	}
	if _, err := measure(path, "zz"); err == nil || !strings.Contains(err.Error(), "hex") {
		t.Fatalf("bad -tickfn: err %v", err)
	}
}
