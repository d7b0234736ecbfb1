package scriptutil

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TickNS is the tick period of the kernels the timer-event recordings
// come from (HZ 250: the guests' and this machine's), the unit the
// scripts reading them measure idle time in.
const TickNS = 4000000

// TickAddress is tick_sched_timer's address: the flag's, or the one in
// info/kallsyms-timers.txt beside the trace
// (fixtures/kernels/recipe/run-idle-tick.sh writes it: the kernel's
// addresses change with each boot).
func TickAddress(path, flagValue string) (uint64, error) {
	if flagValue != "" {
		v, err := strconv.ParseUint(strings.TrimPrefix(flagValue, "0x"), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("-tickfn %q: want a hex address", flagValue)
		}
		return v, nil
	}
	ks := filepath.Join(filepath.Dir(path), "info", "kallsyms-timers.txt")
	f, err := os.Open(ks)
	if err != nil {
		return 0, fmt.Errorf("%s: no -tickfn and no %s to find tick_sched_timer in", path, ks)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 && fs[2] == "tick_sched_timer" {
			v, err := strconv.ParseUint(fs[0], 16, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: bad address %q", ks, fs[0])
			}
			return v, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s names no tick_sched_timer", ks)
}

// TickMain is the main of a script that measures traces recorded with
// the timer events (scripts/idleticks, scripts/idlepulls): each argument
// measured and printed by run, given tick_sched_timer's address from
// -tickfn (empty: TickAddress reads it beside each trace); the first
// error ends it, exit status 1.
func TickMain(name string, run func(w io.Writer, path, tickfn string) error) {
	tickfn := flag.String("tickfn", "", "tick_sched_timer's address, hex (default: from info/kallsyms-timers.txt beside each trace)")
	args := ParseArgs("usage: "+name+" [-tickfn ADDR] TRACE...", false)
	for _, path := range args {
		if err := run(os.Stdout, path, *tickfn); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
