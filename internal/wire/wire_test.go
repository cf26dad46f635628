package wire_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/wire"
)

type older struct {
	ID   int64  `json:"id"`
	Name string `json:"n,omitempty"`
}

type newer struct {
	ID    int64             `json:"id"`
	Name  string            `json:"n,omitempty"`
	Body  []byte            `json:"b"`
	Extra map[string]string `json:"x,omitempty"`
	Plain string
}

// TestFieldsByJSONTag: fields travel under their json names (Go names without a
// tag), omitempty leaves empty ones out, bodies stay bytes, and a reader skips a
// field it does not know.
func TestFieldsByJSONTag(t *testing.T) {
	t.Parallel()
	in := newer{ID: 7, Body: []byte{0, 0xff, '"'}, Extra: map[string]string{"k": "v"}, Plain: "p"}
	b, err := wire.Marshal(in)
	require.NoError(t, err)

	var names map[string]any
	require.NoError(t, wire.Unmarshal(b, &names))
	require.Equal(t, map[string]any{"id": int64(7), "b": []byte{0, 0xff, '"'}, "x": map[string]any{"k": "v"}, "Plain": "p"}, names)

	var out newer
	require.NoError(t, wire.Unmarshal(b, &out))
	require.Equal(t, in, out)

	var old older
	require.NoError(t, wire.Unmarshal(b, &old), "unknown fields are skipped")
	require.Equal(t, older{ID: 7}, old)

	require.Error(t, wire.Unmarshal([]byte("{"), &out))
	_, err = wire.Marshal(make(chan int))
	require.Error(t, err)
}

// TestRawMessage: a value kept raw inside another decodes on its own, so one bad
// element spoils only itself.
func TestRawMessage(t *testing.T) {
	t.Parallel()
	good, err := wire.Marshal(older{ID: 1})
	require.NoError(t, err)
	bad, err := wire.Marshal("not a struct")
	require.NoError(t, err)
	b, err := wire.Marshal(struct {
		Items []wire.RawMessage `json:"i"`
	}{[]wire.RawMessage{bad, good}})
	require.NoError(t, err)

	var outer struct {
		Items []wire.RawMessage `json:"i"`
	}
	require.NoError(t, wire.Unmarshal(b, &outer))
	require.Len(t, outer.Items, 2)
	var o older
	require.Error(t, wire.Unmarshal(outer.Items[0], &o))
	require.NoError(t, wire.Unmarshal(outer.Items[1], &o))
	require.Equal(t, older{ID: 1}, o)
}
