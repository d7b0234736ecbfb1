package model

import "math/bits"

// cpuset is a fixed-size bitmap of CPU ids, the model's cpumask. All sets
// of one Domains build share the same size.
type cpuset []uint64

func newCPUSet(n int) cpuset { return make(cpuset, (n+63)/64) }

func cpusetOf(n int, cpus []int) cpuset {
	s := newCPUSet(n)
	for _, c := range cpus {
		if c >= 0 && c < n {
			s.set(c)
		}
	}
	return s
}

func (s cpuset) set(c int)      { s[c>>6] |= 1 << (uint(c) & 63) }
func (s cpuset) has(c int) bool { return c >= 0 && c>>6 < len(s) && s[c>>6]&(1<<(uint(c)&63)) != 0 }
func (s cpuset) clone() cpuset  { return append(cpuset(nil), s...) }
func (s cpuset) key() string    { return string(wordsBytes(s)) }
func (s cpuset) String() string { return FormatCPUList(s.list()) }
func (s cpuset) empty() bool    { return s.weight() == 0 }
func (s cpuset) equal(o cpuset) bool {
	if len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

func (s cpuset) weight() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

func (s cpuset) first() int {
	for i, w := range s {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

func (s cpuset) list() []int {
	out := make([]int, 0, s.weight())
	for i, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			out = append(out, i*64+b)
			w &^= 1 << uint(b)
		}
	}
	return out
}

func (s cpuset) and(o cpuset) cpuset {
	r := make(cpuset, len(s))
	for i := range s {
		if i < len(o) {
			r[i] = s[i] & o[i]
		}
	}
	return r
}

func (s cpuset) or(o cpuset) cpuset {
	r := s.clone()
	for i := range r {
		if i < len(o) {
			r[i] |= o[i]
		}
	}
	return r
}

func (s cpuset) intersects(o cpuset) bool {
	for i := range s {
		if i < len(o) && s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// subsetOf reports whether every CPU of s is in o.
func (s cpuset) subsetOf(o cpuset) bool {
	for i := range s {
		var ow uint64
		if i < len(o) {
			ow = o[i]
		}
		if s[i]&^ow != 0 {
			return false
		}
	}
	return true
}

// wrapOrder returns the CPUs of s starting at the first one >= start and
// wrapping around, like the kernel's for_each_cpu_wrap().
func (s cpuset) wrapOrder(start int) []int {
	l := s.list()
	i := 0
	for i < len(l) && l[i] < start {
		i++
	}
	return append(l[i:len(l):len(l)], l[:i]...)
}

func wordsBytes(s cpuset) []byte {
	b := make([]byte, 0, len(s)*8)
	for _, w := range s {
		for k := 0; k < 8; k++ {
			b = append(b, byte(w>>(8*k)))
		}
	}
	return b
}
