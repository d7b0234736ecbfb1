package whatif

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// streamWorkload writes w through a WorkloadWriter, giving its activations
// and edges in a shuffled order (the writer must sort them; edges of equal
// sort key keep their relative order, as the in-memory stable sort does).
func streamWorkload(t *testing.T, path string, w *Workload, batch int, seed int64) {
	t.Helper()
	if err := streamWorkloadErr(t, path, w, batch, seed); err != nil {
		t.Fatal(err)
	}
}

// streamWorkloadErr is streamWorkload returning what Finish says.
func streamWorkloadErr(t *testing.T, path string, w *Workload, batch int, seed int64) error {
	t.Helper()
	ww := NewWorkloadWriter(t.TempDir(), batch)
	type ta struct{ t, a int32 }
	var acts []ta
	for i := range w.Tasks {
		for j := range w.Tasks[i].Activations {
			acts = append(acts, ta{int32(i), int32(j)})
		}
	}
	r := rand.New(rand.NewSource(seed))
	r.Shuffle(len(acts), func(i, j int) { acts[i], acts[j] = acts[j], acts[i] })
	for _, x := range acts {
		if err := ww.AddActivation(x.t, x.a, w.Tasks[x.t].Activations[x.a]); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range w.Edges {
		if err := ww.AddEdge(e); err != nil {
			t.Fatal(err)
		}
	}
	hdr := *w
	hdr.Tasks = make([]Task, len(w.Tasks))
	for i, tk := range w.Tasks {
		tk.Activations = nil
		hdr.Tasks[i] = tk
	}
	hdr.Edges = nil
	return ww.Finish(path, &hdr)
}

// reloadWorkload writes w to a workload file and reads it back.
func reloadWorkload(t *testing.T, w *Workload) *Workload {
	t.Helper()
	p := filepath.Join(t.TempDir(), "w.arrow")
	if err := SaveWorkload(p, w); err != nil {
		t.Fatal(err)
	}
	back, err := LoadWorkload(p)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// tinyWorkload is a hand-made workload with every table.
func tinyWorkload() *Workload {
	w := &Workload{StartNS: 5, EndNS: 900, Kernel: "k", Source: "tiny",
		NewidleChances: 40, NewidlePulls: 9, IdleWakeNS: []int64{3, 7}, IdleWakeLocalNS: []int64{3}, IdleWakeRemoteNS: []int64{7}, IdleWakeForkNS: []int64{7}, PreemptWakeNS: []int64{11}, PreemptWakeLocalNS: []int64{2, 4, 8}, PreemptWakeRTNS: []int64{6, 9}, TickSwitchNS: []int64{5, 12}}
	w.Tasks = []Task{
		{TID: 1, PID: 1, Comm: "a", Prio: 120, Pinned: -1, StartRunning: true, Allowed: []int{0, 2}, Command: true, Activations: []Activation{
			{DemandNS: 100, Cause: CauseStart, End: EndSleep, EndState: "S", CPU: 0},
			{DemandNS: 50, Cause: CauseArrival, ReleaseNS: 300, SleepNS: 195, End: EndExit, EndState: "X", CPU: 1, Prio: 0, OwnPrio: true, TickSoftIRQ: true, IRQ: IRQSoft}}},
		{TID: 2, PID: 1, Comm: "kworker/1:0", Prio: 120, Pinned: 1, Forked: true, Activations: []Activation{
			{DemandNS: 10, Cause: CauseFork, ReleaseNS: 40, End: EndSleep, EndState: "D", CPU: -1},
			{DemandNS: 10, Cause: CauseWake, ReleaseNS: 320, SleepNS: 270, End: EndTraceEnd, CPU: -1}}},
		{TID: 3, PID: 3, Comm: "idle-only", Prio: 100},
	}
	w.Edges = []Edge{
		{Kind: EdgeFork, Causal: true, Waker: 0, WakerAct: 0, OffsetNS: 35, Wakee: 1, WakeeAct: 0, TimeNS: 40, WakerCPU: 0, Target: 1},
		{Kind: EdgeWake, Causal: true, Waker: 0, WakerAct: 1, OffsetNS: 20, Wakee: 1, WakeeAct: 1, TimeNS: 320, WakerCPU: 1, Target: 1, Sync: true},
		{Kind: EdgeWake, Waker: 0, WakerAct: 1, OffsetNS: 20, Wakee: 1, WakeeAct: 1, TimeNS: 320, WakerCPU: 1, Target: 1},
	}
	w.HostStalls = []HostStall{{Task: 0, Act: 0, OffsetNS: 10, LenNS: 20}, {Task: 0, Act: 0, OffsetNS: 40, LenNS: 60}, {Task: 1, Act: 1, OffsetNS: 0, LenNS: 5}}
	w.IRQCurrent = []IRQCurrent{{Task: 0, Act: 1, Curr: 1}}
	w.BalancePulls = []BalancePull{{CPU: 0, Src: 1, TimeNS: 250}}
	w.LongSwitchCharges = []LongSwitchCharge{{Task: 1, Act: 0, NS: 2500000}}
	w.Index()
	return w
}

// The streaming writer writes exactly SaveWorkload's bytes, whatever the
// batch (one batch, spills, multi-level merges) and the input order.
func TestWorkloadWriterMatchesSave(t *testing.T) {
	ws := []struct {
		name string
		w    *Workload
	}{{"tiny", tinyWorkload()}}
	if fs, _ := filepath.Glob("../fixtures/kernels/*/*.perf.data"); len(fs) > 0 {
		w, _ := extractFixture(t, fs[0])
		ws = append(ws, struct {
			name string
			w    *Workload
		}{"fixture", w})
	}
	// Untraced arrivals (Activation.Untraced) on this VM's 6.18.
	w, _ := extractFixture(t, "../fixtures/local-6.18/workloads/cyclictest-t2.perf.data")
	ws = append(ws, struct {
		name string
		w    *Workload
	}{"untraced", w})
	for _, c := range ws {
		dir := t.TempDir()
		want := filepath.Join(dir, "want.arrow")
		if err := SaveWorkload(want, c.w); err != nil {
			t.Fatal(err)
		}
		wb, _ := os.ReadFile(want)
		for _, batch := range []int{1, 3, 1000, 0} {
			got := filepath.Join(dir, "got.arrow")
			streamWorkload(t, got, c.w, batch, int64(batch))
			gb, _ := os.ReadFile(got)
			if !bytes.Equal(wb, gb) {
				t.Errorf("%s batch %d: the streamed file (%d bytes) differs from SaveWorkload's (%d bytes)", c.name, batch, len(gb), len(wb))
			}
		}
	}
}

// The writer validates what it is given as Workload.Validate does.
func TestWorkloadWriterValidates(t *testing.T) {
	cases := []struct {
		name string
		edit func(w *Workload)
		want string
	}{
		{"offset beyond demand", func(w *Workload) { w.Edges[0].OffsetNS = 1000 }, "outside the waker's demand"},
		{"missing causal edge", func(w *Workload) { w.Edges[1].Causal = false }, "0 causal edges, want 1"},
		{"wakee out of range", func(w *Workload) { w.Edges[2].WakeeAct = 9 }, "out of range"},
		{"waker out of range", func(w *Workload) { w.Edges[2].WakerAct = 9 }, "out of range"},
		{"late start", func(w *Workload) { w.Tasks[0].Activations[1].Cause = CauseStart }, "only valid for the first"},
		{"newidle pulls over chances", func(w *Workload) { w.NewidlePulls = 41 }, "newidle pulls 41 of 40 chances"},
		{"tick phase past HZ 100's period", func(w *Workload) { w.TickPhaseNS = 10000000 }, "tick phase 10000000 ns"},
		{"negative tick phase", func(w *Workload) { w.TickPhaseNS = -1 }, "tick phase -1 ns"},
		{"negative stall", func(w *Workload) { w.Stalls = &StallModel{TickNS: 4 * ms, StallsNS: []int64{-1, 600000}} }, "workload stall model: a stall of -1 ns"},
		{"interrupt wakeup stall past a week", func(w *Workload) {
			w.Stalls = &StallModel{TickNS: 4 * ms, StallsNS: []int64{600000}, IRQWakeStall: 0.5, IRQWakeStallsNS: []int64{MaxSpanNS + 1}}
		}, "a stall of 604800000000001 ns"},
		{"interrupt wakeup stall share over one", func(w *Workload) {
			w.Stalls = &StallModel{TickNS: 4 * ms, StallsNS: []int64{600000}, IRQWakeStall: 1.5}
		}, "interrupt wakeup stall share 1.5"},
		{"interrupt context of a task's wakeup", func(w *Workload) { w.Tasks[1].Activations[1].IRQ = IRQHard }, "interrupt context hardirq"},
		{"interrupt context no bit", func(w *Workload) { w.Tasks[0].Activations[1].IRQ = 3 }, "interrupt context IRQContext(0x3)"},
		{"irq_current of a start", func(w *Workload) { w.IRQCurrent[0].Act = 0 }, "not an interrupt's arrival"},
		{"irq_current past the activations", func(w *Workload) { w.IRQCurrent[0].Act = 5 }, "irq_current 0: task 0 activation 5 out of range"},
		{"irq_current of the wakee itself", func(w *Workload) { w.IRQCurrent[0].Curr = 0 }, "or the wakee"},
		{"balance pull onto its source", func(w *Workload) { w.BalancePulls[0].Src = 0 }, "balance pull 0: CPU 0 from 0"},
		{"long charge of an exit", func(w *Workload) { w.LongSwitchCharges[0] = LongSwitchCharge{Task: 0, Act: 1, NS: 5} }, "long_switch_charge 0: task 0 activation 1 ends in exit, not a block"},
		{"long charge past the activations", func(w *Workload) { w.LongSwitchCharges[0].Act = 7 }, "long_switch_charge 0: task 1 activation 7 out of range"},
		{"long charge of no task", func(w *Workload) { w.LongSwitchCharges[0].Task = 3 }, "long_switch_charge 0: task 3 activation 0 out of range"},
		{"long charge of nothing", func(w *Workload) { w.LongSwitchCharges[0].NS = 0 }, "long_switch_charge 0: charge 0 ns"},
		{"long charge twice", func(w *Workload) { w.LongSwitchCharges = append(w.LongSwitchCharges, w.LongSwitchCharges[0]) }, "long_switch_charge 1: task 1 activation 0 listed twice"},
	}
	for _, c := range cases {
		w := tinyWorkload()
		c.edit(w)
		if err := w.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate: error %v, want %q", c.name, err, c.want)
		}
		ww := NewWorkloadWriter(t.TempDir(), 2)
		for i := range w.Tasks {
			for j, a := range w.Tasks[i].Activations {
				ww.AddActivation(int32(i), int32(j), a)
			}
		}
		for _, e := range w.Edges {
			ww.AddEdge(e)
		}
		hdr := &Workload{Tasks: make([]Task, len(w.Tasks)), NewidleChances: w.NewidleChances, NewidlePulls: w.NewidlePulls, TickPhaseNS: w.TickPhaseNS,
			IRQCurrent: w.IRQCurrent, BalancePulls: w.BalancePulls, LongSwitchCharges: w.LongSwitchCharges, Stalls: w.Stalls}
		err := ww.Finish(filepath.Join(t.TempDir(), "x.arrow"), hdr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
