package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// streamError is an error event inside a stream.
type streamError struct{ errorFields }

func (e *streamError) Error() string { return "error event in stream: " + e.Message }

var errTruncated = errors.New("stream ended without a finish reason")

// badAnswer is an answer that cannot be taken whatever the attempt: it is
// not a chat completion stream, or it outgrew what a call may hold.
type badAnswer struct{ reason, hint string }

func (e *badAnswer) Error() string { return e.reason }

// stoppedAnswer is an answer whose finish_reason says the server failed to
// complete it, a failure another attempt may not meet.
type stoppedAnswer struct{ reason string }

func (e *stoppedAnswer) Error() string { return e.reason }

// maxAnswer bounds what one call accumulates (content, reasoning, tool
// names and arguments): far beyond any model's output limit, it stops a
// server that streams without end from filling the memory before
// CallTimeout, which may be long or off, ends the call.
const maxAnswer = 32 << 20

// toolCallAcc is one tool call being assembled from deltas.
type toolCallAcc struct {
	index int // the server's index, -1 when it sent none
	id    string
	name  string
	args  []byte
	named bool // the ToolName delta went out
}

// accumulator assembles one attempt's deltas into a Response.
type accumulator struct {
	onDelta func(Delta)
	content []byte
	shown   int // bytes of content that went out as deltas
	// reasoning is the thinking a server sent apart from the content. It
	// is only shown, between <think> tags as a model writes it into the
	// content itself; it is not part of the answer.
	reasoning      []byte
	reasoningShown int
	thinking       bool // <think> went out and </think> did not yet
	calls          []toolCallAcc
	finish         string
	model          string
	ollama         bool // the server signed a chunk as Ollama
	usage          Usage
	hasUsage       bool
	sent           bool // a delta went out during this attempt
	choices        bool // a chunk had a choice
	held           int  // bytes of content, reasoning and calls, against limit
	limit          int  // bound of held; 0 means maxAnswer (tests set less)
	scratch        []byte
}

func (a *accumulator) reset() {
	a.content, a.shown = a.content[:0], 0
	a.reasoning, a.reasoningShown, a.thinking = a.reasoning[:0], 0, false
	clear(a.calls)
	a.calls = a.calls[:0]
	a.finish, a.model, a.ollama = "", "", false
	a.usage, a.hasUsage, a.sent = Usage{}, false, false
	a.choices, a.held = false, 0
}

func (a *accumulator) emit(d Delta) {
	if a.onDelta != nil {
		a.sent = true
		a.onDelta(d)
	}
}

// withdraw tells the receiver to discard what this attempt showed, before
// another attempt starts.
func (a *accumulator) withdraw() {
	if a.sent {
		a.onDelta(Delta{Reset: true})
		a.sent = false
	}
}

// feed decodes one data line into ch and adds it to the call.
func (a *accumulator) feed(ch *chunk, line []byte) error {
	if !parseChunk(line, ch) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] == '{' {
			// A chunk that is cut or broken: skipped, its part of the
			// answer would be lost without a word.
			return &badAnswer{reason: "the server sent a chunk that is not valid JSON: " + textcut.OneLine(string(t), 200)}
		}
		return nil // not JSON (a stray "data: ping"): skip it
	}
	if (len(ch.Error) > 0 && string(ch.Error) != `""` && string(ch.Error) != "{}") || string(a.text(ch.Object)) == "error" {
		f, _ := parseErrorBody(line) // rare: decode again, generously
		if f.Message == "" {
			f.Message = textcut.OneLine(string(line), 300)
		}
		return &streamError{f}
	}
	if a.model == "" && len(ch.Model) > 0 {
		a.model = string(a.text(ch.Model))
	}
	a.ollama = a.ollama || string(ch.Fingerprint) == `"fp_ollama"`
	if ch.Usage != nil {
		a.takeUsage(ch.Usage)
	}
	if ch.XGroq != nil && ch.XGroq.Usage != nil {
		a.takeUsage(ch.XGroq.Usage)
	}
	a.choices = a.choices || len(ch.Choices) > 0
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if n, ok := parseInt(c.Index); ok && n != 0 {
			continue // we ask for one choice; ignore any other
		}
		d := &c.Delta
		if len(d.Content) == 0 && len(d.ToolCalls) == 0 && len(d.Reasoning) == 0 {
			d = &c.Message
		}
		if hasValue(d.Reasoning) {
			a.addReasoning(d.Reasoning)
		}
		if hasValue(d.Content) {
			a.endReasoning()
			a.addContent(d.Content)
		}
		if len(d.ToolCalls) > 0 {
			a.endReasoning()
		}
		for j := range d.ToolCalls {
			a.addToolDelta(&d.ToolCalls[j])
		}
		if len(c.FinishReason) > 0 {
			if f := a.text(c.FinishReason); len(f) > 0 && string(f) != a.finish {
				a.finish = string(f)
			}
		}
	}
	if limit := cmp.Or(a.limit, maxAnswer); a.held > limit {
		return &badAnswer{reason: fmt.Sprintf("the answer grew past %d MiB without ending", limit>>20)}
	}
	return nil
}

// addContent adds a piece of content. Its bytes are kept as they came
// until the answer is complete: some servers cut a stream between the
// bytes of one character, and each half alone is invalid UTF-8.
func (a *accumulator) addContent(r raw) {
	before := len(a.content)
	switch r[0] {
	case '"':
		a.content = appendUnquotedRaw(a.content, r)
	case '[':
		// Content as parts: [{"type": "text", "text": "..."}] or strings.
		var parts []json.RawMessage
		if json.Unmarshal(r, &parts) != nil {
			return
		}
		for _, p := range parts {
			if len(p) > 0 && p[0] == '"' {
				a.content = appendUnquotedRaw(a.content, raw(p))
				continue
			}
			var part struct {
				Text raw `json:"text"`
			}
			if json.Unmarshal(p, &part) == nil && len(part.Text) > 0 && part.Text[0] == '"' {
				a.content = appendUnquotedRaw(a.content, part.Text)
			}
		}
	default:
		return
	}
	a.held += len(a.content) - before
	if text, ok := unshown(a.content, &a.shown); ok {
		a.emit(Delta{Content: text})
	}
}

// unshown is the text of buf after what *shown says went out, up to its
// last whole character, and moves *shown past it; ok is false when there
// is none. A character whose last bytes are still to come waits for them.
func unshown(buf []byte, shown *int) (text string, ok bool) {
	end := len(buf) - incompleteTail(buf)
	if end <= *shown {
		return "", false
	}
	text = strings.ToValidUTF8(string(buf[*shown:end]), "\uFFFD")
	*shown = end
	return text, true
}

// addReasoning shows a piece of the thinking a server sent apart from the
// content, opening a <think> block first if none is open.
func (a *accumulator) addReasoning(r raw) {
	if r[0] != '"' {
		return
	}
	before := len(a.reasoning)
	a.reasoning = appendUnquotedRaw(a.reasoning, r)
	a.held += len(a.reasoning) - before
	text, ok := unshown(a.reasoning, &a.reasoningShown)
	if !ok {
		return
	}
	if !a.thinking {
		a.thinking = true
		text = thinkOpen + text
	}
	a.emit(Delta{Content: text})
}

// endReasoning closes the <think> block addReasoning opened, once the
// answer begins.
func (a *accumulator) endReasoning() {
	if a.thinking {
		a.thinking = false
		a.emit(Delta{Content: thinkClose + "\n\n"})
	}
}

// incompleteTail is the length of the start of a multi-byte character at
// the end of b, 0 when b ends with a whole character.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// addToolDelta applies one tool-call delta. Deltas are grouped by index,
// except that a new non-empty id different from the id of the call at that
// index opens a new call: Ollama sends every parallel call whole with index
// 0, or with no index at all. A delta with neither continues the last call.
func (a *accumulator) addToolDelta(tc *chunkToolCall) {
	index, hasIndex := parseInt(tc.Index)
	id := a.text(tc.ID)
	// A new call starts with its name. Some servers give every delta of a
	// call an id of its own, so a new id without a name continues the
	// call open there; Ollama's whole calls, each at index 0 with an id
	// of its own, are named.
	named := hasValue(tc.Function.Name)
	var c *toolCallAcc
	switch {
	case hasIndex:
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].index == index {
				c = &a.calls[i]
				break
			}
		}
		if c != nil && named && len(id) > 0 && c.id != "" && c.id != string(id) {
			c = nil
		}
	case len(id) > 0:
		for i := len(a.calls) - 1; i >= 0; i-- {
			if a.calls[i].id == string(id) {
				c = &a.calls[i]
				break
			}
		}
		if c == nil && !named && len(a.calls) > 0 {
			c = &a.calls[len(a.calls)-1]
		}
	case len(a.calls) > 0:
		c = &a.calls[len(a.calls)-1]
	}
	if c != nil && len(id) == 0 && c.name != "" && len(tc.Function.Name) > 0 && hasText(tc.Function.Arguments) &&
		json.Valid(c.args) {
		// A whole call after a whole call with neither id nor a new index
		// to tell them apart: no server streams a call's name after its
		// arguments are complete, so this is the next call.
		c = nil
	}
	if c == nil {
		if !hasIndex {
			index = -1
		}
		a.calls = append(a.calls, toolCallAcc{index: index})
		c = &a.calls[len(a.calls)-1]
		a.held += int(unsafe.Sizeof(*c))
	}
	before := len(c.id) + len(c.name) + len(c.args)
	if c.id == "" && len(id) > 0 {
		c.id = string(id)
	}
	if name := a.text(tc.Function.Name); len(name) > 0 {
		switch {
		case c.name == "":
			c.name = string(name)
		case c.name != string(name):
			// Servers either repeat the whole name or stream it in pieces.
			c.name += string(name)
		}
	}
	if c.name != "" && !c.named {
		c.named = true
		a.emit(Delta{ToolName: c.name})
	}
	if args := tc.Function.Arguments; len(args) > 0 {
		switch args[0] {
		case '"':
			c.args = appendUnquotedRaw(c.args, args)
		case '{', '[':
			// Some servers send the arguments as a JSON value, not text.
			buf := bytes.NewBuffer(c.args)
			if json.Compact(buf, args) == nil {
				c.args = buf.Bytes()
			} else {
				c.args = append(c.args, args...)
			}
		default:
			c.args = append(c.args, args...)
		}
	}
	a.held += len(c.id) + len(c.name) + len(c.args) - before
}

// hasText reports whether r is a value other than "".
func hasText(r raw) bool { return len(r) > 0 && string(r) != `""` }

// hasValue reports whether r is a value other than "" and null.
func hasValue(r raw) bool { return hasText(r) && string(r) != "null" }

func (a *accumulator) takeUsage(u *chunkUsage) {
	p, _ := parseInt(u.PromptTokens)
	c, _ := parseInt(u.CompletionTokens)
	t, _ := parseInt(u.TotalTokens)
	if p == 0 && c == 0 && t == 0 {
		return // some servers send zeros on every chunk before the real count
	}
	if t == 0 {
		t = p + c
	}
	a.usage, a.hasUsage = Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: t}, true
}

// text returns the text of a JSON string value (or the raw text of any other
// value). The result may point into the line or into a.scratch and is only
// valid until the next call.
func (a *accumulator) text(r raw) []byte {
	if len(r) < 2 || r[0] != '"' {
		return r
	}
	inner := r[1 : len(r)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner
	}
	a.scratch = appendUnquoted(a.scratch[:0], r)
	return a.scratch
}

// response builds the result of a finished attempt.
func (a *accumulator) response(req *Request) *Response {
	resp := &Response{
		Content:      strings.ToValidUTF8(string(a.content), "\uFFFD"),
		FinishReason: a.finish,
		Model:        a.model,
		FromOllama:   a.ollama,
		Usage:        a.usage,
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	for i := range a.calls {
		c := &a.calls[i]
		args := bytes.TrimSpace(c.args)
		if c.name == "" && len(args) == 0 {
			continue // an empty delta, not a call
		}
		tc := ToolCall{ID: c.id, Name: c.name, Arguments: strings.ToValidUTF8(string(c.args), "\uFFFD")}
		if len(args) == 0 {
			tc.Arguments = "{}"
		}
		if tc.ID == "" {
			tc.ID = newCallID()
		}
		resp.ToolCalls = append(resp.ToolCalls, tc)
	}
	if !a.hasUsage {
		resp.Usage = estimateUsage(req, resp, len(a.reasoning))
		resp.UsageEstimated = true
	}
	// After the estimate: reasoning and tagged calls were output tokens.
	resp.Content = stripThinking(resp.Content)
	if len(resp.ToolCalls) == 0 && (req.ToolSet.Len() > 0 || len(req.Tools) > 0) {
		if rest, calls, ok := textToolCalls(resp.Content); ok {
			resp.Content, resp.ToolCalls = rest, calls
		} else if calls, ok := bareToolCalls(resp.Content, req.hasTool); ok {
			resp.Content, resp.ToolCalls = "", calls
		}
	}
	return resp
}

// estimateUsage guesses token counts at about four characters a token, for
// servers that never report usage, so token budgets still hold.
func estimateUsage(req *Request, resp *Response, reasoning int) Usage {
	out := len(resp.Content) + reasoning
	for _, tc := range resp.ToolCalls {
		out += len(tc.Name) + len(tc.Arguments)
	}
	u := Usage{PromptTokens: PromptTokens(req), CompletionTokens: (out + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// parseInt reads an integer from a JSON number or numeric string; a
// fraction is dropped.
func parseInt(r raw) (int, bool) {
	if len(r) >= 2 && r[0] == '"' {
		r = r[1 : len(r)-1]
	}
	neg := false
	if len(r) > 0 && r[0] == '-' {
		neg, r = true, r[1:]
	}
	n, digits := 0, 0
	for _, c := range r {
		if c < '0' || c > '9' {
			break
		}
		if n < 1<<40 {
			n = n*10 + int(c-'0')
		}
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// appendUnquoted appends the value of the JSON string literal lit (quotes
// included, already validated by the decoder) to dst, decoding escapes and
// replacing invalid UTF-8 the way encoding/json does.
func appendUnquoted(dst []byte, lit []byte) []byte { return unquote(dst, lit, true) }

// appendUnquotedRaw is appendUnquoted keeping invalid UTF-8 bytes as they
// are, for a piece of text whose next piece may complete them.
func appendUnquotedRaw(dst []byte, lit []byte) []byte { return unquote(dst, lit, false) }

func unquote(dst []byte, lit []byte, repair bool) []byte {
	s := lit[1 : len(lit)-1]
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\\' && s[i] < utf8.RuneSelf {
			i++
		}
		dst = append(dst, s[:i]...)
		s = s[i:]
		if len(s) == 0 {
			break
		}
		if s[0] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s)
			if r == utf8.RuneError && size == 1 && repair {
				dst = utf8.AppendRune(dst, unicode.ReplacementChar)
			} else {
				dst = append(dst, s[:size]...)
			}
			s = s[size:]
			continue
		}
		if len(s) < 2 {
			break
		}
		switch s[1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			if len(s) < 6 {
				return dst
			}
			r := hex4(s[2:])
			s = s[6:]
			if r < 0 {
				continue
			}
			if utf16.IsSurrogate(r) {
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					if dec := utf16.DecodeRune(r, hex4(s[2:])); dec != unicode.ReplacementChar {
						dst = utf8.AppendRune(dst, dec)
						s = s[6:]
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[1])
		}
		s = s[2:]
	}
	return dst
}

func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
