// Package scriptutil holds what the analysis scripts under scripts/ share:
// their command line's usage and argument count, their -seeds syntax, their "FILE... vs FILE..." columns, the read of a
// trace or timeline's events, each record's neighbours on its CPU and a
// waking's placement, and the grouping of a workload's writers with the
// readers they woke.
package scriptutil

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
	"github.com/schedreplay/replay/whatif"
	"golang.org/x/sync/errgroup"
)

// ParseArgs parses a script's command line (flag.CommandLine) and
// returns its arguments: one or more, or exactly one when one is set. A
// wrong count prints usage (the script's usage line) and the flags'
// defaults to stderr and exits 2, as -h prints them.
func ParseArgs(usage string, one bool) []string {
	if parseArgs(flag.CommandLine, os.Args[1:], os.Stderr, usage, one) != nil {
		os.Exit(2)
	}
	return flag.Args()
}

// errArgCount is parseArgs' wrong argument count.
var errArgCount = errors.New("wrong argument count")

// parseArgs is ParseArgs on fs, writing to w.
func parseArgs(fs *flag.FlagSet, args []string, w io.Writer, usage string, one bool) error {
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintln(w, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if n := fs.NArg(); n == 0 || one && n != 1 {
		fs.Usage()
		return errArgCount
	}
	return nil
}

// ParseSeeds reads a seed list: numbers and ranges a-b, comma-separated
// ("0-29", "1,3-4").
func ParseSeeds(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %v", s, err)
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("seeds %q: bad range", s)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// Groups is a union-find over task ids: a writer and the reader its write
// woke join one group (hackbench's groups: every sender of a group writes
// to every receiver of it), so that a descriptor number names one reader
// within a group.
type Groups map[int32]int32

// Find returns x's group (x alone if never joined).
func (g Groups) Find(x int32) int32 {
	p, ok := g[x]
	if !ok || p == x {
		g[x] = x
		return x
	}
	root := g.Find(p)
	g[x] = root
	return root
}

// Join puts a and b in one group.
func (g Groups) Join(a, b int32) { g[g.Find(a)] = g.Find(b) }

// VsColumns splits a script's file arguments into its columns at each
// "vs": the files before the first go into the first column, those after
// each "vs" into the next (a trace against a replay's output).
func VsColumns(args []string) [][]string {
	cols := [][]string{nil}
	for _, a := range args {
		if a == "vs" {
			cols = append(cols, nil)
			continue
		}
		cols[len(cols)-1] = append(cols[len(cols)-1], a)
	}
	return cols
}

// ForEachFile calls file for each file argument, in order, with the index
// of its column (VsColumns), and returns the number of columns. More than
// maxCols columns (0: no limit) or an error from file ends it with that
// error.
func ForEachFile(args []string, maxCols int, file func(col int, path string) error) (int, error) {
	cols := VsColumns(args)
	if maxCols > 0 && len(cols) > maxCols {
		return 0, fmt.Errorf("at most %d columns (%d vs)", maxCols, maxCols-1)
	}
	for col, files := range cols {
		for _, p := range files {
			if err := file(col, p); err != nil {
				return 0, err
			}
		}
	}
	return len(cols), nil
}

// Columns reads the file arguments into one sum per column (ForEachFile,
// no limit): newCol makes a column's sum when its first file comes, read
// adds a file to it.
func Columns[C any](args []string, newCol func() C, read func(col C, path string) error) ([]C, error) {
	var out []C
	_, err := ForEachFile(args, 0, func(i int, p string) error {
		for len(out) <= i {
			out = append(out, newCol())
		}
		return read(out[i], p)
	})
	return out, err
}

// ErrStop, returned by a ReadEvents callback, ends the read early; ReadEvents
// then returns nil.
var ErrStop = errors.New("scriptutil: stop reading")

// ReadEvents opens the trace or timeline file at path (ingest.Open: every
// format the CLI reads) and calls event with each of its events in time
// order; the event is reused once event returns. start, when not nil, is
// called first with the source's description. An error from a callback
// ends the read and is returned as it is (ErrStop as nil); the reader's own
// errors already name the file.
func ReadEvents(path string, start func(*timeline.Meta) error, event func(*timeline.Event) error) error {
	r, err := ingest.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if start != nil {
		if err := start(r.Meta()); err != nil {
			return err
		}
	}
	for r.Next() {
		if err := event(r.Event()); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return r.Err()
}

// CPUOf returns the CPU e was recorded on when it names one the model can
// hold ([0, model.MaxCPUs)): a record without one, or with a number no
// machine model has, is one a per-CPU table cannot index.
func CPUOf(e *timeline.Event) (int32, bool) {
	if !e.IsSet(timeline.CPU) {
		return 0, false
	}
	c := e.Int(timeline.CPU)
	if c < 0 || c >= model.MaxCPUs {
		return 0, false
	}
	return int32(c), true
}

// Neighbours returns, for each of n records in time order, the index of
// the previous and the next record on its CPU (-1 none); cpu(i) < 0 is a
// record on no CPU (a lost-records mark).
func Neighbours(n int, cpu func(i int) int32) (prev, next []int) {
	prev, next = make([]int, n), make([]int, n)
	last := map[int32]int{}
	for i := range n {
		prev[i], next[i] = -1, -1
		c := cpu(i)
		if c < 0 {
			continue
		}
		if j, ok := last[c]; ok {
			prev[i], next[j] = j, i
		}
		last[c] = i
	}
	return prev, next
}

// Placement is where the sched_waking at index i of a timeline's records
// put its wakee, by the rule analysis/wakechoice.go reads the kernel's by:
// the dest_cpu of a sched_migrate_task of the wakee that is the waking
// CPU's next record (select_task_rq's move; try_to_wake_up writes nothing
// on that CPU between the two, however long a host stall parts them),
// else the waking's target_cpu. next is Neighbours' next; moveOf(j) gives
// record j's task and dest_cpu when it is a sched_migrate_task.
func Placement(i int, next []int, wakee, target int32, moveOf func(j int) (pid, dest int32, ok bool)) int32 {
	if j := next[i]; j >= 0 {
		if pid, dest, ok := moveOf(j); ok && pid == wakee {
			return dest
		}
	}
	return target
}

// KernelTrace opens the trace at path with the machine its header
// describes: its scheduler domains and the policy of its kernel (or the
// named one), for the scripts that score a kernel's own decisions by the
// model's rules (balanceshadow, forkshadow). The caller closes r.
func KernelTrace(path, policy string) (r timeline.EventReader, d *model.Domains, pol whatif.Policy, err error) {
	r, err = ingest.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	meta := r.Meta()
	if meta.Topology == nil {
		return nil, nil, nil, fmt.Errorf("%s: no CPU topology in the trace (perf.data's header or a trace.dat's options)", path)
	}
	if d, err = model.BuildDomains(meta.Topology, meta.Source.OSRelease); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if policy != "" {
		pol, err = whatif.LookupPolicy(policy)
	} else {
		pol, err = whatif.PolicyForKernel(meta.Source.OSRelease)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, d, pol, nil
}

// ShadowMain is the command line of a script that scores a kernel
// trace's own decisions by the model's rules (balanceshadow, forkshadow):
// name [-v] [-policy NAME] [-no-delayed-dequeue] TRACE..., run called for
// each trace with standard output, the policy named (empty: the trace
// kernel's) and -v (listing what it scores, described by what); the
// first error is printed after the name and exits 1.
// -no-delayed-dequeue makes DelayedDequeues return none (the shadow
// before FIDELITY.md round 150).
func ShadowMain(name, what string, run func(w io.Writer, path, policy string, verbose bool) error) {
	verbose := flag.Bool("v", false, "list the "+what)
	policy := flag.String("policy", "", "policy to score the "+what+" under (default: the one matching the trace's kernel)")
	flag.BoolVar(&noDelayedDequeue, "no-delayed-dequeue", false, "rule test: the shadow dequeues every block at its switch, whatever the trace's sleep statistics say the kernel kept queued")
	for _, path := range ParseArgs("usage: "+name+" [-v] [-policy NAME] [-no-delayed-dequeue] TRACE...", false) {
		if err := run(os.Stdout, path, *policy, *verbose); err != nil {
			fmt.Fprintln(os.Stderr, name+":", err)
			os.Exit(1)
		}
	}
}

// Median is the median of xs (the mean of the middle two for an even
// count; NaN for none); xs is left as it is.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Parallel calls f(i) for every i below count, n at a time (at least
// one); each call keeps its own result, so the order they run in does
// not matter.
func Parallel(n, count int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(n, 1))
	for i := range count {
		g.Go(func() error { f(i); return nil })
	}
	g.Wait()
}

// noDelayedDequeue: ShadowMain's -no-delayed-dequeue.
var noDelayedDequeue bool

// DelayedDequeues reads the trace at path once for the blocks its kernel's
// DELAY_DEQUEUE kept queued (whatif.ReadDelayedDequeues; nil when it has
// no sleep statistics, or with -no-delayed-dequeue), for a PELT shadow to
// read it again with.
func DelayedDequeues(path string) (*whatif.DelayedDequeues, error) {
	if noDelayedDequeue {
		return nil, nil
	}
	r, err := ingest.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	dq, err := whatif.ReadDelayedDequeues(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return dq, nil
}
