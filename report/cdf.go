package report

import (
	"bytes"
	"fmt"
	"image/color"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/schedreplay/replay/internal/atomicfile"
)

// Series is one latency distribution of a CDF chart.
type Series struct {
	Name string
	// Latencies in ns, any order.
	Latencies []int64
}

// floorNS is where a log axis starts: shorter latencies (0 included,
// which a log scale cannot place) are drawn at it.
const floorNS = 100

// cdfPoints caps the points drawn per series: the file stays small and
// the curve is exact at every drawn quantile.
const cdfPoints = 1500

// seriesColors are distinguishable and also readable in grey.
var seriesColors = []color.RGBA{
	{0, 0, 0, 255}, {31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255},
	{148, 103, 189, 255}, {255, 127, 14, 255}, {140, 86, 75, 255}, {23, 190, 207, 255},
}

// cdfPlot builds the wakeup-latency CDF chart: x log-scaled in µs, y the
// fraction of wakeups at or below x, one step curve per series.
func cdfPlot(series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Wakeup latency CDF"
	p.X.Label.Text = "wakeup latency (µs, log scale)"
	p.Y.Label.Text = "fraction of wakeups ≤ x"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	for _, ts := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		ts.Font.Typeface, ts.Font.Variant = "Liberation", "Sans"
	}
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -4
	p.Legend.YOffs = 4
	drawn := 0
	for i, s := range series {
		xy := cdfXY(s.Latencies)
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.Color = seriesColors[i%len(seriesColors)]
		l.Width = vg.Points(1.5)
		if i > 0 {
			l.Dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}}[i%3]
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", s.Name, len(s.Latencies)), l)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("no wakeup latencies to plot")
	}
	p.Legend.ThumbnailWidth = vg.Points(24)
	return p, nil
}

// cdfXY returns the empirical CDF of lat as (µs, fraction) points: every
// sample when there are few, else cdfPoints quantiles plus the extremes.
func cdfXY(lat []int64) plotter.XYs {
	n := len(lat)
	if n == 0 {
		return nil
	}
	s := append([]int64(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	x := func(ns int64) float64 { return float64(max(ns, floorNS)) / 1e3 }
	var xy plotter.XYs
	xy = append(xy, plotter.XY{X: x(s[0]), Y: 0})
	step := (n + cdfPoints - 1) / cdfPoints
	for i := step - 1; i < n; i += step {
		// The last of a run of equal samples gives the CDF there.
		j := i
		for j+1 < n && s[j+1] == s[i] {
			j++
		}
		p := plotter.XY{X: x(s[j]), Y: float64(j+1) / float64(n)}
		if xy[len(xy)-1].X == p.X {
			xy[len(xy)-1].Y = p.Y
		} else {
			xy = append(xy, p)
		}
		i = j
	}
	if last := xy[len(xy)-1]; last.Y < 1 {
		xy = append(xy, plotter.XY{X: x(s[n-1]), Y: 1})
	}
	return xy
}

// cdfSize is the chart's size in the report and in --plot files.
var cdfW, cdfH = 9 * vg.Inch, 4.5 * vg.Inch

// cdfSVG renders the chart as an SVG element to inline in HTML (no XML
// prolog).
func cdfSVG(series []Series) (string, error) {
	p, err := cdfPlot(series)
	if err != nil {
		return "", err
	}
	wt, err := p.WriterTo(cdfW, cdfH, "svg")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// The page may be viewed where the Liberation fonts are not installed.
	s = strings.ReplaceAll(s, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	return s, nil
}

// CheckPlotPath rejects a --plot file WriteCDFPlot cannot write, so a
// command can refuse it before doing any work.
func CheckPlotPath(path string) error {
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".svg" && ext != ".png" {
		return fmt.Errorf("--plot %s: want a .svg or .png file", path)
	}
	return nil
}

// WriteCDFPlot writes the wakeup-latency CDF chart alone to path, as SVG
// or PNG by its extension: what `replay latency --plot` (and whatif's)
// write. Each series is one curve on a log-scaled x axis. The file
// appears only complete (internal/atomicfile).
func WriteCDFPlot(path string, series ...Series) error {
	if err := CheckPlotPath(path); err != nil {
		return err
	}
	p, err := cdfPlot(series)
	if err != nil {
		return err
	}
	wt, err := p.WriterTo(cdfW, cdfH, strings.ToLower(filepath.Ext(path))[1:])
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if _, err := wt.WriteTo(f); err != nil {
		f.Abort()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Commit()
}
