package llm

// raw is a JSON value captured as a slice of the line being read, neither
// copied nor interpreted; null becomes nil. The chunk types are built from
// it so that an odd value (a number where a string belongs, an object for
// arguments, a string for an index) never fails a chunk, and so reading a
// chunk allocates nothing. A raw is valid while its line is: feed is done
// with it before the next line is read.
type raw []byte

// UnmarshalJSON makes encoding/json fill the chunk types the same way
// parseChunk does; the tests use it as the reference.
func (r *raw) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		*r = nil
		return nil
	}
	*r = b
	return nil
}

func isNull(b []byte) bool { return string(b) == "null" }

// chunk is one chat.completion.chunk, read tolerantly.
type chunk struct {
	Object      raw           `json:"object"`
	Model       raw           `json:"model"`
	Fingerprint raw           `json:"system_fingerprint"` // Ollama's is "fp_ollama"
	Choices     []chunkChoice `json:"choices"`
	Usage       *chunkUsage   `json:"usage"`
	XGroq       *xGroq        `json:"x_groq"` // Groq reports usage here
	Error       raw           `json:"error"`

	// Storage that Usage and XGroq point to, kept from line to line.
	usage, groqUsage chunkUsage
	groq             xGroq
}

type xGroq struct {
	Usage *chunkUsage `json:"usage"`
}

type chunkChoice struct {
	Index        raw        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Message      chunkDelta `json:"message"` // a few servers stream "message" instead of "delta"
	FinishReason raw        `json:"finish_reason"`
}

type chunkDelta struct {
	Content raw `json:"content"`
	// Reasoning is "reasoning_content" (vLLM, llama.cpp, DeepSeek) or
	// "reasoning" (Ollama, OpenRouter): thinking the server parsed out of
	// the content.
	Reasoning raw             `json:"reasoning_content"`
	ToolCalls []chunkToolCall `json:"tool_calls"`
}

type chunkToolCall struct {
	Index    raw           `json:"index"`
	ID       raw           `json:"id"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      raw `json:"name"`
	Arguments raw `json:"arguments"`
}

type chunkUsage struct {
	PromptTokens     raw `json:"prompt_tokens"`
	CompletionTokens raw `json:"completion_tokens"`
	TotalTokens      raw `json:"total_tokens"`
}

// reset empties ch for the next line, keeping the slices' storage.
func (ch *chunk) reset() {
	choices := ch.Choices[:cap(ch.Choices)]
	for i := range choices {
		c := &choices[i]
		*c = chunkChoice{
			Delta:   chunkDelta{ToolCalls: clearCalls(c.Delta.ToolCalls)},
			Message: chunkDelta{ToolCalls: clearCalls(c.Message.ToolCalls)},
		}
	}
	*ch = chunk{Choices: choices[:0]}
}

func clearCalls(calls []chunkToolCall) []chunkToolCall {
	clear(calls[:cap(calls)])
	return calls[:0]
}

// addChoice appends an empty choice, reusing storage reset left in place.
func (ch *chunk) addChoice() *chunkChoice {
	if n := len(ch.Choices); n < cap(ch.Choices) {
		ch.Choices = ch.Choices[:n+1]
	} else {
		ch.Choices = append(ch.Choices, chunkChoice{})
	}
	return &ch.Choices[len(ch.Choices)-1]
}

func (d *chunkDelta) addToolCall() *chunkToolCall {
	if n := len(d.ToolCalls); n < cap(d.ToolCalls) {
		d.ToolCalls = d.ToolCalls[:n+1]
	} else {
		d.ToolCalls = append(d.ToolCalls, chunkToolCall{})
	}
	return &d.ToolCalls[len(d.ToolCalls)-1]
}

// parseChunk reads one data line into ch. It walks the few fields a chunk
// has and skips everything else, which costs a fraction of encoding/json
// (whose reflection and per-call buffers were most of a stream's CPU). For
// JSON input it fills ch as json.Unmarshal would (FuzzParseChunk holds it
// to that); beyond JSON it is lenient. It reports false when the line is
// not a JSON object.
func parseChunk(line []byte, ch *chunk) bool {
	ch.reset()
	w := walker{b: line}
	if !w.open('{') {
		return false
	}
	for w.more('}') {
		switch string(w.key()) {
		case "object":
			ch.Object = w.raw()
		case "model":
			ch.Model = w.raw()
		case "system_fingerprint":
			ch.Fingerprint = w.raw()
		case "error":
			ch.Error = w.raw()
		case "choices":
			w.choices(ch)
		case "usage":
			if w.usage(&ch.usage) {
				ch.Usage = &ch.usage
			}
		case "x_groq":
			if !w.open('{') {
				w.skip()
				continue
			}
			ch.XGroq = &ch.groq
			for w.more('}') {
				if string(w.key()) == "usage" && w.usage(&ch.groqUsage) {
					ch.groq.Usage = &ch.groqUsage
				} else {
					w.skip()
				}
			}
		default:
			w.skip()
		}
	}
	w.ws()
	return !w.bad && w.i == len(w.b)
}

func (w *walker) choices(ch *chunk) {
	if !w.open('[') {
		w.skip()
		return
	}
	for w.more(']') {
		// Like encoding/json, an element that is not an object still
		// counts, as an empty one.
		c := ch.addChoice()
		if !w.open('{') {
			w.skip()
			continue
		}
		for w.more('}') {
			switch string(w.key()) {
			case "index":
				c.Index = w.raw()
			case "delta":
				w.delta(&c.Delta)
			case "message":
				w.delta(&c.Message)
			case "finish_reason":
				c.FinishReason = w.raw()
			default:
				w.skip()
			}
		}
	}
}

func (w *walker) delta(d *chunkDelta) {
	if !w.open('{') {
		w.skip()
		return
	}
	for w.more('}') {
		switch string(w.key()) {
		case "content":
			d.Content = w.raw()
		case "reasoning_content", "reasoning":
			d.Reasoning = w.raw()
		case "tool_calls":
			if !w.open('[') {
				w.skip()
				continue
			}
			for w.more(']') {
				tc := d.addToolCall()
				if !w.open('{') {
					w.skip()
					continue
				}
				w.toolCall(tc)
			}
		default:
			w.skip()
		}
	}
}

func (w *walker) toolCall(tc *chunkToolCall) {
	for w.more('}') {
		switch string(w.key()) {
		case "index":
			tc.Index = w.raw()
		case "id":
			tc.ID = w.raw()
		case "function":
			if !w.open('{') {
				w.skip()
				continue
			}
			for w.more('}') {
				switch string(w.key()) {
				case "name":
					tc.Function.Name = w.raw()
				case "arguments":
					tc.Function.Arguments = w.raw()
				default:
					w.skip()
				}
			}
		default:
			w.skip()
		}
	}
}

// usage reads a usage object into u; false when the value is not one.
func (w *walker) usage(u *chunkUsage) bool {
	if !w.open('{') {
		w.skip()
		return false
	}
	for w.more('}') {
		switch string(w.key()) {
		case "prompt_tokens":
			u.PromptTokens = w.raw()
		case "completion_tokens":
			u.CompletionTokens = w.raw()
		case "total_tokens":
			u.TotalTokens = w.raw()
		default:
			w.skip()
		}
	}
	return true
}

// walker steps through JSON text. Any structural fault sets bad, after
// which every step does nothing, so loops over more always end.
type walker struct {
	b   []byte
	i   int
	bad bool
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// open consumes c ('{' or '[') if it comes next.
func (w *walker) open(c byte) bool {
	if w.bad {
		return false
	}
	w.ws()
	if w.i < len(w.b) && w.b[w.i] == c {
		w.i++
		return true
	}
	return false
}

// more reports whether another member or element follows before close,
// consuming the separating comma, or close itself at the end.
func (w *walker) more(close byte) bool {
	if w.bad {
		return false
	}
	w.ws()
	if w.i < len(w.b) && w.b[w.i] == ',' {
		w.i++
		w.ws()
	}
	switch {
	case w.i >= len(w.b):
		w.bad = true
		return false
	case w.b[w.i] == close:
		w.i++
		return false
	}
	return true
}

// key reads a member name and its colon, returning the name's raw text
// (escapes are left as they are, so an escaped name matches nothing).
func (w *walker) key() []byte {
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != '"' {
		w.bad = true
		return nil
	}
	start := w.i + 1
	if !w.str() {
		return nil
	}
	k := w.b[start : w.i-1]
	w.ws()
	if w.i >= len(w.b) || w.b[w.i] != ':' {
		w.bad = true
		return nil
	}
	w.i++
	return k
}

// raw reads the next value; null reads as nil.
func (w *walker) raw() raw {
	v := w.value()
	if isNull(v) {
		return nil
	}
	return v
}

func (w *walker) skip() { w.value() }

// value reads the next value and returns its text.
func (w *walker) value() []byte {
	if w.bad {
		return nil
	}
	w.ws()
	if w.i >= len(w.b) {
		w.bad = true
		return nil
	}
	start := w.i
	switch w.b[w.i] {
	case '"':
		w.str()
	case '{', '[':
		w.nested()
	case ',', '}', ']', ':':
		w.bad = true
	default: // number, true, false, null
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return w.b[start:w.i]
			}
			w.i++
		}
	}
	if w.bad {
		return nil
	}
	return w.b[start:w.i]
}

// str moves past the string starting at w.i.
func (w *walker) str() bool {
	for i := w.i + 1; i < len(w.b); i++ {
		switch w.b[i] {
		case '"':
			w.i = i + 1
			return true
		case '\\':
			i++
		}
	}
	w.bad = true
	return false
}

// nested moves past the object or array starting at w.i.
func (w *walker) nested() {
	depth := 0
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '"':
			if !w.str() {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				w.i++
				return
			}
		}
		w.i++
	}
	w.bad = true
}
