// Command tickgrid checks the extractor's hard-IRQ classes against each
// CPU's tick grid over the real recordings (FIDELITY.md round 66): a
// CPU's ticks come on its grid, an enqueue's update_curr in an interrupt
// wherever its waking falls, so the records taken for ticks should sit
// near the grid and the others no more often than a uniform spread
// (2·window/tick: 15 % at the defaults). Run from the repository's root:
//
//	go run ./scripts/tickgrid            # every 6.1 and 6.12 guest recording
//	go run ./scripts/tickgrid -v         # and one line per recording
//	go run ./scripts/tickgrid FILE...    # those traces only
//
// It prints, per group and in all, the records of each class and the
// share on the grid. Recordings without hard-IRQ sched_stat_runtime
// records (no classes) add nothing.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/whatif"
)

func main() {
	shared := flag.String("shared", "../shared/fixtures/kernels", "the shared recordings")
	tick := flag.Duration("tick", 4*time.Millisecond, "the tick period (1/HZ; the guests' kernels run HZ 250)")
	bin := flag.Duration("bin", 100*time.Microsecond, "the width of the bins whose densest gives a CPU's grid phase")
	window := flag.Duration("window", 300*time.Microsecond, "a record within this of its CPU's grid phase is on the grid")
	with618 := flag.Bool("6.18", false, "also this machine's 6.18 recordings (a vendor kernel: its tick rate is not the guests')")
	verbose := flag.Bool("v", false, "also print one line per recording")
	flag.Parse()

	var recs []scriptutil.Recording
	if flag.NArg() > 0 {
		for _, f := range flag.Args() {
			recs = append(recs, scriptutil.Recording{Group: "given", Path: f})
		}
	} else {
		all, found := scriptutil.Recordings(*shared, true, true, false)
		if !found {
			fmt.Fprintf(os.Stderr, "note: %s absent: the five shared 6.1 recordings are left out\n", *shared)
		}
		for _, r := range all {
			if *with618 || !strings.HasPrefix(r.Group, "6.18") {
				recs = append(recs, r)
			}
		}
	}

	counts := make([]whatif.TickGridCount, len(recs))
	errs := make([]error, len(recs))
	scriptutil.Parallel(runtime.GOMAXPROCS(0), len(recs), func(i int) {
		counts[i], errs[i] = measure(recs[i].Path, int64(*tick), int64(*bin), int64(*window))
	})

	for i, r := range recs {
		if errs[i] != nil {
			fmt.Fprintf(os.Stderr, "tickgrid: %s: %v\n", r.Path, errs[i])
			os.Exit(1)
		}
		if *verbose {
			fmt.Printf("%-72s %s\n", r.Path, line(counts[i]))
		}
	}
	fmt.Printf("on the grid: within %v of each CPU's phase of its %v tick grid (a uniform spread: %.1f %%)\n",
		*window, *tick, 100*float64(2**window)/float64(*tick))
	fmt.Println("by FIDELITY.md's group:")
	summary(recs, counts, func(r scriptutil.Recording) string { return r.Group })
	fmt.Println("by guest and kernel:")
	summary(recs, counts, guestOf)
}

// summary prints the counts summed per key, in first-seen order, and in all.
func summary(recs []scriptutil.Recording, counts []whatif.TickGridCount, key func(scriptutil.Recording) string) {
	var order []string
	sums := map[string]*whatif.TickGridCount{}
	n := map[string]int{}
	var total whatif.TickGridCount
	for i, r := range recs {
		k := key(r)
		if sums[k] == nil {
			sums[k] = &whatif.TickGridCount{}
			order = append(order, k)
		}
		sums[k].Add(counts[i])
		n[k]++
		total.Add(counts[i])
	}
	for _, k := range order {
		fmt.Printf("  %-28s %3d recordings  %s\n", k, n[k], line(*sums[k]))
	}
	fmt.Printf("  %-28s %3d recordings  %s\n", "all", len(recs), line(total))
}

// guestOf names a recording's machine: the guest directory in its path
// ("guest-M-1s1c2t", with " 6.12" for Debian's kernel), else its group.
func guestOf(r scriptutil.Recording) string {
	for _, part := range strings.Split(filepath.ToSlash(r.Path), "/") {
		if strings.HasPrefix(part, "guest-") {
			if strings.Contains(r.Path, "v6.12") {
				return part + " 6.12"
			}
			return part + " 6.1"
		}
	}
	return r.Group
}

func measure(path string, tick, bin, window int64) (whatif.TickGridCount, error) {
	r, err := ingest.Open(path)
	if err != nil {
		return whatif.TickGridCount{}, err
	}
	defer r.Close()
	g := whatif.NewTickGridClasses()
	if _, err := whatif.ExtractWith(r, whatif.ExtractOptions{HardIRQRecord: g.Observe}); err != nil {
		return whatif.TickGridCount{}, err
	}
	return g.OnGrid(tick, bin, window), nil
}

func line(c whatif.TickGridCount) string {
	return fmt.Sprintf("ticks %7d, %5.1f %% on the grid; others %6d, %5.1f %%",
		c.Ticks, pct(c.TicksOnGrid, c.Ticks), c.Others, pct(c.OthersOnGrid, c.Others))
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
