// Package coordination holds the pure coordination logic of a swarm: the
// shared context a parent hands to its children, the exact text of every
// message the runtime injects into a session (broadcasts, sibling tables,
// child results, human messages, announcements, shadow-answer notes), task
// plans with dependencies, the parsing of ask_others options and answers,
// the human's question queue and answer memory, and per-session rate limits.
//
// It does no I/O and starts no goroutines: the runtime owns sessions, the
// store and the turn loop, and calls this package to validate, compute and
// format. Everything here is deterministic given its inputs (plans take a
// clock), so it can be tested and fuzzed in isolation.
//
// The tag names and attribute names produced by the Format functions are a
// public interface (scripts and other programs parse transcripts). Every
// attribute value and every body is escaped so that no text written by an
// agent or a person can forge, close or alter a tag.
package coordination
