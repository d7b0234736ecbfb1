// Command hiddenwrites counts, in a trace recorded with the write and read
// system-call tracepoints beside the sched ones, the writes of a workload
// to its pipes or sockets that woke their reader and those that found the
// reader awake and so left no sched event: what a sched-only trace cannot
// show, and so what a replay of it cannot wake a reader with (FIDELITY.md
// round 51).
//
//	perf sched record -e syscalls:sys_enter_write -e syscalls:sys_exit_write \
//	    -e syscalls:sys_enter_read -e syscalls:sys_exit_read -- hackbench -g 2 -l 15
//	go run ./scripts/hiddenwrites -comm hackbench perf.data
//
// A write's reader is found from the writes that woke someone: a
// sched_waking by the writer between its sys_enter_write and
// sys_exit_write names the reader behind that descriptor. Writers and the
// readers they woke fall into groups (hackbench's groups: every sender
// writes to every receiver of its group, and a group's senders share
// descriptor numbers); within a group a descriptor is one reader's, so
// every write of the group on it is attributed to that reader. Writes on a
// descriptor no write of its group woke through stay unattributed and are
// counted as such.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

type write struct {
	writer int32
	fd     int64
	at     int64   // sys_enter_write's time
	woke   []int32 // the tasks a sched_waking inside the write named
}

func main() {
	comm := flag.String("comm", "", "count the writes of tasks whose comm starts with this (default: all)")
	args := scriptutil.ParseArgs("usage: hiddenwrites [-comm PREFIX] TRACE", true)
	c, err := measure(args[0], *comm)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hiddenwrites:", err)
		os.Exit(1)
	}
	c.print(os.Stdout)
}

// counts is what measure finds.
type counts struct {
	path, prefix string
	// writes: the workload's writes; attributed to a reader, of which woke
	// (a sched_waking of that reader inside the write) and hidden (none);
	// ambiguous: on a descriptor that woke two readers of one group.
	// hiddenAsleep: hidden writes that came while their reader was asleep
	// by the trace's own switch states (switched out in S or D, not yet
	// woken): the rest found it queued or running.
	writes, attributed, woke, hidden, ambiguous, hiddenAsleep int
	readers                                                   int
	// Per reader, medians: writes attributed, sched_waking events naming
	// it, reads that returned data (0 without sys_exit_read).
	msgs, wakeups, reads float64
	seenRead             bool
}

func (c *counts) print(w io.Writer) {
	fmt.Fprintf(w, "trace: %s\n", c.path)
	fmt.Fprintf(w, "writes by %q tasks: %d; attributed to a reader: %d (unattributed %d, on a descriptor two readers were woken through %d)\n",
		c.prefix, c.writes, c.attributed, c.writes-c.attributed-c.ambiguous, c.ambiguous)
	if c.attributed == 0 {
		return
	}
	fmt.Fprintf(w, "  woke their reader: %d (%.1f %%)\n", c.woke, 100*float64(c.woke)/float64(c.attributed))
	fmt.Fprintf(w, "  found it awake, no sched event: %d (%.1f %%); of those, with the reader switched out asleep by the trace's switch states: %d\n",
		c.hidden, 100*float64(c.hidden)/float64(c.attributed), c.hiddenAsleep)
	fmt.Fprintf(w, "readers: %d; per reader (median): writes attributed %.0f, wakeups %.0f", c.readers, c.msgs, c.wakeups)
	if c.seenRead {
		fmt.Fprintf(w, ", reads returning data %.0f", c.reads)
	}
	fmt.Fprintln(w)
}

func measure(path, prefix string) (*counts, error) {
	open := map[int32]*write{} // per writer tid: the write it is in
	var writes []write
	reads := map[int32]int{}    // per reader tid: reads that returned data
	wakeups := map[int32]int{}  // per task: sched_waking events naming it
	comms := map[int32]string{} // per tid: its comm at its last event
	// sleeps: per tid, the stretches from a switch-out in S or D to the
	// next sched_waking of it (end -1 while open), in time order.
	sleeps := map[int32][][2]int64{}
	seenEnter, seenRead := false, false
	err := scriptutil.ReadEvents(path, nil, func(e *timeline.Event) error {
		tid := e.Int32(timeline.CommonPID)
		if e.IsSet(timeline.CommonComm) {
			comms[tid] = e.Str(timeline.CommonComm)
		}
		switch {
		case e.Kind == timeline.SchedSwitch:
			if st := e.Str(timeline.PrevState); st != "" && (st[0] == 'S' || st[0] == 'D') {
				p := e.Int32(timeline.PrevPID)
				sleeps[p] = append(sleeps[p], [2]int64{e.Time, -1})
			}
		case e.Kind == timeline.SchedWaking:
			wk := e.Int32(timeline.PID)
			wakeups[wk]++
			if sl := sleeps[wk]; len(sl) > 0 && sl[len(sl)-1][1] < 0 {
				sl[len(sl)-1][1] = e.Time
			}
			if w := open[tid]; w != nil {
				w.woke = append(w.woke, wk)
			}
		case e.Name == "syscalls:sys_enter_write":
			seenEnter = true
			fd, ok := e.IntField("fd")
			if !ok {
				return fmt.Errorf("%s: sys_enter_write at %d ns without its fd field", path, e.Time)
			}
			open[tid] = &write{writer: tid, fd: fd, at: e.Time}
		case e.Name == "syscalls:sys_exit_write":
			if w := open[tid]; w != nil {
				writes = append(writes, *w)
				delete(open, tid)
			}
		case e.Name == "syscalls:sys_exit_read":
			seenRead = true
			if ret, ok := e.IntField("ret"); ok && ret > 0 {
				reads[tid]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seenEnter {
		return nil, fmt.Errorf("%s has no syscalls:sys_enter_write events: record with -e syscalls:sys_enter_write -e syscalls:sys_exit_write", path)
	}
	keep := func(tid int32) bool { return strings.HasPrefix(comms[tid], prefix) }

	// Groups: union of each writer with the readers its writes woke.
	groups := scriptutil.Groups{}
	// A write that woke one task of the workload names its reader; a
	// sched_waking of another task inside a write (a kworker woken by an
	// interrupt that came during it) names none.
	names := func(w write) bool { return keep(w.writer) && len(w.woke) == 1 && keep(w.woke[0]) }
	for _, w := range writes {
		if names(w) {
			groups.Join(w.writer, w.woke[0])
		}
	}
	type key struct {
		group int32
		fd    int64
	}
	reader := map[key]int32{} // -1: two readers seen on one descriptor
	for _, w := range writes {
		if !names(w) {
			continue
		}
		k := key{groups.Find(w.writer), w.fd}
		if old, ok := reader[k]; ok && old != w.woke[0] {
			reader[k] = -1
		} else if !ok {
			reader[k] = w.woke[0]
		}
	}
	c := &counts{path: path, prefix: prefix, seenRead: seenRead}
	perReader := map[int32]int{}
	for _, w := range writes {
		if !keep(w.writer) {
			continue
		}
		c.writes++
		rd, ok := reader[key{groups.Find(w.writer), w.fd}]
		switch {
		case !ok:
			continue
		case rd < 0:
			c.ambiguous++
			continue
		}
		c.attributed++
		perReader[rd]++
		if slices.Contains(w.woke, rd) {
			c.woke++
		} else {
			c.hidden++
			if asleepAt(sleeps[rd], w.at) {
				c.hiddenAsleep++
			}
		}
	}
	var msgs, wk, rdN []float64
	for rd, n := range perReader {
		msgs = append(msgs, float64(n))
		wk = append(wk, float64(wakeups[rd]))
		rdN = append(rdN, float64(reads[rd]))
	}
	c.readers = len(perReader)
	c.msgs, c.wakeups, c.reads = median(msgs), median(wk), median(rdN)
	return c, nil
}

// asleepAt reports whether t falls in one of the sleep stretches sl
// (sorted by start; an open one, end -1, runs to the trace's end).
func asleepAt(sl [][2]int64, t int64) bool {
	i := sort.Search(len(sl), func(i int) bool { return sl[i][0] > t }) - 1
	return i >= 0 && (sl[i][1] < 0 || t < sl[i][1])
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
