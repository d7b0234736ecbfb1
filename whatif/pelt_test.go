package whatif

import "testing"

// TestInitTaskPELT checks post_init_entity_util_avg by hand: a new task's
// util_avg (and runnable_avg) is cap = (1024 - cfs util) / 2, or, from
// v6.10 (72bffbf57c52), cfs util × weight / (cfs load + 1) when smaller.
// Before the fix the weight was the 64-bit kernel's scaled one (× 1024),
// so the cap won whenever the cfs_rq had any util.
func TestInitTaskPELT(t *testing.T) {
	for _, c := range []struct {
		name         string
		util, load   uint64
		nice         int
		before, v610 uint64
	}{
		// cap 312; 400 × 1024 / 3001 = 136.5; × 1024 more = 139,762.
		{"busy CPU", 400, 3000, 0, 312, 136},
		// util 0: the cap, 512, either way.
		{"idle CPU", 0, 0, 0, 512, 512},
		// no spare capacity: 0.
		{"full CPU", 1024, 5000, 0, 0, 0},
		// cap 462 below 100 × 1024 / 101 = 1,013: the cap either way.
		{"light load", 100, 100, 0, 462, 462},
		// nice 19 (weight 15): cap 212; 600 × 15 / 2001 = 4.5.
		{"nice 19", 600, 2000, 19, 212, 4},
	} {
		for _, fixed := range []bool{false, true} {
			s := &Sim{}
			s.knobs.InitUtilTrueWeight = fixed
			r := &rq{}
			r.avg.utilAvg, r.avg.loadAvg = c.util, c.load
			tk := &simTask{weight: weightOfNice(c.nice)}
			s.initTaskPELT(tk, r)
			want := c.before
			if fixed {
				want = c.v610
			}
			if tk.avg.utilAvg != want || tk.avg.runnableAvg != want {
				t.Errorf("%s (v6.10 fix %v): util %d runnable %d, want %d", c.name, fixed, tk.avg.utilAvg, tk.avg.runnableAvg, want)
			}
			if tk.avg.loadAvg != tk.weight {
				t.Errorf("%s: load_avg %d, want the weight %d", c.name, tk.avg.loadAvg, tk.weight)
			}
		}
	}
}

// TestInitUtilKnobByPolicy: the fix is in v6.10 and later policies only
// (the 6.1.y and 6.6.y stable series did not take it: no stable tag, and
// their fair.c at 6.1.166 and 6.6.150 still multiplies by se->load.weight).
func TestInitUtilKnobByPolicy(t *testing.T) {
	for name, want := range map[string]bool{"v6.1": false, "v6.6": false, "v6.10": true, "v6.12": true, "latest": true} {
		p, err := LookupPolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		rp, ok := asRules(p)
		if !ok {
			t.Fatalf("%s: not a rule-set policy", name)
		}
		if rp.knobs.InitUtilTrueWeight != want {
			t.Errorf("%s: InitUtilTrueWeight %v, want %v", name, rp.knobs.InitUtilTrueWeight, want)
		}
	}
}
