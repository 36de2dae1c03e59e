// Package secret judges which values may carry a secret (an API key, a
// token, a password) and hides them in what is shown.
package secret

import (
	"net/url"
	"strings"
)

// Hidden stands for a secret left out of what is shown.
const Hidden = "xxxxx"

// Like reports whether a header or query parameter may carry a secret: by
// its name, or by a value long and unbroken like a token. A value such as
// api-version=2024-06-01 does not.
func Like(name, value string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "token", "auth", "secret", "pass", "sign", "cookie", "session", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return len(value) >= 16 && !strings.ContainsAny(value, " \t")
}

// HideInURL is a URL as it may be shown: its password (or a user alone
// that is Like a secret), its fragment and the values of its query that
// are Like a secret replaced by Hidden; the
// names stay. hid reports whether anything was hidden, in which case the
// URL shown no longer works as it is.
func HideInURL(raw string) (shown string, hid bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)", raw != ""
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), Hidden)
		hid = true
	} else if u.User != nil && Like("user", u.User.Username()) {
		// A user alone is how some gateways take a key.
		u.User = url.User(Hidden)
		hid = true
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			name, value, _ := strings.Cut(p, "=")
			n, err1 := url.QueryUnescape(name)
			v, err2 := url.QueryUnescape(value)
			if err1 != nil || err2 != nil || Like(n, v) {
				parts[i] = name + "=" + Hidden
				hid = true
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = Hidden, ""
		hid = true
	}
	return u.String(), hid
}
