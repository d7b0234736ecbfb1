package perfscript

import "strings"

// sidebandPrefix starts the side-band lines perf script prints for
// non-sample records: "PERF_RECORD_COMM exec: sh:13086/13086",
// "PERF_RECORD_FORK(pid:tid):(ppid:ptid)", "PERF_RECORD_LOST lost 54"...
const sidebandPrefix = "PERF_RECORD_"

type head struct {
	comm, pid, tid, cpu, sec, frac, event, body string
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

func isID(s string) bool { return isDigits(strings.TrimPrefix(s, "-")) }

// parseHead splits "comm [pid/]tid [cpu] secs.frac: [period] sys:event: body"
// by hand (a regexp costs several µs a line). The task part ends at the
// last space-separated token before the CPU (or, without a CPU column,
// before the time), so comms may hold spaces.
func parseHead(line string) (h head, ok bool) {
	// Find the time token "digits.digits:" preceded by "] " or a tid.
	from := 0
	for from < len(line) {
		i := strings.Index(line[from:], ": ")
		if i < 0 {
			if strings.HasSuffix(line, ":") {
				i = len(line) - 1 - from
			} else {
				return h, false
			}
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
		left := strings.TrimRight(line[:sp], " \t")
		if strings.HasSuffix(left, "]") {
			b := strings.LastIndexByte(left, '[')
			if b < 0 || !isDigits(left[b+1:len(left)-1]) {
				continue
			}
			h.cpu = left[b+1 : len(left)-1]
			left = strings.TrimRight(left[:b], " \t")
		}
		left = strings.TrimLeft(left, " \t")
		t := strings.LastIndexAny(left, " \t") // -1: no comm column (-F tid,...)
		task := left[t+1:]
		if k := strings.IndexByte(task, '/'); k >= 0 {
			h.pid, h.tid = task[:k], task[k+1:]
			if !isID(h.pid) {
				continue
			}
		} else {
			h.tid = task
		}
		if !isID(h.tid) {
			continue
		}
		if t >= 0 {
			h.comm = strings.TrimSpace(left[:t])
		}
		h.sec, h.frac = ts[:dot], ts[dot+1:]
		rest := strings.TrimLeft(line[i+1:], " \t")
		if strings.HasPrefix(rest, sidebandPrefix) {
			// --show-task-events, --show-lost-events, --show-switch-events
			h.event, h.body = sidebandPrefix, rest
			return h, true
		}
		// optional period
		if tok, after, found := strings.Cut(rest, " "); found && isDigits(tok) {
			rest = strings.TrimLeft(after, " \t")
		}
		// event name: up to ": " or a final ':'
		e := strings.Index(rest, ": ")
		if e < 0 {
			if !strings.HasSuffix(rest, ":") {
				return h, false
			}
			e = len(rest) - 1
		}
		h.event = rest[:e]
		if h.event == "" || strings.ContainsAny(h.event, " \t") {
			return h, false
		}
		h.body = strings.TrimLeft(rest[e+1:], " \t")
		return h, true
	}
	return h, false
}
