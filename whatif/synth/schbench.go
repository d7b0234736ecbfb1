package synth

import (
	"fmt"
	"sort"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

// Schbench are the options of schbench as of late 2020 (masoncl/schbench
// at abe4f96, "add -C message_cputime", 23 Oct 2020: the version the
// 2020 load-balancer regressions were reported with; spec §7.1). Zero
// values are not defaults: start from DefaultSchbench.
type Schbench struct {
	MessageThreads int   // -m message threads (2)
	Workers        int   // -t workers per message thread (16)
	SleepUS        int64 // -s message thread sleep, usec (30000); jitter U[0, s/4)
	CPUTimeUS      int64 // -c worker spin per loop, usec (30000)
	// MessageCPUUS is -C. That version parses it but never applies it
	// (it assigns message_cputime to itself), so the message thread always
	// spins 30000 us; the generator reproduces that unless FixC is set.
	MessageCPUUS int64
	FixC         bool
	RuntimeS     int // -r seconds (30); 0 (forever) cannot be generated
	WarmupS      int // -w seconds before the stats are zeroed (5)
	IntervalS    int // -i print interval seconds (10)
	ZeroS        int // -z zero the stats every N seconds (0: never)
	Seed         uint64

	// Costs (ns at capacity 1024) of what is not spinning: assumptions,
	// see docs/synth.md.
	ForkNS, StartNS, WakeNS, SyscallNS, PrintNS int64

	// Version is 2020 (0 means the same: the fields above) or 2023, the
	// rewrite (spec §7.2), which uses the fields below and no -c/-C:
	// start from DefaultSchbench2023. Workers 0 is then -t's default, the
	// topology's CPUs per message thread.
	Version     int
	Operations  int  // -n matrix multiplications per request (5)
	FootprintKB int  // -F working set of the multiplications, KiB (256)
	NoLocking   bool // -L: no per-CPU lock around the work (not modelled either way)
	RPS         int  // -R requests per second over all message threads (0: the post/wake protocol)
	AutoRPS     int  // -A target busy percent: refused (feedback from the machine's /proc/stat)
	// MACps is the time of one multiply-add of the naive matrix
	// multiplication, picoseconds at capacity 1024 (assumption: 1000).
	MACps int64
	// RequestNS is the -R message thread's cost per request queued,
	// besides the wakeup (assumption: 200).
	RequestNS int64
}

// DefaultSchbench is schbench with no flags.
func DefaultSchbench() Schbench {
	return Schbench{MessageThreads: 2, Workers: 16, SleepUS: 30000, CPUTimeUS: 30000, MessageCPUUS: 30000,
		RuntimeS: 30, WarmupS: 5, IntervalS: 10,
		ForkNS: 15000, StartNS: 5000, WakeNS: 2000, SyscallNS: 1000, PrintNS: 50000}
}

// messageSpinUS is the message thread's think time the program applies.
func (o Schbench) messageSpinUS() int64 {
	if o.FixC {
		return o.MessageCPUUS
	}
	return 30000
}

// Command is the schbench command line of o.
func (o Schbench) Command() string {
	if o.Version == 2023 {
		return o.command2023()
	}
	s := fmt.Sprintf("schbench -m %d -t %d -s %d -c %d -r %d -w %d -i %d", o.MessageThreads, o.Workers, o.SleepUS, o.CPUTimeUS, o.RuntimeS, o.WarmupS, o.IntervalS)
	if o.ZeroS > 0 {
		s += fmt.Sprintf(" -z %d", o.ZeroS)
	}
	if o.MessageCPUUS != 30000 {
		s += fmt.Sprintf(" -C %d", o.MessageCPUUS)
	}
	if o.FixC {
		s += " --fix-C"
	}
	return s
}

// Validate checks the options.
func (o Schbench) Validate() error {
	switch o.Version {
	case 0, 2020:
	case 2023:
		return o.validate2023()
	default:
		return fmt.Errorf("schbench --version %d: want 2020 (the default, spec §7.1) or 2023 (the rewrite, §7.2)", o.Version)
	}
	switch {
	case o.Operations != 0 || o.FootprintKB != 0 || o.NoLocking || o.RPS != 0 || o.AutoRPS != 0 || o.MACps != 0 || o.RequestNS != 0:
		return fmt.Errorf("schbench: -n, -F, -L, -R, -A and --mac-ps are flags of the 2023 rewrite: give --version 2023")
	case o.MessageThreads < 1 || o.MessageThreads > 1024:
		return fmt.Errorf("schbench -m %d: want 1..1024 message threads", o.MessageThreads)
	case o.Workers < 1 || o.Workers > 4096:
		return fmt.Errorf("schbench -t %d: want 1..4096 workers per message thread", o.Workers)
	case o.SleepUS < 0 || o.SleepUS > 60e6:
		return fmt.Errorf("schbench -s %d: want 0..60000000 us", o.SleepUS)
	case o.SleepUS > 0 && o.SleepUS < 4:
		return fmt.Errorf("schbench -s %d: the program divides by s/4 for its jitter (crashes below 4)", o.SleepUS)
	case o.CPUTimeUS < 0 || o.CPUTimeUS > 600e6:
		return fmt.Errorf("schbench -c %d: want 0..600000000 us", o.CPUTimeUS)
	case o.MessageCPUUS < 0 || o.MessageCPUUS > 600e6:
		return fmt.Errorf("schbench -C %d: want 0..600000000 us", o.MessageCPUUS)
	case o.RuntimeS == 0:
		return fmt.Errorf("schbench -r 0 runs forever, which cannot be generated: give the seconds to simulate with -r N (stats then cover the time since the last -w/-z reset)")
	case o.RuntimeS < 0 || o.RuntimeS > 86400:
		return fmt.Errorf("schbench -r %d: want 1..86400 seconds", o.RuntimeS)
	case o.WarmupS < 0 || o.IntervalS < 0 || o.ZeroS < 0:
		return fmt.Errorf("schbench: -w, -i and -z must not be negative")
	case o.ForkNS < 0 || o.StartNS < 0 || o.WakeNS < 0 || o.SyscallNS < 0 || o.PrintNS < 0:
		return fmt.Errorf("schbench: costs must not be negative")
	case o.CPUTimeUS == 0 && o.SyscallNS == 0:
		return fmt.Errorf("schbench -c 0 with zero syscall cost: the workers would loop without time passing")
	case o.SleepUS == 0 && o.messageSpinUS() == 0 && o.WakeNS == 0 && o.SyscallNS == 0:
		return fmt.Errorf("schbench -s 0 with a zero message think time: the message thread would loop without time passing")
	}
	return nil
}

// estimate is about how many activations and edges Generate builds: a
// message thread wakes a batch at most once per spin + sleep, a worker
// loops at most once per -c.
func (o Schbench) estimate() float64 {
	R := float64(o.RuntimeS) * 1e9
	cycle := float64(o.messageSpinUS()*1000+o.SleepUS*1000+2*o.SyscallNS+o.WakeNS) + 1
	batches := R / cycle
	loops := R / (float64(o.CPUTimeUS*1000+3*o.SyscallNS) + 1)
	if loops > batches {
		loops = batches
	}
	m, t := float64(o.MessageThreads), float64(o.Workers)
	return m*(2*batches+2) + m*t*(2*loops+2) + R/1e9
}

// measureFrom is when the printed stats start: the warmup reset, then
// every -z seconds (main checks once a second).
func (o Schbench) measureFrom() int64 {
	const s = int64(1e9)
	from := int64(0)
	if o.WarmupS > 0 && o.WarmupS < o.RuntimeS {
		from = int64(o.WarmupS) * s
	}
	if o.ZeroS > 0 {
		for from+int64(o.ZeroS)*s < int64(o.RuntimeS)*s {
			from += int64(o.ZeroS) * s
		}
	}
	return from
}

type sbWorker struct {
	task  int32
	post  int64 // nominal time of its next post (spinning), or when it posted (queued)
	off   int64 // offset of the post in its current activation
	state uint8 // 0 spinning, 1 queued, 2 done
}

// Generate builds the workload on topo (nil: none recorded).
//
// Threads: main forks -m message threads; each forks its -t workers.
// Worker loop: spin -c, post the message thread (FUTEX_WAKE only if it
// waits), wait on its own futex. Message thread loop: take the list of
// posted workers, one timestamp, wake each (the list is a stack: last
// posted first); wait until a worker posts (if -s); spin 30 ms; usleep(s +
// U[0, s/4)). Main wakes once a second until -r. Who is in each batch is
// decided on the ideal machine; a worker the replay delays past its batch
// finds its wakeup pending and does not sleep (docs/synth.md).
func (o Schbench) Generate(topo *model.Topology) (*Result, error) { return generateInMemory(&o, topo) }

func (o Schbench) generate(b *builder) (*Result, error) {
	if o.Version == 2023 {
		return o.generate2023(b)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := b.checkSize("schbench", o.estimate(), "a shorter -r or fewer threads"); err != nil {
		return nil, err
	}
	b.w.Source = "synth: " + o.Command()
	r := &rng{s: o.Seed ^ 0x5c4bbe1c}
	R := int64(o.RuntimeS) * 1e9
	c := o.CPUTimeUS * 1000
	mspin := o.messageSpinUS() * 1000
	sys := o.SyscallNS
	res := &Result{Name: "schbench", Command: o.Command(), MeasureFromNS: o.measureFrom()}

	mainT, m0, err := schbenchMain(b, &o, sys, R)
	if err != nil {
		return nil, err
	}

	tid := int32(1001)
	for g := 0; g < o.MessageThreads; g++ {
		ws := make([]*sbWorker, 0, o.Workers)
		msg, ma, tm, d0, err := o.forkGroup(b, res, mainT, m0, g, &tid, "schbench", "schbench", sys, func(wt int32, rel int64) error {
			po := o.StartNS + c + sys
			if _, err := b.act(wt, whatif.CauseFork, rel, 0, po+sys); err != nil {
				return err
			}
			ws = append(ws, &sbWorker{task: wt, post: rel + po, off: po})
			return nil
		})
		if err != nil {
			return nil, err
		}
		var order []*sbWorker // queued, in posting order
		blockedAt := tm + d0
		if o.SleepUS == 0 {
			// The message thread never waits: one activation of batches
			// every 30 ms of spinning until the runtime is up.
			t := tm + d0
			for t < R {
				if err := o.batch(b, ws, &order, msg, ma, t-tm, t, R); err != nil {
					return nil, err
				}
				t += int64(len(order))*o.WakeNS + sys + mspin
				order = order[:0]
			}
			a := b.last(msg)
			a.DemandNS = t - tm
			a.End, a.EndState = whatif.EndExit, "X"
			for _, w := range ws {
				o.retire(b, w)
			}
			continue
		}
		for {
			// Wait for the first post after the last batch.
			var first *sbWorker
			for _, w := range ws {
				if w.state == 0 && (first == nil || w.post < first.post) {
					first = w
				}
			}
			if first == nil || first.post >= R {
				break
			}
			tp := first.post
			if tp < blockedAt {
				tp = blockedAt
			}
			a, err := b.act(msg, whatif.CauseWake, tp, tp-blockedAt, sys+mspin+sys)
			if err != nil {
				return nil, err
			}
			fa := b.nacts[first.task] - 1 // its last activation
			if err := b.edge(whatif.EdgeWake, true, first.task, fa, first.off, msg, a, first.post); err != nil {
				return nil, err
			}
			// Everyone posting until the batch is queued; only the first
			// post found the futex BLOCKED and made a wakeup.
			jitter := r.intn(o.SleepUS / 4)
			sleep := (o.SleepUS + jitter) * 1000
			ta := tp + sys + mspin + sys + sleep
			if ta >= R {
				b.last(msg).End, b.last(msg).EndState = whatif.EndExit, "X"
				break
			}
			ba, err := b.act(msg, whatif.CauseArrival, ta, sleep, 1)
			if err != nil {
				return nil, err
			}
			if err := o.batch(b, ws, &order, msg, ba, 0, ta, R); err != nil {
				return nil, err
			}
			d := sys + int64(len(order))*o.WakeNS + sys
			b.last(msg).DemandNS = d
			order = order[:0]
			blockedAt = ta + d
		}
		if a := b.last(msg); a.End != whatif.EndExit {
			a.End, a.EndState = whatif.EndExit, "X"
		}
		for _, w := range ws {
			o.retire(b, w)
		}
	}
	w, err := b.finish(R)
	if err != nil {
		return nil, err
	}
	res.Workload = w
	return res, nil
}

// batch is xlist_wake_all at offset base into the message thread's
// activation ma (absolute time t): every worker that posted by t, last
// posted first.
func (o Schbench) batch(b *builder, ws []*sbWorker, order *[]*sbWorker, msg, ma int32, base, t, R int64) error {
	*order = (*order)[:0]
	for _, w := range ws {
		if w.state == 0 && w.post <= t {
			w.state = 1
			*order = append(*order, w)
		}
	}
	q := *order
	sort.SliceStable(q, func(i, j int) bool { return q[i].post > q[j].post })
	sys := o.SyscallNS
	c := o.CPUTimeUS * 1000
	for k, w := range q {
		off := base + sys + int64(k+1)*o.WakeNS
		rel := t + sys + int64(k+1)*o.WakeNS
		// The worker was woken: it records its latency, then (before
		// the runtime is up) spins and posts again, else exits.
		var d, po int64
		if rel < R {
			po = sys + c + sys
			d = po + sys
		} else {
			d = sys
		}
		ea, err := b.act(w.task, whatif.CauseWake, rel, rel-w.post, d)
		if err != nil {
			return err
		}
		if err := b.edge(whatif.EdgeWake, true, msg, ma, off, w.task, ea, rel); err != nil {
			return err
		}
		if rel >= R {
			w.state = 2
			continue
		}
		w.state, w.post, w.off = 0, rel+po, po
	}
	return nil
}

// retire ends a worker: one still spinning at the end exits after its
// spin (its post is not generated).
func (o Schbench) retire(b *builder, w *sbWorker) {
	a := b.last(w.task)
	if w.state != 1 {
		a.End, a.EndState = whatif.EndExit, "X"
	}
}

// schbenchMain adds schbench's main thread (both versions): it forks the
// message threads, then sleeps a second at a time until the runtime is up,
// printing every -i seconds. It returns the task and its first activation
// (the one that forks).
// forkGroup forks message thread g and its workers, as both schbench
// versions do: main (activation m0) forks the message threads ForkNS
// apart; a message thread's first activation forks its workers ForkNS
// apart and runs until the last one is forked (d0). onWorker runs right
// after each worker's fork edge, with the worker and its fork time; *tid
// is the next thread id.
func (o *Schbench) forkGroup(b *builder, res *Result, mainT, m0 int32, g int, tid *int32, msgComm, workerComm string, sys int64,
	onWorker func(wt int32, forkedAt int64) error) (msg, ma int32, tm, d0 int64, err error) {
	msg = b.task(*tid, 1000, msgComm, 0)
	res.Wakers = append(res.Wakers, *tid)
	*tid++
	tm = int64(g+1) * o.ForkNS
	if err = b.edge(whatif.EdgeFork, true, mainT, m0, tm, msg, 0, tm); err != nil {
		return
	}
	b.w.Tasks[msg].Forked = true
	d0 = o.StartNS + int64(o.Workers)*o.ForkNS + sys
	ma, _ = b.act(msg, whatif.CauseFork, tm, 0, d0)
	for i := 0; i < o.Workers; i++ {
		wt := b.task(*tid, 1000, workerComm, 0)
		res.Measured = append(res.Measured, *tid)
		*tid++
		b.w.Tasks[wt].Forked = true
		fo := o.StartNS + int64(i+1)*o.ForkNS
		if err = b.edge(whatif.EdgeFork, true, msg, ma, fo, wt, 0, tm+fo); err != nil {
			return
		}
		if err = onWorker(wt, tm+fo); err != nil {
			return
		}
	}
	return
}

func schbenchMain(b *builder, o *Schbench, sys, runtimeNS int64) (mainT, m0 int32, err error) {
	mainT = b.task(1000, 1000, "schbench", 0)
	b.w.Tasks[mainT].StartRunning = true
	m0, _ = b.act(mainT, whatif.CauseStart, 0, 0, int64(o.MessageThreads)*o.ForkNS+sys)
	for k := int64(1); k*1e9 <= runtimeNS; k++ {
		d := sys
		if o.IntervalS > 0 && k%int64(o.IntervalS) == 0 {
			d += o.PrintNS
		}
		if _, err := b.act(mainT, whatif.CauseArrival, k*1e9, 1e9, d); err != nil {
			return 0, 0, err
		}
	}
	b.last(mainT).End, b.last(mainT).EndState = whatif.EndExit, "X"
	return mainT, m0, nil
}
