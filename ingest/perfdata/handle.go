package perfdata

import (
	"encoding/binary"
	"strings"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

// handle processes one record in file order. It returns true when the
// record was delivered at once as the current row.
func (r *Reader) handle(rec *rawRec) (bool, error) {
	switch rec.typ {
	case recSample, recComm, recFork, recExit, recLost, recLostSamples, recSwitch, recSwitchCPUWide:
		return r.kernelRecord(rec)
	case recFinishedRound:
		r.q.finishedRound()
	case recHeaderAttr:
		return false, r.headerAttr(rec)
	case recTracingData:
		if err := r.setTracingData(rec.extra, rec.off+int64(len(rec.data))); err != nil {
			return false, err
		}
		r.addFeatureName(featTracingData)
	case recHeaderFeature:
		return false, r.headerFeature(rec)
	case recEventUpdate:
		r.eventUpdate(rec)
	default:
		r.skipped[rec.typ]++
	}
	return false, nil
}

func (r *Reader) recErr(rec *rawRec, msg string) error {
	e := &FormatError{File: r.name, Offset: rec.off, Msg: msg}
	if rec.zpos >= 0 {
		e.Where = "zstd stream byte " + hexOff(rec.zpos)
	}
	return e
}

// headerAttr registers a pipe-mode HEADER_ATTR: the attr (its own size),
// then the sample ids up to the end of the record.
func (r *Reader) headerAttr(rec *rawRec) error {
	body := rec.data[8:]
	if len(body) < attrSizeVer0 {
		return r.recErr(rec, "HEADER_ATTR record of "+itoa(int64(len(rec.data)))+" bytes cannot hold a 64-byte perf_event_attr")
	}
	sz := int(r.ord.u32(body[4:]))
	if sz == 0 {
		sz = attrSizeVer0
	}
	if sz < attrSizeVer0 || sz > len(body) {
		return r.recErr(rec, "HEADER_ATTR attr size "+itoa(int64(sz))+" does not fit its record of "+itoa(int64(len(rec.data)))+" bytes")
	}
	a, cerr := parseAttr(body[:sz], rec.off+8, r.ord, "HEADER_ATTR")
	if cerr != nil {
		return r.recErr(rec, cerr.msg)
	}
	ids := body[sz:]
	a.ids = make([]uint64, len(ids)/8)
	for i := range a.ids {
		a.ids[i] = r.ord.u64(ids[i*8:])
	}
	return r.addAttr(a, rec.off+8)
}

// headerFeature parses a pipe-mode HEADER_FEATURE. Bodies are parsed by
// content, never by the record size (perf <= 6.8 did not pad them).
func (r *Reader) headerFeature(rec *rawRec) error {
	if len(rec.data) < 16 {
		return r.recErr(rec, "HEADER_FEATURE record of "+itoa(int64(len(rec.data)))+" bytes has no feature id")
	}
	id := r.ord.u64(rec.data[8:])
	body := rec.data[16:]
	if id >= featCPUDomainInfo && len(body) == 0 {
		// The writer's HEADER_LAST_FEATURE with no body marks the end of
		// the features (32 up to perf 6.16, 33 once CPU_DOMAIN_INFO exists).
		r.finishHeader()
		return nil
	}
	if id > 255 {
		return r.recErr(rec, "HEADER_FEATURE id "+itoa(int64(min(id, 1<<62)))+", expected 1..255")
	}
	f := int(id)
	r.addFeatureName(f)
	if !featureParsed(f) {
		return nil
	}
	if f == featCPUTopology || f == featNUMATopology || f == featCache || f == featNrCPUs {
		r.topoDone = false
	}
	// Copy: the body aliases the read buffer, and feature strings are kept.
	b := append([]byte(nil), body...)
	return r.parseFeature(f, b, rec.off+16)
}

func (r *Reader) addFeatureName(f int) {
	n := featName(f)
	for _, x := range r.meta.Source.Features {
		if x == n {
			return
		}
	}
	r.meta.Source.Features = append(r.meta.Source.Features, n)
}

// eventUpdate takes the event name from EVENT_UPDATE NAME records.
func (r *Reader) eventUpdate(rec *rawRec) {
	if len(rec.data) < 24 {
		r.skipped[rec.typ]++
		return
	}
	typ, id := r.ord.u64(rec.data[8:]), r.ord.u64(rec.data[16:])
	if typ != 2 { // PERF_EVENT_UPDATE__NAME
		return
	}
	if a := r.byID[id]; a != nil {
		a.name = cstring(rec.data[24:])
		a.planned = false
	}
}

// attrFor finds the attr of a kernel record from its sample id. perf puts
// the id at the same place for all attrs of a session, so the first attr's
// layout locates it. nil means the id names no attr.
func (r *Reader) attrFor(rec *rawRec) *attr {
	switch len(r.attrs) {
	case 0:
		return nil
	case 1:
		return r.attrs[0]
	}
	first := r.attrs[0]
	st := first.sampleType
	b := rec.data
	var id uint64
	if rec.typ == recSample {
		switch {
		case st&sampleIdentifier != 0:
			if len(b) < 16 {
				return nil
			}
			id = r.ord.u64(b[8:])
		case st&sampleID != 0:
			p := 8
			for _, f := range [...]uint64{sampleIP, sampleTID, sampleTime, sampleAddr} {
				if st&f != 0 {
					p += 8
				}
			}
			if len(b) < p+8 {
				return nil
			}
			id = r.ord.u64(b[p:])
		default:
			return first
		}
	} else {
		if !first.sampleIDAll() {
			return first
		}
		switch {
		case st&sampleIdentifier != 0:
			if len(b) < 16 {
				return nil
			}
			id = r.ord.u64(b[len(b)-8:])
		case st&sampleID != 0:
			back := 8
			if st&sampleStreamID != 0 {
				back += 8
			}
			if st&sampleCPU != 0 {
				back += 8
			}
			if len(b) < 8+back {
				return nil
			}
			id = r.ord.u64(b[len(b)-back:])
		default:
			return first
		}
	}
	if id == 0 {
		return first // perf's synthesized records have an all-zero trailer
	}
	return r.attrByID(id)
}

// idSlot caches one sample id's attr. perf numbers ids from a counter,
// one per event per CPU, so the low bits spread them over the slots.
type idSlot struct {
	id uint64
	a  *attr
}

const idCacheSlots = 256

func (r *Reader) attrByID(id uint64) *attr {
	sl := &r.idCache[id%idCacheSlots]
	if sl.a != nil && sl.id == id {
		return sl.a
	}
	a := r.byID[id]
	if a != nil {
		*sl = idSlot{id, a}
	}
	return a
}

// bodyMin is the smallest record (header + fixed body) of a record type.
func bodyMin(typ uint32) int {
	switch typ {
	case recComm, recLostSamples:
		return 16
	case recLost:
		return 24
	case recFork, recExit:
		return 32
	case recSwitchCPUWide:
		return 16
	}
	return 8
}

// kernelRecord parses a record that can become a row and either queues it
// for reordering or, when it has no time, delivers it at once.
func (r *Reader) kernelRecord(rec *rawRec) (bool, error) {
	a := r.attrFor(rec)
	var s sample
	if rec.typ == recSample {
		if a == nil {
			if len(r.attrs) == 0 {
				r.drop("sample before any attr", 1)
			} else {
				r.drop("sample with unknown id", 1)
			}
			return false, nil
		}
		var msg string
		var at int
		msg, at = parseSample(rec.data, a, r.ord, &s)
		if msg != "" {
			rec.off += int64(at)
			if rec.zpos >= 0 {
				rec.off -= int64(at)
				rec.zpos += int64(at)
			}
			return false, r.recErr(rec, msg)
		}
	} else {
		if a == nil && len(r.attrs) > 0 {
			a = r.attrs[0] // all attrs share the trailer layout
		}
		var ok bool
		s, ok = parseTrailer(rec.data, a, r.ord, bodyMin(rec.typ))
		if !ok {
			tsz := 0
			if a != nil && a.sampleIDAll() {
				tsz = a.idHdrSize
			}
			return false, r.recErr(rec, recName(rec.typ)+" record of "+itoa(int64(len(rec.data)))+" bytes is too short for its "+itoa(int64(bodyMin(rec.typ)))+"-byte body and "+itoa(int64(tsz))+"-byte sample_id trailer")
		}
	}
	if !s.hasTime() || s.time == 0 || s.time == ^uint64(0) {
		return r.emit(rec.typ, rec.misc, a, rec.data, &s), nil
	}
	ai := int32(-1)
	if a != nil {
		ai = int32(a.idx)
	}
	r.q.push(s.time, ai, rec.data)
	return false, nil
}

// deliver makes a queued record the current row. The record was checked
// when it was queued; parsing it again is cheaper than keeping the result.
func (r *Reader) deliver(rec []byte, ai int32) bool {
	var a *attr
	if ai >= 0 {
		a = r.attrs[ai]
	}
	typ, misc := r.ord.u32(rec), r.ord.u16(rec[4:])
	var s sample
	if typ == recSample {
		parseSample(rec, a, r.ord, &s)
	} else {
		s, _ = parseTrailer(rec, a, r.ord, bodyMin(typ))
	}
	return r.emit(typ, misc, a, rec, &s)
}

// emit builds the row of a record; false when the record makes no row.
func (r *Reader) emit(typ uint32, misc uint16, a *attr, rec []byte, s *sample) bool {
	e := &r.ev
	e.Reset()
	e.Time = int64(s.time)
	if s.time == ^uint64(0) {
		e.Time = 0
	}
	ord := r.ord
	cpu := -1
	if s.has&sampleCPU != 0 {
		cpu = int(int32(s.cpu))
		e.SetInt(timeline.CPU, int64(cpu))
	}
	tail := 0
	if a != nil && a.sampleIDAll() {
		tail = a.idHdrSize
	}
	switch typ {
	case recSample:
		return r.emitSample(a, rec, s)
	case recComm:
		pid, tid := int32(ord.u32(rec[8:])), int32(ord.u32(rec[12:]))
		comm := r.str.str(cbytes(rec[16 : len(rec)-tail]))
		r.thr.setComm(pid, tid, comm)
		e.Name, e.Kind = "perf:comm", timeline.PerfComm
		e.SetInt(timeline.CommonPID, int64(tid))
		e.SetInt(timeline.CommonTGID, int64(pid))
		e.SetStr(timeline.Comm, comm)
		if misc&miscCommExec != 0 {
			r.appendField(timeline.Field{Name: "exec", Kind: timeline.FieldInt, Int: 1})
		}
	case recFork, recExit:
		pid, ppid := int32(ord.u32(rec[8:])), int32(ord.u32(rec[12:]))
		tid, ptid := int32(ord.u32(rec[16:])), int32(ord.u32(rec[20:]))
		if typ == recFork {
			r.thr.fork(pid, ppid, tid, ptid)
			e.Name, e.Kind = "perf:fork", timeline.PerfFork
			e.SetInt(timeline.ParentPID, int64(ptid))
			e.SetInt(timeline.ChildPID, int64(tid))
			r.appendField(timeline.Field{Name: "pid", Kind: timeline.FieldInt, Int: int64(pid)})
			r.appendField(timeline.Field{Name: "ppid", Kind: timeline.FieldInt, Int: int64(ppid)})
		} else {
			e.Name, e.Kind = "perf:exit", timeline.PerfExit
			e.SetInt(timeline.PID, int64(tid))
			r.appendField(timeline.Field{Name: "tgid", Kind: timeline.FieldInt, Int: int64(pid)})
			r.appendField(timeline.Field{Name: "ppid", Kind: timeline.FieldInt, Int: int64(ppid)})
			r.appendField(timeline.Field{Name: "ptid", Kind: timeline.FieldInt, Int: int64(ptid)})
		}
	case recLost, recLostSamples:
		var n uint64
		reason := "PERF_RECORD_LOST"
		if typ == recLost {
			n = ord.u64(rec[16:])
		} else {
			n = ord.u64(rec[8:])
			reason = "PERF_RECORD_LOST_SAMPLES"
		}
		e.Name, e.Kind = "lost", timeline.Lost
		e.SetInt(timeline.LostCount, int64(n))
		r.meta.Summary.Lost.Add(cpu, reason, n)
		// Which event lost samples: LOST names it by id in its body,
		// LOST_SAMPLES by its sample_id trailer.
		var la *attr
		switch {
		case len(r.attrs) == 1:
			la = r.attrs[0]
		case typ == recLost:
			la = r.byID[ord.u64(rec[8:])]
		case s.has&(sampleID|sampleIdentifier) != 0:
			la = r.byID[s.id]
		}
		r.appendField(timeline.Field{Name: "record", Kind: timeline.FieldString, Str: reason})
		if la != nil {
			r.appendField(timeline.Field{Name: "event", Kind: timeline.FieldString, Str: r.attrName(la)})
		}
	case recSwitch, recSwitchCPUWide:
		e.Name = "perf:switch"
		if s.has&sampleTID != 0 {
			e.SetInt(timeline.CommonPID, int64(int32(s.tid)))
			e.SetInt(timeline.CommonTGID, int64(int32(s.pid)))
		}
		out, preempt := int64(0), int64(0)
		if misc&miscSwitchOut != 0 {
			out = 1
			if misc&miscSwitchOutPreempt != 0 {
				preempt = 1
			}
		}
		r.appendField(timeline.Field{Name: "out", Kind: timeline.FieldInt, Int: out})
		r.appendField(timeline.Field{Name: "preempt", Kind: timeline.FieldInt, Int: preempt})
		if typ == recSwitchCPUWide {
			r.appendField(timeline.Field{Name: "next_prev_pid", Kind: timeline.FieldInt, Int: int64(int32(ord.u32(rec[8:])))})
			r.appendField(timeline.Field{Name: "next_prev_tid", Kind: timeline.FieldInt, Int: int64(int32(ord.u32(rec[12:])))})
		}
	default:
		return false
	}
	return true
}

func cbytes(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// attrName is the event's name as perf shows it ("sched:sched_switch").
func (r *Reader) attrName(a *attr) string {
	if a.name != "" {
		return a.name
	}
	if a.typ == typeTracepoint {
		if f := r.tracing.ByID(int(a.config)); f != nil {
			return f.System + ":" + f.Name
		}
	}
	return a.defaultName(r.pmus)
}

// plan decides once per attr how its samples become rows.
func (r *Reader) plan(a *attr) {
	a.planned = true
	a.tp = nil
	if a.typ == typeTracepoint {
		if f := r.tracing.ByID(int(a.config)); f != nil {
			a.row = timeline.EventName(f.System, f.Name)
			a.tp = r.tracepointPlan(f)
		} else {
			sys, name, ok := strings.Cut(r.attrName(a), ":")
			if !ok {
				sys, name = "", sys
			}
			a.row = timeline.EventName(sys, name)
		}
	} else {
		a.row = r.attrName(a)
	}
	a.kind = timeline.KindOf(a.row)
}

func (r *Reader) emitSample(a *attr, rec []byte, s *sample) bool {
	if !a.planned {
		r.plan(a)
	}
	e := &r.ev
	e.Name, e.Kind = a.row, a.kind
	if s.has&sampleTID != 0 {
		pid, tid := int32(s.pid), int32(s.tid)
		e.SetInt(timeline.CommonPID, int64(tid))
		e.SetInt(timeline.CommonTGID, int64(pid))
		e.SetStr(timeline.CommonComm, r.thr.comm(pid, tid))
	}
	if s.chainN > 0 {
		c := rec[s.chainOff:]
		for i := 0; i < int(s.chainN); i++ {
			e.Callchain = append(e.Callchain, r.ord.u64(c[i*8:]))
		}
	}
	if a.typ != typeTracepoint {
		if s.has&sampleIP != 0 {
			r.appendField(timeline.Field{Name: "ip", Kind: timeline.FieldUint, Int: int64(s.ip)})
		}
		if s.has&samplePeriod != 0 {
			r.appendField(timeline.Field{Name: "period", Kind: timeline.FieldUint, Int: int64(s.period)})
		}
		return true
	}
	raw := rec[s.rawOff : s.rawOff+s.rawLen]
	if a.tp == nil {
		r.drop("tracepoint samples without a format (raw bytes kept)", 1)
		f := r.appendField(timeline.Field{Name: "raw", Kind: timeline.FieldBytes})
		f.Bytes = append(f.Bytes, raw...)
		return true
	}
	r.decodeTracepoint(a.tp, raw)
	return true
}

// appendField appends f to the current row's Fields, reusing the capacity
// of the slices of earlier rows.
func (r *Reader) appendField(f timeline.Field) *timeline.Field {
	e := &r.ev
	n := len(e.Fields)
	if n < cap(e.Fields) {
		e.Fields = e.Fields[:n+1]
		old := e.Fields[n]
		f.Ints, f.Bytes = old.Ints[:0], old.Bytes[:0]
		e.Fields[n] = f
	} else {
		e.Fields = append(e.Fields, f)
	}
	return &e.Fields[n]
}

// Tracepoint decoding plan.

type fieldMode uint8

const (
	modeColStr fieldMode = iota
	modeColInt
	modePrevState
	modeStr
	modeInt
	modeUint
	modeInts
	modeBytes
)

type fieldPlan struct {
	f    *tracefmt.Field
	col  timeline.Col
	mode fieldMode
	// le: a little-endian trace, read with Field.IntLE rather than
	// through the byte-order interface.
	le bool
}

type tpPlan struct {
	order   binary.ByteOrder
	flags   *tracefmt.Field
	preempt *tracefmt.Field
	fields  []fieldPlan
	state   *tracefmt.StateDecoder
}

// reservedCols are columns a tracepoint field never fills: they describe
// the sample (cpu, common_*) or are the reader's own (lost, prev_state_raw).
func reservedCol(c timeline.Col) bool {
	switch c {
	case timeline.CPU, timeline.CommonPID, timeline.CommonTGID, timeline.CommonComm,
		timeline.CommonFlags, timeline.CommonPreemptCount, timeline.LostCount, timeline.PrevStateRaw:
		return true
	}
	return false
}

func isText(f *tracefmt.Field) bool {
	switch f.Kind {
	case tracefmt.FixedString:
		return true
	case tracefmt.DataLoc, tracefmt.RelLoc:
		t := strings.TrimPrefix(f.ElemType, "const ")
		return t == "char" || t == "signed char"
	case tracefmt.Scalar:
		return f.Size == 0
	}
	return false
}

func (r *Reader) tracepointPlan(f *tracefmt.Format) *tpPlan {
	p := &tpPlan{order: r.tracing.ByteOrder}
	for i := range f.Fields {
		fl := &f.Fields[i]
		if fl.Common {
			switch fl.Name {
			case "common_flags":
				p.flags = fl
			case "common_preempt_count":
				p.preempt = fl
			}
			continue
		}
		fp := fieldPlan{f: fl}
		fp.le = p.order == binary.ByteOrder(binary.LittleEndian)
		text := isText(fl)
		col, hasCol := timeline.LookupCol(fl.Name)
		if hasCol && reservedCol(col) {
			hasCol = false
		}
		switch {
		case fl.Name == "prev_state" && fl.Kind == tracefmt.Scalar && fl.Size > 0:
			fp.mode = modePrevState
			p.state = r.stateDecoder(f)
		case hasCol && text && col.IsString():
			fp.col, fp.mode = col, modeColStr
		case hasCol && !text && fl.Kind == tracefmt.Scalar && !col.IsString():
			fp.col, fp.mode = col, modeColInt
		case text:
			fp.mode = modeStr
		case fl.Kind == tracefmt.Scalar && fl.Signed:
			fp.mode = modeInt
		case fl.Kind == tracefmt.Scalar:
			fp.mode = modeUint
		case fl.Kind == tracefmt.Array && fl.ElemSize > 0 && fl.ElemSize <= 8 && fl.ElemSize&(fl.ElemSize-1) == 0:
			fp.mode = modeInts
		default:
			fp.mode = modeBytes
		}
		p.fields = append(p.fields, fp)
	}
	return p
}

// stateDecoder builds the prev_state renderer from the event's print fmt,
// falling back to the kernel release (OSRELEASE) when it does not parse.
func (r *Reader) stateDecoder(f *tracefmt.Format) *tracefmt.StateDecoder {
	if d, err := tracefmt.StateDecoderFromPrintFmt(f.PrintFmt); err == nil {
		return d
	}
	r.extra("prev_state_decoder", "kernel release "+r.meta.Source.OSRelease+" (print fmt did not parse)")
	return tracefmt.StateDecoderForKernel(r.meta.Source.OSRelease)
}

func (r *Reader) decodeTracepoint(p *tpPlan, raw []byte) {
	e := &r.ev
	order := p.order
	short := false
	if p.flags != nil {
		if v, ok := p.flags.Uint(raw, order); ok {
			e.SetInt(timeline.CommonFlags, int64(v))
		}
	}
	if p.preempt != nil {
		if v, ok := p.preempt.Uint(raw, order); ok {
			e.SetInt(timeline.CommonPreemptCount, int64(v))
		}
	}
	for i := range p.fields {
		fp := &p.fields[i]
		fl := fp.f
		switch fp.mode {
		case modeColStr, modeStr:
			b, ok := fl.Bytes(raw, order)
			if !ok {
				short = true
				continue
			}
			s := r.str.str(b)
			if fp.mode == modeColStr {
				e.SetStr(fp.col, s)
			} else {
				r.appendField(timeline.Field{Name: fl.Name, Kind: timeline.FieldString, Str: s})
			}
		case modeColInt, modeInt, modeUint, modePrevState:
			var v int64
			ok := true
			if fp.le {
				v, ok = fl.IntLE(raw)
			} else {
				v, ok = fl.Int(raw, order)
			}
			if !ok {
				short = true
				continue
			}
			switch fp.mode {
			case modeColInt:
				e.SetInt(fp.col, v)
			case modeInt:
				r.appendField(timeline.Field{Name: fl.Name, Kind: timeline.FieldInt, Int: v})
			case modeUint:
				r.appendField(timeline.Field{Name: fl.Name, Kind: timeline.FieldUint, Int: v})
			case modePrevState:
				e.SetStr(timeline.PrevState, p.state.Letters(v))
				e.SetInt(timeline.PrevStateRaw, v)
			}
		case modeInts:
			n := fl.Size / fl.ElemSize
			if fl.Offset+fl.Size > len(raw) {
				short = true
				continue
			}
			f := r.appendField(timeline.Field{Name: fl.Name, Kind: timeline.FieldInts})
			for j := 0; j < n; j++ {
				u, _ := fl.Elem(raw, order, j)
				v := int64(u)
				if fl.Signed {
					sh := 64 - 8*uint(fl.ElemSize)
					v = v << sh >> sh
				}
				f.Ints = append(f.Ints, v)
			}
		case modeBytes:
			b, ok := fl.Bytes(raw, order)
			if !ok {
				short = true
				continue
			}
			f := r.appendField(timeline.Field{Name: fl.Name, Kind: timeline.FieldBytes})
			f.Bytes = append(f.Bytes, b...)
		}
	}
	if short {
		r.drop("tracepoint fields outside their raw record (left empty)", 1)
	}
}
