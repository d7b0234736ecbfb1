package whatif

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSweepAxisAndGrid(t *testing.T) {
	a, err := ParseSweepAxis("imbalance_pct.MC=110, 125")
	if err != nil || a.Key != "imbalance_pct.MC" || len(a.Values) != 2 {
		t.Fatalf("%+v %v", a, err)
	}
	b, _ := ParseSweepAxis("hz=250,1000")
	g := SweepGrid([]SweepAxis{a, b})
	var names []string
	for _, p := range g {
		names = append(names, PointName(p))
	}
	want := "imbalance_pct.MC=110,hz=250 imbalance_pct.MC=110,hz=1000 imbalance_pct.MC=125,hz=250 imbalance_pct.MC=125,hz=1000"
	if strings.Join(names, " ") != want {
		t.Errorf("grid %v", names)
	}
	for _, bad := range []string{"hz=250,200", "hz", "hz=", "bogus=1,2", "hz=250,250"} {
		if _, err := ParseSweepAxis(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// A 2-point sweep: each point equals the comparison run with that
// setting alone, the output does not depend on the number of workers,
// and the setting reaches the replays (the points differ).
func TestSweepTwoPoints(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data")
	pc := PolicyCompareConfig{Base: DefaultConfig(nil), Baseline: mustPolicy(t, "v6.1"), Policies: []Policy{mustPolicy(t, "rework")}, Runs: 2, Seed: 5}
	axis, err := ParseSweepAxis("migration_cost=50us,5ms")
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	pc.Workers = 1
	one, err := Sweep(w, pc, []SweepAxis{axis})
	if err != nil {
		t.Fatal(err)
	}
	pc.Workers = 3
	three, err := Sweep(w, pc, []SweepAxis{axis})
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 2 || enc(one) != enc(three) {
		t.Fatal("sweep depends on the number of workers")
	}
	if enc(one[0].Baseline) == enc(one[1].Baseline) {
		t.Error("the two points give the same baseline")
	}
	for i, v := range axis.Values {
		st, _ := ParseSetting("migration_cost=" + v)
		c := pc
		_ = st.Apply(&c.Base)
		single, err := ComparePolicies(w, c)
		if err != nil {
			t.Fatal(err)
		}
		single.Point = one[i].Point
		if enc(single) != enc(one[i]) {
			t.Errorf("point %s differs from the comparison with --set", one[i].Point)
		}
	}
	var tb, cb bytes.Buffer
	if err := WriteSweepTable(&tb, one); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(tb.String(), "\n"); n != 2+4 {
		t.Errorf("table has %d lines, want 6:\n%s", n, tb.String())
	}
	if err := WriteSweepCSV(&cb, one); err != nil {
		t.Fatal(err)
	}
	// Per point and policy: the metrics plus idle-while-runnable and
	// migrations for guest-A's three domain levels.
	if n, want := strings.Count(cb.String(), "\n"), 1+2*(len(CompareMetricKeys)+2*3); n != want {
		t.Errorf("CSV has %d lines, want %d", n, want)
	}
}
