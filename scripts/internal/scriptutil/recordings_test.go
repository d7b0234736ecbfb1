package scriptutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The recording list from the repository's root, per group, against a
// count of the committed files (find fixtures/kernels -name
// '*.perf.data*' and fixtures/local-6.18): 4 recordings of the
// eight-vCPU guests, 9 of the two-vCPU ones, 5 of this machine's 6.18,
// 27 of Debian's 6.12, 5 more workloads on this machine, 6 under taskset on
// the 6.1 guest-Q (three boots); the repeats 78,
// 15 and 3 (the vfork workload's), 9 (three stressors, three runs each), the holdouts 27 and 9, the six
// workloads of one day 72 under each kernel (three boots on each of the
// two-vCPU guests M, N, P and the four-vCPU guest-Q). The
// shared ones are counted apart (../shared may be absent).
func TestRecordings(t *testing.T) {
	t.Chdir("../../..")
	for _, c := range []struct {
		repeats, holdout, sameDay bool
		want                      map[string]int
	}{
		{false, false, false, map[string]int{"6.1 committed": 4, "6.1 2-vCPU": 9, "6.18": 5, "6.12": 27, "6.18 workloads": 5, "6.1 affinity": 6}},
		{true, true, true, map[string]int{"6.1 committed": 4, "6.1 2-vCPU": 9, "6.18": 5, "6.12": 27, "6.18 workloads": 5, "6.1 affinity": 6,
			"6.1 repeats": 78, "6.1 timers repeats": 9, "6.18 repeats": 15, "6.18 workloads repeats": 3, "6.18 stressors repeats": 9, "6.1 2-vCPU holdout": 27, "6.1 8-vCPU holdout": 9,
			"6.1 same-day": 72, "6.12 same-day": 72}},
	} {
		recs, found := Recordings(filepath.Join(t.TempDir(), "absent"), c.repeats, c.holdout, c.sameDay)
		if found {
			t.Errorf("an absent shared directory found")
		}
		got := map[string]int{}
		for _, r := range recs {
			got[r.Group]++
		}
		if len(got) != len(c.want) {
			t.Errorf("repeats %v holdout %v same-day %v: groups %v, want %v", c.repeats, c.holdout, c.sameDay, got, c.want)
		}
		for g, n := range c.want {
			if got[g] != n {
				t.Errorf("repeats %v holdout %v same-day %v: %s has %d recordings, want %d", c.repeats, c.holdout, c.sameDay, g, got[g], n)
			}
		}
	}
	if recs, found := Recordings("../shared/fixtures/kernels", false, false, false); found {
		n := 0
		for _, r := range recs {
			if r.Group == "6.1 shared" {
				n++
			}
		}
		if n != 5 {
			t.Errorf("%d shared recordings, want 5", n)
		}
	}
}

// The other real traces: the eight in ../shared when it is there (four
// public, four format samples; LISA's two test traces given their Juno r0
// and its 4.19 release, LISA's tutorial trace and trappy's six CPUs,
// tracecmd_v7_zstd.dat two), none when it is absent.
func TestPublicRecordings(t *testing.T) {
	if got := PublicRecordings(t.TempDir()); len(got) != 0 {
		t.Errorf("%d recordings from an empty directory", len(got))
	}
	shared := "../../../../shared/fixtures"
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("%s: %v", shared, err)
	}
	recs := PublicRecordings(shared)
	groups := map[string]int{}
	for _, r := range recs {
		groups[r.Group]++
		if _, err := os.Stat(r.Path); err != nil {
			t.Error(err)
		}
	}
	if groups["public"] != 4 || groups["recorded"] != 4 {
		t.Errorf("groups %v, want 4 public and 4 recorded", groups)
	}
	for _, r := range recs {
		want := ""
		switch {
		case strings.Contains(r.Path, "/lisa/tests/assets/"):
			want = "--topology juno-r0 --kernel " + JunoKernel
		case strings.Contains(r.Path, "/public/"):
			want = "--topology sockets=1,cores=6,threads=1"
		default:
			continue
		}
		if got := strings.Join(r.Args, " "); got != want {
			t.Errorf("%s: args %q, want %q", r.Path, got, want)
		}
	}
}
