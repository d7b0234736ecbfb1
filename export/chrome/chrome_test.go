package chrome

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/ingest/perfdata"
)

// TestRunningEqualsAnalysis: the JSON is valid, and the running intervals
// on the thread tracks add up to the tasks' run time `replay latency`
// reports (to the µs rounding of the JSON numbers).
func TestRunningEqualsAnalysis(t *testing.T) {
	path := "../../fixtures/perf/hackbench.data"
	r, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := Write(&buf, r, Options{Policy: "observed"})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph   string  `json:"ph"`
			Name string  `json:"name"`
			Pid  int     `json:"pid"`
			Tid  int     `json:"tid"`
			Ts   float64 `json:"ts"`
			Dur  float64 `json:"dur"`
		} `json:"traceEvents"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if int64(len(doc.TraceEvents)) != st.Events || doc.Metadata["policy"] != "observed" {
		t.Fatalf("%d events (wrote %d), metadata %v", len(doc.TraceEvents), st.Events, doc.Metadata)
	}
	var running, onCPU float64
	names := 0
	for _, e := range doc.TraceEvents {
		switch {
		case e.Ph == "X" && e.Name == "Running":
			running += e.Dur
		case e.Ph == "X" && e.Pid == cpusPID:
			onCPU += e.Dur
		case e.Ph == "M" && e.Name == "thread_name":
			names++
		}
	}
	r, _ = perfdata.Open(path)
	defer r.Close()
	rep, err := analysis.Run(r, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var run int64
	for _, ts := range rep.Tasks {
		run += ts.RunNS
	}
	if math.Abs(running*1000-float64(run)) > 1000 || math.Abs(onCPU-running) > 1 {
		t.Errorf("running %.3f µs, on the CPU tracks %.3f µs; the tasks' run_ns add up to %d ns", running, onCPU, run)
	}
	if names < 50 {
		t.Errorf("%d thread names", names)
	}
}
