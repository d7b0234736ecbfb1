package perfdata

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"os"
	"testing"
)

// A small perf.data writer for tests: it builds files perf itself would
// write (same layouts), in either byte order and either mode, so that the
// cases no fixture has (big endian, missing FINISHED_ROUND, corrupt
// fields at chosen places) can be tested exactly.

type synth struct {
	ord      binary.ByteOrder
	big      bool
	bitmap32 bool // big-endian writer with 32-bit unsigned long feature bitmap
	blob     []byte
	recs     [][]byte
	feats    map[int][]byte
	ids      []uint64
}

const synthSampleType = sampleIdentifier | sampleIP | sampleTID | sampleTime | sampleCPU | samplePeriod | sampleRaw
const synthTPID = 372

func newSynth(t testing.TB, big bool) *synth {
	w := &synth{ord: binary.LittleEndian, big: big, feats: map[int][]byte{}, ids: []uint64{1001, 1002}}
	if big {
		w.ord = binary.BigEndian
	}
	w.blob = w.tracingBlob(t)
	w.feats[featTracingData] = w.blob
	w.feats[featHostname] = w.pstr("synth-host")
	w.feats[featOSRelease] = w.pstr("6.18.0-synth")
	w.feats[featNrCPUs] = w.cat(w.u32(2), w.u32(2))
	w.feats[featCPUTopology] = w.cat(
		w.u32(1), w.pstr("0-1"), // package siblings
		w.u32(2), w.pstr("0"), w.pstr("1"), // core siblings
		w.u32(0), w.u32(0), w.u32(1), w.u32(0), // core/socket ids
		w.u32(1), w.pstr("0-1"), w.u32(0), w.u32(0)) // dies
	return w
}

func (w *synth) u16(v uint16) []byte        { b := make([]byte, 2); w.ord.PutUint16(b, v); return b }
func (w *synth) u32(v uint32) []byte        { b := make([]byte, 4); w.ord.PutUint32(b, v); return b }
func (w *synth) u64(v uint64) []byte        { b := make([]byte, 8); w.ord.PutUint64(b, v); return b }
func (w *synth) cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// pstr is a perf string: u32 length (padded to 64), NUL-padded text.
func (w *synth) pstr(s string) []byte {
	n := (len(s) + 1 + 63) / 64 * 64
	b := make([]byte, n)
	copy(b, s)
	return w.cat(w.u32(uint32(n)), b)
}

// schedSwitchFormat is the sched_switch format of the fixture's kernel,
// taken from the tracing data inside perf_sched_record.data.
func schedSwitchFormat(t testing.TB) []byte {
	data, err := os.ReadFile(fixturePath("perf_sched_record.data"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("name: sched_switch\n"))
	if i < 8 {
		t.Fatal("no sched_switch format in the fixture")
	}
	n := binary.LittleEndian.Uint64(data[i-8:])
	return bytes.Replace(data[i:i+int(n)], []byte("ID: 372\n"), []byte("ID: 372\n"), 1)
}

// tracingBlob builds a tracing-data blob in the writer's byte order.
func (w *synth) tracingBlob(t testing.TB) []byte {
	endian := byte(0)
	if w.big {
		endian = 1
	}
	hp := []byte("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n")
	he := []byte("# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n")
	f := schedSwitchFormat(t)
	return w.cat([]byte{0x17, 0x08, 0x44}, []byte("tracing0.6\x00"), []byte{endian, 8}, w.u32(4096),
		[]byte("header_page\x00"), w.u64(uint64(len(hp))), hp,
		[]byte("header_event\x00"), w.u64(uint64(len(he))), he,
		w.u32(0), // ftrace formats
		w.u32(1), []byte("sched\x00"), w.u32(1), w.u64(uint64(len(f))), f,
		w.u32(0), // kallsyms
		w.u32(0), // printk
		w.u64(0)) // saved cmdlines
}

// attr builds a perf_event_attr of size bytes for the sched_switch
// tracepoint: flags disabled|inherit|sample_id_all|exclude_guest.
func (w *synth) attr(size int) []byte {
	b := make([]byte, size)
	w.ord.PutUint32(b[0:], typeTracepoint)
	w.ord.PutUint32(b[4:], uint32(size))
	w.ord.PutUint64(b[8:], synthTPID)
	w.ord.PutUint64(b[16:], 1)
	w.ord.PutUint64(b[24:], synthSampleType)
	w.ord.PutUint64(b[32:], readID)
	flags := uint64(1<<0 | 1<<1 | 1<<flagSampleIDAll | 1<<20)
	binary.LittleEndian.PutUint64(b[40:], flags)
	if w.big { // a C bitfield on a big-endian machine
		for i := 40; i < 48; i++ {
			b[i] = bits.Reverse8(b[i])
		}
	}
	return b
}

func (w *synth) rec(typ uint32, misc uint16, body []byte) []byte {
	return w.cat(w.u32(typ), w.u16(misc), w.u16(uint16(8+len(body))), body)
}

// trailer is the sample_id block for synthSampleType: TID, TIME, CPU, IDENTIFIER.
func (w *synth) trailer(pid, tid uint32, time uint64, cpu uint32, id uint64) []byte {
	return w.cat(w.u32(pid), w.u32(tid), w.u64(time), w.u32(cpu), w.u32(0), w.u64(id))
}

func pad8(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func (w *synth) comm(pid, tid uint32, name string, exec bool, time uint64, cpu uint32) {
	misc := uint16(0)
	if exec {
		misc = miscCommExec
	}
	id := w.ids[0]
	if time == 0 {
		id = 0
	}
	w.recs = append(w.recs, w.rec(recComm, misc, w.cat(w.u32(pid), w.u32(tid), pad8(append([]byte(name), 0)), w.trailer(pid, tid, time, cpu, id))))
}

func (w *synth) fork(pid, ppid, tid, ptid uint32, time uint64, cpu uint32) {
	w.recs = append(w.recs, w.rec(recFork, 0, w.cat(w.u32(pid), w.u32(ppid), w.u32(tid), w.u32(ptid), w.u64(time), w.trailer(ppid, ptid, time, cpu, w.ids[0]))))
}

func (w *synth) round() { w.recs = append(w.recs, w.rec(recFinishedRound, 0, nil)) }

func (w *synth) lost(n uint64, time uint64, cpu uint32) {
	w.recs = append(w.recs, w.rec(recLost, 0, w.cat(w.u64(w.ids[1]), w.u64(n), w.trailer(0, 0, time, cpu, w.ids[1]))))
}

// sw appends a sched_switch sample.
func (w *synth) sw(time uint64, cpu uint32, prevComm string, prevPID int32, prevState int64, nextComm string, nextPID int32) {
	raw := make([]byte, 64)
	w.ord.PutUint16(raw[0:], synthTPID)
	raw[2], raw[3] = 0x1, 0x2
	w.ord.PutUint32(raw[4:], uint32(prevPID))
	copy(raw[8:24], prevComm)
	w.ord.PutUint32(raw[24:], uint32(prevPID))
	w.ord.PutUint32(raw[28:], 120)
	w.ord.PutUint64(raw[32:], uint64(prevState))
	copy(raw[40:56], nextComm)
	w.ord.PutUint32(raw[56:], uint32(nextPID))
	w.ord.PutUint32(raw[60:], 100)
	rawBlock := w.cat(w.u32(uint32(len(raw)+4)), raw, make([]byte, 4)) // size keeps the sample 8-aligned
	id := w.ids[int(cpu)%len(w.ids)]
	body := w.cat(w.u64(id), w.u64(0xffffffff81000000), w.u32(uint32(prevPID)), w.u32(uint32(prevPID)), w.u64(time), w.u32(cpu), w.u32(0), w.u64(1), rawBlock)
	w.recs = append(w.recs, w.rec(recSample, 1, body))
}

// file renders file mode: header, ids, attr, data, feature table, features.
func (w *synth) file(attrSize int) []byte {
	var out []byte
	out = append(out, make([]byte, fileHeaderSize)...)
	idsOff := len(out)
	for _, id := range w.ids {
		out = append(out, w.u64(id)...)
	}
	attrsOff := len(out)
	out = append(out, w.attr(attrSize)...)
	out = append(out, w.u64(uint64(idsOff))...)
	out = append(out, w.u64(uint64(8*len(w.ids)))...)
	attrsSize := len(out) - attrsOff
	dataOff := len(out)
	for _, r := range w.recs {
		out = append(out, r...)
	}
	dataSize := len(out) - dataOff
	var feats []int
	for f := 1; f < 256; f++ {
		if w.feats[f] != nil {
			feats = append(feats, f)
		}
	}
	table := len(out)
	out = append(out, make([]byte, 16*len(feats))...)
	for i, f := range feats {
		off := len(out)
		out = append(out, w.feats[f]...)
		w.ord.PutUint64(out[table+16*i:], uint64(off))
		w.ord.PutUint64(out[table+16*i+8:], uint64(len(w.feats[f])))
	}
	h := out[:fileHeaderSize]
	if w.big {
		copy(h, "2ELIFREP")
	} else {
		copy(h, "PERFILE2")
	}
	w.ord.PutUint64(h[8:], fileHeaderSize)
	w.ord.PutUint64(h[16:], uint64(attrSize+16))
	w.ord.PutUint64(h[24:], uint64(attrsOff))
	w.ord.PutUint64(h[32:], uint64(attrsSize))
	w.ord.PutUint64(h[40:], uint64(dataOff))
	w.ord.PutUint64(h[48:], uint64(dataSize))
	var bm [4]uint64
	for _, f := range feats {
		bm[f/64] |= 1 << (f % 64)
	}
	for i, v := range bm {
		if w.bitmap32 {
			w.ord.PutUint32(h[72+8*i:], uint32(v))
			w.ord.PutUint32(h[76+8*i:], uint32(v>>32))
		} else {
			w.ord.PutUint64(h[72+8*i:], v)
		}
	}
	return out
}

// pipe renders pipe mode: HEADER_ATTR, HEADER_FEATUREs, tracing data, data.
func (w *synth) pipe(attrSize int) []byte {
	out := []byte("PERFILE2")
	if w.big {
		out = []byte("2ELIFREP")
	}
	out = append(out, w.u64(pipeHeaderSize)...)
	ids := []byte{}
	for _, id := range w.ids {
		ids = append(ids, w.u64(id)...)
	}
	out = append(out, w.rec(recHeaderAttr, 0, w.cat(w.attr(attrSize), ids))...)
	for f := 2; f < 256; f++ {
		if w.feats[f] != nil {
			// unpadded bodies, as perf <= 6.8 wrote them
			out = append(out, w.rec(recHeaderFeature, 0, w.cat(w.u64(uint64(f)), w.feats[f]))...)
		}
	}
	out = append(out, w.rec(recHeaderFeature, 0, w.u64(featCPUDomainInfo))...) // end marker
	blob := pad8(append([]byte(nil), w.blob...))
	out = append(out, w.rec(recTracingData, 0, w.cat(w.u32(uint32(len(blob))), w.u32(0)))...)
	out = append(out, blob...)
	for _, r := range w.recs {
		out = append(out, r...)
	}
	return out
}

func readFileErr(p string) ([]byte, error) { return os.ReadFile(p) }
