package main

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}

// TestPairRangeByHand: old {1, 2}, new {3, 1.5}: the pairs' changes are
// 3/1-1 = 2, 1.5/1-1 = 0.5, 3/2-1 = 0.5, 1.5/2-1 = -0.25.
func TestPairRangeByHand(t *testing.T) {
	for _, c := range []struct {
		old, newer []float64
		lo, hi     float64
	}{
		{[]float64{1, 2}, []float64{3, 1.5}, -0.25, 2},
		{[]float64{4}, []float64{2}, -0.5, -0.5},
		{[]float64{0}, []float64{2}, math.NaN(), math.NaN()}, // no usable pair
		{nil, []float64{2}, math.NaN(), math.NaN()},
	} {
		lo, hi := pairRange(c.old, c.newer)
		if !near(lo, c.lo) || !near(hi, c.hi) {
			t.Errorf("pairRange(%v, %v) = %v, %v; want %v, %v", c.old, c.newer, lo, hi, c.lo, c.hi)
		}
	}
}

// TestForwardByHand: a 6.12 recording replayed under 6.1 against its own
// kernel's policy gives d = old/new - 1; the change from 6.1 to 6.12 it
// implies is new/old - 1.
func TestForwardByHand(t *testing.T) {
	for _, c := range []struct{ d, want float64 }{
		{-0.5, 1},    // 6.1 half as long: 6.12 doubles it
		{1, -0.5},    // 6.1 twice as long: 6.12 halves it
		{0, 0},       // no change either way
		{0.25, -0.2}, // 1/1.25 - 1
		{-1, math.NaN()},
	} {
		if got := forward(c.d); !near(got, c.want) {
			t.Errorf("forward(%v) = %v, want %v", c.d, got, c.want)
		}
	}
}

func TestSignAndPlace(t *testing.T) {
	for _, c := range []struct {
		lo, hi, pred float64
		sign         int
		place        string
	}{
		{0.1, 0.5, 0.3, 1, "within"},
		{0.1, 0.5, 0.6, 1, "above"},
		{-0.5, -0.1, 0.2, -1, "above"},
		{-0.5, -0.1, -0.7, -1, "below"},
		{-0.1, 0.2, 0, 0, "within"},
		{math.NaN(), math.NaN(), 0.1, 0, "-"},
	} {
		if s := sign(c.lo, c.hi); s != c.sign {
			t.Errorf("sign(%v, %v) = %d, want %d", c.lo, c.hi, s, c.sign)
		}
		if p := placeIn(c.pred, c.lo, c.hi); p != c.place {
			t.Errorf("placeIn(%v, %v, %v) = %q, want %q", c.pred, c.lo, c.hi, p, c.place)
		}
	}
}

// TestSummarizeByHand: two 6.1 recordings with p50 100 and 200 µs, one
// 6.12 recording with 300 µs: the medians' change is 300/150 - 1 = +100
// %, the pairs' 300/200-1 = +50 % to 300/100-1 = +200 %, all one way.
// The 6.1 recordings' replays predict +40 % and +60 % (median +50 %), the
// 6.12 one's -50 % under 6.1, which reads forward as +100 %: the median
// of the three predictions is +60 %, within the range; two comparisons
// call the rise significant and one none: sign right. The p95 has a real
// fall (-50 % on every pair: 10 and 10 against 5) that every replay
// predicts as a significant rise: above, sign wrong. The p99 changes
// nowhere and no comparison finds a change.
func TestSummarizeByHand(t *testing.T) {
	obs := func(p50, p95 float64) map[string]float64 {
		return map[string]float64{"wakeup_p50_ns": p50, "wakeup_p95_ns": p95, "wakeup_p99_ns": 1}
	}
	pred := func(p50, p95 float64) map[string]float64 {
		return map[string]float64{"wakeup_p50_ns": p50, "wakeup_p95_ns": p95, "wakeup_p99_ns": 0}
	}
	dir := func(p50, p95 int) map[string]int { return map[string]int{"wakeup_p50_ns": p50, "wakeup_p95_ns": p95} }
	old := []recording{{Observed: obs(100e3, 10e6), Predicted: pred(0.4, 0.1), Dir: dir(1, 1)},
		{Observed: obs(200e3, 10e6), Predicted: pred(0.6, 0.2), Dir: dir(0, 1)}}
	newer := []recording{{Observed: obs(300e3, 5e6), Predicted: pred(forward(-0.5), 0.3), Dir: dir(1, 1)}}
	rows := summarize(cell{Guest: "g", Workload: "w"}, old, newer)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	p50, p95, p99 := rows[0], rows[1], rows[2]
	if !near(p50.OldMedian, 150e3) || !near(p50.NewMedian, 300e3) || !near(p50.Observed, 1) ||
		!near(p50.PairLo, 0.5) || !near(p50.PairHi, 2) || p50.Sign != 1 {
		t.Errorf("p50 observed side: %+v", p50)
	}
	if !near(p50.FromOld, 0.5) || !near(p50.FromNew, 1) || !near(p50.Pred, 0.6) || p50.Place != "within" || p50.PredSign != 1 || !p50.SignRight {
		t.Errorf("p50 predicted side: %+v", p50)
	}
	if !near(p95.Observed, -0.5) || p95.Sign != -1 || p95.Place != "above" || p95.PredSign != 1 || p95.SignRight || p95.verdict() != "above, sign wrong" {
		t.Errorf("p95: %+v", p95)
	}
	// p99: no change observed (every pair 0), none predicted.
	if p99.Sign != 0 || p99.Place != "within" || p99.PredSign != 0 || p99.SignRight || p99.verdict() != "within, no real change" {
		t.Errorf("p99: %+v", p99)
	}
}

// TestCellsFromFixtures: the committed recordings pair up as FIDELITY.md
// counts them. Same day: six workloads on each of the three two-vCPU
// guests and the four-vCPU guest-Q, three boots under each kernel. Earlier: the committed three
// workloads; 6.1 has the committed recording and five repeats (four on
// guest-P: r2, r3, r5, r6), 6.12 three boots.
func TestCellsFromFixtures(t *testing.T) {
	for _, c := range []struct {
		pairs     string
		cells     int
		old, oldP int
	}{{"same-day", 24, 3, 3}, {"earlier", 9, 6, 5}} {
		i := slices.IndexFunc(pairings, func(p pairing) bool { return p.name == c.pairs })
		cs, err := cells(filepath.Join("..", ".."), pairings[i])
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != c.cells {
			t.Fatalf("%s: %d cells, want %d: %+v", c.pairs, len(cs), c.cells, cs)
		}
		for _, x := range cs {
			want := c.old
			if x.Guest == "guest-P-1s2c1t" {
				want = c.oldP
			}
			if len(x.Old) != want || len(x.New) != 3 {
				t.Errorf("%s %s %s: %d 6.1 and %d 6.12 recordings, want %d and 3", c.pairs, x.Guest, x.Workload, len(x.Old), len(x.New), want)
			}
			for _, f := range x.Old {
				if strings.Contains(f, "v6.12") || (c.pairs == "same-day") != strings.Contains(f, "crosskernel") {
					t.Errorf("%s: 6.1 side %s", c.pairs, f)
				}
			}
		}
	}
}

// TestMarkdownRow: one row as FIDELITY.md's table prints it.
func TestMarkdownRow(t *testing.T) {
	r := row{Guest: "g", Workload: "w", Metric: "wakeup_p50_ns", OldMedian: 150e3, NewMedian: 300e3, NOld: 2, NNew: 1,
		Observed: 1, PairLo: 0.5, PairHi: 2, Sign: 1, Pred: 0.6, FromOld: 0.5, FromNew: 1, Place: "within", PredSign: 1, SignRight: true}
	var b strings.Builder
	printMarkdown(&b, []row{r})
	want := "| g | w | p50 | 0.150 (2) | 0.300 (1) | +100 % | +50 % … +200 % | +60 % | +50 % | +100 % | within, sign right |\n"
	if got := strings.SplitAfterN(b.String(), "\n", 3)[2]; got != want {
		t.Errorf("row:\n%q\nwant\n%q", got, want)
	}
}

// TestVerdictDir: lower latency is better, so "worse" is a rise; a
// real change with no significant prediction is "none predicted".
func TestVerdictDir(t *testing.T) {
	for v, want := range map[string]int{"worse": 1, "better": -1, "no significant change": 0, "": 0} {
		if got := verdictDir(v); got != want {
			t.Errorf("verdictDir(%q) = %d, want %d", v, got, want)
		}
	}
	r := row{Sign: -1, PredSign: 0, Place: "above"}
	if got := r.verdict(); got != "above, none predicted" {
		t.Errorf("verdict %q", got)
	}
}
