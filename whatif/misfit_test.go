package whatif

import (
	"testing"

	"github.com/schedreplay/replay/model"
)

// A misfit moves up, by hand: on the Juno r0 a CPU-bound task of 1 s of
// demand (at capacity 1024) runs on A53 CPU 0 from the start, the
// machine otherwise idle. A workload made by hand starts a running task
// at util 512 (half the scale), over 80 % of 446 (357): a misfit at once.
// Where the kernel has misfit handling (v4.20 on: 5.4 under legacy, 6.1
// under v6.1) CPU 0's first tick (4 ms at HZ=250) kicks an idle big
// CPU's nohz balance, which finds CPU 0's group misfit and pulls the
// task by active balance: it ends on an A57 within a few ticks, its run
// a little over 1 s. Under 4.19 (no misfit) a group of one task per CPU
// is balanced, and the task runs its 1 s of demand at 446 on CPU 0:
// 1024/446 × 1 s ≈ 2.3 s.
func TestMisfitMovesUp(t *testing.T) {
	for _, tc := range []struct {
		kernel, policy string
		up             bool
	}{
		{"5.0.0", "legacy", true}, // the misfit itself kicks (v5.0)
		{"5.4.0", "legacy", true}, // check_misfit_status kicks (v5.1 on)
		{"6.1.0", "v6.1", true},
		{"4.19.0", "legacy", false},
	} {
		t.Run(tc.kernel, func(t *testing.T) {
			b := newBuilder(t, "juno-r0")
			b.w.Kernel = tc.kernel
			x := b.task("x", 120, 0, true, CauseStart, 1000*ms)
			cfg := policyConfig(t, tc.policy)
			cfg.EAS = EASOff
			s, ch := newSim(t, b.done(t), cfg)
			if _, err := s.Run(); err != nil {
				t.Fatal(err)
			}
			var first, last *run
			for i := range ch.runs {
				r := &ch.runs[i]
				if r.tid != int64(s.tasks[x].w.TID) {
					continue
				}
				if first == nil {
					first = r
				}
				last = r
			}
			if first == nil || first.cpu != 0 {
				t.Fatalf("first run %+v; want one on CPU 0", first)
			}
			end := last.end - t0
			onBig := last.cpu == 1 || last.cpu == 2
			if tc.up {
				if !onBig || end > 1200*ms {
					t.Errorf("last run on CPU %d, done %d ms after the start; want an A57 and about 1 s", last.cpu, end/ms)
				}
				var onLittle int64
				for _, r := range ch.runs {
					if r.tid == first.tid && r.cpu == 0 {
						onLittle += r.end - r.start
					}
				}
				if onLittle < ms || onLittle > 20*ms {
					t.Errorf("%.1f ms on CPU 0 before the move; want a few ticks", float64(onLittle)/float64(ms))
				}
			} else if last.cpu != 0 || end < 2200*ms {
				t.Errorf("last run on CPU %d, done %d ms after the start; want CPU 0 throughout, about 2.3 s", last.cpu, end/ms)
			}
		})
	}
}

// update_misfit_status by hand on the Juno (6.1): util 356 fits an A53
// (356 × 1280 = 455,680 < 446 × 1024 = 456,704), 357 does not; a misfit
// CPU carries its task's task_h_load (load_avg 700 × the CPU's h_load
// 700 / (700 + 1) = 699), an idle pick clears it, a task that may run
// on its CPU alone is never a misfit (v5.5 on), and util 800 fits an
// A57 (1,024,000 < 1,048,576).
func TestUpdateMisfitStatusByHand(t *testing.T) {
	b := newBuilder(t, "juno-r0")
	x := b.task("x", 120, 0, false, CauseStart, ms)
	y := b.task("y", 120, 0, false, CauseStart, ms)
	w := b.done(t)
	w.Tasks[1].Allowed = []int{0}
	s, _ := newSim(t, w, policyConfig(t, "v6.1"))
	p, q := s.tasks[x], s.tasks[y]
	r := s.cpus[0]
	r.avg.loadAvg = 700
	for _, tk := range []*simTask{p, q} {
		tk.ueEwma, tk.ueEnqueued, tk.avg.loadAvg = 0, 0, 700
	}
	for _, tc := range []struct {
		util uint64
		want uint64
	}{{356, 0}, {357, 699}} {
		p.avg.utilAvg = tc.util
		s.updateMisfitStatus(r, p)
		if r.misfitTaskLoad != tc.want {
			t.Errorf("util %d: misfit_task_load %d, want %d", tc.util, r.misfitTaskLoad, tc.want)
		}
	}
	s.updateMisfitStatus(r, nil)
	if r.misfitTaskLoad != 0 {
		t.Errorf("an idle pick left misfit_task_load %d", r.misfitTaskLoad)
	}
	q.avg.utilAvg = 400
	if q.nrAllowed != 1 {
		t.Fatalf("task y allowed %d CPUs, want 1", q.nrAllowed)
	}
	s.updateMisfitStatus(r, q)
	if r.misfitTaskLoad != 0 {
		t.Errorf("a task allowed one CPU is a misfit (%d)", r.misfitTaskLoad)
	}
	p.avg.utilAvg = 800
	s.updateMisfitStatus(s.cpus[1], p)
	if got := s.cpus[1].misfitTaskLoad; got != 0 {
		t.Errorf("util 800 on an A57 (1024): misfit_task_load %d, want 0", got)
	}
}

// Up to v5.4 the balancer's pieces by hand on the Juno: find_busiest_queue
// over the A53 group for big CPU 1 takes the CPU of the biggest misfit
// (CPU 4, load 300) when the busiest group is misfit, where by load it
// takes CPU 3 (two tasks, runnable 2048); update_sd_pick_busiest takes a
// misfit group only where its biggest CPU is smaller than the local
// group's (446 × 1280 < 1024 × 1024), never an A57 group for an A53.
func TestLegacyMisfitBalanceByHand(t *testing.T) {
	b := newBuilder(t, "juno-r0")
	b.w.Kernel = "5.4.0"
	m := b.task("m", 120, 4, true, CauseStart, ms)
	y := b.task("y", 120, 3, true, CauseStart, ms)
	z := b.task("z", 120, 3, false, CauseStart, ms)
	s, _ := newSim(t, b.done(t), policyConfig(t, "legacy"))
	r3, r4 := s.cpus[3], s.cpus[4]
	r4.curr, r4.nrCFS, r4.misfitTaskLoad = s.tasks[m], 1, 300
	s.tasks[m].avg.loadAvg = 300
	r3.curr, r3.nrCFS = s.tasks[y], 2
	r3.tree = []*simTask{s.tasks[z]}
	s.tasks[y].avg.loadAvg, s.tasks[z].avg.loadAvg = 1024, 1024
	r3.avg.loadAvg, r4.avg.loadAvg = 2048, 300
	var die *sdState
	for _, st := range s.cpus[1].sd {
		if st.sd.Name == "DIE" {
			die = st
		}
	}
	little := die.groups[1]
	if got := model.FormatCPUList(little.Span); got != "0,3-5" {
		t.Fatalf("CPU 1's DIE groups: second %s, want the A53s", got)
	}
	for _, tc := range []struct {
		src  GroupType
		want int
	}{{GroupMisfitTask, 4}, {GroupOverloaded, 3}} {
		e := s.newLBRun(die, 1, CPUIdle)
		e.SrcGroupType, e.MigrationType, e.Imbalance = tc.src, MigrateLoad, 4096
		if got := s.findBusiestQueue(e, little); got != tc.want {
			t.Errorf("busiest group %v: find_busiest_queue %d, want %d", tc.src, got, tc.want)
		}
	}
	pol := legacyPolicy{}
	env := &LBEnv{SDFlags: model.SDAsymCPUCapacity, ImbalancePct: 125}
	bigLocal := &SGStats{MaxCapacity: 1024, MinCapacity: 1024, GroupCapacity: 2048, GroupWeight: 2}
	littleLocal := &SGStats{MaxCapacity: 446, MinCapacity: 446, GroupCapacity: 1784, GroupWeight: 4}
	mis := func(maxCap uint64) *SGStats {
		return &SGStats{GroupType: GroupMisfitTask, MisfitLoad: 300, MaxCapacity: maxCap, MinCapacity: maxCap, AvgLoad: 100, SumNrRunning: 1, GroupWeight: 2}
	}
	if !pol.PickBusiest(env, &SDStats{Local: bigLocal}, mis(446)) {
		t.Error("an A57 balancer passed over an A53 misfit group")
	}
	if pol.PickBusiest(env, &SDStats{Local: littleLocal}, mis(1024)) {
		t.Error("an A53 balancer took an A57 misfit group it cannot help")
	}
}

// The reworked balancer's update_sd_pick_busiest on an asymmetric domain
// by hand (v6.1: capacity_greater, over 1078/1024): an A57 balancer
// (1024 > 446 × 1.053) takes an A53 misfit group when its local group
// has spare capacity; an A53 balancer cannot help an A57 misfit; and a
// has_spare A57 group (smallest CPU 1024, clearly over 446) is not
// emptied onto an A53. Under rework (v5.5) the same by the groups'
// capacities with the 20 % margin.
func TestReworkMisfitPickByHand(t *testing.T) {
	for _, name := range []string{"v6.1", "rework"} {
		pol := mustPolicy(t, name)
		spare := &SGStats{GroupType: GroupHasSpare, MaxCapacity: 1024, MinCapacity: 1024, GroupWeight: 2, IdleCPUs: 2}
		littleSpare := &SGStats{GroupType: GroupHasSpare, MaxCapacity: 446, MinCapacity: 446, GroupWeight: 4, IdleCPUs: 4}
		mis := func(c uint64) *SGStats {
			return &SGStats{GroupType: GroupMisfitTask, MisfitLoad: 300, MaxCapacity: c, MinCapacity: c, SumHNrRunning: 1, SumNrRunning: 1, GroupWeight: 2}
		}
		for _, tc := range []struct {
			what   string
			dstCap uint64
			local  *SGStats
			sgs    *SGStats
			want   bool
		}{
			{"an A57 balancer, an A53 misfit", 1024, spare, mis(446), true},
			{"an A53 balancer, an A57 misfit", 446, littleSpare, mis(1024), false},
			{"an A53 balancer, a has_spare A57 group", 446, littleSpare, &SGStats{GroupType: GroupHasSpare, MaxCapacity: 1024, MinCapacity: 1024, SumHNrRunning: 1, SumNrRunning: 1, GroupWeight: 2, IdleCPUs: 1}, false},
		} {
			env := &LBEnv{SDFlags: model.SDAsymCPUCapacity, ImbalancePct: 117, DstCapacity: tc.dstCap}
			if got := pol.PickBusiest(env, &SDStats{Local: tc.local}, tc.sgs); got != tc.want {
				t.Errorf("%s: %s: picked %v, want %v", name, tc.what, got, tc.want)
			}
		}
	}
}

// update_sd_lb_stats refreshes the balancing CPU's capacity_of (the local
// group's update_group_capacity, update_cpu_capacity at the lowest
// domain) before any group is weighed, so "can we help this misfit"
// compares the fresh value. On a DynamIQ-like MC of three A53s (446) and
// one big CPU (the lowest domain is the asymmetric one), big CPU 3 idle
// with its capacity_of left at 300 from RT pressure that has since gone
// (RT average 0): the update makes it 1024, over 446 × 1.053, and CPU 0's
// misfit group is the busiest; read before the update (300) it could not
// help and the domain would be balanced.
func TestMisfitPickAfterDstCapacityUpdate(t *testing.T) {
	b := newBuilder(t, "sockets=1,cores=4,arch=arm64,capacity=0-2:446/3:1024")
	b.w.Kernel = "6.1.0"
	m := b.task("m", 120, 0, true, CauseStart, ms)
	s, _ := newSim(t, b.done(t), policyConfig(t, "v6.1"))
	r0, r3 := s.cpus[0], s.cpus[3]
	r0.curr, r0.nrCFS, r0.misfitTaskLoad = s.tasks[m], 1, 1024
	s.tasks[m].avg.loadAvg, s.tasks[m].avg.utilAvg = 1024, 446
	r0.avg.loadAvg, r0.avg.utilAvg, r0.avg.runnableAvg = 1024, 446, 1024
	r3.cpuCapacity = 300
	st := r3.sd[0]
	if st.sd.Child != nil || st.sd.Flags&model.SDAsymCPUCapacity == 0 {
		t.Fatalf("CPU 3's lowest domain %s: want the asymmetric one", st.sd.Name)
	}
	e := s.newLBRun(st, 3, CPUIdle)
	sds, _ := s.findBusiestGroup(e)
	if r3.cpuCapacity != 1024 || e.DstCapacity != 1024 {
		t.Errorf("capacity_of(3) %d, the balancer's %d; want both 1024", r3.cpuCapacity, e.DstCapacity)
	}
	if sds == nil || sds.Busiest == nil || sds.Busiest.GroupType != GroupMisfitTask {
		t.Fatalf("busiest %+v; want CPU 0's misfit group", sds)
	}
}
