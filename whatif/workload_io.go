package whatif

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedreplay/replay/internal/atomicfile"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// WorkloadVersion is the "replay_workload" schema metadata value.
const WorkloadVersion = "1"

// The workload file is one Arrow IPC file holding several tables in one
// schema, told apart by the `table` column ("task", "activation", "edge",
// "host_stall", "idle_wake", "preempt_wake", ...); each table uses its own columns and leaves the others
// null. Rows of a table are in index order: task rows by task index,
// activation rows by (task, activation), edge rows in Workload.Edges
// order. README.md documents the columns.
var wlCols = []struct {
	name string
	str  bool
}{
	{"table", true},
	{"task", false}, {"tid", false}, {"pid", false}, {"comm", true}, {"prio", false},
	{"pinned_cpu", false}, {"start_cpu", false}, {"forked", false}, {"start_running", false},
	{"activation", false}, {"demand_ns", false}, {"cause", true}, {"release_ns", false},
	{"sleep_ns", false}, {"end", true}, {"end_state", true}, {"cpu", false},
	{"kind", true}, {"causal", false}, {"waker", false}, {"waker_activation", false}, {"offset_ns", false},
	{"wakee", false}, {"wakee_activation", false}, {"time_ns", false}, {"waker_cpu", false}, {"target_cpu", false},
	{"idle_wake_ns", false}, {"preempt_wake_ns", false},
	{"sync", false}, {"no_preempt_ns", false},
	{"exit_ns", false},
	{"stall_ns", false},
	{"awaits", false},
	{"raced", false},
	{"tick_softirq", false},
	{"irq_cpu", false},
	{"irq_context", true},
	{"untraced", false},
	{"charged", false},
	{"wall_ns", false},
	{"src_cpu", false},
	{"busy", false},
	{"enqueue_after_stall", false},
	{"charge_ns", false},
	{"allowed_cpus", true},
	{"command", false},
}

// wlOptional are columns a file may lack (added after version 1's first
// files): read as null.
var wlOptional = map[string]bool{"sync": true, "no_preempt_ns": true, "exit_ns": true, "stall_ns": true, "awaits": true, "raced": true, "tick_softirq": true, "irq_cpu": true, "irq_context": true, "untraced": true, "charged": true, "wall_ns": true, "src_cpu": true, "busy": true, "enqueue_after_stall": true, "charge_ns": true, "allowed_cpus": true, "command": true}

func wlSchema(md *arrow.Metadata) *arrow.Schema {
	fs := make([]arrow.Field, len(wlCols))
	for i, c := range wlCols {
		var t arrow.DataType = arrow.PrimitiveTypes.Int64
		if c.str {
			t = arrow.BinaryTypes.String
		}
		fs[i] = arrow.Field{Name: c.name, Type: t, Nullable: i > 0}
	}
	return arrow.NewSchema(fs, md)
}

type wlRow map[string]any

// wlMetadata is the schema metadata of a workload file: w's header
// fields (not its tasks, activations or edges).
func wlMetadata(w *Workload) (arrow.Metadata, error) {
	md := map[string]string{
		"replay_workload": WorkloadVersion,
		"start_ns":        strconv.FormatInt(w.StartNS, 10),
		"end_ns":          strconv.FormatInt(w.EndNS, 10),
		"kernel":          w.Kernel,
		"source":          w.Source,
	}
	if w.Topology != nil {
		b, err := json.Marshal(w.Topology)
		if err != nil {
			return arrow.Metadata{}, err
		}
		md["topology"] = string(b)
	}
	if w.Stalls != nil {
		b, err := json.Marshal(w.Stalls)
		if err != nil {
			return arrow.Metadata{}, err
		}
		md["stalls"] = string(b)
	}
	if w.NewidleChances > 0 {
		md["newidle"] = fmt.Sprintf("%d/%d", w.NewidlePulls, w.NewidleChances)
	}
	if w.TickPhaseNS > 0 {
		md["tick_phase_ns"] = strconv.FormatInt(w.TickPhaseNS, 10)
	}
	if fl := w.Flips; fl.WeightPlacements > 0 {
		md["wakee_flips"] = fmt.Sprintf("%d %d %d %d %d %d %d", fl.WakeeFlips, fl.Placements, fl.Explained, fl.ExplainedAt0, fl.WeightPlacements, fl.WeightExplained, fl.WeightExplainedAt0)
	} else if fl.Placements > 0 || fl.WakeeFlips > 0 {
		md["wakee_flips"] = fmt.Sprintf("%d %d %d %d", fl.WakeeFlips, fl.Placements, fl.Explained, fl.ExplainedAt0)
	}
	if len(w.Cmdline) > 0 {
		b, err := json.Marshal(w.Cmdline)
		if err != nil {
			return arrow.Metadata{}, err
		}
		md["cmdline"] = string(b)
	}
	keys := []string{"replay_workload", "start_ns", "end_ns", "kernel", "source"}
	for _, k := range []string{"topology", "stalls", "newidle", "tick_phase_ns", "wakee_flips", "cmdline"} {
		if _, ok := md[k]; ok {
			keys = append(keys, k)
		}
	}
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = md[k]
	}
	return arrow.NewMetadata(keys, vals), nil
}

// workloadBatchRows is the most rows one record batch of a workload file
// holds. Arrow readers bound a message's body (arrow-go: 256 MiB by
// default), which a large trace's workload in one batch passes (a
// 1.0 M-event hackbench recording: 286 MB); a batch of this many rows
// stays near 50 MB. A variable for tests.
var workloadBatchRows int64 = 1 << 17

// writeWorkloadFile writes the rows of a workload file to path (under a
// temporary name, then renamed), in record batches of at most
// workloadBatchRows rows. wrap, if not nil, wraps the file's writer.
func writeWorkloadFile(path string, schema *arrow.Schema, mem memory.Allocator, rec arrow.RecordBatch, wrap func(io.Writer) io.Writer) error {
	out, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	var ow io.Writer = out
	if wrap != nil {
		ow = wrap(out)
	}
	fw, err := ipc.NewFileWriter(ow, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err == nil {
		// An empty workload still gets its one (empty) batch.
		for lo, n := int64(0), rec.NumRows(); err == nil && (lo < n || lo == 0); lo += workloadBatchRows {
			part := rec.NewSlice(lo, min(lo+workloadBatchRows, n))
			err = fw.Write(part)
			part.Release()
		}
		if cerr := fw.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		out.Abort()
		return err
	}
	return out.Commit()
}

// SaveWorkload writes w to path (written under a temporary name, then
// renamed). The same workload gives byte-identical files; a
// WorkloadWriter given the same workload piece by piece writes the same
// bytes.
func SaveWorkload(path string, w *Workload) (err error) {
	meta, err := wlMetadata(w)
	if err != nil {
		return err
	}
	schema := wlSchema(&meta)
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	idx := map[string]int{}
	for i, c := range wlCols {
		idx[c.name] = i
	}
	add := func(r wlRow) {
		for i, c := range wlCols {
			v, ok := r[c.name]
			fb := b.Field(i)
			if !ok {
				fb.AppendNull()
				continue
			}
			if c.str {
				fb.(*array.StringBuilder).Append(v.(string))
				continue
			}
			var n int64
			switch x := v.(type) {
			case int:
				n = int64(x)
			case int16:
				n = int64(x)
			case int32:
				n = int64(x)
			case int64:
				n = x
			case bool:
				if x {
					n = 1
				}
			default:
				// A programming error (a field's type changed), not input.
				panic(fmt.Sprintf("whatif: workload column %s: value of type %T", c.name, v))
			}
			fb.(*array.Int64Builder).Append(n)
		}
	}
	for i, t := range w.Tasks {
		r := wlRow{"table": "task", "task": i, "tid": t.TID, "pid": t.PID, "comm": t.Comm, "prio": t.Prio,
			"pinned_cpu": t.Pinned, "start_cpu": t.StartCPU, "forked": t.Forked, "start_running": t.StartRunning, "exit_ns": t.ExitNS, "command": t.Command}
		if t.Allowed != nil {
			r["allowed_cpus"] = model.FormatCPUList(t.Allowed)
		}
		add(r)
		for j, a := range t.Activations {
			r := wlRow{"table": "activation", "task": i, "activation": j, "demand_ns": a.DemandNS, "cause": a.Cause.String(),
				"release_ns": a.ReleaseNS, "sleep_ns": a.SleepNS, "end": a.End.String(), "end_state": a.EndState, "cpu": a.CPU}
			if a.OwnPrio {
				r["prio"] = a.Prio
			}
			if a.TickSoftIRQ {
				r["tick_softirq"] = true
			}
			if a.IRQCPUPlus1 > 0 {
				r["irq_cpu"] = a.IRQCPUPlus1 - 1
			}
			if a.IRQ != IRQNone {
				r["irq_context"] = a.IRQ.String()
			}
			if a.Untraced {
				r["untraced"] = true
			}
			add(r)
		}
	}
	for _, e := range w.Edges {
		add(wlRow{"table": "edge", "kind": e.Kind.String(), "causal": e.Causal, "waker": e.Waker, "waker_activation": e.WakerAct, "offset_ns": e.OffsetNS,
			"wakee": e.Wakee, "wakee_activation": e.WakeeAct, "time_ns": e.TimeNS, "waker_cpu": e.WakerCPU, "target_cpu": e.Target, "sync": e.Sync, "no_preempt_ns": e.NoPreemptNS, "awaits": e.Awaits, "raced": e.Raced, "charged": e.Charged, "enqueue_after_stall": e.EnqueueAfterStall})
	}
	for _, h := range w.HostStalls {
		r := wlRow{"table": "host_stall", "task": h.Task, "activation": h.Act, "offset_ns": h.OffsetNS, "stall_ns": h.LenNS}
		if h.TimeNS != 0 {
			r["cpu"], r["time_ns"], r["wall_ns"] = h.CPU, h.TimeNS, h.WallNS
		}
		if h.Busy != 0 {
			r["busy"] = h.Busy
		}
		add(r)
	}
	for _, q := range w.IRQCurrent {
		add(wlRow{"table": "irq_current", "task": q.Task, "activation": q.Act, "waker": q.Curr})
	}
	for _, c := range w.LongSwitchCharges {
		add(wlRow{"table": "long_switch_charge", "task": c.Task, "activation": c.Act, "charge_ns": c.NS})
	}
	for _, p := range w.BalancePulls {
		add(wlRow{"table": "balance_pull", "cpu": p.CPU, "src_cpu": p.Src, "time_ns": p.TimeNS})
	}
	for _, pool := range w.delayPools() {
		col := "preempt_wake_ns"
		if pool.idle {
			col = "idle_wake_ns"
		}
		for _, d := range *pool.ns {
			add(wlRow{"table": pool.table, col: d})
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return writeWorkloadFile(path, schema, mem, rec, nil)
}

// IsWorkloadFile reports whether path is an Arrow file SaveWorkload wrote.
func IsWorkloadFile(path string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // a damaged Arrow file: LoadWorkload says how
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 6)
	if n, _ := f.Read(head); n < 6 || !bytes.Equal(head, []byte("ARROW1")) {
		return false
	}
	if st, err := f.Stat(); err != nil || timeline.CheckIPCFooter(f, st.Size()) != nil {
		return false
	}
	fr, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return false
	}
	defer fr.Close()
	md := fr.Schema().Metadata()
	return md.FindKey("replay_workload") >= 0
}

// LoadWorkload reads a file SaveWorkload wrote (or any Arrow file with
// the same columns, e.g. written by a notebook or a synthetic generator).
func LoadWorkload(path string) (w *Workload, err error) {
	defer func() {
		if p := recover(); p != nil {
			// The Arrow library trusts a file's footer and offsets.
			w, err = nil, fmt.Errorf("%s: damaged Arrow data: %v", path, p)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := timeline.CheckIPCFooter(f, st.Size()); err != nil {
		return nil, fmt.Errorf("%s: damaged Arrow IPC file: %w", path, err)
	}
	fr, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()), timeline.IPCBodyLimit(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer fr.Close()
	sch := fr.Schema()
	md := sch.Metadata()
	get := func(k string) string {
		if i := md.FindKey(k); i >= 0 {
			return md.Values()[i]
		}
		return ""
	}
	if get("replay_workload") != WorkloadVersion {
		return nil, fmt.Errorf("%s: not a replay workload file (schema metadata replay_workload=%q, want %q)", path, get("replay_workload"), WorkloadVersion)
	}
	w = &Workload{Kernel: get("kernel"), Source: get("source")}
	w.StartNS, _ = strconv.ParseInt(get("start_ns"), 10, 64)
	w.EndNS, _ = strconv.ParseInt(get("end_ns"), 10, 64)
	if s := get("topology"); s != "" {
		w.Topology = &model.Topology{}
		if err := json.Unmarshal([]byte(s), w.Topology); err != nil {
			return nil, fmt.Errorf("%s: topology metadata: %w", path, err)
		}
	}
	if s := get("stalls"); s != "" {
		w.Stalls = &StallModel{}
		if err := json.Unmarshal([]byte(s), w.Stalls); err != nil {
			return nil, fmt.Errorf("%s: stalls metadata: %w", path, err)
		}
	}
	if s := get("newidle"); s != "" {
		ps, cs, _ := strings.Cut(s, "/")
		var e1, e2 error
		w.NewidlePulls, e1 = strconv.Atoi(ps)
		w.NewidleChances, e2 = strconv.Atoi(cs)
		if e1 != nil || e2 != nil || w.NewidlePulls < 0 || w.NewidlePulls > w.NewidleChances {
			return nil, fmt.Errorf("%s: newidle metadata %q: want pulls/chances, 0 <= pulls <= chances", path, s)
		}
	}
	if s := get("tick_phase_ns"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v >= maxTickPhaseNS {
			return nil, fmt.Errorf("%s: tick_phase_ns metadata %q: want an integer in [0, %d)", path, s, maxTickPhaseNS)
		}
		w.TickPhaseNS = v
	}
	if s := get("wakee_flips"); s != "" {
		// Four integers in files written before the weight evidence.
		fl := &w.Flips
		v := []any{&fl.WakeeFlips, &fl.Placements, &fl.Explained, &fl.ExplainedAt0, &fl.WeightPlacements, &fl.WeightExplained, &fl.WeightExplainedAt0}
		if f := strings.Fields(s); len(f) == 4 {
			v = v[:4]
		}
		if n, err := fmt.Sscanf(s, strings.Repeat("%d ", len(v)), v...); err != nil || n != len(v) {
			return nil, fmt.Errorf("%s: wakee_flips metadata %q: want seven integers (count; placements, explained, explained at 0; the same of wake_affine_weight's) or four", path, s)
		}
	}
	if s := get("cmdline"); s != "" {
		if err := json.Unmarshal([]byte(s), &w.Cmdline); err != nil {
			return nil, fmt.Errorf("%s: cmdline metadata: %w", path, err)
		}
	}
	colIdx := map[string]int{}
	for i, fd := range sch.Fields() {
		colIdx[fd.Name] = i
	}
	for _, c := range wlCols {
		if _, ok := colIdx[c.name]; !ok && !wlOptional[c.name] {
			return nil, fmt.Errorf("%s: workload column %q missing", path, c.name)
		}
	}
	parseCause := func(s string) (Cause, error) {
		for i, n := range causeNames {
			if n == s {
				return Cause(i), nil
			}
		}
		return 0, fmt.Errorf("unknown cause %q", s)
	}
	parseEnd := func(s string) (End, error) {
		for i, n := range endNames {
			if n == s {
				return End(i), nil
			}
		}
		return 0, fmt.Errorf("unknown end %q", s)
	}
	pools := map[string]delayPool{}
	for _, p := range w.delayPools() {
		pools[p.table] = p
	}
	// Each canonical column's position in the file (-1: an optional
	// column the file lacks); rows are read by the canonical indices
	// (cTable, cTask, ...) the writer uses.
	pos := make([]int, len(wlCols))
	for i, c := range wlCols {
		pos[i] = -1
		if j, ok := colIdx[c.name]; ok {
			pos[i] = j
		}
	}
	strs := make([]*array.String, len(wlCols))
	nums := make([]*array.Int64, len(wlCols))
	for ri := 0; ri < fr.NumRecords(); ri++ {
		rec, err := fr.RecordBatch(ri)
		if err != nil {
			return nil, err
		}
		// The batch's columns by position, typed once: a row's fields
		// are read by position, not looked up by name.
		for c, p := range pos {
			strs[c], nums[c] = nil, nil
			if p >= 0 {
				strs[c], _ = rec.Column(p).(*array.String)
				nums[c], _ = rec.Column(p).(*array.Int64)
			}
		}
		str := func(c, i int) string {
			if strs[c] == nil || strs[c].IsNull(i) {
				return ""
			}
			return strs[c].Value(i)
		}
		num := func(c, i int) int64 {
			if nums[c] == nil || nums[c].IsNull(i) {
				return 0
			}
			return nums[c].Value(i)
		}
		set := func(c, i int) bool {
			return nums[c] != nil && !nums[c].IsNull(i)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			switch str(cTable, i) {
			case "task":
				if int(num(cTask, i)) != len(w.Tasks) {
					return nil, fmt.Errorf("%s: task rows out of order at row %d", path, i)
				}
				var allowed []int
				if l := str(cAllowed, i); l != "" {
					if allowed, err = model.ParseCPUList(l); err != nil { // sorted
						return nil, fmt.Errorf("%s: row %d: allowed_cpus: %w", path, i, err)
					}
				}
				w.Tasks = append(w.Tasks, Task{TID: int32(num(cTID, i)), PID: int32(num(cPID, i)), Comm: str(cComm, i),
					Prio: int32(num(cPrio, i)), Pinned: int32(num(cPinned, i)), StartCPU: int32(num(cStartCPU, i)), Forked: num(cForked, i) != 0,
					StartRunning: num(cStartRunning, i) != 0, ExitNS: num(cExitNS, i), Allowed: allowed, Command: num(cCommand, i) != 0})
			case "activation":
				ti := int(num(cTask, i))
				if ti < 0 || ti >= len(w.Tasks) || int(num(cActivation, i)) != len(w.Tasks[ti].Activations) {
					return nil, fmt.Errorf("%s: activation row %d out of order", path, i)
				}
				c, err := parseCause(str(cCause, i))
				if err != nil {
					return nil, fmt.Errorf("%s: row %d: %w", path, i, err)
				}
				e, err := parseEnd(str(cEnd, i))
				if err != nil {
					return nil, fmt.Errorf("%s: row %d: %w", path, i, err)
				}
				ctx, err := parseIRQContext(str(cIRQContext, i))
				if err != nil {
					return nil, fmt.Errorf("%s: row %d: %w", path, i, err)
				}
				w.Tasks[ti].Activations = append(w.Tasks[ti].Activations, Activation{DemandNS: num(cDemand, i), Cause: c,
					ReleaseNS: num(cRelease, i), SleepNS: num(cSleep, i), End: e, EndState: str(cEndState, i), CPU: int32(num(cCPU, i)),
					Prio: int32(num(cPrio, i)), OwnPrio: set(cPrio, i), TickSoftIRQ: num(cTickSoftIRQ, i) != 0, IRQCPUPlus1: irqCPUPlus1(set(cIRQCPU, i), num(cIRQCPU, i)),
					IRQ: ctx, Untraced: num(cUntraced, i) != 0})
			case "edge":
				k := EdgeWake
				switch str(cKind, i) {
				case "wake":
				case "fork":
					k = EdgeFork
				case "move":
					k = EdgeMove
				default:
					return nil, fmt.Errorf("%s: row %d: unknown edge kind %q", path, i, str(cKind, i))
				}
				w.Edges = append(w.Edges, Edge{Kind: k, Causal: num(cCausal, i) != 0, Waker: int32(num(cWaker, i)), WakerAct: int32(num(cWakerAct, i)),
					OffsetNS: num(cOffset, i), Wakee: int32(num(cWakee, i)), WakeeAct: int32(num(cWakeeAct, i)),
					TimeNS: num(cTime, i), WakerCPU: int32(num(cWakerCPU, i)), Target: int32(num(cTarget, i)), Sync: num(cSync, i) != 0,
					NoPreemptNS: num(cNoPreempt, i), Awaits: num(cAwaits, i) != 0, Raced: num(cRaced, i) != 0, Charged: num(cCharged, i) != 0,
					EnqueueAfterStall: num(cEnqAfterStall, i) != 0})
			case "irq_current":
				w.IRQCurrent = append(w.IRQCurrent, IRQCurrent{Task: int32(num(cTask, i)), Act: int32(num(cActivation, i)), Curr: int32(num(cWaker, i))})
			case "long_switch_charge":
				w.LongSwitchCharges = append(w.LongSwitchCharges, LongSwitchCharge{Task: int32(num(cTask, i)), Act: int32(num(cActivation, i)), NS: num(cChargeNS, i)})
			case "balance_pull":
				w.BalancePulls = append(w.BalancePulls, BalancePull{CPU: int32(num(cCPU, i)), Src: int32(num(cSrcCPU, i)), TimeNS: num(cTime, i)})
			case "host_stall":
				w.HostStalls = append(w.HostStalls, HostStall{Task: int32(num(cTask, i)), Act: int32(num(cActivation, i)),
					OffsetNS: num(cOffset, i), LenNS: num(cStallNS, i), CPU: int32(num(cCPU, i)), TimeNS: num(cTime, i), WallNS: num(cWall, i), Busy: int32(num(cBusy, i))})
			default:
				pool, ok := pools[str(cTable, i)]
				if !ok {
					return nil, fmt.Errorf("%s: row %d: unknown table %q", path, i, str(cTable, i))
				}
				c := cPreemptWake
				if pool.idle {
					c = cIdleWake
				}
				*pool.ns = append(*pool.ns, num(c, i))
			}
		}
		rec.Release()
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w.Index()
	return w, nil
}

// irqCPUPlus1 is an activation row's irq_cpu as Activation.IRQCPUPlus1:
// null is 0 (none); a value outside 0..MaxCPUs-1 is kept out of range,
// for Validate to refuse.
func irqCPUPlus1(set bool, v int64) int16 {
	switch {
	case !set:
		return 0
	case v < 0 || v >= model.MaxCPUs:
		return -1
	}
	return int16(v) + 1
}
