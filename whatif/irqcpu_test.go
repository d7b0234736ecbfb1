package whatif

import (
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// Activation.IRQCPUPlus1 through Extract, by hand. Task 20 runs on CPU 0
// throughout; task 10 runs on CPU 1 and blocks at 2, 4 and 6 ms. At 3 ms
// a softirq on CPU 0 (in task 20's context) wakes it, target_cpu 1 (the
// CPU it slept on): an arrival from CPU 0, IRQCPUPlus1 1. At 5 ms a hard
// IRQ on CPU 1 wakes it: its own CPU, 0. At 7 ms task 20 wakes it from
// its own context on CPU 0: a task's wakeup (CauseWake), 0. The
// arrivals' interrupt contexts (Activation.IRQ) are the wakings' flags:
// softirq, then hardirq; the task's wakeup has none. Both fields survive
// a workload file.
func TestIRQCPUByHand(t *testing.T) {
	r := &noiseReader{evs: []timeline.Event{
		nSwitch(1*ms, 0, 0, "R", 20),
		nSwitch(1*ms, 1, 0, "R", 10),
		nSwitch(2*ms, 1, 10, "S", 0),
		withFlags(nWaking(3*ms, 0, 20, 10, 1), softirq),
		nSwitch(3*ms+100000, 1, 0, "R", 10),
		nSwitch(4*ms, 1, 10, "S", 0),
		withFlags(nWaking(5*ms, 1, 0, 10, 1), hardirq),
		nSwitch(5*ms+100000, 1, 0, "R", 10),
		nSwitch(6*ms, 1, 10, "S", 0),
		nWaking(7*ms, 0, 20, 10, 1),
		nSwitch(7*ms+100000, 1, 0, "R", 10),
		nSwitch(8*ms, 1, 10, "S", 0),
	}}
	w := mustExtract(t, r)
	var acts []Activation
	for _, tk := range w.Tasks {
		if tk.TID == 10 {
			acts = tk.Activations
		}
	}
	want := []struct {
		cause Cause
		irq   int16
		ctx   IRQContext
	}{{CauseStart, 0, IRQNone}, {CauseArrival, 1, IRQSoft}, {CauseArrival, 0, IRQHard}, {CauseWake, 0, IRQNone}}
	check := func(how string, acts []Activation) {
		t.Helper()
		if len(acts) != len(want) {
			t.Fatalf("%s: task 10: %d activations, want %d", how, len(acts), len(want))
		}
		for i, wa := range want {
			if acts[i].Cause != wa.cause || acts[i].IRQCPUPlus1 != wa.irq || acts[i].IRQ != wa.ctx {
				t.Errorf("%s: activation %d: %v from CPU+1 %d in %q, want %v from %d in %q", how, i, acts[i].Cause, acts[i].IRQCPUPlus1, acts[i].IRQ, wa.cause, wa.irq, wa.ctx)
			}
		}
	}
	check("extracted", acts)
	back := reloadWorkload(t, w)
	for _, tk := range back.Tasks {
		if tk.TID == 10 {
			check("after a workload file", tk.Activations)
		}
	}
}

// Where an interrupt's wakeup runs decides its placement, by hand. Two
// CPUs in two LLCs (two nodes, as guest-N): hog B runs on CPU 1 for 10
// ms, CPU 0 idles; K slept on CPU 1 and an interrupt wakes it at 1 ms
// (0.1 ms of work). Where the interrupt ran on K's own CPU (irq_cpu=own,
// or the trace showed it there): select_task_rq_fair's CPU is K's prev,
// so no wake_affine, and select_idle_sibling looks for an idle CPU only
// in CPU 1's LLC, which is CPU 1: K queues behind B on CPU 1. Where the
// trace showed it on CPU 0 (irq_cpu=trace, IRQCPUPlus1 1): wake_affine
// between CPU 0 and K's CPU 1 in the NUMA domain (SD_WAKE_AFFINE at
// distance 20): CPU 0 is idle but shares no cache with CPU 1, CPU 1 is
// not idle, so wake_affine_weight decides, CPU 0's load with K's
// (K's alone, a sleeper's) against CPU 1's without it (B's, a running
// hog's) × 108 %: CPU 0; it is idle, so select_idle_sibling keeps it,
// and K runs there at once. The sched_waking is written on the CPU the
// interrupt ran on, its target_cpu K's CPU 1 either way; with irq_cpu=own
// and irq_ipi (the default) K is placed as by its own timer but the
// waking is written where the trace had it, CPU 0 (irqRaisedCPU); without
// irq_ipi on CPU 1.
func TestIRQCPUPlacement(t *testing.T) {
	for _, c := range []struct {
		irqCPU, irqIPI     bool
		wantCPU, wakingCPU int64
	}{{false, true, 1, 0}, {false, false, 1, 1}, {true, true, 0, 0}, {true, false, 0, 0}} {
		b := newBuilder(t, "sockets=2,cores=1,threads=1,numa=2")
		b.task("hogB", 120, 1, true, CauseStart, 10*ms)
		k := b.task("k", 120, 1, false, CauseArrival, ms/10)
		b.w.Tasks[k].Activations[0].ReleaseNS = t0 + ms
		b.w.Tasks[k].Activations[0].IRQCPUPlus1 = 1
		w := b.done(t)
		cfg := testConfig()
		cfg.IRQCPU, cfg.IRQIPI = c.irqCPU, c.irqIPI
		_, ch := replayChecked(t, w, cfg)
		if len(ch.wakings) != 1 {
			t.Fatalf("irq_cpu %v: %d wakings, want 1", c.irqCPU, len(ch.wakings))
		}
		wk := ch.wakings[0]
		if wk.Int(timeline.CPU) != c.wakingCPU || wk.Int(timeline.TargetCPU) != 1 {
			t.Errorf("irq_cpu %v irq_ipi %v: sched_waking on cpu %d, target_cpu %d; want cpu %d, target 1", c.irqCPU, c.irqIPI, wk.Int(timeline.CPU), wk.Int(timeline.TargetCPU), c.wakingCPU)
		}
		placed := int64(-1)
		for _, r := range ch.runs {
			if r.tid == int64(w.Tasks[k].TID) {
				placed = r.cpu
				break
			}
		}
		if placed != c.wantCPU {
			t.Errorf("irq_cpu %v: K ran on cpu %d, want %d", c.irqCPU, placed, c.wantCPU)
		}
	}
}
