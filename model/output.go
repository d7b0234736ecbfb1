package model

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteText prints the domains the way the kernel presents them as files:
// one "domains/cpuN/domainM/FILE: VALUE" line per file of
// /sys/kernel/debug/sched/domains (v5.13+; /proc/sys/kernel/sched_domain,
// printed as "sched_domain/cpuN/...", before), files in the order `find |
// sort` lists them. Only files whose value follows from the topology are
// printed (not max_newidle_lb_cost, a run-time measurement). Flags are
// names for v5.10+, the decimal bitmask before, as the kernel printed them.
func (d *Domains) WriteText(w io.Writer) error {
	root := "domains"
	where := "/sys/kernel/debug/sched/domains"
	if !d.Kernel.debugfs() {
		root, where = "sched_domain", "/proc/sys/kernel/sched_domain"
	}
	bw := &errWriter{w: w}
	bw.printf("# %s as kernel %s would show it (%s topology table)\n", where, d.Kernel, d.Arch)
	for _, cd := range d.CPUs {
		for m, sd := range cd.Domains {
			p := fmt.Sprintf("%s/cpu%d/domain%d/", root, cd.CPU, m)
			bw.printf("%sbusy_factor: %d\n", p, sd.BusyFactor)
			bw.printf("%scache_nice_tries: %d\n", p, sd.CacheNiceTries)
			bw.printf("%sflags: %s\n", p, d.flagsString(sd.Flags))
			if d.Kernel.groupsFlagsFile() {
				var gf SDFlags
				if g := sd.LocalGroup(); g != nil {
					gf = g.Flags
				}
				bw.printf("%sgroups_flags: %s\n", p, d.flagsString(gf))
			}
			bw.printf("%simbalance_pct: %d\n", p, sd.ImbalancePct)
			if d.Kernel.levelFile() {
				bw.printf("%slevel: %d\n", p, sd.Level)
			}
			bw.printf("%smax_interval: %d\n", p, sd.MaxInterval)
			bw.printf("%smin_interval: %d\n", p, sd.MinInterval)
			bw.printf("%sname: %s\n", p, sd.Name)
		}
	}
	return bw.err
}

func (d *Domains) flagsString(f SDFlags) string {
	if !d.Kernel.flagsByName() {
		return fmt.Sprint(f.KernelBits(d.Kernel))
	}
	return strings.Join(f.FlagNames(d.Kernel), " ")
}

// WriteVerbose prints the domains the way the kernel logs them when booted
// with sched_verbose (sched_domain_debug): per CPU its domains with spans,
// and each domain's groups as "id:{ span=... mask=... cap=... }".
func (d *Domains) WriteVerbose(w io.Writer) error {
	bw := &errWriter{w: w}
	for _, c := range d.Online {
		cd := d.CPUs[c]
		if len(cd.Domains) == 0 {
			bw.printf("CPU%d attaching NULL sched-domain.\n", c)
			continue
		}
		bw.printf("CPU%d attaching sched-domain(s):\n", c)
		for lvl, sd := range cd.Domains {
			bw.printf("%*s domain-%d: span=%s level=%s\n", lvl, "", lvl, FormatCPUList(sd.Span), sd.Name)
			bw.printf("%*s groups:", lvl+1, "")
			gs := sd.Groups()
			for i, g := range gs {
				bw.printf(" %d:{ span=%s", g.ID, FormatCPUList(g.Span))
				if sd.Overlapping() && !g.mask.equal(g.span) {
					bw.printf(" mask=%s", FormatCPUList(g.BalanceMask))
				}
				if g.Capacity != 1024 {
					bw.printf(" cap=%d", g.Capacity)
				}
				bw.printf(" }")
				if i+1 < len(gs) {
					bw.printf(",")
				}
			}
			bw.printf("\n")
		}
	}
	maxCap := 0
	for _, c := range d.Online {
		if d.Capacity[c] > maxCap {
			maxCap = d.Capacity[c]
		}
	}
	// v6.8 dropped rd->max_cpu_capacity from this line [~ver: absent in
	// v6.12, present in v6.1].
	if d.Kernel.AtLeast(6, 8) {
		bw.printf("root domain span: %s\n", FormatCPUList(d.Online))
	} else {
		bw.printf("root domain span: %s (max cpu_capacity = %d)\n", FormatCPUList(d.Online), maxCap)
	}
	return bw.err
}

// DomainRecord is one CPU's domain in the JSON output.
type DomainRecord struct {
	CPU int `json:"cpu"`
	// Level is M of domainM: the position in the CPU's attached chain.
	Level int `json:"level"`
	// SDLevel is the kernel's sd->level (position before degenerate
	// domains were removed).
	SDLevel        int      `json:"sd_level"`
	Name           string   `json:"name"`
	Span           string   `json:"span"`
	SpanWeight     int      `json:"span_weight"`
	Flags          []string `json:"flags"`
	ImbalancePct   int      `json:"imbalance_pct"`
	BusyFactor     int      `json:"busy_factor"`
	CacheNiceTries int      `json:"cache_nice_tries"`
	MinInterval    int      `json:"min_interval"`
	MaxInterval    int      `json:"max_interval"`
	ImbNUMANr      int      `json:"imb_numa_nr"`
	NUMADistance   int      `json:"numa_distance,omitempty"`
	// Groups are the groups' spans in the kernel's order (local group first).
	Groups []string `json:"groups"`
	// GroupMasks are the balance masks, only for overlapping (NUMA) levels.
	GroupMasks    []string `json:"group_masks,omitempty"`
	GroupIDs      []int    `json:"group_ids"`
	GroupCapacity []int    `json:"group_capacity"`
	GroupsFlags   []string `json:"groups_flags"`
	// Shortcuts names the per-CPU pointers that point at this domain:
	// sd_llc, sd_numa, sd_asym_packing, sd_asym_cpucapacity.
	Shortcuts []string `json:"shortcuts,omitempty"`
	// LLCID and LLCSize are the CPU's sd_llc_id and sd_llc_size.
	LLCID   int `json:"llc_id"`
	LLCSize int `json:"llc_size"`
}

// Records flattens the domains into one record per CPU and domain.
func (d *Domains) Records() []DomainRecord {
	var out []DomainRecord
	for _, cd := range d.CPUs {
		for m, sd := range cd.Domains {
			r := DomainRecord{CPU: cd.CPU, Level: m, SDLevel: sd.Level, Name: sd.Name,
				Span: FormatCPUList(sd.Span), SpanWeight: sd.SpanWeight, Flags: sd.Flags.FlagNames(d.Kernel),
				ImbalancePct: sd.ImbalancePct, BusyFactor: sd.BusyFactor, CacheNiceTries: sd.CacheNiceTries,
				MinInterval: sd.MinInterval, MaxInterval: sd.MaxInterval, ImbNUMANr: sd.ImbNUMANr,
				NUMADistance: sd.Distance, LLCID: cd.LLCID, LLCSize: cd.LLCSize}
			if r.Flags == nil {
				r.Flags = []string{}
			}
			gs := sd.Groups()
			for _, g := range gs {
				r.Groups = append(r.Groups, FormatCPUList(g.Span))
				r.GroupIDs = append(r.GroupIDs, g.ID)
				r.GroupCapacity = append(r.GroupCapacity, g.Capacity)
				if sd.Overlapping() {
					r.GroupMasks = append(r.GroupMasks, FormatCPUList(g.BalanceMask))
				}
			}
			r.GroupsFlags = []string{}
			if len(gs) > 0 {
				if n := gs[0].Flags.FlagNames(d.Kernel); n != nil {
					r.GroupsFlags = n
				}
			}
			for _, s := range []struct {
				name string
				p    *SchedDomain
			}{{"sd_llc", cd.LLC}, {"sd_numa", cd.NUMA}, {"sd_asym_packing", cd.AsymPacking}, {"sd_asym_cpucapacity", cd.AsymCPUCapacity}} {
				if s.p == sd {
					r.Shortcuts = append(r.Shortcuts, s.name)
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// WriteJSON prints Records() as a JSON array.
func (d *Domains) WriteJSON(w io.Writer) error {
	recs := d.Records()
	if recs == nil {
		recs = []DomainRecord{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(recs)
}

// WriteTree prints a summary for people: the machine, the NUMA distances,
// each level with its distinct domains and their groups, and which CPUs
// share a last-level cache (sd_llc).
func (d *Domains) WriteTree(w io.Writer) error {
	bw := &errWriter{w: w}
	llcFlag := "SD_SHARE_PKG_RESOURCES"
	if d.Kernel.shareLLCName() {
		llcFlag = "SD_SHARE_LLC"
	}
	bw.printf("kernel %s, %s topology table; %d CPUs, online %s\n", d.Kernel, d.Arch, d.NrCPUs, FormatCPUList(d.Online))
	if len(d.NUMADistances) > 1 {
		bw.printf("NUMA distances: %v\n", d.NUMADistances)
	}
	var names []string
	for _, l := range d.Levels {
		names = append(names, l.Name)
	}
	bw.printf("topology levels built: %s\n", strings.Join(names, " -> "))
	for _, wmsg := range d.Warnings {
		bw.printf("warning: %s\n", wmsg)
	}
	// Chains: distinct sequences of level names.
	chains := map[string][]int{}
	for _, c := range d.Online {
		var n []string
		for _, sd := range d.CPUs[c].Domains {
			n = append(n, sd.Name)
		}
		k := strings.Join(n, " -> ")
		if k == "" {
			k = "(no domains: nothing to balance)"
		}
		chains[k] = append(chains[k], c)
	}
	var ck []string
	for k := range chains {
		ck = append(ck, k)
	}
	sort.Strings(ck)
	for _, k := range ck {
		bw.printf("domains of CPUs %s: %s\n", FormatCPUList(chains[k]), k)
	}
	// Per domain index, the distinct domains.
	type entry struct {
		sd   *SchedDomain
		cpus []int
	}
	maxDepth := 0
	for _, c := range d.Online {
		if n := len(d.CPUs[c].Domains); n > maxDepth {
			maxDepth = n
		}
	}
	for m := maxDepth - 1; m >= 0; m-- {
		seen := map[string]*entry{}
		var order []string
		for _, c := range d.Online {
			cd := d.CPUs[c]
			if m >= len(cd.Domains) {
				continue
			}
			sd := cd.Domains[m]
			k := sd.Name + "|" + FormatCPUList(sd.Span) + "|" + groupKey(sd)
			if e, ok := seen[k]; ok {
				e.cpus = append(e.cpus, c)
				continue
			}
			seen[k] = &entry{sd: sd, cpus: []int{c}}
			order = append(order, k)
		}
		bw.printf("\ndomain%d:\n", m)
		for i, k := range order {
			if i == treeMaxEntries && len(order) > treeMaxEntries+1 {
				bw.printf("  ... and %d more domain%d spans\n", len(order)-i, m)
				break
			}
			e := seen[k]
			sd := e.sd
			var gs []string
			for _, g := range sortedGroups(sd) {
				s := FormatCPUList(g.Span)
				if sd.Overlapping() && !g.mask.equal(g.span) {
					s += " (balanced by " + FormatCPUList(g.BalanceMask) + ")"
				}
				gs = append(gs, s)
			}
			extra := ""
			if sd.Flags&SDShareLLC != 0 {
				extra = ", shares cache (" + llcFlag + ")"
			}
			if sd.Distance > 0 {
				extra += fmt.Sprintf(", distance <= %d", sd.Distance)
			}
			who := ""
			if !equalInts(e.cpus, sd.Span) {
				who = " [as seen by CPUs " + FormatCPUList(e.cpus) + "]"
			}
			bw.printf("  %-5s %s (%d CPUs)%s%s\n", sd.Name, FormatCPUList(sd.Span), sd.SpanWeight, extra, who)
			if len(gs) > treeMaxEntries+1 {
				gs = append(gs[:treeMaxEntries:treeMaxEntries], fmt.Sprintf("... (%d more)", len(gs)-treeMaxEntries))
			}
			bw.printf("        %d groups: %s\n", sd.NrGroups(), strings.Join(gs, " | "))
			bw.printf("        imbalance_pct %d, busy_factor %d, cache_nice_tries %d, interval %d..%d ms, flags %s\n",
				sd.ImbalancePct, sd.BusyFactor, sd.CacheNiceTries, sd.MinInterval, sd.MaxInterval, strings.Join(sd.Flags.FlagNames(d.Kernel), " "))
		}
	}
	// LLCs.
	llcs := map[int][]int{}
	for _, c := range d.Online {
		llcs[d.CPUs[c].LLCID] = append(llcs[d.CPUs[c].LLCID], c)
	}
	var ids []int
	for id := range llcs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	bw.printf("\nlast-level caches (sd_llc): %d\n", len(ids))
	for i, id := range ids {
		if i == treeMaxEntries && len(ids) > treeMaxEntries+1 {
			bw.printf("  ... and %d more\n", len(ids)-i)
			break
		}
		cd := d.CPUs[id]
		name := "none (no cache-sharing domain)"
		if cd.LLC != nil {
			name = cd.LLC.Name + " domain"
		}
		bw.printf("  CPUs %s share an LLC (sd_llc_id %d, sd_llc_size %d, %s)\n", FormatCPUList(llcs[id]), id, cd.LLCSize, name)
	}
	return bw.err
}

// treeMaxEntries bounds the lists of the tree view.
const treeMaxEntries = 16

func sortedGroups(sd *SchedDomain) []*SchedGroup {
	gs := append([]*SchedGroup(nil), sd.Groups()...)
	sort.Slice(gs, func(i, j int) bool { return gs[i].Span[0] < gs[j].Span[0] })
	return gs
}

func groupKey(sd *SchedDomain) string {
	var parts []string
	for _, g := range sortedGroups(sd) {
		parts = append(parts, FormatCPUList(g.Span)+"/"+FormatCPUList(g.BalanceMask))
	}
	return strings.Join(parts, " ")
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}
