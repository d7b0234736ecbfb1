package perfdata

import "math/bits"

// sample holds what a record's sample fields (or sample_id trailer) say.
// Spans are offsets into the record, so a sample stays valid when the
// record bytes move (into the reorder queue's arena).
type sample struct {
	has      uint64 // sample_type bits that were present
	id       uint64
	ip       uint64
	pid, tid uint32
	time     uint64
	cpu      uint32
	period   uint64
	rawOff   int32
	rawLen   int32
	chainOff int32
	chainN   int32
}

func (s *sample) hasTime() bool { return s.has&sampleTime != 0 }

// parseSample decodes a PERF_RECORD_SAMPLE laid out by a.sampleType. It
// returns a message and the record offset of the problem when the record
// is shorter than its layout requires.
//
// The sample is written to *s (a struct returned by value is copied twice
// per record, which showed in profiles).
func parseSample(rec []byte, a *attr, ord byteOrder, s *sample) (msg string, at int) {
	if !a.layDone {
		a.lay, a.layDone = newSampleLayout(a.sampleType), true
	}
	if a.lay.ok && a.lay.parse(rec, ord, s) {
		return "", 0
	}
	*s, msg, at = parseSampleGeneral(rec, a, ord)
	return msg, at
}

// parseSampleGeneral walks any sample layout field by field.
func parseSampleGeneral(rec []byte, a *attr, ord byteOrder) (s sample, msg string, at int) {
	st := a.sampleType
	p := 8
	n := len(rec)
	short := func(what string, need int) (sample, string, int) {
		return s, "sample of " + itoa(int64(n)) + " bytes (" + sampleTypeString(st) + ") ends inside " + what + " (needs " + itoa(int64(need)) + " more bytes)", p
	}
	u64 := func() uint64 {
		v := ord.u64(rec[p:])
		p += 8
		return v
	}
	// fixed prefix, in kernel output order
	if st&sampleIdentifier != 0 {
		if n-p < 8 {
			return short("IDENTIFIER", 8)
		}
		s.id = u64()
	}
	if st&sampleIP != 0 {
		if n-p < 8 {
			return short("IP", 8)
		}
		s.ip = u64()
	}
	if st&sampleTID != 0 {
		if n-p < 8 {
			return short("TID", 8)
		}
		s.pid = ord.u32(rec[p:])
		s.tid = ord.u32(rec[p+4:])
		p += 8
	}
	if st&sampleTime != 0 {
		if n-p < 8 {
			return short("TIME", 8)
		}
		s.time = u64()
	}
	if st&sampleAddr != 0 {
		if n-p < 8 {
			return short("ADDR", 8)
		}
		p += 8
	}
	if st&sampleID != 0 {
		if n-p < 8 {
			return short("ID", 8)
		}
		s.id = u64()
	}
	if st&sampleStreamID != 0 {
		if n-p < 8 {
			return short("STREAM_ID", 8)
		}
		p += 8
	}
	if st&sampleCPU != 0 {
		if n-p < 8 {
			return short("CPU", 8)
		}
		s.cpu = ord.u32(rec[p:])
		p += 8
	}
	if st&samplePeriod != 0 {
		if n-p < 8 {
			return short("PERIOD", 8)
		}
		s.period = u64()
	}
	if st&sampleRead != 0 {
		rf := a.readFormat
		per := 1 // value
		if rf&readID != 0 {
			per++
		}
		if rf&readLost != 0 {
			per++
		}
		if rf&readGroup != 0 {
			if n-p < 8 {
				return short("READ nr", 8)
			}
			nr := u64()
			hdr := 0
			if rf&readTotalTimeEnabled != 0 {
				hdr += 8
			}
			if rf&readTotalTimeRunning != 0 {
				hdr += 8
			}
			if nr > uint64(n) || hdr+int(nr)*8*per > n-p {
				return short("READ group values", hdr+int(min(nr, uint64(n)))*8*per)
			}
			p += hdr + int(nr)*8*per
		} else {
			need := 8 * per
			if rf&readTotalTimeEnabled != 0 {
				need += 8
			}
			if rf&readTotalTimeRunning != 0 {
				need += 8
			}
			if n-p < need {
				return short("READ value", need)
			}
			p += need
		}
	}
	if st&sampleCallchain != 0 {
		if n-p < 8 {
			return short("CALLCHAIN nr", 8)
		}
		nr := u64()
		if nr > uint64(n-p)/8 {
			return short("CALLCHAIN ips", int(min(nr, uint64(n)))*8)
		}
		s.chainOff, s.chainN = int32(p), int32(nr)
		p += int(nr) * 8
	}
	if st&sampleRaw != 0 {
		if n-p < 4 {
			return short("RAW size", 4)
		}
		sz := int(ord.u32(rec[p:]))
		p += 4
		if sz > n-p {
			return short("RAW data", sz)
		}
		s.rawOff, s.rawLen = int32(p), int32(sz)
		p += sz
	}
	// The rest is not needed for a timeline but is walked so that a layout
	// we get wrong shows up as an error instead of as garbage.
	if st&sampleBranchStack != 0 {
		if n-p < 8 {
			return short("BRANCH_STACK nr", 8)
		}
		nr := u64()
		if a.branchType&branchHWIndex != 0 {
			if n-p < 8 {
				return short("BRANCH_STACK hw_idx", 8)
			}
			p += 8
		}
		per := uint64(24)
		if a.branchType&branchCounters != 0 {
			per += 8
		}
		if nr > uint64(n-p)/per {
			return short("BRANCH_STACK entries", int(min(nr, uint64(n))*per))
		}
		p += int(nr * per)
	}
	if st&sampleRegsUser != 0 {
		if n-p < 8 {
			return short("REGS_USER abi", 8)
		}
		if abi := u64(); abi != 0 {
			need := 8 * bits.OnesCount64(a.regsUser)
			if n-p < need {
				return short("REGS_USER registers", need)
			}
			p += need
		}
	}
	if st&sampleStackUser != 0 {
		if n-p < 8 {
			return short("STACK_USER size", 8)
		}
		sz := u64()
		if sz > uint64(n-p) {
			return short("STACK_USER data", int(min(sz, uint64(n))))
		}
		p += int(sz)
		if sz != 0 {
			if n-p < 8 {
				return short("STACK_USER dyn_size", 8)
			}
			p += 8
		}
	}
	for _, b := range [...]uint64{sampleWeight | sampleWeightStruct, sampleDataSrc, sampleTransaction} {
		if st&b != 0 {
			if n-p < 8 {
				return short(sampleTypeString(st&b), 8)
			}
			p += 8
		}
	}
	if st&sampleRegsIntr != 0 {
		if n-p < 8 {
			return short("REGS_INTR abi", 8)
		}
		if abi := u64(); abi != 0 {
			need := 8 * bits.OnesCount64(a.regsIntr)
			if n-p < need {
				return short("REGS_INTR registers", need)
			}
			p += need
		}
	}
	// Kernel order: PHYS_ADDR, CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE, AUX.
	for _, b := range [...]uint64{samplePhysAddr, sampleCgroup, sampleDataPageSize, sampleCodePageSize} {
		if st&b != 0 {
			if n-p < 8 {
				return short(sampleTypeString(b), 8)
			}
			p += 8
		}
	}
	if st&sampleAux != 0 {
		if n-p < 8 {
			return short("AUX size", 8)
		}
		sz := u64()
		if sz > uint64(n-p) {
			return short("AUX data", int(min(sz, uint64(n))))
		}
		p += int(sz)
	}
	s.has = st
	return s, "", 0
}

// sampleLayout is where each field sits in a sample whose layout before
// RAW is fixed (no READ or CALLCHAIN) and whose fields after it are fixed
// size: what perf sched record writes. Such a sample is read with a few
// loads and one bounds check; any other goes the general way, as does one
// that fails the check (so its error is the general path's).
type sampleLayout struct {
	ok                             bool
	st                             uint64 // the sample_type it lays out
	id, ip, tid, time, cpu, period int    // offsets, 0 for absent
	raw                            int    // offset of the RAW size, 0 for none
	fixed                          int    // bytes up to the RAW size (or the end)
	tail                           int    // fixed bytes after RAW data
}

func newSampleLayout(st uint64) sampleLayout {
	const prefix = sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleAddr | sampleID | sampleStreamID | sampleCPU | samplePeriod
	const tailFixed = sampleWeight | sampleWeightStruct | sampleDataSrc | sampleTransaction | samplePhysAddr | sampleCgroup | sampleDataPageSize | sampleCodePageSize
	var l sampleLayout
	if st&^(prefix|sampleRaw|tailFixed) != 0 {
		return l
	}
	p := 8
	at := func(bit uint64) int {
		if st&bit == 0 {
			return 0
		}
		p += 8
		return p - 8
	}
	l.id = at(sampleIdentifier)
	l.ip = at(sampleIP)
	l.tid = at(sampleTID)
	l.time = at(sampleTime)
	at(sampleAddr)
	if o := at(sampleID); o != 0 {
		l.id = o
	}
	at(sampleStreamID)
	l.cpu = at(sampleCPU)
	l.period = at(samplePeriod)
	l.fixed = p
	if st&sampleRaw != 0 {
		l.raw = p
	}
	for _, b := range [...]uint64{sampleWeight | sampleWeightStruct, sampleDataSrc, sampleTransaction, samplePhysAddr, sampleCgroup, sampleDataPageSize, sampleCodePageSize} {
		if st&b != 0 {
			l.tail += 8
		}
	}
	l.ok, l.st = true, st
	return l
}

// parse reads a sample with layout l; ok is false when rec is too short
// for it (the caller then takes the general path for the error).
func (l *sampleLayout) parse(rec []byte, ord byteOrder, s *sample) bool {
	*s = sample{}
	n := len(rec)
	if l.raw != 0 {
		if n < l.raw+4 {
			return false
		}
		sz := int(ord.u32(rec[l.raw:]))
		if sz > n-l.raw-4-l.tail {
			return false
		}
		s.rawOff, s.rawLen = int32(l.raw+4), int32(sz)
	} else if n < l.fixed+l.tail {
		return false
	}
	if l.id != 0 {
		s.id = ord.u64(rec[l.id:])
	}
	if l.ip != 0 {
		s.ip = ord.u64(rec[l.ip:])
	}
	if l.tid != 0 {
		s.pid = ord.u32(rec[l.tid:])
		s.tid = ord.u32(rec[l.tid+4:])
	}
	if l.time != 0 {
		s.time = ord.u64(rec[l.time:])
	}
	if l.cpu != 0 {
		s.cpu = ord.u32(rec[l.cpu:])
	}
	if l.period != 0 {
		s.period = ord.u64(rec[l.period:])
	}
	s.has = l.st
	return true
}

// parseTrailer decodes the sample_id block at the end of a non-sample kernel
// record. ok is false when the record is too short to hold it.
func parseTrailer(rec []byte, a *attr, ord byteOrder, bodyMin int) (s sample, ok bool) {
	if a == nil || !a.sampleIDAll() {
		return s, len(rec) >= bodyMin
	}
	p := len(rec) - a.idHdrSize
	if p < bodyMin {
		return s, false
	}
	st := a.sampleType
	if st&sampleTID != 0 {
		s.pid = ord.u32(rec[p:])
		s.tid = ord.u32(rec[p+4:])
		p += 8
	}
	if st&sampleTime != 0 {
		s.time = ord.u64(rec[p:])
		p += 8
	}
	if st&sampleID != 0 {
		s.id = ord.u64(rec[p:])
		p += 8
	}
	if st&sampleStreamID != 0 {
		p += 8
	}
	if st&sampleCPU != 0 {
		s.cpu = ord.u32(rec[p:])
		p += 8
	}
	if st&sampleIdentifier != 0 {
		s.id = ord.u64(rec[p:])
	}
	s.has = st & (sampleTID | sampleTime | sampleID | sampleStreamID | sampleCPU | sampleIdentifier)
	return s, true
}

var sampleBitNames = [...]string{"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU",
	"PERIOD", "STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT",
	"DATA_SRC", "IDENTIFIER", "TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX", "CGROUP",
	"DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT"}

// sampleTypeString renders sample_type bits as perf names them.
func sampleTypeString(st uint64) string {
	s := ""
	for i := 0; i < 64; i++ {
		if st&(1<<i) == 0 {
			continue
		}
		if s != "" {
			s += "|"
		}
		if i < len(sampleBitNames) {
			s += sampleBitNames[i]
		} else {
			s += "bit" + itoa(int64(i))
		}
	}
	if s == "" {
		return "none"
	}
	return s
}
