// Package model rebuilds the traced machine: the CPU topology (from trace
// headers, a spec or sysfs) and, from it, the scheduler-domain hierarchy the
// kernel would have built.
package model

// Topology holds the facts about the machine's CPUs that a trace or a spec can
// give. It is deliberately a record of facts (ids and sibling lists as the
// kernel exports them in sysfs and perf copies them into perf.data), not of
// derived structure: the sched-domain builder derives levels from it.
//
// Unknown integer ids are -1. A Topology is stored as JSON in the timeline's
// schema metadata under the key "topology", so the JSON field names are part
// of the file format (docs/timeline.md).
type Topology struct {
	// Source says where the facts came from, e.g. "perf.data header",
	// "spec sockets=2,cores=10,threads=2", "lscpu -p".
	Source string `json:"source"`
	// NrCPUs is the number of possible CPUs (max CPU id + 1).
	NrCPUs int `json:"nr_cpus"`
	// NrCPUsOnline as reported by the source; 0 when unknown.
	NrCPUsOnline int `json:"nr_cpus_online,omitempty"`
	// CPUs has one entry per possible CPU, indexed by CPU id.
	CPUs []CPU `json:"cpus"`
	// Caches lists each distinct cache instance with the CPUs sharing it.
	Caches []Cache `json:"caches,omitempty"`
	// Nodes are the NUMA nodes; empty means one node holding every CPU.
	Nodes []Node `json:"nodes,omitempty"`
	// Arch is the kernel architecture whose topology table applies: "x86"
	// (default when empty), "powerpc", or "arm64" and any other name for
	// the generic default_topology; uname -m spellings are accepted (see
	// NormalizeArch).
	Arch string `json:"arch,omitempty"`
	// PerfDomains is the Energy Model (energy.go): empty on machines
	// without one, which is every x86 machine and any Arm one whose
	// firmware gives no power figures.
	PerfDomains []PerfDomain `json:"perf_domains,omitempty"`
}

// CPU is one logical CPU (a hardware thread).
type CPU struct {
	ID int `json:"cpu"`
	// Online is false for CPUs the source knows of but could not read.
	Online bool `json:"online"`
	// CoreID, PackageID, DieID and ClusterID are the sysfs
	// topology/{core_id,physical_package_id,die_id,cluster_id} values:
	// core ids are unique only within a package.
	CoreID    int `json:"core_id"`
	PackageID int `json:"package_id"`
	DieID     int `json:"die_id"`
	ClusterID int `json:"cluster_id"`
	// Node is the NUMA node of the CPU, -1 when unknown.
	Node int `json:"node"`
	// ThreadSiblings are the CPUs sharing this CPU's core (itself included),
	// as in topology/thread_siblings_list; nil when unknown.
	ThreadSiblings []int `json:"thread_siblings,omitempty"`
	// CoreSiblings are the CPUs in this CPU's package
	// (topology/core_siblings_list, a.k.a. package_cpus_list).
	CoreSiblings []int `json:"core_siblings,omitempty"`
	// DieSiblings are the CPUs in this CPU's die.
	DieSiblings []int `json:"die_siblings,omitempty"`
	// ClusterSiblings are the CPUs in this CPU's cluster (cluster_cpus_list).
	ClusterSiblings []int `json:"cluster_siblings,omitempty"`
	// Capacity is arch_scale_cpu_capacity (1024 for the biggest CPU); 0 when
	// unknown, which means symmetric (1024).
	Capacity int `json:"capacity,omitempty"`
}

// Cache is one cache instance and the CPUs that share it.
type Cache struct {
	Level    int    `json:"level"`
	Type     string `json:"type"` // "Data", "Instruction", "Unified"
	Size     string `json:"size,omitempty"`
	LineSize int    `json:"line_size,omitempty"`
	Sets     int    `json:"sets,omitempty"`
	Ways     int    `json:"ways,omitempty"`
	CPUs     []int  `json:"cpus"`
}

// Node is a NUMA node.
type Node struct {
	ID   int   `json:"node"`
	CPUs []int `json:"cpus"`
	// MemTotalKB as perf records it; 0 when unknown.
	MemTotalKB uint64 `json:"mem_total_kb,omitempty"`
	// Distance to every node, indexed by node id (as in
	// /sys/devices/system/node/nodeN/distance); nil when unknown.
	Distance []int `json:"distance,omitempty"`
}

// CapacitiesDiffer reports whether the online CPUs differ in capacity (an
// unknown capacity counts as 1024): a machine whose wakeups the kernel
// places by capacity (wake_cap, select_idle_capacity, EAS), which the
// what-if engine models only in part.
func (t *Topology) CapacitiesDiffer() bool {
	first := -1
	for _, c := range t.CPUs {
		if !c.Online {
			continue
		}
		capc := c.Capacity
		if capc == 0 {
			capc = 1024
		}
		if first < 0 {
			first = capc
		} else if capc != first {
			return true
		}
	}
	return false
}
