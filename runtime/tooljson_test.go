package runtime

import (
	"encoding/json"
	"testing"
)

// Tool results and errors go to the model and the transcript as plain
// JSON: no \u003e for ">" (a plan's cycle is "a -> b -> a"), and still
// JSON that decodes to the same value.
func TestToolResultsArePlainJSON(t *testing.T) {
	msg := `dependency cycle: draft -> review -> draft; <tags> & "quotes"` + "\n\u2028"
	got := errorJSON(msg)
	want := `{"error":"dependency cycle: draft -> review -> draft; <tags> & \"quotes\"\n\u2028"}`
	if got != want {
		t.Errorf("errorJSON:\n got %s\nwant %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(got), &back); err != nil || back["error"] != msg {
		t.Errorf("does not decode back: %v %q", err, back["error"])
	}
}
