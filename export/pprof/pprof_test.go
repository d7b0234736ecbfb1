package pprof

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/schedreplay/replay/analysis"
	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/timeline"
)

func open(t *testing.T, path string) timeline.EventReader {
	t.Helper()
	r, err := perfdata.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// totals sums each sample type over the profile.
func totals(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		for i, v := range s.Value {
			out[p.SampleType[i].Type] += v
		}
	}
	return out
}

// reference computes what `replay latency` reports for the trace.
func reference(t *testing.T, path string) (delayTotal, count, runTotal int64) {
	rep, err := analysis.Run(open(t, path), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := rep.WakeupLatency
	for _, ts := range rep.Tasks {
		runTotal += ts.RunNS
	}
	return int64(d.MeanNS*float64(d.Count) + 0.5), d.Count, runTotal
}

func TestTotalsEqualAnalysis(t *testing.T) {
	for _, name := range []string{"hackbench.data", "hackbench_callchain.data", "stressng.data"} {
		t.Run(name, func(t *testing.T) {
			path := "../../fixtures/perf/" + name
			p, rep, err := Build(open(t, path), Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := totals(p)
			delay, count, run := reference(t, path)
			if d := got[SchedDelay] - delay; d < -count || d > count { // the mean is a float
				t.Errorf("sched_delay total %d, replay latency: %d x %.3f = %d", got[SchedDelay], count, rep.WakeupLatency.MeanNS, delay)
			}
			if got[Wakeups] != count {
				t.Errorf("wakeups %d, replay latency counts %d", got[Wakeups], count)
			}
			if got[Runtime] != run {
				t.Errorf("runtime total %d, sum of the tasks' run_ns %d", got[Runtime], run)
			}
			if got[RunnableWait] < got[SchedDelay] {
				t.Errorf("runnable_wait %d < sched_delay %d", got[RunnableWait], got[SchedDelay])
			}
		})
	}
}

// TestStacks: with perf sched record -g, wait samples carry the
// switch-out call chain (kernel addresses first), without perf's context
// markers.
func TestStacks(t *testing.T) {
	p, _, err := Build(open(t, "../../fixtures/perf/hackbench_callchain.data"), Options{Policy: "observed"})
	if err != nil {
		t.Fatal(err)
	}
	withStack := 0
	for _, s := range p.Sample {
		if s.Label["policy"][0] != "observed" {
			t.Fatalf("sample without the policy label: %v", s.Label)
		}
		if len(s.Location) > 1 {
			withStack++
			if s.Value[1] != 0 {
				t.Errorf("runtime sample with a switch-out stack")
			}
			for _, l := range s.Location[:len(s.Location)-1] {
				if l.Address >= perfContextMax || l.Address == 0 || len(l.Line) != 1 {
					t.Fatalf("location address %#x", l.Address)
				}
			}
		}
		root := s.Location[len(s.Location)-1]
		if len(root.Line) != 1 || root.Line[0].Function == nil || root.Address != 0 {
			t.Fatalf("root frame is not the thread")
		}
	}
	if withStack == 0 {
		t.Fatal("no sample with a call chain")
	}
}

// TestGoToolPprof runs `go tool pprof -top` on an export of a real trace
// and reads the totals it prints.
func TestGoToolPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	path := "../../fixtures/perf/hackbench.data"
	out := filepath.Join(t.TempDir(), "sched.pb.gz")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(f, open(t, path), Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	delay, count, run := reference(t, path)
	for _, c := range []struct {
		index string
		want  int64
		slack int64
	}{{SchedDelay, delay, count}, {Runtime, run, 0}, {Wakeups, count, 0}} {
		cmd := exec.Command(goBin, "tool", "pprof", "-top", "-unit=ns", "-sample_index="+c.index, out)
		cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go tool pprof: %v\n%s", err, stderr.String())
		}
		m := regexp.MustCompile(`of (\d+)(ns)? total`).FindStringSubmatch(stdout.String())
		if m == nil {
			t.Fatalf("no total in pprof -top output:\n%s", stdout.String())
		}
		got, _ := strconv.ParseInt(m[1], 10, 64)
		if d := got - c.want; d < -c.slack || d > c.slack {
			t.Errorf("pprof -top %s total %d, replay latency gives %d", c.index, got, c.want)
		}
		t.Logf("%s: %s", c.index, m[0])
	}
}
