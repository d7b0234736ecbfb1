package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `replay synth -o` alone streams the workload; with --policy it is built
// in memory and saved. Both write the same bytes.
func TestSynthStreamedFileMatchesInMemory(t *testing.T) {
	dir := t.TempDir()
	for i, args := range [][]string{
		{"schbench", "-m", "2", "-t", "4", "-s", "10000", "-c", "100000", "-r", "2"},
		{"schbench", "--version", "2023", "-r", "2"},
		{"schbench", "--version", "2023", "-t", "3", "-R", "3000", "-r", "2"},
		{"hackbench", "-g", "2", "-f", "4", "-l", "50", "--pipe"},
		{"ebizzy", "-t", "4", "-S", "1", "--idle-exit-us", "20"},
	} {
		common := []string{"--topology", "hikey", "--seed", "3"}
		a, b := filepath.Join(dir, "a.arrow"), filepath.Join(dir, "b.arrow")
		ra := run(t, dir, append(append([]string{"synth"}, args...), append(common, "-o", a)...)...)
		rb := run(t, dir, append(append([]string{"synth"}, args...), append(common, "-o", b, "--policy", "v6.1")...)...)
		if ra.code != 0 || rb.code != 0 {
			t.Fatalf("case %d: exit %d %d: %s %s", i, ra.code, rb.code, ra.stderr, rb.stderr)
		}
		ba, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if len(ba) == 0 || !bytes.Equal(ba, bb) {
			t.Errorf("%v: streamed file (%d bytes) differs from the in-memory one (%d bytes)", args, len(ba), len(bb))
		}
		if !strings.Contains(ra.stderr, "wrote the") || strings.ReplaceAll(ra.stderr, a, b) != rb.stderr {
			t.Errorf("%v: messages differ:\n%s\n%s", args, ra.stderr, rb.stderr)
		}
		if m, _ := filepath.Glob(filepath.Join(dir, ".replay-*")); len(m) > 0 {
			t.Errorf("%v: temporary files left: %v", args, m)
		}
	}
}

// A schbench 2023 workload replays with replay whatif.
func TestSynthSchbench2023Whatif(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "sb23.arrow")
	r := run(t, dir, "synth", "schbench", "--version", "2023", "-m", "1", "-t", "6", "-r", "2", "--topology", "hikey", "--seed", "1", "-o", f)
	if r.code != 0 {
		t.Fatalf("synth: exit %d: %s", r.code, r.stderr)
	}
	r = run(t, dir, "whatif", "-i", f, "--topology", "hikey", "--policy", "v6.1")
	if r.code != 0 || !strings.Contains(r.stdout, "migrations") {
		t.Fatalf("whatif: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// Bad synth flags exit non-zero with the reason, never a panic.
func TestSynthBadFlags(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"schbench", "--version", "2023", "-c", "5"}, "2020 version"},
		{[]string{"schbench", "-n", "5"}, "--version 2023"},
		{[]string{"schbench", "--version", "2023", "-A", "50"}, "auto-RPS"},
		{[]string{"schbench", "--version", "1999"}, "want 2020 or 2023"},
		{[]string{"schbench", "--version", "2023", "-F", "x"}, "want an integer"},
		{[]string{"schbench", "-r", "0"}, "forever"},
		{[]string{"hackbench", "-g", "0"}, "groups"},
		{[]string{"schbench", "--idle-exit-us", "-3"}, "idle-exit-us"},
	}
	for _, c := range cases {
		args := append(append([]string{"synth"}, c.args...), "--topology", "hikey", "-o", filepath.Join(dir, "x.arrow"))
		r := run(t, dir, args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "panic") {
			t.Errorf("%v: exit %d, stderr %q; want failure mentioning %q", c.args, r.code, r.stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "x.arrow")); err == nil {
			t.Errorf("%v: wrote a file", c.args)
		}
	}
}
