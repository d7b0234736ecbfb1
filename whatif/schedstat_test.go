package whatif

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/schedreplay/replay/model"
)

// schedstatTotals is a /proc/schedstat difference summed over CPUs: each
// idle type's load-balance counters over every domain, ttwu_move_affine,
// ttwu_local from the cpu lines and ttwu_wake_remote per domain name
// (domain0, ...).
type schedstatTotals struct {
	lb         [3]model.LBCounters
	moveAffine int64
	local      int64
	remote     map[string]int64
}

// readSchedstatDiff reads two /proc/schedstat snapshots and returns
// after − before.
func readSchedstatDiff(t *testing.T, before, after string) *model.Schedstat {
	t.Helper()
	read := func(path string) *model.Schedstat {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ss, err := model.ParseSchedstat(f, path)
		if err != nil {
			t.Fatal(err)
		}
		return ss
	}
	d, err := read(after).Sub(read(before))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// schedstatDelta reads two snapshots and sums after − before.
func schedstatDelta(t *testing.T, before, after string) schedstatTotals {
	t.Helper()
	d := readSchedstatDiff(t, before, after)
	tot := schedstatTotals{remote: map[string]int64{}}
	for _, c := range d.CPUs {
		tot.local += c.RQ[5]
		for _, dm := range c.Domains {
			for i, k := range dm.LB {
				x := &tot.lb[i]
				x.Count += k.Count
				x.Gained += k.Gained
			}
			tot.remote[dm.Name] += dm.Rest[9]
			tot.moveAffine += dm.Rest[10]
		}
	}
	return tot
}

// The replay's newidle balancing runs about as often as the guests'
// kernel's: the passes it runs (Stats.LBNewidle, summed over the domains)
// against the kernel's own count, lb_count[CPU_NEWLY_IDLE] of
// /proc/schedstat read before and after each recording (in ../shared,
// skipped without it). The kernel's window is wider than the trace (it
// spans perf's start and exit), so the bound below is loose: the replay
// must run at least a quarter and at most twice the kernel's passes.
// Measured (seed 0, replay / kernel, round 35's engine): hackbench
// 166/200, 134/182, 37/52; schbench 309/503, 169/338, 94/151; stress-ng
// 32/128, 35/85, 22/56 on guest-A, B, D (stress-ng's guest-A at the
// bound: a quarter of 128). Round 23's engine gave hackbench 156/200,
// 174/182, 52/52; schbench 557/503, 357/338, 205/151; stress-ng 74/128,
// 62/85, 32/56; before round 23 (a vCPU stall's remainder in every pass's
// cost, no NI_RANDOM) schbench's were 61/503, 77/338, 41/151.
//
// Idle CPUs' periodic balancing (CPU_IDLE, on their own tick or by the
// nohz ILB) pulls about as many tasks as the kernel's: lb_gained[CPU_IDLE]
// (its passes, lb_count, are not comparable: the kernel's window holds
// seconds of idle CPUs around the trace). Measured (round 63, the median
// of seeds 0–4): hackbench 20/24, 17/6, 14/17; schbench 78/41, 74/58,
// 68/50; stress-ng 1/1, 2/4, 3/3. Seed 0 alone (round 35): hackbench
// 21/24, 25/6, 28/17; schbench 68/41, 64/58, 47/50; stress-ng 4/1, 1/4,
// 3/3 (round 24: hackbench 25/24, 22/6, 13/17; schbench 35/41, 44/58,
// 40/50; stress-ng 10/1, 5/4, 6/3).
// Before round 24 (newidle_balance did not move next_balance forward, no
// NOHZ_NEXT_KICK) they were 1/24, 2/6, 1/17; 4/41, 8/58, 0/50.
//
// Logged, not asserted: ttwu_move_affine (wake_affine sent the wakee to
// the waker's CPU), replay / kernel (round 35): hackbench 188/186,
// 394/478, 1033/1514; schbench 33/47, 52/29, 69/53; stress-ng 8/18,
// 13/17, 11/49 (the replay's hackbench has 60–80 % of the trace's
// wakeups).
// Also logged: where wakeups go (ttwu_local and each domain's
// ttwu_wake_remote, as shares). They agree within a few points on
// guest-B and D, and on guest-A (two nodes) for schbench across the
// nodes (19 % both; the replay's was 2 % in round 24); guest-A's kernel
// sends 20 % of hackbench's wakeups to the waker's SMT sibling against
// the replay's 4 % (round 35; 10 % in round 24, FIDELITY.md).
func TestBalanceCountsMatchSchedstat(t *testing.T) {
	dirs, _ := filepath.Glob("../../shared/fixtures/kernels/guest-*")
	if len(dirs) == 0 {
		t.Skip("../shared/fixtures/kernels absent")
	}
	p, err := LookupPolicy("v6.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		for _, wl := range []string{"hackbench", "schbench", "stressng-mix"} {
			trace := filepath.Join(dir, wl+".perf.data")
			before := filepath.Join(dir, "info", "schedstat."+wl+".before.txt")
			after := filepath.Join(dir, "info", "schedstat."+wl+".after.txt")
			if _, err := os.Stat(trace); err != nil {
				continue
			}
			if _, err := os.Stat(after); err != nil {
				continue
			}
			t.Run(filepath.Base(dir)+"/"+wl, func(t *testing.T) {
				k := schedstatDelta(t, before, after)
				kernel := k.lb[2].Count
				w, _ := extractFixture(t, trace)
				// The replay's counts are the median over twenty seeds: one
				// seed's idle pulls on guest-B's hackbench range 8–36
				// (round 63), guest-D's 4–17 (round 84's first, withdrawn
				// rule: five seeds' median 4, twenty seeds' 7; round 83's
				// engine 8 and 8; round 84's 8 and 6).
				var runs []*Result
				for seed := uint64(0); seed < 20; seed++ {
					cfg := DefaultConfig(p)
					cfg.SetAutoWork(w)
					cfg.Seed = seed
					res, err := Replay(w, cfg, nil)
					if err != nil {
						t.Fatal(err)
					}
					runs = append(runs, res)
				}
				median := func(f func(*Result) int64) int64 {
					xs := make([]int64, len(runs))
					for i, r := range runs {
						xs[i] = f(r)
					}
					slices.Sort(xs)
					return xs[len(xs)/2]
				}
				res := runs[0]
				got := median(func(r *Result) int64 { return int64(r.Stats.LBNewidle) })
				gained := median(func(r *Result) int64 { return int64(r.Stats.LBGainedIdle) })
				idleGained := k.lb[0].Gained
				t.Logf("newidle passes: replay %d, kernel %d; CPU_IDLE passes %d, %d; gained %d, %d; ttwu_move_affine %d, %d", got, kernel, res.Stats.LBIdle, k.lb[0].Count, gained, idleGained, res.Stats.TTWUMoveAffine, k.moveAffine)
				if kernel <= 0 || 4*got < kernel || got > 2*kernel {
					t.Errorf("newidle passes: replay %d, kernel %d (want within [1/4, 2] of it)", got, kernel)
				}
				t.Logf("wakeups local / remote by domain: replay %s; kernel %s", placement(res.Stats.TTWULocal, res.Stats.TTWUWakeRemote), placement(k.local, k.remote))
				g := gained
				if idleGained >= 10 && (3*g < idleGained || g > 3*idleGained) || idleGained < 10 && g > 3*idleGained+10 {
					t.Errorf("tasks pulled by idle CPUs' periodic balance: replay %d, kernel %d (want within [1/3, 3] of it, or at most 3k+10 below 10)", g, idleGained)
				}
			})
		}
	}
}

// placement formats wakeup placement shares: local, then each domain's.
func placement(local int64, remote map[string]int64) string {
	n := local
	names := make([]string, 0, len(remote))
	for k, v := range remote {
		n += v
		names = append(names, k)
	}
	sort.Strings(names)
	if n == 0 {
		return "none"
	}
	out := fmt.Sprintf("local %.0f%%", 100*float64(local)/float64(n))
	for _, k := range names {
		out += fmt.Sprintf(" %s %.0f%%", k, 100*float64(remote[k])/float64(n))
	}
	return out
}
