package ftrace

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

// How a text value becomes a column or field value.
type valKind uint8

const (
	vAuto  valKind = iota // integer if it parses as one, else string
	vDec                  // decimal integer
	vHex                  // hex integer without 0x (print fmt %x / %llx)
	vStr                  // string, kept whole (may hold spaces)
	vBool                 // "true"/"false" or 0/1
	vNS                   // decimal, optionally followed by " [ns]"
	vState                // sched_switch prev_state: letters or raw number
)

type keySpec struct {
	field string // the format field the text key stands for
	kind  valKind
}

type eventSpec struct {
	system string
	keys   map[string]keySpec
}

// events lists the keys each sched/task event prints, across kernels
// (4.x to today), in the kernel print fmt, `trace-cmd report -R` and
// `perf script`. Keys of the print fmt that differ from the field name
// (sched_process_fork prints comm=/pid= for parent_comm/parent_pid) are
// mapped back to the field, so every rendering gives the same row.
var events = map[string]*eventSpec{}

func def(system, name string, keys ...string) {
	s := &eventSpec{system: system, keys: map[string]keySpec{}}
	for _, k := range keys {
		text, field := k, k
		if i := strings.IndexByte(k, '>'); i >= 0 {
			text, field = k[:i], k[i+1:]
		}
		s.keys[text] = keySpec{field: field, kind: kindOf(field)}
	}
	events[name] = s
}

// kindOf is the text kind of a known field.
func kindOf(field string) valKind {
	switch field {
	case "prev_state":
		return vState
	case "clone_flags":
		return vHex
	case "runtime", "vruntime", "delay":
		return vNS
	case "group_dead":
		return vBool
	case "oldcomm", "newcomm", "interp":
		return vStr
	case "oom_score_adj", "success", "running", "load":
		return vDec
	}
	if c, ok := timeline.LookupCol(field); ok && usableCol(c) {
		if c.IsString() {
			return vStr
		}
		return vDec
	}
	return vAuto
}

func init() {
	def("sched", "sched_switch", "prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio")
	for _, n := range []string{"sched_waking", "sched_wakeup", "sched_wakeup_new"} {
		def("sched", n, "comm", "pid", "prio", "success", "target_cpu")
	}
	def("sched", "sched_migrate_task", "comm", "pid", "prio", "orig_cpu", "dest_cpu", "running", "load")
	def("sched", "sched_process_fork", "comm>parent_comm", "pid>parent_pid", "parent_comm", "parent_pid", "child_comm", "child_pid")
	def("sched", "sched_process_exec", "filename", "pid", "old_pid")
	def("sched", "sched_process_exit", "comm", "pid", "prio", "group_dead")
	for _, n := range []string{"sched_process_free", "sched_process_wait", "sched_kthread_stop", "sched_process_hang"} {
		def("sched", n, "comm", "pid", "prio")
	}
	def("sched", "sched_stat_runtime", "comm", "pid", "runtime", "vruntime")
	for _, n := range []string{"sched_stat_wait", "sched_stat_sleep", "sched_stat_iowait", "sched_stat_blocked"} {
		def("sched", n, "comm", "pid", "delay")
	}
	def("sched", "sched_prepare_exec", "interp", "filename", "pid", "comm")
	def("task", "task_newtask", "pid", "comm", "clone_flags", "oom_score_adj")
	def("task", "task_rename", "pid", "oldcomm", "newcomm", "oom_score_adj")
}

// systems names the system of common non-sched events, which text traces
// print without it (the timeline prefixes every non-sched event with its
// system, as the binary readers do).
var systems = map[string]string{
	"print": "ftrace", "bprint": "ftrace", "bputs": "ftrace", "function": "ftrace", "funcgraph_entry": "ftrace", "funcgraph_exit": "ftrace",
	"cpu_idle": "power", "cpu_frequency": "power", "cpu_frequency_limits": "power", "clock_set_rate": "power",
	"irq_handler_entry": "irq", "irq_handler_exit": "irq", "softirq_entry": "irq", "softirq_exit": "irq", "softirq_raise": "irq",
	"ipi_raise": "ipi", "ipi_entry": "ipi", "ipi_exit": "ipi", "ipi_send_cpu": "ipi", "ipi_send_cpumask": "ipi",
	"workqueue_queue_work": "workqueue", "workqueue_activate_work": "workqueue", "workqueue_execute_start": "workqueue", "workqueue_execute_end": "workqueue",
	"timer_start": "timer", "timer_expire_entry": "timer", "timer_expire_exit": "timer", "timer_cancel": "timer", "timer_init": "timer",
	"hrtimer_start": "timer", "hrtimer_expire_entry": "timer", "hrtimer_expire_exit": "timer", "hrtimer_cancel": "timer", "hrtimer_init": "timer",
	"tracing_mark_write": "ftrace",
}

// SystemOf guesses the system of an event name printed without one.
func SystemOf(name string) string {
	if s := events[name]; s != nil {
		return s.system
	}
	if s, ok := systems[name]; ok {
		return s
	}
	if strings.HasPrefix(name, "sched_") {
		return "sched"
	}
	return ""
}

// usableCol reports columns a tracepoint field may fill by name. cpu is
// the recording CPU, never a field (sched_wake_idle_without_ipi has a
// "cpu" field), and the common_* and derived columns are set elsewhere.
func usableCol(c timeline.Col) bool {
	switch c {
	case timeline.CPU, timeline.CommonPID, timeline.CommonTGID, timeline.CommonComm, timeline.CommonFlags,
		timeline.CommonPreemptCount, timeline.PrevStateRaw, timeline.LostCount:
		return false
	}
	return true
}

// StateText turns prev_state as text into the row's prev_state letters and
// prev_state_raw. Text carries either the letters (kernel print fmt, perf
// script), a number (trace-cmd report -R) or the trace-cmd sched_switch
// plugin's letters; the bit layout is the one of the kernel release given
// (≥ 4.14 when unknown).
type StateText struct {
	dec  *tracefmt.StateDecoder
	bits map[string]int64
	plus int64
}

// NewStateText builds the table for a kernel release ("" = newest layout).
func NewStateText(release string) *StateText {
	s := &StateText{dec: tracefmt.StateDecoderForKernel(release), bits: map[string]int64{}}
	for b := 0; b < 16; b++ {
		l := s.dec.Letters(1 << b)
		switch {
		case l == "R+" && s.plus == 0:
			s.plus = 1 << b
		case l != "R" && !strings.ContainsAny(l, "|+"):
			if _, dup := s.bits[l]; !dup {
				s.bits[l] = 1 << b
			}
		}
	}
	return s
}

// FromLetters parses letters as the kernel prints them ("R", "R+", "S",
// "D|K", "I"); raw is rebuilt with the layout's bit values.
func (s *StateText) FromLetters(t string) (raw int64, ok bool) {
	if strings.HasSuffix(t, "+") {
		raw |= s.plus
		t = t[:len(t)-1]
	}
	if t == "R" {
		return raw, true
	}
	for _, l := range strings.Split(t, "|") {
		b, found := s.bits[l]
		if !found {
			return 0, false
		}
		raw |= b
	}
	return raw, t != ""
}

// Letters renders a raw value (text with numeric prev_state).
func (s *StateText) Letters(raw int64) string { return s.dec.Letters(raw) }

// pluginStates is the fixed table of the trace-cmd/libtraceevent
// sched_switch plugin: letter i stands for bit i, "R" for none. On kernels
// ≥ 4.14 its W is really I (0x80) and it cannot show the preempted bit.
const pluginStates = "SDTtZXxW"

// FromPlugin parses the plugin's state letters into the raw bits they
// stand for (bits 0-7 exactly; the preempted bit is lost by the plugin).
func FromPlugin(t string) (int64, bool) {
	if t == "R" {
		return 0, true
	}
	var raw int64
	for _, l := range strings.Split(t, "|") {
		i := strings.Index(pluginStates, l)
		if len(l) != 1 || i < 0 {
			return 0, false
		}
		raw |= 1 << i
	}
	return raw, true
}

var (
	pluginSwitch = regexp.MustCompile(`^(.*):(-?\d+) \[(-?\d+)\] (\S+) ==> (.*):(-?\d+) \[(-?\d+)\]$`)
	pluginWakeup = regexp.MustCompile(`^(.*):(-?\d+) \[(-?\d+)\](?: success=(\d+))? CPU:(\d+)$`)
)

// BodyParser fills a row from an event's text body (everything after
// "event: "). It is shared by the ftrace and perf script readers.
type BodyParser struct {
	State *StateText
	strs  map[string]string
}

// NewBodyParser returns a parser whose prev_state layout is that of
// release ("" when unknown).
func NewBodyParser(release string) *BodyParser {
	return &BodyParser{State: NewStateText(release), strs: map[string]string{}}
}

func (p *BodyParser) intern(s string) string {
	if v, ok := p.strs[s]; ok {
		return v
	}
	if len(p.strs) > 1<<16 {
		clear(p.strs)
	}
	s = strings.Clone(s)
	p.strs[s] = s
	return s
}

// Parse sets e's fields from body for the event called name (bare name,
// no system). Unknown events are parsed as key=value pairs; a body that
// has none is kept whole in the field "body".
func (p *BodyParser) Parse(e *timeline.Event, name, body string) error {
	body = strings.TrimSpace(body)
	spec := events[name]
	switch name {
	case "sched_switch":
		if !strings.Contains(body, "prev_comm=") {
			return p.pluginSwitch(e, body)
		}
	case "sched_waking", "sched_wakeup", "sched_wakeup_new":
		if !strings.Contains(body, "comm=") {
			return p.pluginWakeup(e, body)
		}
	}
	if body == "" {
		return nil
	}
	if !strings.Contains(body, "=") {
		e.Fields = append(e.Fields, timeline.Field{Name: "body", Kind: timeline.FieldString, Str: p.intern(body)})
		return nil
	}
	pos := 0
	for pos < len(body) {
		for pos < len(body) && body[pos] == ' ' {
			pos++
		}
		if strings.HasPrefix(body[pos:], "==> ") {
			pos += 4
			continue
		}
		eq := strings.IndexByte(body[pos:], '=')
		if eq <= 0 || !isIdent(body[pos:pos+eq]) {
			if spec == nil && pos == 0 {
				// Free text of an event we have no table for (print,
				// bprint as trace-cmd renders them): keep it whole.
				e.Fields = append(e.Fields, timeline.Field{Name: "body", Kind: timeline.FieldString, Str: p.intern(body)})
				return nil
			}
			return fmt.Errorf("expected key=value at %q", clip(body[pos:]))
		}
		key := body[pos : pos+eq]
		ks, known := keySpec{}, false
		if spec != nil {
			ks, known = spec.keys[key]
		}
		if !known {
			ks = keySpec{field: key, kind: kindOf(key)}
		}
		start := pos + eq + 1
		end := valueEnd(body, start, spec, ks.kind == vStr)
		if err := p.set(e, ks, body[start:end]); err != nil {
			return err
		}
		pos = end
	}
	return nil
}

// valueEnd finds where the value starting at start ends: at the next
// " key=" (or " ==> "). String values (comms, file names) may hold spaces
// and "=", so they end only at a key the event is known to print.
func valueEnd(body string, start int, spec *eventSpec, str bool) int {
	for i := start; i < len(body); i++ {
		if body[i] != ' ' {
			continue
		}
		rest := body[i+1:]
		if strings.HasPrefix(rest, "==> ") {
			return i
		}
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || !isIdent(rest[:eq]) {
			continue
		}
		if !str || spec == nil {
			return i
		}
		if _, ok := spec.keys[rest[:eq]]; ok {
			return i
		}
	}
	return len(body)
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// set stores one value.
func (p *BodyParser) set(e *timeline.Event, ks keySpec, v string) error {
	bad := func() error { return fmt.Errorf("%s=%q: expected %s", ks.field, clip(v), kindName(ks.kind)) }
	if ks.kind == vState {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			e.SetInt(timeline.PrevStateRaw, n)
			e.SetStr(timeline.PrevState, p.State.Letters(n))
			return nil
		}
		raw, ok := p.State.FromLetters(v)
		if !ok {
			return bad()
		}
		e.SetInt(timeline.PrevStateRaw, raw)
		e.SetStr(timeline.PrevState, p.intern(v))
		return nil
	}
	col, isCol := timeline.LookupCol(ks.field)
	isCol = isCol && usableCol(col)
	if isCol && col.IsString() {
		e.SetStr(col, p.intern(v))
		return nil
	}
	var n int64
	var err error
	switch ks.kind {
	case vStr:
		e.Fields = append(e.Fields, timeline.Field{Name: ks.field, Kind: timeline.FieldString, Str: p.intern(v)})
		return nil
	case vAuto:
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			if isCol {
				return bad()
			}
			e.Fields = append(e.Fields, timeline.Field{Name: ks.field, Kind: timeline.FieldString, Str: p.intern(v)})
			return nil
		}
	case vDec:
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			u, uerr := strconv.ParseUint(v, 10, 64)
			if uerr != nil {
				return bad()
			}
			n = int64(u)
		}
	case vHex:
		u, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
		if err != nil {
			return bad()
		}
		n = int64(u)
	case vNS:
		u, err := strconv.ParseUint(strings.TrimSuffix(v, " [ns]"), 10, 64)
		if err != nil {
			return bad()
		}
		n = int64(u)
	case vBool:
		switch v {
		case "true", "1":
			n = 1
		case "false", "0":
		default:
			return bad()
		}
	}
	if isCol {
		e.SetInt(col, n)
	} else {
		e.Fields = append(e.Fields, timeline.Field{Name: ks.field, Kind: timeline.FieldInt, Int: n})
	}
	return nil
}

func kindName(k valKind) string {
	switch k {
	case vDec, vAuto:
		return "a decimal integer"
	case vHex:
		return "a hex integer"
	case vNS:
		return "nanoseconds"
	case vBool:
		return "true or false"
	case vState:
		return "state letters or a number"
	}
	return "a string"
}

func (p *BodyParser) pluginSwitch(e *timeline.Event, body string) error {
	m := pluginSwitch.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("expected sched_switch as \"prev_comm=... ==> next_comm=...\" or \"comm:pid [prio] S ==> comm:pid [prio]\", got %q", clip(body))
	}
	raw, ok := FromPlugin(m[4])
	if !ok {
		return fmt.Errorf("sched_switch state %q: expected letters of %q", m[4], pluginStates)
	}
	e.SetStr(timeline.PrevComm, p.intern(m[1]))
	e.SetInt(timeline.PrevPID, atoi(m[2]))
	e.SetInt(timeline.PrevPrio, atoi(m[3]))
	e.SetInt(timeline.PrevStateRaw, raw)
	e.SetStr(timeline.PrevState, p.State.Letters(raw))
	e.SetStr(timeline.NextComm, p.intern(m[5]))
	e.SetInt(timeline.NextPID, atoi(m[6]))
	e.SetInt(timeline.NextPrio, atoi(m[7]))
	return nil
}

func (p *BodyParser) pluginWakeup(e *timeline.Event, body string) error {
	m := pluginWakeup.FindStringSubmatch(body)
	if m == nil {
		return fmt.Errorf("expected a wakeup as \"comm=... pid=...\" or \"comm:pid [prio] CPU:nnn\", got %q", clip(body))
	}
	e.SetStr(timeline.Comm, p.intern(m[1]))
	e.SetInt(timeline.PID, atoi(m[2]))
	e.SetInt(timeline.Prio, atoi(m[3]))
	if m[4] != "" {
		e.SetInt(timeline.Success, atoi(m[4]))
	}
	e.SetInt(timeline.TargetCPU, atoi(m[5]))
	return nil
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
