package tracefmt

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// StateDecoder renders sched_switch prev_state values as the kernel (and
// perf / trace-cmd without plugins) print them: "R", "R+", "S", "D|K", "I"…
//
// The meaning of the bits changed several times (TASK_PARKED, TASK_NOLOAD,
// TASK_NEW, the 4.14 switch to TASK_REPORT bits), so the decoder is built
// from the print fmt of the trace itself when there is one, and from the
// kernel release otherwise. Rendered strings are cached per distinct value
// of the observable bits, so Letters does not allocate after the first
// time it sees a value (and never for 0, single bits and their "+" forms).
// A StateDecoder is safe for concurrent use.
type StateDecoder struct {
	parts []*node // concatenated: the letters, then the optional "+"
	mask  uint64  // bits of the state that can change the output
	all   bool    // every bit matters (old kernels test the whole value)
	cache []atomic.Pointer[string]
}

// maxStateCache bounds the cache (8 bytes per slot); the widest real layout
// (4.8-4.13) needs 8192 slots.
const maxStateCache = 1 << 14

// StateDecoderFromPrintFmt builds a decoder from the print fmt of a
// sched_switch format (the text after "print fmt: "). It locates the
// argument(s) printed by the "prev_state=%s%s" conversion(s) and evaluates
// them: the MASK/PBIT constant expressions, the __print_flags table and the
// "+" suffix are whatever that kernel wrote.
func StateDecoderFromPrintFmt(printFmt string) (*StateDecoder, error) {
	toks, err := tokenize(printFmt)
	if err != nil {
		return nil, fmt.Errorf("prev_state print fmt: %w", err)
	}
	args := splitArgs(toks)
	if len(args) < 2 || len(args[0]) == 0 || args[0][0].kind != tStr {
		return nil, errors.New("prev_state print fmt: expected a format string followed by arguments")
	}
	fmtStr := ""
	for _, t := range args[0] {
		if t.kind != tStr {
			return nil, errors.New("prev_state print fmt: expected only string literals before the first argument")
		}
		fmtStr += t.text
	}
	args = args[1:]

	var idx []int // argument indexes holding the prev_state text
	if convs, ok := conversions(fmtStr); ok {
		if at := strings.Index(fmtStr, "prev_state="); at >= 0 {
			at += len("prev_state=")
			for k, c := range convs {
				if c.pos < at {
					continue
				}
				if c.pos == at {
					idx = append(idx, c.arg)
					// "%s%s": the second conversion carries the "+".
					if k+1 < len(convs) && convs[k+1].pos == c.end && convs[k+1].verb == 's' {
						idx = append(idx, convs[k+1].arg)
					}
				}
				break
			}
		}
	}
	if len(idx) == 0 {
		// No usable "prev_state=" in the format string: take the argument
		// with __print_flags over prev_state and a following "+" argument.
		for k, a := range args {
			if hasIdent(a, "__print_flags") && hasIdent(a, "prev_state") {
				idx = append(idx, k)
				if k+1 < len(args) && hasIdent(args[k+1], "prev_state") && !hasIdent(args[k+1], "__print_flags") {
					idx = append(idx, k+1)
				}
				break
			}
		}
	}
	if len(idx) == 0 {
		return nil, errors.New("prev_state print fmt: no prev_state argument found")
	}
	d := &StateDecoder{}
	for _, k := range idx {
		if k >= len(args) {
			return nil, fmt.Errorf("prev_state print fmt: format string needs argument %d, only %d given", k+1, len(args))
		}
		n, err := parseArg(args[k], "prev_state")
		if err != nil {
			return nil, fmt.Errorf("prev_state print fmt: argument %d: %w", k+1, err)
		}
		if !n.refsVar() {
			return nil, fmt.Errorf("prev_state print fmt: argument %d does not use REC->prev_state", k+1)
		}
		d.parts = append(d.parts, n)
	}
	if err := d.init(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *StateDecoder) init() error {
	for _, p := range d.parts {
		m, all := p.varMask()
		d.mask |= m
		d.all = d.all || all
	}
	size := uint64(maxStateCache)
	if d.all {
		// Cover every value up to twice the largest constant in sight.
		if c := d.maxConst(); c < maxStateCache/2 {
			size = uint64(1) << bits.Len64(c|1) << 1
		}
	} else if d.mask < maxStateCache {
		size = d.mask + 1
	}
	d.cache = make([]atomic.Pointer[string], size)
	// Check that every part yields text and warm the cache with the values
	// that make up nearly all switches: 0, each single bit, each with the
	// top ("+") bit.
	top := uint64(0)
	if !d.all && d.mask != 0 {
		top = uint64(1) << (bits.Len64(d.mask) - 1)
	}
	warm := []uint64{0}
	for b := 0; b < 64; b++ {
		v := uint64(1) << b
		if d.all && v >= size || !d.all && d.mask&v == 0 {
			continue
		}
		warm = append(warm, v, v|top)
	}
	for _, v := range warm {
		s, err := d.render(v)
		if err != nil {
			return fmt.Errorf("prev_state print fmt: value %#x: %w", v, err)
		}
		if i := d.index(v); i >= 0 {
			d.cache[i].Store(&s)
		}
	}
	return nil
}

func (d *StateDecoder) maxConst() uint64 {
	m := uint64(0)
	for _, p := range d.parts {
		m = max(m, p.maxConst())
	}
	return m
}

// index maps a (masked) state to its cache slot, or -1.
func (d *StateDecoder) index(u uint64) int {
	if u < uint64(len(d.cache)) {
		return int(u)
	}
	return -1
}

func (d *StateDecoder) render(u uint64) (string, error) {
	if len(d.parts) == 1 {
		v, err := d.parts[0].eval(u, true)
		if err != nil {
			return "", err
		}
		if !v.isStr {
			return "", errors.New("argument is a number, not text")
		}
		return v.s, nil
	}
	var b strings.Builder
	for _, p := range d.parts {
		v, err := p.eval(u, true)
		if err != nil {
			return "", err
		}
		if !v.isStr {
			return "", errors.New("argument is a number, not text")
		}
		b.WriteString(v.s)
	}
	return b.String(), nil
}

// Letters renders state exactly as the kernel printed it for this layout.
func (d *StateDecoder) Letters(state int64) string {
	u := uint64(state)
	if !d.all {
		u &= d.mask
	}
	i := d.index(u)
	if i >= 0 {
		if p := d.cache[i].Load(); p != nil {
			return *p
		}
	}
	s, err := d.render(u)
	if err != nil {
		// Only hostile print fmts get here (e.g. a division by the state).
		return "0x" + strconv.FormatUint(uint64(state), 16)
	}
	if i >= 0 {
		d.cache[i].Store(&s)
	}
	return s
}

// Mask returns the bits of prev_state that influence Letters (all ones for
// old kernels whose print fmt tests the whole value).
func (d *StateDecoder) Mask() uint64 {
	if d.all {
		return ^uint64(0)
	}
	return d.mask
}

// splitArgs splits a token list at top-level commas.
func splitArgs(toks []token) [][]token {
	var out [][]token
	depth, start := 0, 0
	for i, t := range toks {
		if t.kind != tOp {
			continue
		}
		switch t.text {
		case "(", "{", "[":
			depth++
		case ")", "}", "]":
			depth--
		case ",":
			if depth == 0 {
				out = append(out, toks[start:i])
				start = i + 1
			}
		}
	}
	return append(out, toks[start:])
}

func hasIdent(toks []token, name string) bool {
	for _, t := range toks {
		if t.kind == tIdent && t.text == name {
			return true
		}
	}
	return false
}

type conversion struct {
	pos, end int  // byte range of the %… directive in the format string
	arg      int  // index of the argument it prints
	verb     byte // conversion character
}

// conversions lists the printf directives of a format string with the
// argument each consumes ('*' width/precision consume one more).
func conversions(f string) ([]conversion, bool) {
	var out []conversion
	arg := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		start := i
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		for i < len(f) && (f[i] >= '0' && f[i] <= '9' || f[i] == '.' || f[i] == '*') {
			if f[i] == '*' {
				arg++
			}
			i++
		}
		for i < len(f) && strings.IndexByte("hlLqjzt", f[i]) >= 0 {
			i++
		}
		if i >= len(f) {
			return nil, false
		}
		verb := f[i]
		// Kernel extensions: %pS, %pf, %pI4 … take letters after 'p'.
		if verb == 'p' {
			for i+1 < len(f) && isIdentByte(f[i+1]) {
				i++
			}
		}
		out = append(out, conversion{pos: start, end: i + 1, arg: arg, verb: verb})
		arg++
	}
	return out, true
}

// Print fmt arguments for the prev_state layouts of past kernels, in the
// kernel's own notation so they go through the same evaluator. Letters are
// those the kernel printed then (before 4.14 it printed 16 as "Z" and 32 as
// "X" although EXIT_DEAD/EXIT_ZOMBIE had swapped values since 3.14; both
// mean the task is gone).
const (
	oldTable = `{ 1, "S"} , { 2, "D" }, { 4, "T" }, { 8, "t" }, { 16, "Z" }, { 32, "X" }, { 64, "x" }, { 128, "K" }, { 256, "W" }`
	// ≥ 4.14: TASK_REPORT bits, TASK_REPORT_MAX (0x100) marks preemption.
	layout414 = `"prev_state=%s%s", REC->prev_state & 0xff ? __print_flags(REC->prev_state & 0xff, "|", { 0x01, "S" }, { 0x02, "D" }, { 0x04, "T" }, { 0x08, "t" }, { 0x10, "X" }, { 0x20, "Z" }, { 0x40, "P" }, { 0x80, "I" }) : "R", REC->prev_state & 0x100 ? "+" : ""`
	// 4.8-4.13: TASK_NEW (2048) exists, TASK_STATE_MAX = 4096.
	layout48 = `"prev_state=%s%s", REC->prev_state & (4096-1) ? __print_flags(REC->prev_state & (4096-1), "|", ` + oldTable + `, { 512, "P" }, { 1024, "N" }) : "R", REC->prev_state & 4096 ? "+" : ""`
	// 4.2-4.7: TASK_NOLOAD (1024) added, TASK_STATE_MAX = 2048.
	layout42 = `"prev_state=%s%s", REC->prev_state & (2048-1) ? __print_flags(REC->prev_state & (2048-1), "|", ` + oldTable + `, { 512, "P" }, { 1024, "N" }) : "R", REC->prev_state & 2048 ? "+" : ""`
	// 3.9-4.1: TASK_PARKED (512) added, TASK_STATE_MAX = 1024.
	layout39 = `"prev_state=%s%s", REC->prev_state & (1024-1) ? __print_flags(REC->prev_state & (1024-1), "|", ` + oldTable + `, { 512, "P" }) : "R", REC->prev_state & 1024 ? "+" : ""`
	// 3.2-3.8: preemption reported as TASK_STATE_MAX = 512 (not verified
	// on a real trace).
	layout32 = `"prev_state=%s%s", REC->prev_state & (512-1) ? __print_flags(REC->prev_state & (512-1), "|", ` + oldTable + `) : "R", REC->prev_state & 512 ? "+" : ""`
	// Before 3.2: no preemption mark; the whole value is tested and 128
	// printed as "W" (as in 2.6.3x format files; not verified on a trace).
	layoutOld = `"prev_state=%s", REC->prev_state ? __print_flags(REC->prev_state, "|", { 1, "S"} , { 2, "D" }, { 4, "T" }, { 8, "t" }, { 16, "Z" }, { 32, "X" }, { 64, "x" }, { 128, "W" }) : "R"`
)

var kernelLayouts = []struct {
	major, minor int // first release using the layout
	fmt          string
	dec          func() *StateDecoder
}{
	{4, 14, layout414, nil},
	{4, 8, layout48, nil},
	{4, 2, layout42, nil},
	{3, 9, layout39, nil},
	{3, 2, layout32, nil},
	{0, 0, layoutOld, nil},
}

func init() {
	for i := range kernelLayouts {
		text := kernelLayouts[i].fmt
		kernelLayouts[i].dec = sync.OnceValue(func() *StateDecoder {
			d, err := StateDecoderFromPrintFmt(text)
			if err != nil {
				panic("tracefmt: built-in prev_state layout: " + err.Error())
			}
			return d
		})
	}
}

// StateDecoderForKernel returns the decoder for a kernel release such as
// "6.1.0-57-amd64" or "4.9.0", for traces without a sched_switch format
// (Perfetto, text with numeric states). An empty or unparsable release
// gets the newest layout. The result is shared; it is safe to use from
// several goroutines.
func StateDecoderForKernel(release string) *StateDecoder {
	major, minor, ok := parseRelease(release)
	if !ok {
		return kernelLayouts[0].dec()
	}
	for _, l := range kernelLayouts {
		if major > l.major || major == l.major && minor >= l.minor {
			return l.dec()
		}
	}
	return kernelLayouts[len(kernelLayouts)-1].dec()
}

// parseRelease reads the leading "major.minor" of a kernel release.
func parseRelease(r string) (major, minor int, ok bool) {
	r = strings.TrimSpace(r)
	num := func() (int, bool) {
		i := 0
		for i < len(r) && r[i] >= '0' && r[i] <= '9' {
			i++
		}
		if i == 0 || i > 6 {
			return 0, false
		}
		n, _ := strconv.Atoi(r[:i])
		r = r[i:]
		return n, true
	}
	if major, ok = num(); !ok || !strings.HasPrefix(r, ".") {
		return 0, 0, false
	}
	r = r[1:]
	if minor, ok = num(); !ok {
		return 0, 0, false
	}
	return major, minor, true
}
