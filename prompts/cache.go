package prompts

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// A swarm starts many sessions whose system prompts differ only in their
// task id and label: the ten researchers a parent spawns share role, depth,
// goal, tools and shared context. Rendering the templates costs more than
// anything else in starting a session, so System renders once per shape
// with stand-ins for the id and the label and puts the real values in
// afterwards. That is only the same prompt when the templates print those
// two fields as they are, so it is done only for template sets that opaque
// accepts; any other set renders every prompt in full.

// Stand-ins for the per-session fields: control characters that a task id
// or a label never holds (System renders such values in full anyway).
const (
	standInID    = "\x00\x01task-id\x01\x00"
	standInLabel = "\x00\x01label\x01\x00"
)

// maxCachedPrompts bounds the renderings kept per template generation.
const maxCachedPrompts = 512

// promptCache holds renderings with stand-ins, by everything else in Data.
type promptCache struct {
	mu sync.RWMutex
	m  map[string]string
}

func (c *promptCache) get(key string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out, ok := c.m[key]
	return out, ok
}

func (c *promptCache) put(key, out string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	if len(c.m) < maxCachedPrompts {
		c.m[key] = out
	}
}

// system renders the role template name for d, from the cache when the
// template set allows it.
func (s *templateSet) system(name string, d Data) (string, error) {
	if !s.opaque || !plainValue(d.SessionID) || (d.Label != "" && !plainValue(d.Label)) {
		return s.render(name, d)
	}
	key := cacheKey(name, &d)
	out, ok := s.prompts.get(key)
	if !ok {
		sd := d
		sd.SessionID = standInID
		if d.Label != "" {
			sd.Label = standInLabel
		}
		var err error
		if out, err = s.render(name, sd); err != nil {
			return "", err
		}
		s.prompts.put(key, out)
	}
	out = strings.ReplaceAll(out, standInID, d.SessionID)
	if d.Label != "" {
		out = strings.ReplaceAll(out, standInLabel, d.Label)
	}
	return out, nil
}

// plainValue reports whether v renders the same in place of a stand-in:
// not empty, one line, no surrounding space (tidy treats a line that is
// only space as blank) and no control characters.
func plainValue(v string) bool {
	if v == "" || strings.TrimSpace(v) != v {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return false
		}
	}
	return true
}

// cacheKey is every field of d but the task id and the label, plus whether
// there is a label (templates test it).
func cacheKey(name string, d *Data) string {
	var b strings.Builder
	field := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	flag := func(v bool) {
		if v {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	field(name)
	field(d.Role)
	field(d.Template)
	field(d.Description)
	field(d.Goal)
	field(d.Workspace)
	field(d.SharedContext)
	field(strconv.Itoa(d.Depth))
	field(strconv.Itoa(d.MaxSpawnDepth))
	field(strconv.Itoa(d.MaxDelegationDepth))
	field(strconv.Itoa(d.DelegationDepth))
	flag(d.Label != "")
	flag(d.IsRoot)
	flag(d.Delegated)
	flag(d.HasParent)
	flag(d.CanSpawn)
	flag(d.CanWrite)
	for _, g := range sortedGroups(d.Groups) {
		field(g)
	}
	b.WriteByte('|')
	for _, r := range d.Roster {
		field(r.Role)
		field(r.Description)
	}
	return b.String()
}

func sortedGroups(groups map[string]bool) []string {
	var out []string
	for g, on := range groups {
		if on {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// The kinds of value dot can hold while a template is walked.
type dotKind int

const (
	dotData    dotKind = iota // the Data being rendered
	dotStandIn                // the task id or the label ({{with .Label}})
	dotOther                  // anything else (inside range, say)
)

// perSession names the fields that get stand-ins.
func perSession(ident string) bool { return ident == "SessionID" || ident == "Label" }

// opaque reports whether every template of t uses the task id and the
// label only by printing them ({{.SessionID}}, {{with .Label}}{{.}}{{end}})
// or testing them ({{if .Label}}), and never hands Data itself to anything
// but another template. Anything else (a function of the label, printf of
// dot, $.Label, a comparison) might render a stand-in differently from the
// value it stands for.
func opaque(t *template.Template) bool {
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil {
			continue
		}
		w := opaqueWalker{ok: true}
		w.list(tt.Tree.Root, dotData)
		if !w.ok {
			return false
		}
	}
	return true
}

type opaqueWalker struct{ ok bool }

func (w *opaqueWalker) list(l *parse.ListNode, dot dotKind) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		w.node(n, dot)
	}
}

func (w *opaqueWalker) node(n parse.Node, dot dotKind) {
	switch n := n.(type) {
	case *parse.ActionNode:
		if (dot == dotData && perSessionField(n.Pipe)) || (dot == dotStandIn && onlyDot(n.Pipe)) {
			return // printed as it is
		}
		w.pipe(n.Pipe, dot)
	case *parse.IfNode:
		if !(dot == dotData && perSessionField(n.Pipe)) {
			w.pipe(n.Pipe, dot)
		}
		w.list(n.List, dot)
		w.list(n.ElseList, dot)
	case *parse.WithNode:
		inner := dotOther
		if dot == dotData && perSessionField(n.Pipe) {
			inner = dotStandIn
		} else {
			w.pipe(n.Pipe, dot)
		}
		w.list(n.List, inner)
		w.list(n.ElseList, dot)
	case *parse.RangeNode:
		w.pipe(n.Pipe, dot)
		w.list(n.List, dotOther)
		w.list(n.ElseList, dot)
	case *parse.TemplateNode:
		// Another template is walked on its own, with dot as Data; passing
		// it Data (or nothing) is fine, passing it a stand-in is not.
		if n.Pipe == nil || (dot != dotStandIn && onlyDot(n.Pipe)) {
			return
		}
		w.pipe(n.Pipe, dot)
	case *parse.ListNode:
		w.list(n, dot)
	}
}

// pipe checks a pipeline that is not one of the accepted forms: it may not
// mention the per-session fields at all, nor use dot when dot is Data or a
// stand-in.
func (w *opaqueWalker) pipe(p *parse.PipeNode, dot dotKind) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		for _, arg := range c.Args {
			w.arg(arg, dot)
		}
	}
}

func (w *opaqueWalker) arg(n parse.Node, dot dotKind) {
	switch n := n.(type) {
	case *parse.DotNode:
		if dot != dotOther {
			w.ok = false
		}
	case *parse.FieldNode:
		if dot == dotStandIn || mentions(n.Ident) {
			w.ok = false
		}
	case *parse.VariableNode:
		if mentions(n.Ident) {
			w.ok = false
		}
	case *parse.ChainNode:
		if mentions(n.Field) {
			w.ok = false
		}
		w.arg(n.Node, dot)
	case *parse.PipeNode:
		w.pipe(n, dot)
	}
}

func mentions(idents []string) bool {
	for _, id := range idents {
		if perSession(id) {
			return true
		}
	}
	return false
}

// perSessionField reports whether p is exactly {{.SessionID}} or {{.Label}}.
func perSessionField(p *parse.PipeNode) bool {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
	return ok && len(f.Ident) == 1 && perSession(f.Ident[0])
}

// onlyDot reports whether p is exactly {{.}}.
func onlyDot(p *parse.PipeNode) bool {
	if p == nil || len(p.Decl) > 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	_, ok := p.Cmds[0].Args[0].(*parse.DotNode)
	return ok
}
