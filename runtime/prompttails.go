package runtime

import (
	"strings"
	"sync"

	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// promptTails stores the end of the system prompts of a run once. Siblings'
// prompts differ in their first paragraph (task id, label, role, goal) and
// agree from the first blank line on: some 8 KB of rules and tool guides
// with the default templates, which every session would otherwise write
// into its first message. The second prompt that ends the same way stores
// that end as shared content, and it and every later one refer to it.
type promptTails struct {
	mu     sync.Mutex
	shared map[string]*store.SharedContent // ends stored once
	seen   map[string]bool                 // ends seen once, not stored yet
}

const (
	// minPromptTail is the shortest end worth a row of its own.
	minPromptTail = 1 << 10
	// maxPromptTails bounds each map: prompts whose ends never repeat (a
	// template that names the session further down) must not fill memory.
	maxPromptTails = 64
)

// shareTx gives a system prompt message the shared end it has in common with
// earlier prompts of the run, storing that end the first time two prompts
// agree on it. It runs inside the store operation that inserts m.
func (p *promptTails) shareTx(tx *store.Tx, m *store.Message) error {
	i := strings.Index(m.Content, "\n\n")
	if i < 0 || len(m.Content)-i < minPromptTail {
		return nil
	}
	tail := m.Content[i:]
	p.mu.Lock()
	defer p.mu.Unlock()
	if sh, ok := p.shared[tail]; ok {
		m.Shared = sh
		return nil
	}
	if !p.seen[tail] {
		if p.seen == nil || len(p.seen) >= maxPromptTails {
			p.seen = map[string]bool{}
		}
		p.seen[tail] = true
		return nil
	}
	sh, err := tx.ShareContent(tail)
	if err != nil {
		return err
	}
	delete(p.seen, tail)
	if p.shared == nil || len(p.shared) >= maxPromptTails {
		p.shared = map[string]*store.SharedContent{}
	}
	p.shared[tail] = sh
	m.Shared = sh
	return nil
}
