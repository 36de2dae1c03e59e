package agents

import "testing"

// A free-form object argument (sharedContext, custom_config) reaches the
// handler as the model wrote it: its keys keep their order, which is the
// order of the [Shared Context] block in a child's system prompt.
func TestNormalizeKeepsFreeFormObjects(t *testing.T) {
	s := mustSchema(`{"type":"object","additionalProperties":false,"properties":{
	  "task":{"type":"string"},
	  "wait":{"type":"boolean"},
	  "sharedContext":{"type":"object"},
	  "custom_config":{"type":"object"}}}`)
	for _, tc := range []struct{ in, want string }{
		{`{"task":"t","sharedContext":{"zeta":1,"alpha":{"y":2,"x":1},"mid":"<b>"}}`,
			`{"sharedContext":{"zeta":1,"alpha":{"y":2,"x":1},"mid":"\u003cb\u003e"},"task":"t"}`},
		{`{"wait":"true","custom_config":{"sharedContext":{"b":1,"a":2}}}`, `{"custom_config":{"sharedContext":{"b":1,"a":2}},"wait":true}`},
		// Double-encoded arguments are unwrapped first.
		{`"{\"sharedContext\":{\"b\":1,\"a\":2}}"`, `{"sharedContext":{"b":1,"a":2}}`},
	} {
		got, err := s.Normalize([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Normalize(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
