package tracedat

import "github.com/schedreplay/replay/timeline"

// CommTable names the task of each event (common_comm). ftrace-family
// traces have no per-event comm: the recorder keeps a pid→comm cache
// (saved_cmdlines) and prints or stores it. Pids missing from it are
// named from sched_switch prev_comm/next_comm seen so far, and pid 0 is
// "swapper", as perf names the idle task. The text readers use the same
// table for lines whose comm is "<...>", so binary and text agree.
type CommTable struct {
	// names holds the saved cmdlines (seed, never replaced) and the names
	// learned from sched_switch, in one map: one lookup per event.
	names map[int32]commEntry
}

type commEntry struct {
	s    string
	seed bool
}

// NewCommTable starts from a saved-cmdlines table (may be nil).
func NewCommTable(seed map[int]string) *CommTable {
	t := &CommTable{names: make(map[int32]commEntry, len(seed))}
	for pid, s := range seed {
		if int(int32(pid)) == pid {
			t.names[int32(pid)] = commEntry{s: s, seed: true}
		}
	}
	return t
}

// IdleComm is the common_comm of pid 0.
const IdleComm = "swapper"

// Learn records the names a sched_switch carries.
func (t *CommTable) Learn(e *timeline.Event) {
	if e.Kind != timeline.SchedSwitch {
		return
	}
	if e.IsSet(timeline.PrevPID) && e.IsSet(timeline.PrevComm) {
		t.learn(e.Int32(timeline.PrevPID), e.Str(timeline.PrevComm))
	}
	if e.IsSet(timeline.NextPID) && e.IsSet(timeline.NextComm) {
		t.learn(e.Int32(timeline.NextPID), e.Str(timeline.NextComm))
	}
}

func (t *CommTable) learn(pid int32, s string) {
	// Most switches repeat a known name: look up before writing.
	if c, ok := t.names[pid]; ok && (c.seed || c.s == s) {
		return
	}
	t.names[pid] = commEntry{s: s}
}

// Lookup returns the name of pid, preferring the saved cmdlines.
func (t *CommTable) Lookup(pid int32) (string, bool) {
	if pid == 0 {
		return IdleComm, true
	}
	c, ok := t.names[pid]
	return c.s, ok
}

// Fill learns from e, then sets its common_comm when common_pid is known.
func (t *CommTable) Fill(e *timeline.Event) {
	t.Learn(e)
	if !e.IsSet(timeline.CommonPID) {
		return
	}
	if s, ok := t.Lookup(e.Int32(timeline.CommonPID)); ok {
		e.SetStr(timeline.CommonComm, s)
	}
}
