package perfdata

import (
	"math/bits"

	"github.com/schedreplay/replay/timeline"
)

// attrSizeVer0 is the size of the first perf_event_attr (PERF_ATTR_SIZE_VER0);
// every later version only appends fields.
const attrSizeVer0 = 64

// maxAttrSize bounds an attr's size. The struct is 136 bytes in 2025 and
// grows by 8 bytes every few years; anything near this limit is corrupt.
const maxAttrSize = 4096

// attr is one perf_event_attr with the sample ids that point to it.
type attr struct {
	idx        int
	typ        uint32
	size       uint32 // on-disk size of the attr struct
	config     uint64
	sampleType uint64
	readFormat uint64
	flags      uint64 // attr flag bit n is bit n here, whatever the byte order
	branchType uint64
	regsUser   uint64
	regsIntr   uint64
	clockID    int32
	ids        []uint64

	// name is the event name perf gave it (EVENT_DESC, EVENT_UPDATE), e.g.
	// "sched:sched_switch" or "cycles:u"; empty until known.
	name string

	// idHdrSize is the size of the sample_id trailer of non-sample records.
	idHdrSize int

	// lay is the sample layout's fast path, built on first use.
	lay     sampleLayout
	layDone bool

	// Row decoding, built on first use (see plan).
	planned bool
	row     string
	kind    timeline.Kind
	tp      *tpPlan
}

func (a *attr) flag(bit uint) bool { return a.flags&(1<<bit) != 0 }

func (a *attr) sampleIDAll() bool { return a.flag(flagSampleIDAll) }

// parseAttr decodes a perf_event_attr of any size >= 64 from b (exactly the
// on-disk struct). Fields beyond attr.size, or beyond b, read as zero;
// bytes past the fields we know are ignored, so newer (larger) attrs work.
func parseAttr(b []byte, base int64, ord byteOrder, what string) (*attr, *cursorErr) {
	if len(b) < attrSizeVer0 {
		return nil, &cursorErr{at: base, msg: what + ": " + itoa(int64(len(b))) + " bytes, a perf_event_attr has at least 64"}
	}
	a := &attr{}
	a.typ = ord.u32(b[0:])
	a.size = ord.u32(b[4:])
	size := int(a.size)
	if size == 0 {
		size = attrSizeVer0 // perf's ABI0 files
	}
	if size < attrSizeVer0 || size > maxAttrSize {
		return nil, &cursorErr{at: base + 4, msg: what + ": attr size " + itoa(int64(a.size)) + ", expected 64.." + itoa(maxAttrSize)}
	}
	if size > len(b) {
		size = len(b)
	}
	b = b[:size]
	u64 := func(off int) uint64 {
		if off+8 > len(b) {
			return 0
		}
		return ord.u64(b[off:])
	}
	a.config = u64(8)
	a.sampleType = u64(24)
	a.readFormat = u64(32)
	// The flags are a C bitfield: a big-endian writer put bit 0 in the top
	// bit of the first byte, so there each byte is bit-reversed rather than
	// the word byte-swapped (perf's swap_bitfield does the same).
	var fb [8]byte
	copy(fb[:], b[40:48])
	if ord.big {
		for i := range fb {
			fb[i] = bits.Reverse8(fb[i])
		}
	}
	a.flags = byteOrder{}.u64(fb[:])
	a.branchType = u64(72)
	a.regsUser = u64(80)
	if len(b) >= 96 {
		a.clockID = int32(ord.u32(b[92:]))
	}
	a.regsIntr = u64(96)
	a.idHdrSize = trailerSize(a.sampleType)
	return a, nil
}

// trailerSize is the size of the sample_id block that ends every non-sample
// kernel record when sample_id_all is set.
func trailerSize(st uint64) int {
	n := 0
	for _, b := range [...]uint64{sampleTID, sampleTime, sampleID, sampleStreamID, sampleCPU, sampleIdentifier} {
		if st&b != 0 {
			n += 8
		}
	}
	return n
}

// hwNames and swNames are perf's names for the generic hardware and
// software events, used when the file does not name an event.
var hwNames = [...]string{"cycles", "instructions", "cache-references", "cache-misses",
	"branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
	"stalled-cycles-backend", "ref-cycles"}

var swNames = [...]string{"cpu-clock", "task-clock", "page-faults", "context-switches",
	"cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
	"emulation-faults", "dummy", "bpf-output", "cgroup-switches"}

// defaultName names an attr the file did not name.
func (a *attr) defaultName(pmus map[uint32]string) string {
	switch a.typ {
	case typeHardware:
		if a.config < uint64(len(hwNames)) {
			return hwNames[a.config]
		}
	case typeSoftware:
		if a.config < uint64(len(swNames)) {
			return swNames[a.config]
		}
	case typeTracepoint:
		return "tracepoint:" + itoa(int64(a.config))
	}
	if p, ok := pmus[a.typ]; ok {
		return p + "/config=0x" + hex(a.config) + "/"
	}
	return "type" + itoa(int64(a.typ)) + "/config=0x" + hex(a.config) + "/"
}

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b [16]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[i:])
}
