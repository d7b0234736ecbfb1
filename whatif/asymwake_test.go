package whatif

import "testing"

// select_idle_capacity on a machine of unequal capacities (v5.10 on:
// Knobs.SelectIdleCapacity), by hand. CPUs 0-2 have capacity 446 (one
// cluster), 3-5 1024 (another); the DIE domain over all six is the
// asymmetric one (each cluster's MC is symmetric). A wakee fits a CPU when util × 1280 < capacity × 1024:
// util 100 fits both kinds, util 400 only the 1024 ones (400 × 1280 =
// 512,000 against 446 × 1024 = 456,704). Busy CPUs run the task "busy".
func TestSelectIdleCapacityByHand(t *testing.T) {
	const spec = "sockets=1,cores=6,clusters=2,llc=cluster,arch=arm64,capacity=0-2:446/3-5:1024"
	for _, tc := range []struct {
		name         string
		policy       string
		util         uint64
		busy         []int
		prev, target int
		want         int
	}{
		// target 1 is idle but too small: the scan from 1 passes the
		// idle LITTLE CPUs 1-2 and takes 3, the first that fits.
		{"a big wakee leaves an idle LITTLE target", "v6.1", 400, nil, 1, 1, 3},
		// The same wakee with no big CPU idle: the idle CPU of most
		// capacity, the first of the equal LITTLE ones met from target.
		{"no idle CPU fits: the most capacity", "v6.1", 400, []int{1, 3, 4, 5}, 1, 1, 2},
		// The scan starts at target itself: with the big CPUs busy, the
		// idle target is the first of the most capacity.
		{"the scan starts at target", "v6.1", 400, []int{3, 4, 5}, 1, 1, 1},
		// A small wakee: the first idle CPU from target, wrapping past
		// the last CPU (5, busy) to 0 before the idle 3.
		{"the scan wraps from target", "v6.1", 100, []int{1, 2, 4, 5}, 5, 5, 0},
		// Nothing idle: target.
		{"nothing idle", "v6.1", 100, []int{0, 1, 2, 3, 4, 5}, 2, 2, 2},
		// prev idle, sharing target's cache, and fitting: prev.
		{"an idle prev that fits", "v6.1", 100, []int{0}, 1, 0, 1},
		// Before v5.10 (rework, v5.5) wakeups are placed as on equal
		// CPUs: target is idle, so target, though the wakee does not fit.
		{"equal-CPU rules before v5.10", "rework", 400, nil, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, spec)
			wakee := b.task("wakee", 120, int32(tc.prev), false, CauseStart, ms)
			busy := b.task("busy", 120, 0, false, CauseStart, ms)
			s, _ := newSim(t, b.done(t), policyConfig(t, tc.policy))
			s.now = t0
			p := s.tasks[wakee]
			p.avg.utilAvg, p.avg.lastUpdate = tc.util, t0
			p.recentUsedCPU = -1
			for _, c := range tc.busy {
				s.cpus[c].curr = s.tasks[busy]
			}
			if got := s.selectIdleSibling(p, tc.prev, tc.target, nil, tc.target); got != tc.want {
				t.Errorf("select_idle_sibling(prev %d, target %d, util %d) = %d, want %d", tc.prev, tc.target, tc.util, got, tc.want)
			}
		})
	}
}
