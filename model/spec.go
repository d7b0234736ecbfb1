package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SpecHelp describes the --topology syntax in one paragraph, for flag usage
// strings and error messages.
const SpecHelp = `a compact spec such as sockets=2,cores=10,threads=2 (optional numa=N, dies=N, clusters=N, llc=socket|die|cluster|node|core|N, distance=D or 10:20/20:10, capacity=0-3:446/4-7:1024, numbering=adjacent|interleaved, arch=x86|arm64|powerpc), a preset name (` + "%s" + `), or a file: lscpu -p output, a copy of /sys/devices/system/cpu (directory, .tar or .tar.gz), a sysfs dump ("path: value" lines) or a topology .json`

// SpecUsage is SpecHelp with the preset names filled in.
func SpecUsage() string { return fmt.Sprintf(SpecHelp, strings.Join(PresetNames(), ", ")) }

// ErrNoTopology is returned (wrapped) by Resolve when neither the trace nor
// the user gave a topology.
var ErrNoTopology = errors.New("no CPU topology")

// ParseSpec builds a Topology from a --topology value:
//
//   - a compact spec: comma-separated key=value items
//     sockets=N    packages (default 1)
//     cores=N      cores per socket (default 1)
//     threads=N    hardware threads per core (default 1)
//     dies=N       dies per socket (cores split evenly; default 1)
//     clusters=N   clusters per socket (cores split evenly; each cluster
//     shares an L2 and is the kernel's cluster; default: none)
//     numa=N       NUMA nodes: N <= sockets splits the sockets evenly, N >
//     sockets splits each socket (NUMA inside the package)
//     llc=X        what shares the last-level cache: socket (default), die,
//     cluster, node, core, or a number of cores
//     distance=X   node distances: one number for every remote pair
//     (distance=32) or the full matrix, rows separated by '/',
//     entries by ':' (distance=10:20:30/20:10:20/30:20:10); the
//     default is 10 local, 20 remote
//     capacity=X   CPU capacities (1..1024): one number for all, or
//     cpulist:capacity items separated by '/'
//     (capacity=0-3:446/4-7:1024)
//     numbering=X  adjacent (default: a core's threads have consecutive
//     ids, as QEMU numbers them) or interleaved (cpu i and
//     i+N/threads are siblings, as most x86 servers number them)
//     arch=X       x86 (default), arm64 or powerpc: which kernel topology
//     table applies
//   - a preset name (see Presets), optionally followed by distance=,
//     capacity= or arch= modifiers: "epyc2-2s64c,distance=12";
//   - a file or directory: `lscpu -p` output, a copy of
//     /sys/devices/system/cpu (directory, .tar, .tar.gz; a node directory
//     beside it is read too), a text dump of sysfs files ("path: value"
//     lines or "== path" blocks, e.g. a fixture info/ directory holding
//     cpu_topology_sysfs.txt and numa_nodes.txt), or a Topology in JSON.
//     Modifiers may follow the path after a comma.
func ParseSpec(spec string) (*Topology, error) {
	base, mods, err := splitSpec(spec)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, fmt.Errorf("topology spec %q only modifies a topology (%s); add the machine's shape (sockets=1,cores=8,threads=2), a preset name or a file", spec, strings.Join(modKeys(mods), ", "))
	}
	t, err := base()
	if err != nil {
		return nil, err
	}
	if err := applyModifiers(t, mods); err != nil {
		return nil, err
	}
	return validated(t)
}

// Resolve returns the topology to use: the one the spec describes, or the
// trace's (fromTrace, may be nil) completed and adjusted by the spec's
// modifiers (distance=, capacity=, arch=) when the spec has only those.
// Without either it fails with an error wrapping ErrNoTopology that says how
// to give one.
func Resolve(spec string, fromTrace *Topology) (*Topology, error) {
	spec = strings.TrimSpace(spec)
	var tr *Topology
	if fromTrace != nil && (fromTrace.NrCPUs > 0 || len(fromTrace.CPUs) > 0) {
		tr = normalize(fromTrace)
	}
	if spec == "" {
		if tr == nil {
			return nil, fmt.Errorf("%w: the trace does not record the CPU topology; give one with --topology, e.g. --topology sockets=1,cores=8,threads=2, a preset (%s) or an lscpu -p file", ErrNoTopology, strings.Join(PresetNames(), ", "))
		}
		if err := tr.Validate(); err != nil {
			return nil, fmt.Errorf("the trace's CPU topology is unusable (%v); override it with --topology, e.g. --topology sockets=1,cores=8,threads=2", err)
		}
		return tr, nil
	}
	base, mods, err := splitSpec(spec)
	if err != nil {
		return nil, err
	}
	var t *Topology
	if base != nil {
		if t, err = base(); err != nil {
			return nil, err
		}
		if tr != nil && tr.NrCPUs > t.NrCPUs {
			return nil, fmt.Errorf("--topology %q describes %d CPUs but the trace has %d; give a topology with at least %d CPUs", spec, t.NrCPUs, tr.NrCPUs, tr.NrCPUs)
		}
	} else {
		if tr == nil {
			return nil, fmt.Errorf("%w: --topology %q only modifies a topology and the trace records none; add the shape, e.g. sockets=1,cores=8,threads=2,%s", ErrNoTopology, spec, spec)
		}
		t = tr
	}
	if err := applyModifiers(t, mods); err != nil {
		return nil, err
	}
	return validated(t)
}

// normalize returns a copy of t with CPUs indexed by id, NrCPUs covering
// them, unknown ids -1 and, if the source marked no CPU online, all CPUs
// online (perf.data records only the online CPUs' topology).
func normalize(in *Topology) *Topology {
	t := cloneTopology(in)
	n := t.NrCPUs
	for _, c := range t.CPUs {
		if c.ID+1 > n {
			n = c.ID + 1
		}
	}
	if n > MaxCPUs || n < 0 {
		return t // Validate reports it
	}
	cpus := make([]CPU, n)
	for i := range cpus {
		cpus[i] = CPU{ID: i, CoreID: -1, PackageID: -1, DieID: -1, ClusterID: -1, Node: -1}
	}
	have := make([]bool, n)
	for _, c := range t.CPUs {
		if c.ID >= 0 && c.ID < n {
			cpus[c.ID] = c
			have[c.ID] = true
		}
	}
	anyOnline := false
	for _, c := range cpus {
		anyOnline = anyOnline || c.Online
	}
	if !anyOnline {
		for i := range cpus {
			cpus[i].Online = have[i]
		}
	}
	t.CPUs, t.NrCPUs = cpus, n
	return t
}

// cloneTopology deep-copies t, keeping slices that t shares between CPUs
// shared in the copy (so memory stays linear in the number of CPUs).
func cloneTopology(t *Topology) *Topology {
	c := *t
	copies := map[*int][]int{}
	cp := func(l []int) []int {
		if len(l) == 0 {
			return l
		}
		if d, ok := copies[&l[0]]; ok && len(d) == len(l) {
			return d
		}
		d := append([]int(nil), l...)
		copies[&l[0]] = d
		return d
	}
	c.CPUs = append([]CPU(nil), t.CPUs...)
	for i := range c.CPUs {
		x := &c.CPUs[i]
		x.ThreadSiblings, x.CoreSiblings = cp(x.ThreadSiblings), cp(x.CoreSiblings)
		x.DieSiblings, x.ClusterSiblings = cp(x.DieSiblings), cp(x.ClusterSiblings)
	}
	c.Caches = append([]Cache(nil), t.Caches...)
	for i := range c.Caches {
		c.Caches[i].CPUs = cp(c.Caches[i].CPUs)
	}
	c.Nodes = append([]Node(nil), t.Nodes...)
	for i := range c.Nodes {
		c.Nodes[i].CPUs = cp(c.Nodes[i].CPUs)
		c.Nodes[i].Distance = append([]int(nil), c.Nodes[i].Distance...)
		if t.Nodes[i].Distance == nil {
			c.Nodes[i].Distance = nil
		}
	}
	return &c
}

type modifier struct{ key, val string }

func modKeys(m []modifier) []string {
	var out []string
	for _, x := range m {
		out = append(out, x.key+"=")
	}
	return out
}

var shapeKeys = map[string]bool{"sockets": true, "cores": true, "threads": true, "dies": true, "clusters": true, "numa": true, "llc": true, "numbering": true}
var modifierKeys = map[string]bool{"distance": true, "capacity": true, "arch": true}

// splitSpec separates a spec into a constructor for its base topology (nil
// when the spec only has modifiers) and its modifiers.
func splitSpec(spec string) (func() (*Topology, error), []modifier, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil, fmt.Errorf("empty topology spec; want %s", SpecUsage())
	}
	if len(spec) > 1<<16 {
		return nil, nil, fmt.Errorf("topology spec is %d bytes long; at most 65536", len(spec))
	}
	// A path, possibly followed by ",key=value" modifiers.
	pathPart, rest := spec, ""
	if i := strings.Index(spec, ","); i >= 0 && !strings.Contains(spec[:i], "=") {
		pathPart, rest = spec[:i], spec[i+1:]
	}
	var base func() (*Topology, error)
	items := strings.Split(spec, ",")
	if !strings.Contains(pathPart, "=") {
		if _, err := os.Stat(pathPart); err == nil {
			p := pathPart
			base = func() (*Topology, error) { return ReadTopologyFile(p) }
		} else if p := presets[strings.ToLower(pathPart)]; p != nil {
			name := strings.ToLower(pathPart)
			base = func() (*Topology, error) { return buildPreset(name) }
		} else {
			return nil, nil, fmt.Errorf("topology %q is neither a preset (%s) nor an existing file, nor key=value items like sockets=1,cores=8,threads=2", pathPart, strings.Join(PresetNames(), ", "))
		}
		items = nil
		if rest != "" {
			items = strings.Split(rest, ",")
		}
	}
	var mods []modifier
	shape := map[string]string{}
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		k, v, ok := strings.Cut(it, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, nil, fmt.Errorf("topology spec item %q: want key=value, e.g. cores=8", it)
		}
		switch {
		case modifierKeys[k]:
			mods = append(mods, modifier{k, v})
		case shapeKeys[k]:
			if base != nil {
				return nil, nil, fmt.Errorf("topology spec item %q: a preset or file fixes the machine's shape; only distance=, capacity= and arch= may follow it", it)
			}
			if _, dup := shape[k]; dup {
				return nil, nil, fmt.Errorf("topology spec: %s= given twice", k)
			}
			shape[k] = v
		default:
			return nil, nil, fmt.Errorf("topology spec item %q: unknown key %q; known keys: sockets, cores, threads, dies, clusters, numa, llc, numbering, distance, capacity, arch", it, k)
		}
	}
	if base == nil && len(shape) > 0 {
		base = func() (*Topology, error) { return compactTopology(shape, spec) }
	}
	return base, mods, nil
}

// ReadTopologyFile reads a topology from a file or directory: lscpu -p
// output, a sysfs copy (directory, .tar, .tar.gz), a sysfs text dump, a
// directory of such dumps (cpu_topology_sysfs.txt, numa_nodes.txt,
// lscpu-p.txt) or a Topology JSON file.
func ReadTopologyFile(path string) (*Topology, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		// A folder of text dumps (like the fixtures' info/).
		dump := filepath.Join(path, "cpu_topology_sysfs.txt")
		if _, err := os.Stat(dump); err == nil {
			f := sysfsFiles{}
			for _, name := range []string{"cpu_topology_sysfs.txt", "numa_nodes.txt"} {
				b, err := readLimited(filepath.Join(path, name), maxSysfsTotal)
				if err != nil {
					continue
				}
				if err := readSysfsDump(bytes.NewReader(b), f); err != nil {
					return nil, fmt.Errorf("%s: %v", filepath.Join(path, name), err)
				}
			}
			return topologyFromSysfs(f, "sysfs dump "+path)
		}
		if _, err := os.Stat(filepath.Join(path, "lscpu-p.txt")); err == nil {
			return ReadTopologyFile(filepath.Join(path, "lscpu-p.txt"))
		}
		f, err := readSysfsDir(path)
		if err != nil {
			return nil, err
		}
		return topologyFromSysfs(f, "sysfs "+path)
	}
	if st.Size() > maxSysfsTotal {
		return nil, fmt.Errorf("%s: %d bytes; a topology file is at most %d", path, st.Size(), maxSysfsTotal)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	lower := strings.ToLower(path)
	switch {
	case strings.HasSuffix(lower, ".tar.gz") || strings.HasSuffix(lower, ".tgz"):
		f, err := readSysfsTar(fh, true)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		return topologyFromSysfs(f, "sysfs "+path)
	case strings.HasSuffix(lower, ".tar"):
		f, err := readSysfsTar(fh, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		return topologyFromSysfs(f, "sysfs "+path)
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxSysfsTotal))
	if err != nil {
		return nil, err
	}
	t, err := ParseTopologyBytes(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if t.Source == "lscpu -p" || strings.HasPrefix(t.Source, "sysfs") {
		t.Source += " " + path
	}
	return t, nil
}

// ParseTopologyBytes recognises the content of a topology file: JSON
// (starts with '{'), lscpu -p output (a '# CPU,...' header), or a sysfs
// text dump (mentions devices/system/cpu or devices/system/node).
func ParseTopologyBytes(b []byte) (*Topology, error) {
	trim := bytes.TrimSpace(b)
	switch {
	case len(trim) > 0 && trim[0] == '{':
		var t Topology
		dec := json.NewDecoder(bytes.NewReader(trim))
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("topology JSON: %v", err)
		}
		if t.NrCPUs > MaxCPUs || len(t.CPUs) > MaxCPUs {
			return nil, fmt.Errorf("topology JSON: more than %d CPUs", MaxCPUs)
		}
		nt := normalize(&t)
		return nt, nt.Validate()
	case bytes.Contains(b, []byte("# CPU,")) || bytes.Contains(b, []byte("#CPU,")):
		return ParseLscpu(bytes.NewReader(b))
	case bytes.Contains(b, []byte("devices/system/cpu/")) || bytes.Contains(b, []byte("devices/system/node/")):
		f := sysfsFiles{}
		if err := readSysfsDump(bytes.NewReader(b), f); err != nil {
			return nil, err
		}
		return topologyFromSysfs(f, "sysfs dump")
	}
	return nil, fmt.Errorf("not a topology file: want lscpu -p output (with its '# CPU,Core,Socket,...' header), a copy of /sys/devices/system/cpu (directory, .tar or .tar.gz), a sysfs dump ('sys/devices/system/cpu/cpu0/topology/core_id: 0' lines) or a topology .json")
}

func specInt(shape map[string]string, key string, def, max int) (int, error) {
	v, ok := shape[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("topology spec %s=%s: want a whole number 1..%d", key, v, max)
	}
	return n, nil
}

// compactTopology builds the machine a compact spec describes.
func compactTopology(shape map[string]string, spec string) (*Topology, error) {
	sockets, err := specInt(shape, "sockets", 1, MaxCPUs)
	if err != nil {
		return nil, err
	}
	cores, err := specInt(shape, "cores", 1, MaxCPUs)
	if err != nil {
		return nil, err
	}
	threads, err := specInt(shape, "threads", 1, 64)
	if err != nil {
		return nil, err
	}
	dies, err := specInt(shape, "dies", 1, MaxCPUs)
	if err != nil {
		return nil, err
	}
	clusters, err := specInt(shape, "clusters", 0, MaxCPUs)
	if err != nil {
		return nil, err
	}
	if sockets*cores > MaxCPUs || sockets*cores*threads > MaxCPUs {
		return nil, fmt.Errorf("topology spec %q: %d x %d x %d CPUs; at most %d", spec, sockets, cores, threads, MaxCPUs)
	}
	if cores%dies != 0 {
		return nil, fmt.Errorf("topology spec dies=%d: must divide cores=%d (cores per socket)", dies, cores)
	}
	if clusters > 0 && cores%clusters != 0 {
		return nil, fmt.Errorf("topology spec clusters=%d: must divide cores=%d (cores per socket)", clusters, cores)
	}
	if clusters > 0 && clusters%dies != 0 && dies%clusters != 0 {
		return nil, fmt.Errorf("topology spec clusters=%d dies=%d: clusters must nest in dies (one must divide the other)", clusters, dies)
	}
	numa, err := specInt(shape, "numa", 1, maxNodes)
	if err != nil {
		return nil, err
	}
	totalCores := sockets * cores
	var coresPerNode int
	switch {
	case numa <= sockets:
		if sockets%numa != 0 {
			return nil, fmt.Errorf("topology spec numa=%d: must divide sockets=%d, or be a multiple of it that divides the cores", numa, sockets)
		}
		coresPerNode = totalCores / numa
	default:
		if numa%sockets != 0 || cores%(numa/sockets) != 0 {
			return nil, fmt.Errorf("topology spec numa=%d: with %d sockets of %d cores, nodes inside a socket must split its cores evenly (numa = sockets x k, k dividing cores)", numa, sockets, cores)
		}
		coresPerNode = cores / (numa / sockets)
	}
	coresPerDie := cores / dies
	coresPerCluster := 0
	if clusters > 0 {
		coresPerCluster = cores / clusters
	}
	llcCores := cores
	if v, ok := shape["llc"]; ok {
		switch strings.ToLower(v) {
		case "socket", "package":
			llcCores = cores
		case "die":
			llcCores = coresPerDie
		case "cluster":
			if clusters == 0 {
				return nil, fmt.Errorf("topology spec llc=cluster needs clusters=N")
			}
			llcCores = coresPerCluster
		case "node":
			llcCores = coresPerNode
			if coresPerNode > cores {
				llcCores = cores
			}
		case "core":
			llcCores = 1
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || cores%n != 0 {
				return nil, fmt.Errorf("topology spec llc=%s: want socket, die, cluster, node, core or a number of cores dividing cores=%d (e.g. llc=4 for one LLC per 4 cores)", v, cores)
			}
			llcCores = n
		}
	}
	interleaved := false
	if v, ok := shape["numbering"]; ok {
		switch strings.ToLower(v) {
		case "adjacent", "linear":
		case "interleaved", "interleave", "smt-last":
			interleaved = true
		default:
			return nil, fmt.Errorf("topology spec numbering=%s: want adjacent (siblings 0,1) or interleaved (cpu i and i+N/threads are siblings)", v)
		}
	}
	n := totalCores * threads
	t := &Topology{Source: "spec " + spec, NrCPUs: n, NrCPUsOnline: n}
	t.CPUs = make([]CPU, n)
	// cpuOf maps (global core, thread) to a CPU id.
	cpuOf := func(gc, th int) int {
		if interleaved {
			return th*totalCores + gc
		}
		return gc*threads + th
	}
	// group returns the CPUs of the size-core group holding global core gc
	// (within its socket); one shared slice per group keeps memory linear.
	groups := map[[2]int][]int{}
	group := func(gc int, size int) []int {
		s := gc / cores
		local := gc % cores
		start := s*cores + local/size*size
		if g, ok := groups[[2]int{start, size}]; ok {
			return g
		}
		var out []int
		for c := start; c < start+size; c++ {
			for th := 0; th < threads; th++ {
				out = append(out, cpuOf(c, th))
			}
		}
		sort.Ints(out)
		groups[[2]int{start, size}] = out
		return out
	}
	nodeOf := func(gc int) int { return gc / coresPerNode }
	for gc := 0; gc < totalCores; gc++ {
		s := gc / cores
		local := gc % cores
		thr := group(gc, 1)
		pkg := group(gc, cores)
		die := group(gc, coresPerDie)
		var cl []int
		clID := -1
		if clusters > 0 {
			cl = group(gc, coresPerCluster)
			clID = local / coresPerCluster
		}
		for th := 0; th < threads; th++ {
			id := cpuOf(gc, th)
			t.CPUs[id] = CPU{ID: id, Online: true, CoreID: local, PackageID: s, DieID: local / coresPerDie,
				ClusterID: clID, Node: -1, ThreadSiblings: thr, CoreSiblings: pkg, DieSiblings: die, ClusterSiblings: cl}
			if numa > 1 {
				t.CPUs[id].Node = nodeOf(gc)
			}
		}
	}
	// Caches: L1d/L1i per core, L2 per cluster (or core), LLC per llc group
	// (L3 unless it coincides with the L2).
	type cacheKey struct {
		level int
		typ   string
		first *int // group slices are shared, so the pointer names the group
	}
	seen := map[cacheKey]bool{}
	addCache := func(level int, typ string, cpus []int) {
		k := cacheKey{level, typ, &cpus[0]}
		if !seen[k] {
			seen[k] = true
			t.Caches = append(t.Caches, Cache{Level: level, Type: typ, CPUs: cpus})
		}
	}
	l2Cores := 1
	if clusters > 0 {
		l2Cores = coresPerCluster
	}
	for gc := 0; gc < totalCores; gc++ {
		addCache(1, "Data", group(gc, 1))
		addCache(1, "Instruction", group(gc, 1))
	}
	for gc := 0; gc < totalCores; gc++ {
		if l2Cores <= llcCores {
			addCache(2, "Unified", group(gc, l2Cores))
		}
	}
	if llcCores != l2Cores {
		for gc := 0; gc < totalCores; gc++ {
			addCache(3, "Unified", group(gc, llcCores))
		}
	}
	if numa > 1 {
		for nd := 0; nd < numa; nd++ {
			var cpus []int
			for gc := nd * coresPerNode; gc < (nd+1)*coresPerNode; gc++ {
				cpus = append(cpus, group(gc, 1)...)
			}
			sort.Ints(cpus)
			t.Nodes = append(t.Nodes, Node{ID: nd, CPUs: cpus})
		}
	}
	return t, nil
}

// applyModifiers applies distance=, capacity= and arch= to t.
func applyModifiers(t *Topology, mods []modifier) error {
	for _, m := range mods {
		switch m.key {
		case "arch":
			a := NormalizeArch(m.val)
			if a != "x86" && a != "arm64" && a != "powerpc" && a != "riscv64" && a != "generic" {
				return fmt.Errorf("topology spec arch=%s: want x86, arm64, powerpc, riscv64 or generic (the kernel's default_topology)", m.val)
			}
			t.Arch = a
		case "capacity":
			if err := applyCapacity(t, m.val); err != nil {
				return err
			}
		case "distance":
			if err := applyDistance(t, m.val); err != nil {
				return err
			}
		}
	}
	return nil
}

func applyCapacity(t *Topology, v string) error {
	bad := func(why string) error {
		return fmt.Errorf("topology spec capacity=%s: %s; want one number 1..1024 for every CPU or cpulist:capacity items separated by '/', e.g. capacity=0-3:446/4-7:1024", v, why)
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 1 || n > 1024 {
			return bad(fmt.Sprintf("%d is out of range", n))
		}
		for i := range t.CPUs {
			t.CPUs[i].Capacity = n
		}
		return nil
	}
	for _, item := range strings.Split(v, "/") {
		l, c, ok := strings.Cut(item, ":")
		if !ok {
			return bad(fmt.Sprintf("item %q has no ':'", item))
		}
		cpus, err := ParseCPUList(l)
		if err != nil {
			return bad(err.Error())
		}
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 1024 {
			return bad(fmt.Sprintf("capacity %q is not 1..1024", c))
		}
		for _, x := range cpus {
			if x >= t.NrCPUs {
				return bad(fmt.Sprintf("cpu%d is beyond the %d CPUs", x, t.NrCPUs))
			}
			t.CPUs[x].Capacity = n
		}
	}
	return nil
}

func applyDistance(t *Topology, v string) error {
	if len(t.Nodes) < 2 {
		return fmt.Errorf("topology spec distance=%s: the topology has %d NUMA node(s); distances need numa=2 or more", v, len(t.Nodes))
	}
	ids := make([]int, len(t.Nodes))
	maxID := 0
	for i, n := range t.Nodes {
		ids[i] = n.ID
		if n.ID > maxID {
			maxID = n.ID
		}
	}
	bad := func(why string) error {
		return fmt.Errorf("topology spec distance=%s: %s; want one remote distance (distance=20) or a %dx%d matrix, rows separated by '/' and entries by ':' (e.g. distance=10:20/20:10)", v, why, len(ids), len(ids))
	}
	row := func() []int {
		r := make([]int, maxID+1)
		for j := range r {
			r[j] = 255
		}
		return r
	}
	if d, err := strconv.Atoi(v); err == nil {
		if d <= 10 || d > maxDistance {
			return bad(fmt.Sprintf("%d is not 11..%d", d, maxDistance))
		}
		for i := range t.Nodes {
			r := row()
			for _, j := range ids {
				r[j] = d
			}
			r[t.Nodes[i].ID] = 10
			t.Nodes[i].Distance = r
		}
		return nil
	}
	rows := strings.Split(v, "/")
	if len(rows) != len(ids) {
		return bad(fmt.Sprintf("%d rows for %d nodes", len(rows), len(ids)))
	}
	mat := make([][]int, len(rows))
	for i, rs := range rows {
		cells := strings.Split(rs, ":")
		if len(cells) != len(ids) {
			return bad(fmt.Sprintf("row %d has %d entries for %d nodes", i+1, len(cells), len(ids)))
		}
		for _, c := range cells {
			d, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil || d < 10 || d > maxDistance {
				return bad(fmt.Sprintf("%q is not a distance 10..%d", c, maxDistance))
			}
			mat[i] = append(mat[i], d)
		}
	}
	for i := range t.Nodes {
		r := row()
		for j, id := range ids {
			r[id] = mat[i][j]
		}
		t.Nodes[i].Distance = r
	}
	return nil
}
