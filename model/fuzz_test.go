package model

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// exercise builds the domains of an accepted topology under two kernels'
// rules and renders them; nothing may panic and the kernel's own sanity
// checks must hold.
func exercise(t *testing.T, top *Topology) {
	if top.NrCPUs > 256 {
		return
	}
	for _, k := range []string{"5.4", "6.1", ""} {
		d, err := BuildDomains(top, k)
		if err != nil {
			continue
		}
		checkInvariants(t, d)
		_ = d.WriteText(io.Discard)
		_ = d.WriteVerbose(io.Discard)
		_ = d.WriteTree(io.Discard)
		_ = d.WriteJSON(io.Discard)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"sockets=2,cores=10,threads=2", "hikey", "juno-r0,capacity=0:512", "epyc2-2s64c,distance=12",
		"sockets=4,cores=2,numa=4,distance=10:20:40:40/20:10:40:40/40:40:10:20/40:40:20:10",
		"sockets=1,cores=8,clusters=2,llc=cluster,arch=arm64,capacity=0-3:446/4-7:1024",
		"sockets=2,cores=4,threads=2,numbering=interleaved,numa=4,llc=2", "sockets=1,dies=2,cores=8,threads=2,llc=die",
		"cores=3,numa=3,distance=10:15:20/15:10:25/20:25:10", "threads=2,capacity=0:512/1:1024,arch=powerpc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		// Never let the fuzzer name real files or directories.
		for _, part := range []string{spec, firstItem(spec)} {
			if _, err := os.Stat(part); err == nil {
				return
			}
		}
		top, err := ParseSpec(spec)
		if err != nil {
			if top != nil {
				t.Fatalf("error %v with a topology", err)
			}
			return
		}
		if err := top.Validate(); err != nil {
			t.Fatalf("accepted spec %q gives an invalid topology: %v", spec, err)
		}
		exercise(t, top)
	})
}

func firstItem(s string) string {
	if i := bytes.IndexByte([]byte(s), ','); i >= 0 {
		return s[:i]
	}
	return s
}

func FuzzParseLscpu(f *testing.F) {
	files, _ := filepath.Glob("testdata/kernels/*/lscpu-p.txt")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("# CPU,Core,Socket,Node,Cluster,,L1d:L1i:L2\n0,0,0,0,0,,0:0:0\n1,1,0,0,0,,1:1:0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		top, err := ParseLscpu(bytes.NewReader(b))
		if err != nil {
			return
		}
		exercise(t, top)
	})
}

func FuzzSysfsDump(f *testing.F) {
	for _, g := range []string{"guest-A-2s2c2t-2numa", "guest-G-4s2c2t-4numa-ring", "guest-K-1cpu"} {
		a, _ := os.ReadFile(filepath.Join("testdata/kernels", g, "cpu_topology_sysfs.txt"))
		b, _ := os.ReadFile(filepath.Join("testdata/kernels", g, "numa_nodes.txt"))
		f.Add(append(a, b...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		top, err := ParseTopologyBytes(b)
		if err != nil {
			return
		}
		exercise(t, top)
	})
}

// FuzzParseTopologyBytes: a topology file's content, the JSON form with
// an Energy Model among the seeds. An accepted topology validates, its
// Energy Model (if whole) has costs for every state, and its domains
// build.
func FuzzParseTopologyBytes(f *testing.F) {
	f.Add(junoR0)
	f.Add([]byte(`{"nr_cpus":2,"cpus":[{"cpu":0,"online":true,"capacity":512},{"cpu":1,"online":true}],` +
		`"perf_domains":[{"cpus":[0],"states":[{"khz":500000,"power_mw":50}]},{"cpus":[1],"states":[{"khz":1000000,"power_mw":300}]}]}`))
	f.Add([]byte("# CPU,Core,Socket,Node\n0,0,0,0\n1,1,0,0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		top, err := ParseTopologyBytes(b)
		if err != nil {
			return
		}
		if err := top.Validate(); err != nil {
			t.Fatalf("accepted topology is invalid: %v", err)
		}
		for _, pd := range top.EnergyModel() {
			for i := range pd.States {
				_ = pd.Cost(i)
			}
		}
		exercise(t, top)
	})
}
