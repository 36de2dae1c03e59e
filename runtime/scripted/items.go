package scripted

import (
	"strings"
)

// Items the runtime injects into a session as user messages. Several may be
// merged into one message, separated by blank lines, and the first user
// message may carry the task followed by a <sibling_tasks> table.

// The tags the policies understand. <new_sibling> has no body.
var injectedTags = []string{
	"sibling_tasks", "new_sibling", "sibling_broadcast", "task_message", "task_result",
	"human_message", "human_broadcast", "announcement", "answered_on_your_behalf", "reminder", "run_resumed",
}

// item is one injected item, or (tag "") a stretch of plain text.
type item struct {
	tag   string
	attrs string // raw attribute text of the opening tag
	body  string
	after int // the session's assistant turns before the item arrived
}

// attr returns the unescaped value of an attribute of the opening tag.
func (it item) attr(name string) string {
	s := it.attrs
	for {
		i := strings.Index(s, name+`="`)
		if i < 0 {
			return ""
		}
		if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != '\n' {
			s = s[i+len(name):]
			continue
		}
		v := s[i+len(name)+2:]
		if j := strings.IndexByte(v, '"'); j >= 0 {
			v = v[:j]
		}
		return unescapeXML(v)
	}
}

// parseItems splits one user message into its items.
func parseItems(content string, after int, out []item) []item {
	rest := content
	for rest != "" {
		at, tag := nextTag(rest)
		if at < 0 {
			at = len(rest)
		}
		if plain := strings.TrimSpace(rest[:at]); plain != "" {
			out = append(out, item{body: plain, after: after})
		}
		if tag == "" {
			break
		}
		rest = rest[at+1+len(tag):]
		gt := strings.IndexByte(rest, '>')
		if gt < 0 {
			out = append(out, item{tag: tag, attrs: rest, after: after})
			break
		}
		it := item{tag: tag, attrs: strings.TrimSuffix(rest[:gt], "/"), after: after}
		selfClosing := gt > 0 && rest[gt-1] == '/'
		rest = rest[gt+1:]
		closing := "</" + tag + ">"
		switch {
		case selfClosing:
		case tag == "new_sibling":
			// An announcement without a body: consume a closing tag only
			// if it follows at once, never one belonging to a later item.
			if t := strings.TrimLeft(rest, " \t\r\n"); strings.HasPrefix(t, closing) {
				rest = t[len(closing):]
			}
		default:
			if end := strings.Index(rest, closing); end >= 0 {
				it.body = unescapeXML(strings.TrimSpace(rest[:end]))
				rest = rest[end+len(closing):]
			} else {
				it.body = unescapeXML(strings.TrimSpace(rest))
				rest = ""
			}
		}
		out = append(out, it)
	}
	return out
}

// nextTag finds the next opening tag of an injected item.
func nextTag(s string) (int, string) {
	for i := 0; ; {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1, ""
		}
		i += j
		for _, t := range injectedTags {
			if strings.HasPrefix(s[i+1:], t) && len(s) > i+1+len(t) {
				switch s[i+1+len(t)] {
				case ' ', '>', '/', '\n', '\t':
					return i, t
				}
			}
		}
		i++
	}
}

// plainOf returns the text of a message without its injected items.
func plainOf(content string) string {
	if strings.IndexByte(content, '<') < 0 {
		return strings.TrimSpace(content)
	}
	var parts []string
	for _, it := range parseItems(content, 0, nil) {
		if it.tag == "" {
			parts = append(parts, it.body)
		}
	}
	return strings.Join(parts, "\n\n")
}

var xmlUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#34;", `"`, "&apos;", "'", "&#39;", "'", "&amp;", "&")

func unescapeXML(s string) string {
	if strings.IndexByte(s, '&') < 0 {
		return s
	}
	return xmlUnescaper.Replace(s)
}

// sibling is one row of a <sibling_tasks> table or a <new_sibling>.
type sibling struct {
	taskID, agent, label, title string
}

// siblingRows reads the rows of a <sibling_tasks> table:
// `| s-3f9a | researcher (research-1) | Title |`.
func siblingRows(body string) []sibling {
	var out []sibling
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		id := strings.TrimSpace(cells[0])
		if id == "" || strings.EqualFold(id, "task id") || strings.Trim(id, "-: ") == "" {
			continue
		}
		sb := sibling{taskID: id}
		sb.agent, sb.label = splitAgent(strings.TrimSpace(cells[1]))
		if len(cells) > 2 {
			sb.title = strings.TrimSpace(cells[2])
		}
		out = append(out, sb)
	}
	return out
}

// splitAgent splits "researcher (research-1)" into role and label.
func splitAgent(s string) (agent, label string) {
	if i := strings.LastIndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		return strings.TrimSpace(s[:i]), s[i+1 : len(s)-1]
	}
	return s, ""
}
