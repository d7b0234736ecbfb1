package analysis

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/schedreplay/replay/internal/atomicfile"
)

// Slice is one run slice: a task's time on a CPU from a switch-in to the
// next switch-out there, with what preceded it. It is one row of
// `perf sched timehist`, which prints it at the switch-out.
type Slice struct {
	CPU  int32
	TID  int32 // 0 for the idle task
	PID  int32 // thread group, -1 when the trace does not say
	Comm string
	// Start is the switch-in (the previous sched_switch on this CPU), -1
	// when the slice began before the CPU's first recorded switch.
	Start int64
	// End is the switch-out; the trace's end when Truncated.
	End int64
	// Run is End-Start, 0 when Start is unknown (as timehist prints it).
	Run int64
	// Wait is the time off-CPU before Start, since the task's previous
	// switch-out; 0 when that is unknown.
	Wait int64
	// SchDelay is Start minus the task's first wakeup since its previous
	// switch-out (Wakeup); 0 and Wakeup -1 when no wakeup was seen then.
	SchDelay int64
	Wakeup   int64
	// State is prev_state at the switch-out ("S", "R+", ...).
	State string
	Idle  bool
	// Migrated: the task last ran on another CPU.
	Migrated bool
	// SpansLoss: events were lost between the task's previous switch-out
	// and End, so the numbers may be wrong.
	SpansLoss bool
	// SwitchMismatch: the previous switch on this CPU switched in another
	// task (a missed event); Start is still that switch, as in timehist.
	SwitchMismatch bool
	// Truncated: the task was still running when the trace ended.
	Truncated bool
}

// SliceSchema is the Arrow schema of the run-slice table.
var SliceSchema = arrow.NewSchema([]arrow.Field{
	{Name: "cpu", Type: arrow.PrimitiveTypes.Int32},
	{Name: "tid", Type: arrow.PrimitiveTypes.Int32},
	{Name: "pid", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "comm", Type: arrow.BinaryTypes.String},
	{Name: "start_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "end_ns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "run_ns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "wait_ns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sch_delay_ns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "wakeup_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "prev_state", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "idle", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "migrated", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "spans_loss", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "switch_mismatch", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "truncated", Type: arrow.FixedWidthTypes.Boolean},
}, func() *arrow.Metadata {
	m := arrow.NewMetadata(
		[]string{"replay_slices_version", "definition"},
		[]string{"1", "one row per sched_switch, as perf sched timehist prints it: run_ns = end - start (previous switch on the CPU), " +
			"wait_ns = start - the task's previous switch-out, sch_delay_ns = start - its first wakeup since then; " +
			"rows with truncated=true are tasks still running at the trace's end"})
	return &m
}())

// sliceBatchRows is how many slices go in one record batch.
const sliceBatchRows = 64 * 1024

// SliceFile writes run slices to an Arrow IPC file. The file appears at
// its path only when Close succeeds (internal/atomicfile): a failed or
// killed run leaves nothing.
type SliceFile struct {
	path string
	f    *atomicfile.File
	w    *ipc.FileWriter
	b    *array.RecordBuilder
	n    int
}

// CreateSliceFile starts a slice file at path.
func CreateSliceFile(path string) (*SliceFile, error) {
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	mem := memory.NewGoAllocator()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(SliceSchema), ipc.WithAllocator(mem))
	if err != nil {
		f.Abort()
		return nil, err
	}
	return &SliceFile{path: path, f: f, w: w, b: array.NewRecordBuilder(mem, SliceSchema)}, nil
}

// WriteSlice implements SliceSink.
func (s *SliceFile) WriteSlice(x *Slice) error {
	f := s.b.Fields()
	f[0].(*array.Int32Builder).Append(x.CPU)
	f[1].(*array.Int32Builder).Append(x.TID)
	appendInt32(f[2].(*array.Int32Builder), x.PID, x.PID >= 0)
	f[3].(*array.StringBuilder).Append(x.Comm)
	appendInt64(f[4].(*array.Int64Builder), x.Start, x.Start >= 0)
	f[5].(*array.Int64Builder).Append(x.End)
	f[6].(*array.Int64Builder).Append(x.Run)
	f[7].(*array.Int64Builder).Append(x.Wait)
	f[8].(*array.Int64Builder).Append(x.SchDelay)
	appendInt64(f[9].(*array.Int64Builder), x.Wakeup, x.Wakeup >= 0)
	if x.State != "" {
		f[10].(*array.StringBuilder).Append(x.State)
	} else {
		f[10].AppendNull()
	}
	f[11].(*array.BooleanBuilder).Append(x.Idle)
	f[12].(*array.BooleanBuilder).Append(x.Migrated)
	f[13].(*array.BooleanBuilder).Append(x.SpansLoss)
	f[14].(*array.BooleanBuilder).Append(x.SwitchMismatch)
	f[15].(*array.BooleanBuilder).Append(x.Truncated)
	s.n++
	if s.n >= sliceBatchRows {
		return s.flush()
	}
	return nil
}

func appendInt32(b *array.Int32Builder, v int32, ok bool) {
	if ok {
		b.Append(v)
	} else {
		b.AppendNull()
	}
}

func appendInt64(b *array.Int64Builder, v int64, ok bool) {
	if ok {
		b.Append(v)
	} else {
		b.AppendNull()
	}
}

func (s *SliceFile) flush() error {
	if s.n == 0 {
		return nil
	}
	rec := s.b.NewRecordBatch()
	defer rec.Release()
	s.n = 0
	return s.w.Write(rec)
}

// Close finishes the file and moves it into place.
func (s *SliceFile) Close() error {
	err := s.flush()
	if e := s.w.Close(); err == nil {
		err = e
	}
	s.b.Release()
	if err == nil {
		err = s.f.Commit()
	} else {
		s.f.Abort()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	return nil
}

// Abort discards the file.
func (s *SliceFile) Abort() {
	s.w.Close()
	s.b.Release()
	s.f.Abort()
}
