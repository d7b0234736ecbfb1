package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// `replay script` writes what perf script would, closely enough that the
// project's own perf script reader (ingest/perfscript, checked against
// perf) reads it back to the same analysis: `replay latency` of the text
// equals `replay latency` of the timeline it came from, for a real
// perf.data and for a replay's simulated schedule (the text carries no
// topology, so both are given guest-P's).
func TestScriptRoundTrip(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(repoRoot(t), "fixtures", "kernels", "guest-P-1s2c1t", "schbench.perf.data")
	if r := run(t, dir, "whatif", "-i", trace, "--seed", "0", "-o", "sim.arrow"); r.code != 0 {
		t.Fatalf("whatif: exit %d: %s", r.code, r.stderr)
	}
	const topo = "sockets=1,cores=2,threads=1"
	for _, in := range []string{trace, "sim.arrow"} {
		if r := run(t, dir, "script", in, "-o", "out.txt"); r.code != 0 {
			t.Fatalf("script %s: exit %d: %s", in, r.code, r.stderr)
		}
		want := run(t, dir, "latency", in, "-f", "json", "--topology", topo)
		got := run(t, dir, "latency", "out.txt", "-f", "json", "--topology", topo)
		if want.code != 0 || got.code != 0 {
			t.Fatalf("latency: exit %d, %d: %s%s", want.code, got.code, want.stderr, got.stderr)
		}
		if got.stdout != want.stdout {
			t.Errorf("%s: latency of the script text differs from the timeline's", in)
		}
		if strings.Contains(got.stderr, "could not be read") {
			t.Errorf("%s: the text did not all parse: %s", in, got.stderr)
		}
	}
}

// --time, --cpu and --task keep what they say: the filtered output is the
// full output's lines that match, counted here from the text.
func TestScriptFilters(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(repoRoot(t), "fixtures", "perf", "hackbench.data")
	all := run(t, dir, "script", trace)
	if all.code != 0 {
		t.Fatalf("exit %d: %s", all.code, all.stderr)
	}
	type line struct {
		cpu  int
		ns   int64
		text string
	}
	var lines []line
	for _, l := range strings.Split(strings.TrimSuffix(all.stdout, "\n"), "\n") {
		i := strings.Index(l, " [")
		cpu, err := strconv.Atoi(l[i+2 : i+5])
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		f := strings.Fields(l[i+6:])[0]
		sec, frac, _ := strings.Cut(strings.TrimSuffix(f, ":"), ".")
		s, _ := strconv.ParseInt(sec, 10, 64)
		n, _ := strconv.ParseInt(frac, 10, 64)
		lines = append(lines, line{cpu, s*1e9 + n, l})
	}
	for _, c := range []struct {
		args []string
		keep func(line) bool
	}{
		{[]string{"--time", "968.95,968.96"}, func(l line) bool { return l.ns >= 968950000000 && l.ns <= 968960000000 }},
		{[]string{"--time", "968.99,", "--cpu", "1"}, func(l line) bool { return l.ns >= 968990000000 && l.cpu == 1 }},
		{[]string{"--task", "27289"}, func(l line) bool {
			return strings.Contains(l.text, "pid=27289 ") || strings.Contains(l.text, " 27289/27289 ") || strings.Contains(l.text, "pid=27289\n") ||
				strings.HasSuffix(l.text, "pid=27289") || strings.Contains(l.text, "(27289:27289)")
		}},
	} {
		r := run(t, dir, append([]string{"script", trace}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, r.code, r.stderr)
		}
		var want []string
		for _, l := range lines {
			if c.keep(l) {
				want = append(want, l.text)
			}
		}
		if got := strings.TrimSuffix(r.stdout, "\n"); got != strings.Join(want, "\n") || len(want) == 0 {
			t.Errorf("%v: %d lines, want %d", c.args, strings.Count(r.stdout, "\n"), len(want))
		}
	}
	for _, bad := range [][]string{{"--time", "5"}, {"--time", "9,8"}, {"--cpu", "x"}, {"--cpu", "3-1"}, {"--task", "1-2"}} {
		r := run(t, dir, append([]string{"script", trace}, bad...)...)
		if r.code != 2 || !strings.Contains(r.stderr, bad[0]) {
			t.Errorf("%v: exit %d, %q; want a usage error", bad, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "replay.arrow")); err == nil {
		t.Error("script wrote a timeline")
	}
}
