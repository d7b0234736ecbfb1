package timeline

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/model"
)

// FormatVersion is written as schema metadata "replay_version"; readers
// refuse files from a newer major version.
const FormatVersion = "1"

// Source describes the trace a timeline came from. Fields a format does not
// carry stay empty. Stored as JSON under the metadata key "source".
type Source struct {
	Format       string   `json:"format"` // "perf.data", "perf.data (pipe)", "trace.dat v7", ...
	Path         string   `json:"path,omitempty"`
	Hostname     string   `json:"hostname,omitempty"`
	OSRelease    string   `json:"os_release,omitempty"`
	Arch         string   `json:"arch,omitempty"`
	PerfVersion  string   `json:"perf_version,omitempty"`
	Cmdline      []string `json:"cmdline,omitempty"`
	CPUDesc      string   `json:"cpu_desc,omitempty"`
	CPUID        string   `json:"cpuid,omitempty"`
	NrCPUs       int      `json:"nr_cpus,omitempty"`
	NrCPUsOnline int      `json:"nr_cpus_online,omitempty"`
	TotalMemKB   uint64   `json:"total_mem_kb,omitempty"`
	// ClockID is the perf attr clockid when perf used -k (-1: perf's
	// default local clock); ClockResNS is CLOCKID's resolution.
	ClockID    int    `json:"clockid"`
	ClockResNS uint64 `json:"clock_res_ns,omitempty"`
	// FirstSampleNS/LastSampleNS are perf's SAMPLE_TIME feature.
	FirstSampleNS int64 `json:"first_sample_ns,omitempty"`
	LastSampleNS  int64 `json:"last_sample_ns,omitempty"`
	// Compressed names the record compression (e.g. "zstd level 1").
	Compressed string `json:"compressed,omitempty"`
	// Events lists the recorded event names (tracepoints and others).
	Events []string `json:"events,omitempty"`
	// Features lists the perf.data header features present.
	Features []string `json:"features,omitempty"`
	// Extra holds format-specific facts not worth a field (e.g. the perf
	// CPU_DOMAIN_INFO section, base64) keyed by name.
	Extra map[string]string `json:"extra,omitempty"`
}

// Records reports whether the source lists an event named name, with or
// without its system ("sched_waking" matches "sched:sched_waking"). An
// empty list says nothing: formats that do not carry one leave it empty.
func (s *Source) Records(name string) bool {
	for _, ev := range s.Events {
		if strings.HasSuffix(ev, name) {
			return true
		}
	}
	return false
}

// Lost counts events the recorder lost, and records the reader dropped or
// repaired. A timeline never hides a loss: each is a count here by reason,
// and each gap is also a "lost" row at its time and CPU.
type LostCounts struct {
	// Events is the total number of events the recorder reported lost.
	Events uint64 `json:"events"`
	// ByCPU maps CPU (as a decimal string, "-1" when unknown) to events lost.
	ByCPU map[string]uint64 `json:"by_cpu,omitempty"`
	// ByReason maps a reason ("PERF_RECORD_LOST", "PERF_RECORD_LOST_SAMPLES",
	// "unknown sample id", "truncated record", ...) to a count.
	ByReason map[string]uint64 `json:"by_reason,omitempty"`
}

// Add records n lost events on cpu for reason.
func (l *LostCounts) Add(cpu int, reason string, n uint64) {
	if l.ByCPU == nil {
		l.ByCPU = map[string]uint64{}
		l.ByReason = map[string]uint64{}
	}
	l.Events += n
	l.ByCPU[fmt.Sprint(cpu)] += n
	l.ByReason[reason] += n
}

// Summary is what a whole timeline holds, computed while writing it.
// Stored as JSON under the metadata key "summary".
type Summary struct {
	Events int64 `json:"events"`
	// EventsByKind counts rows per event name.
	EventsByKind map[string]int64 `json:"events_by_kind"`
	FirstNS      int64            `json:"first_ns"`
	LastNS       int64            `json:"last_ns"`
	// CPUs seen in the cpu column.
	CPUs []int `json:"cpus"`
	// Tasks is the number of distinct thread ids seen in any pid column.
	Tasks int        `json:"tasks"`
	Lost  LostCounts `json:"lost"`
	// Dropped counts records the reader could not use, by reason
	// (e.g. "record before first attr", "trailing garbage").
	Dropped map[string]int64 `json:"dropped,omitempty"`
	// Anomalies are damage found by the common checks every input goes
	// through (Checked): duplicates, time reversals, switch mismatches.
	Anomalies map[string]Anomaly `json:"anomalies,omitempty"`
}

// DroppedText is a Dropped map as one line, "reason: n; ..." in the
// reasons' order ("" when nothing was dropped): what a command says when
// its results cover only part of a trace.
func DroppedText(dropped map[string]int64) string {
	keys := make([]string, 0, len(dropped))
	for k := range dropped {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + strconv.FormatInt(dropped[k], 10)
	}
	return strings.Join(parts, "; ")
}

// Meta is everything a timeline file says about itself.
type Meta struct {
	Source   Source
	Topology *model.Topology // nil when the trace carried none
	Summary  Summary
}

const (
	keyVersion  = "replay_version"
	keySource   = "source"
	keyTopology = "topology"
	keySummary  = "summary"
)

func (m *Meta) encode() (keys, vals []string, err error) {
	add := func(k string, v any) {
		if err != nil {
			return
		}
		var b []byte
		b, err = json.Marshal(v)
		keys, vals = append(keys, k), append(vals, string(b))
	}
	keys, vals = append(keys, keyVersion), append(vals, FormatVersion)
	add(keySource, m.Source)
	if m.Topology != nil {
		add(keyTopology, m.Topology)
	}
	add(keySummary, m.Summary)
	return keys, vals, err
}

func decodeMeta(get func(string) (string, bool)) (*Meta, error) {
	v, ok := get(keyVersion)
	if !ok {
		return nil, fmt.Errorf("not a replay timeline: schema metadata has no %q", keyVersion)
	}
	if v != FormatVersion {
		return nil, fmt.Errorf("timeline format version %q, this replay reads %q", v, FormatVersion)
	}
	m := &Meta{}
	if s, ok := get(keySource); ok {
		if err := json.Unmarshal([]byte(s), &m.Source); err != nil {
			return nil, fmt.Errorf("metadata %q: %v", keySource, err)
		}
	}
	if s, ok := get(keyTopology); ok {
		m.Topology = &model.Topology{}
		if err := json.Unmarshal([]byte(s), m.Topology); err != nil {
			return nil, fmt.Errorf("metadata %q: %v", keyTopology, err)
		}
	}
	if s, ok := get(keySummary); ok {
		if err := json.Unmarshal([]byte(s), &m.Summary); err != nil {
			return nil, fmt.Errorf("metadata %q: %v", keySummary, err)
		}
	}
	return m, nil
}

// summarizer accumulates a Summary from the rows written.
// summarizer runs on every row a reader or writer sees, so its sets are
// bit sets over the usual id ranges (a map insert per row cost more than
// encoding the row), with maps for the rest.
type summarizer struct {
	s      Summary
	byKind map[string]*int64
	last   string // name of the previous row, and its counter
	lastN  *int64
	byIdx  []int64 // rows by event name index (addRow)
	cpus   idSet
	tasks  idSet
	any    bool
}

// idSet is a set of non-negative ids: a bit set below idSetDense (pid_max
// is at most 4194304), a map above.
type idSet struct {
	bits  []uint64
	n     int
	large map[int32]bool
}

const idSetDense = 1 << 22

func (s *idSet) add(id int32) {
	if id < 0 || id >= idSetDense {
		if s.large == nil {
			s.large = map[int32]bool{}
		}
		s.large[id] = true
		return
	}
	w := int(id >> 6)
	if w >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, w+1-len(s.bits)+len(s.bits)/2)...)
	}
	if m := uint64(1) << (id & 63); s.bits[w]&m == 0 {
		s.bits[w] |= m
		s.n++
	}
}

func (s *idSet) len() int { return s.n + len(s.large) }

// ids returns the non-negative ids in order.
func (s *idSet) ids() []int {
	var out []int
	for w, x := range s.bits {
		for ; x != 0; x &= x - 1 {
			out = append(out, w<<6+bits.TrailingZeros64(x))
		}
	}
	var big []int
	for id := range s.large {
		if id >= 0 {
			big = append(big, int(id))
		}
	}
	sort.Ints(big)
	return append(out, big...)
}

func newSummarizer() *summarizer {
	return &summarizer{byKind: map[string]*int64{}}
}

var taskCols = []Col{CommonPID, PrevPID, NextPID, PID, ParentPID, ChildPID}

func (z *summarizer) add(e *Event) {
	z.count(e.Name, e.Time)
	if e.IsSet(CPU) {
		z.cpus.add(e.Int32(CPU))
	}
	for _, c := range taskCols {
		if e.IsSet(c) {
			if p := e.Int32(c); p > 0 {
				z.tasks.add(p)
			}
		}
	}
}

// addRow is add for a packed row whose event name has index ei in the
// writer's event dictionary (counting by index saves hashing the name).
func (z *summarizer) addRow(r *row, ei int32) {
	if int(ei) >= len(z.byIdx) {
		z.byIdx = append(z.byIdx, make([]int64, int(ei)+1-len(z.byIdx))...)
	}
	z.byIdx[ei]++
	z.s.Events++
	z.bound(r.time)
	if r.has&(1<<CPU) != 0 {
		z.cpus.add(int32(r.intCol(CPU)))
	}
	for has := r.has & taskColBits; has != 0; has &= has - 1 {
		if p := int32(r.intCol(Col(bits.TrailingZeros64(has)))); p > 0 {
			z.tasks.add(p)
		}
	}
}

var taskColBits = func() uint64 {
	var m uint64
	for _, c := range taskCols {
		m |= 1 << c
	}
	return m
}()

func (z *summarizer) count(name string, t int64) {
	z.s.Events++
	if z.lastN == nil || name != z.last {
		n := z.byKind[name]
		if n == nil {
			n = new(int64)
			z.byKind[name] = n
		}
		z.last, z.lastN = name, n
	}
	*z.lastN++
	z.bound(t)
}

func (z *summarizer) bound(t int64) {
	// Time 0 marks records synthesized before the trace started (perf's
	// /proc scan); they do not bound the traced interval.
	if t != 0 {
		if !z.any || t < z.s.FirstNS {
			z.s.FirstNS = t
		}
		if !z.any || t > z.s.LastNS {
			z.s.LastNS = t
		}
		z.any = true
	}
}

// summary returns what was added. names are the event names of addRow's
// indices (nil when addRow was not used).
func (z *summarizer) summary(names []string) Summary {
	s := z.s
	s.EventsByKind = make(map[string]int64, len(z.byKind)+len(z.byIdx))
	for k, n := range z.byKind {
		s.EventsByKind[k] = *n
	}
	for i, n := range z.byIdx {
		if n > 0 {
			s.EventsByKind[names[i]] += n
		}
	}
	s.CPUs = z.cpus.ids()
	s.Tasks = z.tasks.len()
	return s
}

// Summarize reads r to its end and returns r's metadata with the summary
// computed from the events it held (the reader's lost and dropped counts
// are kept). For a timeline file the stored summary is already complete;
// this is for raw traces.
func Summarize(r EventReader) (*Meta, error) {
	z := newSummarizer()
	for r.Next() {
		z.add(r.Event())
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	m := *r.Meta()
	s := z.summary(nil)
	s.Lost, s.Dropped, s.Anomalies = m.Summary.Lost, m.Summary.Dropped, m.Summary.Anomalies
	m.Summary = s
	return &m, nil
}
