package whatif

import (
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
)

// A four-CPU machine of two performance domains for energy-aware
// placement by hand: CPUs 0-1 of capacity 512 (costs 100 and 200 at
// 500 MHz and 1 GHz: power × fmax / freq), CPUs 2-3 of capacity 1024
// with three states (costs 400, bigMid's and 800). An energy is cost ×
// Σutil / capacity, at the lowest state whose frequency reaches 1.25 ×
// fmax × max util / capacity; integer division throughout.
func easBuilder(t *testing.T, kernel string, bigMid model.PerfState) *builder {
	t.Helper()
	b := newBuilder(t, "sockets=1,cores=4,clusters=2,llc=cluster,arch=arm64,capacity=0-1:512/2-3:1024")
	b.w.Kernel = kernel
	b.w.Topology.PerfDomains = []model.PerfDomain{
		{CPUs: []int{0, 1}, States: []model.PerfState{{KHz: 500000, Power: 50}, {KHz: 1000000, Power: 200}}},
		{CPUs: []int{2, 3}, States: []model.PerfState{{KHz: 500000, Power: 200}, bigMid, {KHz: 1000000, Power: 800}}},
	}
	return b
}

func TestFindEnergyEfficientCPUByHand(t *testing.T) {
	mid := model.PerfState{KHz: 950000, Power: 740} // cost 778
	for _, tc := range []struct {
		name  string
		mid   model.PerfState
		util  uint64    // the wakee's util_avg, counted on prev's
		other [4]uint64 // the other tasks' util_avg per CPU
		prev  int
		ou    bool
		want  int
	}{
		// On prev (2): pd 2-3 at 500 MHz (1.25e6 × 100/1024 = 122 kHz),
		// 400 × 100/1024 = 39. On CPU 0: 100 × 100/512 = 19, and prev's
		// domain idle, 0. 39 − 19 = 20 > 39/16: the LITTLE CPU.
		{"a small task leaves a big CPU", mid, 100, [4]uint64{}, 2, false, 0},
		// Utils equal in a domain cost the same wherever the task goes:
		// prev.
		{"equal energy keeps prev", mid, 100, [4]uint64{}, 0, false, 0},
		// prev 0 has 200 of others: max 300 needs 1 GHz (732 kHz asked),
		// 200 × 300/512 = 117; on the idle CPU 1 max 200 (488 kHz) at
		// 500 MHz, 100 × 300/512 = 58: saves 59 > 117/16.
		{"an idle sibling lowers the domain's state", mid, 100, [4]uint64{200, 0, 0, 0}, 0, false, 1},
		// util 450 does not fit 512 (450 × 1280 > 512 × 1024): prev 0
		// and CPU 1 are skipped; of the big CPUs, both with spare 574,
		// the first. prev had no energy: the best, 2.
		{"a task too big for its LITTLE prev", mid, 450, [4]uint64{}, 0, false, 2},
		// LITTLEs at 450 each take no wakee (550 does not fit). On prev
		// 2 (700 others + 100): max 800 asks 977 kHz, 1 GHz, 800 ×
		// 800/1024 = 625; on 3: max 700 asks 854 kHz, 950 MHz at 778,
		// 778 × 800/1024 = 607. The LITTLEs add 200 × 900/512 = 351 to
		// both (1.1 GHz asked: the top state): 976 against 958 saves
		// 18, not over 976/16 = 61: prev.
		{"a saving under 1/16 keeps prev", mid, 100, [4]uint64{450, 450, 700, 0}, 2, false, 2},
		// The same with a 900 MHz state of 600 mW (cost 666): 666 ×
		// 800/1024 = 520, 871 against 976 saves 105 > 61: CPU 3.
		{"a saving over 1/16 moves", model.PerfState{KHz: 900000, Power: 600}, 100, [4]uint64{450, 450, 700, 0}, 2, false, 3},
		// An overutilized root domain hands the choice back: -1.
		{"overutilized", mid, 100, [4]uint64{}, 2, true, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := easBuilder(t, "6.1.0", tc.mid)
			wakee := b.task("wakee", 120, int32(tc.prev), false, CauseStart, ms)
			s, _ := newSim(t, b.done(t), policyConfig(t, "v6.1"))
			if s.eas == nil {
				t.Fatal("no EAS on a 6.1 kernel with an Energy Model and unequal capacities")
			}
			s.now = t0
			p := s.tasks[wakee]
			p.cpu = int32(tc.prev)
			p.avg.utilAvg, p.avg.lastUpdate = tc.util, t0
			p.ueEwma, p.ueEnqueued = 0, 0
			for c := range s.cpus {
				r := s.cpus[c]
				r.avg.utilAvg, r.utilEst, r.avg.lastUpdate = tc.other[c], 0, t0
				if c == tc.prev {
					r.avg.utilAvg += tc.util
				}
			}
			s.eas.overutilized = tc.ou
			if got := s.findEnergyEfficientCPU(p, tc.prev, tc.prev); got != tc.want {
				t.Errorf("find_energy_efficient_cpu(prev %d, util %d) = %d, want %d", tc.prev, tc.util, got, tc.want)
			}
		})
	}
}

// EAS runs where the kernel (v5.0 on) and the machine (an Energy Model,
// unequal capacities) have it, or where eas=on says a development tree
// did; eas=on on a machine without the model is an error naming why.
func TestEASEnabled(t *testing.T) {
	mid := model.PerfState{KHz: 950000, Power: 740}
	for _, tc := range []struct {
		name, kernel, eas string
		noEM              bool
		want              bool
		err               string
	}{
		{"v5.0 with a model", "5.0.0", EASAuto, false, true, ""},
		{"4.19 without eas=on", "4.19.0", EASAuto, false, false, ""},
		{"4.19 with eas=on", "4.19.0", EASOn, false, true, ""},
		{"eas=off", "6.1.0", EASOff, false, false, ""},
		{"no model", "6.1.0", EASAuto, true, false, ""},
		{"no model, eas=on", "6.1.0", EASOn, true, false, "no Energy Model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := easBuilder(t, tc.kernel, mid)
			if tc.noEM {
				b.w.Topology.PerfDomains = nil
			}
			b.task("t", 120, 0, false, CauseStart, ms)
			cfg := policyConfig(t, "v6.1")
			cfg.EAS = tc.eas
			s, err := New(b.done(t), cfg, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.eas != nil; got != tc.want {
				t.Errorf("EAS %v, want %v", got, tc.want)
			}
		})
	}
}

// The overutilized flag by hand: CPU 0 (capacity 512) is overutilized
// once its util passes 80 % (420 × 1280 = 537,600 > 512 × 1024 =
// 524,288; 400 × 1280 = 512,000 is not). An enqueue or tick there sets
// the root domain's flag; only a balance over the top domain clears it,
// and while it is clear the balancer stands down.
func TestOverutilizedByHand(t *testing.T) {
	b := easBuilder(t, "6.1.0", model.PerfState{KHz: 950000, Power: 740})
	b.task("t", 120, 0, false, CauseStart, ms)
	s, _ := newSim(t, b.done(t), policyConfig(t, "v6.1"))
	s.cpus[0].avg.utilAvg, s.cpus[0].utilEst = 400, 0
	s.updateOverutilizedStatus(0)
	if s.eas.overutilized || !s.easBalanced() {
		t.Fatal("util 400 of 512 flagged overutilized")
	}
	s.cpus[0].avg.utilAvg = 420
	s.updateOverutilizedStatus(0)
	if !s.eas.overutilized || s.easBalanced() {
		t.Fatal("util 420 of 512 not flagged overutilized")
	}
	s.noteOverutilized(false, false)
	if !s.eas.overutilized {
		t.Error("a balance below the top domain cleared the flag")
	}
	s.noteOverutilized(true, false)
	if s.eas.overutilized {
		t.Error("a top-level balance finding none overutilized left the flag set")
	}
	if s.stats.EASOverutilized != 1 {
		t.Errorf("eas_overutilized %d, want 1", s.stats.EASOverutilized)
	}
}

// wake_cap (v4.10-v5.7) by hand: with CPUs of 512 and 1024, the smaller
// of waking and previous CPU falls 512 short of the biggest, more than
// an eighth: a wakee that does not fit 512 (util 420: 537,600 >
// 524,288) is not woken affine; util 400 is. Two big CPUs: never. v5.8
// on: no wake_cap.
func TestWakeCapByHand(t *testing.T) {
	mid := model.PerfState{KHz: 950000, Power: 740}
	for _, tc := range []struct {
		kernel    string
		util      uint64
		cpu, prev int
		want      bool
	}{
		{"5.4.0", 420, 2, 0, true},
		{"5.4.0", 400, 2, 0, false},
		{"5.4.0", 420, 2, 3, false},
		{"4.19.0", 420, 0, 1, true},
		{"6.1.0", 420, 2, 0, false},
	} {
		b := easBuilder(t, tc.kernel, mid)
		wakee := b.task("wakee", 120, int32(tc.prev), false, CauseStart, ms)
		cfg := policyConfig(t, "legacy")
		cfg.EAS = EASOff
		s, _ := newSim(t, b.done(t), cfg)
		p := s.tasks[wakee]
		p.avg.utilAvg, p.avg.lastUpdate = tc.util, t0
		p.ueEwma, p.ueEnqueued = 0, 0
		if got := s.wakeCap(p, tc.cpu, tc.prev); got != tc.want {
			t.Errorf("%s: wake_cap(util %d, cpu %d, prev %d) = %v, want %v", tc.kernel, tc.util, tc.cpu, tc.prev, got, tc.want)
		}
	}
}

// em_pd_energy by hand on the LITTLE domain (capacity 512, costs 100 at
// 500 MHz and 200 at 1 GHz): schedutil asks 1.25 × 1 GHz × max/512.
func TestPerfDomainEnergyByHand(t *testing.T) {
	pd := easPerfDomain{cpus: []int{0, 1}, scaleCPU: 512, khz: []uint64{500000, 1000000}, cost: []uint64{100, 200}}
	for _, tc := range []struct{ max, sum, want uint64 }{
		{0, 0, 0},
		{200, 300, 58},   // 488 kHz asked: 500 MHz, 100 × 300/512
		{250, 250, 97},   // 610 kHz asked (488 without the headroom): 1 GHz, 200 × 250/512
		{512, 1024, 400}, // 1.25 GHz asked, beyond the top: the top state
	} {
		if got := pd.energy(tc.max, tc.sum); got != tc.want {
			t.Errorf("energy(max %d, sum %d) = %d, want %d", tc.max, tc.sum, got, tc.want)
		}
	}
}

// The balancer's EAS gate: big CPU 3 runs two tasks beside an idle CPU
// 2. With util 600 (600 × 1280 < 1024 × 1024) no CPU is overutilized and
// the balance of CPU 2's cluster ends balanced where EAS runs, but finds
// CPU 3 busiest without it. At util 900 (1,152,000 > 1,048,576) the
// cluster's balance flags the root domain overutilized itself and goes
// on to find CPU 3; so does a balance over the top domain (whose groups,
// each with an idle CPU, are then balanced), and there util 600 clears
// the flag again.
func TestEASBalanceGate(t *testing.T) {
	for _, tc := range []struct {
		eas         string
		util        uint64
		top, preset bool
		want, ou    bool
	}{
		{EASAuto, 600, false, false, false, false},
		{EASOff, 600, false, false, true, false},
		{EASAuto, 900, false, false, true, true},
		{EASAuto, 600, false, true, true, true},
		{EASAuto, 900, true, false, false, true},
		{EASAuto, 600, true, true, false, false},
	} {
		b := easBuilder(t, "6.1.0", model.PerfState{KHz: 950000, Power: 740})
		x := b.task("x", 120, 3, true, CauseStart, 10*ms)
		b.task("y", 120, 3, false, CauseStart, 10*ms)
		cfg := policyConfig(t, "v6.1")
		cfg.EAS = tc.eas
		s, _ := newSim(t, b.done(t), cfg)
		r3 := s.cpus[3]
		r3.curr, r3.nrCFS = s.tasks[x], 2
		r3.avg.loadAvg, r3.avg.utilAvg, r3.avg.runnableAvg, r3.utilEst = 2048, tc.util, tc.util, 0
		dst, sd := 2, s.cpus[2].sd[0]
		if tc.top {
			sds0 := s.cpus[0].sd
			dst, sd = 0, sds0[len(sds0)-1]
		}
		if s.eas != nil {
			s.eas.overutilized = tc.preset
		}
		e := s.newLBRun(sd, dst, CPUIdle)
		sds, _ := s.findBusiestGroup(e)
		if got := sds != nil; got != tc.want {
			t.Errorf("eas %q util %d top %v preset %v: busiest found %v, want %v", tc.eas, tc.util, tc.top, tc.preset, got, tc.want)
		}
		if s.eas != nil && s.eas.overutilized != tc.ou {
			t.Errorf("eas %q util %d top %v preset %v: overutilized %v, want %v", tc.eas, tc.util, tc.top, tc.preset, s.eas.overutilized, tc.ou)
		}
	}
}

// find_idlest_group up to v5.4 by hand on the Juno r0 (legacy policy),
// over DIE from CPU 4 (an A53): the LITTLE group 0,3-5 is local, the big
// group 1-2 remote; imbalance_pct 125 makes imbalance 256 and the
// spare-capacity scale 112.
func TestFindIdlestGroupByLoadByHand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		util     uint64 // the task's, counted on CPU 4
		fork     bool
		bigLoad  uint64 // runnable load on CPU 1 (its running task's load_avg)
		bigUtil  uint64 // util_avg on CPUs 1 and 2
		wantBig  bool
		wantNone bool
	}{
		// Local spare 446 (CPU 4 less the wakee's own 445), remote 1024:
		// 446 > 222 but 112 × 446 < 100 × 1024, and 1024 > 222: the big
		// group.
		{"a big wakee: most spare capacity", 445, false, 0, 0, true, false},
		// The same beside big CPUs at util 300 (spare 724) and CPU 1's
		// runnable load 1024 (512 per 1024 of the group's capacity,
		// which the load test would leave): spare capacity decides.
		{"a big wakee goes by spare capacity, not load", 445, false, 1024, 300, true, false},
		// Both big CPUs at util 700, remote spare 1024 − 700 = 324: 112 ×
		// 446 = 49,952 > 32,400 and 446 > 50: stay local.
		{"a small wakee, a busy big CPU: local", 100, false, 0, 700, false, true},
		// A fork skips spare capacity. All loads 0: the remote group is
		// idlest, and the local one, no lighter, does not keep it.
		{"a fork on an idle machine", 0, true, 0, 0, true, false},
		// Remote runnable 1024 over capacity 2048, 512 per 1024, more
		// than local 0 + 256: stay local (load_avg, 0 on both, would not
		// tell them apart).
		{"a fork beside a loaded big group", 0, true, 1024, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, "juno-r0")
			b.w.Kernel = "4.19.0"
			wakee := b.task("wakee", 120, 4, false, CauseStart, ms)
			busy := b.task("busy", 120, 1, false, CauseStart, ms)
			s, _ := newSim(t, b.done(t), policyConfig(t, "legacy"))
			p := s.tasks[wakee]
			p.cpu, p.avg.utilAvg = 4, tc.util
			for c := range s.cpus {
				r := s.cpus[c]
				r.avg.utilAvg, r.utilEst, r.avg.loadAvg = 0, 0, 0
			}
			s.cpus[4].avg.utilAvg = tc.util
			r1 := s.cpus[1]
			r1.avg.utilAvg = tc.bigUtil
			s.cpus[2].avg.utilAvg = tc.bigUtil
			if tc.bigLoad > 0 {
				r1.curr = s.tasks[busy]
				r1.curr.avg.loadAvg = tc.bigLoad
			}
			var die *model.SchedDomain
			for _, sd := range s.domains(4) {
				if sd.Name == "DIE" {
					die = sd
				}
			}
			flag := model.SDBalanceWake
			if tc.fork {
				flag = model.SDBalanceFork
			}
			g := findIdlestGroupByLoad(simFork{s, p}, die, 4, flag)
			switch {
			case tc.wantNone && g != nil:
				t.Errorf("group %v; want none (stay local)", g.Span)
			case tc.wantBig && (g == nil || model.FormatCPUList(g.Span) != "1-2"):
				t.Errorf("group %v; want the big group 1-2", g)
			}
		})
	}
}
