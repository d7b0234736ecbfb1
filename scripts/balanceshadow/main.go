// Command balanceshadow checks the model's load-balancer arithmetic against
// the kernel's own counters. It reads a kernel trace with the PELT shadow
// (whatif.BalanceShadow: loads redone from the trace's switches, wakeups
// and updates), scores every balance pass the trace shows moving tasks
// with the policy's group classification and calculate_imbalance, and sets
// the sums per CPU and idle type beside the kernel's /proc/schedstat
// difference over the same run (lb_imbalance, lb_gained: the recipe's
// info/schedstat.WORKLOAD.{before,after}.txt beside the trace). Where the
// kernel failed no pass (every pass that found an imbalance moved tasks,
// so the trace shows them all) and the counts agree, the two imbalance
// sums should agree too: FIDELITY.md round 95.
//
//	go run ./scripts/balanceshadow fixtures/kernels/repeats/guest-N-2s1c1t-2numa/r5/hackbench.perf.data.gz
//	go run ./scripts/balanceshadow -v fixtures/kernels/guest-N-2s1c1t-2numa/hackbench.perf.data
//
// -v lists the passes; -policy scores them under another policy than the
// one matching the trace's kernel. Kernel traces only: a replay's output
// has no common_flags to tell a pass's idle type by.
//
// -busy scores every periodic busy pass instead, balanced ones included
// (whatif.BusyBalanceShadow: each busy CPU's passes timed by its domains'
// balance intervals at -hz, 250 by default as the guests' kernels), and
// sets, per CPU and domain, the passes and the share that found an
// imbalance beside the kernel's busy lb_count and lb_count - lb_balanced
// (FIDELITY.md round 149):
//
//	go run ./scripts/balanceshadow -busy fixtures/kernels/crosskernel/v6.12/guest-P-1s2c1t/r1/hogs.perf.data.gz
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/whatif"
)

var (
	busyPasses = flag.Bool("busy", false, "score every periodic busy balance pass (balanced ones too) against the kernel's busy counters")
	hz         = flag.Int("hz", 250, "with -busy: the kernel's tick rate (CONFIG_HZ), which times the passes")
)

func main() {
	sums := busySums{}
	scriptutil.ShadowMain("balanceshadow", "passes", func(w io.Writer, path, policy string, verbose bool) error {
		if *busyPasses {
			return runBusy(w, path, policy, *hz, sums)
		}
		return run(w, path, policy, verbose)
	})
	sums.print(os.Stdout)
}

// busySums are -busy's totals per kernel release (major.minor), over the
// rows that have the kernel's counters.
type busySums map[string]*busyTotal

// busyTotal is one release's: the model's passes and unbalanced ones,
// the kernel's, and the traces.
type busyTotal struct {
	passes, unbalanced             int64
	kernelPasses, kernelUnbalanced int64
	traces                         int
}

func (b busySums) add(release string, ts []whatif.BusyTally, diff *model.Schedstat) {
	if diff == nil {
		return
	}
	k := release
	if f := strings.SplitN(release, ".", 3); len(f) >= 2 {
		k = f[0] + "." + strings.TrimRightFunc(f[1], func(r rune) bool { return r < '0' || r > '9' })
	}
	s := b[k]
	if s == nil {
		s = &busyTotal{}
		b[k] = s
	}
	s.traces++
	for _, t := range ts {
		if t.CPU < len(diff.CPUs) && t.Domain < len(diff.CPUs[t.CPU].Domains) {
			c := diff.CPUs[t.CPU].Domains[t.Domain].LB[1]
			s.passes += int64(t.Passes)
			s.unbalanced += int64(t.Unbalanced)
			s.kernelPasses += c.Count
			s.kernelUnbalanced += c.Count - c.Balanced
		}
	}
}

func (b busySums) print(w io.Writer) {
	ks := make([]string, 0, len(b))
	for k := range b {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		s := b[k]
		fmt.Fprintf(w, "all %d traces of %s: the model %d busy passes, %.1f %% unbalanced; the kernel %d, %.1f %%\n",
			s.traces, k, s.passes, 100*float64(s.unbalanced)/float64(max(s.passes, 1)),
			s.kernelPasses, 100*float64(s.kernelUnbalanced)/float64(max(s.kernelPasses, 1)))
	}
}

// idleNames are the kernel's idle types in schedstat's order.
var idleNames = [3]string{"idle", "busy", "newly idle"}

// schedstatIndex maps a pass's idle type to schedstat's column.
func schedstatIndex(t whatif.IdleType) int {
	switch t {
	case whatif.CPUIdle:
		return 0
	case whatif.CPUNotIdle:
		return 1
	}
	return 2
}

func run(w io.Writer, path, policy string, verbose bool) error {
	passes, err := shadow(path, policy)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d balance passes moved tasks\n", path, len(passes))
	if verbose {
		for _, p := range passes {
			fmt.Fprintln(w, "  "+passLine(p))
		}
	}
	diff, where, err := scriptutil.SchedstatBeside(path)
	if err != nil {
		return err
	}
	if diff == nil {
		fmt.Fprintln(w, "  no info/schedstat.*.before.txt and after.txt beside it: nothing to compare with")
		return nil
	}
	fmt.Fprintf(w, "  kernel: %s\n", where)
	printComparison(w, passes, diff)
	return nil
}

// shadow runs whatif.BalanceShadow over the trace at path.
func shadow(path, policy string) ([]whatif.BalancePass, error) {
	dq, err := scriptutil.DelayedDequeues(path)
	if err != nil {
		return nil, err
	}
	r, d, pol, err := scriptutil.KernelTrace(path, policy)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return whatif.BalanceShadow(r, d, pol, dq)
}

func passLine(p whatif.BalancePass) string {
	imb := fmt.Sprintf("imbalance %d (%s)", p.Imbalance, p.MigrationType)
	if p.Balanced {
		imb = "balanced"
	}
	if p.BusiestGroup != p.SrcGroup {
		imb += fmt.Sprintf(" (the policy's busiest: group %d, not the source's %d)", p.BusiestGroup, p.SrcGroup)
	}
	return fmt.Sprintf("%.6f %-10s cpu%d <- cpu%d %s: local %s nr %d load %d, source group %s nr %d load %d; %s; moved %d, load %d",
		float64(p.TimeNS)/1e9, idleNames[schedstatIndex(p.Idle)], p.DstCPU, p.SrcCPU, p.Level,
		p.Local.GroupType, p.Local.SumNrRunning, p.Local.GroupLoad, p.Busiest.GroupType, p.Busiest.SumNrRunning, p.Busiest.GroupLoad,
		imb, p.Moved, p.MovedLoad)
}

// sums are one CPU, domain and idle type's shadow totals.
type sums struct {
	passes, moved int
	imbalance     int64
	types         map[whatif.MigrationType]bool // the passes' units
}

// printComparison sets the shadow's sums beside the kernel's, per CPU,
// domain and idle type.
func printComparison(w io.Writer, passes []whatif.BalancePass, diff *model.Schedstat) {
	sh := map[[3]int]*sums{}
	for _, p := range passes {
		k := [3]int{int(p.DstCPU), p.Domain, schedstatIndex(p.Idle)}
		s := sh[k]
		if s == nil {
			s = &sums{types: map[whatif.MigrationType]bool{}}
			sh[k] = s
		}
		s.passes++
		s.moved += p.Moved
		if !p.Balanced {
			s.imbalance += p.Imbalance
			s.types[p.MigrationType] = true
		}
	}
	fmt.Fprintln(w, "  cpu  domain   type        kernel: passes imbalance gained failed | shadow: passes imbalance moved | ratio")
	for _, c := range diff.CPUs {
		for dom, dm := range c.Domains {
			for t, k := range dm.LB {
				s := sh[[3]int{c.CPU, dom, t}]
				if s == nil {
					s = &sums{}
				}
				if k.Count == 0 && s.passes == 0 {
					continue
				}
				ratio := "-"
				switch {
				case k.Failed != 0:
					ratio = "(failed passes unseen)"
				case k.Passes() != int64(s.passes) || k.Gained != int64(s.moved):
					ratio = "(counts differ)"
				case len(s.types) > 1:
					ratio = "(mixed units)"
				case k.Imbalance > 0 && s.passes > 0:
					ratio = fmt.Sprintf("%.2f", float64(s.imbalance)/float64(k.Imbalance))
				}
				fmt.Fprintf(w, "  %3d  %-7s  %-10s  %14d %9d %6d %6d | %14d %9d %5d | %s\n",
					c.CPU, dm.Name, idleNames[t], k.Passes(), k.Imbalance, k.Gained, k.Failed, s.passes, s.imbalance, s.moved, ratio)
			}
		}
	}
}

// runBusy prints whatif.BusyBalanceShadow's tallies for the trace at
// path beside the kernel's busy counters over the same run.
func runBusy(w io.Writer, path, policy string, hz int, sums busySums) error {
	dq, err := scriptutil.DelayedDequeues(path)
	if err != nil {
		return err
	}
	r, d, pol, err := scriptutil.KernelTrace(path, policy)
	if err != nil {
		return err
	}
	defer r.Close()
	release := r.Meta().Source.OSRelease
	ts, err := whatif.BusyBalanceShadow(r, d, pol, hz, dq)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	diff, where, err := scriptutil.SchedstatBeside(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: busy balance passes, the model's on the shadow's run queues\n", path)
	if diff != nil {
		fmt.Fprintf(w, "  kernel: %s\n", where)
	}
	printBusy(w, ts, diff)
	sums.add(release, ts, diff)
	return nil
}

// printBusy sets each CPU and domain's tally beside the kernel's busy
// lb_count and lb_count - lb_balanced (nil diff: the model's alone).
func printBusy(w io.Writer, ts []whatif.BusyTally, diff *model.Schedstat) {
	share := func(n, of int64) string {
		if of == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(of))
	}
	fmt.Fprintln(w, "  cpu  domain   model: passes unbalanced share | kernel: passes unbalanced share")
	for _, t := range ts {
		k := "-"
		if diff != nil && t.CPU < len(diff.CPUs) && t.Domain < len(diff.CPUs[t.CPU].Domains) {
			c := diff.CPUs[t.CPU].Domains[t.Domain].LB[1]
			k = fmt.Sprintf("%14d %10d %5s", c.Count, c.Count-c.Balanced, share(c.Count-c.Balanced, c.Count))
		}
		fmt.Fprintf(w, "  %3d  %-7s %13d %10d %5s | %s\n", t.CPU, t.Level, t.Passes, t.Unbalanced, share(int64(t.Unbalanced), int64(t.Passes)), k)
	}
}
