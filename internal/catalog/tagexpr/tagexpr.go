// Package tagexpr parses the tag expressions that select scenarios, in
// Cucumber's syntax (`@must and not @slow`, `(@a or @b) and @c`) and in
// godog's older one (`@must && ~@slow`, `@a,@b`), which may be mixed.
//
// Precedence, loosest first: or (`or`, `,`, `||`), and (`and`, `&&`), not
// (`not`, `~`). A tag may be written with or without its `@`; a backslash
// escapes a space, a parenthesis or a backslash inside a tag. A malformed
// expression is an error that says where, never a panic.
package tagexpr

import (
	"fmt"
	"strings"
)

// Expr is a parsed tag expression.
type Expr struct {
	src  string
	root node
}

// String is the expression as given.
func (e *Expr) String() string { return e.src }

// Match reports whether a scenario with these tags (with or without their
// `@`) is selected. The empty expression matches everything.
func (e *Expr) Match(tags []string) bool {
	if e == nil || e.root == nil {
		return true
	}
	set := make(map[string]bool, len(tags))
	for _, t := range tags {
		set[strings.TrimPrefix(t, "@")] = true
	}
	return e.root.eval(set)
}

// Parse parses src; blank src is the expression that matches everything.
func Parse(src string) (*Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("tag expression %q: %w", src, err)
	}
	if len(toks) == 0 {
		return &Expr{src: src}, nil
	}
	p := &parser{toks: toks}
	root, err := p.or()
	if err == nil && p.pos < len(p.toks) {
		err = p.errorf("unexpected %s", p.toks[p.pos])
	}
	if err != nil {
		return nil, fmt.Errorf("tag expression %q: %w", src, err)
	}
	return &Expr{src: src, root: root}, nil
}

type node interface{ eval(map[string]bool) bool }

type tagNode string
type notNode struct{ x node }
type andNode struct{ l, r node }
type orNode struct{ l, r node }

func (t tagNode) eval(s map[string]bool) bool { return s[string(t)] }
func (n notNode) eval(s map[string]bool) bool { return !n.x.eval(s) }
func (n andNode) eval(s map[string]bool) bool { return n.l.eval(s) && n.r.eval(s) }
func (n orNode) eval(s map[string]bool) bool  { return n.l.eval(s) || n.r.eval(s) }

type kind int

const (
	kTag kind = iota
	kOr
	kAnd
	kNot
	kOpen
	kClose
)

type token struct {
	kind kind
	text string // as written
	at   int    // byte offset in the source, for messages
}

func (t token) String() string {
	if t.kind == kTag {
		return fmt.Sprintf("tag %q at column %d", t.text, t.at+1)
	}
	return fmt.Sprintf("%q at column %d", t.text, t.at+1)
}

// symbols are the one-character operators (kTag, zero, is none of them).
var symbols = [256]kind{'(': kOpen, ')': kClose, ',': kOr, '~': kNot}

// lex splits src into tokens. Operators made of symbols (`&&`, `||`, `,`,
// `~`, parentheses) need no spaces around them; word operators do.
func lex(src string) ([]token, error) {
	var out []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case symbols[c] != 0:
			out = append(out, token{symbols[c], string(c), i})
			i++
		case strings.HasPrefix(src[i:], "&&"):
			out = append(out, token{kAnd, "&&", i})
			i += 2
		case strings.HasPrefix(src[i:], "||"):
			out = append(out, token{kOr, "||", i})
			i += 2
		case c == '&' || c == '|':
			return nil, fmt.Errorf("%q at column %d: write %s%s", string(c), i+1, string(c), string(c))
		default:
			start := i
			var word strings.Builder
			for i < len(src) {
				c := src[i]
				if c == '\\' {
					if i+1 >= len(src) {
						return nil, fmt.Errorf("a backslash at column %d escapes nothing", i+1)
					}
					word.WriteByte(src[i+1])
					i += 2
					continue
				}
				if strings.ContainsRune(" \t\r\n(),~", rune(c)) || strings.HasPrefix(src[i:], "&&") || strings.HasPrefix(src[i:], "||") {
					break
				}
				word.WriteByte(c)
				i++
			}
			w := word.String()
			switch w {
			case "or":
				out = append(out, token{kOr, w, start})
			case "and":
				out = append(out, token{kAnd, w, start})
			case "not":
				out = append(out, token{kNot, w, start})
			default:
				if strings.TrimPrefix(w, "@") == "" {
					return nil, fmt.Errorf("%q at column %d is not a tag", w, start+1)
				}
				out = append(out, token{kTag, w, start})
			}
		}
	}
	return out, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func (p *parser) peek(k kind) bool { return p.pos < len(p.toks) && p.toks[p.pos].kind == k }

func (p *parser) or() (node, error) {
	return p.chain(kOr, p.and, func(l, r node) node { return orNode{l, r} })
}

func (p *parser) and() (node, error) {
	return p.chain(kAnd, p.unary, func(l, r node) node { return andNode{l, r} })
}

// chain parses operands (each by next) joined by the operator op, left
// associative.
func (p *parser) chain(op kind, next func() (node, error), join func(l, r node) node) (node, error) {
	l, err := next()
	if err != nil {
		return nil, err
	}
	for p.peek(op) {
		p.pos++
		r, err := next()
		if err != nil {
			return nil, err
		}
		l = join(l, r)
	}
	return l, nil
}

func (p *parser) unary() (node, error) {
	if p.pos >= len(p.toks) {
		prev := p.toks[len(p.toks)-1]
		return nil, p.errorf("expression ends after %s: a tag or \"(\" must follow", prev)
	}
	t := p.toks[p.pos]
	switch t.kind {
	case kNot:
		p.pos++
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notNode{x}, nil
	case kOpen:
		p.pos++
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peek(kClose) {
			if p.pos >= len(p.toks) {
				return nil, p.errorf("%s is never closed", t)
			}
			return nil, p.errorf("expected \")\" to close %s, found %s", t, p.toks[p.pos])
		}
		p.pos++
		return x, nil
	case kTag:
		p.pos++
		return tagNode(strings.TrimPrefix(t.text, "@")), nil
	}
	return nil, p.errorf("expected a tag, found %s", t)
}
