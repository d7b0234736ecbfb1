// Command delayshare sets a kernel's delayed dequeues beside a replay's.
// Under v6.12+ a task that blocks while not eligible stays on its queue
// (DELAY_DEQUEUE); how often that happens says how the tasks' lags at
// their blocks compare, which no trace records. For each trace it reads
// the blocks the trace's schedstats show kept queued
// (whatif.ReadDelayedDequeues: those a later pick dequeued, and those a
// waking requeued, of the blocks with another task to switch to) and
// replays the trace for each seed (replay whatif --validate, its
// replay_stats.delayed_dequeue: the same counts of the engine's own
// blocks), then prints both shares per trace and summed per workload
// (FIDELITY.md round 150):
//
//	go run ./scripts/delayshare -seeds 0-2 fixtures/kernels/v6.12/*/r*/*.perf.data.gz
//
// The trace's count is a lower bound: a final dequeue is taken only where
// its sleep is dated from a pick, a requeue only where its wait is dated
// from the block.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/whatif"
)

// counts is a trace's or a replay's blocks, those kept queued and of
// those the ones requeued (the replay's own stats type).
type counts = whatif.DelayStats

func add(c *counts, d counts) {
	c.Blocks += d.Blocks
	c.Delayed += d.Delayed
	c.Requeued += d.Requeued
}

// share is the kept and requeued shares of the blocks, and their count.
func share(c counts) string {
	if c.Blocks == 0 {
		return "no blocks"
	}
	return fmt.Sprintf("%5.1f %% kept (%4.1f %% requeued) of %d", 100*float64(c.Delayed)/float64(c.Blocks), 100*float64(c.Requeued)/float64(c.Blocks), c.Blocks)
}

func main() {
	seeds := flag.String("seeds", "0", "replay seeds: N, N-M or a comma list")
	bin := flag.String("bin", "", "the replay binary (default: go build ./cmd/replay)")
	paths := scriptutil.ParseArgs("usage: delayshare [-seeds S] [-bin replay] TRACE...", false)
	ss, err := scriptutil.ParseSeeds(*seeds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayshare:", err)
		os.Exit(2)
	}
	replay, cleanup, err := scriptutil.ReplayBinary(*bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayshare:", err)
		os.Exit(1)
	}
	defer cleanup()
	if err := run(os.Stdout, paths, ss, func(path string, seed int) (counts, error) { return replayed(replay, path, seed) }); err != nil {
		cleanup()
		fmt.Fprintln(os.Stderr, "delayshare:", err)
		os.Exit(1)
	}
}

// run prints each trace's shares and the sums per workload (the file's
// name without its extensions), replay giving one seed's counts.
func run(w io.Writer, paths []string, seeds []int, replay func(path string, seed int) (counts, error)) error {
	type pair struct{ trace, replay counts }
	byWorkload := map[string]*pair{}
	for _, path := range paths {
		tr, ok, err := traced(path)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(w, "%s: no delayed dequeue to read (a kernel before v6.12, or no schedstats)\n", path)
			continue
		}
		var rp counts
		for _, s := range seeds {
			c, err := replay(path, s)
			if err != nil {
				return err
			}
			add(&rp, c)
		}
		fmt.Fprintf(w, "%s\n  trace:  %s\n  replay: %s (%d seeds)\n", path, share(tr), share(rp), len(seeds))
		wl, _, _ := strings.Cut(filepath.Base(path), ".")
		p := byWorkload[wl]
		if p == nil {
			p = &pair{}
			byWorkload[wl] = p
		}
		add(&p.trace, tr)
		add(&p.replay, rp)
	}
	for _, n := range slices.Sorted(maps.Keys(byWorkload)) {
		p := byWorkload[n]
		fmt.Fprintf(w, "%-14s trace %s | replay %s\n", n, share(p.trace), share(p.replay))
	}
	return nil
}

// traced reads the trace's delayed dequeues; ok false when it has none
// to read.
func traced(path string) (counts, bool, error) {
	dq, err := scriptutil.DelayedDequeues(path)
	if err != nil || dq == nil {
		return counts{}, false, err
	}
	return counts{Blocks: int64(dq.Blocks), Delayed: int64(dq.Delayed + dq.Requeued), Requeued: int64(dq.Requeued)}, true, nil
}

// replayed runs one seed's replay of path and returns its counts.
func replayed(bin, path string, seed int) (counts, error) {
	out, err := exec.Command(bin, "whatif", "--validate", "-f", "json", "--seed", strconv.Itoa(seed), "-i", path).Output()
	if err != nil {
		return counts{}, fmt.Errorf("%s seed %d: %v", path, seed, err)
	}
	var j struct {
		Fidelity struct {
			Stats struct {
				Delay counts `json:"delayed_dequeue"`
			} `json:"replay_stats"`
		} `json:"fidelity"`
	}
	if err := json.Unmarshal(out, &j); err != nil {
		return counts{}, fmt.Errorf("%s seed %d: %v", path, seed, err)
	}
	return j.Fidelity.Stats.Delay, nil
}
