package perfdata

import (
	"encoding/binary"
	"strconv"
)

// threads replays perf's thread table (tools/perf/util/machine.c) so that
// common_comm is what perf script prints for the same sample:
//   - a thread perf has not heard of is named ":<tid>";
//   - tid 0 is "swapper" (perf registers the idle task up front);
//   - COMM renames the thread;
//   - FORK creates the child (replacing a thread of the same tid: pid
//     reuse) and gives it the parent's name if the parent's name is known;
//     a parent found under another pid is replaced first, as perf does;
//   - EXIT keeps the thread (perf 6.1 only marks it dead), so the final
//     sched_switch out of an exiting task still carries its name. perf 6.8
//     and later drop the thread at EXIT unless keep_exited_threads is set,
//     and then print ":<tid>" for those last samples; the name is the more
//     useful fact for a timeline, and it is what the goldens (perf 6.1) show.
type threads struct {
	m map[int32]*thread
	// pages index threads by tid below pidMaxLimit without hashing: a
	// lookup per sample, most of them for a few hundred tids. Pages are
	// made on first use, so memory follows the tids the trace names.
	pages [pidMaxLimit / threadPage]*[threadPage]*thread
}

const (
	pidMaxLimit = 1 << 22 // the kernel's PID_MAX_LIMIT on 64-bit
	threadPage  = 1 << 10
)

func (t *threads) get(tid int32) *thread {
	if uint32(tid) < pidMaxLimit {
		if p := t.pages[tid/threadPage]; p != nil {
			return p[tid%threadPage]
		}
		return nil
	}
	return t.m[tid]
}

func (t *threads) set(tid int32, th *thread) {
	if uint32(tid) < pidMaxLimit {
		p := t.pages[tid/threadPage]
		if p == nil {
			p = new([threadPage]*thread)
			t.pages[tid/threadPage] = p
		}
		p[tid%threadPage] = th
		return
	}
	if th == nil {
		delete(t.m, tid)
		return
	}
	t.m[tid] = th
}

type thread struct {
	pid     int32
	comm    string
	commSet bool
}

func (t *threads) init() {
	t.m = map[int32]*thread{}
	t.set(0, &thread{pid: 0, comm: "swapper", commSet: true})
}

func (t *threads) findnew(pid, tid int32) *thread {
	th := t.get(tid)
	if th != nil {
		if th.pid == -1 && pid != -1 {
			th.pid = pid
		}
		return th
	}
	th = &thread{pid: pid, comm: t.placeholder(tid)}
	t.set(tid, th)
	return th
}

func (t *threads) placeholder(tid int32) string {
	return ":" + strconv.Itoa(int(tid))
}

func (t *threads) setComm(pid, tid int32, comm string) {
	th := t.findnew(pid, tid)
	th.comm, th.commSet = comm, true
}

func (t *threads) fork(pid, ppid, tid, ptid int32) {
	parent := t.findnew(ppid, ptid)
	if parent.pid != ppid {
		t.set(ptid, nil)
		parent = t.findnew(ppid, ptid)
	}
	t.set(tid, nil)
	child := t.findnew(pid, tid)
	if parent.commSet {
		child.comm, child.commSet = parent.comm, true
	}
}

func (t *threads) comm(pid, tid int32) string { return t.findnew(pid, tid).comm }

// interner makes one string per distinct byte sequence (comm names,
// filenames repeat endlessly), so rows do not allocate per event. It is
// bounded: past maxInterned entries it starts over, which only costs
// allocations, never correctness.
//
// A small direct-mapped cache sits in front of the map: a trace names a
// few hundred tasks at most at a time, and comparing a cached string with
// the bytes costs a fraction of a map lookup's hashing and probing.
type interner struct {
	m     map[string]string
	cache [internCache]string
}

const (
	maxInterned = 1 << 16
	internCache = 1024
)

func (in *interner) str(b []byte) string {
	slot := internSlot(b)
	if s := in.cache[slot]; s == string(b) {
		return s
	}
	s, ok := in.m[string(b)]
	if !ok {
		if in.m == nil || len(in.m) >= maxInterned {
			in.m = make(map[string]string, 1024)
		}
		s = string(b)
		in.m[s] = s
	}
	in.cache[slot] = s
	return s
}

// internSlot hashes the length and the first and last 8 bytes, which
// tell task names apart (they differ in their prefix or their "/N" suffix).
func internSlot(b []byte) uint32 {
	var lo, hi uint64
	n := len(b)
	switch {
	case n >= 8:
		lo = binary.LittleEndian.Uint64(b)
		hi = binary.LittleEndian.Uint64(b[n-8:])
	default:
		for i, c := range b {
			lo |= uint64(c) << (8 * i)
		}
	}
	h := (lo ^ hi*0x9e3779b97f4a7c15 ^ uint64(n)) * 0xff51afd7ed558ccd
	return uint32(h>>40) % internCache
}
