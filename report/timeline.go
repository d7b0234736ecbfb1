package report

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
)

// laneRun is one schedule drawn in the per-CPU timeline.
type laneRun struct {
	Label string
	S     *Schedule
}

// timelineView is the rendered per-CPU timeline and what was done to it.
type timelineView struct {
	SVG template.HTML
	// Slices is the number of run slices drawn or merged; Rects how many
	// rectangles that took; BinNS > 0 when slices shorter than BinNS were
	// merged into per-bin blocks (downsampled).
	Slices, Rects int
	BinNS         int64
	StartNS       int64
	DurNS         int64
	Legend        []legendItem
	// Highlight is the total highlighted idle-while-waiting time per run.
	Highlight []runTotal
}

type legendItem struct {
	Class, Label string
}

type runTotal struct {
	Label string
	NS    int64
}

const (
	tlLabelW = 120
	tlWidth  = 1100
	tlLaneH  = 14
	tlGap    = 6 // between CPUs
	tlAxisH  = 22
	palette  = 12
)

// renderTimeline draws, for each CPU, one lane per schedule (observed
// first), so who ran where can be compared CPU by CPU. Time is in µs from
// the earliest slice of any schedule; the plot area is a nested SVG whose
// viewBox the page's script narrows to zoom. When the slices would need
// more than maxRects rectangles, each lane is cut into bins and slices
// shorter than a bin are merged into one block per bin (opacity = busy
// fraction, colour = the task that ran most); longer slices stay exact.
func renderTimeline(runs []laneRun, maxRects int) timelineView {
	var v timelineView
	first := true
	var lo, hi int64
	ncpu := 0
	for _, r := range runs {
		if a, b, ok := r.S.bounds(); ok {
			if first || a < lo {
				lo = a
			}
			if first || b > hi {
				hi = b
			}
			first = false
		}
		ncpu = max(ncpu, len(r.S.CPUs))
	}
	if first || hi <= lo {
		v.SVG = template.HTML(`<p class="note">No run slices to draw.</p>`)
		return v
	}
	v.StartNS, v.DurNS = lo, hi-lo
	nLanes := ncpu * len(runs)

	// Highlighted gaps per run, and the rectangle count without merging.
	gaps := make([][][]Span, len(runs))
	total := 0
	for i, r := range runs {
		gaps[i] = r.S.IdleWhileWaiting()
		var sum int64
		for _, l := range gaps[i] {
			total += len(l)
			for _, g := range l {
				sum += g.End - g.Start
			}
		}
		v.Highlight = append(v.Highlight, runTotal{r.Label, sum})
		for _, l := range r.S.CPUs {
			for _, x := range l {
				if x.Task >= 0 {
					total++
					v.Slices++
				}
			}
		}
	}
	if maxRects > 0 && total > maxRects {
		bins := max(maxRects/(2*max(nLanes, 1)), 20)
		v.BinNS = max(v.DurNS/int64(bins), 1)
	}

	plotH := ncpu*(len(runs)*tlLaneH+tlGap) - tlGap
	plotW := tlWidth - tlLabelW - 30
	us := func(t int64) string { return fmtUS(float64(t-lo) / 1e3) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="tl" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" data-start-ns="%d" data-dur-us="%s">`,
		tlWidth, plotH+tlAxisH+4, lo, fmtUS(float64(v.DurNS)/1e3))
	// Lane labels and backgrounds.
	for c := 0; c < ncpu; c++ {
		for i, r := range runs {
			y := laneY(c, i, len(runs))
			fmt.Fprintf(&b, `<text class="ll" x="%d" y="%d">cpu%d %s</text>`, tlLabelW-6, y+tlLaneH-3, c, template.HTMLEscapeString(r.Label))
		}
	}
	fmt.Fprintf(&b, `<svg id="tl-plot" x="%d" y="0" width="%d" height="%d" viewBox="0 0 %s %d" preserveAspectRatio="none">`,
		tlLabelW, plotW, plotH, fmtUS(float64(v.DurNS)/1e3), plotH)
	for c := 0; c < ncpu; c++ {
		for i := range runs {
			fmt.Fprintf(&b, `<rect class="bg" x="0" y="%d" width="%s" height="%d"/>`, laneY(c, i, len(runs)), fmtUS(float64(v.DurNS)/1e3), tlLaneH)
		}
	}
	for i, r := range runs {
		for c, lane := range r.S.CPUs {
			y := laneY(c, i, len(runs))
			v.Rects += drawLane(&b, r.S, lane, y, lo, v.BinNS, us)
			for _, g := range mergeShort(gaps[i][c], v.BinNS) {
				fmt.Fprintf(&b, `<rect class="iw" x="%s" y="%d" width="%s" height="%d"><title>idle %s while a task waited on a busy CPU</title></rect>`,
					us(g.Start), y, fmtUS(float64(g.End-g.Start)/1e3), tlLaneH, fmtDur(g.End-g.Start))
				v.Rects++
			}
		}
	}
	b.WriteString(`</svg>`)
	fmt.Fprintf(&b, `<g id="tl-axis" transform="translate(%d,%d)" data-width="%d"></g>`, tlLabelW, plotH+2, plotW)
	b.WriteString(`</svg>`)
	v.SVG = template.HTML(b.String())
	v.Legend = legend(runs)
	return v
}

func laneY(cpu, run, nruns int) int {
	return cpu*(nruns*tlLaneH+tlGap) + run*tlLaneH
}

// drawLane writes one lane's run slices, merging slices shorter than bin
// (when bin > 0) into one block per bin. It returns the rectangles drawn.
func drawLane(b *strings.Builder, s *Schedule, lane []Span, y int, lo, bin int64, us func(int64) string) int {
	n := 0
	type agg struct {
		busy, count int64
		byTask      map[int32]int64
	}
	var bins map[int64]*agg
	var long []Span
	for _, x := range lane {
		if x.Task < 0 {
			continue
		}
		if bin > 0 && x.End-x.Start < bin {
			if bins == nil {
				bins = map[int64]*agg{}
			}
			k := (x.Start - lo) / bin
			a := bins[k]
			if a == nil {
				a = &agg{byTask: map[int32]int64{}}
				bins[k] = a
			}
			a.busy += x.End - x.Start
			a.count++
			a.byTask[x.Task] += x.End - x.Start
			continue
		}
		long = append(long, x)
	}
	keys := make([]int64, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		a := bins[k]
		top, topNS := int32(-1), int64(-1)
		for t, ns := range a.byTask {
			if ns > topNS || (ns == topNS && t < top) {
				top, topNS = t, ns
			}
		}
		t := s.Tasks[top]
		op := min(float64(a.busy)/float64(bin), 1)
		fmt.Fprintf(b, `<rect class="k%d" x="%s" y="%d" width="%s" height="%d" fill-opacity="%.2f"><title>%d slices merged (busy %.0f%%), mostly %s[%d]</title></rect>`,
			taskClass(t.TID), us(lo+k*bin), y, fmtUS(float64(bin)/1e3), tlLaneH, max(op, 0.15), a.count, 100*op, template.HTMLEscapeString(t.Comm), t.TID)
		n++
	}
	for _, x := range long {
		t := s.Tasks[x.Task]
		fmt.Fprintf(b, `<rect class="k%d" x="%s" y="%d" width="%s" height="%d"><title>%s[%d] %s</title></rect>`,
			taskClass(t.TID), us(x.Start), y, fmtUS(float64(x.End-x.Start)/1e3), tlLaneH, template.HTMLEscapeString(t.Comm), t.TID, fmtDur(x.End-x.Start))
		n++
	}
	return n
}

// mergeShort joins intervals closer than bin to each other (bin 0: none).
func mergeShort(in []Span, bin int64) []Span {
	if bin <= 0 || len(in) == 0 {
		return in
	}
	out := []Span{in[0]}
	for _, x := range in[1:] {
		l := &out[len(out)-1]
		if x.Start-l.End < bin {
			l.End = x.End
			continue
		}
		out = append(out, x)
	}
	return out
}

// taskClass colours a task by thread id, so the same task has the same
// colour in the observed and every simulated lane.
func taskClass(tid int32) int {
	return int(uint32(tid)*2654435761>>16) % palette
}

// legend lists the tasks that ran longest in the first schedule.
func legend(runs []laneRun) []legendItem {
	if len(runs) == 0 {
		return nil
	}
	ts := append([]TaskInfo(nil), runs[0].S.Tasks...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].RunNS > ts[j].RunNS })
	var out []legendItem
	for _, t := range ts[:min(len(ts), 10)] {
		out = append(out, legendItem{Class: fmt.Sprintf("k%d", taskClass(t.TID)), Label: fmt.Sprintf("%s[%d] %s", t.Comm, t.TID, fmtDur(t.RunNS))})
	}
	return out
}

// fmtUS prints microseconds with at most 3 decimals and no trailing zeros.
func fmtUS(x float64) string {
	s := fmt.Sprintf("%.3f", x)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// fmtDur prints a duration for people.
func fmtDur(ns int64) string {
	switch {
	case ns < 0:
		return "-" + fmtDur(-ns)
	case ns < 1000:
		return fmt.Sprintf("%d ns", ns)
	case ns < 1000000:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	case ns < 1000000000:
		return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.3f s", float64(ns)/1e9)
}
