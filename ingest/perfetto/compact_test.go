package perfetto_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	exportperfetto "github.com/schedreplay/replay/export/perfetto"
	"github.com/schedreplay/replay/ingest/tracedat"
	"github.com/schedreplay/replay/timeline"
)

// toCompact rewrites a trace's sched_switch and sched_waking events into
// the compact_sched encoding (as traced_probes does with compact_sched
// enabled), keeping every other event in full.
func toCompact(t *testing.T, data []byte) []byte {
	var out msg
	for len(data) > 0 {
		num, _, n := protowire.ConsumeTag(data)
		pkt, m := protowire.ConsumeBytes(data[n:])
		if num != 1 || m < 0 {
			t.Fatal("bad trace")
		}
		data = data[n+m:]
		var np msg
		for len(pkt) > 0 {
			fnum, typ, k := protowire.ConsumeTag(pkt)
			l := protowire.ConsumeFieldValue(fnum, typ, pkt[k:])
			field := pkt[:k+l]
			if fnum == 1 && typ == protowire.BytesType {
				b, _ := protowire.ConsumeBytes(pkt[k:])
				np = np.m(1, compactBundle(b))
			} else {
				np = append(np, field...)
			}
			pkt = pkt[k+l:]
		}
		out = out.m(1, np)
	}
	return out
}

func compactBundle(b []byte) msg {
	var out msg
	var intern []string
	index := map[string]int64{}
	idx := func(s string) int64 {
		if i, ok := index[s]; ok {
			return i
		}
		index[s] = int64(len(intern))
		intern = append(intern, s)
		return index[s]
	}
	var swTS, swState, swPID, swPrio, swComm, wkTS, wkPID, wkTarget, wkPrio, wkComm, wkFlags []int64
	var lastSw, lastWk int64
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		l := protowire.ConsumeFieldValue(num, typ, b[k:])
		if num != 2 {
			out = append(out, b[:k+l]...)
			b = b[k+l:]
			continue
		}
		ev, _ := protowire.ConsumeBytes(b[k:])
		b = b[k+l:]
		var ts, flags int64
		var payNum protowire.Number
		var pay []byte
		for e := ev; len(e) > 0; {
			n, ty, kk := protowire.ConsumeTag(e)
			ll := protowire.ConsumeFieldValue(n, ty, e[kk:])
			switch {
			case n == 1:
				v, _ := protowire.ConsumeVarint(e[kk:])
				ts = int64(v)
			case n == 5:
				v, _ := protowire.ConsumeVarint(e[kk:])
				flags = int64(v)
			case ty == protowire.BytesType && n != 2:
				payNum = n
				pay, _ = protowire.ConsumeBytes(e[kk:])
			}
			e = e[kk+ll:]
		}
		fields := map[protowire.Number]int64{}
		strs := map[protowire.Number]string{}
		for p := pay; len(p) > 0; {
			n, ty, kk := protowire.ConsumeTag(p)
			ll := protowire.ConsumeFieldValue(n, ty, p[kk:])
			if ty == protowire.BytesType {
				s, _ := protowire.ConsumeBytes(p[kk:])
				strs[n] = string(s)
			} else {
				v, _ := protowire.ConsumeVarint(p[kk:])
				fields[n] = int64(v)
			}
			p = p[kk+ll:]
		}
		switch payNum {
		case 4:
			swTS, lastSw = append(swTS, ts-lastSw), ts
			swState = append(swState, fields[4])
			swPID = append(swPID, fields[6])
			swPrio = append(swPrio, fields[7])
			swComm = append(swComm, idx(strs[5]))
		case 20:
			wkTS, lastWk = append(wkTS, ts-lastWk), ts
			wkPID = append(wkPID, fields[2])
			wkTarget = append(wkTarget, fields[5])
			wkPrio = append(wkPrio, fields[3])
			wkComm = append(wkComm, idx(strs[1]))
			wkFlags = append(wkFlags, flags)
		default:
			out = out.m(2, ev)
		}
	}
	var c msg
	for _, s := range intern {
		c = c.s(5, s)
	}
	for i, a := range [][]int64{swTS, swState, swPID, swPrio, nil, swComm, wkTS, wkPID, wkTarget, wkPrio, wkComm, wkFlags} {
		if len(a) > 0 {
			c = c.m(protowire.Number(i+1), packed(a...))
		}
	}
	if len(c) > 0 {
		out = out.m(4, c)
	}
	return out
}

// TestCompactEqualsFull: a real trace (trace-cmd, Linux 6.1) written as
// Perfetto in the full encoding and in compact_sched gives the same rows,
// except what compact_sched cannot know: the first switch of each CPU
// (no previous task) and wakings before it (no waker); switches carry no
// common_flags in compact form; prev_comm is the name the task had when
// it was switched in (a task renamed while running, like schbench's
// threads, shows its new name only in the full encoding), and so
// common_comm, learned from the switches, is compared apart.
func TestCompactEqualsFull(t *testing.T) {
	tr, err := tracedat.Open("../../fixtures/tracedat/guestA-schbench.v7zstd.dat")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var full bytes.Buffer
	if _, err := exportperfetto.Write(&full, tr, exportperfetto.Options{FlushEvents: 700}); err != nil {
		t.Fatal(err)
	}
	compact := toCompact(t, full.Bytes())
	if len(compact) >= full.Len() {
		t.Errorf("compact trace %d bytes, full %d", len(compact), full.Len())
	}
	skip := map[timeline.Col]bool{timeline.CommonFlags: true, timeline.CommonComm: true}
	renamed, withComm := 0, 0
	perCPU := func(data []byte, dropFirst bool) map[int64][]string {
		r := readerOf(t, data)
		out := map[int64][]string{}
		started := map[int64]bool{}
		lastNext := map[int64]string{}
		for r.Next() {
			e := r.Event()
			cpu := e.Int(timeline.CPU)
			if e.IsSet(timeline.CommonComm) {
				withComm++
			}
			if dropFirst && e.Kind == timeline.SchedSwitch {
				if s, ok := lastNext[cpu]; ok && s != e.Str(timeline.PrevComm) {
					e.SetStr(timeline.PrevComm, s)
					renamed++
				}
				lastNext[cpu] = e.Str(timeline.NextComm)
			}
			if dropFirst && !started[cpu] && (e.Kind == timeline.SchedSwitch || e.Kind == timeline.SchedWaking) {
				if e.Kind == timeline.SchedSwitch {
					started[cpu] = true
				}
				continue
			}
			out[cpu] = append(out[cpu], rowString(e, skip))
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		return out
	}
	want := perCPU(full.Bytes(), true)
	got := perCPU(compact, false)
	n := 0
	for cpu, w := range want {
		g := got[cpu]
		if len(g) != len(w) {
			t.Errorf("cpu %d: %d rows, want %d", cpu, len(g), len(w))
		}
		bad := 0
		for i := range min(len(g), len(w)) {
			n++
			if g[i] != w[i] {
				if bad++; bad <= 3 {
					t.Errorf("cpu %d row %d\n got  %s\n want %s", cpu, i, g[i], w[i])
				}
			}
		}
	}
	if n < 5000 {
		t.Errorf("only %d rows compared", n)
	}
	if renamed > n/50 || withComm < 2*n-100 {
		t.Errorf("%d switches of renamed tasks, %d rows with common_comm of %d", renamed, withComm, 2*n)
	}
	t.Logf("%d rows (%d switches of tasks renamed while running); full %d bytes, compact %d", n, renamed, full.Len(), len(compact))
}
