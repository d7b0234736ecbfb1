package scriptutil

import (
	"os"
	"path/filepath"
	"sort"
)

// Recording is a real trace the scripts replay or read, with the group
// FIDELITY.md totals it under.
type Recording struct {
	Group, Path string
}

// Recordings lists the real recordings, in FIDELITY.md's group order,
// from the repository's root: the 6.1 guests' committed ones, the five
// kept in ../shared (sharedKernels: its fixtures/kernels; none when
// absent, and sharedFound says so), this machine's 6.18 ones and Debian's 6.12.57
// ones; with repeats, the repeat recordings of the 6.1 guests and of this
// machine (FIDELITY.md round 49); with holdout, the workloads recorded
// after the model's rules were set (round 50).
func Recordings(sharedKernels string, repeats, holdout bool) (recs []Recording, sharedFound bool) {
	add := func(group, pattern string) {
		fs, _ := filepath.Glob(pattern)
		sort.Strings(fs)
		for _, f := range fs {
			recs = append(recs, Recording{group, f})
		}
	}
	// The eight-vCPU guests (A, B, D) are the totals FIDELITY.md has
	// tracked since round 1; the two-vCPU guests (M, N, and P since round
	// 40: one vCPU per host core, so few host stalls) are a group of their
	// own.
	for _, g := range []string{"guest-A-*", "guest-B-*", "guest-D-*"} {
		add("6.1 committed", filepath.Join("fixtures/kernels", g, "*.perf.data"))
	}
	for _, g := range []string{"guest-M-*", "guest-N-*", "guest-P-*"} {
		add("6.1 2-vCPU", filepath.Join("fixtures/kernels", g, "*.perf.data"))
		add("6.1 2-vCPU", filepath.Join("fixtures/kernels", g, "*.perf.data.gz"))
	}
	if _, err := os.Stat(sharedKernels); err == nil {
		sharedFound = true
		for _, n := range []string{"guest-B-1s4c2t/hackbench", "guest-D-1s8c1t/hackbench", "guest-A-2s2c2t-2numa/stressng-mix",
			"guest-B-1s4c2t/stressng-mix", "guest-D-1s8c1t/stressng-mix"} {
			add("6.1 shared", filepath.Join(sharedKernels, n+".perf.data"))
		}
	}
	add("6.18", "fixtures/local-6.18/*.perf.data")
	add("6.12", "fixtures/kernels/v6.12/*/r*/*.perf.data.gz")
	if repeats {
		add("6.1 repeats", "fixtures/kernels/repeats/*/r*/*.perf.data.gz")
		add("6.18 repeats", "fixtures/local-6.18/repeats/r*/*.perf.data")
	}
	if holdout {
		for _, g := range []string{"guest-M-*", "guest-N-*", "guest-P-*"} {
			add("6.1 2-vCPU holdout", filepath.Join("fixtures/kernels/holdout", g, "r*", "*.perf.data.gz"))
		}
		add("6.1 8-vCPU holdout", "fixtures/kernels/holdout/guest-B-*/r*/*.perf.data.gz")
	}
	return recs, sharedFound
}
