package analysis

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/timeline"
)

// worstTrace is a hand-built trace on two SMT pairs in one MC domain
// (CPUs 0-1, 2-3). CPU 1 idles 1,000-2,500 and from 3,000; CPU 3 idles
// from 1,000 to 8,100. Three wakeups, worked by hand:
//   - 30, woken at 2,000 by task 20 on CPU 0 (task context), switched in
//     there at 6,000 after 20 (R): 4,000 ns. During [2,000, 6,000] CPU 1's
//     longest idle stretch is 3,000 (its stretch to 2,500 overlaps 500),
//     CPU 3's 4,000: SMT cpu 1 3,000, MC cpu 3 4,000.
//   - 31, woken at 7,000 in a hard interrupt on CPU 2 (task 22 running),
//     switched in at 7,500 after 22 (R+): 500 ns. CPU 3 idles all of it
//     (SMT cpu 3 500); at MC CPU 1 does too and comes first (cpu 1 500).
//   - 32, woken at 8,000 from a softirq of idle CPU 3, switched in there
//     at 8,100: 100 ns. CPU 2 is busy (SMT none); CPU 1 idles (MC cpu 1
//     100).
func worstTrace() []timeline.Event {
	waking := func(tm int64, cpu int, pid, waker, target, flags int64) timeline.Event {
		return ev(tm, timeline.SchedWaking, cpu, func(e *timeline.Event) {
			e.SetInt(timeline.PID, pid)
			e.SetInt(timeline.CommonPID, waker)
			e.SetInt(timeline.TargetCPU, target)
			e.SetInt(timeline.CommonFlags, flags)
		})
	}
	return []timeline.Event{
		sw(1000, 0, 10, "S", 20),
		sw(1000, 1, 11, "S", 0),
		sw(1000, 2, 12, "S", 22),
		sw(1000, 3, 13, "S", 0),
		waking(2000, 0, 30, 20, 0, 0x1),
		sw(2500, 1, 0, "R", 11),
		sw(3000, 1, 11, "S", 0),
		sw(6000, 0, 20, "R", 30),
		waking(7000, 2, 31, 22, 2, 0x9),
		sw(7500, 2, 22, "R+", 31),
		waking(8000, 3, 32, 0, 3, 0x10),
		sw(8100, 3, 0, "R", 32),
		sw(9000, 0, 30, "S", 0),
	}
}

func worstLevels() *SpanLevels {
	pair := [][]int{{0, 1}, {0, 1}, {2, 3}, {2, 3}}
	all := []int{0, 1, 2, 3}
	sl := &SpanLevels{Names: []string{"SMT", "MC"}}
	for c := range 4 {
		sl.Spans = append(sl.Spans, [][]int{pair[c], all})
	}
	return sl
}

func TestWorstWakeupsByHand(t *testing.T) {
	type row struct {
		tid             int32
		woken, lat      int64
		waker           int32
		ctx             string
		target, running int32
		cpu, prev       int32
		prevState       string
		idle            []IdleStretch
	}
	all := []row{
		{30, 2000, 4000, 20, "task", 0, 20, 0, 20, "R", []IdleStretch{{"SMT", 1, 3000, false}, {"MC", 3, 4000, false}}},
		{31, 7000, 500, 22, "hardirq", 2, 22, 2, 22, "R+", []IdleStretch{{"SMT", 3, 500, false}, {"MC", 1, 500, false}}},
		{32, 8000, 100, 0, "softirq", 3, 0, 3, 0, "R", []IdleStretch{{"SMT", -1, 0, false}, {"MC", 1, 100, false}}},
	}
	for _, tc := range []struct {
		worst int
		want  []row
	}{
		{1, all[:1]},
		{2, all[:2]},
		{3, all},
		{10, all},
	} {
		rep, err := Run(&timeline.SliceReader{Events: worstTrace()}, Options{Levels: worstLevels(), Worst: tc.worst})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Worst) != len(tc.want) {
			t.Fatalf("worst %d: %d rows, want %d: %+v", tc.worst, len(rep.Worst), len(tc.want), rep.Worst)
		}
		for i, w := range tc.want {
			g := rep.Worst[i]
			if g.TID != w.tid || g.WokenNS != w.woken || g.LatencyNS != w.lat || g.SwitchInNS != w.woken+w.lat || g.WakerTID != w.waker ||
				g.Context != w.ctx || g.TargetCPU != w.target || g.RunningAtWake != w.running || g.CPU != w.cpu ||
				g.PrevTID != w.prev || g.PrevState != w.prevState || g.Event != "sched_waking" {
				t.Errorf("worst %d row %d: got %+v, want %+v", tc.worst, i, g, w)
			}
			if len(g.IdleNearby) != len(w.idle) {
				t.Fatalf("worst %d row %d: idle nearby %+v, want %+v", tc.worst, i, g.IdleNearby, w.idle)
			}
			for j := range w.idle {
				if g.IdleNearby[j] != w.idle[j] {
					t.Errorf("worst %d row %d: idle nearby %+v, want %+v", tc.worst, i, g.IdleNearby[j], w.idle[j])
				}
			}
		}
	}
	// Without topology one level, the machine: for 30, CPU 3's 4,000.
	rep, err := Run(&timeline.SliceReader{Events: worstTrace()}, Options{Worst: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Worst[0].IdleNearby; len(got) != 1 || got[0] != (IdleStretch{"machine", 3, 4000, false}) {
		t.Errorf("no topology: idle nearby %+v, want machine cpu 3 4000", got)
	}
	// Off by default.
	if rep, _ := Run(&timeline.SliceReader{Events: worstTrace()}, Options{}); rep.Worst != nil {
		t.Errorf("Worst 0 kept %d rows", len(rep.Worst))
	}
}

// A task switched in again with no switch-out between (the first one's
// record lost) has its wakeup measured to the later switch-in, as
// timehist does; its row is replaced, not doubled.
func TestWorstWakeupRemeasured(t *testing.T) {
	evs := worstTrace()
	evs = append(evs[:len(evs)-1], sw(8500, 1, 0, "R", 30)) // 30 again, on CPU 1, at 8,500
	rep, err := Run(&timeline.SliceReader{Events: evs}, Options{Levels: worstLevels(), Worst: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Worst) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rep.Worst), rep.Worst)
	}
	if g := rep.Worst[0]; g.TID != 30 || g.LatencyNS != 6500 || g.CPU != 1 {
		t.Errorf("first row %+v, want 30 measured to 8,500 on CPU 1 (6,500 ns)", g)
	}
	for _, g := range rep.Worst[1:] {
		if g.TID == 30 {
			t.Errorf("30 listed twice: %+v", rep.Worst)
		}
	}
}

// The history keeps idleHistory stretches per CPU; a window reaching back
// past the oldest kept, once one was dropped, is a lower bound.
func TestIdleRingPartial(t *testing.T) {
	r := idleRing{since: -1}
	for i := range int64(idleHistory + 1) {
		r.add(i*100, i*100+10) // stretches of 10 ns every 100
	}
	r.add(5000, 5050)
	if d, partial := r.longest(0, 6000); d != 50 || !partial {
		t.Errorf("longest over everything: %d partial %v, want 50 true", d, partial)
	}
	if d, partial := r.longest(4000, 6000); d != 50 || partial {
		t.Errorf("longest over the kept window: %d partial %v, want 50 false", d, partial)
	}
	r.since = 5900
	if d, _ := r.longest(4000, 6000); d != 100 {
		t.Errorf("with the current stretch from 5,900: %d, want 100", d)
	}
}

func TestWorstWakeupsOutput(t *testing.T) {
	rep, err := Run(&timeline.SliceReader{Events: worstTrace()}, Options{Levels: worstLevels(), Worst: 3})
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb, ByWakeup); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The 3 longest wakeups", "0.004", ":30", ":20 (0, task)", "0: :20", "0 after :20 (R)", "SMT cpu 1 0.003 ms",
		":22 (2, hardirq)", "<idle> (3, softirq)", "3: <idle>", "MC cpu 1 0.000 ms"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	var cb bytes.Buffer
	if err := rep.WriteCSV(&cb, ByWakeup); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || len(recs[0]) != 24 || recs[0][18] != "idle_cpu_SMT" || recs[1][3] != "4000" || recs[1][21] != "3" || recs[1][22] != "4000" {
		t.Errorf("csv:\n%s", cb.String())
	}
	var jb bytes.Buffer
	if err := rep.WriteJSON(&jb, ByWakeup); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Worst []struct {
			TID        int32  `json:"tid"`
			LatencyNS  int64  `json:"latency_ns"`
			Context    string `json:"context"`
			IdleNearby []struct {
				Level  string `json:"level"`
				CPU    int32  `json:"cpu"`
				IdleNS int64  `json:"idle_ns"`
			} `json:"idle_nearby"`
		} `json:"worst_wakeups"`
	}
	if err := json.Unmarshal(jb.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Worst) != 3 || v.Worst[1].TID != 31 || v.Worst[1].Context != "hardirq" || v.Worst[0].IdleNearby[1].CPU != 3 || v.Worst[0].IdleNearby[1].IdleNS != 4000 {
		t.Errorf("json: %s", jb.String())
	}
}

// On the real traces with perf's own `perf sched timehist` output, the
// longest wakeups are the rows with the largest "sch delay": the same
// tasks, delays (to perf's microsecond) and run starts (the row's time
// less its run time, each truncated by perf, so within a microsecond). A
// run with no timehist row of its own (still running at the trace's end,
// or its switch-out lost, as this machine's 6.18 kernel loses some, so
// that perf books the CPU's next row to the task switched out there) is
// left out of the ranking's comparison: the analysis's slices, which
// TestOracles checks row by row against timehist, say which runs have one.
func TestWorstMatchesTimehist(t *testing.T) {
	const n = 15
	checked := 0
	for _, c := range oracleCases(t) {
		if c.timehist == "" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			th, err := readMaybeGzip(c.timehist)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := parseTimehist(th)
			if err != nil {
				t.Fatal(err)
			}
			r, err := perfdata.Open(c.unpacked(t))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			sl := &collectSlices{}
			rep, err := Run(r, Options{Worst: n, Slices: sl})
			if err != nil {
				t.Fatal(err)
			}
			hasRow := map[[2]int64]bool{} // tid, start of the runs timehist prints
			for _, s := range sl.s {
				if !s.Truncated && !s.Idle && !s.SwitchMismatch {
					hasRow[[2]int64{int64(s.TID), s.Start}] = true
				}
			}
			var perf []timehistRow
			for _, r := range rows {
				if r.tid > 0 && r.delayUS > 0 {
					perf = append(perf, r)
				}
			}
			slices.SortStableFunc(perf, func(a, b timehistRow) int { return cmp.Compare(b.delayUS, a.delayUS) })
			k := 0
			for _, w := range rep.Worst {
				if !hasRow[[2]int64{int64(w.TID), w.SwitchInNS}] {
					continue
				}
				if k >= len(perf) {
					t.Fatalf("row %+v: perf has only %d delays", w, len(perf))
				}
				// The k-th largest delay is perf's k-th (ties may come in
				// another order: the value is what ranks).
				if got := w.LatencyNS / 1000; got != perf[k].delayUS {
					t.Errorf("rank %d: latency %d us, perf's %d us", k, got, perf[k].delayUS)
				}
				found := false
				for _, p := range perf {
					start := p.timeUS - p.runUS
					if int64(p.tid) == int64(w.TID) && p.delayUS == w.LatencyNS/1000 && abs64(start-w.SwitchInNS/1000) <= 1 {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("row %+v: no timehist row of tid %d with delay %d us starting at %d us", w, w.TID, w.LatencyNS/1000, w.SwitchInNS/1000)
				}
				k++
			}
			if k < min(n, len(perf)) && len(rep.Worst) < n {
				t.Errorf("%d rows compared, perf has %d delays", k, len(perf))
			}
			checked++
		})
	}
	if checked == 0 {
		t.Skip("no timehist oracles")
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
