package tracedat

import (
	"encoding/binary"
	"strings"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

// RecordDecoder turns raw tracepoint records into timeline rows using the
// format descriptions of the trace: every field by name, into its typed
// column when the schema has one and into Fields otherwise;
// common_pid/common_flags/common_preempt_count into their columns (other
// common_* fields are framing and dropped); prev_state rendered with the
// event's own print fmt. It does not set Time, CPU or common_comm.
type RecordDecoder struct {
	order    binary.ByteOrder
	release  string // kernel release, for prev_state when a print fmt fails
	plans    map[*tracefmt.Format]*plan
	byID     []*plan // plans by event id, checked against the format
	strs     map[string]string
	strBytes int
}

// NewRecordDecoder returns a decoder for records in byte order order.
// release (may be "") picks the prev_state table when an event's print
// fmt cannot be used.
func NewRecordDecoder(order binary.ByteOrder, release string) *RecordDecoder {
	return &RecordDecoder{order: order, release: release, plans: map[*tracefmt.Format]*plan{}, strs: map[string]string{}}
}

type fieldPlan struct {
	f     *tracefmt.Field
	col   timeline.Col
	typed bool
	state bool // prev_state: raw + letters
	uns   bool // typed column holds the value as unsigned bits
}

type plan struct {
	fm     *tracefmt.Format
	name   string
	kind   timeline.Kind
	fields []fieldPlan
	state  *tracefmt.StateDecoder
}

func (d *RecordDecoder) planFor(fm *tracefmt.Format) *plan {
	// By event id first (a slice index), then by format.
	if id := fm.ID; id >= 0 && id < len(d.byID) {
		if p := d.byID[id]; p != nil && p.fm == fm {
			return p
		}
	}
	p := d.plans[fm]
	if p == nil {
		p = d.newPlan(fm)
		d.plans[fm] = p
	}
	if id := fm.ID; id >= 0 && id <= 0xffff {
		if id >= len(d.byID) {
			d.byID = append(d.byID, make([]*plan, id+1-len(d.byID))...)
		}
		d.byID[id] = p
	}
	return p
}

func (d *RecordDecoder) newPlan(fm *tracefmt.Format) *plan {
	p := &plan{fm: fm, name: timeline.EventName(fm.System, fm.Name)}
	p.kind = timeline.KindOf(p.name)
	for i := range fm.Fields {
		fl := &fm.Fields[i]
		switch fl.Name {
		case "common_type":
			continue
		case "common_pid":
			p.fields = append(p.fields, fieldPlan{f: fl, col: timeline.CommonPID, typed: true})
			continue
		case "common_flags":
			p.fields = append(p.fields, fieldPlan{f: fl, col: timeline.CommonFlags, typed: true, uns: true})
			continue
		case "common_preempt_count":
			p.fields = append(p.fields, fieldPlan{f: fl, col: timeline.CommonPreemptCount, typed: true, uns: true})
			continue
		}
		if fl.Common || strings.HasPrefix(fl.Name, "common_") {
			continue
		}
		if fl.Name == "prev_state" && fl.Kind == tracefmt.Scalar {
			p.fields = append(p.fields, fieldPlan{f: fl, col: timeline.PrevStateRaw, typed: true, state: true})
			if p.state == nil {
				sd, err := tracefmt.StateDecoderFromPrintFmt(fm.PrintFmt)
				if err != nil {
					sd = tracefmt.StateDecoderForKernel(d.release)
				}
				p.state = sd
			}
			continue
		}
		col, ok := timeline.LookupCol(fl.Name)
		if ok && col != timeline.PrevState && col != timeline.PrevStateRaw && col != timeline.LostCount && col != timeline.CPU {
			if col.IsString() {
				if isText(fl) {
					p.fields = append(p.fields, fieldPlan{f: fl, col: col, typed: true})
					continue
				}
			} else if fl.Kind == tracefmt.Scalar {
				p.fields = append(p.fields, fieldPlan{f: fl, col: col, typed: true, uns: !fl.Signed})
				continue
			}
		}
		p.fields = append(p.fields, fieldPlan{f: fl})
	}
	return p
}

// isText tells fields decoded as strings: char[N], dynamic char arrays and
// the old size-0 trailing "char buf" (the perf.data reader's rule, except
// that a size-0 field must be of a char type: bprint's "u32 buf[]" is
// binary and stays bytes).
func isText(fl *tracefmt.Field) bool {
	switch fl.Kind {
	case tracefmt.FixedString:
		return true
	case tracefmt.DataLoc, tracefmt.RelLoc:
		t := strings.TrimPrefix(fl.ElemType, "const ")
		return t == "char" || t == "signed char"
	case tracefmt.Scalar:
		return fl.Size == 0 && strings.Contains(fl.Type, "char")
	}
	return false
}

// intern returns a string for b, sharing repeated values (comm names)
// so decoding does not allocate per event. The table is bounded.
func (d *RecordDecoder) intern(b []byte) string {
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	if d.strBytes > 4<<20 {
		clear(d.strs)
		d.strBytes = 0
	}
	s := string(b)
	d.strs[s] = s
	d.strBytes += len(s) + 16
	return s
}

// Decode fills e (already Reset by the caller, who sets Time and CPU)
// from rec. It returns false when rec is shorter than fm's fixed part.
func (d *RecordDecoder) Decode(fm *tracefmt.Format, rec []byte, e *timeline.Event) bool {
	if len(rec) < fm.MinSize() {
		return false
	}
	p := d.planFor(fm)
	e.Name, e.Kind = p.name, p.kind
	for i := range p.fields {
		fp := &p.fields[i]
		fl := fp.f
		if fp.typed {
			switch {
			case fp.state:
				v, ok := fl.Int(rec, d.order)
				if !ok {
					continue
				}
				e.SetInt(timeline.PrevStateRaw, v)
				e.SetStr(timeline.PrevState, p.state.Letters(v))
			case fp.col.IsString():
				b, ok := fl.Bytes(rec, d.order)
				if ok {
					e.SetStr(fp.col, d.intern(b))
				}
			case fp.col == timeline.GroupDead:
				if v, ok := fl.Uint(rec, d.order); ok {
					e.SetInt(fp.col, b2i(v != 0))
				}
			case fp.uns:
				if v, ok := fl.Uint(rec, d.order); ok {
					e.SetInt(fp.col, int64(v))
				}
			default:
				if v, ok := fl.Int(rec, d.order); ok {
					e.SetInt(fp.col, v)
				}
			}
			continue
		}
		e.Fields = append(e.Fields, d.extra(fl, rec))
	}
	return true
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// extra decodes a field without a typed column.
func (d *RecordDecoder) extra(fl *tracefmt.Field, rec []byte) timeline.Field {
	out := timeline.Field{Name: fl.Name}
	switch {
	case isText(fl):
		b, _ := fl.Bytes(rec, d.order)
		out.Kind, out.Str = timeline.FieldString, d.intern(b)
	case fl.Kind == tracefmt.Scalar:
		if fl.Signed {
			v, _ := fl.Int(rec, d.order)
			out.Kind, out.Int = timeline.FieldInt, v
		} else {
			v, _ := fl.Uint(rec, d.order)
			out.Kind, out.Int = timeline.FieldUint, int64(v)
		}
	case fl.Kind == tracefmt.Array && fl.ElemSize > 0 && fl.ElemSize <= 8 && fl.ElemSize&(fl.ElemSize-1) == 0:
		n := fl.Size / fl.ElemSize
		out.Kind = timeline.FieldInts
		out.Ints = make([]int64, 0, n)
		for i := 0; i < n; i++ {
			u, ok := fl.Elem(rec, d.order, i)
			if !ok {
				break
			}
			v := int64(u)
			if fl.Signed {
				sh := 64 - 8*uint(fl.ElemSize)
				v = v << sh >> sh
			}
			out.Ints = append(out.Ints, v)
		}
	default:
		b, _ := fl.Bytes(rec, d.order)
		out.Kind, out.Bytes = timeline.FieldBytes, append([]byte(nil), b...)
	}
	return out
}
