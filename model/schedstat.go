package model

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Schedstat is one /proc/schedstat snapshot of version 15 (the guests'
// 6.1) or 16 (Debian's 6.12: the same fields, the idle types in their
// reordered enum, CPU_NOT_IDLE first): per CPU, its run-queue counters
// and, per scheduler domain, the load balancer's counters. The kernel
// counts every load_balance() pass, including those that move nothing
// and leave no trace record, so the difference of two snapshots taken
// around a recording is an independent check on a model of the balancer.
type Schedstat struct {
	Version   int
	Timestamp int64 // jiffies
	CPUs      []SchedstatCPU
}

// SchedstatCPU is one "cpuN" line and the "domainN" lines after it.
type SchedstatCPU struct {
	CPU int
	// RQ are the nine run-queue fields in the kernel's order: yld_count,
	// a legacy zero, sched_count, sched_goidle, ttwu_count, ttwu_local,
	// rq_cpu_time, run_delay, pcount.
	RQ      [9]int64
	Domains []SchedstatDomain
}

// SchedstatDomain is one "domainN MASK ..." line.
type SchedstatDomain struct {
	Name string // "domain0", ...
	Mask string // the span, as the kernel prints it (hex)
	// LB holds the load_balance() counters per idle type in version 15's
	// order, whichever version was read: CPU_IDLE, CPU_NOT_IDLE,
	// CPU_NEWLY_IDLE.
	LB [3]LBCounters
	// Rest are the twelve fields after them: alb_count, alb_failed,
	// alb_pushed, sbe_cnt, sbe_balanced, sbe_pushed, sbf_cnt,
	// sbf_balanced, sbf_pushed, ttwu_wake_remote, ttwu_move_affine,
	// ttwu_move_balance.
	Rest [12]int64
}

// LBCounters are one idle type's load_balance() counters. Imbalance sums
// env->imbalance over the passes that found a busiest queue, in the unit
// of each pass's migration type (load, utilization or tasks).
type LBCounters struct {
	Count, Balanced, Failed, Imbalance, Gained, HotGained, NoBusyQ, NoBusyG int64
}

// Passes is the number of passes that found a busiest queue and were not
// stopped by affinity: lb_count less lb_balanced (a pass that found no
// busiest group or queue counts as balanced, and so does one whose every
// task was pinned, although its imbalance was summed). Failed of them
// moved nothing.
func (c LBCounters) Passes() int64 { return c.Count - c.Balanced }

// schedstatMaxDomains bounds the domain lines read per CPU (the kernel
// builds a handful; NUMA machines a few more).
const schedstatMaxDomains = 64

// ParseSchedstat reads a version 15 or 16 /proc/schedstat. name is used
// in errors.
func ParseSchedstat(r io.Reader, name string) (*Schedstat, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	ss := &Schedstat{}
	line := 0
	num := func(s string) (int64, error) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s:%d: %q is not a counter", name, line, s)
		}
		return v, nil
	}
	for sc.Scan() {
		line++
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		switch {
		case fs[0] == "version":
			if len(fs) != 2 || fs[1] != "15" && fs[1] != "16" {
				return nil, fmt.Errorf("%s:%d: %q: want schedstat version 15 or 16", name, line, sc.Text())
			}
			ss.Version, _ = strconv.Atoi(fs[1])
		case fs[0] == "timestamp":
			if len(fs) != 2 {
				return nil, fmt.Errorf("%s:%d: timestamp: want one field", name, line)
			}
			v, err := num(fs[1])
			if err != nil {
				return nil, err
			}
			ss.Timestamp = v
		case strings.HasPrefix(fs[0], "cpu"):
			if ss.Version == 0 {
				return nil, fmt.Errorf("%s:%d: cpu line before the version line", name, line)
			}
			c, err := strconv.Atoi(fs[0][3:])
			if err != nil || c < 0 || c >= MaxCPUs {
				return nil, fmt.Errorf("%s:%d: %q: want cpuN with N below %d", name, line, fs[0], MaxCPUs)
			}
			if len(fs) != 10 {
				return nil, fmt.Errorf("%s:%d: %s: %d fields, want 9", name, line, fs[0], len(fs)-1)
			}
			cpu := SchedstatCPU{CPU: c}
			for i := range cpu.RQ {
				if cpu.RQ[i], err = num(fs[1+i]); err != nil {
					return nil, err
				}
			}
			ss.CPUs = append(ss.CPUs, cpu)
		case strings.HasPrefix(fs[0], "domain"):
			if len(ss.CPUs) == 0 {
				return nil, fmt.Errorf("%s:%d: domain line before any cpu line", name, line)
			}
			cpu := &ss.CPUs[len(ss.CPUs)-1]
			if len(cpu.Domains) >= schedstatMaxDomains {
				return nil, fmt.Errorf("%s:%d: more than %d domains on cpu%d", name, line, schedstatMaxDomains, cpu.CPU)
			}
			if len(fs) != 2+24+12 {
				return nil, fmt.Errorf("%s:%d: %s: %d fields after the mask, want 36", name, line, fs[0], len(fs)-2)
			}
			d := SchedstatDomain{Name: fs[0], Mask: fs[1]}
			v := make([]int64, 36)
			for i := range v {
				var err error
				if v[i], err = num(fs[2+i]); err != nil {
					return nil, err
				}
			}
			for t := range d.LB {
				x := v[8*t:]
				to := t
				if ss.Version == 16 {
					// __CPU_NOT_IDLE, CPU_IDLE, CPU_NEWLY_IDLE.
					to = [3]int{1, 0, 2}[t]
				}
				d.LB[to] = LBCounters{x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]}
			}
			copy(d.Rest[:], v[24:])
			cpu.Domains = append(cpu.Domains, d)
		default:
			return nil, fmt.Errorf("%s:%d: %q: want a version, timestamp, cpuN or domainN line", name, line, fs[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if ss.Version == 0 {
		return nil, fmt.Errorf("%s: no version line: not a /proc/schedstat", name)
	}
	return ss, nil
}

// Sub returns after − before, counter by counter: what happened between
// two snapshots of the same machine. The CPUs and their domains must be
// the same in both.
func (after *Schedstat) Sub(before *Schedstat) (*Schedstat, error) {
	if after.Version != before.Version {
		return nil, fmt.Errorf("schedstat: version %d after, %d before", after.Version, before.Version)
	}
	if len(after.CPUs) != len(before.CPUs) {
		return nil, fmt.Errorf("schedstat: %d CPUs after, %d before", len(after.CPUs), len(before.CPUs))
	}
	out := &Schedstat{Version: after.Version, Timestamp: after.Timestamp - before.Timestamp, CPUs: make([]SchedstatCPU, len(after.CPUs))}
	for i, a := range after.CPUs {
		b := before.CPUs[i]
		if a.CPU != b.CPU || len(a.Domains) != len(b.Domains) {
			return nil, fmt.Errorf("schedstat: cpu%d with %d domains after, cpu%d with %d before", a.CPU, len(a.Domains), b.CPU, len(b.Domains))
		}
		o := SchedstatCPU{CPU: a.CPU, Domains: make([]SchedstatDomain, len(a.Domains))}
		for k := range o.RQ {
			o.RQ[k] = a.RQ[k] - b.RQ[k]
		}
		for j, ad := range a.Domains {
			bd := b.Domains[j]
			if ad.Name != bd.Name || ad.Mask != bd.Mask {
				return nil, fmt.Errorf("schedstat: cpu%d %s %s after, %s %s before", a.CPU, ad.Name, ad.Mask, bd.Name, bd.Mask)
			}
			od := SchedstatDomain{Name: ad.Name, Mask: ad.Mask}
			for t := range od.LB {
				x, y := ad.LB[t], bd.LB[t]
				od.LB[t] = LBCounters{x.Count - y.Count, x.Balanced - y.Balanced, x.Failed - y.Failed, x.Imbalance - y.Imbalance,
					x.Gained - y.Gained, x.HotGained - y.HotGained, x.NoBusyQ - y.NoBusyQ, x.NoBusyG - y.NoBusyG}
			}
			for k := range od.Rest {
				od.Rest[k] = ad.Rest[k] - bd.Rest[k]
			}
			o.Domains[j] = od
		}
		out.CPUs[i] = o
	}
	return out, nil
}
