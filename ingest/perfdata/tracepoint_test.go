package perfdata

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/schedreplay/replay/ingest/tracefmt"
	"github.com/schedreplay/replay/timeline"
)

// A made-up event with every kind of field, to pin the column/Fields rules.
const oddFormat = `name: odd_event
ID: 900
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:unsigned int pid;	offset:24;	size:4;	signed:0;
	field:int cpu;	offset:28;	size:4;	signed:1;
	field:u64 lost;	offset:32;	size:8;	signed:0;
	field:short delta;	offset:40;	size:2;	signed:1;
	field:unsigned short flags;	offset:42;	size:2;	signed:0;
	field:__data_loc char[] filename;	offset:44;	size:4;	signed:0;
	field:__data_loc u8[] blob;	offset:48;	size:4;	signed:0;
	field:int vals[2];	offset:52;	size:8;	signed:1;
	field:int prio[1];	offset:60;	size:4;	signed:1;

print fmt: "comm=%s", REC->comm
`

func TestTracepointFieldMapping(t *testing.T) {
	f, err := tracefmt.ParseFormat("odd", []byte(oddFormat))
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	raw := make([]byte, 80)
	le.PutUint16(raw[0:], 900)
	raw[2], raw[3] = 0x8, 0x11
	copy(raw[8:], "a b=c")
	le.PutUint32(raw[24:], 4000000000)
	le.PutUint32(raw[28:], 0xffffffff)
	le.PutUint64(raw[32:], 7)
	le.PutUint16(raw[40:], 0xfffe)
	le.PutUint16(raw[42:], 0xfffe)
	copy(raw[64:], "/bin/x\x00")
	le.PutUint32(raw[44:], 7<<16|64)
	copy(raw[72:], []byte{1, 2, 3})
	le.PutUint32(raw[48:], 3<<16|72)
	le.PutUint32(raw[52:], 0xfffffffd)
	le.PutUint32(raw[56:], 5)
	le.PutUint32(raw[60:], 9)

	r := &Reader{tracing: &tracefmt.TracingData{ByteOrder: le}}
	p := r.tracepointPlan(f)
	r.ev.Reset()
	r.decodeTracepoint(p, raw)
	e := &r.ev
	if e.Str(timeline.Comm) != "a b=c" || e.Int(timeline.PID) != 4000000000 {
		t.Errorf("typed columns: comm %q pid %d", e.Str(timeline.Comm), e.Int(timeline.PID))
	}
	if e.Int(timeline.CommonFlags) != 8 || e.Int(timeline.CommonPreemptCount) != 0x11 {
		t.Errorf("common fields %d %d", e.Int(timeline.CommonFlags), e.Int(timeline.CommonPreemptCount))
	}
	if e.IsSet(timeline.CPU) || e.IsSet(timeline.LostCount) || e.IsSet(timeline.Prio) {
		t.Error("cpu/lost fields must not fill the framing columns, nor an array the prio column")
	}
	if e.Str(timeline.Filename) != "/bin/x" {
		t.Errorf("filename %q", e.Str(timeline.Filename))
	}
	want := []timeline.Field{
		{Name: "cpu", Kind: timeline.FieldInt, Int: -1},
		{Name: "lost", Kind: timeline.FieldUint, Int: 7},
		{Name: "delta", Kind: timeline.FieldInt, Int: -2},
		{Name: "flags", Kind: timeline.FieldUint, Int: 0xfffe},
		{Name: "blob", Kind: timeline.FieldBytes, Bytes: []byte{1, 2, 3}},
		{Name: "vals", Kind: timeline.FieldInts, Ints: []int64{-3, 5}},
		{Name: "prio", Kind: timeline.FieldInts, Ints: []int64{9}},
	}
	got := append([]timeline.Field(nil), e.Fields...)
	for i := range got {
		if len(got[i].Ints) == 0 {
			got[i].Ints = nil
		}
		if len(got[i].Bytes) == 0 {
			got[i].Bytes = nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fields\n %+v\nwant\n %+v", got, want)
	}
	// A record too short for its fields: what fits is kept, the rest counted.
	r.ev.Reset()
	r.decodeTracepoint(p, raw[:30])
	if r.ev.Str(timeline.Comm) != "a b=c" || r.meta.Summary.Dropped["tracepoint fields outside their raw record (left empty)"] != 1 {
		t.Errorf("short record: %q %v", r.ev.Str(timeline.Comm), r.meta.Summary.Dropped)
	}
}

// TestPrevStateFallback: a print fmt that does not parse falls back to the
// kernel release for prev_state letters.
func TestPrevStateFallback(t *testing.T) {
	text := `name: sched_switch
ID: 5
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;

	field:long prev_state;	offset:8;	size:8;	signed:1;

print fmt: "prev_state=%s", weird(REC->prev_state
`
	f, err := tracefmt.ParseFormat("sched", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{tracing: &tracefmt.TracingData{ByteOrder: binary.LittleEndian}}
	r.meta.Source.OSRelease = "4.9.0"
	p := r.tracepointPlan(f)
	raw := make([]byte, 16)
	binary.LittleEndian.PutUint64(raw[8:], 0x802) // 4.9: D plus TASK_NEW... and the + bit 0x1000 unset
	r.ev.Reset()
	r.decodeTracepoint(p, raw)
	if got := r.ev.Str(timeline.PrevState); got == "" || r.meta.Source.Extra["prev_state_decoder"] == "" {
		t.Errorf("prev_state %q, extra %v", got, r.meta.Source.Extra)
	}
	if r.ev.Int(timeline.PrevStateRaw) != 0x802 {
		t.Errorf("raw %d", r.ev.Int(timeline.PrevStateRaw))
	}
}
