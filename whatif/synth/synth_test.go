package synth

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

func topo(t *testing.T, spec string) *model.Topology {
	t.Helper()
	tp, err := model.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func gen(t *testing.T, cmd string, seed uint64, tp *model.Topology) *Result {
	t.Helper()
	g, err := ParseCommand(strings.Fields(cmd))
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	SetSeed(g, seed)
	res, err := g.Generate(tp)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return res
}

var small = []string{
	"schbench -m 2 -t 4 -s 10000 -c 100000 -r 2 -w 1",
	"schbench -m 1 -t 3 -s 0 -c 20000 -r 1",
	"schbench -m 2 -t 2 -s 1000 -c 1000000 -r 3 -z 1",
	"hackbench -g 2 -f 5 -l 20",
	"hackbench -g 1 -f 4 -l 400 --pipe --threads",
	"ebizzy -t 6 -S 1",
	"ebizzy -t 3 -S 1 -m -R",
}

// TestDeterministic: the same options and seed give the same workload and
// byte-identical files; the file reads back equal; the workload replays.
func TestDeterministic(t *testing.T) {
	tp := topo(t, "hikey")
	dir := t.TempDir()
	pol, err := whatif.LookupPolicy("v6.1")
	if err != nil {
		t.Fatal(err)
	}
	for i, cmd := range small {
		a, b := gen(t, cmd, 7, tp), gen(t, cmd, 7, tp)
		if !reflect.DeepEqual(a.Workload, b.Workload) {
			t.Fatalf("%s: two generations differ", cmd)
		}
		pa, pb := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
		if err := whatif.SaveWorkload(pa, a.Workload); err != nil {
			t.Fatal(err)
		}
		if err := whatif.SaveWorkload(pb, b.Workload); err != nil {
			t.Fatal(err)
		}
		ba, _ := os.ReadFile(pa)
		bb, _ := os.ReadFile(pb)
		if !bytes.Equal(ba, bb) {
			t.Fatalf("%s: files differ", cmd)
		}
		back, err := whatif.LoadWorkload(pa)
		if err != nil {
			t.Fatal(err)
		}
		if len(back.Tasks) != len(a.Workload.Tasks) || len(back.Edges) != len(a.Workload.Edges) {
			t.Fatalf("%s: read back %d tasks %d edges, wrote %d %d", cmd, len(back.Tasks), len(back.Edges), len(a.Workload.Tasks), len(a.Workload.Edges))
		}
		cfg := whatif.DefaultConfig(pol)
		cfg.Topology = tp
		rep, _, err := Run(a, cfg)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		switch a.Name {
		case "schbench":
			if rep.Samples == 0 {
				t.Errorf("%s: no wakeup latency samples", cmd)
			}
		case "hackbench":
			if rep.TimeS <= 0 {
				t.Errorf("%s: no completion time", cmd)
			}
		case "ebizzy":
			if rep.Records <= 0 {
				t.Errorf("%s: no records", cmd)
			}
		}
		if i == 0 {
			c := gen(t, cmd, 8, tp)
			if reflect.DeepEqual(a.Workload, c.Workload) {
				t.Errorf("%s: the seed changes nothing", cmd)
			}
		}
	}
}

// TestSchbenchShape checks the generated protocol on the ideal machine.
func TestSchbenchShape(t *testing.T) {
	res := gen(t, "schbench -m 2 -t 4 -s 10000 -c 1000000 -r 10", 1, topo(t, "hikey"))
	w := res.Workload
	if got := len(w.Tasks); got != 1+2+8 {
		t.Fatalf("%d tasks, want 11", got)
	}
	if len(res.Measured) != 8 || len(res.Wakers) != 2 {
		t.Fatalf("measured %d wakers %d", len(res.Measured), len(res.Wakers))
	}
	if res.MeasureFromNS != 5e9 {
		t.Errorf("stats from %d, want the 5 s warmup", res.MeasureFromNS)
	}
	// Each worker spins 1 s per loop: about 10 activations in 10 s.
	for _, tk := range w.Tasks[2:6] {
		if n := len(tk.Activations); n < 8 || n > 11 {
			t.Errorf("worker %d: %d activations", tk.TID, n)
		}
		if d := tk.Activations[1].DemandNS; d < 1e9 || d > 1e9+1e5 {
			t.Errorf("worker demand %d", d)
		}
	}
	// The message thread spins 30 ms per post (the -C bug) and sleeps
	// 10–12.5 ms.
	msg := w.Tasks[1]
	for _, a := range msg.Activations[1:] {
		if a.Cause == whatif.CauseWake && (a.DemandNS < 30e6 || a.DemandNS > 30.01e6) {
			t.Errorf("message spin %d", a.DemandNS)
		}
		if a.Cause == whatif.CauseArrival && (a.SleepNS < 10e6 || a.SleepNS >= 12.5e6) {
			t.Errorf("message sleep %d", a.SleepNS)
		}
	}
}

func TestHackbenchShape(t *testing.T) {
	res := gen(t, "hackbench -g 2 -f 3 -l 50 -s 100", 1, nil)
	w := res.Workload
	if len(w.Tasks) != 1+2*2*3 {
		t.Fatalf("%d tasks", len(w.Tasks))
	}
	// Receivers: fork, go, then one read per message (f × l).
	for _, i := range []int{1, 2, 3} {
		if n := len(w.Tasks[i].Activations); n != 2+3*50 {
			t.Errorf("receiver %d: %d activations, want %d", i, n, 2+3*50)
		}
	}
	var demand int64
	for _, i := range []int{4, 5, 6} {
		for _, a := range w.Tasks[i].Activations[1:] {
			demand += a.DemandNS
		}
	}
	if want := int64(3*3*50)*3000 + 3*1000; demand != want {
		t.Errorf("senders' demand %d, want %d", demand, want)
	}
	if w.Tasks[4].PID == w.Tasks[0].PID {
		t.Errorf("process mode: senders share the parent's pid")
	}
	// A pipe holds 16 × 40 messages of 100 bytes; sockets about 245.
	if n := (Hackbench{DataSize: 100, Pipe: true}).bufferMsgs(); n != 640 {
		t.Errorf("pipe buffer %d messages", n)
	}
	if n := (Hackbench{DataSize: 100}).bufferMsgs(); n < 200 || n > 300 {
		t.Errorf("socket buffer %d messages", n)
	}
}

func TestEbizzyDefaults(t *testing.T) {
	res := gen(t, "ebizzy -S 1", 1, topo(t, "hikey"))
	if len(res.Measured) != 16 {
		t.Errorf("%d threads, want 2 × 8 CPUs", len(res.Measured))
	}
	if res.RecordNS < 50e3 || res.RecordNS > 300e3 {
		t.Errorf("record %d ns", res.RecordNS)
	}
}

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		cmd, want string
	}{
		{"schbench -m 2 -t 4 -s 10000 -c 1000000 -r 10", "schbench -m 2 -t 4 -s 10000 -c 1000000 -r 10 -w 5 -i 10"},
		{"schbench --message-threads=3 -t8 --runtime 4", "schbench -m 3 -t 8 -s 30000 -c 30000 -r 4 -w 5 -i 10"},
		{"schbench -t 20 -r 30 -c 1000000 -s 1000 -i 30 -z 120", "schbench -m 2 -t 20 -s 1000 -c 1000000 -r 30 -w 5 -i 30 -z 120"},
		{"hackbench -g 4 -l 640 --pipe -T", "hackbench -g 4 -f 20 -l 640 -s 100 --pipe --threads"},
		{"hackbench --threads -P", "hackbench -g 10 -f 20 -l 100 -s 100"},
		{"hackbench --processes -F", "hackbench -g 10 -f 20 -l 100 -s 100 --fifo"},
		{"ebizzy -t 22 -S 10 -vvv -m", "ebizzy -t 22 -n 10 -s 524288 -S 10 -m"},
	} {
		g, err := ParseCommand(strings.Fields(c.cmd))
		if err != nil {
			t.Errorf("%s: %v", c.cmd, err)
			continue
		}
		if got := g.Command(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.cmd, got, c.want)
		}
	}
	for _, bad := range []string{"", "nosuch", "schbench -r 0", "schbench -m", "schbench -x 1", "schbench -m two",
		"hackbench -g 0", "ebizzy -m -M", "ebizzy -t -1", "schbench 3", "ebizzy --block-prob 2"} {
		if _, err := ParseCommand(strings.Fields(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// Valid flags, but too many activations to hold in memory: Generate
	// refuses at once (Stream would write it).
	for _, huge := range []string{"schbench -t 4096 -m 1024 -c 0 -s 0 -r 86400", "schbench --version 2023 -t 4096 -m 1024 -s 0 -n 0 -r 86400",
		"hackbench -g 100000 -l 100000000", "ebizzy -t 65536 -S 86400"} {
		g, err := ParseCommand(strings.Fields(huge))
		if err != nil {
			t.Errorf("%q: %v", huge, err)
			continue
		}
		if _, err := g.Generate(nil); err == nil || !strings.Contains(err.Error(), "in memory") {
			t.Errorf("%q: Generate error %v, want the in-memory bound", huge, err)
		}
	}
}

// acyclic checks that the workload cannot deadlock: activations in task
// order plus causal edges (the waker's activation must have started)
// form a DAG.
func acyclic(t *testing.T, name string, w *whatif.Workload) {
	t.Helper()
	base := make([]int, len(w.Tasks)+1)
	for i := range w.Tasks {
		base[i+1] = base[i] + len(w.Tasks[i].Activations)
	}
	n := base[len(w.Tasks)]
	indeg := make([]int, n)
	out := make([][]int, n)
	for i := range w.Tasks {
		for k := 1; k < len(w.Tasks[i].Activations); k++ {
			out[base[i]+k-1] = append(out[base[i]+k-1], base[i]+k)
			indeg[base[i]+k]++
		}
	}
	for _, e := range w.Edges {
		if e.Causal {
			a, b := base[e.Waker]+int(e.WakerAct), base[e.Wakee]+int(e.WakeeAct)
			out[a] = append(out[a], b)
			indeg[b]++
		}
	}
	var q []int
	for i, d := range indeg {
		if d == 0 {
			q = append(q, i)
		}
	}
	seen := 0
	for len(q) > 0 {
		v := q[len(q)-1]
		q = q[:len(q)-1]
		seen++
		for _, u := range out[v] {
			if indeg[u]--; indeg[u] == 0 {
				q = append(q, u)
			}
		}
	}
	if seen != n {
		t.Errorf("%s: %d of %d activations are on a dependency cycle (the replay would deadlock)", name, n-seen, n)
	}
}

func TestAcyclic(t *testing.T) {
	tp := topo(t, "hikey")
	for _, cmd := range append(small, "ebizzy -t 16 -S 1 -m", "hackbench -g 2 -f 10 -l 300 --pipe", "schbench -t 20 -r 10 -c 1000000 -s 1000") {
		for seed := uint64(1); seed <= 2; seed++ {
			res := gen(t, cmd, seed, tp)
			acyclic(t, cmd, res.Workload)
		}
	}
}

// TestEbizzyTies: threads blocking at the same instants (every record, a
// fixed sleep) must not wake each other in a cycle.
func TestEbizzyTies(t *testing.T) {
	o := DefaultEbizzy()
	o.Threads, o.Seconds, o.BlockProb, o.BlockMinNS, o.BlockMaxNS = 4, 1, 1, 50000, 50000
	res, err := o.Generate(topo(t, "hikey"))
	if err != nil {
		t.Fatal(err)
	}
	acyclic(t, "ties", res.Workload)
}
