package scriptutil

import (
	"os"
	"path/filepath"
	"sort"
)

// Recording is a real trace the scripts replay or read, with the group
// FIDELITY.md totals it under and what its replay needs besides the trace
// (a topology the trace does not record).
type Recording struct {
	Group, Path string
	Args        []string
}

// Recordings lists the real recordings, in FIDELITY.md's group order,
// from the repository's root: the 6.1 guests' committed ones, the five
// kept in ../shared (sharedKernels: its fixtures/kernels; none when
// absent, and sharedFound says so), this machine's 6.18 ones and Debian's 6.12.57
// ones, and the other workloads recorded on this machine's later build
// (fixtures/local-6.18/workloads: cyclictest on nearly idle CPUs,
// stress-ng's fork and vfork stressors; FIDELITY.md rounds 67–70), and
// the 6.1 guest's commands under taskset (round 98); with repeats, the repeat recordings of the 6.1 guests and of this
// machine (FIDELITY.md round 49; the vfork workload's since round 74; the
// eight-vCPU guests' schbench with the timer events since round 100; three
// more stress-ng stressors since round 145); with holdout, the workloads recorded
// after the model's rules were set (round 50); with sameDay, the six
// workloads recorded under 6.1 and 6.12 on one day (round 109).
func Recordings(sharedKernels string, repeats, holdout, sameDay bool) (recs []Recording, sharedFound bool) {
	add := func(group, pattern string) {
		fs, _ := filepath.Glob(pattern)
		sort.Strings(fs)
		for _, f := range fs {
			recs = append(recs, Recording{Group: group, Path: f})
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
	add("6.18 workloads", "fixtures/local-6.18/workloads/*.perf.data")
	// Commands under taskset on a four-vCPU 6.1 guest (FIDELITY.md round
	// 98).
	add("6.1 affinity", "fixtures/kernels/affinity/*/r*/*.perf.data.gz")
	if repeats {
		add("6.1 repeats", "fixtures/kernels/repeats/*/r*/*.perf.data.gz")
		// The eight-vCPU guests' schbench three times more on one boot
		// each, with the timer, idle and softirq events (FIDELITY.md
		// round 100).
		add("6.1 timers repeats", "fixtures/kernels/idle-tick/*/schbench/*.perf.data.gz")
		add("6.18 repeats", "fixtures/local-6.18/repeats/r*/*.perf.data")
		add("6.18 workloads repeats", "fixtures/local-6.18/workloads/repeats/r*/*.perf.data")
		// stress-ng's clone, pthread and mq stressors, three runs each
		// on one build (FIDELITY.md round 145): no single recording of
		// theirs is the committed one, so they come with the repeats.
		add("6.18 stressors repeats", "fixtures/local-6.18/stressors/r*/*.perf.data")
	}
	if holdout {
		for _, g := range []string{"guest-M-*", "guest-N-*", "guest-P-*"} {
			add("6.1 2-vCPU holdout", filepath.Join("fixtures/kernels/holdout", g, "r*", "*.perf.data.gz"))
		}
		add("6.1 8-vCPU holdout", "fixtures/kernels/holdout/guest-B-*/r*/*.perf.data.gz")
	}
	if sameDay {
		// Six workloads under 6.1 and 6.12 on one day, boots alternating
		// (FIDELITY.md round 109).
		add("6.1 same-day", "fixtures/kernels/crosskernel/v6.1/*/r*/*.perf.data.gz")
		add("6.12 same-day", "fixtures/kernels/crosskernel/v6.12/*/r*/*.perf.data.gz")
	}
	return recs, sharedFound
}

// JunoKernel is the release LISA's plat_info.yml gives for its Juno test
// traces (kernel: release), which the traces themselves do not name.
const JunoKernel = "4.19.0-07801-gf317706"

// PublicRecordings lists the other real traces in ../shared (its
// fixtures directory, sharedFixtures) that hold enough scheduling events
// to replay (100 sched_switch or more; every one a parser fixture too):
// group "public", from public projects, and group "recorded", the format
// samples recorded on this project's machine (2 CPUs; the perf.data files
// in file mode carry the topology, the others are given it). LISA's two
// test traces ran on a Juno r0 under a 4.19 kernel, as the plat_info.yml
// LISA keeps beside each says (its capacities and clusters are the
// juno-r0 preset); its tutorial trace and trappy's name no machine and
// are given one cache of six cores. The texts made from the same buffers
// as tracecmd_v7_zstd.dat and perf_sched_pipe.data are left out: the
// same events again. A trace that is absent is left out.
func PublicRecordings(sharedFixtures string) []Recording {
	six := []string{"--topology", "sockets=1,cores=6,threads=1"}
	juno := []string{"--topology", "juno-r0", "--kernel", JunoKernel}
	two := []string{"--topology", "sockets=1,cores=2,threads=1"}
	var recs []Recording
	for _, r := range []Recording{
		{"public", "public/lisa/tests/assets/sched_load/trace.dat", juno},
		{"public", "public/lisa/ipynb/deprecated/tutorial/example_rtapp/trace.dat", six},
		{"public", "public/lisa/tests/assets/trace_txt/trace.txt", juno},
		{"public", "public/trappy/tests/raw_trace.dat", six},
		{"recorded", "recorded/perf_sched_record.data", nil},
		{"recorded", "recorded/perf_sched_zstd.data", nil},
		{"recorded", "recorded/perf_sched_pipe.data", nil},
		{"recorded", "recorded/tracecmd_v7_zstd.dat", two},
	} {
		r.Path = filepath.Join(sharedFixtures, r.Path)
		if _, err := os.Stat(r.Path); err == nil {
			recs = append(recs, r)
		}
	}
	return recs
}
