package whatif

import (
	"slices"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The fork shadow by hand, two CPUs of one MC domain: A runs on CPU 0 from
// 1 ms. At 2 ms it forks 11, which the kernel put on CPU 1; CPU 1 is idle
// and CPU 0 is not (find_idlest_group: both have spare capacity, CPU 1
// one idle CPU more), so the model sends it there too. 11 runs on CPU 1
// from 2.1 ms; at 3 ms A forks 12, kept on CPU 0: neither CPU idle, both
// with spare capacity, the local group stays. 11 blocks at 4 ms; at 5 ms
// A forks 13, which the kernel (say) kept on CPU 0 where the model, CPU 1
// idle again, sends it away. A fork onto a CPU the machine has not is
// left out.
func TestForkShadowByHand(t *testing.T) {
	d := specDomains(t, "sockets=1,cores=2,threads=1", "6.1")
	pol, _ := LookupPolicy("v6.1")
	const ms = int64(1000000)
	fork := func(at int64, child, target int32) timeline.Event {
		var e timeline.Event
		e.Time, e.Kind = at, timeline.SchedWakeupNew
		e.SetInt(timeline.CPU, 0)
		e.SetInt(timeline.CommonPID, 10)
		e.SetInt(timeline.PID, int64(child))
		e.SetInt(timeline.TargetCPU, int64(target))
		e.SetInt(timeline.Prio, 120)
		return e
	}
	evs := []timeline.Event{
		nSwitch(ms, 0, 0, "R", 10),
		fork(2*ms, 11, 1),
		nSwitch(2*ms+100000, 1, 0, "R", 11),
		fork(3*ms, 12, 0),
		nSwitch(4*ms, 1, 11, "S", 0),
		fork(5*ms, 13, 0),
		fork(6*ms, 14, 5),
	}
	got, err := ForkShadow(&timeline.SliceReader{Events: evs}, d, pol, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ForkPlacement{
		{TimeNS: 2 * ms, Child: 11, CPU: 0, Kernel: 1, Model: 1},
		{TimeNS: 3 * ms, Child: 12, CPU: 0, Kernel: 0, Model: 0},
		{TimeNS: 5 * ms, Child: 13, CPU: 0, Kernel: 0, Model: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("placements %+v, want %+v", got, want)
	}
	if _, err := ForkShadow(&timeline.SliceReader{Events: evs}, nil, pol, nil); err == nil {
		t.Error("no domains: no error")
	}
}

// On a real recording: guest-P's committed hackbench forks 80 tasks, 6
// of them kept on the forking CPU (perf script's sched_wakeup_new
// records: target_cpu against the CPU writing them); the model's rules on
// the shadow's loads place 79 as the kernel did, 79 on its CPU.
func TestForkShadowOnFixture(t *testing.T) {
	ps := forkShadowOf(t, "../fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data")
	var local, same int
	for _, p := range ps {
		if p.Kernel == p.CPU {
			local++
		}
		if p.Model == p.Kernel {
			same++
		}
	}
	if len(ps) != 80 || local != 6 || same != 79 {
		t.Errorf("%d forks, %d kept local, %d placed as the kernel did; want 80, 6, 79", len(ps), local, same)
	}
}

// forkShadowOf runs ForkShadow over a recording under its kernel's policy.
func forkShadowOf(t *testing.T, path string) []ForkPlacement {
	t.Helper()
	r, d, pol := kernelTraceOf(t, path)
	ps, err := ForkShadow(r, d, pol, delayedOf(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
