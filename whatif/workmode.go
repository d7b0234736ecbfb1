package whatif

import (
	"path/filepath"
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
// machine) keeps fixed work.
func TimeBounded(cmdline []string) (why string, ok bool) {
	for i, arg := range cmdline {
		args := cmdline[i+1:]
		switch filepath.Base(arg) {
		case "stress-ng":
			if v, flag, found := optionValue(args, "-t", "--timeout"); found && !zeroDuration(v) {
				return "stress-ng " + flag + " " + v, true
			}
		case "schbench":
			if v, flag, found := optionValue(args, "-r", "--runtime"); found {
				return "schbench " + flag + " " + v, true
			}
			return "schbench (its default 30 s runtime)", true
		case "cyclictest":
			if v, flag, found := optionValue(args, "-D", "--duration"); found && !zeroDuration(v) {
				return "cyclictest " + flag + " " + v, true
			}
		case "timeout":
			if i+2 < len(cmdline) {
				return strings.Join(cmdline[i:min(len(cmdline), i+3)], " "), true
			}
		}
	}
	return "", false
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
