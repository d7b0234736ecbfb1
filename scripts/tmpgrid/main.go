package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/timeline"
)

func main() {
	ph, _ := strconv.ParseInt(os.Args[1], 10, 64)
	const T = 4000000
	on, off, total := 0, 0, 0
	for _, f := range os.Args[2:] {
		r, err := ingest.Open(f)
		if err != nil {
			panic(err)
		}
		for r.Next() {
			e := r.Event()
			if e.Kind != timeline.SchedSwitch || e.Str(timeline.PrevState) != "R" || e.Int(timeline.PrevPID) == 0 {
				continue
			}
			total++
			o := ((e.Time-ph)%T + T) % T
			if o < 400000 {
				on++
			} else {
				off++
			}
		}
		r.Close()
	}
	fmt.Printf("preemptions %d: within 0.4 ms after a tick %d (%.0f%%), elsewhere %d\n", total, on, 100*float64(on)/float64(total), off)
}
