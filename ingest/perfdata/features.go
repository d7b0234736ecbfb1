package perfdata

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/model"
)

// featureParsed tells which features we read (the others are only listed).
func featureParsed(f int) bool {
	switch f {
	case featTracingData, featHostname, featOSRelease, featVersion, featArch, featNrCPUs,
		featCPUDesc, featCPUID, featTotalMem, featCmdline, featEventDesc, featCPUTopology,
		featNUMATopology, featPMUMappings, featCache, featSampleTime, featClockID,
		featCompressed, featClockData, featHybridTopology, featCPUDomainInfo:
		return true
	}
	return false
}

// topoFacts collects the topology features until the header is complete.
type topoFacts struct {
	nrAvail, nrOnline  int
	haveNr             bool
	coreSib, threadSib []string
	dieSib             []string
	coreID, socketID   []int
	dieID              []int
	haveTopo           bool
	numa               []model.Node
	caches             []model.Cache
}

// parseFeature decodes one feature section (file mode) or HEADER_FEATURE
// body (pipe mode); base is the file offset of b.
func (r *Reader) parseFeature(f int, b []byte, base int64) error {
	c := newCursor(b, base, r.ord, featName(f)+" feature")
	src := &r.meta.Source
	switch f {
	case featTracingData:
		if err := r.setTracingData(b, base); err != nil {
			return err
		}
	case featHostname:
		src.Hostname = c.str("hostname")
	case featOSRelease:
		src.OSRelease = c.str("os release")
	case featVersion:
		src.PerfVersion = c.str("perf version")
	case featArch:
		src.Arch = c.str("arch")
	case featCPUDesc:
		src.CPUDesc = c.str("cpu description")
	case featCPUID:
		src.CPUID = c.str("cpuid")
	case featNrCPUs:
		avail, online := c.u32("nr_cpus_available"), c.u32("nr_cpus_online")
		if c.err == nil && (avail > model.MaxCPUs || online > avail) {
			c.off -= 8
			c.fail("nr_cpus_available %d / nr_cpus_online %d, expected online <= available <= %d", avail, online, model.MaxCPUs)
		}
		if c.err == nil {
			src.NrCPUs, src.NrCPUsOnline = int(avail), int(online)
			r.topo.nrAvail, r.topo.nrOnline, r.topo.haveNr = int(avail), int(online), true
		}
	case featTotalMem:
		src.TotalMemKB = c.u64("total memory")
	case featCmdline:
		src.Cmdline = c.strList("cmdline")
	case featEventDesc:
		r.parseEventDesc(c)
	case featCPUTopology:
		r.parseCPUTopology(c)
	case featNUMATopology:
		n := c.u32("node count")
		if c.err == nil && uint64(n)*24 > uint64(c.left()) {
			c.fail("node count %d cannot fit in %d bytes", n, c.left())
		}
		for i := uint32(0); i < n && c.err == nil; i++ {
			id := c.u32("node id")
			total := c.u64("mem_total")
			c.u64("mem_free")
			list := c.str("node cpu list")
			if c.err != nil {
				break
			}
			cpus, err := model.ParseCPUList(list)
			if err != nil {
				c.fail("node %d: %v", id, err)
				break
			}
			r.topo.numa = append(r.topo.numa, model.Node{ID: int(id), CPUs: cpus, MemTotalKB: total})
		}
	case featPMUMappings:
		n := c.u32("pmu count")
		if c.err == nil && uint64(n)*8 > uint64(c.left()) {
			c.fail("pmu count %d cannot fit in %d bytes", n, c.left())
		}
		for i := uint32(0); i < n && c.err == nil; i++ {
			typ := c.u32("pmu type")
			name := c.str("pmu name")
			if c.err == nil {
				if r.pmus == nil {
					r.pmus = map[uint32]string{}
				}
				r.pmus[typ] = name
			}
		}
	case featCache:
		ver := c.u32("version")
		n := c.u32("cache count")
		if c.err == nil && ver != 1 {
			c.off -= 8
			c.fail("version %d, expected 1", ver)
		}
		if c.err == nil && uint64(n)*28 > uint64(c.left()) {
			c.fail("cache count %d cannot fit in %d bytes", n, c.left())
		}
		for i := uint32(0); i < n && c.err == nil; i++ {
			level, line, sets, ways := c.u32("level"), c.u32("line size"), c.u32("sets"), c.u32("ways")
			typ, size, list := c.str("type"), c.str("size"), c.str("shared cpu list")
			if c.err != nil {
				break
			}
			cpus, err := model.ParseCPUList(list)
			if err != nil {
				c.fail("cache %d: %v", i, err)
				break
			}
			r.topo.caches = append(r.topo.caches, model.Cache{Level: int(level), Type: typ, Size: size,
				LineSize: int(line), Sets: int(sets), Ways: int(ways), CPUs: cpus})
		}
	case featSampleTime:
		first, last := c.u64("first sample time"), c.u64("last sample time")
		if c.err == nil {
			src.FirstSampleNS, src.LastSampleNS = int64(first), int64(last)
		}
	case featClockID:
		src.ClockResNS = c.u64("clock resolution")
	case featCompressed:
		ver, typ, level := c.u32("version"), c.u32("type"), c.u32("level")
		c.u32("ratio")
		c.u32("mmap_len")
		if c.err == nil {
			alg := "type " + itoa(int64(typ))
			if typ == 1 {
				alg = "zstd"
			}
			src.Compressed = fmt.Sprintf("%s level %d", alg, level)
			_ = ver
		}
	case featClockData:
		ver, clk := c.u32("version"), c.u32("clockid")
		wall, clock := c.u64("wall clock ns"), c.u64("clock ns")
		if c.err == nil {
			r.extra("clock_data", fmt.Sprintf("version=%d clockid=%d wall_clock_ns=%d clockid_ns=%d", ver, clk, wall, clock))
		}
	case featHybridTopology:
		n := c.u32("pmu count")
		if c.err == nil && uint64(n)*8 > uint64(c.left()) {
			c.fail("pmu count %d cannot fit in %d bytes", n, c.left())
		}
		var parts []string
		for i := uint32(0); i < n && c.err == nil; i++ {
			pmu, cpus := c.str("pmu name"), c.str("cpu list")
			parts = append(parts, pmu+":"+cpus)
		}
		if c.err == nil {
			r.extra("hybrid_topology", strings.Join(parts, ";"))
		}
	case featCPUDomainInfo:
		// Newer perf writes the scheduler domains itself; its layout is still
		// moving, so keep the bytes for the topology model.
		r.extra("cpu_domain_info", base64.StdEncoding.EncodeToString(b))
	}
	if c.err != nil {
		return r.errf(c.err.at, "%s", c.err.msg)
	}
	return nil
}

func (r *Reader) parseEventDesc(c *cursor) {
	n, asz := c.u32("event count"), c.u32("attr size")
	if c.err != nil {
		return
	}
	if asz < attrSizeVer0 || asz > maxAttrSize {
		c.off -= 4
		c.fail("attr size %d, expected 64..%d", asz, maxAttrSize)
		return
	}
	if uint64(n)*uint64(asz+8) > uint64(c.left()) {
		c.off -= 8
		c.fail("event count %d cannot fit in %d bytes", n, c.left())
		return
	}
	for i := uint32(0); i < n && c.err == nil; i++ {
		c.bytes(uint64(asz), "attr")
		nids := c.u32("id count")
		name := c.str("event name")
		if c.err == nil && uint64(nids)*8 > uint64(c.left()) {
			c.fail("id count %d cannot fit in %d bytes", nids, c.left())
			return
		}
		ids := c.bytes(uint64(nids)*8, "ids")
		if c.err != nil {
			return
		}
		// perf matches EVENT_DESC entries to attrs by position.
		if int(i) < len(r.attrs) {
			r.attrs[i].name = name
		} else {
			r.pendingNames = append(r.pendingNames, name)
		}
		for j := 0; j+8 <= len(ids); j += 8 {
			if a := r.byID[r.ord.u64(ids[j:])]; a != nil && a.name == "" {
				a.name = name
			}
		}
	}
}

func (r *Reader) parseCPUTopology(c *cursor) {
	t := &r.topo
	t.coreSib = c.strList("package sibling list")
	t.threadSib = c.strList("core sibling list")
	if c.err != nil {
		return
	}
	t.haveTopo = true
	// Later revisions appended fields; what is present shows in the size.
	if c.left() == 0 || !t.haveNr {
		return
	}
	n := t.nrAvail
	if uint64(n)*8 > uint64(c.left()) {
		c.fail("core/socket ids of %d CPUs need %d bytes, %d left", n, n*8, c.left())
		return
	}
	t.coreID, t.socketID = make([]int, n), make([]int, n)
	for i := 0; i < n; i++ {
		t.coreID[i] = int(int32(c.u32("core id")))
		t.socketID[i] = int(int32(c.u32("socket id")))
	}
	if c.left() == 0 {
		return
	}
	t.dieSib = c.strList("die sibling list")
	if c.err != nil {
		return
	}
	if uint64(n)*4 > uint64(c.left()) {
		c.fail("die ids of %d CPUs need %d bytes, %d left", n, n*4, c.left())
		return
	}
	t.dieID = make([]int, n)
	for i := 0; i < n; i++ {
		t.dieID[i] = int(int32(c.u32("die id")))
	}
}

// buildTopology turns the topology features into a model.Topology (nil when
// the file has none).
func (r *Reader) buildTopology() (*model.Topology, error) {
	t := &r.topo
	if !t.haveTopo && len(t.numa) == 0 && len(t.caches) == 0 {
		return nil, nil
	}
	lists := func(ss []string, what string) ([][]int, error) {
		out := make([][]int, len(ss))
		for i, s := range ss {
			l, err := model.ParseCPUList(s)
			if err != nil {
				return nil, fmt.Errorf("CPU_TOPOLOGY %s %d: %v", what, i, err)
			}
			out[i] = l
		}
		return out, nil
	}
	pkg, err := lists(t.coreSib, "package sibling list")
	if err != nil {
		return nil, err
	}
	thr, err := lists(t.threadSib, "core sibling list")
	if err != nil {
		return nil, err
	}
	die, err := lists(t.dieSib, "die sibling list")
	if err != nil {
		return nil, err
	}
	nr := t.nrAvail
	maxCPU := -1
	for _, ls := range [][][]int{pkg, thr, die} {
		for _, l := range ls {
			for _, c := range l {
				maxCPU = max(maxCPU, c)
			}
		}
	}
	for _, n := range t.numa {
		for _, c := range n.CPUs {
			maxCPU = max(maxCPU, c)
		}
	}
	for _, ca := range t.caches {
		for _, c := range ca.CPUs {
			maxCPU = max(maxCPU, c)
		}
	}
	nr = max(nr, maxCPU+1)
	topo := &model.Topology{Source: "perf.data header", NrCPUs: nr, NrCPUsOnline: t.nrOnline, CPUs: make([]model.CPU, nr), Arch: r.meta.Source.Arch}
	member := func(ls [][]int, cpu int) []int {
		for _, l := range ls {
			for _, c := range l {
				if c == cpu {
					return l
				}
			}
		}
		return nil
	}
	for i := range topo.CPUs {
		c := &topo.CPUs[i]
		*c = model.CPU{ID: i, CoreID: -1, PackageID: -1, DieID: -1, ClusterID: -1, Node: -1}
		c.CoreSiblings = member(pkg, i)
		c.ThreadSiblings = member(thr, i)
		c.DieSiblings = member(die, i)
		c.Online = c.CoreSiblings != nil || c.ThreadSiblings != nil
		if i < len(t.coreID) {
			c.CoreID, c.PackageID = t.coreID[i], t.socketID[i]
			if t.coreID[i] == -1 && t.socketID[i] == -1 {
				c.Online = false
			}
		}
		if i < len(t.dieID) {
			c.DieID = t.dieID[i]
		}
	}
	for _, n := range t.numa {
		for _, c := range n.CPUs {
			if c < nr {
				topo.CPUs[c].Node = n.ID
			}
		}
	}
	topo.Nodes = t.numa
	// perf writes one entry per cache instance already; merge any duplicate.
	seen := map[string]bool{}
	for _, ca := range t.caches {
		k := fmt.Sprint(ca.Level, ca.Type, ca.CPUs)
		if seen[k] {
			continue
		}
		seen[k] = true
		topo.Caches = append(topo.Caches, ca)
	}
	return topo, nil
}

// setTracingData parses the tracing-data blob (feature 1 or the payload of
// HEADER_TRACING_DATA): the tracepoint formats raw samples are decoded with.
func (r *Reader) setTracingData(blob []byte, base int64) error {
	td, err := tracefmt.ParseTracingData(blob)
	if err != nil {
		off := base
		if oe, ok := err.(*tracefmt.OffsetError); ok {
			off += int64(oe.Offset)
		}
		return &FormatError{File: r.name, Offset: off, Msg: "tracing data does not parse", Err: err}
	}
	r.tracing = td
	if len(td.FormatErrors) > 0 {
		r.drop("tracepoint formats that do not parse", int64(len(td.FormatErrors)))
	}
	// Plans built before the formats arrived (pipe mode) are rebuilt.
	for _, a := range r.attrs {
		a.planned = false
	}
	return nil
}
