package ftrace

import "strings"

// head is the part of an event line before the event's fields.
type head struct {
	comm, pid, tgid, cpu, flags, sec, frac, event, body string
	latency                                             bool // trace-cmd report -l, latency-format: comm cut to 8 characters
	relUS                                               bool // latency-format: sec is µs since the buffer's time_start
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseHead splits "comm-pid (tgid) [cpu] flags secs.frac: event: body"
// by hand (a regexp costs ~20 µs a line). The CPU field anchors the
// line: the first " [digits]" whose left side ends in "-pid", optionally
// followed by a "(tgid)" column, so comms may hold spaces, dashes and
// brackets.
func parseHead(line string) (h head, ok bool) {
	from := 0
	for {
		i := strings.Index(line[from:], "[")
		if i < 0 {
			return parseLatencyHead(line)
		}
		i += from
		from = i + 1
		j := strings.IndexByte(line[i:], ']')
		if j < 0 {
			return h, false
		}
		j += i
		if !isDigits(line[i+1:j]) || i == 0 || (line[i-1] != ' ' && line[i-1] != '\t') {
			continue
		}
		left := strings.TrimRight(line[:i], " \t")
		tgid := ""
		if strings.HasSuffix(left, ")") {
			k := strings.LastIndexByte(left, '(')
			if k < 0 {
				continue
			}
			tgid = strings.TrimSpace(left[k+1 : len(left)-1])
			if !isDigits(tgid) && strings.Trim(tgid, "-") != "" {
				continue
			}
			left = strings.TrimRight(left[:k], " \t")
		}
		d := strings.LastIndexByte(left, '-')
		if d < 0 || !isDigits(left[d+1:]) {
			continue
		}
		h.comm, h.pid, h.tgid, h.cpu = strings.TrimLeft(left[:d], " \t"), left[d+1:], tgid, line[i+1:j]
		if !h.rest(line[j+1:]) {
			return h, false
		}
		return h, true
	}
}

// rest parses " flags secs.frac: event: body".
func (h *head) rest(s string) bool {
	s = strings.TrimLeft(s, " \t")
	tok, after := nextToken(s)
	if !strings.HasSuffix(tok, ":") {
		// irq-info flags column (4 or 5 characters)
		if len(tok) < 4 || len(tok) > 5 {
			return false
		}
		h.flags = tok
		tok, after = nextToken(strings.TrimLeft(after, " \t"))
		if !strings.HasSuffix(tok, ":") {
			return false
		}
	}
	ts := tok[:len(tok)-1]
	if dot := strings.IndexByte(ts, '.'); dot >= 0 {
		h.sec, h.frac = ts[:dot], ts[dot+1:]
		if !isDigits(h.frac) {
			return false
		}
	} else {
		h.sec = ts
	}
	if !isDigits(h.sec) {
		return false
	}
	return h.event_(after)
}

func nextToken(s string) (tok, rest string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// parseLatencyHead reads the `trace-cmd report -l` form, where the CPU is
// glued to the flags and the comm is cut to 8 characters:
// "stress-n-4411    1dNs2.   784.964927: sched_waking: ...".
func parseLatencyHead(line string) (h head, ok bool) {
	from := 0
	for from < len(line) {
		i := strings.IndexByte(line[from:], ':')
		if i < 0 {
			return h, false
		}
		i += from
		from = i + 1
		sp := strings.LastIndexAny(line[:i], " \t")
		if sp < 0 {
			continue
		}
		ts := line[sp+1 : i]
		dot := strings.IndexByte(ts, '.')
		if dot < 0 || !isDigits(ts[:dot]) || !isDigits(ts[dot+1:]) {
			continue
		}
		if !h.latencyPrefix(line[:sp]) {
			return h, false
		}
		h.sec, h.frac = ts[:dot], ts[dot+1:]
		h.latency = true
		return h, h.event_(line[i+1:])
	}
	return h, false
}

// event_ parses " event: body" after the timestamp's colon.
func (h *head) event_(s string) bool {
	after := strings.TrimLeft(s, " \t")
	c := strings.IndexByte(after, ':')
	if c <= 0 {
		return false
	}
	h.event = after[:c]
	for i := 0; i < len(h.event); i++ {
		ch := h.event[i]
		if !(ch == '_' || ch == '.' || ch == '-' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			return false
		}
	}
	h.body = after[c+1:]
	if h.body != "" && h.body[0] != ' ' && h.body[0] != '\t' {
		return false
	}
	h.body = strings.TrimLeft(h.body, " \t")
	return true
}

// latencyMarks are the delay marks of the latency format (kernel
// trace_find_mark: '+' over 10 µs to the next event, '!' 100 µs, '#' 1 ms,
// '*' 10 ms, '@' 100 ms, '$' 1 s, ' ' otherwise).
const latencyMarks = " +!#*@$"

// parseLatFmtHead reads a line of tracefs options/latency-format output
// (kernel trace_print_lat_context without options/verbose): the comm cut to
// 8 characters and right-aligned, "-pid" left-aligned in 7, the CPU in 3
// with the irq-info flags glued to it, then the time since the buffer's
// time_start: " %4lldus%c: " (µs rounded from ns, then the delay mark) or
// " %4lld: " for clocks not counting ns. For example
// "stress-n-4411      1d.h1. 23970us : sched_stat_runtime: comm=...".
func parseLatFmtHead(line string) (h head, ok bool) {
	from := 0
	for from < len(line) {
		i := strings.IndexByte(line[from:], ':')
		if i < 0 {
			return h, false
		}
		i += from
		from = i + 1
		if i+1 < len(line) && line[i+1] != ' ' {
			continue
		}
		end, us := i, false
		if end >= 3 && line[end-3:end-1] == "us" && strings.IndexByte(latencyMarks, line[end-1]) >= 0 {
			end, us = end-3, true
		}
		k := end
		for k > 0 && line[k-1] >= '0' && line[k-1] <= '9' {
			k--
		}
		if k == end || k == 0 || line[k-1] != ' ' {
			continue
		}
		ts := line[k:end]
		if !h.latencyPrefix(line[:k]) {
			return h, false
		}
		h.sec, h.relUS, h.latency = ts, us, true
		return h, h.event_(line[i+1:])
	}
	return h, false
}

// latencyPrefix parses what latency-format lines have before the time:
// "comm-pid" then "CPU#flags" (the CPU number glued to 4 or 5 flag
// characters), setting comm, pid, cpu and flags.
func (h *head) latencyPrefix(left string) bool {
	left = strings.TrimRight(left, " \t")
	sp := strings.LastIndexAny(left, " \t")
	if sp < 0 {
		return false
	}
	cf := left[sp+1:]
	n := 0
	for n < len(cf) && cf[n] >= '0' && cf[n] <= '9' {
		n++
	}
	if n == 0 || len(cf)-n < 4 || len(cf)-n > 5 {
		return false
	}
	left = strings.TrimRight(left[:sp], " \t")
	d := strings.LastIndexByte(left, '-')
	if d < 0 || !isDigits(left[d+1:]) {
		return false
	}
	h.comm, h.pid, h.cpu, h.flags = strings.TrimLeft(left[:d], " \t"), left[d+1:], cf[:n], cf[n:]
	return true
}
