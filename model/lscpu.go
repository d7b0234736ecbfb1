package model

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ParseLscpu reads the output of `lscpu -p` (or `lscpu -p=CPU,CORE,...`,
// `lscpu -p -a`): comment lines start with '#', the last of them naming the
// columns ("# CPU,Core,Socket,Node,,L1d,L1i,L2,L3"), then one line per CPU.
// Thread siblings are the CPUs with the same Core, package siblings those
// with the same Socket, caches are grouped by their ids, NUMA nodes by Node.
// lscpu has no node distances: remote nodes get the kernel's default 20
// unless a distance= modifier says otherwise.
func ParseLscpu(r io.Reader) (*Topology, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var header []string
	type row struct {
		line   int
		fields []string
	}
	var rows []row
	ln := 0
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			h := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			if strings.HasPrefix(strings.ToUpper(h), "CPU") {
				header = strings.Split(h, ",")
			}
			continue
		}
		if len(rows) >= MaxCPUs {
			return nil, fmt.Errorf("lscpu -p: more than %d CPU lines", MaxCPUs)
		}
		rows = append(rows, row{ln, strings.Split(line, ",")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lscpu -p: %v", err)
	}
	if header == nil {
		return nil, fmt.Errorf("lscpu -p: no header line like '# CPU,Core,Socket,Node,,L1d,L1i,L2,L3' (give the unmodified output of lscpu -p)")
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("lscpu -p: no CPU lines after the header (want lines like 0,0,0,0,,0,0,0,0)")
	}
	// Column indexes; caches may be separate columns (L1d,L1i,...) or one
	// column of colon-separated ids ("L1d:L1i:L2:L3").
	col := map[string]int{}
	type cacheCol struct {
		idx, sub int
		name     string
	}
	var caches []cacheCol
	for i, h := range header {
		h = strings.TrimSpace(h)
		if strings.Contains(h, ":") {
			for j, n := range strings.Split(h, ":") {
				if !isCacheName(n) {
					return nil, fmt.Errorf("lscpu -p: header cache column %q: %q is not a cache name (want names like L1d:L1i:L2:L3)", h, n)
				}
				caches = append(caches, cacheCol{i, j, n})
			}
			continue
		}
		if isCacheName(h) {
			caches = append(caches, cacheCol{i, -1, h})
			continue
		}
		if h != "" {
			col[strings.ToUpper(h)] = i
		}
	}
	cpuCol, ok := col["CPU"]
	if !ok {
		return nil, fmt.Errorf("lscpu -p: header %q has no CPU column", strings.Join(header, ","))
	}
	get := func(r row, name string) (int, bool, error) {
		i, ok := col[name]
		if !ok || i >= len(r.fields) {
			return -1, false, nil
		}
		v := strings.TrimSpace(r.fields[i])
		if v == "" || v == "-" {
			return -1, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<20 {
			return 0, false, fmt.Errorf("lscpu -p line %d: %s %q is not a number (want e.g. 0)", r.line, name, v)
		}
		return n, true, nil
	}
	maxCPU := -1
	for _, r := range rows {
		if cpuCol >= len(r.fields) {
			return nil, fmt.Errorf("lscpu -p line %d: %d fields, no CPU column", r.line, len(r.fields))
		}
		c, err := strconv.Atoi(strings.TrimSpace(r.fields[cpuCol]))
		if err != nil || c < 0 || c >= MaxCPUs {
			return nil, fmt.Errorf("lscpu -p line %d: CPU %q is not a CPU number 0..%d", r.line, r.fields[cpuCol], MaxCPUs-1)
		}
		if c > maxCPU {
			maxCPU = c
		}
	}
	t := &Topology{Source: "lscpu -p", NrCPUs: maxCPU + 1}
	t.CPUs = make([]CPU, t.NrCPUs)
	for i := range t.CPUs {
		t.CPUs[i] = CPU{ID: i, CoreID: -1, PackageID: -1, DieID: -1, ClusterID: -1, Node: -1}
	}
	type key struct{ a, b int }
	cores := map[key][]int{}
	sockets := map[int][]int{}
	clusters := map[key][]int{}
	nodes := map[int][]int{}
	type ckey struct {
		name string
		id   int
	}
	cacheSets := map[ckey][]int{}
	seen := map[int]bool{}
	for _, r := range rows {
		c, _ := strconv.Atoi(strings.TrimSpace(r.fields[cpuCol]))
		if seen[c] {
			return nil, fmt.Errorf("lscpu -p line %d: CPU %d listed twice", r.line, c)
		}
		seen[c] = true
		cp := &t.CPUs[c]
		cp.Online = true
		if i, ok := col["ONLINE"]; ok && i < len(r.fields) && strings.EqualFold(strings.TrimSpace(r.fields[i]), "N") {
			cp.Online = false
		}
		core, hasCore, err := get(r, "CORE")
		if err != nil {
			return nil, err
		}
		sock, hasSock, err := get(r, "SOCKET")
		if err != nil {
			return nil, err
		}
		node, hasNode, err := get(r, "NODE")
		if err != nil {
			return nil, err
		}
		cl, hasCl, err := get(r, "CLUSTER")
		if err != nil {
			return nil, err
		}
		if !hasSock {
			sock = 0
		}
		cp.PackageID = sock
		sockets[sock] = append(sockets[sock], c)
		if hasCore {
			cp.CoreID = core
			cores[key{sock, core}] = append(cores[key{sock, core}], c)
		}
		if hasCl {
			cp.ClusterID = cl
			clusters[key{sock, cl}] = append(clusters[key{sock, cl}], c)
		}
		if hasNode {
			if node >= maxNodes {
				return nil, fmt.Errorf("lscpu -p line %d: node %d beyond %d", r.line, node, maxNodes-1)
			}
			cp.Node = node
			nodes[node] = append(nodes[node], c)
		}
		for _, cc := range caches {
			if cc.idx >= len(r.fields) {
				continue
			}
			v := strings.TrimSpace(r.fields[cc.idx])
			if cc.sub >= 0 {
				parts := strings.Split(v, ":")
				if cc.sub >= len(parts) {
					continue
				}
				v = parts[cc.sub]
			}
			if v == "" || v == "-" {
				continue
			}
			id, err := strconv.Atoi(v)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("lscpu -p line %d: %s cache id %q is not a number", r.line, cc.name, v)
			}
			k := ckey{cc.name, id}
			cacheSets[k] = append(cacheSets[k], c)
		}
	}
	// One shared slice per group keeps memory linear in the CPUs.
	for _, l := range cores {
		s := sortedCopy(l)
		for _, c := range l {
			t.CPUs[c].ThreadSiblings = s
		}
	}
	for _, l := range sockets {
		s := sortedCopy(l)
		for _, c := range l {
			t.CPUs[c].CoreSiblings = s
			t.CPUs[c].DieSiblings = s
			t.CPUs[c].DieID = 0
		}
	}
	for _, l := range clusters {
		s := sortedCopy(l)
		for _, c := range l {
			t.CPUs[c].ClusterSiblings = s
		}
	}
	var nodeIDs []int
	for id := range nodes {
		nodeIDs = append(nodeIDs, id)
	}
	sort.Ints(nodeIDs)
	for _, id := range nodeIDs {
		t.Nodes = append(t.Nodes, Node{ID: id, CPUs: sortedCopy(nodes[id])})
	}
	var ck []ckey
	for k := range cacheSets {
		ck = append(ck, k)
	}
	sort.Slice(ck, func(i, j int) bool {
		if ck[i].name != ck[j].name {
			return ck[i].name < ck[j].name
		}
		return ck[i].id < ck[j].id
	})
	for _, k := range ck {
		lvl, typ := cacheLevelType(k.name)
		t.Caches = append(t.Caches, Cache{Level: lvl, Type: typ, CPUs: sortedCopy(cacheSets[k])})
	}
	for _, c := range t.CPUs {
		if c.Online {
			t.NrCPUsOnline++
		}
	}
	return validated(t)
}

func isCacheName(h string) bool {
	if len(h) < 2 || (h[0] != 'L' && h[0] != 'l') || h[1] < '1' || h[1] > '9' {
		return false
	}
	rest := strings.ToLower(h[2:])
	return rest == "" || rest == "d" || rest == "i"
}

func cacheLevelType(name string) (int, string) {
	lvl := int(name[1] - '0')
	switch strings.ToLower(name[2:]) {
	case "d":
		return lvl, "Data"
	case "i":
		return lvl, "Instruction"
	}
	return lvl, "Unified"
}

func sortedCopy(l []int) []int {
	c := append([]int(nil), l...)
	sort.Ints(c)
	return c
}
