package analysis

// domainAcct measures idle-while-runnable time: for each CPU that is idle
// (or whose state is not yet known), the lowest domain level whose span
// holds a busy CPU with a task waiting on its run queue. Only queues of
// busy CPUs count: a task queued on an idle CPU is about to run there (its
// wait is wakeup latency, not something a balancer could fix).
//
// Accounting is lazy: each CPU keeps the level it accrues and since when,
// and time is added only when that level changes. Queue changes on idle
// CPUs (the common wakeup) touch nothing else; a change on a busy CPU
// revisits only the CPUs not busy, through a list of them.
type domainAcct struct {
	levels Levels
	nLev   int // levels accounted: len(names), or 1 (the whole machine) without topology
	// inst[cpu][l] is the domain instance (an index into waiting) of cpu's
	// span at level l; contain[cpu] lists every instance whose span holds
	// cpu (more than one per level where NUMA spans overlap).
	inst    [][]int32
	contain [][]int32
	// near[cpu] is a bitset of the CPUs sharing some span with cpu; nil
	// without topology, where every CPU is near every other.
	near    [][]uint64
	waiting []int32 // tasks waiting on busy CPUs, per instance

	cpus []domCPU
	// free lists the CPUs not known busy; cpus[c].pos is c's index in it.
	free []int32
	// total[l] is idle-while-runnable time at level l of CPUs known idle.
	total []int64
}

type domCPU struct {
	queued  int32 // tasks waiting runnable on this CPU's queue
	state   uint8 // cpuUnknown, cpuIdle, cpuBusy
	level   int8  // level being accrued, -1 none
	pos     int32 // index in free, -1 when busy
	since   int64
	pending []int64 // accrued while the CPU's state was unknown
}

const (
	cpuUnknown uint8 = iota
	cpuIdle
	cpuBusy
)

func newDomainAcct(lv Levels, ncpu int) *domainAcct {
	d := &domainAcct{levels: lv}
	if lv != nil {
		d.nLev = len(lv.Levels())
	}
	if d.nLev == 0 {
		d.levels, d.nLev = nil, 1
	}
	d.total = make([]int64, d.nLev)
	if d.levels != nil {
		d.build(ncpu)
	} else {
		d.waiting = make([]int32, 1)
		d.grow(ncpu - 1)
	}
	return d
}

// build indexes the spans. CPUs the topology does not cover get singleton
// instances when they appear (grow).
func (d *domainAcct) build(ncpu int) {
	lv := d.levels
	n, limit := ncpu, ncpu
	if nc, ok := lv.(interface{ NumCPUs() int }); ok {
		limit = nc.NumCPUs()
	} else if limit < 1024 {
		limit = 1024
	}
	for c := 0; c < limit; c++ {
		for l := 0; l < d.nLev; l++ {
			if lv.Span(c, l) != nil {
				if c+1 > n {
					n = c + 1
				}
				break
			}
		}
	}
	key := map[string]int32{}
	var members [][]int
	d.inst = make([][]int32, n)
	for c := 0; c < n; c++ {
		d.inst[c] = make([]int32, d.nLev)
		prev := []int{c}
		for l := 0; l < d.nLev; l++ {
			span := lv.Span(c, l)
			if span == nil {
				span = prev
			}
			prev = span
			k := spanKey(span)
			id, ok := key[k]
			if !ok {
				id = int32(len(members))
				key[k] = id
				members = append(members, span)
			}
			d.inst[c][l] = id
		}
	}
	d.waiting = make([]int32, len(members))
	d.contain = make([][]int32, n)
	for id, m := range members {
		for _, c := range m {
			if c >= 0 && c < n {
				d.contain[c] = append(d.contain[c], int32(id))
			}
		}
	}
	words := (n + 63) / 64
	d.near = make([][]uint64, n)
	for c := 0; c < n; c++ {
		d.near[c] = make([]uint64, words)
		for _, id := range d.inst[c] {
			for _, o := range members[id] {
				if o >= 0 && o < n && o != c {
					d.near[c][o/64] |= 1 << (o % 64)
				}
			}
		}
	}
	for c := 0; c < n; c++ {
		d.addCPU()
	}
}

func spanKey(s []int) string {
	b := make([]byte, 0, 4*len(s))
	for _, c := range s {
		b = append(b, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
	}
	return string(b)
}

func (d *domainAcct) addCPU() {
	c := len(d.cpus)
	d.cpus = append(d.cpus, domCPU{level: -1, pos: int32(len(d.free)), pending: make([]int64, d.nLev)})
	d.free = append(d.free, int32(c))
}

// grow makes room for cpu. Without topology every CPU shares the one
// machine-wide instance; with topology a CPU it does not cover stands alone.
func (d *domainAcct) grow(cpu int) {
	for len(d.cpus) <= cpu {
		if d.levels == nil {
			d.inst = append(d.inst, []int32{0})
			d.contain = append(d.contain, []int32{0})
		} else {
			id := int32(len(d.waiting))
			d.waiting = append(d.waiting, 0)
			row := make([]int32, d.nLev)
			for l := range row {
				row[l] = id
			}
			d.inst = append(d.inst, row)
			d.contain = append(d.contain, []int32{id})
			d.near = append(d.near, nil)
		}
		d.addCPU()
	}
}

func (d *domainAcct) isNear(a, b int) bool {
	if d.levels == nil {
		return a != b
	}
	n := d.near[a]
	return b/64 < len(n) && n[b/64]&(1<<(b%64)) != 0
}

// levelOf is the level CPU c accrues now: the lowest level whose span has
// a task waiting on a busy CPU; -1 when none, or when c is busy.
func (d *domainAcct) levelOf(c int) int8 {
	if d.cpus[c].state == cpuBusy {
		return -1
	}
	for l, id := range d.inst[c] {
		if d.waiting[id] > 0 {
			return int8(l)
		}
	}
	return -1
}

// settle books CPU c's accrual up to t.
func (d *domainAcct) settle(c int, t int64) {
	p := &d.cpus[c]
	if p.level >= 0 && t > p.since {
		switch p.state {
		case cpuIdle:
			d.total[p.level] += t - p.since
		case cpuUnknown:
			p.pending[p.level] += t - p.since
		}
	}
	p.since = t
}

// propagate adds delta waiting tasks of busy CPU cpu to its spans at t and
// updates the levels of the CPUs not busy that share a span with it.
func (d *domainAcct) propagate(cpu int, delta int32, t int64) {
	for _, o := range d.free {
		if d.isNear(int(o), cpu) {
			d.settle(int(o), t)
		}
	}
	for _, id := range d.contain[cpu] {
		d.waiting[id] += delta
	}
	for _, o := range d.free {
		if d.isNear(int(o), cpu) {
			d.cpus[o].level = d.levelOf(int(o))
		}
	}
}

// queue changes the number of tasks waiting on cpu by delta at time t.
func (d *domainAcct) queue(cpu int, delta int32, t int64) {
	if cpu < 0 {
		return
	}
	d.grow(cpu)
	d.cpus[cpu].queued += delta
	if d.cpus[cpu].state == cpuBusy {
		d.propagate(cpu, delta, t)
	}
}

// switched records that cpu runs the idle task (idle) or another task from
// time t. The first call for a CPU resolves the time before it: the CPU ran
// the task switched out (prevIdle tells whether that was the idle task).
func (d *domainAcct) switched(cpu int, prevIdle, idle bool, t int64) {
	d.grow(cpu)
	p := &d.cpus[cpu]
	if p.state == cpuUnknown {
		d.settle(cpu, t)
		if prevIdle {
			for l, v := range p.pending {
				d.total[l] += v
			}
		}
		p.pending = nil
	}
	d.settle(cpu, t)
	busy := !idle
	if wasBusy := p.state == cpuBusy; busy != wasBusy {
		if busy {
			d.unfree(cpu)
			p.state = cpuBusy
			if p.queued != 0 {
				d.propagate(cpu, p.queued, t)
			}
		} else {
			if p.queued != 0 {
				d.propagate(cpu, -p.queued, t)
			}
			p.state = cpuIdle
			p.pos = int32(len(d.free))
			d.free = append(d.free, int32(cpu))
		}
	} else {
		p.state = cpuIdle
		if busy {
			p.state = cpuBusy
		}
	}
	p.level = d.levelOf(cpu)
}

// settled is the latest time any CPU's accrual was booked to: a switch
// dated before it would book time twice (settle moves since back).
func (d *domainAcct) settled() int64 {
	var t int64
	for i := range d.cpus {
		t = max(t, d.cpus[i].since)
	}
	return t
}

func (d *domainAcct) unfree(cpu int) {
	p := &d.cpus[cpu]
	if p.pos < 0 {
		return
	}
	last := d.free[len(d.free)-1]
	d.free[p.pos] = last
	d.cpus[last].pos = p.pos
	d.free = d.free[:len(d.free)-1]
	p.pos = -1
}

// finish closes the accruals at the end of the trace. CPUs never seen
// switching keep their unknown time out of the totals.
func (d *domainAcct) finish(t int64) {
	for c := range d.cpus {
		if d.cpus[c].state == cpuIdle {
			d.settle(c, t)
		}
	}
}
