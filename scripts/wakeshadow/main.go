// Command wakeshadow redoes PELT beside a trace or a replay's output and
// scores wake_affine_weight at every wakeup of a sleeping task whose
// previous CPU is busy and another than the waking one
// (whatif.WakeShadow), printing how often the timeline kept or pulled the
// wakee by the formula's margin: above 0 the formula pulls. On a replay's
// output the shadow calls 94–97 % of the engine's choices as it made them; where a
// kernel keeps wakees the formula pulls by wide margins, something other
// than the loads decided (FIDELITY.md round 89: wake_wide, from the
// wakee_flips perf hands its workload).
//
//	go run ./scripts/wakeshadow -pct 117 -llc 2 fixtures/kernels/guest-P-1s2c1t/hackbench.perf.data
//	replay whatif -i TRACE -o /tmp/sim.arrow && go run ./scripts/wakeshadow -pct 117 -llc 2 /tmp/sim.arrow
//
// -pct is the imbalance_pct of the domain the two CPUs first share (117
// MC, 110 SMT), -llc the LLC's size (wake_wide's factor), -flips the
// wakee_flips of the tasks alive at the start. -list prints every scored
// wakeup instead of the table; a wakeup listed "wide" and "pulled" went
// onto its busy waker's CPU, which only wake_affine does, so the kernel's
// wake_wide was false there whatever the shadow's flips say (FIDELITY.md
// round 154).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/whatif"
)

func main() {
	pct := flag.Int("pct", 117, "imbalance_pct of the domain the CPUs first share")
	llc := flag.Int("llc", 2, "sd_llc_size, wake_wide's factor")
	flips := flag.Uint64("flips", 0, "wakee_flips of the tasks alive at the start")
	hz := flag.Int("hz", 250, "the kernel's HZ")
	list := flag.Bool("list", false, "instead of the table, every scored wakeup, one a line: time, waking CPU, previous CPU, waker and wakee pids, their wakee_flips by the shadow, wide or not, the formula's margin, kept or pulled")
	fit := flag.Bool("fit", false, "instead of the table, how many of the telling wakeups (the formula pulls by 10 %% or more) the shadow calls right for each start wakee_flips of 0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 (a start that makes the kernel's keeps wide fits them: FIDELITY.md rounds 89 and 90; the extraction fits it the same way, `replay whatif --set wakee_flips=N` overrides)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: wakeshadow [-pct N] [-llc N] [-flips N] [-hz N] [-fit] TRACE...")
		os.Exit(2)
	}
	opt := whatif.WakeShadowOptions{ImbalancePct: *pct, LLCSize: *llc, StartFlips: *flips, HZ: *hz}
	for _, path := range flag.Args() {
		f := run
		switch {
		case *fit:
			f = fitFlips
		case *list:
			f = listWakeups
		}
		if err := f(os.Stdout, path, opt); err != nil {
			fmt.Fprintln(os.Stderr, "wakeshadow:", err)
			os.Exit(1)
		}
	}
}

// shadow runs the wake shadow over one file.
func shadow(path string, opt whatif.WakeShadowOptions) (*whatif.WakeShadowResult, error) {
	r, err := ingest.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	res, err := whatif.WakeShadow(r, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// run prints the shadow's table for one file.
func run(w io.Writer, path string, opt whatif.WakeShadowOptions) error {
	res, err := shadow(path, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d wakeups scored; the formula called %d as the timeline chose them (%d with WF_SYNC's adjustments); %d wide by the shadow's flips, %d of them pulled all the same\n",
		path, res.Compared, res.Agree, res.AgreeSync, res.Wide, res.WidePulled)
	fmt.Fprintln(w, "margin (prev's biased load over this CPU's, less 1)   kept  pulled")
	for _, b := range res.Bands {
		label := fmt.Sprintf("%+d %% .. %+d %%", b.Low, b.Low+10)
		switch {
		case b.Low <= -40:
			label = "below -30 %"
		case b.Low >= 30:
			label = "+30 % and above"
		}
		fmt.Fprintf(w, "  %-50s %5d  %6d\n", label, b.Kept, b.Pulled)
	}
	return nil
}

// fitFlips prints, for each candidate start wakee_flips, how many of the
// telling wakeups (the formula pulls by a clear margin: the choice is
// wake_wide's) the shadow calls as the timeline chose them: one pass
// scores every start, as the extraction's fit does.
func fitFlips(w io.Writer, path string, opt whatif.WakeShadowOptions) error {
	res, err := shadow(path, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d telling wakeups (the formula pulls by at least 10 %%); called right for each start wakee_flips\n", path, res.Telling)
	for k, n := range whatif.FlipCandidates() {
		fmt.Fprintf(w, "  %3d  %5d\n", n, res.Called[k])
	}
	return nil
}

// listWakeups prints every scored wakeup, one a line, in the order the
// timeline settles them. A line "wide pulled" is a pull onto a busy
// waker's CPU, which needs wake_wide false: the shadow's flip counts
// for that pair are wrong (FIDELITY.md round 154).
func listWakeups(w io.Writer, path string, opt whatif.WakeShadowOptions) error {
	fmt.Fprintf(w, "# %s\n# time_s cpu prev waker wakee waker_flips wakee_flips wide margin choice\n", path)
	opt.Each = func(x whatif.WakeShadowWakeup) {
		wide, choice := "-", "kept"
		if x.Wide {
			wide = "wide"
		}
		if x.Pulled {
			choice = "pulled"
		}
		fmt.Fprintf(w, "%.6f %d %d %d %d %d %d %s %+.3f %s\n", float64(x.Time)/1e9, x.CPU, x.Prev, x.Waker, x.Wakee, x.WakerFlips, x.WakeeFlips, wide, x.Margin, choice)
	}
	_, err := shadow(path, opt)
	return err
}
