package yamlnode

import (
	"testing"

	"github.com/goccy/go-yaml/parser"
)

func TestLineAt(t *testing.T) {
	src := "roles:\n  orchestrator:\n    - content: x\n    - tool_calls:\n        - name: a\n          args: {x: 1}\n  explorer: &e [{content: y}]\ndefault: !!map {content: z}\n"
	file, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []any
		want int
	}{
		{[]any{"roles"}, 1},
		{[]any{"roles", "orchestrator"}, 2},
		{[]any{"roles", "orchestrator", 0}, 3},
		{[]any{"roles", "orchestrator", 1, "tool_calls", 0}, 5},
		{[]any{"roles", "orchestrator", 1, "tool_calls", 0, "args"}, 6},
		{[]any{"roles", "explorer", 0}, 7},       // through an anchor
		{[]any{"default", "content"}, 8},         // through a tag
		{[]any{"roles", "orchestrator", 5}, 2},   // past the list: where it stops
		{[]any{"roles", "nosuch", "content"}, 1}, // a missing key
		{[]any{"nosuch"}, 0},
		{[]any{"roles", "orchestrator", -1}, 2},
	} {
		if got := LineAt(file, tc.path); got != tc.want {
			t.Errorf("LineAt(%v) = %d, want %d", tc.path, got, tc.want)
		}
	}
	if LineAt(nil, []any{"roles"}) != 0 {
		t.Error("a nil file has a line")
	}
}
