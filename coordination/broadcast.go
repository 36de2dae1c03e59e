package coordination

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Broadcast categories (task_broadcast's category argument).
const (
	CategoryDiscovery = "discovery"
	CategoryWarning   = "warning"
	CategoryContext   = "context"
	CategoryBlocker   = "blocker"
)

// Broadcast targets (task_broadcast's target argument).
const (
	TargetAll      = "all"
	TargetChildren = "children"
	TargetSiblings = "siblings"
)

// MaxBroadcastLen is the longest broadcast message, in characters (runes),
// as the sibling-communication spec fixes it.
const MaxBroadcastLen = 2000

// ValidCategory reports whether s is one of discovery, warning, context,
// blocker.
func ValidCategory(s string) bool {
	switch s {
	case CategoryDiscovery, CategoryWarning, CategoryContext, CategoryBlocker:
		return true
	}
	return false
}

// ValidTarget reports whether s is one of all, children, siblings.
func ValidTarget(s string) bool {
	switch s {
	case TargetAll, TargetChildren, TargetSiblings:
		return true
	}
	return false
}

// CheckCategory returns an error a model can act on when s is not a
// category. The runtime applies the default ("discovery") before calling.
func CheckCategory(s string) error {
	if ValidCategory(s) {
		return nil
	}
	return fmt.Errorf("category %q is not valid; use one of discovery, warning, context, blocker", s)
}

// CheckTarget returns an error a model can act on when s is not a target.
func CheckTarget(s string) error {
	if ValidTarget(s) {
		return nil
	}
	return fmt.Errorf("target %q is not valid; use one of all, children, siblings", s)
}

// CheckBroadcastMessage rejects an empty message and one longer than
// MaxBroadcastLen characters, e.g. "message is 2345 characters; the limit is
// 2000 — shorten it".
func CheckBroadcastMessage(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("message is empty — say what you found in a few lines")
	}
	if n := utf8.RuneCountInString(s); n > MaxBroadcastLen {
		return fmt.Errorf("message is %d characters; the limit is %d — shorten it", n, MaxBroadcastLen)
	}
	return nil
}
