package perfdata

import "strconv"

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
	m   map[int32]*thread
	str *interner
}

type thread struct {
	pid     int32
	comm    string
	commSet bool
}

func (t *threads) init() {
	t.m = map[int32]*thread{0: {pid: 0, comm: "swapper", commSet: true}}
}

func (t *threads) findnew(pid, tid int32) *thread {
	th := t.m[tid]
	if th != nil {
		if th.pid == -1 && pid != -1 {
			th.pid = pid
		}
		return th
	}
	th = &thread{pid: pid, comm: t.placeholder(tid)}
	t.m[tid] = th
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
		delete(t.m, ptid)
		parent = t.findnew(ppid, ptid)
	}
	delete(t.m, tid)
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
type interner struct{ m map[string]string }

const maxInterned = 1 << 16

func (in *interner) str(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if in.m == nil || len(in.m) >= maxInterned {
		in.m = make(map[string]string, 1024)
	}
	s := string(b)
	in.m[s] = s
	return s
}
