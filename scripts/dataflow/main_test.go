package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

var syscallsTrace = filepath.Join("..", "..", "fixtures", "kernels", "syscalls", "guest-P-1s2c1t", "r1", "hb.perf.data.gz")

// extractSyscalls is the syscall recording's workload and topology, as
// run extracts them.
func extractSyscalls(t *testing.T) (*whatif.Workload, *model.Topology) {
	t.Helper()
	tr, err := extract(syscallsTrace)
	if err != nil {
		t.Fatal(err)
	}
	return tr.wl, tr.topo
}

// The committed hackbench recording with system-call tracepoints, against
// perf script's text of the same file (perf 6.1, read with awk,
// 2026-12-01): 12,000 sys_enter_write lines of 100 bytes (0x64) by
// hackbench tasks, 600 on each of descriptors 9–28 (0x09–0x1c), from 40
// senders (tids 349–368 and 389–408); 300 sys_enter_read of 100 bytes by
// each of 40 receivers (tids 329–348 and 369–388, all on descriptor 8);
// 1,663 sched_waking lines of a receiver by a sender; and every one of
// those wakings inside a write on descriptor 9+j names the j-th receiver
// of the sender's group (tids 329+j for senders 349–368, 369+j for 389–408).
func TestTransformAgainstPerfScript(t *testing.T) {
	fl, err := readFlow(syscallsTrace, 100)
	if err != nil {
		t.Fatal(err)
	}
	readerOf, err := attribute(fl)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range fl.writes {
		base := int32(329)
		if m.tid >= 389 {
			base = 369
		}
		if want := base + int32(m.fd-9); readerOf[i] != want {
			t.Fatalf("message %d (writer %d, fd %d) to reader %d; the descriptor layout says %d", i, m.tid, m.fd, readerOf[i], want)
		}
	}
	wl, topo := extractSyscalls(t)
	demand := func(tid int32) int64 {
		for _, tk := range wl.Tasks {
			if tk.TID == tid {
				return tk.DemandNS()
			}
		}
		return -1
	}
	before := map[int32]int64{}
	for tid := range fl.reads {
		before[tid] = demand(tid)
	}
	st, err := transform(wl, fl, topo, false)
	if err != nil {
		t.Fatal(err)
	}
	want := stats{messages: 12000, writers: 40, readers: 40, removed: 1663, readActs: 12000}
	if *st != want {
		t.Errorf("got %+v, perf script shows %+v", *st, want)
	}
	for tid, d := range before {
		if got := demand(tid); got != d {
			t.Errorf("reader %d's demand %d ns after the rewrite, %d before", tid, got, d)
		}
	}
	// Every message is a causal wakeup of its reader (transform's
	// Validate has checked that each read activation has exactly one).
	readers, writers := map[int32]bool{}, map[int32]bool{}
	for tid := range fl.reads {
		readers[tid] = true
	}
	for _, m := range fl.writes {
		writers[m.tid] = true
	}
	var causal int
	for _, e := range wl.Edges {
		if e.Causal && e.Kind == whatif.EdgeWake && readers[wl.Tasks[e.Wakee].TID] && writers[wl.Tasks[e.Waker].TID] {
			causal++
		}
	}
	if causal != st.messages {
		t.Errorf("%d causal wakeups of a reader by a writer, want one per message (%d)", causal, st.messages)
	}
}

// With -syscall-exit a wakeup cannot preempt its waker before the write
// call it came in returns. perf script --ns of the same file: sender 366
// wakes receiver 337 at 10.078560422 (sched_waking, inside its write on
// descriptor 0x11, receiver 8 of its group), returns from that write at
// 10.078576241 (sys_exit_write), running on CPU 0 throughout: 15,819 ns.
func TestSyscallExitStretch(t *testing.T) {
	for _, tc := range []struct {
		syscallExit bool
		want        int64
	}{{false, 0}, {true, 15819}} {
		fl, err := readFlow(syscallsTrace, 100)
		if err != nil {
			t.Fatal(err)
		}
		wl, topo := extractSyscalls(t)
		if _, err := transform(wl, fl, topo, tc.syscallExit); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range wl.Edges {
			if e.TimeNS == 10078560422 && wl.Tasks[e.Waker].TID == 366 && wl.Tasks[e.Wakee].TID == 337 {
				found = true
				if e.NoPreemptNS != tc.want {
					t.Errorf("syscall-exit %v: the stretch after 366's wakeup of 337 is %d ns, want %d", tc.syscallExit, e.NoPreemptNS, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("syscall-exit %v: no edge for 366's wakeup of 337 at 10.078560422", tc.syscallExit)
		}
	}
}

// A sched-only trace is refused with what to record.
func TestRefusesSchedOnly(t *testing.T) {
	_, err := readFlow(filepath.Join("..", "..", "fixtures", "perf", "hackbench.data"), 100)
	if err == nil || !strings.Contains(err.Error(), "syscalls:sys_enter_write") {
		t.Fatalf("err %v, want one naming the events to record", err)
	}
}

// The readers' activation cost on the syscall recording, against a reader
// of `perf script` text of the same file (2026-12-02: per reader, the run
// time from each switch-in to its switch-out asleep, summed over
// preemptions, and the sys_exit_read events inside; least squares over
// the activations that read anything): 1,663 activations, 1,209 of one
// message (median run time 0.121 ms), 0.1125 ms + 0.0219 ms per message.
// fitCost counts a read by its sys_enter_read and takes the extracted
// demand, so the line may differ in the last digit, the counts not.
func TestFitCostAgainstPerfScript(t *testing.T) {
	tr, err := extract(syscallsTrace)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := readFlow(syscallsTrace, 100)
	if err != nil {
		t.Fatal(err)
	}
	c := fitCost(tr.wl, fl)
	if c.acts != 1663 || c.oneMsg != 1209 {
		t.Errorf("%d activations, %d of one message; want 1663, 1209", c.acts, c.oneMsg)
	}
	near := func(got, want, tol float64) bool { return got > want-tol && got < want+tol }
	if !near(c.a, 112500, 1000) || !near(c.b, 21900, 500) || !near(c.oneMsgMedian, 121000, 1000) {
		t.Errorf("demand %.0f ns + %.0f ns per message, one-message median %.0f ns; want about 112500 + 21900, 121000", c.a, c.b, c.oneMsgMedian)
	}
}
