package synth

import (
	"fmt"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

// Hackbench are the options of rt-tests hackbench (spec §7.3; `perf
// bench sched messaging` is the same program). Start from
// DefaultHackbench.
type Hackbench struct {
	Groups   int  // -g (10)
	FDs      int  // -f receivers and senders per group (20)
	Loops    int  // -l (100)
	DataSize int  // -s bytes per message (100)
	Pipe     bool // -p/--pipe: pipes instead of AF_UNIX SOCK_STREAM socketpairs
	Threads  bool // -T/--threads: threads instead of processes
	FIFO     bool // -F/--fifo: the parent runs SCHED_FIFO priority 1 (after forking)
	Seed     uint64

	// Costs at capacity 1024 (assumptions, docs/synth.md): one write
	// (copy + waking the receiver), one read, a fork or thread creation in
	// the parent, a child's start-up.
	WriteNS, ReadNS, ForkNS, StartNS int64
	// BufferMsgs is how many unread messages a receiver's socket or pipe
	// holds before a sender blocks (0: from DataSize and the buffer
	// type; docs/synth.md).
	BufferMsgs int
}

// DefaultHackbench is hackbench with no flags.
func DefaultHackbench() Hackbench {
	return Hackbench{Groups: 10, FDs: 20, Loops: 100, DataSize: 100, WriteNS: 3000, ReadNS: 2000, ForkNS: 50000, StartNS: 10000}
}

// Command is the hackbench command line of o.
func (o Hackbench) Command() string {
	s := fmt.Sprintf("hackbench -g %d -f %d -l %d -s %d", o.Groups, o.FDs, o.Loops, o.DataSize)
	if o.Pipe {
		s += " --pipe"
	}
	if o.Threads {
		s += " --threads"
	}
	if o.FIFO {
		s += " --fifo"
	}
	return s
}

// Validate checks the options.
func (o Hackbench) Validate() error {
	switch {
	case o.Groups < 1 || o.Groups > 100000:
		return fmt.Errorf("hackbench -g %d: want 1..100000 groups", o.Groups)
	case o.FDs < 1 || o.FDs > 1000:
		return fmt.Errorf("hackbench -f %d: want 1..1000 fds", o.FDs)
	case o.Loops < 1 || o.Loops > 100000000:
		return fmt.Errorf("hackbench -l %d: want 1..100000000 loops", o.Loops)
	case o.DataSize < 1 || o.DataSize > 1<<20:
		return fmt.Errorf("hackbench -s %d: want 1..1048576 bytes", o.DataSize)
	case o.WriteNS < 1 || o.ReadNS < 1 || o.ForkNS < 0 || o.StartNS < 0 || o.BufferMsgs < 0:
		return fmt.Errorf("hackbench: write and read costs must be positive, others not negative")
	}
	// Each message is a receiver activation and a wake edge, plus (once
	// the buffer can fill) a sender activation and an edge.
	return nil
}

// bufferMsgs is the number of messages a receiver's buffer takes: a pipe
// holds 16 pages and small writes merge into the last page; a unix
// stream socket charges each write an skb (data + about 768 bytes of
// sk_buff and skb_shared_info) against the 212992-byte wmem default.
func (o Hackbench) bufferMsgs() int {
	if o.BufferMsgs > 0 {
		return o.BufferMsgs
	}
	if o.Pipe {
		per := 4096 / o.DataSize
		if per < 1 {
			return 1 + 16*4096/o.DataSize
		}
		return 16 * per
	}
	n := 212992 / (o.DataSize + 768)
	if n < 1 {
		n = 1
	}
	return n
}

// Generate builds the workload. The parent forks, per group, -f
// receivers then -f senders; each child writes a byte to the ready pipe
// and polls the wake fd; the parent, once all are ready, writes the go
// byte (one write wakes every poller) and waits. Sender: for each loop,
// for each receiver of its group, write DataSize bytes. Receiver: read
// f × l messages. Every message is a receiver activation started by the
// write (pending — read without sleeping — when the data is already
// there in the replay), and each write beyond the buffer waits for the
// read that makes room (a sender activation started by that read). The
// order of the messages in each receiver's stream is the ideal machine's.
func (o Hackbench) Generate(topo *model.Topology) (*Result, error) { return generateInMemory(&o, topo) }

func (o Hackbench) generate(b *builder) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	msgs := float64(o.Groups) * float64(o.FDs) * float64(o.FDs) * float64(o.Loops)
	if err := b.checkSize("hackbench", 4*msgs, "a lower -l or -g"); err != nil {
		return nil, err
	}
	b.w.Source = "synth: " + o.Command()
	res := &Result{Name: "hackbench", Command: o.Command()}
	const mainTID = 1000
	parent := b.task(mainTID, mainTID, "hackbench", 0)
	b.w.Tasks[parent].StartRunning = true
	if o.FIFO {
		// The model has one priority per task: FIFO priority 1 is kernel
		// prio 98, from the start rather than after the forks.
		b.w.Tasks[parent].Prio = 98
	}
	f, g, l := o.FDs, o.Groups, o.Loops
	nChild := 2 * f * g
	p0, _ := b.act(parent, whatif.CauseStart, 0, 0, int64(nChild)*o.ForkNS+1000)
	recv := make([]int32, f*g)
	send := make([]int32, f*g)
	tid := int32(mainTID + 1)
	readyEnd := int64(0)
	var lastReady int32 = -1
	k := 0
	for gi := 0; gi < g; gi++ {
		for pass := 0; pass < 2; pass++ {
			for j := 0; j < f; j++ {
				pid := tid
				if o.Threads {
					pid = mainTID
				}
				name := "hackbench"
				t := b.task(tid, pid, name, 0)
				b.w.Tasks[t].Forked = true
				res.Measured = append(res.Measured, tid)
				tid++
				off := int64(k+1) * o.ForkNS
				k++
				if err := b.edge(whatif.EdgeFork, true, parent, p0, off, t, 0, off); err != nil {
					return nil, err
				}
				// Start-up, then the ready byte, then poll (block).
				if _, err := b.act(t, whatif.CauseFork, off, 0, o.StartNS+o.WriteNS); err != nil {
					return nil, err
				}
				if e := off + o.StartNS + o.WriteNS; e >= readyEnd {
					readyEnd, lastReady = e, t
				}
				if pass == 0 {
					recv[gi*f+j] = t
				} else {
					send[gi*f+j] = t
				}
			}
		}
	}
	// The parent reads the ready bytes (the last one wakes it), writes the
	// go byte and waits for its children.
	goAt := readyEnd
	if e := int64(nChild)*o.ForkNS + 1000; goAt < e {
		goAt = e
	}
	ga, err := b.act(parent, whatif.CauseWake, goAt, goAt-int64(nChild)*o.ForkNS-1000, o.ReadNS+o.WriteNS+int64(nChild)*500)
	if err != nil {
		return nil, err
	}
	if err := b.edge(whatif.EdgeWake, true, lastReady, 0, o.StartNS+o.WriteNS, parent, ga, readyEnd); err != nil {
		return nil, err
	}
	for i := 0; i < nChild; i++ {
		t := recv[i%(f*g)]
		if i >= f*g {
			t = send[i-f*g]
		}
		off := o.ReadNS + o.WriteNS + int64(i)*500
		d := int64(1000) // poll returns; a receiver then blocks in read
		if err := b.edge(whatif.EdgeWake, true, parent, ga, off, t, 1, goAt+off); err != nil {
			return nil, err
		}
		if _, err := b.act(t, whatif.CauseWake, goAt+off, goAt+off-readyEnd, d); err != nil {
			return nil, err
		}
	}
	cap := o.bufferMsgs()
	// Per group: the ideal machine runs every sender at once, so at step
	// i*f+j every sender writes its message to receiver j; the stream of
	// receiver j is ordered (step, sender).
	for gi := 0; gi < g; gi++ {
		// sender state: current activation and its demand so far.
		sAct := make([]int32, f)
		sDem := make([]int64, f)
		for s := 0; s < f; s++ {
			sAct[s] = 1
			sDem[s] = b.last(send[gi*f+s]).DemandNS // its activation 1, the go wakeup
		}
		// rRead[j][q % ring]: receiver j's activation reading its message q,
		// kept for the last ring messages (a write waits for the read
		// cap messages back).
		ring := min(cap, f*l)
		rRead := make([][]int32, f)
		for j := range rRead {
			rRead[j] = make([]int32, ring)
		}
		streamN := make([]int, f)
		for i := 0; i < l; i++ {
			for j := 0; j < f; j++ {
				rt := recv[gi*f+j]
				for s := 0; s < f; s++ {
					st := send[gi*f+s]
					q := streamN[j]
					streamN[j]++
					// Room in the buffer: read q-cap must have happened.
					if q >= cap {
						// The sender's write starts a new activation woken by
						// receiver j's read of message q-cap.
						b.last(st).DemandNS = sDem[s] // activation sAct[s]
						nt := goAt + int64(1+i*f+j)*o.WriteNS
						na, err := b.act(st, whatif.CauseWake, nt, 0, 1)
						if err != nil {
							return nil, err
						}
						ra := rRead[j][(q-cap)%ring]
						if err := b.edge(whatif.EdgeWake, true, rt, ra, o.ReadNS, st, na, nt); err != nil {
							return nil, err
						}
						sAct[s], sDem[s] = na, 0
					}
					sDem[s] += o.WriteNS
					// The write wakes the receiver for its read of message q.
					nt := goAt + int64(1+i*f+j)*o.WriteNS
					ra, err := b.act(rt, whatif.CauseWake, nt, 0, o.ReadNS)
					if err != nil {
						return nil, err
					}
					rRead[j][q%ring] = ra
					if err := b.edge(whatif.EdgeWake, true, st, sAct[s], sDem[s], rt, ra, nt); err != nil {
						return nil, err
					}
				}
			}
		}
		for s := 0; s < f; s++ {
			st := send[gi*f+s]
			a := b.last(st) // activation sAct[s]
			a.DemandNS = sDem[s]
			a.End, a.EndState = whatif.EndExit, "X"
		}
		for j := 0; j < f; j++ {
			a := b.last(recv[gi*f+j])
			a.End, a.EndState = whatif.EndExit, "X"
		}
	}
	w, err := b.finish(0)
	if err != nil {
		return nil, err
	}
	res.Workload = w
	return res, nil
}
