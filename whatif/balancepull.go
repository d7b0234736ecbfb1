package whatif

import (
	"fmt"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// BalancePull is a periodic balance the trace shows moving tasks: CPU's
// tick softirq (SCHED_SOFTIRQ, sched_balance_rq from rebalance_domains)
// pulled a task from Src onto CPU, its sched_migrate_task written there
// in softirq context beside a running task, at TimeNS.
//
// A balance that moves nothing leaves no record, so the balancer's phase
// (each domain's last_balance and balance_interval) is hidden state: it
// follows a CPU's whole history, and a replay that strays from that
// history (a parent on the other CPU, a balance a few ms earlier that
// found nothing and doubled the interval) balances tens of ms later than
// the kernel did, which decides whether hackbench's herd is split early
// or its queues stay deep (FIDELITY.md round 82).
type BalancePull struct {
	CPU, Src int32
	TimeNS   int64
}

// balancePullGapNS: migrations of one balance pass come microseconds
// apart; a later one on the same CPU within this is the same pass.
const balancePullGapNS = 1000000

// balancePull records e, a sched_migrate_task written on CPU c, as a
// BalancePull when it is a periodic balance's: in softirq context beside
// a running task (an idle CPU's balance, its own or the nohz idle
// balancer's for others, is left out), onto c from another CPU.
func (x *extractor) balancePull(e *timeline.Event, c int32) {
	if e.Int(timeline.CommonFlags)&(flagSoftIRQ|flagHardIRQ|flagNMI) != flagSoftIRQ || e.Int32(timeline.CommonPID) == 0 {
		return
	}
	if !e.IsSet(timeline.DestCPU) || !e.IsSet(timeline.OrigCPU) || e.Int32(timeline.DestCPU) != c {
		return
	}
	src := e.Int32(timeline.OrigCPU)
	if src == c || src < 0 || src >= model.MaxCPUs {
		return
	}
	x.growCPU(c)
	if last := x.lastPull[c]; last >= 0 && e.Time-last < balancePullGapNS {
		return
	}
	x.lastPull[c] = e.Time
	x.w.BalancePulls = append(x.w.BalancePulls, BalancePull{CPU: c, Src: src, TimeNS: e.Time})
}

func (w *Workload) validateBalancePulls() error {
	for i, p := range w.BalancePulls {
		if p.CPU < 0 || p.CPU >= model.MaxCPUs || p.Src < 0 || p.Src >= model.MaxCPUs || p.Src == p.CPU {
			return fmt.Errorf("workload balance pull %d: CPU %d from %d", i, p.CPU, p.Src)
		}
		if i > 0 && p.TimeNS < w.BalancePulls[i-1].TimeNS {
			return fmt.Errorf("workload balance pull %d: out of time order", i)
		}
	}
	return nil
}

// balancePullsDue makes the periodic balance the trace showed at this tick
// due in the replay (Config.BalancePhase): when the pull's CPU and source
// are the two CPUs of a domain, that domain's balance on the less loaded
// of them (the side that can pull; the trace's CPU when they tie) falls
// due now. Which CPU is which side follows the replay, not the trace's
// numbers: the replay's tasks may sit on the other CPU. In a larger
// domain the side is ambiguous (making every CPU due at once, or the
// trace's, met fewer goals on the eight-vCPU guests), so it is left to
// the model.
func (s *Sim) balancePullsDue() {
	p := s.w.BalancePulls
	i := s.nextPull
	for i < len(p) && p[i].TimeNS < s.now-s.tickNS/2 {
		i++
	}
	for ; i < len(p) && p[i].TimeNS < s.now+s.tickNS/2; i++ {
		if int(p[i].CPU) >= s.ncpu || int(p[i].Src) >= s.ncpu {
			continue
		}
		span := s.pairDomainSpan(int(p[i].CPU), int(p[i].Src))
		if span == nil {
			continue
		}
		dst := span[0]
		if n0, n1 := s.cpus[span[0]].nrRunning(), s.cpus[span[1]].nrRunning(); n1 < n0 || n1 == n0 && span[1] == int(p[i].CPU) {
			dst = span[1]
		}
		other := span[0] + span[1] - dst
		r := s.cpus[dst]
		j := s.jiffies()
		for _, st := range r.sd {
			if inSpan(st.sd.Span, other) {
				if iv := s.balanceInterval(st, !r.idle()); st.lastBalance > j-iv {
					st.lastBalance = j - iv
				}
				break
			}
		}
		if r.nextBalance > j {
			r.nextBalance = j
		}
	}
	s.nextPull = i
}

// pairDomainSpan is the span of the lowest domain of CPU a spanning b, when
// it holds those two CPUs alone; else nil.
func (s *Sim) pairDomainSpan(a, b int) []int {
	for _, st := range s.cpus[a].sd {
		if inSpan(st.sd.Span, b) {
			if len(st.sd.Span) == 2 {
				return st.sd.Span
			}
			return nil
		}
	}
	return nil
}
