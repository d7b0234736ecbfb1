// Command wakeprev counts where a kernel placed the wakeups of sleeping
// tasks in a trace that records them with sched_wakeup (target_cpu)
// alone, as a 4.19 ftrace text does: analysis's wake choices need
// sched_waking, written before the choice, and leave such a trace out.
// Each wakeup of a task the trace saw run, and saw block since, is booked
// by where it went against the CPU the task last ran on (prev) and the
// CPU that logged the wakeup: a task there is the waker on its own CPU;
// the idle task is an interrupt, or a wakeup an IPI queued on its target
// (the event is then written on the target CPU, which is why the two are
// counted apart). When the trace has sched_overutilized events (an EAS
// kernel's), the counts are split by the root domain's state; with
// -topology, a task's wakeup kept on its waker's CPU is also counted when
// another CPU of that CPU's LLC was idle by the trace's last switch there.
// FIDELITY.md round 107:
//
//	go run ./scripts/wakeprev -topology juno-r0 ../shared/fixtures/public/lisa/tests/assets/trace_txt/trace.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/timeline"
)

// Where a wakeup went.
const (
	prevIsWaker = iota // prev, the logging CPU's
	prevOnly           // prev, not the logging CPU
	logOnly            // the logging CPU, not prev
	elsewhere
	nPlaces
)

var placeNames = [nPlaces]string{"on prev, the logging CPU", "on prev, another CPU", "on the logging CPU, not prev", "elsewhere"}

// tally is one trace's counts: [overutilized state + 1][by idle][place].
type tally struct {
	n [3][2][nPlaces]int
	// idleSibling: task wakeups kept on the waker's CPU while another CPU
	// of its LLC was idle, by overutilized state + 1.
	idleSibling [3]int
	haveOU      bool
}

// reader follows one trace.
type reader struct {
	llc  [][]int // per CPU, its LLC's CPUs (nil without -topology)
	last map[int32]int32
	// asleep: the task's last switch-out left it blocked.
	asleep map[int32]bool
	cur    map[int32]int32 // per CPU, the pid switched in (0 idle)
	ou     int             // -1 unknown, 0, 1
	t      tally
}

func (r *reader) event(e *timeline.Event) error {
	c, ok := scriptutil.CPUOf(e)
	if !ok {
		return nil
	}
	switch e.Kind {
	case timeline.SchedSwitch:
		prev, next := e.Int32(timeline.PrevPID), e.Int32(timeline.NextPID)
		if prev != 0 {
			r.last[prev] = c
			st := e.Str(timeline.PrevState)
			r.asleep[prev] = len(st) > 0 && st[0] != 'R'
		}
		if next != 0 {
			r.last[next] = c
			r.asleep[next] = false
		}
		r.cur[c] = next
	case timeline.SchedWakeup:
		p := e.Int32(timeline.PID)
		prev, seen := r.last[p]
		if p == 0 || !seen || !r.asleep[p] || !e.IsSet(timeline.TargetCPU) {
			return nil
		}
		r.asleep[p] = false
		target := e.Int32(timeline.TargetCPU)
		place := elsewhere
		switch {
		case target == prev && target == c:
			place = prevIsWaker
		case target == prev:
			place = prevOnly
		case target == c:
			place = logOnly
		}
		byIdle := 0
		if e.Int32(timeline.CommonPID) == 0 {
			byIdle = 1
		}
		r.t.n[r.ou+1][byIdle][place]++
		if byIdle == 0 && place == prevIsWaker && r.llc != nil && int(c) < len(r.llc) {
			for _, o := range r.llc[c] {
				if int32(o) != c && r.cur[int32(o)] == 0 {
					r.t.idleSibling[r.ou+1]++
					break
				}
			}
		}
	default:
		if e.Name == "sched_overutilized" || e.Name == "sched:sched_overutilized" {
			if v, ok := e.IntField("overutilized"); ok {
				r.ou, r.t.haveOU = min(int(v), 1), true
			}
		}
	}
	return nil
}

// count reads one trace.
func count(path string, llc [][]int) (tally, error) {
	r := &reader{llc: llc, last: map[int32]int32{}, asleep: map[int32]bool{}, cur: map[int32]int32{}, ou: -1}
	err := scriptutil.ReadEvents(path, nil, r.event)
	return r.t, err
}

// llcOf is each CPU's LLC, from a --topology spec.
func llcOf(spec string) ([][]int, error) {
	top, err := model.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	d, err := model.BuildDomains(top, "")
	if err != nil {
		return nil, err
	}
	out := make([][]int, d.NrCPUs)
	for c := range out {
		if l := d.CPUs[c].LLC; l != nil {
			out[c] = l.Span
		} else {
			out[c] = []int{c}
		}
	}
	return out, nil
}

func (t tally) write(w io.Writer, path string, llc bool) {
	fmt.Fprintln(w, path)
	states := []int{0}
	names := []string{"all"}
	if t.haveOU {
		states, names = []int{0, 1, 2}, []string{"before any sched_overutilized", "not overutilized", "overutilized"}
	}
	for k, st := range states {
		for byIdle, who := range []string{"by a task", "by the idle task"} {
			var row [nPlaces]int
			total := 0
			for p := range row {
				if t.haveOU {
					row[p] = t.n[st][byIdle][p]
				} else {
					row[p] = t.n[0][byIdle][p] + t.n[1][byIdle][p] + t.n[2][byIdle][p]
				}
				total += row[p]
			}
			if total == 0 {
				continue
			}
			fmt.Fprintf(w, "  %s, %s: %d wakeups:", names[k], who, total)
			for p, n := range row {
				fmt.Fprintf(w, " %s %d;", placeNames[p], n)
			}
			fmt.Fprintln(w)
		}
		if llc {
			n := t.idleSibling[st]
			if !t.haveOU {
				n = t.idleSibling[0] + t.idleSibling[1] + t.idleSibling[2]
			}
			fmt.Fprintf(w, "  %s: task wakeups kept on the waker's CPU with another CPU of its LLC idle: %d\n", names[k], n)
		}
	}
}

func main() {
	fs := flag.NewFlagSet("wakeprev", flag.ExitOnError)
	spec := fs.String("topology", "", "the machine (a --topology spec or preset): also count the wakeups kept on the waker's CPU beside an idle CPU of its LLC")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: wakeprev [-topology SPEC] TRACE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() == 0 {
		fs.Usage()
		os.Exit(2)
	}
	var llc [][]int
	if *spec != "" {
		var err error
		if llc, err = llcOf(*spec); err != nil {
			fmt.Fprintln(os.Stderr, "wakeprev:", err)
			os.Exit(1)
		}
	}
	for _, path := range fs.Args() {
		t, err := count(path, llc)
		if err != nil {
			fmt.Fprintln(os.Stderr, "wakeprev:", err)
			os.Exit(1)
		}
		t.write(os.Stdout, path, llc != nil)
	}
}
