package scripted

import (
	"encoding/json"

	"github.com/swarmdeck/swarmdeck/runtime/internal/jsontext"
)

// kv is a JSON object written as alternating keys and values. Unlike a map
// it keeps the keys in the order written, so the tool arguments the
// dashboard shows read the way a model would write them.
type kv []any

// MarshalJSON implements json.Marshaler.
func (o kv) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i := 0; i+1 < len(o); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := o[i].(string)
		b = jsontext.AppendString(b, key)
		b = append(b, ':')
		v, err := json.Marshal(o[i+1])
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}
