package agents

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNormalizeArguments(t *testing.T) {
	s := mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "task":{"anyOf":[{"type":"string","minLength":1},{"type":"array","items":{"type":"string"}}]},
	    "limit":{"type":"integer","minimum":1,"maximum":100},
	    "wait":{"type":"boolean"},
	    "category":{"type":"string","enum":["discovery","warning"]},
	    "message":{"type":"string","maxLength":5},
	    "ids":{"type":"array","items":{"type":"string"}},
	    "timeout":{"type":"number","description":"Seconds to wait"},
	    "offset":{"type":"integer"}
	  },"required":["task"]}`)
	tests := []struct {
		name, in, want, err string
	}{
		{"plain", `{"task":"x"}`, `{"task":"x"}`, ""},
		{"array task", `{"task":["a","b"]}`, `{"task":["a","b"]}`, ""},
		{"empty means object", ``, ``, `missing required argument "task"`},
		{"number as string", `{"task":"x","limit":"7"}`, `{"limit":7,"task":"x"}`, ""},
		{"bool as string", `{"task":"x","wait":"true"}`, `{"task":"x","wait":true}`, ""},
		{"lone value for a list", `{"task":"x","ids":"s-1"}`, `{"ids":["s-1"],"task":"x"}`, ""},
		{"double encoded", `"{\"task\":\"x\"}"`, `{"task":"x"}`, ""},
		{"null optional dropped", `{"task":"x","limit":null}`, `{"task":"x"}`, ""},
		{"bad json", `{"task":"x"`, ``, "not valid JSON"},
		{"two values", `{"task":"x"} {}`, ``, "more than one JSON value"},
		{"unknown key", `{"task":"x","lables":1}`, ``, `unknown argument "lables"; valid arguments are: category, ids, limit, message, offset, task, timeout, wait`},
		{"wrong type", `{"task":"x","wait":[1]}`, ``, `argument "wait" must be true or false`},
		{"enum", `{"task":"x","category":"gossip"}`, ``, `argument "category" is "gossip"; it must be one of "discovery", "warning"`},
		{"too long", `{"task":"x","message":"abcdefg"}`, ``, `argument "message" is 7 characters; the limit is 5`},
		{"below minimum", `{"task":"x","limit":0}`, ``, `argument "limit" must be at least 1`},
		{"not whole", `{"task":"x","limit":1.5}`, ``, `must be a whole number`},
		{"largest exact integer", `{"task":"x","offset":9007199254740991}`, `{"offset":9007199254740991,"task":"x"}`, ""},
		{"integer past float64's exact ones", `{"task":"x","offset":9223372036854775807}`, ``,
			`argument "offset" is out of range, got 9223372036854775807; it must be between -9007199254740991 and 9007199254740991`},
		{"integer past int64", `{"task":"x","offset":-100000000000000000000}`, ``, `argument "offset" is out of range, got -100000000000000000000`},
		{"integer past float64", `{"task":"x","offset":1e400}`, ``, `argument "offset" is out of range, got 1e400`},
		{"past float64 with a maximum", `{"task":"x","limit":1e400}`, ``, `argument "limit" must be at most 100, got 1e400`},
		{"number past float64", `{"task":"x","timeout":1e400}`, ``, `argument "timeout" is out of range, got 1e400`},
		{"a unit the number leaves out", `{"task":"x","timeout":"30s"}`, ``, `argument "timeout" must be a number (Seconds to wait), got "30s"`},
		{"empty task", `{"task":""}`, ``, `does not match any accepted form`},
		{"array of objects", `[1,2]`, ``, `arguments must be a JSON object, got an array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Normalize([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				if !IsToolError(err) {
					t.Errorf("error %v is not a tool error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// A tool without arguments says so when it is given one, instead of
// listing none.
func TestNoArgumentsToolSaysSo(t *testing.T) {
	tool, ok := NewRegistry().Get("get_shared_context")
	if !ok {
		t.Fatal("no get_shared_context")
	}
	_, err := tool.Schema.Normalize([]byte(`{"junk":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `unknown argument "junk"; this tool takes no arguments: call it with {}`) {
		t.Errorf("error %v", err)
	}
}

func TestEveryToolSchemaIsValid(t *testing.T) {
	r := NewRegistry()
	if len(r.Names()) < 25 {
		t.Fatalf("only %d tools registered", len(r.Names()))
	}
	for _, name := range r.Names() {
		tool, _ := r.Get(name)
		var v map[string]any
		if err := json.Unmarshal(tool.Spec().Parameters, &v); err != nil || v["type"] != "object" {
			t.Errorf("%s: parameters are not an object schema: %s", name, tool.Spec().Parameters)
		}
		if tool.Description == "" || tool.Group == "" {
			t.Errorf("%s: missing description or group", name)
		}
	}
}

func TestToolsForGroups(t *testing.T) {
	r := NewRegistry()
	names := func(ts []*Tool) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return strings.Join(out, ",")
	}
	ws := names(r.ForGroups(map[string]bool{GroupWorkspace: true}, false))
	if ws != "read_file,list_files,search_files" {
		t.Errorf("read-only workspace tools = %s", ws)
	}
	ws = names(r.ForGroups(map[string]bool{GroupWorkspace: true}, true))
	if !strings.Contains(ws, "write_file") || !strings.Contains(ws, "edit_file") {
		t.Errorf("writer workspace tools = %s", ws)
	}
}

// FuzzToolArguments: argument checking never panics, and whatever it accepts
// is a JSON object the handlers can decode.
func FuzzToolArguments(f *testing.F) {
	for _, seed := range []string{`{"task":"x"}`, `{"task":["a"],"parallel":"true"}`, `""`, `null`, `{"sharedContext":{"$a":"reference"}}`, `{`, `"{\"task\":1}"`} {
		f.Add("sessions_spawn", seed)
	}
	f.Add("create_task_plan", `{"tasks":["a",{"description":"b","depends_on":[0]}]}`)
	f.Add("ask_others", `{"question":"q","options":[{"id":"a","label":"A"},"B"]}`)
	r := NewRegistry()
	f.Fuzz(func(t *testing.T, name, args string) {
		tool, ok := r.Get(name)
		if !ok {
			return
		}
		out, err := tool.Schema.Normalize([]byte(args))
		if err != nil {
			if !IsToolError(err) {
				t.Fatalf("non-tool error %v", err)
			}
			return
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("accepted arguments are not an object: %s", out)
		}
	})
}
