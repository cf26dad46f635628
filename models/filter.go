package models

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxFilterBytes caps a subscription's attribute filter (its source text), as
// Pub/Sub caps its subscription filters.
const MaxFilterBytes = 1024

// ErrInvalidFilter is returned (wrapped, with the position and the reason) by
// ParseFilter for a filter outside the grammar.
var ErrInvalidFilter = errors.New("invalid attribute filter")

// Filter is a subscription's attribute filter, parsed: a boolean expression over a
// message's publisher headers (`x-*`), modelled on Google Pub/Sub's subscription
// filters. The grammar (keywords in upper case, names in any case, compared in
// lower case as headers are stored):
//
//	filter  = term { ("AND" | "OR") term }      AND and OR are not mixed without parentheses
//	term    = "NOT" term | "(" filter ")" | test
//	test    = "attributes." name ("=" | "!=") string
//	        | "attributes:" name                 the header is present
//	        | "hasPrefix(attributes." name "," string ")"
//	name    = a message header name: x- then letters, digits and dashes (ValidMessageHeaderName)
//	string  = "…" or '…' with \\, \" and \' escapes; UTF-8 without control characters
//
// `!=` is the negation of `=`: it also matches a message without the header. An
// empty filter is no Filter (every message matches). Filters are evaluated by the
// dispatcher on the stored headers, never on bodies.
type Filter struct {
	src  string
	root *filterNode
}

// String returns the filter's source as it was given.
func (f *Filter) String() string { return f.src }

// Match reports whether a message with headers (names in lower case, as stored)
// passes the filter. A nil Filter matches every message.
func (f *Filter) Match(headers map[string]string) bool {
	if f == nil {
		return true
	}
	return f.root.eval(headers)
}

type filterOp int

const (
	opEq filterOp = iota
	opNe
	opHas
	opPrefix
	opNot
	opAnd
	opOr
)

type filterNode struct {
	op          filterOp
	name, value string
	kids        []*filterNode
}

func (n *filterNode) eval(h map[string]string) bool {
	switch n.op {
	case opEq:
		v, ok := h[n.name]
		return ok && v == n.value
	case opNe:
		v, ok := h[n.name]
		return !ok || v != n.value
	case opHas:
		_, ok := h[n.name]
		return ok
	case opPrefix:
		v, ok := h[n.name]
		return ok && strings.HasPrefix(v, n.value)
	case opNot:
		return !n.kids[0].eval(h)
	case opAnd:
		for _, k := range n.kids {
			if !k.eval(h) {
				return false
			}
		}
		return true
	case opOr:
		for _, k := range n.kids {
			if k.eval(h) {
				return true
			}
		}
		return false
	}
	return false
}

// ParseFilter parses src (see Filter for the grammar). An empty or all-blank src
// returns nil, nil: no filter. Errors wrap ErrInvalidFilter and say where and why,
// e.g. `at byte 17: expected a quoted string`.
func ParseFilter(src string) (*Filter, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	if len(src) > MaxFilterBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidFilter, MaxFilterBytes)
	}
	if !utf8.ValidString(src) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrInvalidFilter)
	}
	p := filterParser{src: src}
	root, err := p.expr(0)
	if err == nil {
		p.space()
		if p.pos < len(p.src) {
			err = p.fail("unexpected %q", p.rest(12))
		}
	}
	if err != nil {
		return nil, err
	}
	return &Filter{src: src, root: root}, nil
}

// maxFilterDepth bounds nesting (parentheses and NOT), so parsing needs bounded stack.
const maxFilterDepth = 32

type filterParser struct {
	src string
	pos int
}

func (p *filterParser) fail(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrInvalidFilter, p.pos, fmt.Sprintf(format, args...))
}

func (p *filterParser) rest(n int) string {
	r := p.src[p.pos:]
	if len(r) > n {
		r = r[:n]
	}
	return r
}

func (p *filterParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
}

// keyword consumes kw when it stands as a whole word at the position.
func (p *filterParser) keyword(kw string) bool {
	p.space()
	if !strings.HasPrefix(p.src[p.pos:], kw) {
		return false
	}
	end := p.pos + len(kw)
	if end < len(p.src) && isWordByte(p.src[end]) {
		return false
	}
	p.pos = end
	return true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (p *filterParser) literal(s string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], s) {
		p.pos += len(s)
		return true
	}
	return false
}

// expr = term { op term }, one op (AND or OR) per level.
func (p *filterParser) expr(depth int) (*filterNode, error) {
	first, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	var join *filterNode
	for {
		op := opAnd
		switch {
		case p.keyword("AND"):
		case p.keyword("OR"):
			op = opOr
		default:
			if join == nil {
				return first, nil
			}
			return join, nil
		}
		if join == nil {
			join = &filterNode{op: op, kids: []*filterNode{first}}
		} else if join.op != op {
			return nil, p.fail("AND and OR cannot be mixed without parentheses")
		}
		next, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		join.kids = append(join.kids, next)
	}
}

func (p *filterParser) term(depth int) (*filterNode, error) {
	if depth >= maxFilterDepth {
		return nil, p.fail("nested more than %d deep", maxFilterDepth)
	}
	switch {
	case p.keyword("NOT"):
		k, err := p.term(depth + 1)
		if err != nil {
			return nil, err
		}
		return &filterNode{op: opNot, kids: []*filterNode{k}}, nil
	case p.literal("("):
		e, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.literal(")") {
			return nil, p.fail("expected )")
		}
		return e, nil
	case p.literal("hasPrefix("):
		if !p.literal("attributes.") {
			return nil, p.fail("expected attributes.<name>")
		}
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		if !p.literal(",") {
			return nil, p.fail("expected ,")
		}
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		if !p.literal(")") {
			return nil, p.fail("expected )")
		}
		return &filterNode{op: opPrefix, name: name, value: v}, nil
	case p.literal("attributes:"):
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		return &filterNode{op: opHas, name: name}, nil
	case p.literal("attributes."):
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		op := opEq
		switch {
		case p.literal("!="):
			op = opNe
		case p.literal("="):
		default:
			return nil, p.fail("expected = or != after attributes.%s", name)
		}
		v, err := p.str()
		if err != nil {
			return nil, err
		}
		return &filterNode{op: op, name: name, value: v}, nil
	}
	if p.space(); p.pos == len(p.src) {
		return nil, p.fail("unexpected end of filter")
	}
	return nil, p.fail("expected attributes.<name>, attributes:<name>, hasPrefix(…), NOT or (, not %q", p.rest(12))
}

// name reads a message header name and returns it in lower case.
func (p *filterParser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && (isWordByte(p.src[p.pos]) && p.src[p.pos] != '_') {
		p.pos++
	}
	n := p.src[start:p.pos]
	if !ValidMessageHeaderName(n) {
		p.pos = start
		return "", p.fail("attribute names are message header names: x- then letters, digits and dashes")
	}
	return CanonicalHeaderName(n), nil
}

// str reads a quoted string ("…" or '…') with \\, \" and \' escapes.
func (p *filterParser) str() (string, error) {
	p.space()
	if p.pos >= len(p.src) || (p.src[p.pos] != '"' && p.src[p.pos] != '\'') {
		return "", p.fail("expected a quoted string")
	}
	q := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch c {
		case q:
			p.pos++
			s := b.String()
			if !ValidHeaderValue(s) {
				return "", p.fail("strings are UTF-8 without control characters")
			}
			return s, nil
		case '\\':
			if p.pos+1 >= len(p.src) || strings.IndexByte(`\"'`, p.src[p.pos+1]) < 0 {
				return "", p.fail(`only \\, \" and \' escapes are allowed`)
			}
			b.WriteByte(p.src[p.pos+1])
			p.pos += 2
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", p.fail("unterminated string")
}
