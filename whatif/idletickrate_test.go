package whatif

import "testing"

// TestIdleByBusyByHand works the split by hand: four CPUs (or, with NCPU
// 0, the CPUs seen switching), times in µs.
func TestIdleByBusyByHand(t *testing.T) {
	type sw struct {
		cpu  int32
		at   int64
		idle bool
	}
	for _, c := range []struct {
		name                string
		ncpu                int
		switches            []sw
		ticks               []int32 // idle ticks, after the switches
		end                 int64
		fewNS, manyNS       int64
		fewTicks, manyTicks int64
	}{
		// CPU 0 idle 0-10 with none busy (few), CPU 1 busy from 4: still
		// few (1 of 4); CPU 2 busy from 6: half busy, so 6-10 is many.
		{"four CPUs", 4, []sw{{0, 0, true}, {1, 4, false}, {2, 6, false}}, []int32{0, 3}, 10, 6, 4, 0, 1},
		// Seen CPUs only: 0 idle, 1 busy from 4 is half of two (many).
		{"CPUs seen", 0, []sw{{0, 0, true}, {1, 4, false}}, []int32{0}, 10, 4, 6, 0, 1},
		// Two idle CPUs, one goes busy: 2 × 5 µs few, then 1 × 5 many of 2.
		{"two idle", 2, []sw{{0, 0, true}, {1, 0, true}, {1, 5, false}}, nil, 10, 10, 5, 0, 0},
		// A CPU number no machine has is not counted; nor its tick.
		{"CPU out of range", 4, []sw{{0, 0, true}, {-1, 2, false}, {1 << 20, 3, true}}, []int32{-1, 1 << 20, 0}, 10, 10, 0, 1, 0},
	} {
		var b IdleByBusy
		b.NCPU = c.ncpu
		for _, s := range c.switches {
			b.Switched(s.cpu, s.at*1000, s.idle)
		}
		for _, cpu := range c.ticks {
			b.Tick(cpu)
		}
		b.Advance(c.end * 1000)
		if b.FewNS != c.fewNS*1000 || b.ManyNS != c.manyNS*1000 || b.FewTicks != c.fewTicks || b.ManyTicks != c.manyTicks {
			t.Errorf("%s: idle %d µs few, %d many; ticks %d few, %d many; want %d, %d; %d, %d", c.name,
				b.FewNS/1000, b.ManyNS/1000, b.FewTicks, b.ManyTicks, c.fewNS, c.manyNS, c.fewTicks, c.manyTicks)
		}
	}
}
