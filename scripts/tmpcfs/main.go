package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/schedreplay/replay/ingest"
	"github.com/schedreplay/replay/timeline"
)

type pend struct {
	at, from int64
	curr     int32
	seq      int
	hard     []int64
	next     []string
}

func main() {
	rd, err := ingest.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	cur := map[int32]int32{}
	seq := map[int32]int{}
	pb := map[int32]*pend{}
	for rd.Next() {
		e := rd.Event()
		c := e.Int32(timeline.CPU)
		for _, x := range pb {
			if cur[c] == x.curr && seq[c] == x.seq && x.from != int64(c) && len(x.next) < 4 && e.Kind != timeline.SchedSwitch {
				x.next = append(x.next, fmt.Sprintf("+%dus %s(%d) f=%#x", (e.Time-x.at)/1000, e.Name[6:], e.Int32(timeline.PID), e.Int(timeline.CommonFlags)))
			}
		}
		switch e.Kind {
		case timeline.SchedWaking:
			w := e.Int32(timeline.PID)
			t := e.Int32(timeline.TargetCPU)
			if cur[t] > 0 && int32(c) != t {
				pb[w] = &pend{at: e.Time, from: int64(c), curr: cur[t], seq: seq[t]}
			}
		case timeline.SchedSwitch:
			next := e.Int32(timeline.NextPID)
			prev := e.Int32(timeline.PrevPID)
			if x, ok := pb[next]; ok {
				if prev == x.curr && seq[c] == x.seq && strings.HasPrefix(e.Str(timeline.PrevState), "R") && e.Time-x.at < 4000000 {
					fmt.Printf("%.6f cpu%d->%d delay %.3f ms: %s\n", float64(x.at)/1e9, x.from, c, float64(e.Time-x.at)/1e6, strings.Join(x.next, "; "))
				}
				delete(pb, next)
			}
			cur[c] = next
			seq[c]++
		}
	}
}
