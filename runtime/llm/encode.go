package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/internal/jsontext"
)

// The request body is encoded here rather than by go-openai: encoding/json
// spends most of its time re-validating and compacting what the custom
// marshalers of go-openai's message and tool types return, and on every
// call it compacts the same tool schemas again. Appending bytes directly,
// with the tools encoded once per ToolSet, costs a fraction of that. The
// output decodes to the same request as go-openai's marshalling of
// chatRequest; encode_test.go checks it.

// Tails of the body, chosen per attempt: the stream_options fallback drops
// the field without encoding the request again.
const (
	tailWithUsage = `,"stream_options":{"include_usage":true}}`
	tailPlain     = `}`
)

// maxPooledBody bounds the buffers kept for reuse, so one huge conversation
// does not pin its buffer for the life of the process.
const maxPooledBody = 1 << 20

var bodyBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 16<<10)
	return &b
}}

// preparedBody is the encoded body of one call, shared by its attempts and
// by the readers net/http gets for them. It holds a pooled buffer that goes
// back to the pool only when the call is over and net/http has closed every
// reader: the HTTP/1 transport may still be writing a body after the
// response arrived, and a buffer recycled then would send another call's
// bytes. A reader that is never closed only means the buffer is left to the
// garbage collector.
type preparedBody struct {
	buf  *[]byte // pooled; buf's contents are data
	data []byte  // the body up to, not including, its tail
	refs atomic.Int32
}

var errBodyReleased = errors.New("llm: request body used after its call ended")

// encodeBody encodes req with the temperature chatParams chose for it (0
// leaves it out). The caller owns one reference and must release it.
func encodeBody(req *Request, temperature float32) (*preparedBody, error) {
	if err := req.ToolSet.Err(); err != nil {
		return nil, err
	}
	if t := float64(temperature); math.IsNaN(t) || math.IsInf(t, 0) {
		return nil, fmt.Errorf("temperature %v is not a finite number", temperature)
	}
	bp := bodyBufPool.Get().(*[]byte)
	b := append((*bp)[:0], `{"model":`...)
	b = jsontext.AppendString(b, req.Model)
	b = append(b, `,"messages":[`...)
	for i := range req.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, &req.Messages[i])
	}
	b = append(b, ']')
	if req.MaxTokens > 0 {
		// The same choice as chatParams makes.
		if reasoningModel(req.Model) {
			b = append(b, `,"max_completion_tokens":`...)
		} else {
			b = append(b, `,"max_tokens":`...)
		}
		b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	}
	if temperature != 0 {
		b = append(b, `,"temperature":`...)
		b = appendFloat32(b, temperature)
	}
	b = append(b, `,"stream":true`...)
	switch {
	case req.ToolSet != nil:
		if req.ToolSet.Len() > 0 {
			b = append(b, `,"tools":`...)
			b = append(b, req.ToolSet.json...)
		}
	case len(req.Tools) > 0:
		b = append(b, `,"tools":`...)
		var err error
		if b, err = appendTools(b, req.Tools); err != nil {
			*bp = b[:0]
			bodyBufPool.Put(bp)
			return nil, err
		}
	}
	*bp = b
	rb := &preparedBody{buf: bp, data: b}
	rb.refs.Store(1)
	return rb, nil
}

// acquire takes a reference unless the body was already released.
func (rb *preparedBody) acquire() bool {
	for {
		n := rb.refs.Load()
		if n <= 0 {
			return false
		}
		if rb.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one returns the buffer to the pool.
func (rb *preparedBody) release() {
	if rb.refs.Add(-1) != 0 {
		return
	}
	bp := rb.buf
	rb.buf, rb.data = nil, nil
	if cap(*bp) <= maxPooledBody {
		*bp = (*bp)[:0]
		bodyBufPool.Put(bp)
	}
}

// size is the length of the body sent with tail.
func (rb *preparedBody) size(tail string) int64 { return int64(len(rb.data) + len(tail)) }

// reader returns a new reader of the body followed by tail. It holds a
// reference until it is closed.
func (rb *preparedBody) reader(tail string) (io.ReadCloser, error) {
	if !rb.acquire() {
		return nil, errBodyReleased
	}
	return &bodyReader{body: rb, data: rb.data, tail: tail}, nil
}

// bodyReader reads a preparedBody. net/http may close a request body from
// another goroutine while its writer is still reading it, so Read and Close
// exclude each other: once Close has returned, the buffer is never touched
// again.
type bodyReader struct {
	mu     sync.Mutex
	body   *preparedBody
	data   []byte
	tail   string
	off    int // bytes of data+tail read so far
	closed bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, errBodyReleased
	}
	n := 0
	if r.off < len(r.data) {
		n = copy(p, r.data[r.off:])
	}
	if t := r.off + n - len(r.data); n < len(p) && t >= 0 && t < len(r.tail) {
		n += copy(p[n:], r.tail[t:])
	}
	r.off += n
	if r.off == len(r.data)+len(r.tail) {
		return n, io.EOF
	}
	return n, nil
}

// writeTo writes head and then at most limit of what is left of the body to
// w, from the body's own buffer, in one vectored write; n counts head too.
// It does not hold the lock while writing (a Close from another goroutine
// must not wait for the network); a reference of its own keeps the buffer
// out of the pool until it is done.
func (r *bodyReader) writeTo(w io.Writer, limit int64, head []byte) (n int64, err error) {
	r.mu.Lock()
	if r.closed || !r.body.acquire() {
		r.mu.Unlock()
		return 0, errBodyReleased
	}
	var data []byte
	tail := r.tail
	if r.off < len(r.data) {
		data = r.data[r.off:]
	} else {
		tail = tail[r.off-len(r.data):]
	}
	if int64(len(data)) > limit {
		data, tail = data[:limit], ""
	} else if int64(len(data)+len(tail)) > limit {
		tail = tail[:limit-int64(len(data))]
	}
	r.off += len(data) + len(tail)
	body := r.body
	r.mu.Unlock()
	defer body.release()
	bufs := net.Buffers{head, data, []byte(tail)}
	return bufs.WriteTo(w)
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.data = nil
		r.body.release()
	}
	return nil
}

// appendTools appends the OpenAI "tools" array for tools, schemas
// compacted. On error b holds part of the array.
func appendTools(b []byte, tools []Tool) ([]byte, error) {
	var schema bytes.Buffer
	b = append(b, '[')
	for i := range tools {
		t := &tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"function","function":{"name":`...)
		b = jsontext.AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = jsontext.AppendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		if p := bytes.TrimSpace(t.Parameters); len(p) == 0 || string(p) == "null" {
			b = append(b, emptySchema...)
		} else {
			// The schema as given, not trimmed: go-openai refused what JSON
			// does not count as space, such as a trailing \v.
			schema.Reset()
			if err := json.Compact(&schema, t.Parameters); err != nil {
				return b, fmt.Errorf("tool %q: parameters are not valid JSON: %w", t.Name, err)
			}
			b = append(b, schema.Bytes()...)
		}
		b = append(b, "}}"...)
	}
	return append(b, ']'), nil
}

// appendMessage appends one message as go-openai sends it: empty fields
// left out, except the content of user and tool messages and of assistant
// messages without tool calls (see chatRequest).
func appendMessage(b []byte, m *Message) []byte {
	b = append(b, `{"role":`...)
	b = jsontext.AppendString(b, m.Role)
	content := m.Content
	if content == "" && (m.Role == RoleTool || m.Role == RoleUser || m.Role == RoleAssistant && len(m.ToolCalls) == 0) {
		// Servers reject a tool result or user message without content,
		// and an assistant message with neither content nor tool calls.
		content = " "
	}
	if content != "" {
		b = append(b, `,"content":`...)
		b = jsontext.AppendString(b, content)
	}
	if m.Name != "" {
		b = append(b, `,"name":`...)
		b = jsontext.AppendString(b, m.Name)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if tc.ID != "" {
				b = append(b, `"id":`...)
				b = jsontext.AppendString(b, tc.ID)
				b = append(b, ',')
			}
			// The name even when the model gave none: the schema requires
			// it, and a strict server refuses the request without it.
			b = append(b, `"type":"function","function":{"name":`...)
			b = jsontext.AppendString(b, tc.Name)
			b = append(b, `,"arguments":`...)
			if isBlank(tc.Arguments) {
				b = append(b, `"{}"`...) // servers that parse the arguments reject ""
			} else {
				b = jsontext.AppendString(b, tc.Arguments)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if m.ToolCallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = jsontext.AppendString(b, m.ToolCallID)
	}
	return append(b, '}')
}

// isBlank reports whether s is empty after strings.TrimSpace, without
// scanning long arguments: they start with their first non-space byte.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
		case c < utf8.RuneSelf:
			return false
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !isUnicodeSpace(r) {
				return false
			}
			i += n - 1
		}
	}
	return true
}

// isUnicodeSpace is unicode.IsSpace above ASCII, which TrimSpace also
// trims.
func isUnicodeSpace(r rune) bool {
	switch r {
	case 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return 0x2000 <= r && r <= 0x200A
}

// appendFloat32 formats f as encoding/json does for a float32, so the
// temperature reads the same on the wire as before.
func appendFloat32(b []byte, f float32) []byte {
	format := byte('f')
	if abs := math.Abs(float64(f)); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, float64(f), format, -1, 32)
	if format == 'e' {
		// e-09 becomes e-9, as in encoding/json.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
