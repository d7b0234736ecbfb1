package scriptutil

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// parseArgs: a script's arguments, one or more or exactly one; a wrong
// count prints the usage line and the flags' defaults and fails.
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args   []string
		one    bool
		ok     bool
		wantFS []string
	}{
		{nil, false, false, nil},
		{[]string{"-x", "3", "a"}, false, true, []string{"a"}},
		{[]string{"a", "vs", "b"}, false, true, []string{"a", "vs", "b"}},
		{[]string{"a"}, true, true, []string{"a"}},
		{[]string{"a", "b"}, true, false, nil},
		{nil, true, false, nil},
	} {
		fs := flag.NewFlagSet("s", flag.ContinueOnError)
		fs.Int("x", 1, "the x")
		var out bytes.Buffer
		err := parseArgs(fs, c.args, &out, "usage: s [-x N] FILE...", c.one)
		if (err == nil) != c.ok {
			t.Errorf("%q one %v: error %v, want ok %v", c.args, c.one, err, c.ok)
			continue
		}
		if !c.ok {
			if got := out.String(); !strings.HasPrefix(got, "usage: s [-x N] FILE...\n") || !strings.Contains(got, "the x (default 1)") {
				t.Errorf("%q one %v: printed %q", c.args, c.one, got)
			}
			continue
		}
		if !slices.Equal(fs.Args(), c.wantFS) || out.Len() != 0 {
			t.Errorf("%q one %v: args %q, printed %q", c.args, c.one, fs.Args(), out.String())
		}
	}
}

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{
		{"0-2", []int{0, 1, 2}},
		{"5", []int{5}},
		{"1,3-4", []int{1, 3, 4}},
		{"2-1", nil},
		{"x", nil},
	} {
		got, err := ParseSeeds(tc.in)
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.want != nil) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestGroups(t *testing.T) {
	g := Groups{}
	g.Join(1, 2)
	g.Join(3, 2)
	g.Join(4, 5)
	if g.Find(1) != g.Find(3) || g.Find(1) == g.Find(4) || g.Find(6) != 6 {
		t.Errorf("groups %v: want {1,2,3} {4,5} {6}", g)
	}
}

func TestVsColumns(t *testing.T) {
	for _, c := range []struct {
		args []string
		want [][]string
	}{
		{[]string{"a", "b"}, [][]string{{"a", "b"}}},
		{[]string{"a", "vs", "b", "c"}, [][]string{{"a"}, {"b", "c"}}},
		{[]string{"vs", "b"}, [][]string{nil, {"b"}}},
		{[]string{"a", "vs", "b", "vs", "c"}, [][]string{{"a"}, {"b"}, {"c"}}},
	} {
		if got := VsColumns(c.args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("VsColumns(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestForEachFile(t *testing.T) {
	var got []string
	n, err := ForEachFile([]string{"a", "b", "vs", "c"}, 2, func(col int, p string) error {
		got = append(got, fmt.Sprint(col, p))
		return nil
	})
	if err != nil || n != 2 || !slices.Equal(got, []string{"0a", "0b", "1c"}) {
		t.Errorf("ForEachFile: %d, %v, %q; want 2, nil, [0a 0b 1c]", n, err, got)
	}
	if _, err := ForEachFile([]string{"a", "vs", "b", "vs", "c"}, 2, func(int, string) error { return nil }); err == nil {
		t.Error("ForEachFile with three columns of at most two: no error")
	}
	want := errors.New("unreadable")
	if _, err := ForEachFile([]string{"a"}, 0, func(int, string) error { return want }); err != want {
		t.Errorf("ForEachFile's file error: %v, want %v", err, want)
	}
}

func TestColumns(t *testing.T) {
	got, err := Columns([]string{"a", "b", "vs", "c"}, func() *[]string { return new([]string) }, func(c *[]string, p string) error {
		*c = append(*c, p)
		return nil
	})
	if err != nil || len(got) != 2 || !slices.Equal(*got[0], []string{"a", "b"}) || !slices.Equal(*got[1], []string{"c"}) {
		t.Errorf("Columns: %v, %v; want [a b] [c]", got, err)
	}
}

// TestReadEvents counts a perf.data's sched_switch records against perf's
// own `perf script` of the same file (fixtures/perf, 136 lines naming
// sched:sched_switch), and checks the early stop and a callback's error.
func TestReadEvents(t *testing.T) {
	const path = "../../../fixtures/perf/perf_sched_record.data"
	var release string
	switches, all := 0, 0
	err := ReadEvents(path, func(m *timeline.Meta) error {
		release = m.Source.OSRelease
		return nil
	}, func(e *timeline.Event) error {
		all++
		if e.Kind == timeline.SchedSwitch {
			switches++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if switches != 136 {
		t.Errorf("sched_switch: %d events, perf script shows 136", switches)
	}
	if release == "" {
		t.Error("start was not given the source's description")
	}
	n := 0
	if err := ReadEvents(path, nil, func(*timeline.Event) error {
		if n++; n == 3 {
			return ErrStop
		}
		return nil
	}); err != nil || n != 3 {
		t.Errorf("ErrStop at the third event: read %d, err %v", n, err)
	}
	boom := errors.New("boom")
	if err := ReadEvents(path, nil, func(*timeline.Event) error { return boom }); err != boom {
		t.Errorf("a callback's error: got %v", err)
	}
	if err := ReadEvents(path+".missing", nil, func(*timeline.Event) error { return nil }); err == nil {
		t.Error("a missing file read without error")
	}
	if all < switches {
		t.Errorf("all %d < switches %d", all, switches)
	}
}

func TestCPUOf(t *testing.T) {
	mk := func(cpu int64, set bool) *timeline.Event {
		var e timeline.Event
		if set {
			e.SetInt(timeline.CPU, cpu)
		}
		return &e
	}
	for _, tc := range []struct {
		e    *timeline.Event
		want int32
		ok   bool
	}{
		{mk(0, false), 0, false},
		{mk(0, true), 0, true},
		{mk(3, true), 3, true},
		{mk(-1, true), 0, false},
		{mk(model.MaxCPUs-1, true), model.MaxCPUs - 1, true},
		{mk(model.MaxCPUs, true), 0, false},
	} {
		got, ok := CPUOf(tc.e)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CPUOf(%d set=%v) = %d, %v; want %d, %v", tc.e.Int(timeline.CPU), tc.e.IsSet(timeline.CPU), got, ok, tc.want, tc.ok)
		}
	}
}

// TestNeighboursAndPlacement: records on CPUs 0, 1, 0, none, 1, 0; the
// waking at 0 is followed on its CPU by a move of its wakee (record 2),
// the one at 1 by a move of another task (record 4).
func TestNeighboursAndPlacement(t *testing.T) {
	cpus := []int32{0, 1, 0, -1, 1, 0}
	prev, next := Neighbours(len(cpus), func(i int) int32 { return cpus[i] })
	if want := []int{-1, -1, 0, -1, 1, 2}; !slices.Equal(prev, want) {
		t.Errorf("prev %v, want %v", prev, want)
	}
	if want := []int{2, 4, 5, -1, -1, -1}; !slices.Equal(next, want) {
		t.Errorf("next %v, want %v", next, want)
	}
	moves := map[int][2]int32{2: {7, 1}, 4: {8, 0}} // record: pid, dest
	moveOf := func(j int) (int32, int32, bool) { m, ok := moves[j]; return m[0], m[1], ok }
	if got := Placement(0, next, 7, 0, moveOf); got != 1 {
		t.Errorf("waking of 7 on CPU 0: placed on %d, want 1 (its move)", got)
	}
	if got := Placement(1, next, 7, 1, moveOf); got != 1 {
		t.Errorf("waking of 7 on CPU 1: placed on %d, want its target 1 (the next move is 8's)", got)
	}
	if got := Placement(5, next, 7, 2, moveOf); got != 2 {
		t.Errorf("last record: placed on %d, want its target 2", got)
	}
}

// TestMedianByHand: odd and even counts, none, and the input untouched.
func TestMedianByHand(t *testing.T) {
	in := []float64{3, 1, 2, 10}
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {in, 2.5}, {[]float64{7}, 7}} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	if in[0] != 3 || in[3] != 10 {
		t.Errorf("Median sorted its input: %v", in)
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}

// Parallel calls f once for every index, never more than n at a time
// (n below 1 is one at a time).
func TestParallel(t *testing.T) {
	for _, n := range []int{0, 1, 3} {
		var mu sync.Mutex
		calls := make([]int, 50)
		running, most := 0, 0
		Parallel(n, len(calls), func(i int) {
			mu.Lock()
			calls[i]++
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
		})
		for i, c := range calls {
			if c != 1 {
				t.Errorf("n %d: f(%d) called %d times, want 1", n, i, c)
			}
		}
		if limit := max(n, 1); most > limit {
			t.Errorf("n %d: %d calls at once, want at most %d", n, most, limit)
		}
	}
}
