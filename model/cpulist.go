package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxCPUs bounds CPU ids accepted from untrusted input (the kernel's
// NR_CPUS maximum is 8192).
const MaxCPUs = 8192

// ParseCPUList parses the kernel's CPU list syntax ("0-3,8,10-11"), as used
// by sysfs *_list files, perf headers and lscpu. The result is sorted and
// free of duplicates. An empty string is an empty list.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a >= MaxCPUs {
			return nil, fmt.Errorf("cpu list %q: %q is not a CPU number (want e.g. 0-3,8)", s, lo)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a || b >= MaxCPUs {
				return nil, fmt.Errorf("cpu list %q: bad range %q (want low-high with low <= high < %d)", s, part, MaxCPUs)
			}
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// FormatCPUList prints CPUs in the kernel's compact list syntax.
func FormatCPUList(cpus []int) string {
	c := append([]int(nil), cpus...)
	sort.Ints(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			fmt.Fprintf(&b, "%d", c[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", c[i], c[j])
		}
		i = j + 1
	}
	return b.String()
}
