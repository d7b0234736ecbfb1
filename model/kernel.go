package model

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KernelVersion is the part of a kernel release string that decides how the
// scheduler domains are built and named.
type KernelVersion struct {
	Major, Minor, Patch int
	// Release is the string the version was parsed from ("" for newest).
	Release string
}

// NewestKernel is the version BuildDomains assumes when none is given: the
// newest behaviour this model knows (v6.19).
var NewestKernel = KernelVersion{Major: 6, Minor: 19}

var kernelRe = regexp.MustCompile(`^v?(\d{1,2})\.(\d{1,3})(?:\.(\d{1,4}))?`)

// ParseKernelVersion reads a kernel release such as "6.1.0-57-amd64",
// "5.10", "v6.7-rc1" or "Linux version 6.12.5 ..." (the os release perf
// records). An empty string means NewestKernel.
func ParseKernelVersion(s string) (KernelVersion, error) {
	r := strings.TrimSpace(s)
	if r == "" {
		return NewestKernel, nil
	}
	t := strings.TrimPrefix(r, "Linux version ")
	m := kernelRe.FindStringSubmatch(t)
	if m == nil {
		return KernelVersion{}, fmt.Errorf("kernel version %q: want a release like 6.1, 5.10.0 or 6.1.0-57-amd64", s)
	}
	v := KernelVersion{Release: r}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	if v.Major < 2 {
		return KernelVersion{}, fmt.Errorf("kernel version %q: major version %d is not a Linux 2.x-6.x release", s, v.Major)
	}
	return v, nil
}

func (v KernelVersion) String() string {
	if v.Release != "" {
		return v.Release
	}
	return fmt.Sprintf("%d.%d (newest modelled)", v.Major, v.Minor)
}

// AtLeast reports whether v is major.minor or later.
func (v KernelVersion) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// PkgLevelName is the name of the package-wide level: "DIE" until v6.6,
// "PKG" from v6.7 (commit f577cd57bfaa "sched/topology: Rename 'DIE' domain
// to 'PKG'", in tip sched/core 2023-10-12). The rename was also queued for
// 6.6.y stable in February 2025 (review series of 2025-02-05, as a
// dependency of e1bc02646527); 6.6.76 is taken as the first 6.6.y that
// prints PKG. Debian's 6.1.0-57 (6.1.192) still prints DIE (fixtures).
func (v KernelVersion) PkgLevelName() string {
	if v.AtLeast(6, 7) || (v.Major == 6 && v.Minor == 6 && v.Patch >= 76) {
		return "PKG"
	}
	return "DIE"
}

// hasCLS: the cluster level exists from v5.16 (commits 778c558f49a2 and
// 66558b730f25, CONFIG_SCHED_CLUSTER assumed =y as in Debian's kernels).
func (v KernelVersion) hasCLS() bool { return v.AtLeast(5, 16) }

// hasClusterFlag: SD_CLUSTER and sd_share_id from v6.7 ("sched: Add
// cpus_share_resources API", merged in the v6.7 sched pull).
func (v KernelVersion) hasClusterFlag() bool { return v.AtLeast(6, 7) }

// shareLLCName: SD_SHARE_PKG_RESOURCES was renamed SD_SHARE_LLC in v6.10.
func (v KernelVersion) shareLLCName() bool { return v.AtLeast(6, 10) }

// hasLoadBalanceFlag: SD_LOAD_BALANCE existed up to v5.7.
func (v KernelVersion) hasLoadBalanceFlag() bool { return !v.AtLeast(5, 8) }

// flagsByName: since v5.10 (include/linux/sched/sd_flags.h) the flags file
// prints names; before it printed the decimal bitmask.
func (v KernelVersion) flagsByName() bool { return v.AtLeast(5, 10) }

// asymFull: SD_ASYM_CPUCAPACITY_FULL and per-span capacity classification
// from v5.14 (asym_cpu_capacity_classify).
func (v KernelVersion) asymFull() bool { return v.AtLeast(5, 14) }

// asymBalanceWake: from v4.10 to v5.7 sd_init sets SD_BALANCE_WAKE on a
// domain of unequal capacities and every domain below it, for wake_cap's
// slow path; v5.8 took both out with the capacity-aware wakeup scan
// (000619680c37, a526d466798d) [~ver].
func (v KernelVersion) asymBalanceWake() bool { return v.AtLeast(4, 10) && !v.AtLeast(5, 8) }

// HasWakeCap: the kernel's wakeup path has wake_cap() (v4.10-v5.7): a
// wakee that does not fit the smaller of the waking and previous CPUs'
// capacities takes the slow path (asymBalanceWake).
func (v KernelVersion) HasWakeCap() bool { return v.asymBalanceWake() }

// busyFactor and defaultImbalancePct: v5.10 lowered them from 32 and 125
// to 16 and 117.
func (v KernelVersion) busyFactor() int {
	if v.AtLeast(5, 10) {
		return 16
	}
	return 32
}

func (v KernelVersion) defaultImbalancePct() int {
	if v.AtLeast(5, 10) {
		return 117
	}
	return 125
}

// debugfs: the domain tree moved from /proc/sys/kernel/sched_domain to
// /sys/kernel/debug/sched/domains in v5.13.
func (v KernelVersion) debugfs() bool { return v.AtLeast(5, 13) }

// groupsFlagsFile: the debugfs groups_flags file, from ~v6.6 (present in
// v6.12, absent in v6.1); levelFile: the debugfs level file (present in
// v6.12, first version not verified; v6.12 is assumed).
func (v KernelVersion) groupsFlagsFile() bool { return v.AtLeast(6, 6) }
func (v KernelVersion) levelFile() bool       { return v.AtLeast(6, 12) }

// SDFlags is a set of sched-domain flags. The bit values are this package's
// own; the kernel's bit numbering changed between versions, so flags are
// printed by name (or, for kernels before v5.10, re-encoded with that era's
// bit values).
type SDFlags uint32

// The flags, in this package's own order.
const (
	SDLoadBalance SDFlags = 1 << iota // up to v5.7
	SDBalanceNewidle
	SDBalanceExec
	SDBalanceFork
	SDBalanceWake
	SDWakeAffine
	SDAsymCPUCapacity
	SDAsymCPUCapacityFull
	SDShareCPUCapacity
	SDSharePowerdomain // up to v5.9; never set by this model
	SDCluster
	SDShareLLC // SD_SHARE_PKG_RESOURCES before v6.10
	SDSerialize
	SDAsymPacking
	SDPreferSibling
	SDOverlap
	SDNUMA
)

type flagDesc struct {
	f    SDFlags
	name string
}

// flagOrder returns the flags in the kernel's declaration order for v (the
// order debugfs prints them in) with the names v uses. Before v5.10 the
// order is the bit order of include/linux/sched/topology.h.
func flagOrder(v KernelVersion) []flagDesc {
	llc := "SD_SHARE_PKG_RESOURCES"
	if v.shareLLCName() {
		llc = "SD_SHARE_LLC"
	}
	if !v.flagsByName() {
		return []flagDesc{
			{SDLoadBalance, "SD_LOAD_BALANCE"}, {SDBalanceNewidle, "SD_BALANCE_NEWIDLE"},
			{SDBalanceExec, "SD_BALANCE_EXEC"}, {SDBalanceFork, "SD_BALANCE_FORK"},
			{SDBalanceWake, "SD_BALANCE_WAKE"}, {SDWakeAffine, "SD_WAKE_AFFINE"},
			{SDAsymCPUCapacity, "SD_ASYM_CPUCAPACITY"}, {SDShareCPUCapacity, "SD_SHARE_CPUCAPACITY"},
			{SDSharePowerdomain, "SD_SHARE_POWERDOMAIN"}, {SDShareLLC, llc},
			{SDSerialize, "SD_SERIALIZE"}, {SDAsymPacking, "SD_ASYM_PACKING"},
			{SDPreferSibling, "SD_PREFER_SIBLING"}, {SDOverlap, "SD_OVERLAP"}, {SDNUMA, "SD_NUMA"},
		}
	}
	out := []flagDesc{
		{SDBalanceNewidle, "SD_BALANCE_NEWIDLE"}, {SDBalanceExec, "SD_BALANCE_EXEC"},
		{SDBalanceFork, "SD_BALANCE_FORK"}, {SDBalanceWake, "SD_BALANCE_WAKE"},
		{SDWakeAffine, "SD_WAKE_AFFINE"}, {SDAsymCPUCapacity, "SD_ASYM_CPUCAPACITY"},
	}
	if v.asymFull() {
		out = append(out, flagDesc{SDAsymCPUCapacityFull, "SD_ASYM_CPUCAPACITY_FULL"})
	}
	out = append(out, flagDesc{SDShareCPUCapacity, "SD_SHARE_CPUCAPACITY"})
	if v.hasClusterFlag() {
		out = append(out, flagDesc{SDCluster, "SD_CLUSTER"})
	}
	return append(out,
		flagDesc{SDShareLLC, llc}, flagDesc{SDSerialize, "SD_SERIALIZE"},
		flagDesc{SDAsymPacking, "SD_ASYM_PACKING"}, flagDesc{SDPreferSibling, "SD_PREFER_SIBLING"},
		flagDesc{SDOverlap, "SD_OVERLAP"}, flagDesc{SDNUMA, "SD_NUMA"})
}

// FlagNames lists the flags of f as kernel v names them, in the order its
// debugfs flags file prints them.
func (f SDFlags) FlagNames(v KernelVersion) []string {
	var out []string
	for _, d := range flagOrder(v) {
		if f&d.f != 0 {
			out = append(out, d.name)
		}
	}
	return out
}

// KernelBits encodes f with the bit values of kernel v (declaration order of
// the flags v has), as the pre-v5.10 procfs flags file printed it.
func (f SDFlags) KernelBits(v KernelVersion) uint32 {
	var out uint32
	for i, d := range flagOrder(v) {
		if f&d.f != 0 {
			out |= 1 << uint(i)
		}
	}
	return out
}

// ParseFlagNames is the inverse of FlagNames; both SD_SHARE_PKG_RESOURCES
// and SD_SHARE_LLC are accepted.
func ParseFlagNames(names []string) (SDFlags, error) {
	var f SDFlags
	for _, n := range names {
		found := false
		for _, v := range []KernelVersion{{Major: 5, Minor: 4}, NewestKernel} {
			for _, d := range flagOrder(v) {
				if d.name == n {
					f |= d.f
					found = true
				}
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown sched-domain flag %q", n)
		}
	}
	return f, nil
}

// needsGroups returns the flags that only mean something for a domain with
// two or more groups (SD_DEGENERATE_GROUPS_MASK from v5.10: every flag with
// SDF_NEEDS_GROUPS, i.e. all but SD_WAKE_AFFINE). Before v5.10 sd_degenerate
// used an explicit list; sd_parent_degenerate's list added SD_PREFER_SIBLING
// (and SD_SERIALIZE on single-node systems).
func needsGroups(v KernelVersion) SDFlags {
	if v.flagsByName() {
		return ^SDWakeAffine
	}
	return SDLoadBalance | SDBalanceNewidle | SDBalanceFork | SDBalanceExec |
		SDShareCPUCapacity | SDAsymCPUCapacity | SDShareLLC | SDSharePowerdomain
}
