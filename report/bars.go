package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// barSeries is one schedule's values per domain level.
type barSeries struct {
	Name   string
	Values []float64 // per level; NaN: not measured
}

// renderBars draws a grouped bar chart: one group per domain level, one
// bar per schedule, each labelled with its value (format).
func renderBars(title, unit string, levels []string, series []barSeries, format func(float64) string) template.HTML {
	if len(levels) == 0 || len(series) == 0 {
		return template.HTML(`<p class="note">No domain levels: the trace has no topology (give one with --topology).</p>`)
	}
	const (
		w              = 540
		left, right    = 56, 10
		top            = 28
		groupPad       = 0.25
		colorsPerChart = 8
		plotH          = 186
	)
	// The legend wraps below the axis: lay it out first to size the chart.
	type item struct {
		x   float64
		row int
	}
	items := make([]item, len(series))
	x, row := float64(left), 0
	for i, s := range series {
		iw := 14 + 7*float64(len([]rune(s.Name))) + 16
		if x+iw > w-right && x > left {
			x, row = left, row+1
		}
		items[i] = item{x, row}
		x += iw
	}
	bottom := 46 + 16*row
	h := top + plotH + bottom
	maxV := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				maxV = math.Max(maxV, v)
			}
		}
	}
	if maxV <= 0 {
		maxV = 1
	}
	maxV = niceCeil(maxV)
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	gw := pw / float64(len(levels))
	bw := gw * (1 - groupPad) / float64(len(series))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="bars" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">`, w, h)
	fmt.Fprintf(&b, `<text class="ct" x="%d" y="16">%s</text>`, w/2, template.HTMLEscapeString(title))
	for i := 0; i <= 4; i++ {
		v := maxV * float64(i) / 4
		y := float64(top) + ph - ph*float64(i)/4
		fmt.Fprintf(&b, `<line class="gl" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/><text class="yt" x="%d" y="%.1f">%s</text>`,
			left, w-right, y, y, left-4, y+4, template.HTMLEscapeString(format(v)))
	}
	fmt.Fprintf(&b, `<text class="yt" x="%d" y="%d">%s</text>`, left-4, top-8, template.HTMLEscapeString(unit))
	for li, lv := range levels {
		gx := float64(left) + gw*float64(li)
		for si, s := range series {
			if li >= len(s.Values) || math.IsNaN(s.Values[li]) {
				continue
			}
			v := s.Values[li]
			bh := ph * v / maxV
			x := gx + gw*groupPad/2 + bw*float64(si)
			fmt.Fprintf(&b, `<rect class="s%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s %s: %s</title></rect>`,
				si%colorsPerChart, x, float64(top)+ph-bh, bw-1, bh, template.HTMLEscapeString(s.Name), template.HTMLEscapeString(lv), template.HTMLEscapeString(format(v)))
		}
		fmt.Fprintf(&b, `<text class="xt" x="%.1f" y="%d">%s</text>`, gx+gw/2, top+plotH+16, template.HTMLEscapeString(lv))
	}
	for si, s := range series {
		y := top + plotH + 32 + 16*items[si].row
		fmt.Fprintf(&b, `<rect class="s%d" x="%.1f" y="%d" width="10" height="10"/><text class="lg" x="%.1f" y="%d">%s</text>`,
			si%colorsPerChart, items[si].x, y, items[si].x+14, y+9, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
