package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --plot writes the CDF chart as a real PNG or SVG, from latency and from
// whatif (single replay and comparison); other extensions are usage errors.
func TestPlots(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-B-1s4c2t", "schbench.perf.data")
	cases := []struct {
		name string
		args []string
		file string
	}{
		{"latency png", []string{"latency", "-i", in}, "lat.png"},
		{"latency svg", []string{"latency", "-i", in}, "lat.svg"},
		{"whatif validate", []string{"whatif", "-i", in, "--validate"}, "val.svg"},
		{"whatif compare", []string{"whatif", "-i", in, "-p", "rework", "-p", "llc-nr-running", "--runs", "2", "--progress", "never"}, "cmp.png"},
	}
	for _, tc := range cases {
		out := filepath.Join(dir, tc.file)
		if r := run(t, dir, append(tc.args, "--plot", out)...); r.code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.name, r.code, r.stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		png := bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
		svg := bytes.Contains(b[:min(len(b), 512)], []byte("<svg"))
		if strings.HasSuffix(tc.file, ".png") != png || strings.HasSuffix(tc.file, ".svg") != svg {
			t.Errorf("%s: %s is not a %s file", tc.name, tc.file, filepath.Ext(tc.file))
		}
	}
	if r := run(t, dir, "latency", "-i", in, "--plot", filepath.Join(dir, "x.gif")); r.code != 2 {
		t.Errorf("--plot x.gif: exit %d, want 2", r.code)
	}
	if r := run(t, dir, "policies", "-f", "json"); r.code != 0 || !strings.Contains(r.stdout, "llc-nr-running") || !strings.Contains(r.stdout, "16b0a7a1a0af") {
		t.Errorf("policies: exit %d, output %.200s", r.code, r.stdout)
	}
}
