package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/schedreplay/replay/export/perfscript"
	"github.com/schedreplay/replay/model"
)

// scriptCommand is `replay script`: any timeline or raw trace as `perf
// script` prints one, so a replay's simulated schedule can be read, and
// grepped, like its trace. The format is export/perfscript's.
func scriptCommand() *cli.Command {
	return &cli.Command{
		Name:      "script",
		ArgsUsage: "[TRACE]  (or -i TRACE; default replay.arrow)",
		Usage:     "print a timeline or trace as perf script does (one line per event), e.g. a replay's sim.arrow",
		Description: "The lines of `perf script --ns -F comm,tid,pid,cpu,time,event,trace --show-task-events --show-lost-events`:\n" +
			"the sched tracepoints in their kernels' print formats and perf's COMM/FORK/EXIT/LOST records, as perf prints them\n" +
			"(other tracepoints as name=value). Filters: --time START,STOP (seconds, either side may be empty), --cpu LIST, --task TIDS.",
		Flags: []cli.Flag{
			inputFlag(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "file to write (default: standard output; a file is written under a temporary name and renamed when complete)"},
			&cli.StringFlag{Name: "time", Usage: "START,STOP in seconds on the trace's clock, as perf script --time (e.g. 968.94,968.95 or 968.94,)"},
			&cli.StringFlag{Name: "cpu", Aliases: []string{"C"}, Usage: "only events written on these CPUs: a list such as 0,2-3"},
			&cli.StringFlag{Name: "task", Usage: "only events of these threads (comma list): written in their context or naming them (pid, prev_pid, next_pid, parent or child)"},
		},
		Action: func(c *cli.Context) error {
			in, err := inputPath(c, "script")
			if err != nil {
				return err
			}
			var f perfscript.Filter
			if s := c.String("time"); s != "" {
				if f.FromNS, f.ToNS, err = parseTimeRange(s); err != nil {
					return usagef("--time %q: %v", s, err)
				}
			}
			if s := c.String("cpu"); s != "" {
				cpus, err := model.ParseCPUList(s)
				if err != nil {
					return usagef("--cpu: %v", err)
				}
				f.CPUs = map[int32]bool{}
				for _, c := range cpus {
					f.CPUs[int32(c)] = true
				}
			}
			if s := c.String("task"); s != "" {
				if f.PIDs, err = parseTIDs(s); err != nil {
					return usagef("--task %q: %v", s, err)
				}
			}
			r, err := openInput(in, c.App.ErrWriter)
			if err != nil {
				return err
			}
			defer r.Close()
			write := func(w io.Writer) error {
				_, err := perfscript.Write(w, r, f)
				return err
			}
			if out := c.String("output"); out != "" {
				return writeFileAtomic(out, write)
			}
			return write(c.App.Writer)
		},
	}
}

// parseTimeRange reads perf script's --time START,STOP (seconds, either
// may be empty) as nanoseconds; 0 leaves that side open.
func parseTimeRange(s string) (from, to int64, err error) {
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("want START,STOP in seconds")
	}
	sec := func(x string) (int64, error) {
		x = strings.TrimSpace(x)
		if x == "" {
			return 0, nil
		}
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || v < 0 || v > math.MaxInt64/1e9 || math.IsNaN(v) {
			return 0, fmt.Errorf("%q is not a time in seconds", x)
		}
		return int64(math.Round(v * 1e9)), nil
	}
	if from, err = sec(a); err != nil {
		return 0, 0, err
	}
	if to, err = sec(b); err != nil {
		return 0, 0, err
	}
	if to != 0 && to < from {
		return 0, 0, fmt.Errorf("STOP is before START")
	}
	return from, to, nil
}

// parseTIDs reads a comma list of thread ids.
func parseTIDs(s string) (map[int32]bool, error) {
	m := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(part), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q: want a thread id", part)
		}
		m[int32(v)] = true
	}
	return m, nil
}
