package perfetto_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/schedreplay/replay/ingest/perfetto"
)

// FuzzReader: any input gives rows or an error, never a panic, and a
// reader never holds more rows than its limit (checked indirectly: the
// limits are small here, so a runaway buffer would show as time).
func FuzzReader(f *testing.F) {
	for _, p := range []string{"derived/compact_sched_crop.pb", "derived/cpu_info.pb", "derived/sched_blocked_reason_symbolized.pb",
		"derived/android_auto_multiuser.pb", "derived/task_newtask_waker.pb"} {
		b, err := os.ReadFile(fx + p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(trace(msg(nil).m(50, zlibTrace(msg(nil).m(1, bundle(0, switchEv(1, 0, "a", 0, 1, 0, "b", 2, 3)))))))
	f.Add(trace(msg(nil).m(1, bundle(2, wakingEv(4, 1, "w", 5, 120, 3)).u(3, 1).u(10, 2).u(5, 3).i(6, 100).i(7, 50))))
	defer func(a, b, c int) { perfetto.MaxPacketBytes, perfetto.MaxBufferedRows, perfetto.WarmRows = a, b, c }(perfetto.MaxPacketBytes, perfetto.MaxBufferedRows, perfetto.WarmRows)
	perfetto.MaxPacketBytes, perfetto.MaxBufferedRows, perfetto.WarmRows = 1<<20, 64, 8
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := perfetto.NewReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		n := 0
		for r.Next() {
			if n++; n > 1<<22 {
				t.Fatal("runaway")
			}
			_ = r.Event()
		}
		_ = r.Meta()
		perfetto.Sniff(data)
	})
}
