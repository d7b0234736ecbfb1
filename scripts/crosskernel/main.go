// Command crosskernel puts the what-if question to recordings whose answer
// is known. The same workloads were recorded on the same two-vCPU guests
// under Debian's 6.1 and 6.12.57: what the kernels did differently is in
// the recordings themselves. Each 6.1 recording replayed under 6.12's
// policy against its own kernel's (replay whatif --baseline v6.1 --policy
// v6.12~33cf66d88306 --runs N) predicts the change from 6.1 to 6.12; each
// 6.12 recording replayed the other way predicts the reverse, read here
// as the same forward change. The table sets both beside the change the
// recordings show, and beside the kernels' own spread: every pair of one
// 6.1 and one 6.12 recording, so a prediction is held to the range two
// real boots give, not to one number.
//
//	go run ./scripts/crosskernel [-pairs same-day|earlier] [-runs 10] [-j 2] [-set KEY=VALUE]... [-json | -markdown]
//
// -pairs same-day (the default) compares the six workloads recorded
// under both kernels on one day, boots alternating
// (fixtures/kernels/crosskernel, FIDELITY.md round 109); -pairs earlier
// the committed workloads' 6.1 recordings and repeats with
// fixtures/kernels/v6.12, made on other days, when the host ran the TCG
// guests two to three times slower or faster: that table (round 108)
// mixes the kernels' change with the host's.
//
// A change is "real" where every pair of recordings moves the same way.
// A prediction has a direction where most of its comparisons find the
// change significant (their seeds' 95 % interval excludes none) and the
// predictions' median is at least minEffect; the summary counts the real
// changes predicted with their sign, with none and with the other, and
// the predictions within the pairs' range.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/scripts/internal/scriptutil"
)

// The policies the fidelity script replays each kernel's recordings
// under: 6.1's is the trace's own (v6.1); Debian's 6.12.57 predates
// NI_RANDOM's backport.
const (
	policy61  = "v6.1"
	policy612 = "v6.12~33cf66d88306"
)

// minEffect is the smallest predicted change that counts as a direction:
// a deterministic ping-pong's replays find a change of a few tenths of a
// percent significant (their seeds barely differ), which predicts
// nothing a fleet would see.
const minEffect = 0.05

// metrics are the latency percentiles compared.
var metrics = []string{"wakeup_p50_ns", "wakeup_p95_ns", "wakeup_p99_ns"}

// cell is one guest's workload under both kernels.
type cell struct {
	Guest, Workload string
	Old, New        []string // recordings: 6.1, 6.12
}

// pairing names where each kernel's recordings of the same guests'
// workloads are.
type pairing struct {
	name string
	// old lists the 6.1 recordings' glob patterns for a guest's workload
	// of the 6.12 recordings found by newGlob.
	newGlob string
	old     func(kernels, guest, work string) []string
}

// pairings: "same-day", the six workloads recorded under both kernels on
// one day, boots alternating (fixtures/kernels/crosskernel); "earlier",
// the committed workloads' 6.12 boots (fixtures/kernels/v6.12) against
// the committed 6.1 recordings and their repeats, made on other days, on
// which the host ran the guests at other speeds (FIDELITY.md rounds 108
// and 109).
var pairings = []pairing{
	{"same-day", "crosskernel/v6.12/*/r*/*.perf.data.gz", func(k, g, w string) []string {
		return []string{filepath.Join(k, "crosskernel", "v6.1", g, "r*", w+".perf.data.gz")}
	}},
	{"earlier", "v6.12/*/r*/*.perf.data.gz", func(k, g, w string) []string {
		return []string{filepath.Join(k, g, w+".perf.data"), filepath.Join(k, g, w+".perf.data.gz"),
			filepath.Join(k, "repeats", g, "r*", w+".perf.data.gz")}
	}},
}

// cells pairs the recordings under root (the repository's) as pr says:
// every guest with 6.12 recordings, every workload recorded under both
// kernels, in guest and workload order.
func cells(root string, pr pairing) ([]cell, error) {
	kernels := filepath.Join(root, "fixtures/kernels")
	news, err := filepath.Glob(filepath.Join(kernels, pr.newGlob))
	if err != nil {
		return nil, err
	}
	byKey := map[[2]string]*cell{}
	var keys [][2]string
	for _, f := range news {
		guest := filepath.Base(filepath.Dir(filepath.Dir(f)))
		work := strings.TrimSuffix(filepath.Base(f), ".perf.data.gz")
		k := [2]string{guest, work}
		if byKey[k] == nil {
			byKey[k] = &cell{Guest: guest, Workload: work}
			keys = append(keys, k)
		}
		byKey[k].New = append(byKey[k].New, f)
	}
	var out []cell
	for _, k := range keys {
		c := byKey[k]
		for _, pat := range pr.old(kernels, k[0], k[1]) {
			fs, err := filepath.Glob(pat)
			if err != nil {
				return nil, err
			}
			c.Old = append(c.Old, fs...)
		}
		if len(c.Old) == 0 {
			continue
		}
		sort.Strings(c.Old)
		sort.Strings(c.New)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Guest != out[j].Guest {
			return out[i].Guest < out[j].Guest
		}
		return out[i].Workload < out[j].Workload
	})
	return out, nil
}

// pairRange is the lowest and highest relative change newer/old - 1 over
// every pair of one old and one newer recording's values.
func pairRange(old, newer []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, a := range old {
		for _, b := range newer {
			if a <= 0 {
				continue
			}
			d := b/a - 1
			lo, hi = min(lo, d), max(hi, d)
		}
	}
	if lo > hi {
		return math.NaN(), math.NaN()
	}
	return lo, hi
}

// forward reads a change predicted from the new kernel's recordings
// (baseline new, policy old: old/new - 1 = d) as the old-to-new change
// it implies: new/old - 1 = 1/(1+d) - 1.
func forward(d float64) float64 {
	if d <= -1 {
		return math.NaN()
	}
	return 1/(1+d) - 1
}

// verdictDir reads a comparison's verdict on a latency (lower is
// better) as the direction of the change: "worse" a rise, "better" a
// fall, anything else ("no significant change") none.
func verdictDir(v string) int {
	switch v {
	case "worse":
		return 1
	case "better":
		return -1
	}
	return 0
}

// sign is -1, 0 or +1: the direction every pair of recordings agrees on
// (0: the pairs disagree, no real change).
func sign(lo, hi float64) int {
	switch {
	case lo > 0:
		return 1
	case hi < 0:
		return -1
	}
	return 0
}

// placeIn says where a predicted change falls against the pairs' range.
func placeIn(pred, lo, hi float64) string {
	switch {
	case math.IsNaN(pred) || math.IsNaN(lo):
		return "-"
	case pred < lo:
		return "below"
	case pred > hi:
		return "above"
	}
	return "within"
}

// compareOut is what the script reads of `replay whatif --baseline
// --policy --validate -f json`: the comparison, and the trace's own
// metrics from --validate's fidelity report.
type compareOut struct {
	Fidelity struct {
		Observed map[string]json.RawMessage `json:"observed"`
	} `json:"fidelity"`
	Results []struct {
		Policy   string             `json:"policy"`
		DeltaPct map[string]float64 `json:"delta_pct"`
		Verdict  map[string]string  `json:"verdict"`
	} `json:"results"`
}

// recording is one trace's observed percentiles and the change its
// replays predict (fraction, old-to-new), with that change's direction
// where its seeds' 95 % interval excludes none (Dir: +1 a rise, -1 a
// fall, 0 no significant change: the comparison's own verdict).
type recording struct {
	Path      string
	Observed  map[string]float64
	Predicted map[string]float64
	Dir       map[string]int
}

// row is one cell's metric.
type row struct {
	Guest, Workload, Metric string
	OldMedian, NewMedian    float64 // ns
	NOld, NNew              int
	// Observed: the change of the medians; PairLo, PairHi: the pairs'
	// range; Sign: the direction all pairs agree on (0: none).
	Observed, PairLo, PairHi float64
	Sign                     int
	// FromOld, FromNew: the median prediction of the 6.1 recordings'
	// replays and of the 6.12 recordings' (read forward); Pred the
	// median of all of them.
	FromOld, FromNew, Pred float64
	Place                  string // Pred against [PairLo, PairHi]
	// PredSign: the direction most of the recordings' comparisons find
	// significant, when Pred has it and is at least minEffect (0: as many
	// each way, none, too small, or against Pred); SignRight: Sign != 0
	// and PredSign is it.
	PredSign  int
	SignRight bool
}

// summarize turns a cell's recordings into rows.
func summarize(c cell, old, newer []recording) []row {
	var rows []row
	for _, m := range metrics {
		var ov, nv, po, pn []float64
		votes := 0
		for _, r := range old {
			ov = append(ov, r.Observed[m])
			po = append(po, r.Predicted[m])
			votes += r.Dir[m]
		}
		for _, r := range newer {
			nv = append(nv, r.Observed[m])
			pn = append(pn, r.Predicted[m])
			votes += r.Dir[m]
		}
		lo, hi := pairRange(ov, nv)
		r := row{Guest: c.Guest, Workload: c.Workload, Metric: m,
			OldMedian: scriptutil.Median(ov), NewMedian: scriptutil.Median(nv), NOld: len(ov), NNew: len(nv),
			PairLo: lo, PairHi: hi, Sign: sign(lo, hi),
			FromOld: scriptutil.Median(po), FromNew: scriptutil.Median(pn), Pred: scriptutil.Median(append(slices.Clone(po), pn...))}
		r.Observed = r.NewMedian/r.OldMedian - 1
		r.Place = placeIn(r.Pred, lo, hi)
		if v := max(-1, min(1, votes)); math.Abs(r.Pred) >= minEffect && (v > 0) == (r.Pred > 0) {
			r.PredSign = v
		}
		r.SignRight = r.Sign != 0 && r.PredSign == r.Sign
		rows = append(rows, r)
	}
	return rows
}

// job is one replay command and where its result goes.
type job struct {
	args []string
	out  any
	err  error
}

func run(bin string, jobs []*job, n int) {
	scriptutil.Parallel(n, len(jobs), func(i int) {
		j := jobs[i]
		out, err := exec.Command(bin, j.args...).Output()
		if err != nil {
			msg := ""
			if ee, ok := err.(*exec.ExitError); ok {
				msg = strings.TrimSpace(string(ee.Stderr))
			}
			j.err = fmt.Errorf("replay %s: %v %s", strings.Join(j.args, " "), err, msg)
			return
		}
		if err := json.Unmarshal(out, j.out); err != nil {
			j.err = fmt.Errorf("replay %s: %v", strings.Join(j.args, " "), err)
		}
	})
}

// measure runs, for every recording of the cells, the cross-kernel
// comparison with --validate: one extraction gives the comparison and the
// trace's observed percentiles.
func measure(bin string, cs []cell, runs, n int, extra []string) ([][2][]recording, error) {
	var jobs []*job
	out := make([][2][]recording, len(cs))
	var ps [][2][]*compareOut
	for _, c := range cs {
		var pc [2][]*compareOut
		for k, files := range [2][]string{c.Old, c.New} {
			base, pol := policy61, policy612
			if k == 1 {
				base, pol = policy612, policy61
			}
			for _, f := range files {
				p := &compareOut{}
				pc[k] = append(pc[k], p)
				jobs = append(jobs, &job{args: append([]string{"whatif", "-i", f, "--baseline", base, "--policy", pol,
					"--runs", strconv.Itoa(runs), "--validate", "-f", "json"}, extra...), out: p})
			}
		}
		ps = append(ps, pc)
	}
	run(bin, jobs, n)
	for _, j := range jobs {
		if j.err != nil {
			return nil, j.err
		}
	}
	for i, c := range cs {
		for k, files := range [2][]string{c.Old, c.New} {
			for fi, f := range files {
				p := ps[i][k][fi]
				if len(p.Results) != 1 {
					return nil, fmt.Errorf("%s: %d comparison results, want 1", f, len(p.Results))
				}
				r := recording{Path: f, Observed: map[string]float64{}, Predicted: map[string]float64{}, Dir: map[string]int{}}
				for _, m := range metrics {
					var v float64
					if err := json.Unmarshal(p.Fidelity.Observed[m], &v); err != nil {
						return nil, fmt.Errorf("%s: observed %s: %v", f, m, err)
					}
					r.Observed[m] = v
					d, ok := p.Results[0].DeltaPct[m]
					if !ok {
						return nil, fmt.Errorf("%s: no delta_pct %s", f, m)
					}
					d /= 100
					dir := verdictDir(p.Results[0].Verdict[m])
					if k == 1 {
						d, dir = forward(d), -dir
					}
					r.Predicted[m], r.Dir[m] = d, dir
				}
				out[i][k] = append(out[i][k], r)
			}
		}
	}
	return out, nil
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.0f%%", 100*x)
}

// verdict is a row's prediction against the kernels' pairs.
func (r row) verdict() string {
	switch {
	case r.Sign == 0:
		return r.Place + ", no real change"
	case r.SignRight:
		return r.Place + ", sign right"
	case r.PredSign == 0:
		return r.Place + ", none predicted"
	}
	return r.Place + ", sign wrong"
}

// short is a metric's name as the tables print it (p50).
func short(metric string) string {
	return strings.TrimSuffix(strings.TrimPrefix(metric, "wakeup_"), "_ns")
}

// printMarkdown prints the rows as FIDELITY.md's round 108 and 109 tables.
func printMarkdown(w io.Writer, rows []row) {
	md := func(x float64) string { return strings.Replace(pct(x), "%", " %", 1) }
	fmt.Fprintln(w, "| guest | workload | | 6.1 median ms (n) | 6.12 median ms (n) | kernel | pairs' range | replay | from 6.1 | from 6.12 | prediction |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %.3f (%d) | %.3f (%d) | %s | %s … %s | %s | %s | %s | %s |\n",
			r.Guest, r.Workload, short(r.Metric), r.OldMedian/1e6, r.NOld, r.NewMedian/1e6, r.NNew,
			md(r.Observed), md(r.PairLo), md(r.PairHi), md(r.Pred), md(r.FromOld), md(r.FromNew), r.verdict())
	}
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintf(w, "%-22s %-13s %-4s %10s %10s %8s %17s %8s %8s %8s  %s\n",
		"guest", "workload", "", "6.1 ms", "6.12 ms", "kernel", "pairs' range", "replay", "from 6.1", "from 6.12", "prediction")
	for _, r := range rows {
		fmt.Fprintf(w, "%-22s %-13s %-4s %6.3f (%d) %6.3f (%d) %8s %8s..%-8s %8s %8s %8s  %s\n",
			r.Guest, r.Workload, short(r.Metric), r.OldMedian/1e6, r.NOld, r.NewMedian/1e6, r.NNew,
			pct(r.Observed), pct(r.PairLo), pct(r.PairHi), pct(r.Pred), pct(r.FromOld), pct(r.FromNew), r.verdict())
	}
	within, real, right, none := 0, 0, 0, 0
	for _, r := range rows {
		if r.Place == "within" {
			within++
		}
		if r.Sign != 0 {
			real++
			switch {
			case r.SignRight:
				right++
			case r.PredSign == 0:
				none++
			}
		}
	}
	fmt.Fprintf(w, "\npredictions within the pairs' range: %d of %d; real changes (every pair one way): %d, predicted with their sign: %d, with none: %d, with the other sign: %d\n",
		within, len(rows), real, right, none, real-right-none)
}

func main() {
	runs := flag.Int("runs", 10, "seeds per comparison (replay whatif --runs)")
	jobs := flag.Int("j", 2, "replays at once")
	bin := flag.String("bin", "", "the replay binary (default: go build ./cmd/replay)")
	asJSON := flag.Bool("json", false, "print the rows as JSON")
	markdown := flag.Bool("markdown", false, "print the table as markdown (FIDELITY.md rounds 108 and 109)")
	pairs := flag.String("pairs", "same-day", "which recordings to compare: same-day (both kernels' boots alternating on one day, fixtures/kernels/crosskernel) or earlier (the committed 6.1 recordings and repeats against fixtures/kernels/v6.12, made on days the host ran the guests at other speeds: round 108)")
	var extra []string
	flag.Func("set", "a --set KEY=VALUE for every comparison (a model option's effect on the predictions); repeatable", func(v string) error {
		extra = append(extra, "--set", v)
		return nil
	})
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/crosskernel [-runs N] [-j N] [-bin PATH] [-set KEY=VALUE]... [-json | -markdown] (from the repository's root)")
		os.Exit(2)
	}
	replayBin, cleanup, err := scriptutil.ReplayBinary(*bin)
	if err != nil {
		fail(err)
	}
	defer cleanup()
	*bin = replayBin
	i := slices.IndexFunc(pairings, func(p pairing) bool { return p.name == *pairs })
	if i < 0 {
		fail(fmt.Errorf("-pairs %q: want same-day or earlier", *pairs))
	}
	cs, err := cells(".", pairings[i])
	if err != nil {
		fail(err)
	}
	if len(cs) == 0 {
		fail(fmt.Errorf("no 6.12 recordings with 6.1 counterparts for -pairs %s (run from the repository's root)", *pairs))
	}
	recs, err := measure(*bin, cs, *runs, *jobs, extra)
	if err != nil {
		fail(err)
	}
	var rows []row
	for i, c := range cs {
		rows = append(rows, summarize(c, recs[i][0], recs[i][1])...)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fail(err)
		}
		return
	}
	if *markdown {
		printMarkdown(os.Stdout, rows)
		return
	}
	printTable(os.Stdout, rows)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "crosskernel:", err)
	os.Exit(1)
}
