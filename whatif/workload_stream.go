package whatif

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedreplay/replay/model"
)

// DefaultStreamBatch is how many activations (and, separately, edges) a
// WorkloadWriter holds in memory before it sorts them and spills them to
// disk.
const DefaultStreamBatch = 1 << 16

// WorkloadWriter writes a workload file from its activations and edges
// given one at a time, in any order, with memory bounded by the batch and
// the number of tasks rather than by the number of activations: a
// generator streams a long run into it. Finish writes the same bytes
// SaveWorkload writes for the same workload.
//
// How: activations and edges are sorted externally (batches sorted in
// memory, spilled as runs to unlinked temporary files, merged); the merge
// writes each column of the file's one record batch to its own temporary
// file; those are mapped into memory (mmap: the kernel pages them in and
// out, they are not Go heap) and handed to the Arrow IPC writer as the
// column buffers. The temporary files go in the directory given (the
// output's, by default: /tmp may be a RAM file system) and are removed
// when Finish or Close returns.
type WorkloadWriter struct {
	dir    string
	acts   *extSorter[streamAct]
	edges  *extSorter[streamEdge]
	causal *extSorter[actKey]
	seq    int64
	nActs  int64
	nEdges int64
}

type actKey struct{ task, act int32 }

func cmpActKey(a, b *actKey) int {
	if c := cmp.Compare(a.task, b.task); c != 0 {
		return c
	}
	return cmp.Compare(a.act, b.act)
}

type streamAct struct {
	key actKey
	a   Activation
}

type streamEdge struct {
	seq int64
	e   Edge
}

// cmpEdge is Workload.Edges' order: (Waker, WakerAct, OffsetNS, TimeNS),
// ties in the order added (the stable sort of the in-memory path).
func cmpEdge(a, b *streamEdge) int {
	x, y := &a.e, &b.e
	if c := cmp.Compare(x.Waker, y.Waker); c != 0 {
		return c
	}
	if c := cmp.Compare(x.WakerAct, y.WakerAct); c != 0 {
		return c
	}
	if c := cmp.Compare(x.OffsetNS, y.OffsetNS); c != 0 {
		return c
	}
	if c := cmp.Compare(x.TimeNS, y.TimeNS); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

func encAct(dst []byte, v *streamAct) []byte {
	a := &v.a
	dst = binary.AppendVarint(dst, int64(v.key.task))
	dst = binary.AppendVarint(dst, int64(v.key.act))
	dst = binary.AppendVarint(dst, a.DemandNS)
	var flags byte // bit 0 TickSoftIRQ, bit 1 Untraced
	if a.TickSoftIRQ {
		flags |= 1
	}
	if a.Untraced {
		flags |= 2
	}
	dst = append(dst, byte(a.Cause), byte(a.End), flags, byte(a.IRQ))
	dst = binary.AppendVarint(dst, a.ReleaseNS)
	dst = binary.AppendVarint(dst, a.SleepNS)
	dst = binary.AppendVarint(dst, int64(a.CPU))
	// The activation's own prio, +1 (0: none).
	p := int64(0)
	if a.OwnPrio {
		p = int64(a.Prio) + 1
	}
	dst = binary.AppendVarint(dst, p)
	dst = binary.AppendVarint(dst, int64(a.IRQCPUPlus1))
	dst = binary.AppendUvarint(dst, uint64(len(a.EndState)))
	return append(dst, a.EndState...)
}

// varints reads n varints from r.
func varints(r *bufio.Reader, out ...*int64) error {
	for _, p := range out {
		v, err := binary.ReadVarint(r)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		*p = v
	}
	return nil
}

// endStates interns the common end states (the decoder would otherwise
// allocate a string per activation).
var endStates = map[string]string{"S": "S", "X": "X", "Z": "Z", "D": "D", "": ""}

func decAct(r *bufio.Reader, v *streamAct) error {
	var task, act, cpu, prio int64
	a := &v.a
	*a = Activation{}
	if err := varints(r, &task, &act, &a.DemandNS); err != nil {
		return err
	}
	var ce [4]byte
	if _, err := io.ReadFull(r, ce[:]); err != nil {
		return err
	}
	a.Cause, a.End, a.TickSoftIRQ, a.Untraced, a.IRQ = Cause(ce[0]), End(ce[1]), ce[2]&1 != 0, ce[2]&2 != 0, IRQContext(ce[3])
	var irq int64
	if err := varints(r, &a.ReleaseNS, &a.SleepNS, &cpu, &prio, &irq); err != nil {
		return err
	}
	a.IRQCPUPlus1 = irqCPUPlus1(irq > 0, irq-1)
	if prio > 0 {
		a.Prio, a.OwnPrio = int32(prio-1), true
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > 0 {
		var small [8]byte
		var b []byte
		if n <= uint64(len(small)) {
			b = small[:n]
		} else {
			b = make([]byte, n)
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		if s, ok := endStates[string(b)]; ok {
			a.EndState = s
		} else {
			a.EndState = string(b)
		}
	}
	v.key, a.CPU = actKey{int32(task), int32(act)}, int32(cpu)
	return nil
}

func encEdge(dst []byte, v *streamEdge) []byte {
	e := &v.e
	dst = binary.AppendVarint(dst, v.seq)
	var flags byte
	if e.Causal {
		flags |= 1
	}
	if e.Sync {
		flags |= 2
	}
	if e.Awaits {
		flags |= 4
	}
	if e.Raced {
		flags |= 8
	}
	if e.Charged {
		flags |= 16
	}
	if e.EnqueueAfterStall {
		flags |= 32
	}
	dst = append(dst, byte(e.Kind), flags)
	for _, x := range []int64{int64(e.Waker), int64(e.WakerAct), e.OffsetNS, int64(e.Wakee), int64(e.WakeeAct), e.TimeNS, int64(e.WakerCPU), int64(e.Target), e.NoPreemptNS} {
		dst = binary.AppendVarint(dst, x)
	}
	return dst
}

func decEdge(r *bufio.Reader, v *streamEdge) error {
	e := &v.e
	*e = Edge{}
	if err := varints(r, &v.seq); err != nil {
		return err
	}
	var kf [2]byte
	if _, err := io.ReadFull(r, kf[:]); err != nil {
		return err
	}
	e.Kind, e.Causal, e.Sync, e.Awaits, e.Raced, e.Charged = EdgeKind(kf[0]), kf[1]&1 != 0, kf[1]&2 != 0, kf[1]&4 != 0, kf[1]&8 != 0, kf[1]&16 != 0
	e.EnqueueAfterStall = kf[1]&32 != 0
	var waker, wakerAct, wakee, wakeeAct, wcpu, target int64
	if err := varints(r, &waker, &wakerAct, &e.OffsetNS, &wakee, &wakeeAct, &e.TimeNS, &wcpu, &target, &e.NoPreemptNS); err != nil {
		return err
	}
	e.Waker, e.WakerAct, e.Wakee, e.WakeeAct, e.WakerCPU, e.Target = int32(waker), int32(wakerAct), int32(wakee), int32(wakeeAct), int32(wcpu), int32(target)
	return nil
}

func encKey(dst []byte, v *actKey) []byte {
	dst = binary.AppendVarint(dst, int64(v.task))
	return binary.AppendVarint(dst, int64(v.act))
}

func decKey(r *bufio.Reader, v *actKey) error {
	var t, a int64
	if err := varints(r, &t, &a); err != nil {
		return err
	}
	v.task, v.act = int32(t), int32(a)
	return nil
}

// NewWorkloadWriter starts a workload file. dir holds the temporary files
// ("": the system's temporary directory); batch is how many activations
// (and edges) are held in memory before a spill (<= 0: DefaultStreamBatch).
func NewWorkloadWriter(dir string, batch int) *WorkloadWriter {
	if batch <= 0 {
		batch = DefaultStreamBatch
	}
	return &WorkloadWriter{dir: dir,
		acts:   newExtSorter(dir, batch, func(a, b *streamAct) int { return cmpActKey(&a.key, &b.key) }, encAct, decAct),
		edges:  newExtSorter(dir, batch, cmpEdge, encEdge, decEdge),
		causal: newExtSorter(dir, batch, cmpActKey, encKey, decKey),
	}
}

// AddActivation adds activation number act of task (EdgeLo, EdgeHi are
// ignored: Finish indexes the edges).
func (w *WorkloadWriter) AddActivation(task, act int32, a Activation) error {
	w.nActs++
	return w.acts.add(streamAct{key: actKey{task, act}, a: a})
}

// AddEdge adds an edge.
func (w *WorkloadWriter) AddEdge(e Edge) error {
	w.nEdges++
	w.seq++
	if e.Causal {
		if err := w.causal.add(actKey{e.Wakee, e.WakeeAct}); err != nil {
			return err
		}
	}
	return w.edges.add(streamEdge{seq: w.seq, e: e})
}

// Counts are the activations and edges added so far.
func (w *WorkloadWriter) Counts() (activations, edges int64) { return w.nActs, w.nEdges }

// Close removes the temporary files (Finish calls it).
func (w *WorkloadWriter) Close() {
	w.acts.close()
	w.edges.close()
	w.causal.close()
}

// Finish validates the workload as Workload.Validate does and writes it to
// path. hdr gives everything but the activations and edges: the tasks
// (their Activations must be empty), the time span, the machine, the
// wakeup delays, the host stalls. It closes w.
func (w *WorkloadWriter) Finish(path string, hdr *Workload) (err error) {
	defer w.Close()
	for i := range hdr.Tasks {
		if len(hdr.Tasks[i].Activations) > 0 {
			return fmt.Errorf("whatif: WorkloadWriter.Finish: task %d carries its activations in the header", i)
		}
	}
	if err := hdr.validateMeasures(); err != nil {
		return err
	}
	if err := hdr.validateBalancePulls(); err != nil {
		return err
	}
	irq, err := hdr.irqCurrentKeys()
	if err != nil {
		return err
	}
	long, err := hdr.longChargeKeys()
	if err != nil {
		return err
	}
	dir := w.dir
	cols, err := newColWriters(dir)
	if err != nil {
		return err
	}
	defer cols.close()
	nt := int32(len(hdr.Tasks))
	nacts := make([]int32, nt)

	var row wlRowVals
	nextTask := int32(0)
	taskRow := func(i int32) {
		t := &hdr.Tasks[i]
		row.reset("task")
		row.num(cTask, int64(i))
		row.num(cTID, int64(t.TID))
		row.num(cPID, int64(t.PID))
		row.str(cComm, t.Comm)
		row.num(cPrio, int64(t.Prio))
		row.num(cPinned, int64(t.Pinned))
		row.num(cStartCPU, int64(t.StartCPU))
		row.flag(cForked, t.Forked)
		row.flag(cStartRunning, t.StartRunning)
		row.num(cExitNS, t.ExitNS)
		if t.Allowed != nil {
			row.str(cAllowed, model.FormatCPUList(t.Allowed))
		}
		row.flag(cCommand, t.Command)
		cols.add(&row)
	}

	// Pass 1: the task and activation rows, in (task, activation) order,
	// checking the activations against the causal edges and the edges'
	// offsets against their wakers' demand (merge joins).
	ai, err := w.acts.iter()
	if err != nil {
		return err
	}
	ci, err := w.causal.iter()
	if err != nil {
		return err
	}
	ei, err := w.edges.iter()
	if err != nil {
		return err
	}
	hi := 0 // hdr.HostStalls checked so far
	ck, cok, err := ci.next()
	if err != nil {
		return err
	}
	ce, eok, err := ei.next()
	if err != nil {
		return err
	}
	for {
		sa, ok, err := ai.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		k, a := sa.key, &sa.a
		if k.task < 0 || k.task >= nt {
			return fmt.Errorf("whatif: workload activation of task %d: task index out of range", k.task)
		}
		if k.act != nacts[k.task] {
			return fmt.Errorf("whatif: workload task %d: activation %d given, want %d (activations must be numbered 0, 1, ... once each)", k.task, k.act, nacts[k.task])
		}
		nacts[k.task]++
		if err := checkActivation(int(k.task), int(k.act), a); err != nil {
			return err
		}
		if qi, ok := irq[k]; ok {
			if err := checkIRQCurrentAct(qi, hdr.IRQCurrent[qi], a); err != nil {
				return err
			}
			delete(irq, k)
		}
		if li, ok := long[k]; ok {
			if err := checkLongChargeAct(li, hdr.LongSwitchCharges[li], a); err != nil {
				return err
			}
			delete(long, k)
		}
		want, got := 0, 0
		if a.Cause == CauseWake || a.Cause == CauseFork {
			want = 1
		}
		for cok && cmpActKey(&ck, &k) <= 0 {
			if cmpActKey(&ck, &k) < 0 {
				return fmt.Errorf("workload: causal edge to task %d activation %d: out of range", ck.task, ck.act)
			}
			got++
			if ck, cok, err = ci.next(); err != nil {
				return err
			}
		}
		if got != want {
			return fmt.Errorf("workload task %d activation %d (cause %s): %d causal edges, want %d", k.task, k.act, a.Cause, got, want)
		}
		for eok {
			ek := actKey{ce.e.Waker, ce.e.WakerAct}
			c := cmpActKey(&ek, &k)
			if c > 0 {
				break
			}
			if c < 0 {
				return fmt.Errorf("workload edge: waker task %d activation %d out of range", ek.task, ek.act)
			}
			if ce.e.OffsetNS < 0 || ce.e.OffsetNS > a.DemandNS {
				return fmt.Errorf("workload edge: offset %d outside the waker's demand", ce.e.OffsetNS)
			}
			if ce, eok, err = ei.next(); err != nil {
				return err
			}
		}
		for ; hi < len(hdr.HostStalls); hi++ {
			h := &hdr.HostStalls[hi]
			hk := actKey{h.Task, h.Act}
			c := cmpActKey(&hk, &k)
			if c > 0 {
				break
			}
			if c < 0 {
				return fmt.Errorf("workload host stall %d: task %d activation %d out of range or out of order", hi, h.Task, h.Act)
			}
			if h.OffsetNS < 0 || h.LenNS <= 0 || h.OffsetNS+h.LenNS > a.DemandNS || hi > 0 && hdr.HostStalls[hi-1].overlaps(h) {
				return fmt.Errorf("workload host stall %d: [%d, +%d) outside the activation's demand or overlapping the one before", hi, h.OffsetNS, h.LenNS)
			}
			if err := h.checkWall(hdr); err != nil {
				return fmt.Errorf("workload host stall %d: %v", hi, err)
			}
		}
		for ; nextTask <= k.task; nextTask++ {
			taskRow(nextTask)
		}
		row.reset("activation")
		row.num(cTask, int64(k.task))
		row.num(cActivation, int64(k.act))
		row.num(cDemand, a.DemandNS)
		row.str(cCause, a.Cause.String())
		row.num(cRelease, a.ReleaseNS)
		row.num(cSleep, a.SleepNS)
		row.str(cEnd, a.End.String())
		row.str(cEndState, a.EndState)
		row.num(cCPU, int64(a.CPU))
		if a.OwnPrio {
			row.num(cPrio, int64(a.Prio))
		}
		if a.TickSoftIRQ {
			row.flag(cTickSoftIRQ, true)
		}
		if a.IRQCPUPlus1 > 0 {
			row.num(cIRQCPU, int64(a.IRQCPUPlus1-1))
		}
		if a.IRQ != IRQNone {
			row.str(cIRQContext, a.IRQ.String())
		}
		if a.Untraced {
			row.flag(cUntraced, true)
		}
		cols.add(&row)
	}
	for ; nextTask < nt; nextTask++ {
		taskRow(nextTask)
	}
	if cok {
		return fmt.Errorf("workload: causal edge to task %d activation %d: out of range", ck.task, ck.act)
	}
	if eok {
		return fmt.Errorf("workload edge: waker task %d activation %d out of range", ce.e.Waker, ce.e.WakerAct)
	}
	if hi < len(hdr.HostStalls) {
		return fmt.Errorf("workload host stall %d: task %d activation %d out of range", hi, hdr.HostStalls[hi].Task, hdr.HostStalls[hi].Act)
	}
	if err := hdr.irqCurrentMissing(irq); err != nil {
		return err
	}
	if err := hdr.longChargeMissing(long); err != nil {
		return err
	}

	// Pass 2: the edge rows.
	if ei, err = w.edges.iter(); err != nil {
		return err
	}
	for {
		se, ok, err := ei.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		e := &se.e
		if e.Wakee < 0 || e.Wakee >= nt || e.WakeeAct < 0 || e.WakeeAct >= nacts[e.Wakee] {
			return fmt.Errorf("workload edge: wakee task %d activation %d out of range", e.Wakee, e.WakeeAct)
		}
		row.reset("edge")
		row.str(cKind, e.Kind.String())
		row.flag(cCausal, e.Causal)
		row.num(cWaker, int64(e.Waker))
		row.num(cWakerAct, int64(e.WakerAct))
		row.num(cOffset, e.OffsetNS)
		row.num(cWakee, int64(e.Wakee))
		row.num(cWakeeAct, int64(e.WakeeAct))
		row.num(cTime, e.TimeNS)
		row.num(cWakerCPU, int64(e.WakerCPU))
		row.num(cTarget, int64(e.Target))
		row.flag(cSync, e.Sync)
		row.num(cNoPreempt, e.NoPreemptNS)
		row.flag(cAwaits, e.Awaits)
		row.flag(cRaced, e.Raced)
		row.flag(cCharged, e.Charged)
		row.flag(cEnqAfterStall, e.EnqueueAfterStall)
		cols.add(&row)
	}
	for _, h := range hdr.HostStalls {
		row.reset("host_stall")
		row.num(cTask, int64(h.Task))
		row.num(cActivation, int64(h.Act))
		row.num(cOffset, h.OffsetNS)
		row.num(cStallNS, h.LenNS)
		if h.TimeNS != 0 {
			row.num(cCPU, int64(h.CPU))
			row.num(cTime, h.TimeNS)
			row.num(cWall, h.WallNS)
		}
		if h.Busy != 0 {
			row.num(cBusy, int64(h.Busy))
		}
		cols.add(&row)
	}
	for _, q := range hdr.IRQCurrent {
		row.actRow("irq_current", q.Task, q.Act, cWaker, int64(q.Curr))
		cols.add(&row)
	}
	for _, c := range hdr.LongSwitchCharges {
		row.actRow("long_switch_charge", c.Task, c.Act, cChargeNS, c.NS)
		cols.add(&row)
	}
	for _, p := range hdr.BalancePulls {
		row.reset("balance_pull")
		row.num(cCPU, int64(p.CPU))
		row.num(cSrcCPU, int64(p.Src))
		row.num(cTime, p.TimeNS)
		cols.add(&row)
	}
	// The measured delay pools: one table each.
	for _, pool := range hdr.delayPools() {
		col := cPreemptWake
		if pool.idle {
			col = cIdleWake
		}
		for _, d := range *pool.ns {
			row.reset(pool.table)
			row.num(col, d)
			cols.add(&row)
		}
	}
	if cols.err != nil {
		return cols.err
	}
	// What is left is in the column files: the sorters' are not needed.
	w.Close()

	meta, err := wlMetadata(hdr)
	if err != nil {
		return err
	}
	schema := wlSchema(&meta)
	if cols.n == 0 {
		// Nothing to stream: the builder path writes the empty batch.
		return SaveWorkload(path, &Workload{StartNS: hdr.StartNS, EndNS: hdr.EndNS, Topology: hdr.Topology, Stalls: hdr.Stalls, Kernel: hdr.Kernel, Source: hdr.Source,
			Cmdline: hdr.Cmdline, NewidleChances: hdr.NewidleChances, NewidlePulls: hdr.NewidlePulls})
	}
	arrs, err := cols.arrays()
	if err != nil {
		return err
	}
	rec := array.NewRecordBatch(schema, arrs, cols.n)
	defer rec.Release()
	return writeWorkloadFile(path, schema, memory.NewGoAllocator(), rec, cols.dropWriter)
}

// The column indices of wlCols.
var (
	cTable         = wlColIndex("table")
	cTask          = wlColIndex("task")
	cTID           = wlColIndex("tid")
	cPID           = wlColIndex("pid")
	cComm          = wlColIndex("comm")
	cPrio          = wlColIndex("prio")
	cPinned        = wlColIndex("pinned_cpu")
	cStartCPU      = wlColIndex("start_cpu")
	cForked        = wlColIndex("forked")
	cStartRunning  = wlColIndex("start_running")
	cActivation    = wlColIndex("activation")
	cDemand        = wlColIndex("demand_ns")
	cCause         = wlColIndex("cause")
	cRelease       = wlColIndex("release_ns")
	cSleep         = wlColIndex("sleep_ns")
	cEnd           = wlColIndex("end")
	cEndState      = wlColIndex("end_state")
	cCPU           = wlColIndex("cpu")
	cKind          = wlColIndex("kind")
	cCausal        = wlColIndex("causal")
	cWaker         = wlColIndex("waker")
	cWakerAct      = wlColIndex("waker_activation")
	cOffset        = wlColIndex("offset_ns")
	cWakee         = wlColIndex("wakee")
	cWakeeAct      = wlColIndex("wakee_activation")
	cTime          = wlColIndex("time_ns")
	cWakerCPU      = wlColIndex("waker_cpu")
	cTarget        = wlColIndex("target_cpu")
	cIdleWake      = wlColIndex("idle_wake_ns")
	cPreemptWake   = wlColIndex("preempt_wake_ns")
	cSync          = wlColIndex("sync")
	cNoPreempt     = wlColIndex("no_preempt_ns")
	cExitNS        = wlColIndex("exit_ns")
	cStallNS       = wlColIndex("stall_ns")
	cAwaits        = wlColIndex("awaits")
	cRaced         = wlColIndex("raced")
	cTickSoftIRQ   = wlColIndex("tick_softirq")
	cIRQCPU        = wlColIndex("irq_cpu")
	cIRQContext    = wlColIndex("irq_context")
	cUntraced      = wlColIndex("untraced")
	cCharged       = wlColIndex("charged")
	cWall          = wlColIndex("wall_ns")
	cSrcCPU        = wlColIndex("src_cpu")
	cBusy          = wlColIndex("busy")
	cEnqAfterStall = wlColIndex("enqueue_after_stall")
	cChargeNS      = wlColIndex("charge_ns")
	cAllowed       = wlColIndex("allowed_cpus")
	cCommand       = wlColIndex("command")
)

func wlColIndex(name string) int {
	for i, c := range wlCols {
		if c.name == name {
			return i
		}
	}
	panic("whatif: no workload column " + name)
}

// wlRowVals is one row: the columns set, the rest null.
type wlRowVals struct {
	set []bool
	n   []int64
	s   []string
}

func (r *wlRowVals) reset(table string) {
	if r.set == nil {
		r.set, r.n, r.s = make([]bool, len(wlCols)), make([]int64, len(wlCols)), make([]string, len(wlCols))
	}
	clear(r.set)
	r.str(cTable, table)
}

// actRow makes r a row of a side table naming an activation (task,
// act) with one value in column c.
func (r *wlRowVals) actRow(table string, task, act int32, c int, v int64) {
	r.reset(table)
	r.num(cTask, int64(task))
	r.num(cActivation, int64(act))
	r.num(c, v)
}

func (r *wlRowVals) num(c int, v int64)  { r.set[c], r.n[c] = true, v }
func (r *wlRowVals) str(c int, v string) { r.set[c], r.s[c] = true, v }
func (r *wlRowVals) flag(c int, v bool) {
	var n int64
	if v {
		n = 1
	}
	r.num(c, n)
}

// colWriters append the rows' values column by column to temporary
// files, laid out as array.Int64Builder and array.StringBuilder lay out
// their buffers.
type colWriters struct {
	cols  []*colFile
	n     int64
	err   error
	maps  [][]byte
	files []*os.File
}

type colFile struct {
	str     bool
	nulls   int64
	bits    *spillBuf // validity bitmap
	cur     byte
	nbits   uint
	data    *spillBuf // int64 values, or string bytes
	offs    *spillBuf // string offsets (int32)
	off     int64
	scratch [8]byte
}

// spillBuf is a buffered temporary file.
type spillBuf struct {
	f    *os.File
	w    *bufio.Writer
	size int64
}

func (c *colWriters) newBuf(dir string) *spillBuf {
	if c.err != nil {
		return nil
	}
	f, err := os.CreateTemp(dir, ".replay-col-*")
	if err != nil {
		c.err = err
		return nil
	}
	os.Remove(f.Name())
	c.files = append(c.files, f)
	return &spillBuf{f: f, w: bufio.NewWriterSize(f, 16<<10)}
}

func (b *spillBuf) write(p []byte) error {
	b.size += int64(len(p))
	_, err := b.w.Write(p)
	return err
}

func (b *spillBuf) writeByte(c byte) error {
	b.size++
	return b.w.WriteByte(c)
}

func (b *spillBuf) writeString(s string) error {
	b.size += int64(len(s))
	_, err := b.w.WriteString(s)
	return err
}

func newColWriters(dir string) (*colWriters, error) {
	c := &colWriters{}
	for _, wc := range wlCols {
		cf := &colFile{str: wc.str, bits: c.newBuf(dir), data: c.newBuf(dir)}
		if wc.str {
			cf.offs = c.newBuf(dir)
		}
		c.cols = append(c.cols, cf)
	}
	if c.err != nil {
		c.close()
		return nil, c.err
	}
	for _, cf := range c.cols {
		if cf.str {
			binary.LittleEndian.PutUint32(cf.scratch[:4], 0)
			c.setErr(cf.offs.write(cf.scratch[:4]))
		}
	}
	return c, c.err
}

func (c *colWriters) setErr(err error) {
	if err != nil && c.err == nil {
		c.err = err
	}
}

func (c *colWriters) add(r *wlRowVals) {
	if c.err != nil {
		return
	}
	for i, cf := range c.cols {
		valid := r.set[i]
		if valid {
			cf.cur |= 1 << cf.nbits
		} else {
			cf.nulls++
		}
		if cf.nbits++; cf.nbits == 8 {
			c.setErr(cf.bits.writeByte(cf.cur))
			cf.cur, cf.nbits = 0, 0
		}
		if cf.str {
			if valid {
				c.setErr(cf.data.writeString(r.s[i]))
				cf.off += int64(len(r.s[i]))
			}
			if cf.off > math.MaxInt32 {
				c.setErr(fmt.Errorf("whatif: workload column %q holds more than 2 GiB of strings", wlCols[i].name))
			}
			binary.LittleEndian.PutUint32(cf.scratch[:4], uint32(cf.off))
			c.setErr(cf.offs.write(cf.scratch[:4]))
			continue
		}
		var v int64
		if valid {
			v = r.n[i]
		}
		binary.LittleEndian.PutUint64(cf.scratch[:], uint64(v))
		c.setErr(cf.data.write(cf.scratch[:]))
	}
	c.n++
}

// bitmapBytes is the length of the validity bitmap the IPC writer writes
// for n rows from an Arrow builder's: the builder ends with its capacity
// (the next power of two of n, at least 32 bits); the writer copies a
// bitmap longer than n bits padded to 64 bytes into one of that length.
// Given that length, it writes the same bytes without the copy.
func bitmapBytes(n int64) int64 {
	c := int64(bitutil.NextPowerOf2(int(n)))
	if c < 32 {
		c = 32
	}
	padded := (bitutil.BytesForBits(n) + 63) / 64 * 64
	return min(c/8, padded)
}

// mapBuf flushes b, extends it with zeros to size bytes and maps it.
func (c *colWriters) mapBuf(b *spillBuf, size int64) ([]byte, error) {
	if err := b.w.Flush(); err != nil {
		return nil, err
	}
	if size > b.size {
		if err := b.f.Truncate(size); err != nil {
			return nil, err
		}
	}
	if size == 0 {
		return []byte{}, nil
	}
	m, err := mapFile(b.f, int(size))
	if err != nil {
		return nil, err
	}
	c.maps = append(c.maps, m)
	return m, nil
}

// arrays maps the column files and wraps them as Arrow arrays.
func (c *colWriters) arrays() ([]arrow.Array, error) {
	var out []arrow.Array
	for _, cf := range c.cols {
		if cf.nbits > 0 {
			if err := cf.bits.writeByte(cf.cur); err != nil {
				return nil, err
			}
			cf.nbits = 0
		}
		var bitmap *memory.Buffer
		if cf.nulls > 0 {
			m, err := c.mapBuf(cf.bits, bitmapBytes(c.n))
			if err != nil {
				return nil, err
			}
			bitmap = memory.NewBufferBytes(m)
		}
		val, err := c.mapBuf(cf.data, cf.data.size)
		if err != nil {
			return nil, err
		}
		if cf.str {
			offs, err := c.mapBuf(cf.offs, cf.offs.size)
			if err != nil {
				return nil, err
			}
			d := array.NewData(arrow.BinaryTypes.String, int(c.n), []*memory.Buffer{bitmap, memory.NewBufferBytes(offs), memory.NewBufferBytes(val)}, nil, int(cf.nulls), 0)
			out = append(out, array.NewStringData(d))
			d.Release()
			continue
		}
		d := array.NewData(arrow.PrimitiveTypes.Int64, int(c.n), []*memory.Buffer{bitmap, memory.NewBufferBytes(val)}, nil, int(cf.nulls), 0)
		out = append(out, array.NewInt64Data(d))
		d.Release()
	}
	return out, nil
}

// dropWriter writes to w in pieces of at most 1 MiB and drops the pages
// of a column mapping once written, so the mapped columns pass through
// the resident set a piece at a time rather than all at once.
func (c *colWriters) dropWriter(w io.Writer) io.Writer { return &dropWriter{w: w, maps: c.maps} }

type dropWriter struct {
	w    io.Writer
	maps [][]byte
}

func (d *dropWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), 1<<20)
		m, err := d.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		for _, mp := range d.maps {
			dropPages(mp, p[:k])
		}
		p = p[k:]
	}
	return n, nil
}

func (c *colWriters) close() {
	for _, m := range c.maps {
		unmapFile(m)
	}
	c.maps = nil
	for _, f := range c.files {
		f.Close()
	}
	c.files = nil
}
