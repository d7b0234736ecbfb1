package analysis

import (
	"fmt"
	"sort"

	"github.com/schedreplay/replay/model"
)

// Levels is the scheduler-domain hierarchy the domain metrics are counted
// in. It is an interface so the analysis needs nothing of how domains are
// built (FromDomains adapts model.BuildDomains; tests use SpanLevels).
type Levels interface {
	// Levels names the levels, lowest (smallest span) first, e.g.
	// ["SMT", "MC", "NUMA"]. Names are unique.
	Levels() []string
	// LevelOf is the lowest level whose span of cpuA contains cpuB, -1 when
	// none does (or either CPU is unknown).
	LevelOf(cpuA, cpuB int) int
	// Span lists the CPUs of cpu's domain at level, nil when cpu has no
	// domain at that level (the kernel removed it as degenerate, or the CPU
	// is unknown).
	Span(cpu, level int) []int
}

// FromDomains adapts the domains model.BuildDomains built. Each
// topology level attached on some CPU becomes a level; a level whose name
// repeats (the kernel names every NUMA level "NUMA") gets "-2", "-3", ...
// appended so JSON keys stay unique.
func FromDomains(d *model.Domains) Levels {
	if d == nil {
		return nil
	}
	used := map[int]bool{}
	for _, cd := range d.CPUs {
		for _, sd := range cd.Domains {
			used[sd.Level] = true
		}
	}
	var idx []int
	for li := range used {
		idx = append(idx, li)
	}
	sort.Ints(idx)
	sl := &SpanLevels{}
	seen := map[string]int{}
	pos := map[int]int{}
	for i, li := range idx {
		name := fmt.Sprintf("L%d", li)
		if li < len(d.Levels) {
			name = d.Levels[li].Name
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name = fmt.Sprintf("%s-%d", name, n)
		}
		sl.Names = append(sl.Names, name)
		pos[li] = i
	}
	sl.Spans = make([][][]int, len(d.CPUs))
	for c, cd := range d.CPUs {
		sl.Spans[c] = make([][]int, len(idx))
		for _, sd := range cd.Domains {
			sl.Spans[c][pos[sd.Level]] = sd.Span
		}
	}
	return sl
}

// SpanLevels is a Levels given by explicit spans.
type SpanLevels struct {
	// Names of the levels, lowest first.
	Names []string
	// Spans[cpu][level] are the CPUs of cpu's domain at level (nil: none).
	Spans [][][]int
}

// Levels implements Levels.
func (s *SpanLevels) Levels() []string {
	if s == nil {
		return nil
	}
	return s.Names
}

// Span implements Levels.
func (s *SpanLevels) Span(cpu, level int) []int {
	if s == nil || cpu < 0 || cpu >= len(s.Spans) || level < 0 || level >= len(s.Spans[cpu]) {
		return nil
	}
	return s.Spans[cpu][level]
}

// LevelOf implements Levels.
func (s *SpanLevels) LevelOf(a, b int) int {
	if s == nil || a < 0 || a >= len(s.Spans) {
		return -1
	}
	for l, span := range s.Spans[a] {
		for _, c := range span {
			if c == b {
				return l
			}
		}
	}
	return -1
}

// NumCPUs is the number of CPU ids the spans cover.
func (s *SpanLevels) NumCPUs() int {
	if s == nil {
		return 0
	}
	return len(s.Spans)
}
