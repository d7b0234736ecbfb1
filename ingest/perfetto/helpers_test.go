package perfetto_test

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/schedreplay/replay/ingest/perfetto"
	"github.com/schedreplay/replay/timeline"
)

// msg builds protobuf messages for hand-made test traces.
type msg []byte

func (m msg) u(num protowire.Number, v uint64) msg {
	return protowire.AppendVarint(protowire.AppendTag(m, num, protowire.VarintType), v)
}
func (m msg) i(num protowire.Number, v int64) msg { return m.u(num, uint64(v)) }
func (m msg) s(num protowire.Number, v string) msg {
	return protowire.AppendString(protowire.AppendTag(m, num, protowire.BytesType), v)
}
func (m msg) m(num protowire.Number, v msg) msg {
	return protowire.AppendBytes(protowire.AppendTag(m, num, protowire.BytesType), v)
}
func packed(vals ...int64) msg {
	var b msg
	for _, v := range vals {
		b = protowire.AppendVarint(b, uint64(v))
	}
	return b
}

// trace wraps packets into a Trace.
func trace(pkts ...msg) []byte {
	var b msg
	for _, p := range pkts {
		b = b.m(1, p)
	}
	return b
}

func zlibTrace(pkts ...msg) []byte {
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(trace(pkts...))
	zw.Close()
	return buf.Bytes()
}

func switchEv(ts uint64, pid uint32, prevComm string, prevPID, prevPrio int64, state int64, nextComm string, nextPID, nextPrio int64) msg {
	sw := msg(nil).s(1, prevComm).i(2, prevPID).i(3, prevPrio).i(4, state).s(5, nextComm).i(6, nextPID).i(7, nextPrio)
	return msg(nil).u(1, ts).u(2, uint64(pid)).m(4, sw)
}

func wakingEv(ts uint64, pid uint32, comm string, wpid, prio, target int64) msg {
	w := msg(nil).s(1, comm).i(2, wpid).i(3, prio).i(5, target)
	return msg(nil).u(1, ts).u(2, uint64(pid)).m(20, w)
}

func bundle(cpu uint64, evs ...msg) msg {
	b := msg(nil).u(1, cpu)
	for _, e := range evs {
		b = b.m(2, e)
	}
	return b
}

// readAll reads every event as a row string.
func readAll(t testing.TB, data []byte) ([]string, *perfetto.Reader) {
	t.Helper()
	r, err := perfetto.NewReader(bytes.NewReader(data), "test")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for r.Next() {
		out = append(out, rowString(r.Event(), nil))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out, r
}

func rowString(e *timeline.Event, skip map[timeline.Col]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Time, e.Name)
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		if skip[c] || !e.IsSet(c) {
			continue
		}
		if c.IsString() {
			fmt.Fprintf(&b, " %s=%q", c.Name(), e.Str(c))
		} else {
			fmt.Fprintf(&b, " %s=%d", c.Name(), e.Int(c))
		}
	}
	for _, f := range e.Fields {
		if f.Kind == timeline.FieldString {
			fmt.Fprintf(&b, " %s=%q", f.Name, f.Str)
		} else {
			fmt.Fprintf(&b, " %s=%d", f.Name, f.Int)
		}
	}
	return b.String()
}

func readerOf(t testing.TB, data []byte) *perfetto.Reader {
	t.Helper()
	r, err := perfetto.NewReader(bytes.NewReader(data), "test")
	if err != nil {
		t.Fatal(err)
	}
	return r
}
