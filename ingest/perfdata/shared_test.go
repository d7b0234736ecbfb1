package perfdata

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tests over ../shared/fixtures (other perf versions, GPL-licensed files
// that stay out of this repository, and real multi-socket topologies).

// TestSharedPublicFiles: every public perf.data parses; the legacy v1 file
// is refused with an explanation.
func TestSharedPublicFiles(t *testing.T) {
	root := filepath.Join(sharedDir(t), "fixtures", "public")
	n := 0
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		head := make([]byte, 8)
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		f.Read(head)
		f.Close()
		if !IsPerfData(head) {
			return nil
		}
		n++
		name, _ := filepath.Rel(root, p)
		t.Run(name, func(t *testing.T) {
			r, err := Open(p)
			if strings.HasSuffix(p, ".v1") {
				var fe *FormatError
				if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), "not supported") {
					t.Fatalf("legacy file: want a 'not supported' error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rows := map[string]int{}
			for r.Next() {
				rows[r.Event().Name]++
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			m := r.Meta()
			if m.Topology != nil {
				if err := m.Topology.Validate(); err != nil {
					t.Errorf("topology does not validate: %v", err)
				}
			}
			if len(rows) == 0 || len(m.Source.Events) == 0 {
				t.Errorf("no rows or events: %v %v", rows, m.Source.Events)
			}
			switch filepath.Base(p) {
			case "sleep.compressed2.pipe.data":
				// ends with 143 bytes of perf's own messages
				if m.Summary.Dropped["trailing bytes that are not records"] != 143 {
					t.Errorf("dropped %v, want 143 trailing bytes", m.Summary.Dropped)
				}
			case "fibo.compressed2.pipe.data":
				// one zstd stream over 146 COMPRESSED2 records
				if rows["cycles:P"] != 547 || rows["perf:fork"] != 19 || rows["perf:exit"] != 17 ||
					!strings.Contains(m.Source.Extra["skipped_records"], "MMAP2=814") {
					t.Errorf("rows %v, skipped %s", rows, m.Source.Extra["skipped_records"])
				}
				if m.Source.Compressed != "zstd level 1" || m.Source.ClockID != 1 {
					t.Errorf("compressed %q clockid %d", m.Source.Compressed, m.Source.ClockID)
				}
			case "perf.data.PerfFormatLost":
				if rows["cycles"] != 34 {
					t.Errorf("rows %v, want 34 cycles samples", rows)
				}
			case "sleep.data":
				if m.Source.ClockID != 1 || m.Source.ClockResNS != 1 || m.Source.Extra["clock_data"] == "" {
					t.Errorf("clock: %d %d %q", m.Source.ClockID, m.Source.ClockResNS, m.Source.Extra["clock_data"])
				}
			}
		})
		return nil
	})
	if n == 0 {
		t.Skip("no perf.data files in", root)
	}
}

// TestSharedKernelTopology checks the topology read from the perf.data
// header against lscpu run in the same guests (SMT, two sockets, NUMA).
func TestSharedKernelTopology(t *testing.T) {
	root := filepath.Join(sharedDir(t), "fixtures", "kernels")
	dirs, _ := filepath.Glob(filepath.Join(root, "guest-*"))
	if len(dirs) == 0 {
		t.Skip("no kernel fixtures")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r, err := Open(filepath.Join(dir, "hackbench.perf.data"))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			topo := r.Meta().Topology
			if topo == nil {
				t.Fatal("no topology")
			}
			if err := topo.Validate(); err != nil {
				t.Errorf("topology does not validate: %v", err)
			}
			lscpu, err := os.ReadFile(filepath.Join(dir, "info", "lscpu-p.txt"))
			if err != nil {
				t.Skip(err)
			}
			coreOf := map[int]string{} // lscpu's global core id
			l3Of := map[int]string{}
			l3s := map[string]bool{}
			cpus := 0
			for _, line := range strings.Split(string(lscpu), "\n") {
				if line == "" || line[0] == '#' {
					continue
				}
				f := strings.Split(line, ",")
				cpu, _ := strconv.Atoi(f[0])
				sock, _ := strconv.Atoi(f[2])
				node, _ := strconv.Atoi(f[3])
				cpus++
				if cpu >= len(topo.CPUs) {
					t.Fatalf("cpu %d missing (topology has %d)", cpu, len(topo.CPUs))
				}
				c := topo.CPUs[cpu]
				if c.PackageID != sock || c.Node != node || !c.Online {
					t.Errorf("cpu %d: package %d node %d online %v, lscpu socket %d node %d", cpu, c.PackageID, c.Node, c.Online, sock, node)
				}
				coreOf[cpu] = f[1]
				l3Of[cpu] = f[8]
				l3s[f[8]] = true
			}
			if topo.NrCPUs != cpus {
				t.Errorf("NrCPUs %d, lscpu %d", topo.NrCPUs, cpus)
			}
			for cpu, core := range coreOf {
				var want []int
				for c2, core2 := range coreOf {
					if core2 == core {
						want = append(want, c2)
					}
				}
				if got := topo.CPUs[cpu].ThreadSiblings; len(got) != len(want) {
					t.Errorf("cpu %d thread siblings %v, lscpu core mates %v", cpu, got, want)
				}
			}
			n3 := 0
			for _, ca := range topo.Caches {
				if ca.Level == 3 {
					n3++
					for _, c := range ca.CPUs {
						if l3Of[c] != l3Of[ca.CPUs[0]] {
							t.Errorf("L3 %v mixes lscpu L3 ids", ca.CPUs)
						}
					}
				}
			}
			if n3 != len(l3s) {
				t.Errorf("%d L3 instances, lscpu %d", n3, len(l3s))
			}
		})
	}
}

// TestSharedKernelsAgainstPerf compares the kernel-6.1 guest recordings
// (older sched formats: char[16] comms, vruntime) with perf script, live.
func TestSharedKernelsAgainstPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	root := filepath.Join(sharedDir(t), "fixtures", "kernels")
	files, _ := filepath.Glob(filepath.Join(root, "guest-*", "hackbench.perf.data"))
	if len(files) == 0 {
		t.Skip("no kernel fixtures")
	}
	for _, p := range files {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			out, err := runPerf(perfScriptArgs(p, ""))
			if err != nil {
				t.Fatalf("perf script: %v", err)
			}
			compareWithScript(t, p, out)
		})
	}
}

// TestKernelFixturesAgainstPerf compares the in-repo recordings of real
// 6.1 kernels (fixtures/kernels) with perf script, live.
func TestKernelFixturesAgainstPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	files, _ := filepath.Glob(filepath.Join(repoRoot(), "fixtures", "kernels", "*", "*.perf.data"))
	if len(files) == 0 {
		t.Skip("no fixtures/kernels")
	}
	for _, p := range files {
		rel, _ := filepath.Rel(filepath.Join(repoRoot(), "fixtures"), p)
		t.Run(rel, func(t *testing.T) {
			out, err := runPerf(perfScriptArgs(p, ""))
			if err != nil {
				t.Fatalf("perf script: %v", err)
			}
			compareWithScript(t, p, out)
		})
	}
}
