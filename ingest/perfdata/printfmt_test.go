package perfdata

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A print-fmt template, used by the golden tests to read perf script's
// tracepoint text back into fields. perf (libtraceevent) renders each
// event with the kernel's print fmt; splitting the text on the literal
// parts of that fmt recovers every value, even comms with spaces, without
// hard-coding any event.

type pfConv struct {
	spec  string // "%d", "%03d", "%Lu", "%s"...
	arg   string // the C argument expression
	field string // the record field the argument reads, "" if unknown
}

type pfTemplate struct {
	lits  []string // len(convs)+1 literal parts
	convs []pfConv
}

var convRE = regexp.MustCompile(`^%[-+ #0]*(\d+|\*)?(\.\d+)?(hh|h|ll|l|L|z|j|t)?[diouxXcsp]`)

var argFieldRE = []*regexp.Regexp{
	regexp.MustCompile(`REC->(\w+)`),
	regexp.MustCompile(`__get_str\((\w+)\)`),
	regexp.MustCompile(`__get_rel_str\((\w+)\)`),
}

func parsePrintFmt(pf string) (*pfTemplate, error) {
	s := strings.TrimSpace(pf)
	var fmtStr strings.Builder
	i := 0
	for i < len(s) && s[i] == '"' {
		i++
		for i < len(s) && s[i] != '"' {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					c = '\n'
				case 't':
					c = '\t'
				default:
					c = s[i]
				}
			}
			fmtStr.WriteByte(c)
			i++
		}
		if i >= len(s) {
			return nil, fmt.Errorf("unterminated string in print fmt")
		}
		i++
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
			i++
		}
	}
	args := splitTopArgs(s[i:])
	t := &pfTemplate{}
	f := fmtStr.String()
	var lit strings.Builder
	for j := 0; j < len(f); {
		if f[j] != '%' {
			lit.WriteByte(f[j])
			j++
			continue
		}
		if j+1 < len(f) && f[j+1] == '%' {
			lit.WriteByte('%')
			j += 2
			continue
		}
		m := convRE.FindString(f[j:])
		if m == "" {
			return nil, fmt.Errorf("unknown conversion at %q", f[j:])
		}
		j += len(m)
		if strings.HasSuffix(m, "p") {
			for j < len(f) && (f[j] >= 'a' && f[j] <= 'z' || f[j] >= 'A' && f[j] <= 'Z' || f[j] >= '0' && f[j] <= '9') {
				j++
			}
		}
		t.lits = append(t.lits, lit.String())
		lit.Reset()
		c := pfConv{spec: m}
		if k := len(t.convs); k < len(args) {
			c.arg = args[k]
			for _, re := range argFieldRE {
				if mm := re.FindStringSubmatch(c.arg); mm != nil {
					c.field = mm[1]
					break
				}
			}
		}
		t.convs = append(t.convs, c)
	}
	t.lits = append(t.lits, lit.String())
	return t, nil
}

// splitTopArgs splits ", a, f(b, c), d" into its top-level arguments.
func splitTopArgs(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, ",")
	var out []string
	depth, start := 0, 0
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, strings.TrimSpace(s[start:]))
	}
	return out
}

// pfGroup is one value in rendered text: conversions with nothing between
// them ("prev_state=%s%s") print as one value.
type pfGroup struct {
	conv pfConv
	text string
}

// match splits rendered text into its values.
func (t *pfTemplate) match(body string) ([]pfGroup, error) {
	if !strings.HasPrefix(body, t.lits[0]) {
		return nil, fmt.Errorf("text %q does not start with %q", body, t.lits[0])
	}
	pos := len(t.lits[0])
	var out []pfGroup
	for i := 0; i < len(t.convs); {
		j := i
		for j+1 < len(t.convs) && t.lits[j+1] == "" {
			j++
		}
		next := t.lits[j+1]
		last := j+1 == len(t.convs)
		var end int
		switch {
		case last && next == "":
			end = len(body)
		case last:
			if !strings.HasSuffix(body, next) {
				return nil, fmt.Errorf("text %q does not end with %q", body, next)
			}
			end = len(body) - len(next)
		default:
			k := strings.Index(body[pos:], next)
			if k < 0 {
				return nil, fmt.Errorf("text %q lacks %q after offset %d", body, next, pos)
			}
			end = pos + k
		}
		if end < pos {
			return nil, fmt.Errorf("text %q: overlapping values", body)
		}
		out = append(out, pfGroup{conv: t.convs[i], text: body[pos:end]})
		pos = end + len(next)
		i = j + 1
	}
	return out, nil
}

// intOf parses an integer printed with spec and returns it, with the width
// in bits the conversion used and whether it was unsigned.
func intOf(spec, text string) (v int64, width int, unsigned bool, err error) {
	conv := spec[len(spec)-1]
	width = 32
	switch {
	case strings.Contains(spec, "hh"):
		width = 8
	case strings.Contains(spec, "h"):
		width = 16
	case strings.ContainsAny(spec, "lLzjt"):
		width = 64
	}
	base := 10
	if conv == 'x' || conv == 'X' || conv == 'p' {
		base = 16
		text = strings.TrimPrefix(strings.TrimPrefix(text, "0x"), "0X")
		unsigned = true
	}
	if conv == 'u' {
		unsigned = true
	}
	text = strings.TrimSpace(text)
	if unsigned {
		u, e := strconv.ParseUint(text, base, 64)
		return int64(u), width, true, e
	}
	v, err = strconv.ParseInt(text, base, 64)
	return v, width, false, err
}

func truncInt(v int64, width int, unsigned bool) int64 {
	switch width {
	case 8:
		if unsigned {
			return int64(uint8(v))
		}
		return int64(int8(v))
	case 16:
		if unsigned {
			return int64(uint16(v))
		}
		return int64(int16(v))
	case 32:
		if unsigned {
			return int64(uint32(v))
		}
		return int64(int32(v))
	}
	return v
}

var ternaryRE = regexp.MustCompile(`\?\s*"([^"]*)"\s*:\s*"([^"]*)"`)
