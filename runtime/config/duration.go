package config

import (
	"fmt"
	"strconv"
	"time"
)

// String formats the duration the way config.yaml writes it ("400ms", "2m0s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText lets a Duration round-trip through YAML and JSON as "2m0s"
// rather than a bare count of nanoseconds nobody can read.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText accepts what time.ParseDuration accepts. It exists so that
// code decoding a Config with a plain YAML or JSON library gets the same
// rule as Parse: a number without a unit is refused, because "30" could mean
// seconds or nanoseconds and guessing wrong turns a timeout into nothing.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := parseDuration(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// parseDuration returns a message meant to follow "key: " in an error.
func parseDuration(s string) (Duration, error) {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%s has no unit (write it like %ss or %sm)", s, s, s)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (write it like 30s or 2m)", s)
	}
	return Duration(v), nil
}
