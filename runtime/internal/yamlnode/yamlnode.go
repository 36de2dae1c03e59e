// Package yamlnode reads goccy/go-yaml syntax trees the way swarmdeck's
// configuration and scenario files need: the entries of a mapping, and the
// line of a value found by its key path.
package yamlnode

import "github.com/goccy/go-yaml/ast"

// Pairs is the entries of a mapping node, nil for any other node. A mapping
// of one entry is parsed as the entry itself.
func Pairs(n ast.Node) []*ast.MappingValueNode {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

// LineAt is the line (from 1) of the value at path in the first document
// of file: string keys and int list indexes, as a value's key path. Where
// the path leaves what is written, it is the line of the deepest part
// found; 0 when not even the first is there.
func LineAt(file *ast.File, path []any) int {
	if file == nil || len(file.Docs) == 0 || file.Docs[0] == nil {
		return 0
	}
	n := file.Docs[0].Body
	line := 0
	for _, p := range path {
		n = bare(n)
		var next ast.Node
		at := 0
		switch p := p.(type) {
		case int:
			if seq, ok := n.(*ast.SequenceNode); ok && p >= 0 && p < len(seq.Values) {
				next = seq.Values[p]
				at = lineOf(next)
			}
		case string:
			for _, kv := range Pairs(n) {
				if kv != nil && kv.Key != nil && kv.Key.GetToken() != nil && kv.Key.GetToken().Value == p {
					next, at = kv.Value, lineOf(kv.Key)
				}
			}
		}
		if next == nil {
			return line
		}
		n, line = next, max(at, line)
	}
	return line
}

// bare looks through the tags and anchors that decorate a value.
func bare(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}
