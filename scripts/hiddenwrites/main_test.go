package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// The committed recording with system-call tracepoints: the counts checked
// against perf script's text of the same file (2026-12-01, perf 6.1: 843
// sys_enter_write lines of hackbench tasks, 344 of them with one
// sched_waking of a hackbench task before their sys_exit_write).
func TestMeasureAgainstPerfScript(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "perf", "hackbench_syscalls.data")
	c, err := measure(path, "hackbench")
	if err != nil {
		t.Fatal(err)
	}
	if c.writes != 843 || c.woke != 344 {
		t.Errorf("writes %d, woke %d; perf script shows 843 and 344", c.writes, c.woke)
	}
	// A reader of perf script's text (session 23, throw-away) attributing
	// the writes the same way found 455 hidden, none of them while their
	// reader was switched out asleep.
	if c.hidden != 455 || c.hiddenAsleep != 0 {
		t.Errorf("hidden %d (asleep %d); the perf script reader found 455 (0)", c.hidden, c.hiddenAsleep)
	}
	if c.attributed != c.woke+c.hidden || c.writes < c.attributed+c.ambiguous {
		t.Errorf("counts do not add up: %+v", c)
	}
	// Every write that woke its reader was attributed to it; the hidden
	// ones are the majority hackbench leaves in its receivers' queues.
	if c.hidden <= c.woke {
		t.Errorf("hidden %d not above woke %d", c.hidden, c.woke)
	}
}

// A sched-only trace is refused with what to record, not counted as zero.
func TestMeasureWithoutSyscalls(t *testing.T) {
	path := filepath.Join("..", "..", "fixtures", "perf", "hackbench.data")
	_, err := measure(path, "hackbench")
	if err == nil || !strings.Contains(err.Error(), "syscalls:sys_enter_write") {
		t.Fatalf("err %v, want one naming the events to record", err)
	}
}
