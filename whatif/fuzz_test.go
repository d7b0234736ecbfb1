package whatif

import (
	"slices"
	"strings"
	"testing"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// fuzzEvents decodes fuzz bytes into a scheduler trace on three CPUs and
// five tasks: five bytes per event (kind, CPU, two tids, state and time
// step), with tick records, lost-record marks and long silences (the host
// stalls' gaps), and now and then a CPU beyond the topology or beyond any
// kernel's. Nothing makes it consistent: switches from tasks that are not
// running, wakeups of running tasks, exits of tasks never seen, as a trace
// with lost records has them.
func fuzzEvents(data []byte) []timeline.Event {
	var evs []timeline.Event
	now := int64(ms)
	for i := 0; i+5 <= len(data) && len(evs) < 400; i += 5 {
		b := data[i : i+5]
		cpu, x, y := int32(b[1]%3), int32(b[2]%6), int32(b[3]%6)
		if b[1] >= 253 {
			// A CPU the topology lacks, and ones no kernel has.
			cpu = [...]int32{3, -1, 8192}[b[1]-253]
		}
		state := [...]string{"R", "S", "D", "X"}[b[4]&3]
		now += int64(b[4]>>2)*10000 + 1000
		switch b[0] % 6 {
		case 0:
			evs = append(evs, nSwitch(now, cpu, x, state, y))
		case 1:
			if y != 0 && x != y {
				evs = append(evs, nWaking(now, cpu, x, y, int32(b[4]%3)))
			}
		case 2:
			if x != 0 && y != 0 && x != y {
				e := nWaking(now, cpu, x, y, cpu)
				e.Kind, e.Name = timeline.SchedWakeupNew, "sched:sched_wakeup_new"
				evs = append(evs, e)
			}
		case 3:
			if x != 0 {
				var e timeline.Event
				e.Time, e.Kind, e.Name = now, timeline.SchedProcessExit, "sched:sched_process_exit"
				e.SetInt(timeline.CPU, int64(cpu))
				e.SetInt(timeline.PID, int64(x))
				e.SetStr(timeline.Comm, "t")
				evs = append(evs, e)
			}
		case 4:
			evs = append(evs, nRuntime(now, cpu, x, hardirq))
		case 5:
			if b[4]&3 == 0 {
				evs = append(evs, nLost(now, cpu))
			} else {
				now += int64(b[4]>>2) * ms
			}
		}
	}
	return evs
}

// Whatever the trace, extraction gives a valid workload or an error about
// the input, never an internal one (a workload Validate refuses), and every
// replay of what it extracts runs to the end with its invariants held:
// each task runs its demand, every edge fires once (or is cut), no CPU runs
// two tasks (the checker), under CFS and EEVDF, with and without exit
// deadlines and the trace's wakeup pairing; and with ReplyAwaits, on the
// workload as extracted (nothing stranded: its awaits follow the trace's
// order) and with every causal wakeup marked Awaits (the await and reply
// machinery on every exchange; such marks can wait in a circle, which
// releaseStranded breaks, and the invariants still hold); and with
// TickSoftIRQ, every arrival marked as the tick's softirq's.
func FuzzExtractReplay(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 4, 0, 0, 0, 1, 8, 1, 0, 1, 2, 16, 0, 1, 0, 3, 8, 0, 0, 1, 2, 9, 0, 1, 0, 2, 4})
	f.Add([]byte{0, 0, 0, 1, 4, 0, 1, 0, 2, 4, 1, 1, 2, 1, 8, 1, 0, 1, 3, 12, 1, 0, 1, 4, 4, 0, 0, 1, 4, 5, 0, 0, 4, 0, 9})
	f.Add([]byte{2, 0, 1, 2, 4, 2, 0, 1, 3, 4, 0, 0, 0, 2, 4, 0, 1, 0, 3, 4, 3, 0, 2, 0, 4, 1, 1, 3, 1, 8, 0, 1, 3, 0, 7})
	topo, err := model.ParseSpec("sockets=1,cores=3,threads=1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs := fuzzEvents(data)
		// The wake shadow reads any timeline (it is given traces).
		if _, err := WakeShadow(&noiseReader{evs: evs}, WakeShadowOptions{ImbalancePct: 117, LLCSize: 2, StartFlips: 4}); err != nil {
			t.Fatalf("wake shadow: %v", err)
		}
		w, err := Extract(&noiseReader{evs: evs})
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%v\nevents: %v", err, describeEvents(evs))
			}
			return
		}
		for _, pol := range []string{"v6.1", "latest"} {
			for _, v := range []struct{ deadlines, paired bool }{{false, false}, {true, false}, {false, true}} {
				p, _ := LookupPolicy(pol)
				cfg := DefaultConfig(p)
				cfg.Topology, cfg.ExitDeadlines, cfg.PairedWakeups = topo, v.deadlines, v.paired
				cfg.MaxEvents = 1 << 20
				if _, err := Replay(w, cfg, checkerFor(t, cfg, w)); err != nil && isEngineFault(err) {
					t.Fatalf("%s %+v: %v\nevents: %v", pol, v, err, describeEvents(evs))
				}
			}
		}
		// tick_softirq=on, with every arrival marked as the tick's
		// softirq's (held ticks, grid counts on any sleep).
		soft := *w
		soft.Tasks = slices.Clone(w.Tasks)
		for i := range soft.Tasks {
			acts := slices.Clone(soft.Tasks[i].Activations)
			for k := range acts {
				acts[k].TickSoftIRQ = acts[k].Cause == CauseArrival
			}
			soft.Tasks[i].Activations = acts
		}
		for _, pol := range []string{"v6.1", "latest"} {
			p, _ := LookupPolicy(pol)
			cfg := DefaultConfig(p)
			// And every interrupt's wakeup on the CPU the trace showed it
			// on (irq_cpu=trace), the host stalls on their CPUs
			// (host_stall=cpu).
			cfg.Topology, cfg.TickSoftIRQ, cfg.IRQCPU, cfg.HostStallCPU = topo, true, true, true
			cfg.MaxEvents = 1 << 20
			if _, err := Replay(&soft, cfg, checkerFor(t, cfg, &soft)); err != nil && isEngineFault(err) {
				t.Fatalf("%s, tick softirq: %v\nevents: %v", pol, err, describeEvents(evs))
			}
		}
		all := *w
		all.Edges = slices.Clone(w.Edges)
		for i := range all.Edges {
			if e := &all.Edges[i]; e.Causal && e.Kind == EdgeWake {
				e.Awaits = true
			}
		}
		for _, pol := range []string{"v6.1", "latest"} {
			for _, c := range []struct {
				name string
				wl   *Workload
			}{{"extracted", w}, {"all awaited", &all}} {
				name, wl := c.name, c.wl
				p, _ := LookupPolicy(pol)
				cfg := DefaultConfig(p)
				cfg.Topology, cfg.ReplyAwaits = topo, true
				cfg.MaxEvents = 1 << 20
				res, err := Replay(wl, cfg, checkerFor(t, cfg, wl))
				if err != nil && isEngineFault(err) {
					t.Fatalf("%s, reply awaits, %s: %v\nevents: %v", pol, name, err, describeEvents(evs))
				}
				if err == nil && wl == w && res.Stats.AwaitsStranded != 0 {
					t.Fatalf("%s, reply awaits, %s: %d waiters stranded\nevents: %v", pol, name, res.Stats.AwaitsStranded, describeEvents(evs))
				}
			}
		}
	})
}

// isEngineFault tells the engine's own failures (a broken invariant, an
// internal error, a replay that does not end) from errors about its input
// (a CPU the topology lacks), which a fuzzed trace may well deserve.
func isEngineFault(err error) bool {
	m := err.Error()
	return strings.Contains(m, "invariant") || strings.Contains(m, "internal error") || strings.Contains(m, "does not terminate")
}

func describeEvents(evs []timeline.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("\n  ")
		b.WriteString(itoa(int(e.Time)))
		b.WriteString(" ")
		b.WriteString(e.Kind.String())
		b.WriteString(" cpu ")
		b.WriteString(itoa(int(e.Int(timeline.CPU))))
		switch e.Kind {
		case timeline.SchedSwitch:
			b.WriteString(" " + itoa(int(e.Int(timeline.PrevPID))) + " " + e.Str(timeline.PrevState) + " -> " + itoa(int(e.Int(timeline.NextPID))))
		default:
			b.WriteString(" by " + itoa(int(e.Int(timeline.CommonPID))) + " pid " + itoa(int(e.Int(timeline.PID))))
		}
	}
	return b.String()
}
