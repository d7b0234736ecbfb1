package model

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Limits on what a sysfs copy may hold.
const (
	maxSysfsFiles    = 1 << 20
	maxSysfsFileSize = 64 << 10
	maxSysfsTotal    = 256 << 20
)

// sysfsFiles maps normalised paths ("cpu/cpu0/topology/core_id",
// "cpu/online", "node/node1/distance") to file contents.
type sysfsFiles map[string]string

var (
	reCPUDir  = regexp.MustCompile(`^cpu\d+$`)
	reNodeDir = regexp.MustCompile(`^node\d+$`)
)

// normSysfsPath maps any path that contains .../cpu/cpuN/... or
// .../node/nodeN/... (or a tree rooted at the cpu directory itself) to the
// normalised key, or "" for files the model does not use.
func normSysfsPath(p string) string {
	p = filepath.ToSlash(p)
	comps := strings.Split(strings.Trim(p, "/"), "/")
	for i, c := range comps {
		switch {
		case reCPUDir.MatchString(c):
			return wantedSysfs("cpu/" + strings.Join(comps[i:], "/"))
		case reNodeDir.MatchString(c):
			return wantedSysfs("node/" + strings.Join(comps[i:], "/"))
		case c == "cpu" && i+1 < len(comps) && (comps[i+1] == "online" || comps[i+1] == "possible"):
			return wantedSysfs("cpu/" + comps[i+1])
		}
	}
	if len(comps) == 1 && (comps[0] == "online" || comps[0] == "possible") {
		return "cpu/" + comps[0]
	}
	return ""
}

var wantedRe = regexp.MustCompile(`^(cpu/(online|possible)|cpu/cpu\d+/(online|cpu_capacity|topology/[a-z_]+|cache/index\d+/(level|type|size|shared_cpu_list|shared_cpu_map|coherency_line_size|number_of_sets|ways_of_associativity))|node/node\d+/(cpulist|distance|meminfo))$`)

func wantedSysfs(k string) string {
	if wantedRe.MatchString(k) {
		return k
	}
	return ""
}

func (f sysfsFiles) add(path, content string) error {
	k := normSysfsPath(path)
	if k == "" {
		return nil
	}
	if len(f) >= maxSysfsFiles {
		return fmt.Errorf("more than %d sysfs files", maxSysfsFiles)
	}
	f[k] = strings.TrimSpace(content)
	return nil
}

// readSysfsDir collects the topology, cache and node files of a copy of
// /sys/devices/system/cpu. dir may be that cpu directory or a directory
// above it (system, devices, sys or the root of a copied tree); the node
// directory beside the cpu directory is read too.
func readSysfsDir(dir string) (sysfsFiles, error) {
	cpuDir := ""
	for _, c := range []string{"", "cpu", "system/cpu", "devices/system/cpu", "sys/devices/system/cpu"} {
		p := filepath.Join(dir, c)
		if m, _ := filepath.Glob(filepath.Join(p, "cpu[0-9]*")); len(m) > 0 {
			cpuDir = p
			break
		}
	}
	if cpuDir == "" {
		return nil, fmt.Errorf("%s: no cpuN directories (want a copy of /sys/devices/system/cpu, or a folder holding sys/devices/system/cpu)", dir)
	}
	f := sysfsFiles{}
	total := 0
	walk := func(root, prefix string) error {
		return filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if p == root {
					return err
				}
				return nil // unreadable entries are skipped, as lscpu does
			}
			rel, _ := filepath.Rel(root, p)
			if de.IsDir() {
				// Do not descend into irrelevant big trees.
				base := de.Name()
				if p != root && (base == "cpufreq" || base == "cpuidle" || base == "power" || base == "hotplug" || base == "vulnerabilities" || base == "thermal_throttle" || base == "microcode") {
					return fs.SkipDir
				}
				return nil
			}
			if !de.Type().IsRegular() || normSysfsPath(filepath.Join(prefix, rel)) == "" {
				return nil
			}
			b, err := readLimited(p, maxSysfsFileSize)
			if err != nil {
				return nil
			}
			total += len(b)
			if total > maxSysfsTotal {
				return fmt.Errorf("%s: more than %d bytes of topology files", dir, maxSysfsTotal)
			}
			return f.add(filepath.Join(prefix, rel), string(b))
		})
	}
	if err := walk(cpuDir, "cpu"); err != nil {
		return nil, err
	}
	nd := filepath.Join(filepath.Dir(filepath.Clean(cpuDir)), "node")
	if st, err := os.Stat(nd); err == nil && st.IsDir() {
		if err := walk(nd, "node"); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func readLimited(p string, n int64) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, n))
}

// readSysfsTar reads a .tar or .tar.gz of a sysfs copy.
func readSysfsTar(r io.Reader, gz bool) (sysfsFiles, error) {
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("not a gzip file: %v", err)
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	f := sysfsFiles{}
	total := int64(0)
	entries := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading tar: %v", err)
		}
		entries++
		if entries > maxSysfsFiles {
			return nil, fmt.Errorf("tar has more than %d entries", maxSysfsFiles)
		}
		if h.Typeflag != tar.TypeReg || normSysfsPath(h.Name) == "" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxSysfsFileSize))
		if err != nil {
			return nil, fmt.Errorf("reading %s in tar: %v", h.Name, err)
		}
		total += int64(len(b))
		if total > maxSysfsTotal {
			return nil, fmt.Errorf("tar holds more than %d bytes of topology files", maxSysfsTotal)
		}
		if err := f.add(h.Name, string(b)); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// readSysfsDump reads text dumps of sysfs files in either of two forms:
// "path: value" lines (as `for f in ...; do echo "$f: $(cat $f)"; done`
// prints them) or "== path" lines each followed by the file's content.
func readSysfsDump(r io.Reader, f sysfsFiles) error {
	sc := bufio.NewScanner(io.LimitReader(r, maxSysfsTotal))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	cur := ""
	var body []string
	flush := func() error {
		if cur != "" {
			if err := f.add(cur, strings.Join(body, "\n")); err != nil {
				return err
			}
		}
		cur, body = "", nil
		return nil
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "== ") {
			if err := flush(); err != nil {
				return err
			}
			cur = strings.TrimSpace(line[3:])
			continue
		}
		if cur != "" {
			body = append(body, line)
			continue
		}
		if i := strings.Index(line, ": "); i > 0 && strings.Contains(line[:i], "/") {
			if err := f.add(line[:i], line[i+2:]); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return flush()
}

// topologyFromSysfs builds a Topology from sysfs files, the way lscpu reads
// them: CPUs from cpuN/topology, caches from cpuN/cache/indexK (one Cache per
// distinct shared list), nodes from node/nodeN/{cpulist,distance,meminfo}.
func topologyFromSysfs(f sysfsFiles, source string) (*Topology, error) {
	maxCPU := -1
	for k := range f {
		if strings.HasPrefix(k, "cpu/cpu") {
			rest := k[len("cpu/cpu"):]
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, '/')])
			if err != nil || n >= MaxCPUs {
				return nil, fmt.Errorf("%s: CPU directory %q beyond cpu%d", source, k, MaxCPUs-1)
			}
			if n > maxCPU {
				maxCPU = n
			}
		}
	}
	var possible, online []int
	var err error
	if v, ok := f["cpu/possible"]; ok {
		if possible, err = ParseCPUList(v); err != nil {
			return nil, fmt.Errorf("%s: cpu/possible: %v", source, err)
		}
	}
	if v, ok := f["cpu/online"]; ok {
		if online, err = ParseCPUList(v); err != nil {
			return nil, fmt.Errorf("%s: cpu/online: %v", source, err)
		}
	}
	for _, c := range possible {
		if c > maxCPU {
			maxCPU = c
		}
	}
	if maxCPU < 0 {
		return nil, fmt.Errorf("%s: no cpuN/topology files found (want a copy of /sys/devices/system/cpu with cpu0/topology/core_id etc.)", source)
	}
	t := &Topology{Source: source, NrCPUs: maxCPU + 1}
	t.CPUs = make([]CPU, t.NrCPUs)
	onl := map[int]bool{}
	for _, c := range online {
		onl[c] = true
	}
	num := func(k string) (int, bool, error) {
		v, ok := f[k]
		if !ok || v == "" {
			return -1, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %s is %q, want a number", source, k, v)
		}
		return n, true, nil
	}
	// Equal lists share one slice, so memory stays linear in the CPUs.
	parsed := map[string][]int{}
	list := func(k string) ([]int, error) {
		key, v, ok := k+"_list", "", false
		if v, ok = f[key]; !ok {
			key = k
			if v, ok = f[k]; !ok {
				return nil, nil
			}
		}
		memo := key[strings.LastIndexByte(key, '/')+1:] + "=" + v
		if l, ok := parsed[memo]; ok {
			return l, nil
		}
		var l []int
		var err error
		if strings.HasSuffix(key, "_list") {
			l, err = ParseCPUList(v)
		} else {
			l, err = parseCPUMask(v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", source, key, err)
		}
		parsed[memo] = l
		return l, nil
	}
	for i := range t.CPUs {
		c := &t.CPUs[i]
		*c = CPU{ID: i, CoreID: -1, PackageID: -1, DieID: -1, ClusterID: -1, Node: -1}
		p := fmt.Sprintf("cpu/cpu%d/", i)
		_, hasTopo := f[p+"topology/core_id"]
		if len(online) > 0 {
			c.Online = onl[i]
		} else {
			c.Online = hasTopo
		}
		if v, ok := f[p+"online"]; ok && v == "0" {
			c.Online = false
		}
		var err error
		for _, x := range []struct {
			dst  *int
			name string
		}{{&c.CoreID, "core_id"}, {&c.PackageID, "physical_package_id"}, {&c.DieID, "die_id"}, {&c.ClusterID, "cluster_id"}} {
			if n, ok, e := num(p + "topology/" + x.name); e != nil {
				return nil, e
			} else if ok {
				*x.dst = n
			}
		}
		if c.ThreadSiblings, err = list(p + "topology/thread_siblings"); err != nil {
			return nil, err
		}
		if c.ThreadSiblings == nil {
			if c.ThreadSiblings, err = list(p + "topology/core_cpus"); err != nil {
				return nil, err
			}
		}
		if c.CoreSiblings, err = list(p + "topology/core_siblings"); err != nil {
			return nil, err
		}
		if c.CoreSiblings == nil {
			if c.CoreSiblings, err = list(p + "topology/package_cpus"); err != nil {
				return nil, err
			}
		}
		if c.DieSiblings, err = list(p + "topology/die_cpus"); err != nil {
			return nil, err
		}
		if c.ClusterSiblings, err = list(p + "topology/cluster_cpus"); err != nil {
			return nil, err
		}
		if n, ok, e := num(p + "cpu_capacity"); e != nil {
			return nil, e
		} else if ok {
			c.Capacity = n
		}
	}
	// Caches.
	type ck struct {
		level int
		typ   string
		cpus  string
	}
	seen := map[ck]bool{}
	var keys []string
	for k := range f {
		if strings.Contains(k, "/cache/index") && strings.HasSuffix(k, "/level") {
			keys = append(keys, strings.TrimSuffix(k, "level"))
		}
	}
	sort.Strings(keys)
	for _, p := range keys {
		lvl, _, err := num(p + "level")
		if err != nil {
			return nil, err
		}
		cpus, err := list(p + "shared_cpu")
		if err != nil {
			return nil, err
		}
		if len(cpus) == 0 {
			continue
		}
		typ := f[p+"type"]
		k := ck{lvl, typ, FormatCPUList(cpus)}
		if seen[k] {
			continue
		}
		seen[k] = true
		if len(t.Caches) >= maxCaches {
			return nil, fmt.Errorf("%s: more than %d distinct caches", source, maxCaches)
		}
		c := Cache{Level: lvl, Type: typ, Size: f[p+"size"], CPUs: cpus}
		c.LineSize, _, _ = num(p + "coherency_line_size")
		c.Sets, _, _ = num(p + "number_of_sets")
		c.Ways, _, _ = num(p + "ways_of_associativity")
		for _, x := range []*int{&c.LineSize, &c.Sets, &c.Ways} {
			if *x < 0 {
				*x = 0
			}
		}
		t.Caches = append(t.Caches, c)
	}
	sort.SliceStable(t.Caches, func(i, j int) bool {
		a, b := t.Caches[i], t.Caches[j]
		if a.Level != b.Level {
			return a.Level < b.Level
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.CPUs[0] < b.CPUs[0]
	})
	// Nodes.
	var nodeIDs []int
	for k := range f {
		if strings.HasPrefix(k, "node/node") && strings.HasSuffix(k, "/cpulist") {
			id, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(k, "node/node"), "/cpulist"))
			if err != nil || id >= maxNodes {
				return nil, fmt.Errorf("%s: node directory %q beyond node%d", source, k, maxNodes-1)
			}
			nodeIDs = append(nodeIDs, id)
		}
	}
	sort.Ints(nodeIDs)
	for _, id := range nodeIDs {
		p := fmt.Sprintf("node/node%d/", id)
		cpus, err := ParseCPUList(f[p+"cpulist"])
		if err != nil {
			return nil, fmt.Errorf("%s: %scpulist: %v", source, p, err)
		}
		n := Node{ID: id, CPUs: cpus}
		if v, ok := f[p+"distance"]; ok && v != "" {
			for _, w := range strings.Fields(v) {
				d, err := strconv.Atoi(w)
				if err != nil || len(n.Distance) >= maxNodes {
					return nil, fmt.Errorf("%s: %sdistance %q: want numbers like '10 20'", source, p, v)
				}
				n.Distance = append(n.Distance, d)
			}
		}
		if v, ok := f[p+"meminfo"]; ok {
			for _, line := range strings.Split(v, "\n") {
				fs := strings.Fields(line)
				if len(fs) >= 4 && fs[2] == "MemTotal:" {
					n.MemTotalKB, _ = strconv.ParseUint(fs[3], 10, 64)
				}
			}
		}
		for _, c := range cpus {
			if c < t.NrCPUs {
				t.CPUs[c].Node = id
			}
		}
		t.Nodes = append(t.Nodes, n)
	}
	// Node distance rows are indexed by node id; sysfs lists only the
	// possible nodes' columns in id order, which for dense ids is the same.
	if len(nodeIDs) > 0 && nodeIDs[len(nodeIDs)-1] != len(nodeIDs)-1 {
		for i := range t.Nodes {
			row := t.Nodes[i].Distance
			if row == nil {
				continue
			}
			if len(row) != len(nodeIDs) {
				return nil, fmt.Errorf("%s: node%d distance has %d entries for %d nodes", source, t.Nodes[i].ID, len(row), len(nodeIDs))
			}
			full := make([]int, nodeIDs[len(nodeIDs)-1]+1)
			for j := range full {
				full[j] = 255
			}
			for j, id := range nodeIDs {
				full[id] = row[j]
			}
			t.Nodes[i].Distance = full
		}
	}
	for _, c := range t.CPUs {
		if c.Online {
			t.NrCPUsOnline++
		}
	}
	return validated(t)
}

// parseCPUMask parses a sysfs hex bitmap ("ff,ffffffff", most significant
// 32-bit word first).
func parseCPUMask(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	words := strings.Split(s, ",")
	if len(words)*32 > MaxCPUs+32 {
		return nil, fmt.Errorf("mask %q is longer than %d CPUs", s, MaxCPUs)
	}
	var out []int
	for i := len(words) - 1; i >= 0; i-- {
		w, err := strconv.ParseUint(words[i], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("mask %q: %q is not a hex word (want e.g. 0f or ff,ffffffff)", s, words[i])
		}
		base := (len(words) - 1 - i) * 32
		for b := 0; b < 32; b++ {
			if w&(1<<uint(b)) != 0 && base+b < MaxCPUs {
				out = append(out, base+b)
			}
		}
	}
	return out, nil
}
