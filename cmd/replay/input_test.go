package main

import (
	"strings"
	"testing"
)

// Every command that reads one trace takes it as -i FILE or as its one
// argument, with the same output either way; both at once, or two
// arguments, is a usage error (exit 2) naming what was given.
func TestInputAsArgument(t *testing.T) {
	dir := t.TempDir()
	trace := fixturePerfData(t)[0]
	cases := []struct{ cmd, flags []string }{
		{[]string{"info"}, nil},
		{[]string{"info"}, []string{"--json"}},
		{[]string{"latency"}, []string{"-f", "json"}},
		{[]string{"topology"}, []string{"-f", "tree"}},
		{[]string{"whatif"}, []string{"--validate", "-f", "json"}},
		{[]string{"export", "pprof"}, []string{"-o", "out.pb.gz"}},
	}
	for _, tc := range cases {
		args := append(append([]string{}, tc.cmd...), tc.flags...)
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			withFlag := run(t, dir, append(append([]string{}, args...), "-i", trace)...)
			if withFlag.code != 0 {
				t.Fatalf("-i FILE: exit %d: %s", withFlag.code, withFlag.stderr)
			}
			// The argument before the flags, as perf users type it.
			withArg := run(t, dir, append(append(append([]string{}, tc.cmd...), trace), tc.flags...)...)
			if withArg.code != 0 {
				t.Fatalf("FILE as argument: exit %d: %s", withArg.code, withArg.stderr)
			}
			if withArg.stdout != withFlag.stdout {
				t.Errorf("FILE as argument and -i FILE differ:\n%s\n---\n%s", withArg.stdout, withFlag.stdout)
			}
			both := run(t, dir, append(append([]string{}, args...), "-i", trace, trace)...)
			if both.code != 2 || !strings.Contains(both.stderr, "given twice") {
				t.Errorf("-i FILE and FILE: exit %d, stderr %q; want 2 and \"given twice\"", both.code, both.stderr)
			}
			two := run(t, dir, append(append([]string{}, args...), trace, trace)...)
			if two.code != 2 || !strings.Contains(two.stderr, "reads one trace") {
				t.Errorf("two arguments: exit %d, stderr %q; want 2 and \"reads one trace\"", two.code, two.stderr)
			}
		})
	}
}
