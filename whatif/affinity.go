package whatif

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/model"
)

// CPU affinity.
//
// A trace records where tasks ran, not where they were allowed to run, so
// a replay moved every task the kernel's rules would move: a command run
// under `taskset -c 1` on two CPUs was replayed spread over both, its
// idle time 98 % under the trace's (FIDELITY.md round 98). Two
// sources give a task's mask (Task.Allowed):
//   - the recorded command line (perf.data's CMDLINE): a command run under
//     taskset or numactl (--physcpubind, --cpunodebind) hands its mask to
//     every task of its process tree (Task.Command), as sched_setaffinity
//     before exec and fork's inheritance do;
//   - the user: --affinity WHO=CPUS for the command's tree, a thread id or
//     a command name (ApplyAffinity), overriding the command line's.
//
// The replay then follows the kernel's rules for restricted tasks
// (select_task_rq's fallback, can_migrate_task's LBF_SOME_PINNED and
// LBF_DST_PINNED, load_balance's retry on another destination and the
// parent group's imbalance flag). Every mask is checked against the trace:
// an activation the trace ran first on a CPU outside its task's mask
// contradicts it and is counted (AffinityNote.Outside; outsideMask says
// which count).

// perfExecComm is the name perf gives its workload child until that child
// execs the recorded command (perf's evlist__prepare_workload).
const perfExecComm = "perf-exec"

// markCommand sets Task.Command on the recorded command's process tree:
// the tasks the trace shows named perf-exec and, through the fork edges,
// every task they and their descendants created (w.Tasks and w.Edges as
// extraction leaves them).
func (x *extractor) markCommand() {
	w := x.w
	var queue []int32
	for i := range w.Tasks {
		if x.perfExec[w.Tasks[i].TID] {
			w.Tasks[i].Command = true
			queue = append(queue, int32(i))
		}
	}
	markDescendants(w, queue)
}

// markDescendants marks, breadth first from the tasks in queue, every task
// forked by a marked one.
func markDescendants(w *Workload, queue []int32) {
	children := map[int32][]int32{}
	for _, e := range w.Edges {
		if e.Kind == EdgeFork {
			children[e.Waker] = append(children[e.Waker], e.Wakee)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !w.Tasks[c].Command {
				w.Tasks[c].Command = true
				queue = append(queue, c)
			}
		}
	}
}

// RecordedCommand is the command a perf command line recorded: the words
// after "--", or else those after the record subcommand's options (perf
// record's options that take a value skip it). nil when cmdline is not a
// perf recording of a command (perf record -a, trace-cmd, no cmdline).
func RecordedCommand(cmdline []string) []string {
	if len(cmdline) < 2 || filepath.Base(cmdline[0]) != "perf" {
		return nil
	}
	for i, a := range cmdline {
		if a == "--" {
			return cmdline[i+1:]
		}
	}
	rec := slices.Index(cmdline, "record")
	if rec < 0 {
		return nil
	}
	for i := rec + 1; i < len(cmdline); i++ {
		a := cmdline[i]
		if !strings.HasPrefix(a, "-") {
			return cmdline[i:]
		}
		if perfValueOption[a] {
			i++
		}
	}
	return nil
}

// perfValueOption: perf record's (and perf sched record's) options whose
// value is the next word.
var perfValueOption = map[string]bool{
	"-e": true, "--event": true, "-o": true, "--output": true, "-C": true, "--cpu": true,
	"-p": true, "--pid": true, "-t": true, "--tid": true, "-u": true, "--uid": true,
	"-c": true, "--count": true, "-F": true, "--freq": true, "-m": true, "--mmap-pages": true,
	"-r": true, "--realtime": true, "-G": true, "--cgroup": true, "-D": true, "--delay": true,
	"--call-graph": true, "-k": true, "--clockid": true,
}

// CommandAffinity is the CPU mask the recorded command ran under when it
// starts with taskset or numactl, and the words that say so; ok false when
// it does not (or their arguments are not read here: a taskset -p, a
// numactl CPU list with "+" or "!", a node list for a topology without
// nodes). topo resolves numactl's nodes and "all".
func CommandAffinity(cmd []string, topo *model.Topology) (cpus []int, why string, ok bool, err error) {
	if len(cmd) == 0 {
		return nil, "", false, nil
	}
	switch filepath.Base(cmd[0]) {
	case "taskset":
		return tasksetMask(cmd)
	case "numactl":
		return numactlMask(cmd, topo)
	}
	return nil, "", false, nil
}

// tasksetMask reads `taskset [-a] [-c] MASK|LIST COMMAND...` (util-linux).
func tasksetMask(cmd []string) ([]int, string, bool, error) {
	list := false
	for i := 1; i < len(cmd); i++ {
		a := cmd[i]
		switch {
		case a == "-c" || a == "--cpu-list":
			list = true
		case a == "-a" || a == "--all-tasks":
		case a == "-p" || a == "--pid":
			return nil, "", false, nil // changes a running task, launches nothing
		case strings.HasPrefix(a, "--"):
			return nil, "", false, nil
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, f := range a[1:] {
				switch f {
				case 'c':
					list = true
				case 'a':
				default:
					return nil, "", false, nil
				}
			}
		default:
			if i+1 >= len(cmd) {
				return nil, "", false, nil // no command: a query
			}
			why := strings.Join(cmd[:i+1], " ")
			var cpus []int
			var err error
			if list {
				cpus, err = model.ParseCPUList(a)
			} else {
				cpus, err = parseHexMask(a)
			}
			if err != nil {
				return nil, why, false, fmt.Errorf("the recorded command's %s: %v", why, err)
			}
			if len(cpus) == 0 {
				return nil, why, false, fmt.Errorf("the recorded command's %s: no CPU", why)
			}
			return cpus, why, true, nil
		}
	}
	return nil, "", false, nil
}

// parseHexMask reads taskset's hexadecimal mask (0x3, 3, ff,ffffffff),
// its CPUs in ascending order (as model.ParseCPUList returns a list's).
func parseHexMask(s string) ([]int, error) {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), ",", "")
	if h == "" || len(h) > model.MaxCPUs/4 {
		return nil, fmt.Errorf("mask %q: want a hexadecimal CPU mask such as 0x3", s)
	}
	var cpus []int
	for i := 0; i < len(h); i++ {
		d, err := strconv.ParseUint(h[len(h)-1-i:len(h)-i], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("mask %q: want a hexadecimal CPU mask such as 0x3", s)
		}
		for b := 0; b < 4; b++ {
			if d&(1<<b) != 0 {
				cpus = append(cpus, 4*i+b)
			}
		}
	}
	return cpus, nil
}

// numactlMask reads numactl's CPU binding: --physcpubind/-C CPUS and
// --cpunodebind/-N NODES (both: their intersection). Its memory options
// are skipped with their values; a command without either binding gives
// no mask.
func numactlMask(cmd []string, topo *model.Topology) ([]int, string, bool, error) {
	var phys, nodes string
	valueOf := func(i int, short, long string) (string, int, bool) {
		a := cmd[i]
		switch {
		case a == short || a == long:
			if i+1 < len(cmd) {
				return cmd[i+1], i + 1, true
			}
		case strings.HasPrefix(a, long+"="):
			return strings.TrimPrefix(a, long+"="), i, true
		case short != "" && strings.HasPrefix(a, short) && len(a) > len(short) && !strings.HasPrefix(a, "--"):
			return a[len(short):], i, true
		}
		return "", i, false
	}
	i := 1
	for ; i < len(cmd); i++ {
		a := cmd[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		if v, j, ok := valueOf(i, "-C", "--physcpubind"); ok {
			phys, i = v, j
			continue
		}
		if v, j, ok := valueOf(i, "-N", "--cpunodebind"); ok {
			nodes, i = v, j
			continue
		}
		skipped := false
		for _, o := range [][2]string{{"-m", "--membind"}, {"-i", "--interleave"}, {"-p", "--preferred"}, {"-P", "--preferred-many"}, {"", "--weighted-interleave"}} {
			if _, j, ok := valueOf(i, o[0], o[1]); ok {
				i, skipped = j, true
				break
			}
		}
		if skipped {
			continue
		}
		switch a {
		case "-l", "--localalloc", "-a", "--all", "-b", "--balancing", "-s", "--show", "-H", "--hardware":
			continue
		}
		return nil, "", false, nil // an option not read here
	}
	if i >= len(cmd) || (phys == "" && nodes == "") {
		return nil, "", false, nil
	}
	why := strings.Join(cmd[:i], " ")
	var cpus []int
	if phys != "" {
		c, err := numactlCPUs(phys, topo)
		if err != nil {
			return nil, why, false, fmt.Errorf("the recorded command's %s: %v", why, err)
		}
		cpus = c
	}
	if nodes != "" {
		if topo == nil || len(topo.Nodes) == 0 {
			return nil, why, false, nil
		}
		ids, err := model.ParseCPUList(nodes)
		if nodes == "all" {
			ids, err = nil, nil
			for _, n := range topo.Nodes {
				ids = append(ids, n.ID)
			}
		}
		if err != nil {
			return nil, why, false, fmt.Errorf("the recorded command's %s: node list: %v", why, err)
		}
		var on []int
		for _, id := range ids {
			found := false
			for _, n := range topo.Nodes {
				if n.ID == id {
					on = append(on, n.CPUs...)
					found = true
				}
			}
			if !found {
				return nil, why, false, fmt.Errorf("the recorded command's %s: the machine has no node %d", why, id)
			}
		}
		slices.Sort(on)
		if cpus == nil {
			cpus = on
		} else {
			cpus = slices.DeleteFunc(cpus, func(c int) bool { _, f := slices.BinarySearch(on, c); return !f })
		}
	}
	if len(cpus) == 0 {
		return nil, why, false, fmt.Errorf("the recorded command's %s: no CPU", why)
	}
	return cpus, why, true, nil
}

// numactlCPUs reads numactl's CPU list: a cpulist or "all"; relative
// ("+") and inverted ("!") lists are refused.
func numactlCPUs(s string, topo *model.Topology) ([]int, error) {
	if s == "all" {
		if topo == nil {
			return nil, fmt.Errorf("CPU list all: no topology")
		}
		var cpus []int
		for c := 0; c < topo.NrCPUs; c++ {
			cpus = append(cpus, c)
		}
		return cpus, nil
	}
	if strings.ContainsAny(s, "+!") {
		return nil, fmt.Errorf("CPU list %q: relative and inverted lists are not read", s)
	}
	return model.ParseCPUList(s)
}

// AffinityRule is one --affinity WHO=CPUS: the tasks it names (Who:
// "command", the recorded command's process tree; a thread id; or a
// command name, every thread of that name) may run on CPUs only.
type AffinityRule struct {
	Who  string
	CPUs []int
}

// ParseAffinityRule reads WHO=CPUS (CPUS a cpulist such as 0-3,8).
func ParseAffinityRule(s string) (AffinityRule, error) {
	who, list, ok := strings.Cut(s, "=")
	who = strings.TrimSpace(who)
	if !ok || who == "" {
		return AffinityRule{}, fmt.Errorf("--affinity %q: want WHO=CPUS (WHO: command, a thread id or a command name; CPUS e.g. 0-3,8)", s)
	}
	cpus, err := model.ParseCPUList(list)
	if err != nil {
		return AffinityRule{}, fmt.Errorf("--affinity %q: %v", s, err)
	}
	if len(cpus) == 0 {
		return AffinityRule{}, fmt.Errorf("--affinity %q: no CPU", s)
	}
	return AffinityRule{Who: who, CPUs: cpus}, nil
}

// AffinityNote says where a set of masks came from and how the trace bears
// them out.
type AffinityNote struct {
	// From: "command line" (with Why, the words) or "--affinity".
	From string `json:"from"`
	Why  string `json:"why,omitempty"`
	// Who and CPUs as given (CPUs as a cpulist).
	Who  string `json:"who"`
	CPUs string `json:"cpus"`
	// Tasks: how many tasks hold the mask; Outside: their activations the
	// trace first ran outside it (outsideMask).
	Tasks   int `json:"tasks"`
	Outside int `json:"outside"`
	// Named: the tasks the command line's mask found (the command's
	// process tree), before any rule took some over.
	Named int `json:"-"`
}

// String is the note's line in --validate's trace notes.
func (n AffinityNote) String() string {
	src := "--affinity " + n.Who + "=" + n.CPUs
	if n.From != "--affinity" {
		src = "the recorded command line's " + n.Why
	}
	if n.Tasks == 0 {
		return fmt.Sprintf("affinity: %s names CPUs %s, but the trace shows no task of the recorded command (perf's %s child): no mask", src, n.CPUs, perfExecComm)
	}
	s := fmt.Sprintf("affinity: %d tasks (%s) may run on CPUs %s only, from %s", n.Tasks, n.Who, n.CPUs, src)
	if n.Outside > 0 {
		s += fmt.Sprintf("; the trace ran %d of their activations first outside it (the mask is wrong for them, or changed during the trace)", n.Outside)
	}
	return s
}

// ApplyAffinity sets Task.Allowed on w's tasks: from the recorded command
// line (taskset, numactl) unless infer is false, then from rules in order
// (a later rule overrides an earlier one for the tasks both name). It
// clears any mask w carried (a workload file's) first. CPUs must exist in
// topo; a rule must name at least one task. The notes go to
// w.AffinityNotes (and are returned).
func ApplyAffinity(w *Workload, topo *model.Topology, rules []AffinityRule, infer bool) ([]AffinityNote, error) {
	ncpu := 0
	if topo != nil {
		ncpu = topo.NrCPUs
	}
	check := func(what string, cpus []int) error {
		for _, c := range cpus {
			if ncpu > 0 && c >= ncpu {
				return fmt.Errorf("%s: CPU %d is beyond the machine's %d CPUs", what, c, ncpu)
			}
		}
		return nil
	}
	var notes []AffinityNote
	saved := make([][]int, len(w.Tasks))
	src := make([]int, len(w.Tasks)) // the note whose mask a task holds (-1: none)
	for i := range w.Tasks {
		saved[i] = w.Tasks[i].Allowed
		w.Tasks[i].Allowed = nil
		src[i] = -1
	}
	fail := func(err error) ([]AffinityNote, error) {
		for i := range w.Tasks {
			w.Tasks[i].Allowed = saved[i]
		}
		return nil, err
	}
	if infer {
		cpus, why, ok, err := CommandAffinity(RecordedCommand(w.Cmdline), topo)
		if err != nil {
			return fail(err)
		}
		if ok {
			if err := check("the recorded command's "+why, cpus); err != nil {
				return fail(err)
			}
			n := AffinityNote{From: "command line", Why: why, Who: "command", CPUs: model.FormatCPUList(cpus)}
			for i := range w.Tasks {
				if w.Tasks[i].Command && w.Tasks[i].Pinned < 0 {
					w.Tasks[i].Allowed, src[i] = cpus, len(notes)
					n.Named++
				}
			}
			notes = append(notes, n)
		}
	}
	for _, r := range rules {
		if err := check("--affinity "+r.Who, r.CPUs); err != nil {
			return fail(err)
		}
		n := AffinityNote{From: "--affinity", Who: r.Who, CPUs: model.FormatCPUList(r.CPUs)}
		tid, numErr := strconv.Atoi(r.Who)
		named := 0
		for i := range w.Tasks {
			t := &w.Tasks[i]
			var match bool
			switch {
			case r.Who == "command":
				match = t.Command
			case numErr == nil:
				match = int(t.TID) == tid
			default:
				match = t.Comm == r.Who
			}
			if match {
				named++
				if t.Pinned < 0 { // a per-CPU kthread stays bound to its CPU
					t.Allowed, src[i] = r.CPUs, len(notes)
				}
			}
		}
		if named == 0 {
			if r.Who == "command" {
				return fail(fmt.Errorf("--affinity %s: the trace shows no recorded command (perf's %s child)", r.Who, perfExecComm))
			}
			return fail(fmt.Errorf("--affinity %s: no task of the workload is %s", r.Who, r.Who))
		}
		notes = append(notes, n)
	}
	// The trace's side, with the masks as finally set: each task counts
	// for the note whose mask it holds.
	for i := range w.Tasks {
		if k := src[i]; k >= 0 {
			notes[k].Tasks++
			notes[k].Outside += outsideMask(&w.Tasks[i])
		}
	}
	// A note whose tasks later rules all took over goes; the command
	// line's that found no command stays, to say so.
	notes = slices.DeleteFunc(notes, func(n AffinityNote) bool { return n.Tasks == 0 && (n.From != "command line" || n.Named > 0) })
	w.AffinityNotes = notes
	return notes, nil
}

// outsideMask counts t's activations the trace first ran on a CPU outside
// t.Allowed: for a task that ran inside it, only those after its first
// run there (a mask set during the trace, as taskset's own before its
// exec, holds from then); for one that never did, every one.
func outsideMask(t *Task) int {
	in, before, n := false, 0, 0
	for _, a := range t.Activations {
		if a.CPU < 0 {
			continue
		}
		_, ok := slices.BinarySearch(t.Allowed, int(a.CPU))
		switch {
		case ok:
			in = true
		case in:
			n++
		default:
			before++
		}
	}
	if !in {
		return before
	}
	return n
}
