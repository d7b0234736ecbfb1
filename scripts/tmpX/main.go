package main

import (
	"fmt"
	"os"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/timeline"
)

func main() {
	r, err := ingest.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	var first, last, firstAny, lastAny int64
	var lastName string
	for r.Next() {
		e := r.Event()
		if e.Time == 0 {
			continue
		}
		if firstAny == 0 {
			firstAny = e.Time
		}
		lastAny = e.Time
		switch e.Kind {
		case timeline.SchedSwitch, timeline.SchedWaking, timeline.SchedWakeup, timeline.SchedWakeupNew, timeline.SchedMigrateTask, timeline.SchedProcessExit, timeline.SchedProcessFork:
			if first == 0 {
				first = e.Time
			}
			last = e.Time
			lastName = e.Name
		}
	}
	fmt.Printf("any %d..%d  sched %d..%d (head %.3f ms, tail %.3f ms) last %s\n", firstAny, lastAny, first, last, float64(first-firstAny)/1e6, float64(lastAny-last)/1e6, lastName)
}
