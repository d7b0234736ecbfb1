// Package textsafe makes strings from traces safe to print on a terminal.
// Task names and other trace strings are data an attacker can choose (a
// comm is whatever a process calls itself); printed raw, escape sequences
// in them could rewrite the user's screen or title bar.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Terminal returns s with every control character (C0, DEL, C1, including
// ESC) and every invalid UTF-8 byte replaced by a visible \xNN escape.
// Strings without any are returned unchanged, without allocating.
func Terminal(s string) string {
	if clean(s) {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || isControl(r) {
			for _, c := range []byte(s[i : i+n]) {
				b.WriteString(`\x`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			}
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			if c >= 0x80 {
				// Non-ASCII: decide rune by rune.
				for _, r := range s[i:] {
					if r == utf8.RuneError || isControl(r) {
						return false
					}
				}
				return true
			}
			return false
		}
	}
	return true
}
