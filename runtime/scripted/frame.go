package scripted

import (
	"strconv"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/internal/jsontext"
)

// This file writes replies in the wire format of each dialect. Chunks are
// appended by hand into one buffer: a reply of a few hundred chunks costs a
// few microseconds instead of one encoding/json call per chunk.

// dialect is how a server frames tool calls and usage in a stream.
type dialect int

const (
	// dialectOpenAI: the first delta of a call has its index, id and name,
	// later ones only argument fragments; finish_reason "tool_calls"; usage
	// in a last chunk with empty choices.
	dialectOpenAI dialect = iota
	// dialectOllama: each call whole in its own chunk, every one with index
	// 0 and its own id; finish_reason "stop"; usage on the final choice chunk.
	dialectOllama
	// dialectLlamaCpp: arguments in small pieces, the index on every delta,
	// the id only on a call's first; finish_reason "tool_calls".
	dialectLlamaCpp
)

func parseDialect(s string) (dialect, bool) {
	switch s {
	case "", "openai":
		return dialectOpenAI, true
	case "ollama":
		return dialectOllama, true
	case "llamacpp", "llama.cpp":
		return dialectLlamaCpp, true
	}
	return dialectOpenAI, false
}

// fingerprint is the system_fingerprint of the dialect's answers: Ollama
// signs its own, which tells a client it may ask Ollama's API about the
// model (see llm.Client.ServedContext).
func (d dialect) fingerprint() string {
	if d == dialectOllama {
		return "fp_ollama"
	}
	return "scripted"
}

// fragment is the size of the argument pieces a dialect streams when the
// reply is paced; real servers send one or a few tokens per chunk.
func (d dialect) fragment() int {
	if d == dialectLlamaCpp {
		return 6
	}
	return 20
}

func (d dialect) finishReason(hasCalls bool) string {
	if hasCalls && d != dialectOllama {
		return "tool_calls"
	}
	return "stop"
}

// usage is the token count reported for one reply.
type usage struct{ prompt, completion int }

func (u usage) appendJSON(b []byte) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.completion), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.prompt+u.completion), 10)
	return append(b, '}')
}

// encodedCall is a tool call ready for the wire.
type encodedCall struct {
	id, name, args string
}

// stream is an encoded streamed reply: chunk i is buf[ends[i-1]:ends[i]].
// The first body chunks carry the reply; the rest (finish chunk, usage
// chunk, [DONE]) close it and are cut off by a truncate fault.
type stream struct {
	buf  []byte
	ends []int
	body int

	d            dialect
	head         []byte // `data: {"id":…,"choices":[`
	includeUsage bool
	usage        usage
	open         bool // a delta field was written in the current chunk
}

// encodeStream frames a reply. With paced false the reply goes in as few
// chunks as the dialect allows: content whole, each call's arguments in one
// piece.
func encodeStream(st *stream, d dialect, respID string, created int64, content string, calls []encodedCall,
	paced, includeUsage bool, u usage) {
	st.d, st.includeUsage, st.usage = d, includeUsage, u
	st.buf, st.ends, st.body = st.buf[:0], st.ends[:0], 0
	h := append(st.head[:0], `data: {"id":"`...)
	h = append(h, respID...)
	h = append(h, `","object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":"`+ModelID+`","system_fingerprint":"`...)
	h = append(h, d.fingerprint()...)
	h = append(h, `","choices":[`...)
	st.head = h

	first := true // the first chunk carries the role
	if content != "" || len(calls) == 0 {
		if !paced {
			st.contentChunk(content, first)
			first = false
		}
		for rest := content; paced && rest != ""; {
			w := nextWord(rest)
			st.contentChunk(rest[:w], first)
			first = false
			rest = rest[w:]
		}
	}
	switch {
	case d == dialectOllama:
		for _, c := range calls {
			st.begin(true)
			st.callsOpen()
			st.callDelta(0, c.id, c.name, c.args, true, true)
			st.callsClose()
			st.end("", false)
		}
	case !paced && d == dialectOpenAI && len(calls) > 0:
		st.begin(first)
		st.callsOpen()
		for i, c := range calls {
			if i > 0 {
				st.buf = append(st.buf, ',')
			}
			st.callDelta(i, c.id, c.name, c.args, true, true)
		}
		st.callsClose()
		st.end("", false)
	default:
		size := d.fragment()
		for i, c := range calls {
			st.begin(first && i == 0)
			st.callsOpen()
			st.callDelta(i, c.id, c.name, "", true, true)
			st.callsClose()
			st.end("", false)
			for rest := c.args; rest != ""; {
				n := len(rest)
				if paced {
					n = cutAt(rest, size)
				}
				st.begin(false)
				st.callsOpen()
				st.callDelta(i, "", "", rest[:n], false, true)
				st.callsClose()
				st.end("", false)
				rest = rest[n:]
			}
		}
	}
	st.body = len(st.ends)

	// The finish chunk: an empty delta (Ollama repeats the role).
	st.begin(d == dialectOllama)
	if d == dialectOllama {
		st.field("content")
		st.buf = append(st.buf, `""`...)
	}
	st.end(d.finishReason(len(calls) > 0), d == dialectOllama && includeUsage)
	if includeUsage && d != dialectOllama {
		st.buf = append(st.buf, st.head...)
		st.buf = append(st.buf, `],"usage":`...)
		st.buf = u.appendJSON(st.buf)
		st.buf = append(st.buf, "}\n\n"...)
		st.ends = append(st.ends, len(st.buf))
	}
	st.buf = append(st.buf, "data: [DONE]\n\n"...)
	st.ends = append(st.ends, len(st.buf))
}

func (st *stream) contentChunk(text string, role bool) {
	st.begin(role || st.d == dialectOllama)
	st.field("content")
	st.buf = jsontext.AppendString(st.buf, text)
	st.end("", false)
}

// begin opens a chunk with one choice and its delta.
func (st *stream) begin(role bool) {
	st.buf = append(st.buf, st.head...)
	st.buf = append(st.buf, `{"index":0,"delta":{`...)
	st.open = false
	if role {
		st.field("role")
		st.buf = append(st.buf, `"assistant"`...)
	}
}

func (st *stream) field(name string) {
	if st.open {
		st.buf = append(st.buf, ',')
	}
	st.open = true
	st.buf = append(st.buf, '"')
	st.buf = append(st.buf, name...)
	st.buf = append(st.buf, `":`...)
}

func (st *stream) callsOpen() {
	st.field("tool_calls")
	st.buf = append(st.buf, '[')
}

func (st *stream) callsClose() { st.buf = append(st.buf, ']') }

// callDelta writes one tool call delta. Empty id and name are left out; the
// arguments field is always present, as real servers send it.
func (st *stream) callDelta(index int, id, name, args string, head, withIndex bool) {
	b := append(st.buf, '{')
	if withIndex {
		b = append(b, `"index":`...)
		b = strconv.AppendInt(b, int64(index), 10)
		b = append(b, ',')
	}
	if id != "" {
		b = append(b, `"id":`...)
		b = jsontext.AppendString(b, id)
		b = append(b, ',')
	}
	if head {
		b = append(b, `"type":"function",`...)
	}
	b = append(b, `"function":{`...)
	if name != "" {
		b = append(b, `"name":`...)
		b = jsontext.AppendString(b, name)
		b = append(b, ',')
	}
	b = append(b, `"arguments":`...)
	b = jsontext.AppendString(b, args)
	st.buf = append(b, `}}`...)
}

// end closes the delta and the chunk.
func (st *stream) end(finish string, withUsage bool) {
	b := append(st.buf, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, finish...)
		b = append(b, '"')
	}
	b = append(b, `}]`...)
	switch {
	case withUsage:
		b = append(b, `,"usage":`...)
		b = st.usage.appendJSON(b)
	case st.includeUsage && st.d == dialectOpenAI:
		// OpenAI sends an explicit null on every chunk but the last.
		b = append(b, `,"usage":null`...)
	}
	st.buf = append(b, "}\n\n"...)
	st.ends = append(st.ends, len(st.buf))
}

// appendCompletion writes a non-streamed reply.
func appendCompletion(b []byte, d dialect, respID string, created int64, content string, calls []encodedCall, u usage) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, respID...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":"`+ModelID+`","system_fingerprint":"`...)
	b = append(b, d.fingerprint()...)
	b = append(b, `","choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if content == "" && len(calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsontext.AppendString(b, content)
	}
	if len(calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsontext.AppendString(b, c.id)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsontext.AppendString(b, c.name)
			b = append(b, `,"arguments":`...)
			b = jsontext.AppendString(b, c.args)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":"`...)
	b = append(b, d.finishReason(len(calls) > 0)...)
	b = append(b, `"}],"usage":`...)
	b = u.appendJSON(b)
	return append(b, '}')
}

// nextWord returns the length of the first word of s with the white space
// after it, so that the words of a streamed text concatenate back to it.
func nextWord(s string) int {
	i := 0
	for i < len(s) && !isSpace(s[i]) {
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// cutAt returns a cut of at most n bytes that does not split a character.
func cutAt(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n == 0 {
		_, n = utf8.DecodeRuneInString(s)
	}
	return n
}
