package scriptutil

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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
