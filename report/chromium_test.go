package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds a headless-capable Chromium. Without one the browser
// tests are skipped, except in CI (CI=true), where .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (CI installs it: apt-get install chromium)")
	}
	t.Skip("chromium not installed")
	return ""
}

// runChromium runs headless Chromium with no network use and the page's
// console on stderr, returning stdout and stderr.
func runChromium(t *testing.T, bin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// consoleError matches what Chromium logs for a script error on the page.
var consoleError = regexp.MustCompile(`(?i)CONSOLE.*(Uncaught|Error)|Uncaught `)

// TestChromium renders reports as a user sees them: a real fixture
// replayed under a policy, and a hostile trace whose task names are
// markup. The page's own script adds #report-ok only when it ran to the
// end without an error and found every section; the dumped DOM must have
// it, no #report-error, no script error in the console, the timeline axis
// the script draws, and a #t=FROM,TO link must open the timeline zoomed
// to that window. The screenshot must be a real picture;
// REPORT_SCREENSHOT=path keeps it (docs/img/report.png).
func TestChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: not in -short runs")
	}
	bin := chromium(t)
	dir := t.TempDir()

	fixture := filepath.Join(repoRoot(), "fixtures/kernels/guest-D-1s8c1t/schbench.perf.data")
	type page struct {
		data *Data
		// hash opens the page zoomed; view is the viewBox start and width
		// (µs) that must result.
		hash, view string
	}
	pages := map[string]page{"fixture": {buildFixture(t, fixture, 3, "v6.1"), "#t=100,140", "100000 0 40000 "}}
	evil := `<script>document.title="pwned"</script>`
	hostile, err := Build(Input{Reader: hostileTrace(evil, 5), Name: evil, NoSimulation: "test"})
	if err != nil {
		t.Fatal(err)
	}
	pages["hostile"] = page{hostile, "#t=0.1,0.25", "100 0 150 "}

	for name, pg := range pages {
		data := pg.data
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".html")
			var b bytes.Buffer
			if err := Write(&b, data); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			url := "file://" + path
			dom, logs := runChromium(t, bin, "--dump-dom", url)
			if !strings.Contains(dom, `id="report-ok"`) || strings.Contains(dom, `id="report-error"`) {
				i := strings.Index(dom, `id="report-error"`)
				t.Fatalf("the page's script did not finish cleanly: %s", dom[max(i, 0):min(len(dom), max(i, 0)+300)])
			}
			if m := consoleError.FindString(logs); m != "" {
				t.Errorf("script error in the console: %s", m)
			}
			if strings.Contains(dom, "<title>pwned") || strings.Contains(dom, "<title>ERROR") {
				t.Error("the trace's text ran as script")
			}
			for _, id := range []string{"summary", "topology", "cdf", "timeline", "domains", "fidelity", "deltas"} {
				if !strings.Contains(dom, `<section id="`+id+`">`) {
					t.Errorf("section %s missing from the rendered page", id)
				}
			}
			if !regexp.MustCompile(`<g id="tl-axis"[^>]*>\s*<line`).MatchString(dom) {
				t.Error("the timeline axis was not drawn")
			}

			// A shared window: #t=FROM,TO in ms opens the timeline zoomed.
			dom, _ = runChromium(t, bin, "--dump-dom", url+pg.hash)
			if !regexp.MustCompile(`id="tl-plot"[^>]*viewBox="` + pg.view).MatchString(dom) {
				m := regexp.MustCompile(`id="tl-plot"[^>]*`).FindString(dom)
				t.Errorf("%s did not zoom the timeline: %s", pg.hash, m)
			}

			shot := filepath.Join(dir, name+".png")
			runChromium(t, bin, "--screenshot="+shot, "--window-size=1200,3500", url)
			f, err := os.Open(shot)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			// Not blank: count the distinct colours in a sample.
			seen := map[uint32]bool{}
			bd := img.Bounds()
			for y := bd.Min.Y; y < bd.Max.Y; y += 7 {
				for x := bd.Min.X; x < bd.Max.X; x += 7 {
					r, g, bl, _ := img.At(x, y).RGBA()
					seen[r>>8<<16|g>>8<<8|bl>>8] = true
				}
			}
			if len(seen) < 20 {
				t.Errorf("screenshot has %d colours: blank?", len(seen))
			}
			if keep := os.Getenv("REPORT_SCREENSHOT"); keep != "" && name == "fixture" {
				b, _ := os.ReadFile(shot)
				if err := os.WriteFile(keep, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
