package whatif

import "slices"

// The tick-grid check of the extractor's hard-IRQ classes.
//
// A CPU's periodic tick fires on a fixed grid (every 1/HZ from a phase of
// its own), while an enqueue's update_curr in an interrupt comes wherever
// its waking falls. So of the records classed as ticks nearly all should
// sit near the grid, and of the others no more than a uniform spread
// puts there (2·window/period). Neither class rule looks at the grid, so
// this is a check from outside both (FIDELITY.md round 66; scripts/tickgrid
// runs it over every recording).

// TickGridClasses collects the classes ExtractOptions.HardIRQRecord
// reports; a record reported twice keeps its last class.
type TickGridClasses struct {
	class map[irqRecord]bool
}

type irqRecord struct {
	cpu int32
	at  int64
}

// NewTickGridClasses returns an empty collection.
func NewTickGridClasses() *TickGridClasses {
	return &TickGridClasses{class: map[irqRecord]bool{}}
}

// Observe is an ExtractOptions.HardIRQRecord.
func (g *TickGridClasses) Observe(cpu int32, at int64, tick bool) {
	g.class[irqRecord{cpu, at}] = tick
}

// TickGridCount is how many records of each class sit on their CPU's
// tick grid.
type TickGridCount struct {
	Ticks, TicksOnGrid   int
	Others, OthersOnGrid int
}

// Add sums counts (over recordings).
func (c *TickGridCount) Add(o TickGridCount) {
	c.Ticks += o.Ticks
	c.TicksOnGrid += o.TicksOnGrid
	c.Others += o.Others
	c.OthersOnGrid += o.OthersOnGrid
}

// OnGrid counts the records within windowNS of their CPU's grid. A CPU's
// phase is the middle of the binNS-wide bin of the period (periodNS) that
// holds most of its records, whatever their class: ticks are most of them.
func (g *TickGridClasses) OnGrid(periodNS, binNS, windowNS int64) TickGridCount {
	hist := map[int32][]int{}
	for r := range g.class {
		h := hist[r.cpu]
		if h == nil {
			h = make([]int, (periodNS+binNS-1)/binNS)
			hist[r.cpu] = h
		}
		h[(r.at%periodNS+periodNS)%periodNS/binNS]++
	}
	phase := map[int32]int64{}
	for cpu, h := range hist {
		phase[cpu] = int64(slices.Index(h, slices.Max(h)))*binNS + binNS/2
	}
	var n TickGridCount
	for r, tick := range g.class {
		d := ((r.at-phase[r.cpu])%periodNS + periodNS) % periodNS
		on := d < windowNS || d > periodNS-windowNS
		if tick {
			n.Ticks++
			if on {
				n.TicksOnGrid++
			}
		} else {
			n.Others++
			if on {
				n.OthersOnGrid++
			}
		}
	}
	return n
}
