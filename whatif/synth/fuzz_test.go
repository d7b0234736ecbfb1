package synth

import (
	"strings"
	"testing"
)

// FuzzParseCommand: any command line parses or fails cleanly; what parses
// prints a command that parses to the same options; small ones generate a
// valid workload.
func FuzzParseCommand(f *testing.F) {
	for _, s := range small {
		f.Add(s)
	}
	f.Add("schbench -m2 --threads=3 -C 5 --fix-C -r 1 -c 10")
	f.Add("hackbench --pipe -l 3 -g 1 -f 2 -s 1")
	f.Add("ebizzy -t 2 -S 1 -z -l -T -p -P --block-prob 0.3")
	f.Add("schbench --version 2023 -m 2 -t 2 -R 100 -s 50 -n 1 -F 12 -r 1 -L")
	f.Add("schbench --version=2023 -t 3 -r 1")
	f.Fuzz(func(t *testing.T, line string) {
		g, err := ParseCommand(strings.Fields(line))
		if err != nil {
			return
		}
		cmd := g.Command()
		g2, err := ParseCommand(strings.Fields(cmd))
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", line, cmd, err)
		}
		if g2.Command() != cmd {
			t.Fatalf("%q: %q reparses as %q", line, cmd, g2.Command())
		}
		old := maxItems
		maxItems = 20000
		defer func() { maxItems = old }()
		if g.Validate() != nil {
			return
		}
		if _, err := g.Generate(nil); err != nil && !strings.Contains(err.Error(), "in memory") {
			t.Fatalf("%q: %v", line, err)
		}
	})
}
