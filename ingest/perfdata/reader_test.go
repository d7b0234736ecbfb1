package perfdata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// row is a comparable rendering of an event.
func row(e *timeline.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.Time, e.Name)
	for c := timeline.Col(0); c < timeline.NumCols; c++ {
		if !e.IsSet(c) {
			continue
		}
		if c.IsString() {
			fmt.Fprintf(&b, " %s=%q", c.Name(), e.Str(c))
		} else {
			fmt.Fprintf(&b, " %s=%d", c.Name(), e.Int(c))
		}
	}
	for _, f := range e.Fields {
		fmt.Fprintf(&b, " [%s %d %q %v %x]", f.Name, f.Int, f.Str, f.Ints, f.Bytes)
	}
	if len(e.Callchain) > 0 {
		fmt.Fprintf(&b, " chain=%x", e.Callchain)
	}
	return b.String()
}

func readAll(t testing.TB, r *Reader) []string {
	t.Helper()
	var out []string
	for r.Next() {
		out = append(out, row(r.Event()))
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scenario writes the same small session into w.
func scenario(w *synth) {
	w.comm(100, 100, "bash", false, 0, 0)
	w.comm(200, 200, "worker", false, 0, 0)
	w.sw(1000, 0, "bash", 100, 1, "worker", 200)
	w.sw(900, 1, "swapper/1", 0, 0, "bash", 100)
	w.round()
	w.sw(1500, 0, "worker", 200, 0x100, "bash", 100)
	w.comm(200, 200, "worker2", true, 1200, 0)
	w.sw(1100, 1, "bash", 100, 0x2, "swapper/1", 0)
	w.round()
	w.sw(2000, 1, "worker2", 200, 0, "swapper/1", 0)
	w.lost(5, 2100, 1)
	w.fork(300, 200, 300, 200, 2200, 1)
	w.sw(2300, 1, "worker2", 300, 0x81, "swapper/1", 0)
	w.round()
}

func TestSynthByteOrdersAndModes(t *testing.T) {
	var want []string
	for _, big := range []bool{false, true} {
		for _, bm32 := range []bool{false, true} {
			for _, pipe := range []bool{false, true} {
				for _, asz := range []int{64, 128, 136, 200} {
					if bm32 && (!big || pipe) {
						continue
					}
					name := fmt.Sprintf("big=%v bitmap32=%v pipe=%v attr=%d", big, bm32, pipe, asz)
					w := newSynth(t, big)
					w.bitmap32 = bm32
					scenario(w)
					var data []byte
					if pipe {
						data = w.pipe(asz)
					} else {
						data = w.file(asz)
					}
					r, err := NewReader(bytes.NewReader(data), name)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					rows := readAll(t, r)
					m := r.Meta()
					if m.Source.Hostname != "synth-host" || m.Source.NrCPUs != 2 || m.Topology == nil || m.Topology.CPUs[1].CoreID != 1 {
						t.Errorf("%s: meta %+v topology %+v", name, m.Source, m.Topology)
					}
					if len(m.Summary.Dropped) != 0 {
						t.Errorf("%s: dropped %v", name, m.Summary.Dropped)
					}
					if want == nil {
						want = rows
						continue
					}
					if !reflect.DeepEqual(rows, want) {
						t.Errorf("%s: rows differ from little-endian file mode:\n%s\nwant\n%s", name, strings.Join(rows, "\n"), strings.Join(want, "\n"))
					}
				}
			}
		}
	}
	// The expected content, spelled out once.
	exp := []string{
		`0 perf:comm cpu=0 common_pid=100 common_tgid=100 comm="bash"`,
		`0 perf:comm cpu=0 common_pid=200 common_tgid=200 comm="worker"`,
		`900 sched_switch cpu=1 common_pid=0 common_tgid=0 common_comm="swapper" common_flags=1 common_preempt_count=2 prev_comm="swapper/1" prev_pid=0 prev_prio=120 prev_state="R" prev_state_raw=0 next_comm="bash" next_pid=100 next_prio=100`,
		`1000 sched_switch cpu=0 common_pid=100 common_tgid=100 common_comm="bash" common_flags=1 common_preempt_count=2 prev_comm="bash" prev_pid=100 prev_prio=120 prev_state="S" prev_state_raw=1 next_comm="worker" next_pid=200 next_prio=100`,
		`1100 sched_switch cpu=1 common_pid=100 common_tgid=100 common_comm="bash" common_flags=1 common_preempt_count=2 prev_comm="bash" prev_pid=100 prev_prio=120 prev_state="D" prev_state_raw=2 next_comm="swapper/1" next_pid=0 next_prio=100`,
		`1200 perf:comm cpu=0 common_pid=200 common_tgid=200 comm="worker2" [exec 1 "" [] ]`,
		`1500 sched_switch cpu=0 common_pid=200 common_tgid=200 common_comm="worker2" common_flags=1 common_preempt_count=2 prev_comm="worker" prev_pid=200 prev_prio=120 prev_state="R+" prev_state_raw=256 next_comm="bash" next_pid=100 next_prio=100`,
		`2000 sched_switch cpu=1 common_pid=200 common_tgid=200 common_comm="worker2" common_flags=1 common_preempt_count=2 prev_comm="worker2" prev_pid=200 prev_prio=120 prev_state="R" prev_state_raw=0 next_comm="swapper/1" next_pid=0 next_prio=100`,
		`2100 lost cpu=1 lost=5 [record 0 "PERF_RECORD_LOST" [] ] [event 0 "sched:sched_switch" [] ]`,
		`2200 perf:fork cpu=1 parent_pid=200 child_pid=300 [pid 300 "" [] ] [ppid 200 "" [] ]`,
		`2300 sched_switch cpu=1 common_pid=300 common_tgid=300 common_comm="worker2" common_flags=1 common_preempt_count=2 prev_comm="worker2" prev_pid=300 prev_prio=120 prev_state="S|I" prev_state_raw=129 next_comm="swapper/1" next_pid=0 next_prio=100`,
	}
	if !reflect.DeepEqual(want, exp) {
		t.Errorf("rows:\n%s\nwant\n%s", strings.Join(want, "\n"), strings.Join(exp, "\n"))
	}
}

// TestOrderWithoutRounds: a stream without FINISHED_ROUND still comes out
// sorted; a reorder buffer too small for it is reported, not grown.
func TestOrderWithoutRounds(t *testing.T) {
	w := newSynth(t, false)
	// two CPUs whose buffers perf drained in blocks of 50 events
	for blk := 0; blk < 20; blk++ {
		for cpu := uint32(0); cpu < 2; cpu++ {
			for i := 0; i < 50; i++ {
				ts := uint64(1000 + (blk*50+i)*10 + int(cpu)*5)
				w.sw(ts, cpu, "a", 1, 0, "b", 2)
			}
		}
	}
	data := w.file(128)
	check := func(maxBytes int64) (sorted bool, extra map[string]string) {
		r, err := NewReader(bytes.NewReader(data), "t")
		if err != nil {
			t.Fatal(err)
		}
		r.q.maxBytes = maxBytes
		last, n := int64(-1), 0
		sorted = true
		for r.Next() {
			if r.Event().Time < last {
				sorted = false
			}
			last = r.Event().Time
			n++
		}
		if n != 2000 || r.Err() != nil {
			t.Fatalf("%d rows, err %v", n, r.Err())
		}
		return sorted, r.Meta().Source.Extra
	}
	if sorted, extra := check(defaultMaxQueueBytes); !sorted || extra["reorder_overflows"] != "" {
		t.Errorf("default bound: sorted %v extra %v", sorted, extra)
	}
	if sorted, extra := check(4096); sorted || extra["reorder_overflows"] == "" || extra["out_of_order_records"] == "" {
		t.Errorf("tiny bound: sorted %v, extra %v: want the overflow reported", sorted, extra)
	}
}

// TestTiesKeepFileOrder: equal timestamps come out in file order.
func TestTiesKeepFileOrder(t *testing.T) {
	w := newSynth(t, false)
	for i := 0; i < 20; i++ {
		w.sw(5000, uint32(i%2), "a", int32(i+1), 0, "b", 2)
	}
	w.sw(4000, 1, "early", 99, 0, "b", 2)
	r, err := NewReader(bytes.NewReader(w.file(128)), "t")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int64
	for r.Next() {
		pids = append(pids, r.Event().Int(timeline.PrevPID))
	}
	want := []int64{99}
	for i := 0; i < 20; i++ {
		want = append(want, int64(i+1))
	}
	if !reflect.DeepEqual(pids, want) {
		t.Errorf("order %v, want %v", pids, want)
	}
}

// onlyReader hides Seek/ReadAt: a stream.
type onlyReader struct{ io.Reader }

func TestStreams(t *testing.T) {
	w := newSynth(t, false)
	scenario(w)
	// pipe mode over a plain stream works
	r, err := NewReader(onlyReader{bytes.NewReader(w.pipe(128))}, "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if rows := readAll(t, r); len(rows) != 11 || r.Meta().Source.Format != "perf.data (pipe)" {
		t.Errorf("%d rows, format %q", len(rows), r.Meta().Source.Format)
	}
	// file mode over a stream is refused clearly
	_, err = NewReader(onlyReader{bytes.NewReader(w.file(128))}, "stdin")
	if err == nil || !strings.Contains(err.Error(), "seekable") || !strings.Contains(err.Error(), "perf record -o -") {
		t.Errorf("file mode over a pipe: %v", err)
	}
}

func TestBadHeaders(t *testing.T) {
	w := newSynth(t, false)
	scenario(w)
	good := w.file(128)
	put := func(off int, v uint64) []byte {
		b := append([]byte(nil), good...)
		w.ord.PutUint64(b[off:], v)
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "offset 0x0: not a perf.data file"},
		{"wrong magic", []byte("PERFILE3xxxxxxxxxxxxxxxxx"), `expected magic "PERFILE2"`},
		{"legacy", append([]byte("PERFFILE"), good[8:]...), "version 1"},
		{"short", good[:12], "offset 0x8"},
		{"header size", put(8, 99), "offset 0x8: header size 99"},
		{"attr size", put(16, 8), "offset 0x10: attr_size 8"},
		{"attrs past EOF", put(32, 1<<40), "offset 0x18: attrs section"},
		{"attrs offset wraps", put(24, ^uint64(0)-4), "offset 0x18: attrs section"},
		{"data offset", put(40, 1<<50), "offset 0x28: data section offset"},
	}
	for _, c := range cases {
		_, err := NewReader(bytes.NewReader(c.data), "perf.data")
		var fe *FormatError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "perf.data: offset 0x") {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestCorruptSections patches counts and sizes inside feature sections and
// records; each must give a FormatError with an offset, never a panic or an
// allocation the file cannot back.
func TestCorruptSections(t *testing.T) {
	w := newSynth(t, false)
	scenario(w)
	w.feats[featCmdline] = w.cat(w.u32(0xffffffff), w.pstr("perf"))
	_, err := NewReader(bytes.NewReader(w.file(128)), "perf.data")
	if err == nil || !strings.Contains(err.Error(), "CMDLINE feature: cmdline count 4294967295 cannot fit") {
		t.Errorf("cmdline count: %v", err)
	}

	w = newSynth(t, false)
	scenario(w)
	w.feats[featNUMATopology] = w.cat(w.u32(1), w.u32(0), w.u64(1), w.u64(1), w.u32(0x7fffffff))
	_, err = NewReader(bytes.NewReader(w.file(128)), "perf.data")
	if err == nil || !strings.Contains(err.Error(), "node cpu list of 2147483647 bytes runs past the end") {
		t.Errorf("numa string: %v", err)
	}

	w = newSynth(t, false)
	scenario(w)
	w.feats[featTracingData] = []byte("\x17\x08Dtracing0.6\x00\x00\x08")
	_, err = NewReader(bytes.NewReader(w.file(128)), "perf.data")
	if err == nil || !strings.Contains(err.Error(), "tracing data does not parse") {
		t.Errorf("tracing data: %v", err)
	}

	// a record whose size is smaller than its header
	w = newSynth(t, false)
	scenario(w)
	w.recs[3] = append([]byte(nil), w.recs[3]...)
	w.ord.PutUint16(w.recs[3][6:], 4)
	r, err := NewReader(bytes.NewReader(w.file(128)), "perf.data")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "record size 4 is smaller than its 8-byte header") {
		t.Errorf("record size: %v", err)
	}

	// a sample whose RAW size runs past the record
	w = newSynth(t, false)
	scenario(w)
	rec := append([]byte(nil), w.recs[2]...)
	w.ord.PutUint32(rec[8+48:], 5000)
	w.recs[2] = rec
	r, err = NewReader(bytes.NewReader(w.file(128)), "perf.data")
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "ends inside RAW data") {
		t.Errorf("raw size: %v", err)
	}
}

// TestUnknownSampleTypeBits: bits this reader does not know make it
// refuse the attr rather than misread samples.
func TestUnknownSampleTypeBits(t *testing.T) {
	w := newSynth(t, false)
	scenario(w)
	data := w.file(128)
	i := bytes.Index(data, w.attr(128))
	w.ord.PutUint64(data[i+24:], synthSampleType|1<<40)
	_, err := NewReader(bytes.NewReader(data), "perf.data")
	if err == nil || !strings.Contains(err.Error(), "sample_type") || !strings.Contains(err.Error(), "0x10000000000") {
		t.Errorf("got %v", err)
	}
}

// TestDataSizeZero: perf killed before rewriting the header: data read to
// the end of the file, the damage counted.
func TestDataSizeZero(t *testing.T) {
	w := newSynth(t, false)
	scenario(w)
	data := w.file(128)
	// cut the features and clear data.size, as a killed perf leaves it
	dataOff := w.ord.Uint64(data[40:])
	dataSize := w.ord.Uint64(data[48:])
	data = data[:dataOff+dataSize]
	w.ord.PutUint64(data[48:], 0)
	r, err := NewReader(bytes.NewReader(data), "perf.data")
	if err != nil {
		t.Fatal(err)
	}
	rows := readAll(t, r)
	d := r.Meta().Summary.Dropped
	if len(rows) != 11 || d["header not finalized (perf record did not finish): data read to end of file, no header features"] != 1 {
		t.Errorf("%d rows, dropped %v", len(rows), d)
	}
	if d["tracepoint samples without a format (raw bytes kept)"] != 6 {
		t.Errorf("dropped %v", d)
	}
}

// TestTruncatedEverywhere cuts fixtures at many lengths: each prefix must
// give either a FormatError naming the file and offset, or rows with the
// damage counted; never a panic.
func TestTruncatedEverywhere(t *testing.T) {
	for _, name := range []string{"perf_sched_zstd.data", "perf_sched_pipe.data", "perf_sched_record.data"} {
		full := readFile(t, fixturePath(name))
		step := 1
		for n := 0; n < len(full); n += step {
			if n > 2048 {
				step = 257
			}
			data := full[:n]
			r, err := NewReader(bytes.NewReader(data), name)
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), name+": offset 0x") {
					t.Fatalf("%s[:%d]: %v", name, n, err)
				}
				continue
			}
			rows := 0
			for r.Next() {
				rows++
			}
			if err := r.Err(); err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), name+": offset 0x") {
					t.Fatalf("%s[:%d]: %v", name, n, err)
				}
				continue
			}
			if n > 16 && len(r.Meta().Summary.Dropped) == 0 && !strings.Contains(name, "pipe") {
				t.Fatalf("%s[:%d]: %d rows and no damage reported", name, n, rows)
			}
		}
	}
}

func readFile(t testing.TB, p string) []byte {
	b, err := readFileErr(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMemoryBoundedByRounds: with FINISHED_ROUND the reorder buffer holds
// about two rounds, however long the trace.
func TestMemoryBoundedByRounds(t *testing.T) {
	w := newSynth(t, false)
	ts := uint64(1000)
	for round := 0; round < 200; round++ {
		for cpu := uint32(0); cpu < 2; cpu++ {
			for i := 0; i < 200; i++ {
				w.sw(ts+uint64(i)*2+uint64(cpu), cpu, "a", 1, 0, "b", 2)
			}
		}
		ts += 400
		w.round()
	}
	r, err := NewReader(bytes.NewReader(w.file(128)), "t")
	if err != nil {
		t.Fatal(err)
	}
	n, maxQueued := 0, 0
	for r.Next() {
		n++
		maxQueued = max(maxQueued, r.q.n)
	}
	if n != 80000 || r.Err() != nil {
		t.Fatalf("%d rows, %v", n, r.Err())
	}
	// a round is 400 records of 96 bytes
	if maxQueued > 3*400 || len(r.q.arena.chunks) > 4 {
		t.Errorf("queued up to %d records in %d chunks: memory grows with the trace", maxQueued, len(r.q.arena.chunks))
	}
}
