// Command fidelity runs `replay whatif --validate` over every real
// recording FIDELITY.md reports on, for a range of seeds, and prints the
// goals each run meets and the totals per group, the figures FIDELITY.md
// and the README quote:
//
//	go run ./scripts/fidelity                  # seeds 0-2
//	go run ./scripts/fidelity -seeds 0-9 -o /tmp/fid
//	go run ./scripts/fidelity -seeds 0 -places # where the wakeups landed
//	go run ./scripts/fidelity -seeds 0-29 -bands # where the latency goals' bands fall
//	go run ./scripts/fidelity -seeds 0-9 -choices # what the wakeup path chose
//	go run ./scripts/fidelity -seeds 0-29 -against /tmp/fid  # goals met, before -> now
//	go run ./scripts/fidelity -seeds 0-29 -against /tmp/fid -places # and where each place's p95 moved
//	go run ./scripts/fidelity -seeds 0-29 -goals  # runs meeting each goal, per recording
//	go run ./scripts/fidelity -seeds 0-29 -bias   # the median over the seeds against the runs: bias or noise
//	go run ./scripts/fidelity -seeds 0-29 -merged # the latency misses the merged wake edges can explain
//	go run ./scripts/fidelity -seeds 0-29 -repeats # also the repeat recordings, and the kernel against itself
//	go run ./scripts/fidelity -seeds 0-29 -holdout # also the workloads no round fitted (FIDELITY.md round 50)
//
// Groups: the 6.1 guests' recordings committed in fixtures/kernels, the
// ones only in ../shared/fixtures/kernels (GPL-licensed or too large;
// skipped with a note when ../shared is absent), this project's 6.18
// machine (fixtures/local-6.18), and Debian's 6.12.57 on the three
// two-vCPU guests, each booted three times (fixtures/kernels/v6.12,
// replayed under v6.12 without NI_RANDOM: FIDELITY.md round 58); with -repeats also the repeat recordings
// (fixtures/kernels/repeats: the same workloads on the same two-vCPU
// guests, booted again), a group of their own, followed by how well one
// real recording of a workload meets the goals against another (the
// kernel's own run-to-run spread: FIDELITY.md round 49); with -holdout
// the recordings of workloads the model was not developed on
// (fixtures/kernels/holdout: three more workloads, each guest booted three
// times), a group of their own with the same spread. -o keeps every run's JSON, so two builds
// can be compared file by file (cmp) for byte-identity. Last, per kernel,
// the median |relative error| of each goal's metric over all runs: a goal
// count moves by chance when a metric sits near its limit, the median
// error much less (FIDELITY.md round 24).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
	"github.com/schedreplay/replay/whatif"
)

// goal is --validate's goal, as its JSON gives it.
type goal = whatif.Goal

type result struct {
	Fidelity struct {
		Observed  map[string]any     `json:"observed"`
		Simulated map[string]any     `json:"simulated"`
		RelError  map[string]float64 `json:"rel_error"`
		KS        float64            `json:"ks"`
		Goals     []goal             `json:"goals"`
		GoalBands []whatif.GoalBand  `json:"goal_bands"`
		// MergedAsFast: --validate's bound with the replay's missing
		// wakeups counted as fastest (nil when it lacks none).
		MergedAsFast *whatif.MergedAsFast `json:"merged_as_fast"`
	} `json:"fidelity"`
}

type run struct {
	group, name, path string
	args              []string // the recording's own (scriptutil.Recording.Args)
	seed              int
	res               result
	err               error
	out               []byte
}

// vacuous reports whether goal g compares nothing in r: a latency goal
// on a trace with no observed wakeup (sched_switch alone), which --validate
// marks not_compared (and JSON kept from before it did reports met with
// both sides 0). It is left out of the counts.
func (r *run) vacuous(g goal) bool {
	n, _ := r.res.Fidelity.Observed["wakeup_count"].(float64)
	return g.NotCompared || n == 0 && strings.HasPrefix(g.Metric, "wakeup_")
}

func main() {
	seeds := flag.String("seeds", "0-2", "seeds: N, N-M or a comma list")
	outDir := flag.String("o", "", "keep each run's JSON in this directory")
	shared := flag.String("shared", "../shared/fixtures/kernels", "the shared recordings")
	bin := flag.String("bin", "", "the replay binary (default: go build ./cmd/replay)")
	jobs := flag.Int("j", 2, "runs at once")
	set618 := flag.String("set618", "", "a --set for this machine's 6.18 recordings only (a what-if of their kernel, e.g. slice_protection=none: FIDELITY.md round 22)")
	policy61 := flag.String("policy61", "", "the policy for the 6.1 guests' recordings instead of their kernel's (e.g. v6.1~33cf66d88306: FIDELITY.md round 23)")
	var setAll setList
	flag.Var(&setAll, "set", "a --set for every recording (a model option measured across the groups, e.g. tick_switch=on: FIDELITY.md round 62); repeatable")
	var affinity setList
	flag.Var(&affinity, "affinity", "an --affinity for every recording (off: no mask from the recorded command line, the replays before round 98: FIDELITY.md round 98); repeatable")
	set61 := flag.String("set61", "", "a --set for the 6.1 guests' recordings only (e.g. newidle_ratio=boot: FIDELITY.md round 25)")
	set612 := flag.String("set612", "", "a --set for Debian's 6.12 recordings only (an EEVDF option the 6.1 policies refuse, e.g. slice_protection=none: FIDELITY.md round 76)")
	policy618 := flag.String("policy618", "", "the policy for this machine's 6.18 recordings instead of latest (e.g. latest+155213a2aed4: FIDELITY.md round 25)")
	table := flag.Bool("table", false, "print FIDELITY.md's results table (markdown) instead of one line per run")
	against := flag.String("against", "", "compare with the runs kept in this directory (an earlier -o): per recording and goal, the runs that met it before and now, over the seeds both have; then the totals per kernel, overall and per workload, each with the change chance alone would give")
	goals := flag.Bool("goals", false, "also print, per recording, how many runs met each goal (the per-recording counts FIDELITY.md's rounds quote, e.g. round 34)")
	repeats := flag.Bool("repeats", false, "also replay the repeat recordings (fixtures/kernels/repeats) and print how the kernel's own recordings of a workload meet the goals against each other (FIDELITY.md round 49)")
	sameDay := flag.Bool("same-day", false, "also replay the six workloads recorded under 6.1 and 6.12 on one day, boots alternating (fixtures/kernels/crosskernel, FIDELITY.md round 109), groups of their own, and print the kernel against itself for them")
	holdout := flag.Bool("holdout", false, "also replay the holdout recordings (fixtures/kernels/holdout: workloads recorded after the model's rules were set, on the two-vCPU guests and guest-B, FIDELITY.md round 50) and print the kernel against itself for them")
	status := flag.Bool("status", false, "also print FIDELITY.md's status tables (markdown): per recording (a recording made several times pooled per group) the runs that met each goal, the median signed error, and with -repeats or -holdout the kernel against itself")
	bands := flag.Bool("bands", false, "also print, per recording, where each latency goal's band falls in the trace's wakeups and the replays' (--validate's goal bands: the share below the band and up to its top, the replay's median over the seeds; FIDELITY.md round 53)")
	merged := flag.Bool("merged", false, "also print, per group, the runs that missed each latency goal and how many of those --validate's merged-as-fast bound (the replay's missing wakeups counted as the fastest) would meet: the misses the merged wake edges can explain (FIDELITY.md round 96)")
	bias := flag.Bool("bias", false, "also print, per group and goal, how many recordings the replays' median signed error over the seeds meets, against the mean share of runs that meet it: a miss of the median is the model's bias, a miss the runs share by chance is noise (FIDELITY.md round 64)")
	public := flag.Bool("public", false, "also replay the other real traces in ../shared with enough scheduling events (LISA's, trappy's and the format samples recorded on this machine; scriptutil.PublicRecordings), groups public and recorded")
	choices := flag.Bool("choices", false, "also print what the wakeup path chose (--validate's wake: rows: sleeping wakees kept on their previous CPU, pulled to the waking CPU or sent elsewhere, and those already on the waking CPU that stayed or moved): the trace's counts summed per group and workload against the sums of the replays' medians over the seeds, then per recording (FIDELITY.md round 88)")
	places := flag.Bool("places", false, "also print where the wakeups landed per recording (--validate's wakeups@ rows: the trace's, and the replay's median over the seeds; FIDELITY.md round 32); with -against, the places whose replayed p95 moved by half or more, toward or away from the trace's (FIDELITY.md round 84)")
	flag.Parse()
	ss, err := scriptutil.ParseSeeds(*seeds)
	if err != nil {
		fail(err)
	}
	replayBin, cleanup, err := scriptutil.ReplayBinary(*bin)
	if err != nil {
		fail(err)
	}
	defer cleanup()
	*bin = replayBin
	// A setting only the 6.18 group's kernel (EEVDF) takes.
	groupArgs := map[string][]string{}
	if *set618 != "" {
		groupArgs["6.18"] = []string{"--set", *set618}
	}
	if *policy618 != "" {
		groupArgs["6.18"] = append(groupArgs["6.18"], "--policy", *policy618)
	}
	groupArgs["6.18 repeats"] = groupArgs["6.18"]
	groupArgs["6.18 workloads"] = groupArgs["6.18"]
	groupArgs["6.18 workloads repeats"] = groupArgs["6.18"]
	groupArgs["6.18 stressors repeats"] = groupArgs["6.18"]
	// Debian's 6.12.57 predates NI_RANDOM's backport (its debugfs
	// features list has none): its release names the sublevel, so the
	// replay's default policy is v6.12~33cf66d88306 (whatif.PolicyForKernel).
	if *set612 != "" {
		groupArgs["6.12"] = append(groupArgs["6.12"], "--set", *set612)
	}
	groupArgs["6.12 same-day"] = groupArgs["6.12"]
	for _, g := range []string{"6.1 committed", "6.1 shared", "6.1 2-vCPU", "6.1 repeats", "6.1 timers repeats", "6.1 2-vCPU holdout", "6.1 8-vCPU holdout", "6.1 affinity", "6.1 same-day"} {
		if *policy61 != "" {
			groupArgs[g] = append(groupArgs[g], "--policy", *policy61)
		}
		if *set61 != "" {
			groupArgs[g] = append(groupArgs[g], "--set", *set61)
		}
	}
	recs, sharedFound := scriptutil.Recordings(*shared, *repeats, *holdout, *sameDay)
	if !sharedFound {
		fmt.Fprintf(os.Stderr, "note: %s absent: the five shared 6.1 recordings are left out\n", *shared)
	}
	if *public {
		recs = append(recs, scriptutil.PublicRecordings(filepath.Dir(*shared))...)
	}

	var runs []*run
	for _, r := range recs {
		for _, s := range ss {
			name := recordingName(r.Path)
			runs = append(runs, &run{group: r.Group, name: name, path: r.Path, args: r.Args, seed: s})
		}
	}
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			fail(err)
		}
	}
	scriptutil.Parallel(*jobs, len(runs), func(i int) {
		r := runs[i]
		args := append([]string{"whatif", "-i", r.path, "--validate", "--seed", strconv.Itoa(r.seed), "--format", "json"}, groupArgs[r.group]...)
		args = append(args, r.args...)
		for _, kv := range setAll {
			args = append(args, "--set", kv)
		}
		for _, a := range affinity {
			args = append(args, "--affinity", a)
		}
		r.out, r.err = exec.Command(*bin, args...).Output()
		if r.err == nil {
			r.err = json.Unmarshal(r.out, &r.res)
		}
	})

	type tot struct{ met, all int }
	totals := map[string]*tot{}
	// errs: per kernel (6.1, 6.18) and goal metric, every run's |error|:
	// their median moves less by chance than a count of goals met.
	errs := map[string]map[string][]float64{}
	var kernels []string
	var order []string
	for _, r := range runs {
		if r.err != nil {
			fail(fmt.Errorf("%s seed %d: %v", r.path, r.seed, r.err))
		}
		if *outDir != "" {
			f := filepath.Join(*outDir, runFile(r))
			if err := os.WriteFile(f, r.out, 0o644); err != nil {
				fail(err)
			}
		}
		t := totals[r.group]
		if t == nil {
			t = &tot{}
			totals[r.group] = t
			order = append(order, r.group)
		}
		met := 0
		var vals []string
		kern := kernelOf(r.group)
		if errs[kern] == nil {
			errs[kern] = map[string][]float64{}
			kernels = append(kernels, kern)
		}
		counted := 0
		for _, g := range r.res.Fidelity.Goals {
			if r.vacuous(g) {
				vals = append(vals, strings.TrimSuffix(strings.TrimPrefix(g.Metric, "wakeup_"), "_ns")+"=-")
				continue
			}
			counted++
			errs[kern][g.Metric] = append(errs[kern][g.Metric], math.Abs(g.Value))
			if g.Met {
				met++
			}
			mark := " "
			if !g.Met {
				mark = "!"
			}
			vals = append(vals, fmt.Sprintf("%s=%.3f%s", strings.TrimSuffix(strings.TrimPrefix(g.Metric, "wakeup_"), "_ns"), g.Value, mark))
		}
		t.met += met
		t.all += counted
		if *table {
			if r == runs[0] {
				fmt.Println("| fixture | seed | p50 obs→sim (err) | p95 obs→sim (err) | p99 obs→sim (err) | idle err / total CPU | KS | idle-while-runnable err | migrations obs→sim | involuntary obs→sim | makespan err | CPU time err | wakeups obs→sim |")
				fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
			}
			fmt.Println(tableRow(r))
			continue
		}
		fmt.Printf("%-40s seed %-2d %d/%d  %s\n", r.name, r.seed, met, counted, strings.Join(vals, " "))
	}
	fmt.Println()
	for _, g := range order {
		fmt.Printf("%-14s %d of %d goals met\n", g, totals[g].met, totals[g].all)
	}
	if c, s := totals["6.1 committed"], totals["6.1 shared"]; c != nil && s != nil {
		fmt.Printf("%-14s %d of %d goals met\n", "6.1 all nine", c.met+s.met, c.all+s.all)
	}
	if !*table {
		printNewidleShares(runs)
	}
	if *goals {
		printGoals(runs)
	}
	if *places {
		printPlaces(runs)
	}
	if *choices {
		printChoices(runs)
	}
	if *bias {
		printBias(runs)
	}
	if *merged {
		fmt.Println("\nmerged as fast: per group, the runs that missed each latency goal, and of those the runs whose bound with the replay's missing wakeups counted as the fastest would meet it")
		for _, row := range mergedRows(runs) {
			fmt.Println("  " + row)
		}
	}
	if *bands {
		printBands(runs)
	}
	if *status {
		if err := printStatus(runs); err != nil {
			fail(err)
		}
	}
	if *repeats || *holdout || *sameDay {
		if err := printSpread(runs); err != nil {
			fail(err)
		}
	}
	if *against != "" {
		if err := printAgainst(runs, *against); err != nil {
			fail(err)
		}
		if *places {
			if err := printPlaceMoves(runs, *against); err != nil {
				fail(err)
			}
		}
	}
	for _, k := range kernels {
		var parts []string
		for _, m := range goalLabels {
			if v := errs[k][m.metric]; len(v) > 0 {
				parts = append(parts, fmt.Sprintf("%s %.1f%%", m.label, 100*scriptutil.Median(v)))
			}
		}
		fmt.Printf("%-14s median |error|: %s\n", k, strings.Join(parts, ", "))
	}
}

// printGoals prints, per recording in run order, how many of its runs
// met each goal, as "metric met/runs".
func printGoals(runs []*run) {
	names, byName := byRecording(runs)
	fmt.Println("\ngoals met per recording (runs met / runs):")
	for _, n := range names {
		var metrics []string
		met, all := map[string]int{}, map[string]int{}
		for _, r := range byName[n] {
			for _, g := range r.res.Fidelity.Goals {
				if all[g.Metric] == 0 {
					metrics = append(metrics, g.Metric)
				}
				all[g.Metric]++
				if g.Met {
					met[g.Metric]++
				}
			}
		}
		var parts []string
		for _, m := range metrics {
			parts = append(parts, fmt.Sprintf("%s %d/%d", m, met[m], all[m]))
		}
		fmt.Printf("  %-40s %s\n", n, strings.Join(parts, "  "))
	}
}

// goalLabels are the four goals with their short labels, in the
// order the totals and the status table print them.
var goalLabels = [...]struct{ metric, label string }{
	{"wakeup_p50_ns", "p50"}, {"wakeup_p95_ns", "p95"}, {"wakeup_p99_ns", "p99"}, {whatif.IdleGoalMetric, "idle"},
}

// printStatus prints FIDELITY.md's status tables (markdown): one row per
// recording, the runs of a recording made several times (its rN, the
// holdouts' and repeats') pooled per group; for each goal the runs that
// met it and the median over them of its signed error (signedError);
// and, for a workload recorded more than once among the runs, the kernel
// against itself (kernelTallies: ordered pairs of its recordings).
func printStatus(runs []*run) error {
	kernel, err := kernelTallies(runs)
	if err != nil {
		return err
	}
	type key struct{ group, fam string }
	var keys []key
	rows := map[key][]*run{}
	for _, r := range runs {
		k := key{r.group, family(r.name)}
		if rows[k] == nil {
			keys = append(keys, k)
		}
		rows[k] = append(rows[k], r)
	}
	fmt.Println("\n| recording | group | p50 | p95 | p99 | idle | the kernel against itself |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, k := range keys {
		var met [len(goalLabels)]int
		var vals [len(goalLabels)][]float64
		for _, r := range rows[k] {
			for _, g := range r.res.Fidelity.Goals {
				for i, gl := range goalLabels {
					if g.Metric == gl.metric {
						vals[i] = append(vals[i], signedError(r, g))
						if g.Met {
							met[i]++
						}
					}
				}
			}
		}
		row := []string{k.fam, k.group}
		for i, gl := range goalLabels {
			if rows[k][0].vacuous(goal{Metric: gl.metric}) {
				row = append(row, "no wakeups")
				continue
			}
			cell := fmt.Sprintf("%d/%d", met[i], len(vals[i]))
			if len(vals[i]) > 0 {
				cell += fmt.Sprintf(" (%+.0f %%)", 100*scriptutil.Median(vals[i]))
			}
			row = append(row, cell)
		}
		kc := "-"
		if t, ok := kernel[k.fam]; ok {
			var parts []string
			for _, gl := range goalLabels {
				parts = append(parts, fmt.Sprintf("%d/%d", t.met[gl.metric], t.all[gl.metric]))
			}
			kc = strings.Join(parts, " · ")
		}
		row = append(row, kc)
		fmt.Printf("| %s |\n", strings.Join(row, " | "))
	}
	return nil
}

// printBias prints, per group and goal, the recordings whose replays'
// median signed error over the seeds is within the goal's limit (the
// model's central estimate meets it) beside the runs' mean share of
// meeting it (the sum over recordings of runs met / runs). Were the
// misses noise around an unbiased model, the first count would exceed
// the second; where the two agree, the misses are biases of the model.
// mergedRows are -merged's lines, one per group in run order: for each
// latency goal the runs that missed it and, of those, the runs whose
// merged-as-fast percentile (whatif.MergedAsFast) is within the goal's
// limit.
func mergedRows(runs []*run) []string {
	type acc struct{ missed, bound int }
	var groups []string
	tot := map[string]*[3]acc{}
	for _, r := range runs {
		if r.err != nil {
			continue
		}
		if tot[r.group] == nil {
			tot[r.group] = &[3]acc{}
			groups = append(groups, r.group)
		}
		f := &r.res.Fidelity
		for _, g := range f.Goals {
			i := slices.IndexFunc(goalLabels[:3], func(l struct{ metric, label string }) bool { return l.metric == g.Metric })
			if i < 0 || g.Met || r.vacuous(g) {
				continue
			}
			a := &tot[r.group][i]
			a.missed++
			if mf := f.MergedAsFast; mf != nil {
				if e, ok := mf.RelError[g.Metric]; ok && math.Abs(e) <= g.Limit {
					a.bound++
				}
			}
		}
	}
	var rows []string
	for _, g := range groups {
		var parts []string
		for i, gl := range goalLabels[:3] {
			a := tot[g][i]
			parts = append(parts, fmt.Sprintf("%s %d missed, %d within the bound", gl.label, a.missed, a.bound))
		}
		rows = append(rows, fmt.Sprintf("%-20s %s", g, strings.Join(parts, ", ")))
	}
	return rows
}

func printBias(runs []*run) {
	fmt.Println("\nbias: recordings whose median error over the seeds meets each goal (the runs' mean share meeting it)")
	for _, row := range biasRows(runs) {
		fmt.Println("  " + row)
	}
}

// biasRows are printBias's lines, one per group in run order.
func biasRows(runs []*run) []string {
	names, byName := byRecording(runs)
	type acc struct {
		median, recs int
		share        float64
	}
	var groups []string
	tot := map[string]*[len(goalLabels)]acc{}
	for _, n := range names {
		rs := byName[n]
		g := rs[0].group
		if tot[g] == nil {
			tot[g] = &[len(goalLabels)]acc{}
			groups = append(groups, g)
		}
		for i, gl := range goalLabels {
			var vals []float64
			met, limit := 0, 0.0
			for _, r := range rs {
				for _, gg := range r.res.Fidelity.Goals {
					if gg.Metric == gl.metric {
						vals = append(vals, signedError(r, gg))
						limit = gg.Limit
						if gg.Met {
							met++
						}
					}
				}
			}
			if len(vals) == 0 {
				continue
			}
			a := &tot[g][i]
			a.recs++
			a.share += float64(met) / float64(len(vals))
			if math.Abs(scriptutil.Median(vals)) <= limit {
				a.median++
			}
		}
	}
	var rows []string
	for _, g := range groups {
		var parts []string
		for i, gl := range goalLabels {
			a := tot[g][i]
			parts = append(parts, fmt.Sprintf("%s %d of %d (%.1f)", gl.label, a.median, a.recs, a.share))
		}
		rows = append(rows, fmt.Sprintf("%-20s %s", g, strings.Join(parts, ", ")))
	}
	return rows
}

// tally counts, per goal metric, the cases that met it of all.
type tally struct{ met, all map[string]int }

func newTally() tally { return tally{map[string]int{}, map[string]int{}} }

// kernelTallies is the kernel against itself per workload (family) that
// the runs hold more than one recording of: every ordered pair of its
// recordings' observed metrics scored by the goals (whatif.NewSpread).
func kernelTallies(runs []*run) (map[string]tally, error) {
	names, byName := byRecording(runs)
	members := map[string][]string{}
	var fams []string
	for _, n := range names {
		f := family(n)
		if members[f] == nil {
			fams = append(fams, f)
		}
		members[f] = append(members[f], n)
	}
	out := map[string]tally{}
	for _, f := range fams {
		if len(members[f]) < 2 {
			continue
		}
		var obs []*whatif.Metrics
		for _, n := range members[f] {
			o, _, err := runMetrics(byName[n][0])
			if err != nil {
				return nil, err
			}
			obs = append(obs, o)
		}
		sp := whatif.NewSpread(obs, obs[0])
		t := newTally()
		for _, g := range sp.Goals {
			t.met[g.Metric] += g.KernelMet
			t.all[g.Metric] += sp.Pairs
		}
		out[f] = t
	}
	return out, nil
}

// runMetrics is a run's observed and simulated metrics, from its JSON.
func runMetrics(r *run) (obs, sim *whatif.Metrics, err error) {
	var v struct {
		Fidelity struct {
			Observed  whatif.Metrics `json:"observed"`
			Simulated whatif.Metrics `json:"simulated"`
		} `json:"fidelity"`
	}
	if err := json.Unmarshal(r.out, &v); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", r.path, err)
	}
	return &v.Fidelity.Observed, &v.Fidelity.Simulated, nil
}

// signedError is goal g's error with its sign (the goals carry its
// magnitude): simulated minus observed, relative to the observed
// percentile, or for idle time relative to the observed idle plus CPU time.
func signedError(r *run, g goal) float64 {
	f := r.res.Fidelity
	if g.Metric != whatif.IdleGoalMetric {
		return f.RelError[g.Metric]
	}
	num := func(m map[string]any, k string) float64 { v, _ := m[k].(float64); return v }
	total := num(f.Observed, "idle_ns") + num(f.Observed, "cpu_time_ns")
	if total == 0 {
		return 0
	}
	return (num(f.Simulated, "idle_ns") - num(f.Observed, "idle_ns")) / total
}

// byRecording groups runs by recording: the names in run order, and each
// one's runs.
func byRecording(runs []*run) ([]string, map[string][]*run) {
	var names []string
	by := map[string][]*run{}
	for _, r := range runs {
		if by[r.name] == nil {
			names = append(names, r.name)
		}
		by[r.name] = append(by[r.name], r)
	}
	return names, by
}

// printNewidleShares prints, per recording, the share of newidle chances
// the trace's CPUs took and the median over seeds of the replay's
// (newidle_pulls / newidle_chances; FIDELITY.md round 25).
func printNewidleShares(runs []*run) {
	share := func(m map[string]any) (float64, bool) {
		p, _ := m["newidle_pulls"].(float64)
		c, _ := m["newidle_chances"].(float64)
		return p / c, c > 0
	}
	names, byName := byRecording(runs)
	fmt.Println("newidle pulls per chance (trace; replay, median over seeds):")
	for _, n := range names {
		rs := byName[n]
		obs, sim := "-", "-"
		if v, ok := share(rs[0].res.Fidelity.Observed); ok {
			obs = fmt.Sprintf("%.0f%%", 100*v)
		}
		var sims []float64
		for _, r := range rs {
			if v, ok := share(r.res.Fidelity.Simulated); ok {
				sims = append(sims, v)
			}
		}
		if len(sims) > 0 {
			sim = fmt.Sprintf("%.0f%%", 100*scriptutil.Median(sims))
		}
		fmt.Printf("  %-40s %5s  %5s\n", n, obs, sim)
	}
}

// choiceKeys are the counts of --validate's JSON wake_choices.
var choiceKeys = [...]string{"kept", "pulled", "elsewhere", "stayed", "moved"}

// choiceCounts are one schedule's wake_choices counts, false when its
// side has none (no sched_waking).
func choiceCounts(m map[string]any) (c [len(choiceKeys)]float64, ok bool) {
	wp, _ := m["wake_choices"].(map[string]any)
	if wp == nil {
		return c, false
	}
	for i, k := range choiceKeys {
		c[i], _ = wp[k].(float64)
	}
	return c, true
}

// choiceRow is one recording's or family's trace counts and replay
// counts (each the median over the seeds, summed over a family's
// recordings).
type choiceRow struct {
	name       string
	obs, sim   [len(choiceKeys)]float64
	recordings int
}

// choiceRows returns the per-recording rows and the per group and
// workload sums (recordings with both sides' counts only), in the runs'
// order.
func choiceRows(runs []*run) (families, recordings []choiceRow) {
	names, byName := byRecording(runs)
	famIdx := map[string]int{}
	for _, n := range names {
		rs := byName[n]
		obs, ok := choiceCounts(rs[0].res.Fidelity.Observed)
		if !ok {
			continue
		}
		var per [len(choiceKeys)][]float64
		for _, r := range rs {
			if c, ok := choiceCounts(r.res.Fidelity.Simulated); ok {
				for i := range c {
					per[i] = append(per[i], c[i])
				}
			}
		}
		if len(per[0]) == 0 {
			continue
		}
		row := choiceRow{name: n, obs: obs, recordings: 1}
		for i := range per {
			row.sim[i] = scriptutil.Median(per[i])
		}
		recordings = append(recordings, row)
		fam := rs[0].group + " " + workloadOf(n)
		j, seen := famIdx[fam]
		if !seen {
			j = len(families)
			famIdx[fam] = j
			families = append(families, choiceRow{name: fam})
		}
		f := &families[j]
		for i := range row.obs {
			f.obs[i] += row.obs[i]
			f.sim[i] += row.sim[i]
		}
		f.recordings++
	}
	return families, recordings
}

// choiceCell is "kept of cross-CPU (share) / stayed" of a row's side.
func choiceCell(c [len(choiceKeys)]float64) string {
	cross := c[0] + c[1] + c[2]
	share := "-"
	if cross > 0 {
		share = fmt.Sprintf("%.0f %%", 100*c[0]/cross)
	}
	return fmt.Sprintf("kept %.0f of %.0f (%s), pulled %.0f, stayed %.0f, moved %.0f", c[0], cross, share, c[1], c[3], c[4])
}

// printChoices prints choiceRows as two markdown tables.
func printChoices(runs []*run) {
	families, recordings := choiceRows(runs)
	fmt.Println("\nwhat the wakeup path chose (sleeping wakees): the trace | the replays (median over seeds), summed per group and workload")
	fmt.Println("| group and workload | recordings | trace | replay |")
	fmt.Println("|---|---|---|---|")
	for _, f := range families {
		fmt.Printf("| %s | %d | %s | %s |\n", f.name, f.recordings, choiceCell(f.obs), choiceCell(f.sim))
	}
	fmt.Println("\n| recording | trace | replay |")
	fmt.Println("|---|---|---|")
	for _, r := range recordings {
		fmt.Printf("| %s | %s | %s |\n", r.name, choiceCell(r.obs), choiceCell(r.sim))
	}
}

// placeKeys are the wakeup places of --validate's JSON (wakeup_by_place),
// with the table's labels.
var placeKeys = [...]struct{ key, label string }{
	{"idle_cpu", "idle CPU"}, {"waker_cpu", "waker's CPU"}, {"waker_cpu.preempt", "..preempting"}, {"waker_cpu.block", "..after a block"},
	{"other_busy_cpu", "other busy CPU"}, {"other_busy_cpu.preempt", "..preempting"}, {"other_busy_cpu.preempt.first", "..at its first switch"}, {"other_busy_cpu.block", "..after a block"},
}

// printPlaces prints, per recording, a markdown table of where its
// wakeups landed: count and p50 latency per place, the trace's and the
// replay's median over the seeds.
func printPlaces(runs []*run) {
	place := func(m map[string]any, k string) (count, p50 float64, ok bool) {
		byPlace, _ := m["wakeup_by_place"].(map[string]any)
		p, _ := byPlace[k].(map[string]any)
		if p == nil {
			return 0, 0, false
		}
		c, _ := p["count"].(float64)
		v, _ := p["p50_ns"].(float64)
		return c, v, true
	}
	names, byName := byRecording(runs)
	fmt.Println("\nwakeups by place (count, p50): trace | replay, median over seeds")
	fmt.Print("| recording |")
	for _, k := range placeKeys {
		fmt.Printf(" %s |", k.label)
	}
	fmt.Print("\n|---|")
	for range placeKeys {
		fmt.Print("---|")
	}
	fmt.Println()
	for _, n := range names {
		rs := byName[n]
		fmt.Printf("| %s |", n)
		for _, k := range placeKeys {
			oc, op, ok := place(rs[0].res.Fidelity.Observed, k.key)
			var sc, sp []float64
			for _, r := range rs {
				if c, p, ok := place(r.res.Fidelity.Simulated, k.key); ok {
					sc, sp = append(sc, c), append(sp, p)
				}
			}
			if !ok || len(sc) == 0 {
				fmt.Print(" - |")
				continue
			}
			fmt.Printf(" %.0f, %.3f ms \\| %.0f, %.3f ms |", oc, op/1e6, scriptutil.Median(sc), scriptutil.Median(sp)/1e6)
		}
		fmt.Println()
	}
}

// printBands prints, per recording, a markdown table of its latency
// goals' bands (bandRows).
func printBands(runs []*run) {
	fmt.Println("\nlatency goal bands: share of wakeups below the band..up to its top, the trace | the replays' median (runs below/in/above the band)")
	fmt.Println("| recording | p50 | p95 | p99 |")
	fmt.Println("|---|---|---|---|")
	for _, row := range bandRows(runs) {
		fmt.Println(row)
	}
}

// bandRows is one markdown row per recording: for each latency goal the
// share of the trace's wakeups below its band and up to its top, then the
// replays' (median over the seeds), and how many runs' percentile fell
// below the band, in it and above it (the goal's own verdict, exact where
// the shares are rounded; its side from the sign of the error).
func bandRows(runs []*run) []string {
	names, byName := byRecording(runs)
	var rows []string
	for _, n := range names {
		rs := byName[n]
		cells := []string{n}
		for i := range rs[0].res.Fidelity.GoalBands {
			ob := rs[0].res.Fidelity.GoalBands[i]
			var lo, hi []float64
			var under, in, over int
			for _, r := range rs {
				b := r.res.Fidelity.GoalBands[i]
				lo, hi = append(lo, b.SimulatedBelow), append(hi, b.SimulatedUpTo)
				switch met := goalMet(r, b.Metric); {
				case met:
					in++
				case r.res.Fidelity.RelError[b.Metric] < 0:
					under++
				default:
					over++
				}
			}
			cells = append(cells, fmt.Sprintf("%.1f..%.1f %% \\| %.1f..%.1f %% (%d/%d/%d)", ob.ObservedBelow, ob.ObservedUpTo, scriptutil.Median(lo), scriptutil.Median(hi), under, in, over))
		}
		rows = append(rows, fmt.Sprintf("| %s |", strings.Join(cells, " | ")))
	}
	return rows
}

// goalMet is whether run r met the goal on metric.
func goalMet(r *run, metric string) bool {
	for _, g := range r.res.Fidelity.Goals {
		if g.Metric == metric {
			return g.Met
		}
	}
	return false
}

// kernelOf is the key the totals per kernel use: the group's kernel,
// with the repeat and holdout recordings apart, so that -repeats and
// -holdout leave the figures FIDELITY.md quotes for the others as they
// were.
func kernelOf(group string) string {
	if strings.HasSuffix(group, " repeats") || strings.HasSuffix(group, " holdout") {
		return group
	}
	return strings.Fields(group)[0]
}

// recordingName names a recording by its guest and workload
// ("guest-P-1s2c1t/hackbench"); a repeat, holdout or affinity recording
// (repeats/GUEST/rN/WORKLOAD.perf.data.gz, holdout/GUEST/rN/...) adds
// "@rN", one with the timer events
// (idle-tick/GUEST/WORKLOAD/WORKLOAD-N.perf.data.gz) "@tN", this
// machine's stressors (local-6.18/stressors/rN/) "stressors/WORKLOAD@rN", so that
// family(name) groups it with the other recordings of its workload on
// that guest.
func recordingName(path string) string {
	dir := filepath.Dir(path)
	work := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".gz"), ".perf.data")
	if filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dir)))) == "crosskernel" {
		// crosskernel/vK/GUEST/rN: each kernel's same-day boots a family
		// of their own.
		k := strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "v")
		return filepath.Base(filepath.Dir(dir)) + "-" + k + "-same-day/" + work + "@" + filepath.Base(dir)
	}
	switch filepath.Base(filepath.Dir(filepath.Dir(dir))) {
	case "repeats", "holdout", "affinity":
		return filepath.Base(filepath.Dir(dir)) + "/" + work + "@" + filepath.Base(dir)
	case "idle-tick": // idle-tick/GUEST/WORKLOAD/WORKLOAD-N: one boot, N runs
		i := strings.LastIndexByte(work, '-')
		return filepath.Base(filepath.Dir(dir)) + "/" + work[:max(i, 0)] + "@t" + work[i+1:]
	case "v6.12": // another kernel on the same guest: a family of its own
		return filepath.Base(filepath.Dir(dir)) + "-v6.12/" + work + "@" + filepath.Base(dir)
	}
	if filepath.Base(filepath.Dir(dir)) == "stressors" { // local-6.18/stressors/rN/
		return "stressors/" + work + "@" + filepath.Base(dir)
	}
	if filepath.Base(filepath.Dir(dir)) == "repeats" { // local-6.18/repeats/rN/
		return filepath.Base(filepath.Dir(filepath.Dir(dir))) + "/" + work + "@" + filepath.Base(dir)
	}
	return filepath.Base(dir) + "/" + work
}

// family is a recording's name without its repeat suffix.
func family(name string) string {
	f, _, _ := strings.Cut(name, "@")
	return f
}

// printSpread prints, per workload recorded more than once on the same
// guest, the trace's goal metrics in each recording; how many goals one
// recording meets against another (every ordered pair, one taken as the
// observed side and the other as if it were a replay, through the same
// whatif.Compare the replays are scored by); the replays' goals met over
// those recordings; and how many replays land within the range the
// kernel's own recordings span (the idle goal as the idle share of
// idle plus CPU time). Then the same summed per kind of guest, with the
// pairs of repeat recordings alone (the eight-vCPU guests' committed
// recordings came from another host) and the repeats' replays alone (out
// of sample): the kernel's own run-to-run spread beside the model's error.
func printSpread(runs []*run) error {
	names, byName := byRecording(runs)
	var fams []string
	members := map[string][]string{}
	for _, n := range names {
		f := family(n)
		if members[f] == nil {
			fams = append(fams, f)
		}
		members[f] = append(members[f], n)
	}
	ms := func(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) }
	add := func(t tally, metric string, ok bool) {
		t.all[metric]++
		if ok {
			t.met[metric]++
		}
	}
	var order []string
	format := func(t tally) string {
		var parts []string
		for _, m := range order {
			label := strings.TrimSuffix(strings.TrimPrefix(m, "wakeup_"), "_ns")
			label = strings.TrimSuffix(label, "_ns/total_cpu_time")
			parts = append(parts, fmt.Sprintf("%s %d/%d", label, t.met[m], t.all[m]))
		}
		return strings.Join(parts, "  ")
	}
	// Sums per kind of guest (the family's committed recording's group):
	// the kernel against itself, the replays, within range, and the
	// replays of the repeat recordings alone (out of sample).
	type sums struct{ k, kRep, r, in, rep tally }
	var kinds []string
	sum := map[string]*sums{}
	fmt.Println("\nthe kernel against itself: one recording of a workload scored as if it were a replay of another (ordered pairs); the replays of the same recordings; the replays within the range the recordings span:")
	for _, f := range fams {
		ns := members[f]
		if len(ns) < 2 {
			continue
		}
		obs := make([]*whatif.Metrics, len(ns))
		for i, n := range ns {
			m, _, err := runMetrics(byName[n][0])
			if err != nil {
				return err
			}
			obs[i] = m
			fmt.Printf("  %-44s p50 %s  p95 %s  p99 %s ms  idle %s of %s ms\n", n, ms(m.WakeupP50NS), ms(m.WakeupP95NS), ms(m.WakeupP99NS), ms(m.IdleNS), ms(m.IdleNS+m.CPUTimeNS))
		}
		kind := kindOf(byName[ns[0]][0].group)
		if sum[kind] == nil {
			kinds = append(kinds, kind)
			sum[kind] = &sums{newTally(), newTally(), newTally(), newTally(), newTally()}
		}
		all := sum[kind]
		k, rep, in := newTally(), newTally(), newTally()
		// The kernel's pairs, all of them and those among the repeats.
		addPairs := func(sp *whatif.Spread, ts ...tally) {
			for _, g := range sp.Goals {
				if !slices.Contains(order, g.Metric) {
					order = append(order, g.Metric)
				}
				for _, t := range ts {
					t.met[g.Metric] += g.KernelMet
					t.all[g.Metric] += sp.Pairs
				}
			}
		}
		addPairs(whatif.NewSpread(obs, obs[0]), k, all.k)
		var repObs []*whatif.Metrics
		for i, n := range ns {
			if strings.Contains(n, "@") {
				repObs = append(repObs, obs[i])
			}
		}
		if len(repObs) >= 2 {
			addPairs(whatif.NewSpread(repObs, repObs[0]), all.kRep)
		}
		for _, n := range ns {
			for _, r := range byName[n] {
				_, sim, err := runMetrics(r)
				if err != nil {
					return err
				}
				sp := whatif.NewSpread(obs, sim)
				for gi, g := range r.res.Fidelity.Goals {
					add(rep, g.Metric, g.Met)
					add(all.r, g.Metric, g.Met)
					if strings.Contains(n, "@") {
						add(all.rep, g.Metric, g.Met)
					}
					add(in, g.Metric, sp.Goals[gi].Within)
					add(all.in, g.Metric, sp.Goals[gi].Within)
				}
			}
		}
		fmt.Printf("  %-44s the kernel against itself: %s\n", f, format(k))
		fmt.Printf("  %-44s the replays:                %s\n", "", format(rep))
		fmt.Printf("  %-44s within the kernel's range:  %s\n", "", format(in))
	}
	for _, kind := range kinds {
		all := sum[kind]
		fmt.Printf("  %-44s the kernel against itself: %s\n", kind, format(all.k))
		fmt.Printf("  %-44s  the repeats among them:   %s\n", "", format(all.kRep))
		fmt.Printf("  %-44s the replays:                %s\n", "", format(all.r))
		fmt.Printf("  %-44s within the kernel's range:  %s\n", "", format(all.in))
		fmt.Printf("  %-44s the repeats' replays alone: %s\n", "", format(all.rep))
	}
	return nil
}

// kindOf names the kind of guest a family of recordings is summed under
// in printSpread's summary, from its first recording's group (the
// committed one where there is one). A group it does not know is a kind
// of its own: summed with another, it would blur both (the vfork and
// taskset families once counted with the eight-vCPU guests).
func kindOf(group string) string {
	switch group {
	case "6.1 committed", "6.1 shared", "6.1 repeats", "6.1 timers repeats":
		// A 6.1 family led by a repeat is an eight-vCPU one whose
		// committed recording is in ../shared, absent: the two-vCPU
		// guests' are all committed here.
		return "the eight-vCPU guests"
	case "6.1 2-vCPU":
		return "the two-vCPU guests"
	case "6.18":
		return "this machine's 6.18"
	case "6.18 workloads":
		return "this machine's later 6.18 builds"
	case "6.18 stressors repeats":
		return "this machine's stress-ng stressors"
	case "6.1 affinity":
		return "the four-vCPU guest under taskset"
	case "6.12":
		return "Debian's 6.12 (two vCPUs)"
	case "6.1 2-vCPU holdout":
		return "the holdout workloads, two vCPUs"
	case "6.1 8-vCPU holdout":
		return "the holdout workloads, eight vCPUs"
	case "6.1 same-day":
		return "6.1 beside 6.12 on one day"
	case "6.12 same-day":
		return "6.12 beside 6.1 on one day"
	}
	return "group " + group
}

// runFile is the name -o gives a run's JSON.
func runFile(r *run) string {
	return strings.ReplaceAll(r.name, "/", "_") + ".s" + strconv.Itoa(r.seed) + ".json"
}

// printAgainst compares this invocation's runs with those kept in dir by
// an earlier -o: for every recording and goal whose count moved, the runs
// that met it there and here, then the totals per kernel; only runs both
// have count (a seed or recording missing there is left out and said).
func printAgainst(runs []*run, dir string) error {
	type key struct{ name, metric string }
	before, now, runsOf := map[key]int{}, map[key]int{}, map[key]int{}
	var keys []key
	seen := map[key]bool{}
	kern := map[string]string{}
	missing := 0
	for _, r := range runs {
		old, err := readKept(dir, r)
		if err != nil {
			return err
		}
		if old == nil {
			missing++
			continue
		}
		kern[r.name] = kernelOf(r.group)
		count := func(gs []goal, m map[key]int) {
			for _, g := range gs {
				k := key{r.name, g.Metric}
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
				if g.Met {
					m[k]++
				}
			}
		}
		count(old.Fidelity.Goals, before)
		count(r.res.Fidelity.Goals, now)
		for _, g := range r.res.Fidelity.Goals {
			runsOf[key{r.name, g.Metric}]++
		}
	}
	fmt.Printf("\nagainst %s (runs met, before -> now)", dir)
	if missing > 0 {
		fmt.Printf("; %d runs not there, left out", missing)
	}
	fmt.Println(":")
	// A tally is goals met before and now over some keys, with the
	// variance chance alone gives their difference. Per kernel, overall,
	// and per workload: a change that moves every recording of one
	// workload the same way is a rule's effect even where the total is
	// within chance (round 114: schbench and stress-ng up, messaging
	// and hackbench down over both seed ranges).
	type tally struct {
		before, now int
		chance      float64
	}
	byKern, byWorkload := map[string]*tally{}, map[string]*tally{}
	var kerns []string
	var all tally
	add := func(m map[string]*tally, name string, b, n int, v float64) {
		t := m[name]
		if t == nil {
			t = &tally{}
			m[name] = t
		}
		t.before, t.now, t.chance = t.before+b, t.now+n, t.chance+v
	}
	for _, k := range keys {
		kn := kern[k.name]
		if _, ok := byKern[kn]; !ok {
			kerns = append(kerns, kn)
		}
		v := chanceVar(before[k], now[k], runsOf[k])
		add(byKern, kn, before[k], now[k], v)
		add(byWorkload, workloadOf(k.name), before[k], now[k], v)
		all.before, all.now, all.chance = all.before+before[k], all.now+now[k], all.chance+v
		if before[k] != now[k] {
			fmt.Printf("  %-40s %-24s %3d -> %3d\n", k.name, k.metric, before[k], now[k])
		}
	}
	line := func(name string, t *tally) {
		sd := math.Sqrt(t.chance)
		z := 0.0
		if sd > 0 {
			z = float64(t.now-t.before) / sd
		}
		fmt.Printf("%-14s %d -> %d goals met (%+d; by chance ±%.0f, so %+.1f of that)\n", name, t.before, t.now, t.now-t.before, sd, z)
	}
	for _, kn := range kerns {
		line(kn, byKern[kn])
	}
	line("all", &all)
	var wls []string
	for wl, t := range byWorkload {
		if t.before != t.now {
			wls = append(wls, wl)
		}
	}
	if len(wls) > 0 {
		slices.Sort(wls)
		fmt.Println("by workload (every group):")
		for _, wl := range wls {
			line("  "+wl, byWorkload[wl])
		}
	}
	return nil
}

// workloadOf is a recording's workload: its name's last path element
// without the repeat suffix ("guest-M-1s1c2t-v6.12/hackbench@r2":
// hackbench).
func workloadOf(name string) string { return filepath.Base(family(name)) }

// readKept reads run r's JSON kept in dir by an earlier -o; nil when that
// run is not there.
func readKept(dir string, r *run) (*result, error) {
	path := filepath.Join(dir, runFile(r))
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var old result
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &old, nil
}

// printPlaceMoves compares, per recording and wakeup place, the replay's
// p95 (the median over the seeds both runs have) with the runs kept in
// dir, and prints the places it moved by half or more (and 0.5 ms),
// toward or away from the trace's. A gain in goals that comes with a
// place moving away is suspect: round 84's first version met more goals
// by making the waker's CPU's wakeups wait behind a held reschedule
// (their p95 0.33 → 3.28 ms against the trace's 0.62 on guest-D r4).
func printPlaceMoves(runs []*run, dir string) error {
	p95 := func(m map[string]any, k string) (float64, bool) {
		byPlace, _ := m["wakeup_by_place"].(map[string]any)
		p, _ := byPlace[k].(map[string]any)
		if p == nil {
			return 0, false
		}
		v, ok := p["p95_ns"].(float64)
		return v, ok
	}
	names, byName := byRecording(runs)
	fmt.Printf("\nwakeup places whose replayed p95 moved against %s (median over seeds; the trace's beside):\n", dir)
	n := 0
	for _, name := range names {
		// Each kept run is read once, for all its places.
		kept := make([]*result, len(byName[name]))
		for i, r := range byName[name] {
			old, err := readKept(dir, r)
			if err != nil {
				return err
			}
			kept[i] = old
		}
		for _, k := range placeKeys {
			var trace float64
			var haveTrace bool
			var before, after []float64
			for i, r := range byName[name] {
				old := kept[i]
				if old == nil {
					continue
				}
				ob, ok1 := p95(old.Fidelity.Simulated, k.key)
				nw, ok2 := p95(r.res.Fidelity.Simulated, k.key)
				if !ok1 || !ok2 {
					continue
				}
				before, after = append(before, ob), append(after, nw)
				if !haveTrace {
					trace, haveTrace = p95(r.res.Fidelity.Observed, k.key)
				}
			}
			if row, ok := placeMove(name, k.label, trace, haveTrace, before, after); ok {
				fmt.Println(row)
				n++
			}
		}
	}
	if n == 0 {
		fmt.Println("  none")
	}
	return nil
}

// placeMove is printPlaceMoves' row for one recording and place: the
// replay's p95 before and after (medians of the seeds' values, ns), when
// the larger is at least 1.5 times the smaller and 0.5 ms above it; with
// the trace's p95, whether it moved toward it (the distance shrank) or
// away.
func placeMove(name, place string, trace float64, haveTrace bool, before, after []float64) (string, bool) {
	if len(before) == 0 || len(before) != len(after) {
		return "", false
	}
	b, a := scriptutil.Median(before), scriptutil.Median(after)
	lo, hi := math.Min(a, b), math.Max(a, b)
	if hi < 1.5*lo || hi-lo < 500000 {
		return "", false
	}
	dir := ""
	if haveTrace {
		dir = "  toward the trace's"
		if math.Abs(a-trace) > math.Abs(b-trace) {
			dir = "  AWAY from the trace's"
		}
		dir += fmt.Sprintf(" %.3f ms", trace/1e6)
	}
	return fmt.Sprintf("  %-40s %-16s p95 %.3f -> %.3f ms (%d seeds)%s", name, place, b/1e6, a/1e6, len(before), dir), true
}

// chanceVar is the variance of the difference between two counts of runs
// meeting a goal, before and now, of n runs each, were each build's runs
// independent draws at its own share of meeting it: what the change of a
// replay's chaotic course alone moves a count by (FIDELITY.md round 64).
// A group's totals differ by chance by the square root of the sum.
func chanceVar(before, now, n int) float64 {
	if n <= 0 {
		return 0
	}
	pb, pn := float64(before)/float64(n), float64(now)/float64(n)
	return float64(n) * (pb*(1-pb) + pn*(1-pn))
}

// tableRow is one run as a row of FIDELITY.md's results table: the goals'
// metrics observed → simulated with the relative error (✗: goal missed),
// then the other metrics' errors and counts.
func tableRow(r *run) string {
	f := &r.res.Fidelity
	num := func(m map[string]any, k string) float64 {
		v, _ := m[k].(float64)
		return v
	}
	pct := func(e float64) string {
		e *= 100
		if e > -10 && e < 10 {
			return fmt.Sprintf("%+.1f%%", e)
		}
		return fmt.Sprintf("%+.0f%%", e)
	}
	missed := map[string]bool{}
	idleGoal := ""
	for _, g := range f.Goals {
		missed[g.Metric] = !g.Met
		if strings.HasPrefix(g.Metric, "idle_ns") {
			idleGoal = fmt.Sprintf("%.1f%%", g.Value*100)
			if !g.Met {
				idleGoal += " ✗"
			}
		}
	}
	lat := func(k string) string {
		s := fmt.Sprintf("%.3f→%.3f ms (%s)", num(f.Observed, k)/1e6, num(f.Simulated, k)/1e6, pct(f.RelError[k]))
		if missed[k] {
			s += " ✗"
		}
		return s
	}
	cnt := func(k string) string {
		return fmt.Sprintf("%.0f→%.0f", num(f.Observed, k), num(f.Simulated, k))
	}
	name := strings.Replace(r.name, "/", " ", 1)
	if r.group == "6.1 shared" {
		name += " †"
	}
	return fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %.3f | %s | %s | %s | %s | %s | %s |", name, r.seed,
		lat("wakeup_p50_ns"), lat("wakeup_p95_ns"), lat("wakeup_p99_ns"), idleGoal, f.KS, pct(f.RelError["idle_while_runnable_ns"]),
		cnt("migrations"), cnt("involuntary_switches"), pct(f.RelError["makespan_ns"]), pct(f.RelError["cpu_time_ns"]), cnt("wakeup_count"))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fidelity:", err)
	os.Exit(1)
}

// setList is a repeatable -set.
type setList []string

func (l *setList) String() string { return strings.Join(*l, " ") }

func (l *setList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
