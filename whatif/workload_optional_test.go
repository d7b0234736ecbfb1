package whatif

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/schedreplay/replay/internal/arrowtest"
)

// TestLoadWorkloadWithoutOptionalColumns: a workload file written before
// the edge columns sync, no_preempt_ns, awaits, raced and charged, the task
// column exit_ns and the activation columns tick_softirq, irq_cpu,
// irq_context and untraced existed (wlOptional) loads with those fields zero and
// everything else as saved. The file is a saved fixture workload with
// those columns cut out, so the loader's columns sit at other positions
// than the writer's.
func TestLoadWorkloadWithoutOptionalColumns(t *testing.T) {
	w, _ := extractFixture(t, largestFixture(t))
	// Files from before irq_context had no irq_current table either (its
	// rows name interrupts' arrivals, which such a file cannot tell).
	w.IRQCurrent = nil
	dir := t.TempDir()
	full := filepath.Join(dir, "full.arrow")
	if err := SaveWorkload(full, w); err != nil {
		t.Fatal(err)
	}
	drop := map[string]bool{"sync": true, "no_preempt_ns": true, "awaits": true, "raced": true, "exit_ns": true,
		"tick_softirq": true, "irq_cpu": true, "irq_context": true, "untraced": true, "charged": true}
	cut := filepath.Join(dir, "cut.arrow")
	fr := arrowtest.OpenFile(t, full)
	var keep []int
	var fields []arrow.Field
	for i, fd := range fr.Schema().Fields() {
		if !drop[fd.Name] {
			keep, fields = append(keep, i), append(fields, fd)
		}
	}
	md := fr.Schema().Metadata()
	schema := arrow.NewSchema(fields, &md)
	out, err := os.Create(cut)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := ipc.NewFileWriter(out, ipc.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < fr.NumRecords(); r++ {
		rec, err := fr.RecordBatch(r)
		if err != nil {
			t.Fatal(err)
		}
		var cols []arrow.Array
		for _, i := range keep {
			cols = append(cols, rec.Column(i))
		}
		nr := array.NewRecordBatch(schema, cols, rec.NumRows())
		if err := fw.Write(nr); err != nil {
			t.Fatal(err)
		}
		nr.Release()
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := LoadWorkload(full)
	if err != nil {
		t.Fatal(err)
	}
	charged := 0
	for i := range want.Edges {
		e := &want.Edges[i]
		if e.Charged {
			charged++
		}
		e.Sync, e.NoPreemptNS, e.Awaits, e.Raced, e.Charged = false, 0, false, false, false
	}
	contexts := 0
	for i := range want.Tasks {
		want.Tasks[i].ExitNS = 0
		for j := range want.Tasks[i].Activations {
			a := &want.Tasks[i].Activations[j]
			if a.IRQ != IRQNone {
				contexts++
			}
			a.TickSoftIRQ, a.IRQCPUPlus1, a.IRQ, a.Untraced = false, 0, IRQNone, false
		}
	}
	if contexts == 0 || charged == 0 {
		t.Errorf("the fixture's workload has %d arrivals' interrupt contexts and %d charged edges to drop; want some of each", contexts, charged)
	}
	got, err := LoadWorkload(cut)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Edges) == 0 || !reflect.DeepEqual(got.Tasks, want.Tasks) || !reflect.DeepEqual(got.Edges, want.Edges) || !reflect.DeepEqual(got.HostStalls, want.HostStalls) {
		t.Errorf("the file without %v does not load as the full one with them zero (%d tasks, %d edges)", drop, len(got.Tasks), len(got.Edges))
	}
}
