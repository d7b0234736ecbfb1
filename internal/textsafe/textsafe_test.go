package textsafe

import "testing"

func TestTerminal(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kworker/0:1", "kworker/0:1"},
		{"schbench worker", "schbench worker"},
		{"héllo wörld", "héllo wörld"},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"a\nb\tc", `a\x0ab\x09c`},
		{"\x7f", `\x7f`},
		{"\u009b31m", `\xc2\x9b31m`}, // C1 CSI
		{"bad\xffutf8", `bad\xffutf8`},
		{"", ""},
	} {
		if got := Terminal(tc.in); got != tc.want {
			t.Errorf("Terminal(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
