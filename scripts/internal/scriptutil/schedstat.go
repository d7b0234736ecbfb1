package scriptutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedreplay/replay/model"
)

// SchedstatBeside reads the recipe's snapshots around the trace's run:
// DIR/info/schedstat.WORKLOAD.{before,after}.txt for DIR/WORKLOAD.perf.data
// (nil when absent), less one from the other, and names the two
// (scripts/balanceshadow, scripts/idlepulls).
func SchedstatBeside(path string) (*model.Schedstat, string, error) {
	dir, base := filepath.Split(path)
	wl, _, ok := strings.Cut(base, ".perf.data")
	if !ok {
		return nil, "", nil
	}
	before := filepath.Join(dir, "info", "schedstat."+wl+".before.txt")
	after := filepath.Join(dir, "info", "schedstat."+wl+".after.txt")
	a, err := readSchedstat(after)
	if err != nil || a == nil {
		return nil, "", err
	}
	b, err := readSchedstat(before)
	if err != nil || b == nil {
		return nil, "", err
	}
	d, err := a.Sub(b)
	if err != nil {
		return nil, "", fmt.Errorf("%s less %s: %w", after, before, err)
	}
	return d, after + " less " + filepath.Base(before), nil
}

func readSchedstat(path string) (*model.Schedstat, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return model.ParseSchedstat(f, path)
}
