package perfscript

import (
	"io"
	"testing"

	"github.com/schedreplay/replay/ingest/perfdata"
	"github.com/schedreplay/replay/timeline"
)

// BenchmarkLines prints a real perf.data's 6,920 events (held in memory)
// as perf script lines: allocations per run are the buffers', not per
// event.
func BenchmarkLines(b *testing.B) {
	r, err := perfdata.Open("../../fixtures/perf/stressng.data")
	if err != nil {
		b.Fatal(err)
	}
	evs, err := timeline.ReadAll(r)
	r.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Write(io.Discard, &timeline.SliceReader{Events: evs}, Filter{}); err != nil {
			b.Fatal(err)
		}
	}
}
