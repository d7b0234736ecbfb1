package model

import (
	"fmt"
	"sort"
	"strings"
)

// Limits on untrusted input.
const (
	maxNodes    = 1024 // MAX_NUMNODES with NODES_SHIFT=10
	maxCaches   = 1 << 16
	maxDistance = 255 // node distances are 8-bit (DISTANCE_BITS)
)

// Validate checks that t is a usable description of a machine: CPU ids in
// range and matching their index, sibling lists that contain the CPU itself
// and agree between siblings, NUMA nodes that do not share CPUs, distances
// in the kernel's range (10..255, 10 on the diagonal) and capacities in
// 1..1024. The errors name the CPU or node and say what a good value is.
func (t *Topology) Validate() error {
	if t == nil {
		return fmt.Errorf("topology: none given")
	}
	if t.NrCPUs < 1 || t.NrCPUs > MaxCPUs {
		return fmt.Errorf("topology: %d CPUs; want 1..%d", t.NrCPUs, MaxCPUs)
	}
	if len(t.CPUs) != t.NrCPUs {
		return fmt.Errorf("topology: nr_cpus is %d but %d CPU entries are listed (want one entry per CPU id 0..%d)", t.NrCPUs, len(t.CPUs), t.NrCPUs-1)
	}
	online := 0
	n := t.NrCPUs
	// Canonical keys of the sibling lists, to compare them in O(size).
	keys := [4][]string{}
	for k := range keys {
		keys[k] = make([]string, n)
	}
	for i := range t.CPUs {
		c := &t.CPUs[i]
		if c.ID != i {
			return fmt.Errorf("topology: CPU entry %d has id %d (entries must be indexed by CPU id)", i, c.ID)
		}
		if c.Online {
			online++
		}
		if c.Capacity < 0 || c.Capacity > 1024 {
			return fmt.Errorf("topology: cpu%d capacity %d; want 1..1024 (1024 = the biggest CPU), or 0 for unknown", i, c.Capacity)
		}
		var sets [4]cpuset
		for k, l := range []struct {
			name string
			list []int
		}{{"thread_siblings", c.ThreadSiblings}, {"core_siblings", c.CoreSiblings}, {"die_siblings", c.DieSiblings}, {"cluster_siblings", c.ClusterSiblings}} {
			if len(l.list) == 0 {
				continue
			}
			if len(l.list) > n {
				return fmt.Errorf("topology: cpu%d %s lists %d CPUs, more than the %d CPUs", i, l.name, len(l.list), n)
			}
			for _, s := range l.list {
				if s < 0 || s >= n {
					return fmt.Errorf("topology: cpu%d %s %s names cpu%d, beyond the %d CPUs", i, l.name, FormatCPUList(l.list), s, n)
				}
			}
			sets[k] = cpusetOf(n, l.list)
			if !sets[k].has(i) {
				return fmt.Errorf("topology: cpu%d %s %s does not contain cpu%d itself", i, l.name, FormatCPUList(l.list), i)
			}
			keys[k][i] = sets[k].key()
		}
		if sets[0] != nil && sets[1] != nil && !sets[0].subsetOf(sets[1]) {
			return fmt.Errorf("topology: cpu%d thread siblings %s are not all in its package %s", i, FormatCPUList(c.ThreadSiblings), FormatCPUList(c.CoreSiblings))
		}
	}
	if online == 0 {
		return fmt.Errorf("topology: no CPU is online")
	}
	// Sibling lists must agree: if b is a thread sibling of a, a and b list
	// the same siblings. Checked once per distinct list.
	for k, name := range []string{"thread_siblings", "core_siblings"} {
		done := map[string]bool{}
		for i := range t.CPUs {
			key := keys[k][i]
			if key == "" || done[key] {
				continue
			}
			done[key] = true
			mine := t.CPUs[i].ThreadSiblings
			if k == 1 {
				mine = t.CPUs[i].CoreSiblings
			}
			for _, s := range mine {
				if o := keys[k][s]; o != "" && o != key {
					other := t.CPUs[s].ThreadSiblings
					if k == 1 {
						other = t.CPUs[s].CoreSiblings
					}
					return fmt.Errorf("topology: cpu%d %s %s but cpu%d has %s (siblings must list the same CPUs)", i, name, FormatCPUList(mine), s, FormatCPUList(other))
				}
			}
		}
	}
	if len(t.Nodes) > maxNodes {
		return fmt.Errorf("topology: %d NUMA nodes; at most %d", len(t.Nodes), maxNodes)
	}
	seenNode := map[int]bool{}
	owner := map[int]int{}
	maxID := -1
	for _, n := range t.Nodes {
		if n.ID < 0 || n.ID >= maxNodes {
			return fmt.Errorf("topology: node id %d; want 0..%d", n.ID, maxNodes-1)
		}
		if seenNode[n.ID] {
			return fmt.Errorf("topology: node%d listed twice", n.ID)
		}
		seenNode[n.ID] = true
		if n.ID > maxID {
			maxID = n.ID
		}
		for _, c := range n.CPUs {
			if c < 0 || c >= t.NrCPUs {
				return fmt.Errorf("topology: node%d cpus %s name cpu%d, beyond the %d CPUs", n.ID, FormatCPUList(n.CPUs), c, t.NrCPUs)
			}
			if o, dup := owner[c]; dup {
				return fmt.Errorf("topology: cpu%d is in node%d and node%d (a CPU belongs to one node)", c, o, n.ID)
			}
			owner[c] = n.ID
			if nc := t.CPUs[c].Node; nc >= 0 && nc != n.ID {
				return fmt.Errorf("topology: cpu%d says node %d but node%d lists it", c, nc, n.ID)
			}
		}
	}
	withRows := 0
	for _, n := range t.Nodes {
		if n.Distance != nil {
			withRows++
		}
	}
	if withRows > 0 && withRows < len(t.Nodes) {
		for _, n := range t.Nodes {
			if n.Distance == nil {
				return fmt.Errorf("topology: node%d has no distance row but other nodes have one; give every node's distances or none (then 10 local, 20 remote)", n.ID)
			}
		}
	}
	for _, n := range t.Nodes {
		if n.Distance == nil {
			continue
		}
		if len(n.Distance) <= maxID {
			return fmt.Errorf("topology: node%d distance row %v has %d entries; want one per node id 0..%d", n.ID, n.Distance, len(n.Distance), maxID)
		}
		for j, d := range n.Distance {
			if !seenNode[j] {
				continue
			}
			if d < 10 || d > maxDistance {
				return fmt.Errorf("topology: distance node%d->node%d is %d; want 10..%d (10 = local, 20 = typical remote)", n.ID, j, d, maxDistance)
			}
			if j == n.ID && d != 10 {
				return fmt.Errorf("topology: distance node%d->node%d is %d; a node's distance to itself must be 10", n.ID, j, d)
			}
			if j != n.ID && d == 10 {
				return fmt.Errorf("topology: distance node%d->node%d is 10, the local distance; remote nodes need > 10 (e.g. 20)", n.ID, j)
			}
		}
	}
	// The scheduler assumes symmetric distances (sched_init_numa warns
	// "Node-distance not symmetric"; its NUMA groups then do not cover the
	// domains).
	rows := map[int][]int{}
	for _, n := range t.Nodes {
		rows[n.ID] = n.Distance
	}
	for _, a := range t.Nodes {
		for _, b := range t.Nodes {
			if a.Distance != nil && b.Distance != nil && a.ID < b.ID && rows[a.ID][b.ID] != rows[b.ID][a.ID] {
				return fmt.Errorf("topology: node distances must be symmetric: node%d->node%d is %d but node%d->node%d is %d", a.ID, b.ID, rows[a.ID][b.ID], b.ID, a.ID, rows[b.ID][a.ID])
			}
		}
	}
	if len(t.Caches) > maxCaches {
		return fmt.Errorf("topology: %d cache entries; at most %d", len(t.Caches), maxCaches)
	}
	for _, c := range t.Caches {
		if c.Level < 1 || c.Level > 9 {
			return fmt.Errorf("topology: cache level %d; want 1..4", c.Level)
		}
		for _, x := range c.CPUs {
			if x < 0 || x >= t.NrCPUs {
				return fmt.Errorf("topology: L%d cache shared by %s names cpu%d, beyond the %d CPUs", c.Level, FormatCPUList(c.CPUs), x, t.NrCPUs)
			}
		}
	}
	return t.validatePerfDomains()
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]int(nil), a...)
	y := append([]int(nil), b...)
	sort.Ints(x)
	sort.Ints(y)
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// NormalizeArch maps an architecture name (as uname -m, perf's arch header
// or GOARCH spell it) to the topology table the model applies: "x86"
// (x86_64, amd64, i686; also the default for ""), "powerpc" (ppc64,
// ppc64le), "arm64" (aarch64), or the name itself for other architectures,
// which use the kernel's generic default_topology like arm64 does.
func NormalizeArch(a string) string {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "", "x86", "x86_64", "amd64", "i386", "i486", "i586", "i686", "x86-64":
		return "x86"
	case "arm64", "aarch64":
		return "arm64"
	case "powerpc", "ppc", "ppc64", "ppc64le", "power":
		return "powerpc"
	}
	return strings.ToLower(strings.TrimSpace(a))
}

// machine is the per-CPU view the domain builder needs, derived from the
// facts of a Topology (the kernel's topology masks).
type machine struct {
	n        int
	arch     string
	online   cpuset
	node     []int    // NUMA node per CPU
	nodeCPUs []cpuset // indexed by node id; nil for ids without CPUs
	nodeIDs  []int    // ids of nodes that have CPUs, ascending
	dist     [][]int  // [node][node]
	smt      []cpuset // per CPU: topology_sibling_cpumask
	pkg      []cpuset // topology_core_cpumask (package)
	cluster  []cpuset // cluster_cpus
	l2       []cpuset // CPUs sharing the L2 (x86 cpu_l2c_shared_mask)
	llc      []cpuset // CPUs sharing the last-level cache
	hasLLC   []bool   // llc came from cache facts (not a fallback)
	capacity []int
}

func (t *Topology) machine() *machine {
	n := t.NrCPUs
	m := &machine{n: n, arch: NormalizeArch(t.Arch)}
	m.online = newCPUSet(n)
	all := newCPUSet(n)
	for i := 0; i < n; i++ {
		all.set(i)
		if t.CPUs[i].Online {
			m.online.set(i)
		}
	}
	intern := map[string]cpuset{}
	share := func(s cpuset) cpuset {
		k := s.key()
		if e, ok := intern[k]; ok {
			return e
		}
		intern[k] = s
		return s
	}
	single := func(i int) cpuset { s := newCPUSet(n); s.set(i); return share(s) }
	// NUMA nodes.
	m.node = make([]int, n)
	for i := range m.node {
		m.node[i] = -1
	}
	maxNode := 0
	for _, nd := range t.Nodes {
		if nd.ID > maxNode {
			maxNode = nd.ID
		}
		for _, c := range nd.CPUs {
			m.node[c] = nd.ID
		}
	}
	for i, c := range t.CPUs {
		if m.node[i] < 0 && c.Node >= 0 && c.Node < maxNodes {
			m.node[i] = c.Node
			if c.Node > maxNode {
				maxNode = c.Node
			}
		}
	}
	for i := range m.node {
		if m.node[i] < 0 {
			m.node[i] = 0
		}
	}
	m.nodeCPUs = make([]cpuset, maxNode+1)
	for i := 0; i < n; i++ {
		nd := m.node[i]
		if m.nodeCPUs[nd] == nil {
			m.nodeCPUs[nd] = newCPUSet(n)
		}
		m.nodeCPUs[nd].set(i)
	}
	for id, s := range m.nodeCPUs {
		if s != nil {
			m.nodeCPUs[id] = share(s)
			m.nodeIDs = append(m.nodeIDs, id)
		}
	}
	m.dist = make([][]int, maxNode+1)
	for a := range m.dist {
		m.dist[a] = make([]int, maxNode+1)
		for b := range m.dist[a] {
			if a == b {
				m.dist[a][b] = 10
			} else {
				m.dist[a][b] = 20 // REMOTE_DISTANCE, the kernel's default without a SLIT
			}
		}
	}
	for _, nd := range t.Nodes {
		for b, d := range nd.Distance {
			if b <= maxNode {
				m.dist[nd.ID][b] = d
			}
		}
	}
	fromList := func(l []int, i int) cpuset {
		if len(l) == 0 {
			return nil
		}
		return share(cpusetOf(n, l))
	}
	byID := func(i int, same func(a, b *CPU) bool) cpuset {
		s := newCPUSet(n)
		for j := range t.CPUs {
			if same(&t.CPUs[i], &t.CPUs[j]) {
				s.set(j)
			}
		}
		return share(s)
	}
	m.smt = make([]cpuset, n)
	m.pkg = make([]cpuset, n)
	m.cluster = make([]cpuset, n)
	m.l2 = make([]cpuset, n)
	m.llc = make([]cpuset, n)
	m.hasLLC = make([]bool, n)
	m.capacity = make([]int, n)
	// Caches: per CPU the L2 and the highest level data/unified cache.
	type best struct {
		level int
		set   cpuset
	}
	llcOf := make([]best, n)
	l2Of := make([]cpuset, n)
	for _, c := range t.Caches {
		if c.Type == "Instruction" || len(c.CPUs) == 0 {
			continue
		}
		s := share(cpusetOf(n, c.CPUs))
		for _, x := range c.CPUs {
			if x < 0 || x >= n {
				continue
			}
			if c.Level > llcOf[x].level {
				llcOf[x] = best{c.Level, s}
			}
			if c.Level == 2 {
				l2Of[x] = s
			}
		}
	}
	for i := 0; i < n; i++ {
		c := &t.CPUs[i]
		m.capacity[i] = c.Capacity
		if m.capacity[i] <= 0 {
			m.capacity[i] = 1024
		}
		if s := fromList(c.ThreadSiblings, i); s != nil {
			m.smt[i] = s
		} else if c.CoreID >= 0 && c.PackageID >= 0 {
			m.smt[i] = byID(i, func(a, b *CPU) bool {
				return a.PackageID == b.PackageID && a.DieID == b.DieID && a.CoreID == b.CoreID && a.Node == b.Node
			})
		} else {
			m.smt[i] = single(i)
		}
		if s := fromList(c.CoreSiblings, i); s != nil {
			m.pkg[i] = s
		} else if c.PackageID >= 0 {
			m.pkg[i] = byID(i, func(a, b *CPU) bool { return a.PackageID == b.PackageID })
		} else {
			m.pkg[i] = share(all)
		}
		m.l2[i] = l2Of[i]
		if m.l2[i] == nil {
			m.l2[i] = m.smt[i]
		}
		if s := fromList(c.ClusterSiblings, i); s != nil {
			m.cluster[i] = s
		} else if c.ClusterID >= 0 {
			m.cluster[i] = byID(i, func(a, b *CPU) bool { return a.PackageID == b.PackageID && a.ClusterID == b.ClusterID })
		} else if m.arch == "x86" {
			m.cluster[i] = m.l2[i]
		} else {
			m.cluster[i] = m.smt[i]
		}
		if llcOf[i].set != nil {
			m.llc[i] = llcOf[i].set
			m.hasLLC[i] = true
		} else {
			m.llc[i] = m.pkg[i]
		}
	}
	return m
}

// validated returns t if it is valid, else only the error: callers never
// get a topology that failed validation.
func validated(t *Topology) (*Topology, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}
