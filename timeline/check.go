package timeline

import (
	"fmt"

	"github.com/schedreplay/replay/model"
)

// Anomaly is a kind of damage a checked stream showed: how often, and
// where it was first seen (row numbers of the stream, 0-based, and times),
// so a user can find it in the trace.
type Anomaly struct {
	Count int64    `json:"count"`
	First []string `json:"first,omitempty"` // "row N at T ns", up to maxAnomalyExamples
}

const maxAnomalyExamples = 5

// Reasons a Checked stream reports.
const (
	AnomalyDuplicate     = "event identical to the previous one on its CPU (kept)"
	AnomalyTimeBackwards = "time went backwards (kept, in file order)"
	AnomalySwitchFrom    = "sched_switch from a task that was not running on that CPU (kept)"
	// The kernel switches only between two different tasks: a record
	// naming one task on both sides is damaged (whatif's extraction skips
	// it).
	AnomalySwitchSelf = "sched_switch from a task to itself (kept)"
)

// Checked wraps a stream and checks what no reader can see alone, the
// same way for every format: an event identical to the previous event on
// its CPU is counted (a duplicated record; kept, since perf itself writes
// some, e.g. two synthesized COMM records for an exec, and perf script
// shows both), a time earlier than one already
// returned is kept but counted (the reader's reorder window was too small,
// or the clock jumped), and a sched_switch whose prev_pid is not the task
// the CPU's previous sched_switch put on it is counted (a lost switch, or a
// trace that starts mid-run: the analysis treats it as the true state), and
// so is a sched_switch from a task to itself, which the kernel never writes.
// Counts and first positions go to Meta().Summary.Anomalies.
//
// An event carrying a CPU number (cpu, target_cpu, orig_cpu, dest_cpu)
// outside what a kernel can have (CheckCPUs) ends the stream with an
// error: per-CPU state is indexed by it.
func Checked(r EventReader) EventReader {
	return &checked{r: r, cpus: map[int32]*cpuCheck{}}
}

type checked struct {
	r        EventReader
	err      error
	row      int64
	lastTime int64
	started  bool
	cpus     map[int32]*cpuCheck
	dense    []*cpuCheck // cpus below len(dense), looked up without hashing
	anom     map[string]*Anomaly
	meta     Meta
}

// cpuCheck is what the checks keep per CPU.
type cpuCheck struct {
	last       Event // previous event
	current    int32 // task put on the CPU by its last sched_switch
	hasCurrent bool
}

func (c *checked) note(reason string, row int64, e *Event) {
	if c.anom == nil {
		c.anom = map[string]*Anomaly{}
	}
	a := c.anom[reason]
	if a == nil {
		a = &Anomaly{}
		c.anom[reason] = a
	}
	a.Count++
	if len(a.First) < maxAnomalyExamples {
		a.First = append(a.First, fmt.Sprintf("row %d at %d ns", row, e.Time))
	}
}

func (c *checked) Next() bool {
	if c.err != nil {
		return false
	}
	if !c.r.Next() {
		return false
	}
	e := c.r.Event()
	row := c.row
	c.row++
	if err := CheckCPUs(e); err != nil {
		c.err = fmt.Errorf("event %d at %d ns: %w", row, e.Time, err)
		if p := c.r.Meta().Source.Path; p != "" {
			c.err = fmt.Errorf("%s: %w", p, c.err)
		}
		return false
	}
	if e.IsSet(CPU) {
		cpu := e.Int32(CPU)
		k, fresh := c.cpu(cpu)
		if !fresh && sameEvent(&k.last, e) {
			c.note(AnomalyDuplicate, row, e)
		}
		k.last.copyRow(e)
		if e.Kind == SchedSwitch && e.IsSet(PrevPID) && e.IsSet(NextPID) {
			if k.hasCurrent && k.current != e.Int32(PrevPID) {
				c.note(AnomalySwitchFrom, row, e)
			}
			if p := e.Int32(PrevPID); p != 0 && p == e.Int32(NextPID) {
				c.note(AnomalySwitchSelf, row, e)
			}
			k.current, k.hasCurrent = e.Int32(NextPID), true
		}
	}
	// Time 0 marks records synthesized before the trace started.
	if e.Time != 0 {
		if c.started && e.Time < c.lastTime {
			c.note(AnomalyTimeBackwards, row, e)
		} else {
			c.lastTime, c.started = e.Time, true
		}
	}
	return true
}

// CheckCPUs returns an error when e carries a CPU number (cpu, target_cpu,
// orig_cpu, dest_cpu) outside 0..model.MaxCPUs-1: readers of the timeline
// index per-CPU state by them, so a damaged or hand-made input must not
// make them allocate or index beyond what a kernel can have.
func CheckCPUs(e *Event) error {
	for _, col := range [...]Col{CPU, TargetCPU, OrigCPU, DestCPU} {
		if v := e.Int(col); e.IsSet(col) && (v < 0 || v >= model.MaxCPUs) {
			return fmt.Errorf("%s: %s %d outside 0..%d", e.Name, col.Name(), v, model.MaxCPUs-1)
		}
	}
	return nil
}

// cpu returns the state kept for a CPU, creating it (fresh) on first use.
func (c *checked) cpu(cpu int32) (k *cpuCheck, fresh bool) {
	if cpu >= 0 && int(cpu) < len(c.dense) && c.dense[cpu] != nil {
		return c.dense[cpu], false
	}
	if k := c.cpus[cpu]; k != nil {
		return k, false
	}
	k = &cpuCheck{}
	c.cpus[cpu] = k
	if cpu >= 0 && cpu < 4096 {
		if int(cpu) >= len(c.dense) {
			c.dense = append(c.dense, make([]*cpuCheck, int(cpu)+1-len(c.dense))...)
		}
		c.dense[cpu] = k
	}
	return k, true
}

// sameEvent reports whether two events are the same record: same time,
// name, columns and fields.
func sameEvent(a, b *Event) bool {
	if a.Time != b.Time || a.Name != b.Name || a.Has != b.Has || len(a.Fields) != len(b.Fields) || len(a.Callchain) != len(b.Callchain) {
		return false
	}
	for col := Col(0); col < NumCols; col++ {
		if a.Has&(1<<col) != 0 && (a.ints[col] != b.ints[col] || a.strs[col] != b.strs[col]) {
			return false
		}
	}
	for i := range a.Fields {
		fa, fb := &a.Fields[i], &b.Fields[i]
		if fa.Name != fb.Name || fa.Kind != fb.Kind || fa.Int != fb.Int || fa.Str != fb.Str || len(fa.Ints) != len(fb.Ints) || string(fa.Bytes) != string(fb.Bytes) {
			return false
		}
		for j := range fa.Ints {
			if fa.Ints[j] != fb.Ints[j] {
				return false
			}
		}
	}
	for i := range a.Callchain {
		if a.Callchain[i] != b.Callchain[i] {
			return false
		}
	}
	return true
}

func (c *checked) Event() *Event { return c.r.Event() }
func (c *checked) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.r.Err()
}
func (c *checked) Close() error { return c.r.Close() }

// Meta is the wrapped stream's metadata with the anomalies found so far.
func (c *checked) Meta() *Meta {
	c.meta = *c.r.Meta()
	if len(c.anom) > 0 {
		m := make(map[string]Anomaly, len(c.anom))
		for k, v := range c.anom {
			m[k] = *v
		}
		c.meta.Summary.Anomalies = m
	}
	return &c.meta
}
