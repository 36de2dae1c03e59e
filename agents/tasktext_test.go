package agents

import (
	"encoding/json"
	"strings"
	"testing"
)

// A task longer than MaxTaskText is refused with its length and the way
// out, whichever tool gives it and in whichever form.
func TestTaskTextIsCapped(t *testing.T) {
	long := strings.Repeat("é", MaxTaskText+1)
	fits := strings.Repeat("é", MaxTaskText)
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tests := []struct {
		tool *Tool
		args string
		want string
	}{
		{sessionsSpawn, `{"task":` + quote(long) + `}`, `argument "task" is 16001 characters; the limit is 16000`},
		{sessionsSpawn, `{"task":["short",` + quote(long) + `],"parallel":true}`, `argument "task[1]" is 16001 characters; the limit is 16000`},
		{taskCreate, `{"agent":"researcher","title":"t","prompt":` + quote(long) + `}`, `argument "prompt" is 16001 characters; the limit is 16000`},
		{delegateTask, `{"description":` + quote(long) + `}`, `argument "description" is 16001 characters; the limit is 16000`},
		{sessionsSpawn, `{"task":` + quote(fits) + `}`, ""},
		{delegateTask, `{"description":` + quote(fits) + `}`, ""},
	}
	for _, tt := range tests {
		_, err := tt.tool.Schema.Normalize([]byte(tt.args))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: a task of %d characters refused: %v", tt.tool.Name, MaxTaskText, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.tool.Name, err, tt.want)
		}
	}
}
