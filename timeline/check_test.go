package timeline

import (
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func sw(t int64, cpu, prev, next int) Event {
	var e Event
	e.Time, e.Name, e.Kind = t, "sched_switch", SchedSwitch
	e.SetInt(CPU, int64(cpu))
	e.SetInt(PrevPID, int64(prev))
	e.SetInt(NextPID, int64(next))
	return e
}

func TestChecked(t *testing.T) {
	in := []Event{
		sw(100, 0, 0, 10),
		sw(100, 0, 0, 10), // duplicate of row 0: kept, counted
		sw(200, 1, 0, 20),
		sw(300, 0, 10, 30),
		sw(250, 1, 20, 0),  // earlier than row 3: kept, counted
		sw(400, 0, 99, 10), // CPU 0 runs 30, not 99: kept, counted
		sw(500, 0, 10, 0),
		sw(600, 1, 40, 40), // one task on both sides: kept, counted (and CPU 1 ran nobody)
	}
	r := Checked(&SliceReader{Events: in})
	var times []int64
	for r.Next() {
		times = append(times, r.Event().Time)
	}
	if want := []int64{100, 100, 200, 300, 250, 400, 500, 600}; !reflect.DeepEqual(times, want) {
		t.Errorf("times %v, want %v", times, want)
	}
	got := r.Meta().Summary.Anomalies
	want := map[string]Anomaly{
		AnomalyDuplicate:     {Count: 1, First: []string{"row 1 at 100 ns"}},
		AnomalyTimeBackwards: {Count: 1, First: []string{"row 4 at 250 ns"}},
		// Row 1 repeats row 0's switch to 10 from 0 while 10 runs.
		AnomalySwitchFrom: {Count: 3, First: []string{"row 1 at 100 ns", "row 5 at 400 ns", "row 7 at 600 ns"}},
		AnomalySwitchSelf: {Count: 1, First: []string{"row 7 at 600 ns"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("anomalies %+v\nwant %+v", got, want)
	}
}

// A CPU number a kernel cannot have (cpu, target_cpu, orig_cpu, dest_cpu
// outside 0..8191) ends the stream with an error naming the event, from
// Checked (raw traces) and from a timeline file's reader alike: per-CPU
// state is indexed by it (a 2-line perf script text with CPU 99999999 had
// `replay latency` killed for memory).
func TestBadCPUNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		col  Col
		v    int64
	}{{"cpu negative", CPU, -1}, {"cpu too big", CPU, 8192}, {"target_cpu", TargetCPU, 99999999}, {"orig_cpu", OrigCPU, -3}, {"dest_cpu", DestCPU, 1 << 30}} {
		bad := sw(200, 1, 0, 20)
		bad.SetInt(c.col, c.v)
		want := c.col.Name() + " " + strconv.FormatInt(c.v, 10) + " outside 0..8191"

		r := Checked(&SliceReader{Events: []Event{sw(100, 0, 0, 10), bad, sw(300, 0, 10, 0)}, M: Meta{Source: Source{Path: "x.txt"}}})
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); n != 1 || err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "x.txt: event 1 at 200 ns") {
			t.Errorf("%s: Checked read %d events, err %v; want 1 and %q", c.name, n, err, want)
		}

		path := filepath.Join(t.TempDir(), "t.arrow")
		w, err := Create(path, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []Event{sw(100, 0, 0, 10), bad} {
			if err := w.Write(&e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(&Meta{}); err != nil {
			t.Fatal(err)
		}
		tr, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for tr.Next() {
			n++
		}
		if err := tr.Err(); n != 1 || err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "t.arrow") {
			t.Errorf("%s: the timeline file read %d events, err %v; want 1 and %q", c.name, n, err, want)
		}
		tr.Close()
	}
}
