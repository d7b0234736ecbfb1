package whatif

import (
	"path/filepath"
	"strconv"
	"strings"
)

// TimeBounded reports whether a recorded command line (perf.data's
// CMDLINE: "perf sched record -- stress-ng ... --timeout 2s") runs a
// program that stops its work at a wall-clock deadline, and the words
// that say so. Such a workload is what Config.ExitDeadlines models: a
// delayed task does less work, not the same work later. The trace alone
// cannot tell (a task that ran out of time and one that finished both
// simply exit), so the command line is the evidence, for the programs
// whose options are known:
//   - stress-ng with -t/--timeout N (N not 0, which means no timeout);
//   - schbench, whose -r/--runtime (30 s if not given) ends every thread;
//   - cyclictest with -D/--duration N;
//   - any command run under coreutils timeout.
//
// Anything else (hackbench's fixed message count, a recording of the whole
// machine) keeps fixed work. boundNS is the deadline's length, how long
// after its start the command stops (0 when its value is not a duration
// read here: seconds with an optional s, m, h, d or y suffix).
func TimeBounded(cmdline []string) (why string, boundNS int64, ok bool) {
	for i, arg := range cmdline {
		args := cmdline[i+1:]
		switch filepath.Base(arg) {
		case "stress-ng":
			if v, flag, found := optionValue(args, "-t", "--timeout"); found && !zeroDuration(v) {
				return "stress-ng " + flag + " " + v, durationNS(v), true
			}
		case "schbench":
			if v, flag, found := optionValue(args, "-r", "--runtime"); found {
				return "schbench " + flag + " " + v, durationNS(v), true
			}
			return "schbench (its default 30 s runtime)", 30e9, true
		case "cyclictest":
			if v, flag, found := optionValue(args, "-D", "--duration"); found && !zeroDuration(v) {
				return "cyclictest " + flag + " " + v, durationNS(v), true
			}
		case "timeout":
			if i+2 < len(cmdline) {
				return strings.Join(cmdline[i:min(len(cmdline), i+3)], " "), durationNS(cmdline[i+1]), true
			}
		}
	}
	return "", 0, false
}

// ExitDeadlineFrom is when the recorded command of w stopped its work at
// its deadline: the bound its command line gives (TimeBounded) after the
// trace's first fork by a task other than kthreadd, the command's first
// (stress-ng's first stressor, schbench's first thread, timeout's
// command: their clocks start with it, 80–350 ms after the trace's start
// on the fixtures, so the trace's start would date the deadline early),
// or after the trace's start if there is none; 0 when the command line
// gives no bound. A task that exited before then ended its own work
// (stress-ng --fork's children, a few hundred µs each), so only the exits
// from then on are deadlines (Config.ExitDeadlineFromNS).
func ExitDeadlineFrom(w *Workload) int64 {
	_, b, ok := TimeBounded(w.Cmdline)
	if !ok || b <= 0 {
		return 0
	}
	start := int64(-1)
	for i := range w.Edges {
		e := &w.Edges[i]
		if e.Kind == EdgeFork && w.Tasks[e.Waker].TID != kthreaddTID && (start < 0 || e.TimeNS < start) {
			start = e.TimeNS
		}
	}
	return max(start, w.StartNS) + b
}

// kthreaddTID is the kernel's thread creator, whose forks are not a
// command's.
const kthreaddTID = 2

// SetWork sets c's work model for workload w: with untilExit, tasks stop
// at their recorded exit, from when the command's deadline fired
// (ExitDeadlineFrom) when its command line says when that was.
func (c *Config) SetWork(w *Workload, untilExit bool) {
	c.ExitDeadlines, c.ExitDeadlineFromNS = untilExit, 0
	if untilExit {
		c.ExitDeadlineFromNS = ExitDeadlineFrom(w)
	}
}

// SetAutoWork sets c's work model for w as `--work auto` chooses it
// (TimeBounded: until-exit when the recorded command stops at a
// deadline) and returns whether it chose until-exit and why.
func (c *Config) SetAutoWork(w *Workload) (untilExit bool, why string) {
	why, _, untilExit = TimeBounded(w.Cmdline)
	c.SetWork(w, untilExit)
	return untilExit, why
}

// durationNS reads a command's duration argument: a number of seconds,
// with an optional unit suffix (s, m, h, d; y for stress-ng's years).
// 0 if it is not one.
func durationNS(v string) int64 {
	unit := 1.0
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 's':
			v = v[:n-1]
		case 'm':
			unit, v = 60, v[:n-1]
		case 'h':
			unit, v = 3600, v[:n-1]
		case 'd':
			unit, v = 86400, v[:n-1]
		case 'y':
			unit, v = 365*86400, v[:n-1]
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0) || f*unit > 1e9 {
		return 0
	}
	return int64(f * unit * 1e9)
}

// AutoWorkNote says which work model --work auto chose and why, as the
// outputs print it.
func AutoWorkNote(untilExit bool, why string) string {
	if !untilExit {
		return "fixed (auto)"
	}
	return "until-exit (auto: the recorded command stops at a deadline: " + why + ")"
}

// optionValue finds a short or long option's value in args: "-t 2s",
// "-t2s", "--timeout 2s" or "--timeout=2s". The last occurrence wins, as
// with getopt.
func optionValue(args []string, short, long string) (value, flag string, found bool) {
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == short || a == long:
			if j+1 < len(args) {
				value, flag, found = args[j+1], a, true
				j++
			}
		case strings.HasPrefix(a, long+"="):
			value, flag, found = strings.TrimPrefix(a, long+"="), long, true
		case strings.HasPrefix(a, short) && !strings.HasPrefix(a, "--") && len(a) > len(short):
			value, flag, found = a[len(short):], short, true
		}
	}
	return value, flag, found
}

// zeroDuration: "0", "0s", "0m": stress-ng's and cyclictest's "run
// forever".
func zeroDuration(v string) bool {
	v = strings.TrimRight(v, "smhdy")
	return strings.Trim(v, "0") == "" && v != ""
}
