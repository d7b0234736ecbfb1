package whatif

import (
	"strings"
	"testing"
)

func TestStallShare(t *testing.T) {
	for _, c := range []struct {
		h    float64
		busy int
		want float64
	}{
		{2, 8, 0.75}, {2, 4, 0.5}, {2, 2, 0}, {2, 1, 0}, {2.5, 5, 0.5}, {2, 0, 0},
	} {
		if got := stallShare(c.h, c.busy); got != c.want {
			t.Errorf("stallShare(%v, %d) = %v, want %v", c.h, c.busy, got, c.want)
		}
	}
}

// A task runs 10 ms of demand on CPU 3 of four, with a 4 ms host stall
// 3 ms into it that the trace recorded while `then` CPUs were busy, on a
// host that runs H = 2 vCPUs at once; `hogs` CPU hogs keep CPUs 0.. busy
// beside it. By hand (stallShare 1 − 2/k): recorded with 4 busy (0.5) and
// replayed alone (0), none of the stall remains: the run ends at 6 ms;
// with 3 busy (1/3) two thirds of it remain: 4 ms × 1/3 = 1.333333 ms
// goes; with 4 busy, all of it stays; recorded with 2 busy (0: not the
// host's contention), or with the busy count unknown, or with the rule
// off, it stays.
func TestStallShortenedUnderLessContention(t *testing.T) {
	for _, c := range []struct {
		name      string
		then      int32
		hogs      int
		off       bool
		wantCutNS int64
	}{
		{"alone, recorded with 4 busy", 4, 0, false, 4 * ms},
		{"3 busy, recorded with 4", 4, 2, false, 1333333},
		{"4 busy, recorded with 4", 4, 3, false, 0},
		{"alone, recorded with 2 busy", 2, 0, false, 0},
		{"alone, busy count unknown", 0, 0, false, 0},
		{"alone, off", 4, 0, true, 0},
	} {
		b := newBuilder(t, "sockets=1,cores=4,threads=1")
		for i := 0; i < c.hogs; i++ {
			b.task("hog", 120, int32(i), true, CauseStart, 20*ms)
		}
		st := b.task("straggler", 120, 3, true, CauseStart, 10*ms)
		b.w.HostStalls = []HostStall{{Task: st, Act: 0, OffsetNS: 3 * ms, LenNS: 4 * ms, Busy: c.then}}
		w := b.done(t)
		w.Stalls = &StallModel{TickNS: 4 * ms, StallsNS: []int64{4 * ms}, MeanStallNS: 4 * ms, HostCores: 2}
		cfg := testConfig()
		cfg.IdleWake = true
		cfg.StallContention = !c.off
		res, ch := replayChecked(t, w, cfg)
		r := ch.firstRunAfter(int64(w.Tasks[st].TID), t0-1)
		if want := t0 + 10*ms - c.wantCutNS; r == nil || r.start != t0 || r.end != want {
			t.Errorf("%s: straggler's run %+v, want %d to %d", c.name, r, t0, want)
		}
		wantN := int64(0)
		if c.wantCutNS > 0 {
			wantN = 1
		}
		if res.Stats.HostStallsShortened != wantN || res.Stats.HostStallShortenedNS != c.wantCutNS {
			t.Errorf("%s: %d stalls shortened by %d ns, want %d by %d", c.name, res.Stats.HostStallsShortened, res.Stats.HostStallShortenedNS, wantN, c.wantCutNS)
		}
	}
}

// A workload file's busy count is checked: a negative one, or more than
// the model's CPUs, is an error naming the stall.
func TestStallBusyValidated(t *testing.T) {
	for _, c := range []struct {
		busy int32
		want string
	}{
		{-1, "host stall 0: -1 CPUs busy, want 0 (unknown) to"},
		{1 << 20, "host stall 0: 1048576 CPUs busy"},
		{0, ""}, {8, ""},
	} {
		b := newBuilder(t, "sockets=1,cores=2,threads=1")
		st := b.task("t", 120, 0, true, CauseStart, 10*ms)
		b.w.HostStalls = []HostStall{{Task: st, Act: 0, OffsetNS: ms, LenNS: ms, Busy: c.busy}}
		err := b.w.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("busy %d: %v, want %q", c.busy, err, c.want)
		}
	}
}

// scaleNS by hand, where v × n overflows int64: 5.4 s of wall stretch
// kept for 5.0 of its 5.4 s of demand.
func TestScaleNS(t *testing.T) {
	for _, c := range []struct{ v, n, d, want int64 }{
		{5400000000, 5000000000, 5400000000, 5000000000},
		{10, 3, 4, 7},
		{10, 5, 4, 10},
		{10, 0, 4, 0},
		{0, 3, 4, 0},
	} {
		if got := scaleNS(c.v, c.n, c.d); got != c.want {
			t.Errorf("scaleNS(%d, %d, %d) = %d, want %d", c.v, c.n, c.d, got, c.want)
		}
	}
}
