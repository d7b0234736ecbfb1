package whatif

import "testing"

// v6.7's cluster-first wakeup (8881e1639f1f with 22165f61d0c4), by hand on
// one socket of eight cores in two clusters, {0-3} and {4-7}, the LLC the
// whole socket; domains built by 6.12's rules (SD_CLUSTER). Busy CPUs run
// the task "busy".
//
//   - prev 5 idle in the other cluster, target 1 busy, 2 idle: before,
//     the idle prev sharing the LLC is taken at once (5); with the rule it
//     waits, and the scan of target's cluster from 2 finds 2.
//   - the same with the SIS_UTIL budget at two CPUs (nr_idle_scan 2): the
//     cluster scan passes 2 and 3 busy and stops; the prev kept aside is
//     taken (5), not target (1) as without 22165f61d0c4's fallback.
//   - prev 0 busy, the recently used CPU 6 idle in the other cluster, 3
//     idle: before, 6 at once; with the rule the cluster scan from 2 finds
//     3.
//   - prev 2 idle in target's cluster: taken at once under both (2).
//   - target 3 busy, the last of its cluster, 1 and 4 idle, prev 0 busy:
//     the one LLC scan from 4 takes 4; the cluster scan wraps from 3 + 1
//     within {0-3} (0 busy) to 1.
//   - nothing idle in target's cluster, 6 idle: the cluster scan finds
//     nothing, the LLC scan from 2 skips the cluster and finds 6; before,
//     the one LLC scan from 2 finds 6 as well.
func TestClusterWakeupByHand(t *testing.T) {
	const spec = "sockets=1,cores=8,clusters=2"
	for _, tc := range []struct {
		name                 string
		busy                 []int
		prev, recent, target int
		nrIdleScan           int // 0: the default budget
		before, after        int
	}{
		{"an idle prev in another cluster waits for the cluster scan", []int{0, 1}, 5, -1, 1, 0, 5, 2},
		{"a failed cluster scan falls back to prev", []int{0, 1, 2, 3}, 5, -1, 1, 2, 5, 5},
		{"the recently used CPU in another cluster waits too", []int{0, 1, 2}, 0, 6, 1, 0, 6, 3},
		{"an idle prev in target's cluster at once", []int{1}, 2, -1, 1, 0, 2, 2},
		{"the cluster scan wraps within the cluster", []int{0, 2, 3}, 0, -1, 3, 0, 4, 1},
		{"the LLC scan after the cluster's", []int{0, 1, 2, 3, 4, 5}, 0, -1, 1, 0, 6, 6},
	} {
		for _, pc := range []struct {
			policy string
			want   int
		}{{"v6.6", tc.before}, {"v6.12~8881e1639f1f", tc.before}, {"v6.10", tc.after}, {"v6.12", tc.after}, {"latest", tc.after}} {
			t.Run(tc.name+"/"+pc.policy, func(t *testing.T) {
				b := newBuilder(t, spec)
				b.w.Kernel = "6.12.0"
				wakee := b.task("wakee", 120, int32(tc.prev), false, CauseStart, ms)
				busy := b.task("busy", 120, 0, false, CauseStart, ms)
				s, _ := newSim(t, b.done(t), policyConfig(t, pc.policy))
				s.now = t0
				if !s.cluster || !s.cpusShareResources(0, 3) || s.cpusShareResources(3, 4) {
					t.Fatalf("clusters not built: SD_CLUSTER %v, share IDs %d %d %d", s.cluster, s.dom.CPUs[0].ShareID, s.dom.CPUs[3].ShareID, s.dom.CPUs[4].ShareID)
				}
				p := s.tasks[wakee]
				p.recentUsedCPU = int32(tc.recent)
				for _, c := range tc.busy {
					s.cpus[c].curr = s.tasks[busy]
				}
				if tc.nrIdleScan > 0 {
					s.llc[tc.target].nrIdleScan = tc.nrIdleScan
				}
				if got := s.selectIdleSibling(p, tc.prev, tc.target, nil, tc.target); got != pc.want {
					t.Errorf("select_idle_sibling(prev %d, recent %d, target %d) = %d, want %d", tc.prev, tc.recent, tc.target, got, pc.want)
				}
			})
		}
	}
}
