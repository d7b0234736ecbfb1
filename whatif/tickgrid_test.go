package whatif

import "testing"

// The grid check by hand: CPU 0 ticks every 4 ms at phase 1.05 ms, CPU 1
// at 3.95 ms (its window wraps past the period's end), with enqueue
// records placed on and off the grid; the last report of a record wins.
func TestTickGridOnGridByHand(t *testing.T) {
	const ms = 1000000
	g := NewTickGridClasses()
	for i := int64(0); i < 10; i++ {
		g.Observe(0, 1050000+i*4*ms, true)
		g.Observe(1, 3950000+i*4*ms, true)
	}
	g.Observe(0, 1050000+200000+40*ms, false) // on CPU 0's grid (0.2 ms late)
	g.Observe(0, 3000000+40*ms, false)        // off it (2 ms)
	g.Observe(1, 4100000+40*ms, false)        // CPU 1: 0.15 ms past its phase, across the period's end
	g.Observe(1, 2000000+40*ms, false)        // off
	g.Observe(1, 2100000+40*ms, true)         // reported as a tick, then taken back
	g.Observe(1, 2100000+40*ms, false)
	g.Observe(0, 1050000+9*4*ms+400000, true) // a tick off the grid (0.4 ms late)
	got := g.OnGrid(4*ms, 100000, 300000)
	want := TickGridCount{Ticks: 21, TicksOnGrid: 20, Others: 5, OthersOnGrid: 2}
	if got != want {
		t.Errorf("OnGrid = %+v, want %+v", got, want)
	}
	var sum TickGridCount
	sum.Add(got)
	sum.Add(got)
	if sum.Ticks != 42 || sum.OthersOnGrid != 4 {
		t.Errorf("Add: %+v", sum)
	}
}
