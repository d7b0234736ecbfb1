package perfetto

import (
	"bytes"
	"testing"

	ingest "github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/timeline"
)

// TestSimulatedTimeline: a simulated schedule (state letters only, no raw
// prev_state, no kernel release) keeps its states and its policy name.
func TestSimulatedTimeline(t *testing.T) {
	sw := func(ts int64, cpu, prev int32, state string, next int32) timeline.Event {
		var e timeline.Event
		e.Time, e.Name, e.Kind = ts, "sched_switch", timeline.SchedSwitch
		e.SetInt(timeline.CPU, int64(cpu))
		e.SetInt(timeline.CommonPID, int64(prev))
		e.SetStr(timeline.PrevComm, map[int32]string{0: "swapper/0", 10: "worker", 11: "client"}[prev])
		e.SetInt(timeline.PrevPID, int64(prev))
		e.SetInt(timeline.PrevPrio, 120)
		e.SetStr(timeline.PrevState, state)
		e.SetStr(timeline.NextComm, map[int32]string{0: "swapper/0", 10: "worker", 11: "client"}[next])
		e.SetInt(timeline.NextPID, int64(next))
		e.SetInt(timeline.NextPrio, 120)
		return e
	}
	var wk timeline.Event
	wk.Time, wk.Name, wk.Kind = 150, "sched_waking", timeline.SchedWaking
	wk.SetInt(timeline.CPU, 0)
	wk.SetInt(timeline.CommonPID, 10)
	wk.SetStr(timeline.Comm, "client")
	wk.SetInt(timeline.PID, 11)
	wk.SetInt(timeline.Prio, 120)
	wk.SetInt(timeline.TargetCPU, 0)
	m := &timeline.SliceReader{Events: []timeline.Event{sw(100, 0, 0, "R", 10), wk, sw(200, 0, 10, "R+", 11), sw(300, 0, 11, "D", 0)}}
	m.M.Source.Format = "simulation"
	m.M.Source.Extra = map[string]string{"policy": "no-wake-affine"}
	var buf bytes.Buffer
	if _, err := Write(&buf, m, Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := ingest.NewReader(bytes.NewReader(buf.Bytes()), "sim")
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	wakes := 0
	for r.Next() {
		e := r.Event()
		switch e.Kind {
		case timeline.SchedSwitch:
			states = append(states, e.Str(timeline.PrevState))
		case timeline.SchedWaking:
			wakes++
			if e.Int(timeline.CommonPID) != 10 || e.Int(timeline.PID) != 11 || e.Str(timeline.CommonComm) != "worker" {
				t.Errorf("waking %v", e)
			}
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if len(states) != 3 || states[0] != "R" || states[1] != "R+" || states[2] != "D" || wakes != 1 {
		t.Errorf("states %q, %d wakings", states, wakes)
	}
	if p := r.Meta().Source.Extra["policy"]; p != "no-wake-affine" {
		t.Errorf("policy %q", p)
	}
}
