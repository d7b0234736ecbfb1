package tracefmt

// A small evaluator for the C expressions found in print fmt arguments.
// It covers what the sched_switch prev_state arguments use on every kernel
// seen so far (integer constants, | & ^ + - * / % << >> comparisons, ! ~,
// casts, ?: with string results, __print_flags and __print_symbolic) and
// one variable, REC-><field>. It is not a general printf renderer.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tNum
	tStr
	tIdent
	tOp
)

type token struct {
	kind tokKind
	text string // identifier, operator, or decoded string literal
	num  uint64
	pos  int
}

// maxExprTokens bounds the work done on hostile print fmts.
const maxExprTokens = 1 << 16

func tokenize(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		if len(toks) >= maxExprTokens {
			return nil, fmt.Errorf("column %d: expression too long", i+1)
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (isIdentByte(s[j])) {
				j++
			}
			v, err := parseCNumber(s[i:j])
			if err != nil {
				return nil, fmt.Errorf("column %d: expected a number, got %q", i+1, clip(s[i:j]))
			}
			toks = append(toks, token{kind: tNum, num: v, pos: i})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && isIdentByte(s[j]) {
				j++
			}
			toks = append(toks, token{kind: tIdent, text: s[i:j], pos: i})
			i = j
		case c == '"':
			str, n, err := unquoteC(s[i:], '"')
			if err != nil {
				return nil, fmt.Errorf("column %d: %v", i+1, err)
			}
			toks = append(toks, token{kind: tStr, text: str, pos: i})
			i += n
		case c == '\'':
			str, n, err := unquoteC(s[i:], '\'')
			if err != nil || len(str) != 1 {
				return nil, fmt.Errorf("column %d: expected a character constant", i+1)
			}
			toks = append(toks, token{kind: tNum, num: uint64(str[0]), pos: i})
			i += n
		default:
			op := ""
			if i+1 < len(s) {
				switch two := s[i : i+2]; two {
				case "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||":
					op = two
				}
			}
			if op == "" {
				if !strings.ContainsRune("(){}[],?:+-*/%&|^~!<>.", rune(c)) {
					return nil, fmt.Errorf("column %d: unexpected character %q", i+1, c)
				}
				op = s[i : i+1]
			}
			toks = append(toks, token{kind: tOp, text: op, pos: i})
			i += len(op)
		}
	}
	return toks, nil
}

// parseCNumber reads a C integer constant with optional U/L suffixes.
func parseCNumber(s string) (uint64, error) {
	t := strings.TrimRight(s, "uUlL")
	if t == "" {
		return 0, errors.New("empty number")
	}
	return strconv.ParseUint(t, 0, 64)
}

// unquoteC decodes a C string or character literal at the start of s and
// returns it with the number of bytes consumed.
func unquoteC(s string, q byte) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case q:
			return b.String(), i + 1, nil
		case '\\':
			i++
			if i >= len(s) {
				return "", 0, errors.New("unterminated escape")
			}
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated literal")
}

type nodeOp uint8

const (
	nNum nodeOp = iota
	nStr
	nVar
	nUnary
	nBinary
	nCond
	nCast
	nFlags
	nSymbolic
)

type flagEntry struct {
	mask uint64
	name string
}

type node struct {
	op    nodeOp
	tok   string // operator for nUnary/nBinary
	n     uint64 // nNum value; for nCast: bit width
	s     string // nStr text; nVar field name; nFlags delimiter
	neg   bool   // nCast: signed target type
	a     *node
	b, c  *node
	table []flagEntry
}

// parser turns tokens into a node tree. varName is the only field whose
// value can be supplied; any other REC->x makes the parse fail.
type parser struct {
	toks    []token
	i       int
	varName string
	depth   int
}

const maxExprDepth = 200

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{kind: tEOF, pos: -1}
}

func (p *parser) next() token {
	t := p.peek()
	if p.i < len(p.toks) {
		p.i++
	}
	return t
}

func (p *parser) isOp(s string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == s
}

func (p *parser) expect(s string) error {
	if !p.isOp(s) {
		return p.errf("expected %q", s)
	}
	p.i++
	return nil
}

func (p *parser) errf(format string, args ...any) error {
	t := p.peek()
	where := "end of expression"
	if t.kind != tEOF {
		where = "token " + strconv.Itoa(p.i+1)
	}
	return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
}

func (p *parser) parseExpr() (*node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return nil, p.errf("expression nested too deeply")
	}
	cond, err := p.parseBinary(0)
	if err != nil {
		return nil, err
	}
	if !p.isOp("?") {
		return cond, nil
	}
	p.i++
	yes, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	no, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	return &node{op: nCond, a: cond, b: yes, c: no}, nil
}

// C binary operator precedence, loosest first.
var binPrec = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7, ">=": 7,
	"<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

func (p *parser) parseBinary(minPrec int) (*node, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp {
			return left, nil
		}
		prec, ok := binPrec[t.text]
		if !ok || prec <= minPrec {
			return left, nil
		}
		p.i++
		right, err := p.parseBinary(prec)
		if err != nil {
			return nil, err
		}
		left = &node{op: nBinary, tok: t.text, a: left, b: right}
	}
}

func (p *parser) parseUnary() (*node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxExprDepth {
		return nil, p.errf("expression nested too deeply")
	}
	t := p.peek()
	if t.kind == tOp {
		switch t.text {
		case "-", "~", "!", "+":
			p.i++
			a, err := p.parseUnary()
			if err != nil {
				return nil, err
			}
			return &node{op: nUnary, tok: t.text, a: a}, nil
		case "(":
			if width, signed, n, ok := p.castAhead(); ok {
				p.i += n
				a, err := p.parseUnary()
				if err != nil {
					return nil, err
				}
				return &node{op: nCast, n: uint64(width), neg: signed, a: a}, nil
			}
		}
	}
	return p.parsePrimary()
}

// castAhead recognises "(type)" at the current position, e.g. "(unsigned
// long)", "(int)", "(void *)", and reports the width and signedness of the
// target type plus the number of tokens it spans.
func (p *parser) castAhead() (width int, signed bool, n int, ok bool) {
	var words []string
	j := p.i + 1
	ptr := false
	for ; j < len(p.toks); j++ {
		t := p.toks[j]
		if t.kind == tIdent {
			words = append(words, t.text)
			continue
		}
		if t.kind == tOp && t.text == "*" {
			ptr = true
			continue
		}
		break
	}
	if j >= len(p.toks) || p.toks[j].kind != tOp || p.toks[j].text != ")" || len(words) == 0 {
		return 0, false, 0, false
	}
	n = j - p.i + 1
	if ptr {
		return 64, false, n, true
	}
	width, signed = 64, true
	known := false
	for _, w := range words {
		switch w {
		case "unsigned":
			signed, known = false, true
		case "signed", "const", "volatile":
			known = true
		case "char":
			width, known = 8, true
		case "short":
			width, known = 16, true
		case "int":
			if width == 64 {
				width = 32
			}
			known = true
		case "long":
			width, known = 64, true
		case "bool", "_Bool":
			width, signed, known = 8, false, true
		case "u8", "__u8", "s8", "__s8":
			width, signed, known = 8, w[len(w)-2] == 's', true
		case "u16", "__u16", "s16", "__s16":
			width, signed, known = 16, w[len(w)-3] == 's', true
		case "u32", "__u32", "s32", "__s32":
			width, signed, known = 32, w[len(w)-3] == 's', true
		case "u64", "__u64", "s64", "__s64":
			width, signed, known = 64, w[len(w)-3] == 's', true
		default:
			return 0, false, 0, false
		}
	}
	return width, signed, n, known
}

func (p *parser) parsePrimary() (*node, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		return &node{op: nNum, n: t.num}, nil
	case tStr:
		s := t.text
		for p.peek().kind == tStr { // "a" "b" concatenates
			s += p.next().text
		}
		return &node{op: nStr, s: s}, nil
	case tOp:
		if t.text == "(" {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return e, nil
		}
	case tIdent:
		switch t.text {
		case "REC":
			if err := p.expect("->"); err != nil {
				return nil, err
			}
			f := p.next()
			if f.kind != tIdent {
				p.i--
				return nil, p.errf("expected a field name after REC->")
			}
			if f.text != p.varName {
				return nil, p.errf("field REC->%s cannot be evaluated here", f.text)
			}
			return &node{op: nVar, s: f.text}, nil
		case "__print_flags", "__print_symbolic":
			return p.parsePrintTable(t.text == "__print_flags")
		}
		p.i--
		return nil, p.errf("unsupported identifier %q", t.text)
	}
	if t.kind == tEOF {
		return nil, p.errf("expected an operand")
	}
	p.i--
	return nil, p.errf("expected an operand")
}

// parsePrintTable reads the argument list of __print_flags(value, "delim",
// {mask, "name"}, …) or __print_symbolic(value, {v, "name"}, …).
func (p *parser) parsePrintTable(flags bool) (*node, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	val, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	nd := &node{op: nSymbolic, a: val}
	if flags {
		nd.op = nFlags
		if err := p.expect(","); err != nil {
			return nil, err
		}
		d, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if d.op != nStr {
			return nil, p.errf("expected the __print_flags delimiter string")
		}
		nd.s = d.s
	}
	for p.isOp(",") {
		p.i++
		if err := p.expect("{"); err != nil {
			return nil, err
		}
		m, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		mv, err := m.evalNum(0, false)
		if err != nil {
			return nil, p.errf("table value is not a constant: %v", err)
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		name := p.next()
		if name.kind != tStr {
			p.i--
			return nil, p.errf("expected a table name string")
		}
		for p.peek().kind == tStr {
			name.text += p.next().text
		}
		if err := p.expect("}"); err != nil {
			return nil, err
		}
		nd.table = append(nd.table, flagEntry{mask: mv, name: name.text})
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	return nd, nil
}

// parseArg parses a complete expression from toks.
func parseArg(toks []token, varName string) (*node, error) {
	p := &parser{toks: toks, varName: varName}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.i != len(toks) {
		return nil, p.errf("unexpected %q after the expression", p.peek().text)
	}
	return e, nil
}

// evalConst evaluates an integer constant expression such as "30+1".
func evalConst(s string) (uint64, error) {
	toks, err := tokenize(s)
	if err != nil {
		return 0, err
	}
	e, err := parseArg(toks, "")
	if err != nil {
		return 0, err
	}
	return e.evalNum(0, false)
}

var errNotNumber = errors.New("string used as a number")

type value struct {
	isStr bool
	s     string
	n     uint64
}

// evalNum evaluates n as an integer; haveVar says whether a variable value
// is available (constant expressions must not reference it).
func (n *node) evalNum(v uint64, haveVar bool) (uint64, error) {
	r, err := n.eval(v, haveVar)
	if err != nil {
		return 0, err
	}
	if r.isStr {
		return 0, errNotNumber
	}
	return r.n, nil
}

func (n *node) eval(v uint64, haveVar bool) (value, error) {
	switch n.op {
	case nNum:
		return value{n: n.n}, nil
	case nStr:
		return value{isStr: true, s: n.s}, nil
	case nVar:
		if !haveVar {
			return value{}, errors.New("field value needed in a constant expression")
		}
		return value{n: v}, nil
	case nUnary:
		a, err := n.a.evalNum(v, haveVar)
		if err != nil {
			return value{}, err
		}
		switch n.tok {
		case "-":
			return value{n: -a}, nil
		case "~":
			return value{n: ^a}, nil
		case "!":
			return value{n: b2u(a == 0)}, nil
		}
		return value{n: a}, nil
	case nCast:
		a, err := n.a.evalNum(v, haveVar)
		if err != nil {
			return value{}, err
		}
		return value{n: truncate(a, int(n.n), n.neg)}, nil
	case nBinary:
		return n.evalBinary(v, haveVar)
	case nCond:
		c, err := n.a.evalNum(v, haveVar)
		if err != nil {
			return value{}, err
		}
		if c != 0 {
			return n.b.eval(v, haveVar)
		}
		return n.c.eval(v, haveVar)
	case nFlags:
		a, err := n.a.evalNum(v, haveVar)
		if err != nil {
			return value{}, err
		}
		return value{isStr: true, s: printFlags(a, n.s, n.table)}, nil
	case nSymbolic:
		a, err := n.a.evalNum(v, haveVar)
		if err != nil {
			return value{}, err
		}
		for _, e := range n.table {
			if e.mask == a {
				return value{isStr: true, s: e.name}, nil
			}
		}
		return value{isStr: true, s: "0x" + strconv.FormatUint(a, 16)}, nil
	}
	return value{}, errors.New("bad expression node")
}

func (n *node) evalBinary(v uint64, haveVar bool) (value, error) {
	a, err := n.a.evalNum(v, haveVar)
	if err != nil {
		return value{}, err
	}
	// && and || short-circuit like C.
	switch n.tok {
	case "&&":
		if a == 0 {
			return value{n: 0}, nil
		}
	case "||":
		if a != 0 {
			return value{n: 1}, nil
		}
	}
	b, err := n.b.evalNum(v, haveVar)
	if err != nil {
		return value{}, err
	}
	sa, sb := int64(a), int64(b)
	var r uint64
	switch n.tok {
	case "&&", "||":
		r = b2u(b != 0)
	case "|":
		r = a | b
	case "^":
		r = a ^ b
	case "&":
		r = a & b
	case "==":
		r = b2u(a == b)
	case "!=":
		r = b2u(a != b)
	case "<":
		r = b2u(sa < sb)
	case ">":
		r = b2u(sa > sb)
	case "<=":
		r = b2u(sa <= sb)
	case ">=":
		r = b2u(sa >= sb)
	case "<<":
		r = a << (b & 63)
	case ">>":
		r = uint64(sa >> (b & 63))
	case "+":
		r = a + b
	case "-":
		r = a - b
	case "*":
		r = a * b
	case "/", "%":
		if b == 0 {
			return value{}, errors.New("division by zero")
		}
		if sb == -1 { // avoid MinInt64 / -1 overflow; -x and 0 are exact
			if n.tok == "/" {
				r = -a
			}
			break
		}
		if n.tok == "/" {
			r = uint64(sa / sb)
		} else {
			r = uint64(sa % sb)
		}
	default:
		return value{}, fmt.Errorf("unsupported operator %q", n.tok)
	}
	return value{n: r}, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func truncate(a uint64, width int, signed bool) uint64 {
	if width >= 64 {
		return a
	}
	m := uint64(1)<<width - 1
	a &= m
	if signed && a>>(width-1) != 0 {
		a |= ^m
	}
	return a
}

// printFlags renders flags the way the kernel's trace_print_flags_seq
// does: table entries whose bits are all set, in table order, each
// clearing its bits, joined by delim; leftover bits as 0x…; "" for 0.
func printFlags(flags uint64, delim string, table []flagEntry) string {
	var b strings.Builder
	first := true
	for _, e := range table {
		if flags == 0 {
			break
		}
		if flags&e.mask != e.mask {
			continue
		}
		flags &^= e.mask
		if !first {
			b.WriteString(delim)
		}
		first = false
		b.WriteString(e.name)
	}
	if flags != 0 {
		if !first {
			b.WriteString(delim)
		}
		b.WriteString("0x")
		b.WriteString(strconv.FormatUint(flags, 16))
	}
	return b.String()
}

// refsVar reports whether the tree reads the variable.
func (n *node) refsVar() bool {
	if n == nil {
		return false
	}
	if n.op == nVar {
		return true
	}
	return n.a.refsVar() || n.b.refsVar() || n.c.refsVar()
}

// varMask returns the bits of the variable the tree can observe. When
// every use is "var & CONST" the answer is the union of the constants;
// any other use means all bits matter (all = true).
func (n *node) varMask() (mask uint64, all bool) {
	if n == nil {
		return 0, false
	}
	switch n.op {
	case nVar:
		return 0, true
	case nBinary:
		if n.tok == "&" {
			for _, pair := range [2][2]*node{{n.a, n.b}, {n.b, n.a}} {
				if pair[0].op == nVar && !pair[1].refsVar() {
					c, err := pair[1].evalNum(0, false)
					if err == nil {
						return c, false
					}
				}
			}
		}
	}
	ma, aa := n.a.varMask()
	mb, ab := n.b.varMask()
	mc, ac := n.c.varMask()
	return ma | mb | mc, aa || ab || ac
}

// maxConst returns the largest integer constant in the tree (table masks
// included); it sizes the state cache when all bits matter.
func (n *node) maxConst() uint64 {
	if n == nil {
		return 0
	}
	m := uint64(0)
	if n.op == nNum {
		m = n.n
	}
	for _, e := range n.table {
		m = max(m, e.mask)
	}
	return max(m, n.a.maxConst(), n.b.maxConst(), n.c.maxConst())
}
