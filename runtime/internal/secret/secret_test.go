package secret

import "testing"

func TestLike(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        bool
	}{
		{"api-version", "2024-06-01", false},
		{"api-key", "k1", true},
		{"X-Auth-Token", "abc", true},
		{"sig", "0123456789abcdef", true}, // long and unbroken
		{"q", "a sentence of some length", false},
		{"format", "json", false},
	} {
		if got := Like(tc.name, tc.value); got != tc.want {
			t.Errorf("Like(%q, %q) = %v, want %v", tc.name, tc.value, got, tc.want)
		}
	}
}

func TestHideInURL(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		hid       bool
	}{
		{"", "", false},
		{"http://localhost:11434/v1", "http://localhost:11434/v1", false},
		{"https://h/openai?api-version=2024-06-01", "https://h/openai?api-version=2024-06-01", false},
		{"https://me:s3cret@h/v1", "https://me:xxxxx@h/v1", true},
		{"https://me@h/v1", "https://me@h/v1", false},
		{"http://sk-abcdef1234567890XYZ@h/v1", "http://xxxxx@h/v1", true},
		{"https://h/v1?api-version=2024-06-01&api-key=sk-123", "https://h/v1?api-version=2024-06-01&api-key=xxxxx", true},
		{"https://h/v1?x=0123456789abcdefghij", "https://h/v1?x=xxxxx", true},
		{"https://h/v1?bad=%zz", "https://h/v1?bad=xxxxx", true},
		{"https://h/v1#tok", "https://h/v1#xxxxx", true},
		{"http://[::1", "(unparsable URL)", true},
	} {
		got, hid := HideInURL(tc.raw)
		if got != tc.want || hid != tc.hid {
			t.Errorf("HideInURL(%q) = %q, %v; want %q, %v", tc.raw, got, hid, tc.want, tc.hid)
		}
	}
}
