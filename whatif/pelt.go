package whatif

import "math"

// PELT (kernel/sched/pelt.c): per-entity load tracking, written from the
// description in kernel-lb.md §2.1 with the kernel's integer scheme so the
// replay is bit-reproducible on every platform: time in 1024-ns units,
// 1024-unit periods, a 32-entry table of y^n (y^32 = 1/2) scaled by 2^32,
// three-segment accumulation and the divider LOAD_AVG_MAX - 1024 +
// period_contrib.
const (
	loadAvgPeriod  = 32
	loadAvgMax     = 47742
	peltMinDivider = loadAvgMax - 1024
	capacityShift  = 10
	capacityScale  = 1 << capacityShift
)

// yInv[n] is runnable_avg_yN_inv[n]: (2^32 - 1) × y^n truncated, y =
// 2^(-1/32), computed the way the kernel's generator (sched-pelt) does,
// y first and then its powers, which reproduces its table entry for entry
// (TestYInvTable; 2^32 × 2^(-n/32) is one more in 19 of the 32 entries).
var yInv = func() [loadAvgPeriod]uint64 {
	var t [loadAvgPeriod]uint64
	y := math.Pow(0.5, 1.0/loadAvgPeriod)
	for i := range t {
		t[i] = uint64(uint32(float64(1<<32-1) * math.Pow(y, float64(i))))
	}
	return t
}()

// decayLoad is decay_load(): val × y^n.
func decayLoad(val uint64, n uint64) uint64 {
	if n > loadAvgPeriod*63 {
		return 0
	}
	if n >= loadAvgPeriod {
		val >>= n / loadAvgPeriod
		n %= loadAvgPeriod
	}
	hi, lo := mul64(val, yInv[n])
	return hi<<32 | lo>>32
}

// mul64 returns the 128-bit product as (high 64 bits, low 64 bits).
func mul64(a, b uint64) (uint64, uint64) {
	const mask32 = 1<<32 - 1
	a0, a1 := a&mask32, a>>32
	b0, b1 := b&mask32, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1 := t & mask32
	w2 := t >> 32
	w1 += a0 * b1
	hi := a1*b1 + w2 + w1>>32
	return hi, a * b
}

// avg is struct sched_avg.
type avg struct {
	lastUpdate    int64
	periodContrib uint64
	loadSum       uint64
	runnableSum   uint64
	utilSum       uint64
	loadAvg       uint64
	runnableAvg   uint64
	utilAvg       uint64
}

func (sa *avg) divider() uint64 { return peltMinDivider + sa.periodContrib }

// update is ___update_load_sum + ___update_load_avg: advance the sums to
// now with inputs (load, runnable, running) constant since the last
// update; refresh the averages (load scaled by weight) when a period
// boundary was crossed. It reports whether the averages changed.
//
// scale is the original capacity of the CPU the entity ran on
// (arch_scale_cpu_capacity): running time adds to util_sum at that rate,
// so a task always running on a CPU of capacity 446 tends to util_avg
// 446, not 1024, as accumulate_sum scaled it up to v5.0. From v5.1
// (23127296889f) the kernel scales PELT's clock instead, which gives the
// same utilisation wherever the CPU idles now and then, but lets a CPU
// that never idles reach 1024; the model keeps the first form. The CPU
// runs at its top frequency throughout (no frequency invariance).
func (sa *avg) update(now int64, load, runnable uint64, running bool, weight, scale uint64) bool {
	delta := now - sa.lastUpdate
	if delta < 0 {
		sa.lastUpdate = now
		return false
	}
	d := uint64(delta) >> 10
	if d == 0 {
		return false
	}
	sa.lastUpdate += int64(d << 10)
	if load == 0 {
		runnable, running = 0, false
	}
	contrib := d
	d += sa.periodContrib
	periods := d / 1024
	if periods > 0 {
		sa.loadSum = decayLoad(sa.loadSum, periods)
		sa.runnableSum = decayLoad(sa.runnableSum, periods)
		sa.utilSum = decayLoad(sa.utilSum, periods)
		d %= 1024
		if load != 0 {
			c1 := decayLoad(1024-sa.periodContrib, periods)
			c2 := loadAvgMax - decayLoad(loadAvgMax, periods) - 1024
			contrib = c1 + c2 + d
		}
	}
	sa.periodContrib = d
	if load != 0 {
		sa.loadSum += load * contrib
	}
	if runnable != 0 {
		sa.runnableSum += runnable * contrib << capacityShift
	}
	if running {
		sa.utilSum += contrib * scale
	}
	if periods == 0 {
		return false
	}
	div := sa.divider()
	sa.loadAvg = weight * sa.loadSum / div
	sa.runnableAvg = sa.runnableSum / div
	sa.utilAvg = sa.utilSum / div
	return true
}

// attach adds an entity's averages to a cfs_rq's (attach_entity_load_avg:
// the entity is aligned to the cfs_rq's clock and its sums rebuilt from its
// averages with the cfs_rq's divider).
func (rq *avg) attach(se *avg, weight uint64) {
	se.lastUpdate = rq.lastUpdate
	se.periodContrib = rq.periodContrib
	div := se.divider()
	se.utilSum = se.utilAvg * div
	se.runnableSum = se.runnableAvg * div
	// load_avg × divider / weight, and 1 (not 0) when that product is
	// not above the weight.
	se.loadSum = se.loadAvg * div
	if weight > 0 && weight < se.loadSum {
		se.loadSum /= weight
	} else {
		se.loadSum = 1
	}
	rq.utilAvg += se.utilAvg
	rq.utilSum += se.utilSum
	rq.runnableAvg += se.runnableAvg
	rq.runnableSum += se.runnableSum
	rq.loadAvg += se.loadAvg
	rq.loadSum += se.loadSum * weight
}

// detach removes an entity's averages (detach_entity_load_avg /
// remove_entity_load_avg), clamping at zero and keeping the sums
// consistent with the averages as the kernel does.
func (rq *avg) detach(se *avg, weight uint64) {
	subSignal(&rq.utilAvg, &rq.utilSum, se.utilAvg, se.utilSum)
	subSignal(&rq.runnableAvg, &rq.runnableSum, se.runnableAvg, se.runnableSum)
	subSignal(&rq.loadAvg, &rq.loadSum, se.loadAvg, se.loadSum*weight)
}

// takeRemoved is update_cfs_rq_load_avg()'s removal of the averages
// queued by remove_entity_load_avg: each sum less its average's share ×
// the current divider.
func (rq *avg) takeRemoved(load, util, runnable uint64) {
	div := rq.divider()
	subSignal(&rq.loadAvg, &rq.loadSum, load, load*div)
	subSignal(&rq.utilAvg, &rq.utilSum, util, util*div)
	subSignal(&rq.runnableAvg, &rq.runnableSum, runnable, runnable*div)
}

// subSignal takes a share off one signal of a cfs_rq (sub_positive on the
// average and the sum, floored at 0) and keeps the sum at least the
// average × PELT_MIN_DIVIDER, as the kernel does after every removal.
func subSignal(avg, sum *uint64, a, s uint64) {
	*avg -= min(*avg, a)
	*sum -= min(*sum, s)
	*sum = max(*sum, *avg*peltMinDivider)
}

// niceToWeight is sched_prio_to_weight (kernel/sched/core.c), indexed by
// nice+20: 1024 at nice 0, about ×1.25 per step.
var niceToWeight = [40]uint64{
	88761, 71755, 56483, 46273, 36291,
	29154, 23254, 18705, 14949, 11916,
	9548, 7620, 6100, 4904, 3906,
	3121, 2501, 1991, 1586, 1277,
	1024, 820, 655, 526, 423,
	335, 272, 215, 172, 137,
	110, 87, 70, 56, 45,
	36, 29, 23, 18, 15,
}

// WeightOfPrio is the load weight the model gives a task at kernel prio
// prio (sched_prio_to_weight), for readers that redo the scheduler's
// arithmetic on a timeline (scripts/eevdfshadow).
func WeightOfPrio(prio int32) uint64 { return weightOfPrio(prio) }

// weightOfPrio is the load weight of a task at kernel prio prio: its
// nice value's, nice -20's for a real-time task (prio < 100), as the
// model has always weighed them.
func weightOfPrio(prio int32) uint64 {
	if prio < 100 {
		return weightOfNice(-20)
	}
	return weightOfNice(niceOf(prio))
}

func weightOfNice(n int) uint64 {
	if n < -20 {
		n = -20
	}
	if n > 19 {
		n = 19
	}
	return niceToWeight[n+20]
}
