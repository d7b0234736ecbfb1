package perfetto

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// TracePacket.sequence_flags values.
const (
	seqIncrementalStateCleared = 1
	seqNeedsIncrementalState   = 2
)

// Builtin clock ids (ClockSnapshot, builtin_clock.proto).
const (
	clockMonotonicRaw = 5
	clockBoottime     = 6
)

// PolicyPrefix starts TraceConfig.unique_session_name in traces replay
// exports from a simulated timeline; the rest is the policy name.
const PolicyPrefix = "replay policy="

// packet handles one TracePacket. depth counts compressed wrappers.
func (r *Reader) packet(b []byte, base int64, depth int) error {
	var (
		seqID                     uint32
		flags                     uint64
		dropped, firstOnSeq       bool
		bundles, trees, snapshots []field
		interned, sysinfo, cpu    []field
		stats, config, zlibs      []field
		zstds                     []field
	)
	err := walk(b, base, func(f *field) error {
		switch f.num {
		case 10:
			seqID = uint32(f.v)
		case 13:
			flags = f.v
		case 41:
			if f.v != 0 {
				flags |= seqIncrementalStateCleared
			}
		case 42:
			dropped = f.v != 0
		case 87:
			firstOnSeq = f.v != 0
		}
		if f.typ != 2 {
			return nil
		}
		c := *f
		switch f.num {
		case 1:
			bundles = append(bundles, c)
		case 2:
			trees = append(trees, c)
		case 6:
			snapshots = append(snapshots, c)
		case 12:
			interned = append(interned, c)
		case 33:
			config = append(config, c)
		case 34:
			stats = append(stats, c)
		case 45:
			sysinfo = append(sysinfo, c)
		case 50:
			zlibs = append(zlibs, c)
		case 67:
			cpu = append(cpu, c)
		case 133:
			zstds = append(zstds, c)
		}
		return nil
	})
	if err != nil {
		return err
	}
	seq := r.seqs[seqID]
	if seq == nil {
		if len(r.seqs) > 1<<16 {
			clear(r.seqs)
		}
		seq = &sequence{id: seqID}
		r.seqs[seqID] = seq
	}
	if dropped && seq.seen && !firstOnSeq {
		r.pendingDrop++
	}
	seq.seen = true
	if flags&seqIncrementalStateCleared != 0 {
		seq.cleared, seq.symbols = true, nil
	} else if flags&seqNeedsIncrementalState != 0 && !seq.cleared {
		r.drop("packet needing incremental state before it was cleared")
		return nil
	}
	for i := range interned {
		if err := r.internedData(&interned[i], seq); err != nil {
			return err
		}
	}
	for i := range sysinfo {
		if err := r.systemInfo(&sysinfo[i]); err != nil {
			return err
		}
	}
	for i := range cpu {
		if err := r.cpuInfo(&cpu[i]); err != nil {
			return err
		}
	}
	for i := range snapshots {
		if err := r.clockSnapshot(&snapshots[i]); err != nil {
			return err
		}
	}
	for i := range config {
		if err := r.traceConfig(&config[i]); err != nil {
			return err
		}
	}
	for i := range trees {
		if err := r.processTree(&trees[i]); err != nil {
			return err
		}
	}
	for i := range stats {
		if err := r.ftraceStats(&stats[i]); err != nil {
			return err
		}
	}
	for i := range bundles {
		if err := r.bundle(&bundles[i], seq); err != nil {
			return err
		}
	}
	for i := range zlibs {
		if err := r.compressed(&zlibs[i], depth, false); err != nil {
			return err
		}
	}
	for i := range zstds {
		if err := r.compressed(&zstds[i], depth, true); err != nil {
			return err
		}
	}
	return nil
}

// compressed expands compressed_packets (zlib) or zstd_compressed_packets:
// a serialized Trace whose packets are handled as if they stood here.
func (r *Reader) compressed(f *field, depth int, isZstd bool) error {
	at := f.payloadOffset()
	if depth >= maxNesting {
		return fmt.Errorf("offset %d: compressed packets nested more than %d deep", at, maxNesting)
	}
	var dec io.Reader
	if isZstd {
		zr, err := zstd.NewReader(bytes.NewReader(f.b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(MaxPacketBytes)))
		if err != nil {
			return fmt.Errorf("offset %d: zstd_compressed_packets: %w", at, err)
		}
		defer zr.Close()
		dec = zr
	} else {
		zr, err := zlib.NewReader(bytes.NewReader(f.b))
		if err != nil {
			return fmt.Errorf("offset %d: compressed_packets: %w", at, err)
		}
		defer zr.Close()
		dec = zr
	}
	data, err := io.ReadAll(io.LimitReader(dec, int64(MaxPacketBytes)+1))
	if err != nil {
		return fmt.Errorf("offset %d: compressed packets: %w", at, err)
	}
	if len(data) > MaxPacketBytes {
		return fmt.Errorf("offset %d: compressed packets expand to more than %d bytes (perfetto.MaxPacketBytes)", at, MaxPacketBytes)
	}
	err = walk(data, 0, func(g *field) error {
		if g.num != 1 || g.typ != 2 {
			r.drop(fmt.Sprintf("field %d inside compressed packets (not a packet)", g.num))
			return nil
		}
		return r.packet(g.b, g.payloadOffset(), depth+1)
	})
	if err != nil {
		return fmt.Errorf("in compressed packets at offset %d (offsets are within the decompressed data): %w", at, err)
	}
	return nil
}

func (r *Reader) internedData(f *field, seq *sequence) error {
	return walk(f.b, f.payloadOffset(), func(g *field) error {
		if g.num != 26 || g.typ != 2 {
			return nil
		}
		var iid uint64
		var s string
		err := walk(g.b, g.payloadOffset(), func(h *field) error {
			switch h.num {
			case 1:
				iid = h.v
			case 2:
				s = h.str()
			}
			return nil
		})
		if err != nil {
			return err
		}
		if seq.symbols == nil {
			seq.symbols = map[uint64]string{}
		}
		if len(seq.symbols) < maxNames {
			seq.symbols[iid] = s
		}
		return nil
	})
}

func (r *Reader) systemInfo(f *field) error {
	src := &r.meta.Source
	return walk(f.b, f.payloadOffset(), func(g *field) error {
		switch g.num {
		case 1:
			var sys, ver, rel, mach string
			err := walk(g.b, g.payloadOffset(), func(h *field) error {
				switch h.num {
				case 1:
					sys = h.str()
				case 2:
					ver = h.str()
				case 3:
					rel = h.str()
				case 4:
					mach = h.str()
				}
				return nil
			})
			if err != nil {
				return err
			}
			src.OSRelease, src.Arch = rel, mach
			if r.meta.Topology != nil && r.meta.Topology.Arch == "" {
				r.meta.Topology.Arch = mach
			}
			src.Extra["uname"] = strings.Join([]string{sys, rel, ver, mach}, " ")
			r.state = tracefmt.StateDecoderForKernel(rel)
		case 2:
			src.Extra["android_build_fingerprint"] = g.str()
		case 4:
			src.Extra["tracing_service_version"] = g.str()
		case 8:
			src.NrCPUs = int(g.v)
		case 16:
			src.TotalMemKB = g.v / 1024
		}
		return nil
	})
}

// cpuInfo turns CpuInfo into a topology with the CPUs' capacities. It
// also gives Perfetto's cluster numbering (CPUs sorted by capacity, else
// by maximum frequency, start a new cluster at each increase) in
// Source.Extra["perfetto_cpu_clusters"]; those are capacity groups for the
// UI, not the kernel's topology/cluster_id, so they do not go into the
// topology (where they would make up a CLS domain level).
func (r *Reader) cpuInfo(f *field) error {
	type cpu struct {
		name     string
		maxFreq  uint64
		capacity uint64
		hasCap   bool
	}
	var cpus []cpu
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		if g.num != 1 || g.typ != 2 {
			return nil
		}
		if len(cpus) >= maxCPU {
			return fmt.Errorf("offset %d: CpuInfo lists more than %d CPUs", g.at, maxCPU)
		}
		var c cpu
		var freqs []uint64
		err := walk(g.b, g.payloadOffset(), func(h *field) error {
			var err error
			switch h.num {
			case 1:
				c.name = h.str()
			case 2:
				freqs, err = varints(freqs[:0], h)
				for _, fr := range freqs {
					c.maxFreq = max(c.maxFreq, fr)
				}
			case 3:
				c.capacity, c.hasCap = h.v, true
			}
			return err
		})
		cpus = append(cpus, c)
		return err
	})
	if err != nil || len(cpus) == 0 {
		return err
	}
	key := func(c cpu) uint64 { return c.maxFreq }
	allCap, allFreq := true, true
	for _, c := range cpus {
		allCap = allCap && c.hasCap
		allFreq = allFreq && c.maxFreq > 0
	}
	if allCap {
		key = func(c cpu) uint64 { return c.capacity }
	}
	t := &model.Topology{Source: "perfetto cpu_info", NrCPUs: len(cpus), NrCPUsOnline: len(cpus), Arch: r.meta.Source.Arch}
	order := make([]int, len(cpus))
	for i := range order {
		order[i] = i
	}
	cluster := make([]int, len(cpus))
	if allCap || allFreq {
		sort.SliceStable(order, func(a, b int) bool { return key(cpus[order[a]]) < key(cpus[order[b]]) })
		id := 0
		for k, i := range order {
			if k > 0 && key(cpus[i]) > key(cpus[order[k-1]]) {
				id++
			}
			cluster[i] = id
		}
	} else {
		for i := range cluster {
			cluster[i] = -1
		}
	}
	ids := make([]string, len(cpus))
	for i, c := range cpus {
		tc := model.CPU{ID: i, Online: true, CoreID: -1, PackageID: -1, DieID: -1, ClusterID: -1, Node: -1}
		if c.hasCap {
			tc.Capacity = int(c.capacity)
		}
		t.CPUs = append(t.CPUs, tc)
		ids[i] = strconv.Itoa(cluster[i])
	}
	if allCap || allFreq {
		r.meta.Source.Extra["perfetto_cpu_clusters"] = strings.Join(ids, ",")
	}
	r.meta.Topology = t
	if len(cpus) > 0 && cpus[0].name != "" {
		r.meta.Source.CPUDesc = cpus[0].name
	}
	if r.meta.Source.NrCPUs == 0 {
		r.meta.Source.NrCPUs = len(cpus)
	}
	return nil
}

func (r *Reader) clockSnapshot(f *field) error {
	snap := map[uint32]int64{}
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		switch g.num {
		case 1:
			var id uint32
			var ts int64
			err := walk(g.b, g.payloadOffset(), func(h *field) error {
				switch h.num {
				case 1:
					id = uint32(h.v)
				case 2:
					ts = int64(h.v)
				}
				return nil
			})
			if len(snap) < 256 {
				snap[id] = ts
			}
			return err
		case 2:
			if g.v != clockBoottime {
				r.meta.Source.Extra["primary_trace_clock"] = strconv.FormatUint(g.v, 10)
			}
		}
		return nil
	})
	if _, ok := snap[clockBoottime]; ok {
		r.snapshots = snap
	}
	r.meta.Source.Extra["clock_snapshots"] = strconv.Itoa(atoi(r.meta.Source.Extra["clock_snapshots"]) + 1)
	return err
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// traceConfig reads the session name (a simulated timeline's policy) and
// the ftrace events the session recorded, so that Source.Events lists
// them before the first event is read (the analysis needs to know
// whether sched_waking was recorded).
func (r *Reader) traceConfig(f *field) error {
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		if g.typ != 2 {
			return nil
		}
		switch g.num {
		case 22:
			s := g.str()
			r.meta.Source.Extra["unique_session_name"] = s
			if p, ok := strings.CutPrefix(s, PolicyPrefix); ok {
				r.meta.Source.Extra["policy"] = p
			}
		case 2: // DataSource
			return walk(g.b, g.payloadOffset(), func(h *field) error {
				if h.num != 1 || h.typ != 2 { // DataSourceConfig
					return nil
				}
				return walk(h.b, h.payloadOffset(), func(k *field) error {
					if k.num != 100 || k.typ != 2 { // FtraceConfig
						return nil
					}
					return walk(k.b, k.payloadOffset(), func(ev *field) error {
						if ev.num == 1 && ev.typ == 2 && len(r.events) < 4096 {
							sys, name, ok := strings.Cut(ev.str(), "/")
							if !ok {
								sys, name = "", sys
							}
							r.events[timeline.EventName(sys, name)] = true
						}
						return nil
					})
				})
			})
		}
		return nil
	})
	r.listEvents()
	return err
}

func (r *Reader) listEvents() {
	r.meta.Source.Events = r.meta.Source.Events[:0]
	for n := range r.events {
		r.meta.Source.Events = append(r.meta.Source.Events, n)
	}
	sort.Strings(r.meta.Source.Events)
}

func (r *Reader) processTree(f *field) error {
	if len(r.seed) > maxNames {
		clear(r.seed)
	}
	if len(r.tgids) > maxNames {
		clear(r.tgids)
	}
	return walk(f.b, f.payloadOffset(), func(g *field) error {
		if g.typ != 2 {
			return nil
		}
		switch g.num {
		case 1: // Process
			var pid int32
			var argv0 string
			var isComm bool
			err := walk(g.b, g.payloadOffset(), func(h *field) error {
				switch h.num {
				case 1:
					pid = int32(h.v)
				case 3:
					if argv0 == "" {
						argv0 = h.str()
					}
				case 9:
					isComm = h.v != 0
				}
				return nil
			})
			if err != nil {
				return err
			}
			r.tgids[pid] = pid
			// A process's cmdline is not its comm (the kernel's name,
			// what common_comm holds) unless the producer says so.
			if isComm && argv0 != "" {
				r.seed[int(pid)] = r.intern([]byte(argv0))
			}
		case 2: // Thread
			var tid, tgid int32
			var name string
			hasTgid := false
			err := walk(g.b, g.payloadOffset(), func(h *field) error {
				switch h.num {
				case 1:
					tid = int32(h.v)
				case 2:
					name = h.str()
				case 3:
					tgid, hasTgid = int32(h.v), true
				}
				return nil
			})
			if err != nil {
				return err
			}
			if hasTgid {
				r.tgids[tid] = tgid
			}
			// ProcessTree names common_comm like trace.dat's saved
			// cmdlines, except for tasks already named by a sched event
			// (the snapshot may be older than what the kernel said since).
			if _, known := r.names[tid]; name != "" && !known {
				r.seed[int(tid)] = r.intern([]byte(name))
			}
		}
		return nil
	})
}

func (r *Reader) ftraceStats(f *field) error {
	var phase uint64
	type one struct {
		cpu int
		v   [3]uint64
	}
	var all []one
	err := walk(f.b, f.payloadOffset(), func(g *field) error {
		switch {
		case g.num == 1:
			phase = g.v
		case g.num == 2 && g.typ == 2:
			var o one
			err := walk(g.b, g.payloadOffset(), func(h *field) error {
				switch h.num {
				case 1:
					o.cpu = int(h.v)
				case 3:
					o.v[0] = h.v
				case 4:
					o.v[1] = h.v
				case 8:
					o.v[2] = h.v
				}
				return nil
			})
			if o.cpu >= 0 && o.cpu < maxCPU {
				all = append(all, o)
			}
			return err
		}
		return nil
	})
	for _, o := range all {
		s := r.stats[o.cpu]
		if s == nil {
			s = &cpuStats{}
			r.stats[o.cpu] = s
		}
		switch phase {
		case 1:
			s.begin, s.hasBegin = o.v, true
		case 2:
			s.end, s.hasEnd = o.v, true
		}
	}
	return err
}
