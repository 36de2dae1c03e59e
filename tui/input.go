package tui

import (
	"unicode"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/rivo/uniseg"
)

// editInput passes a key to a text input, moving and deleting by what a
// reader sees as one character (a grapheme cluster) where the input would
// go by code point: the cursor never stops inside "कि" or 👩‍💻, where
// typing would split the letter from its vowel sign or the emoji in two.
// Backspace after a vowel sign or another combining mark removes that mark
// alone, as keyboards for those scripts expect (the letter stays to take
// another sign); after anything else it removes the whole character.
func editInput(in *textinput.Model, k tea.KeyPressMsg) tea.Cmd {
	km := &in.KeyMap
	switch {
	case key.Matches(k, km.DeleteWordBackward, km.WordBackward, km.WordForward):
		// Words end at spaces, which are clusters of their own.
	case key.Matches(k, km.CharacterBackward):
		var cmd tea.Cmd
		*in, cmd = in.Update(k)
		in.SetCursor(clusterStart(in.Value(), in.Position()))
		return cmd
	case key.Matches(k, km.CharacterForward):
		var cmd tea.Cmd
		*in, cmd = in.Update(k)
		in.SetCursor(clusterEnd(in.Value(), in.Position()))
		return cmd
	case key.Matches(k, km.DeleteCharacterBackward):
		v, pos := []rune(in.Value()), in.Position()
		start := clusterStart(string(v), max(pos-1, 0))
		if pos == 0 || pos-start == 1 || endsInMark(v[start:pos]) {
			break
		}
		in.SetValue(string(v[:start]) + string(v[pos:]))
		in.SetCursor(start)
		return nil
	case key.Matches(k, km.DeleteCharacterForward):
		v, pos := []rune(in.Value()), in.Position()
		end := clusterEnd(string(v), min(pos+1, len(v)))
		if end-pos <= 1 {
			break
		}
		in.SetValue(string(v[:pos]) + string(v[end:]))
		in.SetCursor(pos)
		return nil
	case k.Text != "" && in.CharLimit > 0:
		// At the limit the field would keep what fits of a character
		// typed as several code points (an emoji): it is left out whole.
		room := in.CharLimit - utf8.RuneCountInString(in.Value())
		if utf8.RuneCountInString(k.Text) > room {
			k.Text = wholeClusters(k.Text, room)
			if k.Text == "" {
				return nil
			}
		}
	}
	var cmd tea.Cmd
	*in, cmd = in.Update(k)
	return cmd
}

// wholeClusters is the start of s, in whole grapheme clusters, that holds
// at most n runes: what of a paste or a key's text fits in a field with
// room for n more, with no character cut in two.
func wholeClusters(s string, n int) string {
	return string([]rune(s)[:clusterStart(s, max(n, 0))])
}

// clusterStart is the start, in runes, of the grapheme cluster of s that
// holds the rune at pos (pos itself when a cluster starts there).
func clusterStart(s string, pos int) int {
	start := 0
	for at, g := 0, uniseg.NewGraphemes(s); g.Next(); {
		n := len(g.Runes())
		if at+n > pos {
			return at
		}
		at += n
		start = at
	}
	return start
}

// clusterEnd is the end, in runes, of the grapheme cluster of s that holds
// the rune before pos (pos itself when a cluster ends there).
func clusterEnd(s string, pos int) int {
	at := 0
	for g := uniseg.NewGraphemes(s); g.Next() && at < pos; {
		at += len(g.Runes())
	}
	return at
}

// endsInMark reports whether a cluster ends in a combining mark (a vowel
// sign, a virama) or a Hangul vowel or final consonant jamo, which a
// backspace removes on its own.
func endsInMark(cluster []rune) bool {
	r := cluster[len(cluster)-1]
	return unicode.Is(unicode.M, r) || (r >= 0x1160 && r <= 0x11ff) || (r >= 0xd7b0 && r <= 0xd7ff)
}
