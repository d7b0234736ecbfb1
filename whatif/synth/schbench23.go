package synth

import (
	"fmt"
	"math"
	"sort"

	"github.com/schedreplay/replay/whatif"
)

// DefaultSchbench2023 is the 2023+ rewrite of schbench (masoncl/schbench
// HEAD; spec §7.2) with no flags: one message thread, -t the CPUs per
// message thread, a request = usleep(100 us) then 5 naive
// multiplications of three matrices filling 256 KiB, under the CPU's
// lock; 30 s, no warmup.
func DefaultSchbench2023() Schbench {
	return Schbench{Version: 2023, MessageThreads: 1, Workers: 0, SleepUS: 100, RuntimeS: 30, WarmupS: 0, IntervalS: 10,
		Operations: 5, FootprintKB: 256, MACps: 1000, RequestNS: 200,
		ForkNS: 15000, StartNS: 5000, WakeNS: 2000, SyscallNS: 1000, PrintNS: 50000}
}

// rpsBatch is the program's bound on a worker's queued requests: past it
// the -R message thread sleeps 100 us and drops the request.
const rpsBatch = 128

func (o Schbench) command2023() string {
	s := fmt.Sprintf("schbench --version 2023 -m %d -t %d -s %d -n %d -F %d -r %d -w %d -i %d", o.MessageThreads, o.Workers, o.SleepUS, o.Operations, o.FootprintKB, o.RuntimeS, o.WarmupS, o.IntervalS)
	if o.ZeroS > 0 {
		s += fmt.Sprintf(" -z %d", o.ZeroS)
	}
	if o.NoLocking {
		s += " -L"
	}
	if o.RPS > 0 {
		s += fmt.Sprintf(" -R %d", o.RPS)
	}
	if o.AutoRPS != 0 {
		s += fmt.Sprintf(" -A %d", o.AutoRPS)
	}
	if o.MACps != 1000 {
		s += fmt.Sprintf(" --mac-ps %d", o.MACps)
	}
	return s
}

// matrixSize is the program's: the side of three square matrices of
// 8-byte elements filling -F KiB, sqrt(F*1024/3/8) truncated.
func (o Schbench) matrixSize() int64 {
	return int64(math.Sqrt(float64(int64(o.FootprintKB) * 1024 / 3 / 8)))
}

// workNS is one request's do_work at capacity 1024: -n multiplications
// of size³ multiply-adds each.
func (o Schbench) workNS() int64 {
	m := o.matrixSize()
	return int64(o.Operations) * m * m * m * o.MACps / 1000
}

func (o Schbench) validate2023() error {
	switch {
	case o.CPUTimeUS != 0 || o.MessageCPUUS != 0 || o.FixC:
		return fmt.Errorf("schbench --version 2023: -c, -C (message_cputime) and --fix-C belong to the 2020 version; the rewrite's work is -n operations over -F KiB (its -C is --calibrate, which is not generated)")
	case o.MessageThreads < 1 || o.MessageThreads > 1024:
		return fmt.Errorf("schbench -m %d: want 1..1024 message threads", o.MessageThreads)
	case o.Workers < 0 || o.Workers > 4096:
		return fmt.Errorf("schbench -t %d: want 1..4096 workers per message thread (0: the topology's CPUs / -m)", o.Workers)
	case o.SleepUS < 0 || o.SleepUS > 60e6:
		return fmt.Errorf("schbench -s %d: want 0..60000000 us", o.SleepUS)
	case o.Operations < 0 || o.Operations > 1e6:
		return fmt.Errorf("schbench -n %d: want 0..1000000 operations", o.Operations)
	case o.FootprintKB < 0 || o.FootprintKB > 1<<20:
		return fmt.Errorf("schbench -F %d: want 0..1048576 KiB", o.FootprintKB)
	case o.MACps < 0 || o.MACps > 1e6:
		return fmt.Errorf("schbench --mac-ps %d: want 0..1000000 ps per multiply-add", o.MACps)
	case o.RuntimeS == 0:
		return fmt.Errorf("schbench -r 0 runs forever, which cannot be generated: give the seconds to simulate with -r N")
	case o.RuntimeS < 0 || o.RuntimeS > 86400:
		return fmt.Errorf("schbench -r %d: want 1..86400 seconds", o.RuntimeS)
	case o.WarmupS < 0 || o.IntervalS < 0 || o.ZeroS < 0:
		return fmt.Errorf("schbench: -w, -i and -z must not be negative")
	case o.RPS < 0 || o.RPS > 10_000_000:
		return fmt.Errorf("schbench -R %d: want 0..10000000 requests per second", o.RPS)
	case o.AutoRPS != 0:
		return fmt.Errorf("schbench -A %d: auto-RPS raises -R each second from the machine's busy time in /proc/stat, a feedback from the real schedule that a workload generated beforehand cannot follow; give a fixed rate with -R", o.AutoRPS)
	case o.ForkNS < 0 || o.StartNS < 0 || o.WakeNS < 0 || o.SyscallNS < 0 || o.PrintNS < 0 || o.RequestNS < 0:
		return fmt.Errorf("schbench: costs must not be negative")
	}
	if w := float64(o.Operations) * math.Pow(float64(o.matrixSize()), 3) * float64(o.MACps) / 1000; w > 600e9 {
		return fmt.Errorf("schbench -n %d -F %d: %.0f s of CPU per request; want at most 600 s", o.Operations, o.FootprintKB, w/1e9)
	}
	if o.SleepUS == 0 && o.workNS() == 0 && o.SyscallNS == 0 {
		return fmt.Errorf("schbench -s 0 with no work (-n 0 or a tiny -F) and zero syscall cost: the workers would loop without time passing")
	}
	if o.RPS > 0 && o.RequestNS == 0 && o.WakeNS == 0 {
		return fmt.Errorf("schbench -R with zero request and wakeup costs: the message thread would queue requests without time passing")
	}
	return nil
}

// estimate2023 is about how many activations and edges generate2023
// builds (-t resolved).
func (o Schbench) estimate2023() float64 {
	R := float64(o.RuntimeS)
	loop := float64(o.SleepUS*1000+o.workNS()+4*o.SyscallNS) + 1
	m, t := float64(o.MessageThreads), float64(o.Workers)
	if o.RPS > 0 {
		return R*float64(o.RPS)*3 + m*(t+3*R) + R
	}
	return m*t*(R*1e9/loop*4+2) + R
}

// measureFrom2023 is when the printed stats start: the rewrite drops the
// warmup below 30 s of runtime and in -R mode (its warmup reset is not
// done there), then zeroes every -z seconds.
func (o Schbench) measureFrom2023() int64 {
	c := o
	if o.RuntimeS < 30 || o.RPS > 0 {
		c.WarmupS = 0
	}
	return c.measureFrom()
}

// sb23Worker is a worker of the post/wake protocol on the ideal machine.
type sb23Worker struct {
	task  int32
	post  int64 // busy: when it posts; queued: when it posted
	off   int64 // offset of the post in its last activation
	state uint8 // 0 busy until post, 1 queued (posted, waiting), 2 exits
}

// generate2023 builds the rewrite's workload.
//
// Threads: main creates -m message threads ("schbench-msg"); each
// creates its -t workers ("schbench-worker"). Worker loop: post (put
// itself on its message thread's list, FUTEX_WAKE it only if it waits),
// wait to be woken; then a request: usleep(-s), do_work (-n
// multiplications over -F KiB, under its CPU's lock unless -L), and post
// again. Message thread loop: take the list, one timestamp, wake each
// listed worker (last posted first), then wait for a post — no think
// time; if a worker posted while it was waking, it goes round at once.
// With -R the message thread instead queues -R/-m requests a second
// round-robin on its workers, waking those that wait (and sleeping 100
// us instead of queuing on a worker with more than 128 pending), then
// sleeps out the second; a worker takes all its queued requests, runs
// them (usleep, do_work each), and waits when it finds none.
func (o Schbench) generate2023(b *builder) (*Result, error) {
	if o.Workers == 0 {
		n := onlineCPUs(b.w.Topology)
		o.Workers = (n + o.MessageThreads - 1) / o.MessageThreads
	}
	if err := o.validate2023(); err != nil {
		return nil, err
	}
	if err := b.checkSize("schbench", o.estimate2023(), "a shorter -r, a lower -R or fewer threads"); err != nil {
		return nil, err
	}
	b.w.Source = "synth: " + o.Command()
	R := int64(o.RuntimeS) * 1e9
	sys := o.SyscallNS
	res := &Result{Name: "schbench", Command: o.Command(), MeasureFromNS: o.measureFrom2023(), StampEachWake: o.RPS > 0}

	mainT, m0, err := schbenchMain(b, &o, sys, R)
	if err != nil {
		return nil, err
	}

	tid := int32(1001)
	for g := 0; g < o.MessageThreads; g++ {
		tasks := make([]int32, 0, o.Workers)
		msg, ma, tm, d0, err := o.forkGroup(b, res, mainT, m0, g, &tid, "schbench-msg", "schbench-worker", sys, func(wt int32, _ int64) error {
			tasks = append(tasks, wt)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if o.RPS > 0 {
			err = o.rpsLoop(b, msg, tasks, tm, tm+d0, R)
		} else {
			err = o.postLoop(b, msg, ma, tasks, tm, tm+d0, R)
		}
		if err != nil {
			return nil, err
		}
	}
	w, err := b.finish(R)
	if err != nil {
		return nil, err
	}
	res.Workload = w
	return res, nil
}

// request plans a worker's request from its activation act (released at
// at, demand so far pre): usleep(-s) ends it, a timer activation runs
// do_work and posts. It returns the post's time and offset in the last
// activation, or exit (the runtime is up at the post: the worker leaves
// instead of posting) with the last activation ended.
func (o Schbench) request(b *builder, t int32, at, pre, R int64) (post, off int64, exit bool, err error) {
	sys, W := o.SyscallNS, o.workNS()
	if s := o.SleepUS * 1000; s > 0 {
		b.last(t).DemandNS = pre + sys
		at += pre + sys + s
		if _, err := b.act(t, whatif.CauseArrival, at, s, 1); err != nil {
			return 0, 0, false, err
		}
		pre = 0
	}
	off = pre + W + sys
	if at+off >= R {
		a := b.last(t)
		a.DemandNS = max(pre+W, 1)
		a.End, a.EndState = whatif.EndExit, "X"
		return 0, 0, true, nil
	}
	b.last(t).DemandNS = off + sys // post, then wait on its futex
	return at + off, off, false, nil
}

// postLoop is the message thread's loop and its workers' (no -R), from
// t0 when the message thread, in its activation ma released at tm, has
// created its workers.
func (o Schbench) postLoop(b *builder, msg, ma int32, tasks []int32, tm, t0, R int64) error {
	sys := o.SyscallNS
	ws := make([]*sb23Worker, len(tasks))
	for i, t := range tasks {
		rel := tm + o.StartNS + int64(i+1)*o.ForkNS
		if _, err := b.act(t, whatif.CauseFork, rel, 0, 1); err != nil {
			return err
		}
		w := &sb23Worker{task: t, off: o.StartNS + sys}
		w.post = rel + w.off
		if w.post >= R {
			a := b.last(t)
			a.DemandNS, a.End, a.EndState = max(o.StartNS, 1), whatif.EndExit, "X"
			w.state = 2
		} else {
			b.last(t).DemandNS = w.off + sys
		}
		ws[i] = w
	}
	ra, t := tm, t0
	var order []*sb23Worker
	for {
		if t >= R {
			a := b.last(msg)
			a.DemandNS, a.End, a.EndState = t-ra, whatif.EndExit, "X"
			break
		}
		// Splice the list at t and wake it, last posted first.
		order = order[:0]
		for _, w := range ws {
			if w.state == 0 && w.post <= t {
				w.state = 1
				order = append(order, w)
			}
		}
		sort.SliceStable(order, func(i, j int) bool { return order[i].post > order[j].post })
		for k, w := range order {
			rel := t + sys + int64(k+1)*o.WakeNS
			if err := o.wake23(b, w, msg, ma, rel-ra, rel, R); err != nil {
				return err
			}
		}
		tEnd := t + sys + int64(len(order))*o.WakeNS
		again := false
		for _, w := range ws {
			if w.state == 0 && w.post > t && w.post <= tEnd {
				again = true // it found the futex BLOCKED: fwait returns at once
			}
		}
		if again {
			t = tEnd + sys
			continue
		}
		blockedAt := tEnd + sys
		b.last(msg).DemandNS = blockedAt - ra
		var first *sb23Worker
		for _, w := range ws {
			if w.state == 0 && (first == nil || w.post < first.post) {
				first = w
			}
		}
		if first == nil || first.post >= R {
			b.last(msg).End, b.last(msg).EndState = whatif.EndExit, "X"
			break
		}
		tp := max(first.post, blockedAt)
		var err error
		if ma, err = b.act(msg, whatif.CauseWake, tp, tp-blockedAt, 1); err != nil {
			return err
		}
		if err := b.edge(whatif.EdgeWake, true, first.task, b.nacts[first.task]-1, first.off, msg, ma, first.post); err != nil {
			return err
		}
		ra, t = tp, tp+sys
	}
	// Workers still waiting at the end (posted) are woken by the
	// shutdown, which is not generated: their last activation ends in a
	// sleep.
	return nil
}

// wake23 is the message thread (activation ma, at offset off) waking
// worker w at rel: its latency is sampled, then it runs a request, or
// leaves if the runtime is up.
func (o Schbench) wake23(b *builder, w *sb23Worker, msg, ma int32, off, rel, R int64) error {
	sys := o.SyscallNS
	ea, err := b.act(w.task, whatif.CauseWake, rel, rel-w.post, 1)
	if err != nil {
		return err
	}
	if err := b.edge(whatif.EdgeWake, true, msg, ma, off, w.task, ea, rel); err != nil {
		return err
	}
	if rel >= R {
		a := b.last(w.task)
		a.DemandNS, a.End, a.EndState = max(sys, 1), whatif.EndExit, "X"
		w.state = 2
		return nil
	}
	post, poff, exit, err := o.request(b, w.task, rel, sys, R)
	if err != nil {
		return err
	}
	if exit {
		w.state = 2
		return nil
	}
	w.state, w.post, w.off = 0, post, poff
	return nil
}

// rpsWorker is a worker of the -R protocol on the ideal machine.
type rpsWorker struct {
	task       int32
	blocked    bool
	exited     bool
	blockAt    int64 // when it blocked
	actAt      int64 // release of its last activation
	nextSplice int64 // busy: when it next takes its queued requests
	queue      []int64
	pending    int // requests queued since it last looked
}

// rpsLoop is the -R message thread's loop and its workers'.
func (o Schbench) rpsLoop(b *builder, msg int32, tasks []int32, tm, t0, R int64) error {
	sys := o.SyscallNS
	nreq := o.RPS / o.MessageThreads
	ws := make([]*rpsWorker, len(tasks))
	for i, t := range tasks {
		rel := tm + o.StartNS + int64(i+1)*o.ForkNS
		if _, err := b.act(t, whatif.CauseFork, rel, 0, 1); err != nil {
			return err
		}
		ws[i] = &rpsWorker{task: t, actAt: rel, nextSplice: rel + o.StartNS + sys}
	}
	ra, t := tm, t0
	cur := 0
	for t < R {
		start := t
		for i := 0; i < nreq && t < R; i++ {
			w := ws[cur%len(ws)]
			cur++
			if err := o.advance(b, w, t, R); err != nil {
				return err
			}
			if w.pending > rpsBatch {
				// usleep(100) and drop the request.
				b.last(msg).DemandNS = t + sys - ra
				at := t + sys + 100000
				if _, err := b.act(msg, whatif.CauseArrival, at, 100000, 1); err != nil {
					return err
				}
				ra, t = at, at
				continue
			}
			w.pending++
			at := t + o.RequestNS
			w.queue = append(w.queue, at)
			t = at
			if w.blocked && !w.exited {
				// fpost finds it waiting: FUTEX_WAKE.
				ea, err := b.act(w.task, whatif.CauseWake, at, at-w.blockAt, 1)
				if err != nil {
					return err
				}
				if err := b.edge(whatif.EdgeWake, true, msg, b.nacts[msg]-1, at-ra, w.task, ea, at); err != nil {
					return err
				}
				// It samples its latency, then looks for its requests.
				w.blocked, w.actAt, w.nextSplice = false, at, at+sys
				t += o.WakeNS
			}
		}
		// Sleep out the second.
		if end := start + 1e9; t+sys < end && t < R {
			b.last(msg).DemandNS = t + sys - ra
			if _, err := b.act(msg, whatif.CauseArrival, end, end-t-sys, 1); err != nil {
				return err
			}
			ra, t = end, end
		}
	}
	a := b.last(msg)
	a.DemandNS, a.End, a.EndState = max(t-ra, 1), whatif.EndExit, "X"
	// The workers finish what they took; the next look finds the runtime
	// up and they leave (those waiting are woken by the shutdown, which is
	// not generated).
	for _, w := range ws {
		if err := o.advance(b, w, math.MaxInt64, R); err != nil {
			return err
		}
	}
	return nil
}

// advance runs worker w on the ideal machine up to time t: each time it
// looks (msg_and_wait) it takes the requests queued by then and runs
// them, or posts and waits if there are none, or leaves once the runtime
// is up.
func (o Schbench) advance(b *builder, w *rpsWorker, t, R int64) error {
	sys, W := o.SyscallNS, o.workNS()
	for !w.blocked && !w.exited && w.nextSplice <= t {
		ts := w.nextSplice
		if ts >= R {
			a := b.last(w.task)
			a.DemandNS, a.End, a.EndState = max(ts-w.actAt, 1), whatif.EndExit, "X"
			w.exited = true
			return nil
		}
		w.pending = 0
		k := 0
		for k < len(w.queue) && w.queue[k] <= ts {
			k++
		}
		w.queue = w.queue[:copy(w.queue, w.queue[k:])]
		if k == 0 {
			// Post the message thread (it never waits in -R mode) and wait.
			d := ts - w.actAt + 2*sys
			b.last(w.task).DemandNS = d
			w.blocked, w.blockAt = true, w.actAt+d
			return nil
		}
		c := ts + sys
		for ; k > 0; k-- {
			if s := o.SleepUS * 1000; s > 0 {
				b.last(w.task).DemandNS = c + sys - w.actAt
				at := c + sys + s
				if _, err := b.act(w.task, whatif.CauseArrival, at, s, 1); err != nil {
					return err
				}
				w.actAt, c = at, at
			}
			c += W
		}
		b.last(w.task).DemandNS = max(c+sys-w.actAt, 1)
		w.nextSplice = c + sys
	}
	return nil
}
