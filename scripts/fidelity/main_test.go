package main

import "testing"

// signedError by hand: a percentile's error is the JSON's rel_error; the
// idle error is (simulated idle − observed idle) / (observed idle +
// observed CPU time), with its sign, where the goal keeps only its size.
func TestSignedErrorByHand(t *testing.T) {
	r := &run{}
	f := &r.res.Fidelity
	f.RelError = map[string]float64{"wakeup_p50_ns": -0.25}
	f.Observed = map[string]any{"idle_ns": 100.0, "cpu_time_ns": 900.0}
	f.Simulated = map[string]any{"idle_ns": 70.0, "cpu_time_ns": 930.0}
	if got := signedError(r, goal{Metric: "wakeup_p50_ns", Value: 0.25}); got != -0.25 {
		t.Errorf("p50: %v, want -0.25", got)
	}
	// (70 − 100) / (100 + 900) = −0.03
	if got := signedError(r, goal{Metric: "idle_ns/total_cpu_time", Value: 0.03}); got != -0.03 {
		t.Errorf("idle: %v, want -0.03", got)
	}
	f.Observed = map[string]any{"idle_ns": 0.0, "cpu_time_ns": 0.0}
	if got := signedError(r, goal{Metric: "idle_ns/total_cpu_time"}); got != 0 {
		t.Errorf("idle of an empty trace: %v, want 0", got)
	}
}
