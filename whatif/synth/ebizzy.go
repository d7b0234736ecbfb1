package synth

import (
	"fmt"
	"math"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/whatif"
)

// Ebizzy are the options of ebizzy 0.3 as shipped in LTP
// (utils/benchmark/ebizzy-0.3; spec §7.4). Start from DefaultEbizzy.
type Ebizzy struct {
	Threads     int  // -t (0: 2 × online CPUs of the topology)
	Chunks      int  // -n (10)
	ChunkSize   int  // -s bytes (8 × 64 Ki = 524288)
	Seconds     int  // -S (10)
	AlwaysMmap  bool // -m
	NeverMmap   bool // -M
	RandomSize  bool // -R
	ByteMemcpy  bool // -l
	Linear      bool // -z
	Permissions bool // -p (prevents VMA coalescing: not modelled)
	Holes       bool // -P (same)
	TouchPages  bool // -T
	Verbose     int  // -v (output only)
	Seed        uint64

	// The machine (assumptions, docs/synth.md): copy bandwidth in bytes
	// per ns at capacity 1024, the byte-loop copy, a page fault, a
	// malloc/free pair, an mmap/munmap pair, thread creation.
	CopyBPerNS, ByteCopyBPerNS float64
	FaultNS, MallocNS, MmapNS  int64
	ForkNS                     int64
	// BlockProb is the probability that a record blocks on the mm lock
	// (-1: 0.5 with -m, 0.01 otherwise); BlockMinNS..BlockMaxNS is how
	// long.
	BlockProb              float64
	BlockMinNS, BlockMaxNS int64
}

// DefaultEbizzy is ebizzy with no flags.
func DefaultEbizzy() Ebizzy {
	return Ebizzy{Chunks: 10, ChunkSize: 8 * 64 * 1024, Seconds: 10,
		CopyBPerNS: 5, ByteCopyBPerNS: 1, FaultNS: 250, MallocNS: 200, MmapNS: 5000, ForkNS: 15000,
		BlockProb: -1, BlockMinNS: 10000, BlockMaxNS: 100000}
}

// Command is the ebizzy command line of o.
func (o Ebizzy) Command() string {
	s := fmt.Sprintf("ebizzy -t %d -n %d -s %d -S %d", o.Threads, o.Chunks, o.ChunkSize, o.Seconds)
	for _, f := range []struct {
		on bool
		s  string
	}{{o.AlwaysMmap, " -m"}, {o.NeverMmap, " -M"}, {o.RandomSize, " -R"}, {o.ByteMemcpy, " -l"}, {o.Linear, " -z"}, {o.Permissions, " -p"}, {o.Holes, " -P"}, {o.TouchPages, " -T"}} {
		if f.on {
			s += f.s
		}
	}
	return s
}

// Validate checks the options (the program's own checks, and bounds).
func (o Ebizzy) Validate() error {
	switch {
	case o.Threads < 0 || o.Threads > 65536:
		return fmt.Errorf("ebizzy -t %d: want 1..65536 threads (0: 2 × CPUs)", o.Threads)
	case o.Chunks < 1 || o.Chunks > 1<<20:
		return fmt.Errorf("ebizzy -n %d: want 1..1048576 chunks", o.Chunks)
	case o.ChunkSize < 8 || o.ChunkSize > 1<<30:
		return fmt.Errorf("ebizzy -s %d: want 8 (the record size) .. 1 GiB", o.ChunkSize)
	case o.Seconds < 1 || o.Seconds > 86400:
		return fmt.Errorf("ebizzy -S %d: want 1..86400 seconds", o.Seconds)
	case o.AlwaysMmap && o.NeverMmap:
		return fmt.Errorf("ebizzy: both -m (always mmap) and -M (never mmap)")
	case !(o.CopyBPerNS > 0) || !(o.ByteCopyBPerNS > 0) || o.FaultNS < 0 || o.MallocNS < 0 || o.MmapNS < 0 || o.ForkNS < 0:
		return fmt.Errorf("ebizzy: machine costs must be positive")
	case o.BlockProb > 1 || o.BlockProb != -1 && !(o.BlockProb >= 0):
		return fmt.Errorf("ebizzy: block probability %v: want 0..1 (or -1: default)", o.BlockProb)
	case o.BlockMinNS < 0 || o.BlockMaxNS < o.BlockMinNS:
		return fmt.Errorf("ebizzy: block length range %d..%d ns is empty", o.BlockMinNS, o.BlockMaxNS)
	}
	return nil
}

func (o Ebizzy) blockProb() float64 {
	if o.BlockProb >= 0 {
		return o.BlockProb
	}
	if o.AlwaysMmap {
		return 0.5
	}
	return 0.01
}

// recordNS is the CPU time of one record copying size bytes; first: the
// thread's first allocation (glibc's mmap threshold is still 128 KiB).
func (o Ebizzy) recordNS(size int64, first bool) int64 {
	pages := (size + 4095) / 4096
	mmapped := o.AlwaysMmap || (!o.NeverMmap && first && size > 128*1024)
	var d int64
	if mmapped {
		d += o.MmapNS + pages*o.FaultNS
	} else {
		d += o.MallocNS
	}
	switch {
	case o.TouchPages:
		d += pages * 10
	default:
		bw := o.CopyBPerNS
		if o.ByteMemcpy {
			bw = o.ByteCopyBPerNS
		}
		d += int64(float64(size) / bw)
		n := size / 8
		if o.Linear {
			d += n / 2 // a key uniform in the copy: half of it, ~1 ns a record
		} else {
			for n > 1 {
				d += 5
				n /= 2
			}
		}
	}
	return d
}

// Generate builds the workload. Main creates the threads (each
// busy-waits for the start flag), sets it, sleeps -S seconds, clears it
// and joins. A thread loops over records (a random chunk copied into a
// fresh buffer, a search, the buffer freed) until the flag is cleared;
// a record blocks with BlockProb for U[BlockMin, BlockMax] (mm-lock
// contention; an arrival after that sleep). The measured window is the
// -S seconds; records = the threads' CPU time in it / the mean record
// time.
func (o Ebizzy) Generate(topo *model.Topology) (*Result, error) { return generateInMemory(&o, topo) }

func (o Ebizzy) generate(b *builder) (*Result, error) {
	if o.Threads == 0 {
		o.Threads = 2 * onlineCPUs(b.w.Topology)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// Activations: one per block, a block per 1/p records.
	rec := float64(o.recordNS(int64(o.ChunkSize/8*8), false)) + 1
	if o.RandomSize {
		rec = rec/2 + 1
	}
	if err := b.checkSize("ebizzy", float64(o.Threads)*(float64(o.Seconds)*1e9/rec*o.blockProb()+3), "a shorter -S, fewer threads or a lower block probability"); err != nil {
		return nil, err
	}
	b.w.Source = "synth: " + o.Command()
	r := &rng{s: o.Seed ^ 0xeb122e}
	res := &Result{Name: "ebizzy", Command: o.Command()}
	const mainTID = 1000
	mt := b.task(mainTID, mainTID, "ebizzy", 0)
	b.w.Tasks[mt].StartRunning = true
	goAt := int64(o.Threads)*o.ForkNS + 1000
	m0, _ := b.act(mt, whatif.CauseStart, 0, 0, goAt)
	S := int64(o.Seconds) * 1e9
	stop := goAt + S
	if _, err := b.act(mt, whatif.CauseArrival, stop, S, 1000); err != nil {
		return nil, err
	}
	b.last(mt).End, b.last(mt).EndState = whatif.EndExit, "X"
	res.MeasureFromNS, res.MeasureToNS = goAt, stop

	// The threads draw from r one after the other (their records and
	// blocks), then the lock wakers draw from it. A first pass runs each
	// thread to its end, keeping only where its draws start, so that any
	// thread's activations can be generated again from there.
	threads := make([]ebThread, o.Threads)
	for i := range threads {
		threads[i] = o.newThread(i, goAt, stop, *r)
		th := threads[i]
		for {
			if _, ok := th.next(); !ok {
				break
			}
		}
		*r = th.r
	}
	res.RecordNS = threads[0].rc
	// Then each thread's activations and the wakeups ending its blocks
	// (lockWakers), streamed thread by thread.
	for i := range threads {
		tid := int32(mainTID + 1 + i)
		t := b.task(tid, mainTID, "ebizzy", 0)
		b.w.Tasks[t].Forked = true
		res.Measured = append(res.Measured, tid)
	}
	n := int64(o.Threads)
	for i := range threads {
		t := int32(1 + i)
		off := int64(i+1) * o.ForkNS
		if err := b.edge(whatif.EdgeFork, true, mt, m0, off, t, 0, off); err != nil {
			return nil, err
		}
		th := threads[i]
		var cursors []*ebCursor
		if n >= 2 {
			cursors = make([]*ebCursor, n)
		}
		for k := int32(0); ; k++ {
			a, ok := th.next()
			if !ok {
				break
			}
			cause := whatif.CauseArrival
			if k == 0 {
				cause = whatif.CauseFork
			}
			if _, err := b.act(t, cause, a.release, a.sleep, 1); err != nil {
				return nil, err
			}
			la := b.last(t)
			la.DemandNS = a.demand
			if a.exit {
				la.End, la.EndState = whatif.EndExit, "X"
			}
			if k == 0 || cursors == nil {
				continue
			}
			if err := o.lockWaker(b, r, threads, cursors, t, k, a.release); err != nil {
				return nil, err
			}
		}
	}
	w, err := b.finish(stop)
	if err != nil {
		return nil, err
	}
	res.Workload = w
	return res, nil
}

// ebAct is one activation of an ebizzy thread.
type ebAct struct {
	release, sleep, demand int64
	exit                   bool
}

// ebThread generates one thread's activations from its own copy of the
// random stream: busy-wait for the start flag, the first record (with
// glibc's initial mmap threshold), then records of the mean size, a
// geometric number of them (parameter p) between blocks, until the flag
// is cleared.
type ebThread struct {
	o                 *Ebizzy
	r                 rng
	p                 float64
	rc, stop          int64
	now, d, nextSleep int64
	done              bool
}

func (o Ebizzy) newThread(i int, goAt, stop int64, r rng) ebThread {
	size := int64(o.ChunkSize / 8 * 8)
	off := int64(i+1) * o.ForkNS
	rc := o.recordNS(size, false)
	if o.RandomSize {
		rc = o.recordNS((size+8)/2, false)
	}
	return ebThread{o: &o, r: r, p: o.blockProb(), rc: rc, stop: stop, now: off, d: goAt - off + o.recordNS(size, true)}
}

// next is the thread's next activation (false after its last).
func (th *ebThread) next() (ebAct, bool) {
	if th.done {
		return ebAct{}, false
	}
	rel, sl := th.now, th.nextSleep
	if th.now+th.d < th.stop {
		left := (th.stop - th.now - th.d + th.rc - 1) / th.rc // records until the flag is cleared
		k := left
		if th.p > 0 {
			if g := geometric(&th.r, th.p); g < k {
				k = g
			}
		}
		th.d += k * th.rc
		if k < left && th.now+th.d < th.stop {
			d := th.d
			s := th.o.BlockMinNS + th.r.intn(th.o.BlockMaxNS-th.o.BlockMinNS+1)
			th.now += d + s
			th.d, th.nextSleep = 0, s
			return ebAct{release: rel, sleep: sl, demand: d}, true
		}
	}
	th.done = true
	return ebAct{release: rel, sleep: sl, demand: max(th.d, 1), exit: true}, true
}

// ebCursor walks a thread's activations in time order: cur is the last
// one released before the time asked (index j, -1 none), peek the next.
type ebCursor struct {
	th      ebThread
	cur     ebAct
	j       int32
	peek    ebAct
	peekOK  bool
	started bool
}

// at returns the activation of the cursor's thread released last strictly
// before tw (index -1: none); tw must not decrease between calls.
func (c *ebCursor) at(tw int64) (ebAct, int32) {
	if !c.started {
		c.started, c.j = true, -1
		c.peek, c.peekOK = c.th.next()
	}
	for c.peekOK && c.peek.release < tw {
		c.cur, c.j = c.peek, c.j+1
		c.peek, c.peekOK = c.th.next()
	}
	return c.cur, c.j
}

// geometric draws the number of records up to and including the first
// that blocks (probability p each), at least 1.
func geometric(r *rng, p float64) int64 {
	if p >= 1 {
		return 1
	}
	u := 1 - r.float() // (0, 1]
	k := math.Floor(math.Log(u)/math.Log1p(-p)) + 1
	if k > 1e15 {
		return 1e15
	}
	return int64(k)
}

// lockWaker makes the block ending activation k of thread task a (at tw)
// end by a wakeup from the thread releasing the lock: another thread,
// chosen at random among those running (on the ideal machine) at tw,
// wakes it at that point of its own progress. A block no other thread
// can end stays a timed arrival. cursors (one per thread, made on first
// use) find the candidate's activation at tw; they only move forward, as
// tw does along thread a.
func (o Ebizzy) lockWaker(b *builder, r *rng, threads []ebThread, cursors []*ebCursor, a, k int32, tw int64) error {
	n := int64(len(threads))
	for try := 0; try < 8; try++ {
		wb := int32(1 + r.intn(n))
		if wb == a {
			continue
		}
		c := cursors[wb-1]
		if c == nil {
			c = &ebCursor{th: threads[wb-1]}
			cursors[wb-1] = c
		}
		// Strictly before tw: two blocks ending at the same instant must
		// not wake each other.
		as, j := c.at(tw)
		if j < 0 || tw >= as.release+as.demand {
			continue
		}
		b.last(a).Cause = whatif.CauseWake
		return b.edge(whatif.EdgeWake, true, wb, j, tw-as.release, a, k, tw)
	}
	return nil
}
