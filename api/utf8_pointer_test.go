package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInvalidUTF8Pointer(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body, want string
		bad        bool
	}{
		{`{"messages":[{"body":1,"tag":"ok"}]}`, "", false},
		{"{\"messages\":[{\"body\":1,\"tag\":\"\xff\xfe\"}]}", "/messages/0/tag", true},
		{"{\"messages\":[{\"body\":1},{\"body\":2,\"key\":\"a\xc3\"}]}", "/messages/1/key", true},
		{"{\"messages\":[{\"body\":{\"x\":[1,\"\xe9\"]}}]}", "/messages/0/body/x/1", true},
		{"{\"messages\":[{\"body\":1,\"headers\":{\"x-a\":\"ok\",\"x-b\":\"\xff\"}}]}", "/messages/0/headers/x-b", true},
		{"{\"messages\":[{\"body\":1,\"headers\":{\"x-\xff\":\"v\"}}]}", "/messages/0/headers/x-\ufffd", true},
		{"{\"name\":\"k\",\"topics\":[\"a\",\"b\xff\"]}", "/topics/1", true},
		{"\"\xff\"", "", true},
	}
	for _, tc := range cases {
		got, bad := invalidUTF8Pointer([]byte(tc.body))
		require.Equal(t, tc.bad, bad, tc.body)
		require.Equal(t, tc.want, got, tc.body)
	}
}
