package whatif

import "slices"

// WF_SYNC, inferred (Edge.Sync). The trace has no wake flags; the kernel
// sets WF_SYNC by the wake path (a pipe or socket write sets it, a futex
// wake does not), so the extractor reads it from what the flag asserts,
// the waker leaving its CPU at once, and from the placements only the flag
// makes. docs/whatif.md "WF_SYNC, inferred" has the rules and the
// recordings that set them.

// syncPullsMin, syncAgainstRatio: syncByPulls' evidence.
const (
	syncPullsMin     = 5
	syncAgainstRatio = 10
)

// syncPairMin, syncPairShare: syncPairs' exclusive pair, two tasks each
// sending at least syncPairMin wakeups to the other and at least
// syncPairShare tenths of all its wakeups.
const (
	syncPairMin   = 10
	syncPairShare = 9
)

// inferSync sets each wake edge's Sync once the trace is read: the 50 µs
// rule (syncWindowNS) per wakeup, an exclusive pair's majority at the
// trace's own pace (syncPairs), then the wakee's placements: a wakee the
// trace shows placed against WF_SYNC more often than stacked by it is
// woken without it, one it shows stacked as only WF_SYNC does, with it
// (syncByPulls). A wakeup from an exiting waker is never sync.
func (x *extractor) inferSync() {
	to, pair := x.syncPairs(x.syncPairWindow())
	for i := range x.edges {
		e := &x.edges[i]
		g := x.syncGap[i]
		e.Sync = g >= 0 && g <= syncWindowNS
		switch {
		case x.wakerExiting[i]:
			e.Sync = false
		case e.Sync && x.notSync[e.Wakee] > x.pulled[e.Wakee]:
			e.Sync = false
		case e.Sync && x.flips.syncDenied(x.w.Tasks[e.Wakee].TID, x.w.Flips.WakeeFlips):
			e.Sync = false
		case !e.Sync && e.Kind == EdgeWake && (pair != nil && pair[e.Waker] && to[e.Waker] == e.Wakee || x.syncByPulls(e.Wakee)):
			e.Sync = true
		}
	}
}

// syncByPulls: the trace shows wakee pulled from another CPU onto its
// waker's, the waker running alone there, at least syncPullsMin times,
// and placed against WF_SYNC (on its busy previous CPU while the waker
// ran alone) at most once per syncAgainstRatio of those. That is
// wake_affine_idle's sync case (a CPU running only the waker takes the
// wakee); without the flag wake_affine_weight pulls in that state only
// when the loads say so, about as often as not (schbench's futex wakes
// of its message thread on guest-B: 50 such pulls, 38 against). A pipe
// or socket write wakes with WF_SYNC whether or not its writer blocks
// next, which the 50 µs rule (syncWindowNS) cannot see: hackbench's
// senders write on to their other receivers (FIDELITY.md round 49).
func (x *extractor) syncByPulls(wakee int32) bool {
	n := x.pulledAlone[wakee]
	return n >= syncPullsMin && syncAgainstRatio*x.notSync[wakee] <= n
}

// syncPairWindow is how soon a waker leaves its CPU "at once" on the
// traced machine: the 90th percentile of the trace's own local wakeup
// preemptions (a wakee switched in for its waker, no switch between:
// Workload.PreemptWakeLocalNS), never less than syncWindowNS. On the
// eight-vCPU guests' committed stress-ng recordings local preemptions
// took 29–31 µs at the median and the 50 µs rule marked 71–82 % of the
// wakeups (nearly all a pipe pair's); on their repeat boots (the host's
// emulation slower) 49–128 µs and 0–35 % (FIDELITY.md round 79). Fewer
// than minSamples preemptions measure no pace: syncWindowNS.
func (x *extractor) syncPairWindow() int64 {
	p := x.w.PreemptWakeLocalNS
	if len(p) < minSamples {
		return syncWindowNS
	}
	// Sorted in place: finish sorts every pool anyway, and then finds
	// this one sorted.
	slices.Sort(p)
	return max(syncWindowNS, p[len(p)*9/10])
}

// syncPairs are the exclusive pairs (each of two tasks sends at least
// syncPairMin wakeups to the other, and at least syncPairShare tenths of
// its wakeups: stress-ng's --switch processes, perf bench sched pipe)
// more than half of whose wakeups, both ways, saw the waker leave its
// CPU within win; one direction is left out where its wakee's
// placements say WF_SYNC less often than not (as inferSync's). Such a
// pair talks through one path, a pipe or socket, which sets WF_SYNC on
// every wakeup; the waker leaving at once is the flag's sign, which a
// wakeup sent while the pair was split across CPUs (the waker writes,
// then blocks in its read a system call later) shows past 50 µs on a
// slow guest. Every wakeup of the pair is then sync, so the replay's
// wake_affine can stack a split pair again as the kernel's did.
//
// The result is per waker (task index): its wakeups of to[waker] are
// sync where sync[waker]. A waker's one candidate partner is the
// majority vote of its wakees (nine tenths of its wakeups go to it, or
// it has none), so two passes over the edges and no map.
func (x *extractor) syncPairs(win int64) (to []int32, sync []bool) {
	n := len(x.w.Tasks)
	to = make([]int32, n)
	votes := make([]int32, n)
	for i := range x.edges {
		e := &x.edges[i]
		switch {
		case e.Kind != EdgeWake:
		case votes[e.Waker] == 0:
			to[e.Waker], votes[e.Waker] = e.Wakee, 1
		case to[e.Waker] == e.Wakee:
			votes[e.Waker]++
		default:
			votes[e.Waker]--
		}
	}
	sent, pair, fast := votes, make([]int32, n), make([]int32, n)
	clear(sent)
	for i := range x.edges {
		e := &x.edges[i]
		if e.Kind != EdgeWake {
			continue
		}
		sent[e.Waker]++
		if e.Wakee == to[e.Waker] {
			pair[e.Waker]++
			if g := x.syncGap[i]; g >= 0 && g <= win {
				fast[e.Waker]++
			}
		}
	}
	exclusive := func(a int32) bool { return pair[a] >= syncPairMin && 10*pair[a] >= syncPairShare*sent[a] }
	for a := range int32(n) {
		b := to[a]
		if sent[a] == 0 || b == a || to[b] != a || !exclusive(a) || !exclusive(b) {
			continue
		}
		if 2*(fast[a]+fast[b]) > pair[a]+pair[b] && x.notSync[b] <= x.pulled[b] {
			if sync == nil {
				sync = make([]bool, n)
			}
			sync[a] = true
		}
	}
	return to, sync
}
