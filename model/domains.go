package model

import (
	"fmt"
	"sort"
)

// Domains is the scheduler-domain hierarchy the kernel would build for a
// Topology: per CPU the chain of SchedDomains left after degenerate-domain
// removal, with their sched groups, and the per-CPU shortcuts the load
// balancer uses. It models kernel/sched/topology.c build_sched_domains() for
// the root domain spanning every online CPU (no cpusets partitions, no
// isolcpus, relax_domain_level -1).
type Domains struct {
	// Kernel is the version whose rules were applied.
	Kernel KernelVersion
	// Arch is the topology table used: "x86", "arm64" or "powerpc".
	Arch   string
	NrCPUs int
	// Online are the CPUs the domains were built on (cpu_map).
	Online []int
	// Levels are the sched_domain_topology_level entries, bottom-up,
	// including the NUMA levels sched_init_numa() appended.
	Levels []TopologyLevel
	// CPUs is indexed by CPU id; offline CPUs have an entry with no domains.
	CPUs []CPUDomains
	// NUMADistances are the distinct node distances (sched_domains_numa_distance).
	NUMADistances []int
	// Capacity is arch_scale_cpu_capacity per CPU (1024 unless the
	// topology says otherwise).
	Capacity []int
	// Warnings are the kernel's complaints about the topology that did not
	// stop the build.
	Warnings []string
}

// TopologyLevel is one sched_domain_topology_level.
type TopologyLevel struct {
	Name string
	// Flags are those the level's sd_flags function contributes
	// (cpu_smt_flags, cpu_cluster_flags, cpu_core_flags, cpu_numa_flags).
	Flags SDFlags
	// NUMALevel is the index into NUMADistances for NODE/NUMA levels, -1
	// otherwise; Distance is that distance.
	NUMALevel int
	Distance  int
	// Overlap marks SDTL_OVERLAP levels (NUMA levels above NODE).
	Overlap bool

	mask func(cpu int) cpuset
}

// CPUDomains are one CPU's attached domains (rq->sd and its parents) and
// the shortcuts update_top_cache_domain() derives from them.
type CPUDomains struct {
	CPU int
	// Domains[0] is the lowest attached domain (debugfs domain0).
	Domains []*SchedDomain
	// LLC is sd_llc: the highest domain with SD_SHARE_LLC (nil if none);
	// LLCSize (sd_llc_size) and LLCID (sd_llc_id, the first CPU of its
	// span) default to 1 and the CPU itself.
	LLC     *SchedDomain
	LLCSize int
	LLCID   int
	// ShareID is sd_share_id (v6.7+): first CPU of the lowest SD_CLUSTER
	// domain, else LLCID.
	ShareID int
	// NUMA is sd_numa, the lowest SD_NUMA domain.
	NUMA *SchedDomain
	// AsymPacking is sd_asym_packing, the highest SD_ASYM_PACKING domain.
	AsymPacking *SchedDomain
	// AsymCPUCapacity is sd_asym_cpucapacity: the lowest domain with
	// SD_ASYM_CPUCAPACITY_FULL (v5.14+; SD_ASYM_CPUCAPACITY before).
	AsymCPUCapacity *SchedDomain
}

// SchedDomain is one struct sched_domain of one CPU.
type SchedDomain struct {
	CPU  int
	Name string
	// Level is sd->level: the position in the chain as built, before
	// degenerate domains were removed (debugfs "level" in v6.12+).
	Level int
	// Span are the CPUs of the domain (sched_domain_span), ascending.
	Span       []int
	SpanWeight int
	Flags      SDFlags
	// Parameters set by sd_init().
	MinInterval    int // ms
	MaxInterval    int // ms
	BusyFactor     int
	ImbalancePct   int
	CacheNiceTries int
	// BalanceInterval is the initial balance_interval (ms).
	BalanceInterval int
	// ImbNUMANr is imb_numa_nr (v5.18+ NUMA imbalance allowance).
	ImbNUMANr int
	// Distance is the NUMA distance of NODE/NUMA levels, 0 otherwise.
	Distance int

	Parent, Child *SchedDomain

	span   cpuset
	groups *groupRing // non-overlapping levels: shared with the span's other CPUs
	own    []*SchedGroup
}

// SchedGroup is a struct sched_group with its sched_group_capacity.
type SchedGroup struct {
	// Span are the group's CPUs (sched_group_span).
	Span []int
	// BalanceMask is group_balance_mask: the CPUs that balance on behalf of
	// the group; equal to Span except for some overlapping NUMA groups.
	BalanceMask []int
	// ID is sgc->id, what sched_verbose prints before the span: the first
	// CPU of the balance mask.
	ID     int
	Weight int
	// Capacity is sgc->capacity after init_sched_groups_capacity: the sum of
	// the CPUs' capacities; MinCapacity/MaxCapacity their extremes.
	Capacity, MinCapacity, MaxCapacity int
	// Flags are the flags of the child domain the group was built from
	// (sg->flags); cleared when that child is removed as degenerate.
	Flags SDFlags
	// Cores is the number of distinct SMT cores in the group (v6.6+ sg->cores).
	Cores int

	span, mask cpuset
}

// groupRing holds the groups of all domains of one non-overlapping level
// that share a span; each CPU sees them in its own order (starting with its
// local group).
type groupRing struct {
	groups []*SchedGroup
	of     map[int]int // CPU -> index in groups
}

// Groups returns the domain's sched groups in the kernel's order: the local
// group (containing the domain's CPU) first, then the others in the order
// build_sched_groups()/build_overlap_sched_groups() linked them.
func (sd *SchedDomain) Groups() []*SchedGroup {
	if sd.groups == nil {
		return sd.own
	}
	out := make([]*SchedGroup, 0, len(sd.groups.groups))
	seen := make(map[int]bool, len(sd.groups.groups))
	for _, c := range sd.span.wrapOrder(sd.CPU) {
		gi, ok := sd.groups.of[c]
		if !ok || seen[gi] {
			continue
		}
		seen[gi] = true
		out = append(out, sd.groups.groups[gi])
	}
	return out
}

// LocalGroup is the group holding the domain's CPU (sd->groups, the first
// of Groups()).
func (sd *SchedDomain) LocalGroup() *SchedGroup {
	if sd.groups == nil {
		if len(sd.own) == 0 {
			return nil
		}
		return sd.own[0]
	}
	if gi, ok := sd.groups.of[sd.CPU]; ok {
		return sd.groups.groups[gi]
	}
	return nil
}

// NrGroups is the number of groups without building the ordered list.
func (sd *SchedDomain) NrGroups() int {
	if sd.groups == nil {
		return len(sd.own)
	}
	return len(sd.groups.groups)
}

// Overlapping reports SD_OVERLAP.
func (sd *SchedDomain) Overlapping() bool { return sd.Flags&SDOverlap != 0 }

// FlagNames are the flags as the kernel version names and orders them.
func (d *Domains) FlagNames(f SDFlags) []string { return f.FlagNames(d.Kernel) }

// BuildDomains builds the sched domains kernel (a release string such as
// "6.1.0-57-amd64" or "5.10"; "" = newest modelled) would build on t,
// following build_sched_domains(): levels from the architecture's topology
// table plus NUMA levels (sched_init_numa), per-CPU chains (sd_init,
// build_sched_domain), groups (build_sched_groups,
// build_overlap_sched_groups), imb_numa_nr, group capacities
// (init_sched_groups_capacity), degenerate-domain removal
// (cpu_attach_domain, sd_degenerate, sd_parent_degenerate) and the per-CPU
// shortcuts (update_top_cache_domain).
//
// The build fails, as the kernel's does, when a non-NUMA level has CPU
// masks that partially overlap (topology_span_sane).
func BuildDomains(t *Topology, kernel string) (*Domains, error) {
	kv, err := ParseKernelVersion(kernel)
	if err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	m := t.machine()
	d := &Domains{Kernel: kv, Arch: m.arch, NrCPUs: m.n, Online: m.online.list(), Capacity: m.capacity}
	d.Levels, d.NUMADistances, err = buildLevels(m, kv)
	if err != nil {
		return nil, err
	}
	b := &builder{d: d, m: m, kv: kv, spans: map[string]cpuset{}, lists: map[string][]int{},
		spanOf: map[*uint64]cpuset{}, overlap: map[string]*SchedGroup{}}
	if err := b.build(); err != nil {
		return nil, err
	}
	return d, nil
}

// buildLevels returns the topology levels for m's architecture (the x86
// table of arch/x86/kernel/smpboot.c, powerpc_topology after
// fixup_topology, or the generic default_topology that arm64 and the others
// use) followed by the NUMA levels of sched_init_numa().
func buildLevels(m *machine, kv KernelVersion) ([]TopologyLevel, []int, error) {
	llcFlag := SDShareLLC
	smtFlags := SDShareCPUCapacity | llcFlag
	clsFlags := llcFlag
	if kv.hasClusterFlag() {
		clsFlags |= SDCluster
	}
	node := func(c int) cpuset { return m.nodeCPUs[m.node[c]] }
	var lv []TopologyLevel
	add := func(name string, f SDFlags, mask func(int) cpuset) {
		lv = append(lv, TopologyLevel{Name: name, Flags: f, NUMALevel: -1, mask: mask})
	}
	switch m.arch {
	case "x86":
		// match_smt/match_l2c/match_llc refuse siblings on another node
		// (topology_sane), so the masks stop at the node.
		add("SMT", smtFlags, func(c int) cpuset { return m.smt[c].and(node(c)) })
		if kv.hasCLS() {
			add("CLS", clsFlags, func(c int) cpuset { return m.cluster[c].and(node(c)) })
		}
		add("MC", llcFlag, func(c int) cpuset { return m.llc[c].and(node(c)) })
		// x86_has_numa_in_package: a package spanning several nodes drops
		// the DIE/PKG level and lets the NUMA levels take over.
		numaInPkg := false
		for _, c := range m.online.list() {
			if !m.pkg[c].and(m.online).subsetOf(node(c)) {
				numaInPkg = true
				break
			}
		}
		if !numaInPkg {
			add(kv.PkgLevelName(), 0, node)
		}
	case "powerpc":
		// Without coregroup support (POWER8/9) fixup_topology() folds MC
		// into the package level.
		add("SMT", smtFlags, func(c int) cpuset { return m.smt[c] })
		add("CACHE", llcFlag, func(c int) cpuset { return m.l2[c] })
		add(kv.PkgLevelName(), 0, node)
	default:
		// default_topology (arm64, riscv, ...) with the masks of
		// drivers/base/arch_topology.c.
		coregroup := func(c int) cpuset {
			core := node(c)
			if m.pkg[c].subsetOf(core) {
				core = m.pkg[c]
			}
			if m.hasLLC[c] && m.llc[c].subsetOf(core) {
				core = m.llc[c]
			}
			if kv.hasCLS() && core.subsetOf(m.cluster[c]) {
				core = m.cluster[c]
			}
			return core
		}
		add("SMT", smtFlags, func(c int) cpuset { return m.smt[c] })
		if kv.hasCLS() {
			add("CLS", clsFlags, func(c int) cpuset {
				if coregroup(c).subsetOf(m.cluster[c]) {
					return m.smt[c]
				}
				return m.cluster[c]
			})
		}
		add("MC", llcFlag, coregroup)
		add(kv.PkgLevelName(), 0, node)
	}
	// sched_init_numa: distinct distances between nodes that have CPUs.
	seen := map[int]bool{}
	for _, a := range m.nodeIDs {
		for _, b := range m.nodeIDs {
			dd := m.dist[a][b]
			if dd < 10 || dd > maxDistance {
				return nil, nil, fmt.Errorf("node distance %d->%d is %d; want 10..%d", a, b, dd, maxDistance)
			}
			seen[dd] = true
		}
	}
	var dists []int
	for dd := range seen {
		dists = append(dists, dd)
	}
	sort.Ints(dists)
	masks := make([]map[int]cpuset, len(dists))
	for i, lim := range dists {
		masks[i] = map[int]cpuset{}
		for _, a := range m.nodeIDs {
			s := newCPUSet(m.n)
			for _, b := range m.nodeIDs {
				if m.dist[a][b] <= lim {
					s = s.or(m.nodeCPUs[b])
				}
			}
			masks[i][a] = s
		}
	}
	for i := range dists {
		i := i
		tl := TopologyLevel{Name: "NODE", NUMALevel: i, Distance: dists[i],
			mask: func(c int) cpuset { return masks[i][m.node[c]] }}
		if i > 0 {
			tl.Name, tl.Flags, tl.Overlap = "NUMA", SDNUMA, true
		}
		lv = append(lv, tl)
	}
	return lv, dists, nil
}

type builder struct {
	d     *Domains
	m     *machine
	kv    KernelVersion
	spans map[string]cpuset // interned spans
	lists map[string][]int  // interned span lists
	// dom[level][cpu] is the domain CPU cpu built at level (nil if its
	// chain stopped earlier): the kernel's per-CPU sdd->sd.
	dom [][]*SchedDomain
	// lmask[level][cpu] is tl->mask(cpu), interned, for online CPUs.
	lmask [][]cpuset
	// spanOf caches mask & cpu_map by the (interned) mask.
	spanOf map[*uint64]cpuset
	// overlap caches the content of overlapping groups by sibling level and
	// group span; each CPU gets its own copy, as the kernel allocates.
	overlap map[string]*SchedGroup
}

func (b *builder) mask(li, c int) cpuset {
	if s := b.lmask[li][c]; s != nil {
		return s
	}
	s, _ := b.intern(b.d.Levels[li].mask(c))
	b.lmask[li][c] = s
	return s
}

func (b *builder) intern(s cpuset) (cpuset, []int) {
	k := s.key()
	if e, ok := b.spans[k]; ok {
		return e, b.lists[k]
	}
	l := s.list()
	b.spans[k], b.lists[k] = s, l
	return s, l
}

func (b *builder) warn(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	for _, w := range b.d.Warnings {
		if w == msg {
			return
		}
	}
	b.d.Warnings = append(b.d.Warnings, msg)
}

func (b *builder) build() error {
	d, m := b.d, b.m
	cpuMap := m.online
	levels := d.Levels
	b.dom = make([][]*SchedDomain, len(levels))
	b.lmask = make([][]cpuset, len(levels))
	for i := range b.dom {
		b.dom[i] = make([]*SchedDomain, m.n)
		b.lmask[i] = make([]cpuset, m.n)
	}
	// topology_span_sane: CPU masks of a non-overlapping level must be
	// equal or disjoint.
	for li := range levels {
		tl := &levels[li]
		if tl.Overlap {
			continue
		}
		owner := make(map[int]int, m.n)
		done := map[string]bool{}
		for _, c := range cpuMap.list() {
			mc := b.mask(li, c)
			k := mc.key()
			if done[k] {
				continue
			}
			done[k] = true
			for _, x := range mc.and(cpuMap).list() {
				o, ok := owner[x]
				if !ok {
					owner[x] = c
					continue
				}
				if mo := b.mask(li, o); mo.key() != k {
					return fmt.Errorf("level %s: cpu%d's CPUs %s and cpu%d's %s partially overlap; the kernel refuses such a topology (topology_span_sane). Check the sibling and cache lists", tl.Name, o, mo, c, mc)
				}
			}
		}
	}
	asymLevel := -1
	if !b.kv.asymFull() {
		asymLevel = b.asymCPUCapacityLevel()
	}
	classes := b.capacityClasses()
	// Per-CPU chains (build_sched_domains, first loop).
	for _, c := range cpuMap.list() {
		var child *SchedDomain
		for li := range levels {
			sd := b.sdInit(li, c, child, classes, li == asymLevel)
			if child != nil {
				sd.Level = child.Level + 1
				child.Parent = sd
				if !child.span.subsetOf(sd.span) {
					// The kernel logs "BUG: arch topology borken" and widens
					// this CPU's domain only, leaving the others'
					// inconsistent; refuse such a description instead.
					return fmt.Errorf("cpu%d: its %s domain %s is not inside its %s domain %s (the kernel would log \"BUG: arch topology borken\"); each level's CPUs must include the level below: check the thread siblings, cluster, cache and node lists", c, child.Name, child.span, sd.Name, sd.span)
				}
			}
			if levels[li].Overlap {
				sd.Flags |= SDOverlap
			}
			b.dom[li][c] = sd
			child = sd
			if sd.span.equal(cpuMap) {
				break
			}
		}
	}
	for li := range levels {
		for _, sd := range b.dom[li] {
			if sd != nil {
				sd.SpanWeight = len(sd.Span)
			}
		}
	}
	// Groups.
	rings := make([]map[string]*groupRing, len(levels))
	shared := make([]map[int]*SchedGroup, len(levels))
	for li := range levels {
		rings[li] = map[string]*groupRing{}
		shared[li] = map[int]*SchedGroup{}
	}
	for _, c := range cpuMap.list() {
		for li := range levels {
			sd := b.dom[li][c]
			if sd == nil {
				break
			}
			if sd.Overlapping() {
				b.buildOverlapGroups(sd, li)
			} else {
				b.buildGroups(sd, li, rings[li], shared[li])
			}
		}
	}
	// imb_numa_nr (v5.18+; the v6.0 form).
	for _, c := range cpuMap.list() {
		imb, imbSpan := 0, 1
		for sd := b.dom[0][c]; sd != nil; sd = sd.Parent {
			ch := sd.Child
			if sd.Flags&SDShareLLC == 0 && ch != nil && ch.Flags&SDShareLLC != 0 {
				nrLLCs := sd.SpanWeight / ch.SpanWeight
				if nrLLCs == 1 {
					imb = sd.SpanWeight >> 3
				} else {
					imb = nrLLCs
				}
				if imb < 1 {
					imb = 1
				}
				sd.ImbNUMANr = imb
				top := sd.Parent
				for top != nil && top.Flags&SDNUMA == 0 {
					top = top.Parent
				}
				if top != nil {
					imbSpan = top.SpanWeight
				} else {
					imbSpan = sd.SpanWeight
				}
			} else {
				f := sd.SpanWeight / imbSpan
				if f < 1 {
					f = 1
				}
				sd.ImbNUMANr = imb * f
			}
		}
	}
	// Attach: degenerate removal and shortcuts.
	d.CPUs = make([]CPUDomains, m.n)
	for i := range d.CPUs {
		d.CPUs[i] = CPUDomains{CPU: i, LLCSize: 1, LLCID: i, ShareID: i}
	}
	for _, c := range cpuMap.list() {
		var base *SchedDomain
		if len(b.dom) > 0 {
			base = b.dom[0][c]
		}
		base = b.attach(base)
		cd := &d.CPUs[c]
		for sd := base; sd != nil; sd = sd.Parent {
			cd.Domains = append(cd.Domains, sd)
		}
		b.updateTopCacheDomain(cd)
	}
	return nil
}

// sdInit models sd_init(): the domain of level tl for cpu.
func (b *builder) sdInit(li, cpu int, child *SchedDomain, classes []cpuset, asymHere bool) *SchedDomain {
	kv := b.kv
	tl := &b.d.Levels[li]
	mask := b.mask(li, cpu)
	weight := mask.weight()
	sd := &SchedDomain{
		CPU: cpu, Name: tl.Name, Child: child,
		MinInterval: weight, MaxInterval: 2 * weight, BalanceInterval: weight,
		BusyFactor: kv.busyFactor(), ImbalancePct: kv.defaultImbalancePct(),
		Flags:    SDBalanceNewidle | SDBalanceExec | SDBalanceFork | SDWakeAffine | SDPreferSibling | tl.Flags,
		Distance: tl.Distance,
	}
	if kv.hasLoadBalanceFlag() {
		sd.Flags |= SDLoadBalance
	}
	if sp, ok := b.spanOf[&mask[0]]; ok {
		sd.span = sp
	} else {
		sd.span, _ = b.intern(mask.and(b.m.online))
		b.spanOf[&mask[0]] = sd.span
	}
	sd.span, sd.Span = b.intern(sd.span)
	if kv.asymFull() {
		sd.Flags |= b.asymClassify(sd.span, classes)
	} else if asymHere {
		sd.Flags |= SDAsymCPUCapacity
	}
	if sd.Flags&SDAsymCPUCapacity != 0 && child != nil {
		child.Flags &^= SDPreferSibling
	}
	if sd.Flags&SDAsymCPUCapacity != 0 && b.kv.asymBalanceWake() {
		sd.Flags |= SDBalanceWake
		for t := child; t != nil; t = t.Child {
			t.Flags |= SDBalanceWake
		}
	}
	switch {
	case sd.Flags&SDShareCPUCapacity != 0:
		sd.ImbalancePct = 110
	case sd.Flags&SDShareLLC != 0:
		sd.ImbalancePct = 117
		sd.CacheNiceTries = 1
	case sd.Flags&SDNUMA != 0:
		sd.CacheNiceTries = 2
		sd.Flags &^= SDPreferSibling
		sd.Flags |= SDSerialize
		if tl.Distance > 30 { // node_reclaim_distance (RECLAIM_DISTANCE)
			sd.Flags &^= SDBalanceExec | SDBalanceFork | SDWakeAffine
		}
	default:
		sd.CacheNiceTries = 1
	}
	return sd
}

// capacityClasses groups the CPUs by arch_scale_cpu_capacity (the
// asym_cap_list of asym_cpu_capacity_scan); nil when all are equal.
func (b *builder) capacityClasses() []cpuset {
	by := map[int]cpuset{}
	var caps []int
	for c := 0; c < b.m.n; c++ {
		k := b.m.capacity[c]
		if by[k] == nil {
			by[k] = newCPUSet(b.m.n)
			caps = append(caps, k)
		}
		by[k].set(c)
	}
	if len(caps) < 2 {
		return nil
	}
	sort.Ints(caps)
	out := make([]cpuset, len(caps))
	for i, k := range caps {
		out[i] = by[k]
	}
	return out
}

// asymClassify models asym_cpu_capacity_classify() (v5.14+).
func (b *builder) asymClassify(span cpuset, classes []cpuset) SDFlags {
	count, miss := 0, 0
	for _, cl := range classes {
		if span.intersects(cl) {
			count++
		} else if b.m.online.intersects(cl) {
			miss++
		}
	}
	if count < 2 {
		return 0
	}
	if miss > 0 {
		return SDAsymCPUCapacity
	}
	return SDAsymCPUCapacity | SDAsymCPUCapacityFull
}

// asymCPUCapacityLevel models the pre-v5.14 asym_cpu_capacity_level(): the
// lowest level at which every CPU sees a CPU of the highest capacity; only
// that level gets SD_ASYM_CPUCAPACITY. (Reconstructed, not read in a
// pre-5.14 source.)
func (b *builder) asymCPUCapacityLevel() int {
	m := b.m
	if b.capacityClasses() == nil {
		return -1
	}
	level := -1
	for _, i := range m.online.list() {
		maxCap := m.capacity[i]
		for li := range b.d.Levels {
			if li < level {
				continue
			}
			for _, j := range b.mask(li, i).and(m.online).list() {
				if m.capacity[j] > maxCap {
					maxCap = m.capacity[j]
					level = li
				}
			}
		}
	}
	return level
}

// buildGroups models build_sched_groups()/get_group(): the groups are the
// child-domain spans (single CPUs at the lowest level), shared by every CPU
// of the level and keyed by the first CPU of the child span.
func (b *builder) buildGroups(sd *SchedDomain, li int, rings map[string]*groupRing, shared map[int]*SchedGroup) {
	k := sd.span.key()
	if r, ok := rings[k]; ok {
		sd.groups = r
		return
	}
	r := &groupRing{of: map[int]int{}}
	for _, i := range sd.span.list() {
		if _, ok := r.of[i]; ok {
			continue
		}
		di := b.dom[li][i]
		var gspan cpuset
		var gflags SDFlags
		first := i
		if di != nil && di.Child != nil {
			gspan = di.Child.span
			gflags = di.Child.Flags
			first = gspan.first()
		} else {
			gspan = newCPUSet(b.m.n)
			gspan.set(i)
			gspan, _ = b.intern(gspan)
		}
		g, ok := shared[first]
		if !ok {
			g = b.newGroup(gspan, gspan, first, gflags)
			shared[first] = g
		}
		idx := len(r.groups)
		r.groups = append(r.groups, g)
		for _, x := range g.span.list() {
			if sd.span.has(x) {
				r.of[x] = idx
			}
		}
	}
	rings[k] = r
	sd.groups = r
}

func (b *builder) newGroup(span, mask cpuset, id int, flags SDFlags) *SchedGroup {
	_, sl := b.intern(span)
	_, ml := b.intern(mask)
	g := &SchedGroup{Span: sl, BalanceMask: ml, ID: id, Weight: len(sl), Flags: flags, span: span, mask: mask}
	g.MinCapacity = -1
	cores := map[int]bool{}
	for _, c := range sl {
		cp := b.m.capacity[c]
		g.Capacity += cp
		if g.MinCapacity < 0 || cp < g.MinCapacity {
			g.MinCapacity = cp
		}
		if cp > g.MaxCapacity {
			g.MaxCapacity = cp
		}
		cores[b.m.smt[c].first()] = true
	}
	g.Cores = len(cores)
	return g
}

// buildOverlapGroups models build_overlap_sched_groups(): for each CPU i
// of the span not yet covered (starting at the domain's CPU and wrapping),
// a group spanning the child domain of i's domain at this level (descending
// further when that child reaches outside the span), with a balance mask of
// the CPUs whose own child domain is exactly that group.
func (b *builder) buildOverlapGroups(sd *SchedDomain, li int) {
	covered := newCPUSet(b.m.n)
	for _, i := range sd.span.wrapOrder(sd.CPU) {
		if covered.has(i) {
			continue
		}
		sib := b.dom[li][i]
		if sib == nil || !sib.span.has(i) {
			continue
		}
		if sib.Child != nil && !sib.Child.span.subsetOf(sd.span) {
			sib = findDescendedSibling(sd, sib)
		}
		var gspan cpuset
		var gflags SDFlags
		if sib.Child != nil {
			gspan, gflags = sib.Child.span, sib.Child.Flags
		} else {
			gspan = sib.span
		}
		covered = covered.or(gspan)
		// build_balance_mask over the sibling's level.
		sibLevel := -1
		for l := range b.dom {
			if b.dom[l][sib.CPU] == sib {
				sibLevel = l
				break
			}
		}
		ck := fmt.Sprint(sibLevel, gflags, " ") + gspan.key()
		if g, ok := b.overlap[ck]; ok {
			cp := *g
			sd.own = append(sd.own, &cp)
			continue
		}
		mask := newCPUSet(b.m.n)
		for _, j := range gspan.list() {
			var sj *SchedDomain
			if sibLevel >= 0 {
				sj = b.dom[sibLevel][j]
			}
			if sj == nil || sj.Child == nil || !sj.Child.span.equal(gspan) {
				continue
			}
			mask.set(j)
		}
		if mask.empty() {
			b.warn("empty balance mask for group %s of cpu%d %s", gspan, sd.CPU, sd.Name)
			mask = gspan
		}
		mask, _ = b.intern(mask)
		g := b.newGroup(gspan, mask, mask.first(), gflags)
		b.overlap[ck] = g
		cp := *g
		sd.own = append(sd.own, &cp)
	}
}

func findDescendedSibling(sd, sib *SchedDomain) *SchedDomain {
	for sib.Child != nil && !sib.Child.span.subsetOf(sd.span) {
		sib = sib.Child
	}
	for sib.Child != nil && sib.Child.span.equal(sib.span) {
		sib = sib.Child
	}
	return sib
}

func (sd *SchedDomain) degenerate(kv KernelVersion) bool {
	if sd.SpanWeight == 1 {
		return true
	}
	if sd.Flags&needsGroups(kv) != 0 && sd.NrGroups() > 1 {
		return false
	}
	return sd.Flags&SDWakeAffine == 0
}

func parentDegenerate(sd, p *SchedDomain, kv KernelVersion, nrNodes int) bool {
	if p.degenerate(kv) {
		return true
	}
	if !sd.span.equal(p.span) {
		return false
	}
	pf := p.Flags
	if p.NrGroups() == 1 {
		if kv.flagsByName() {
			pf &^= needsGroups(kv)
		} else {
			pf &^= needsGroups(kv) | SDPreferSibling
			if nrNodes == 1 {
				pf &^= SDSerialize
			}
		}
	}
	return sd.Flags&pf == pf
}

// attach models cpu_attach_domain(): parents that add nothing are removed
// (their SD_PREFER_SIBLING moves down), then the base domain itself if it
// is degenerate. It returns the new base.
func (b *builder) attach(sd *SchedDomain) *SchedDomain {
	kv := b.kv
	for tmp := sd; tmp != nil; {
		p := tmp.Parent
		if p == nil {
			break
		}
		if parentDegenerate(tmp, p, kv, len(b.m.nodeIDs)) {
			tmp.Parent = p.Parent
			if p.Parent != nil {
				p.Parent.Child = tmp
				if kv.groupsFlagsFile() {
					// v6.6+: the parent's local group takes the flags of
					// its new child.
					if g := p.Parent.LocalGroup(); g != nil {
						g.Flags = tmp.Flags
					}
				}
			}
			if p.Flags&SDPreferSibling != 0 {
				tmp.Flags |= SDPreferSibling
			}
		} else {
			tmp = p
		}
	}
	if sd != nil && sd.degenerate(kv) {
		sd = sd.Parent
		if sd != nil {
			// The loop in the kernel clears only the first group.
			if g := sd.LocalGroup(); g != nil {
				g.Flags = 0
			}
			sd.Child = nil
		}
	}
	if sd != nil {
		sd.Child = nil
	}
	return sd
}

func highestFlagDomain(cd *CPUDomains, f SDFlags, stopAtFirstMiss bool) *SchedDomain {
	var h *SchedDomain
	for _, sd := range cd.Domains {
		if sd.Flags&f != 0 {
			h = sd
			continue
		}
		if stopAtFirstMiss {
			break
		}
	}
	return h
}

func lowestFlagDomain(cd *CPUDomains, f SDFlags) *SchedDomain {
	for _, sd := range cd.Domains {
		if sd.Flags&f != 0 {
			return sd
		}
	}
	return nil
}

// updateTopCacheDomain models update_top_cache_domain().
func (b *builder) updateTopCacheDomain(cd *CPUDomains) {
	if sd := highestFlagDomain(cd, SDShareLLC, true); sd != nil {
		cd.LLC, cd.LLCSize, cd.LLCID = sd, sd.SpanWeight, sd.Span[0]
	}
	cd.ShareID = cd.LLCID
	if b.kv.hasClusterFlag() {
		if sd := lowestFlagDomain(cd, SDCluster); sd != nil {
			cd.ShareID = sd.Span[0]
		}
	}
	cd.NUMA = lowestFlagDomain(cd, SDNUMA)
	// SD_ASYM_PACKING was SDF_SHARED_CHILD until ~v6.6 [~ver].
	cd.AsymPacking = highestFlagDomain(cd, SDAsymPacking, !b.kv.AtLeast(6, 6))
	if b.kv.asymFull() {
		cd.AsymCPUCapacity = lowestFlagDomain(cd, SDAsymCPUCapacityFull)
	} else {
		cd.AsymCPUCapacity = lowestFlagDomain(cd, SDAsymCPUCapacity)
	}
}
