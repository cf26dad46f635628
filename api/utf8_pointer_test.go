package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInvalidTextPointer(t *testing.T) {
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
		{`{"name":"ok\ud800("}`, "/name", true},
		{`{"name":"ok\uDC00("}`, "/name", true},
		{`{"name":"\ud83d\ude00 \u00e9 \\ud800"}`, "", false}, // a pair, an é, an escaped backslash
		{`{"name":"\ud83d\u0041"}`, "/name", true},            // a high half without its low half
		{`{"name":"\ud83d"}`, "/name", true},
		{`{"topics":["a","\udfff"]}`, "/topics/1", true},
		{`{"messages":[{"body":"\ud800"}]}`, "", false}, // bodies are kept byte for byte
		{`{"messages":[{"body":{"a":["\ud800"]},"tag":"x"}]}`, "", false},
		{`{"messages":[{"body":"\ud800","tag":"\ud800"}]}`, "/messages/0/tag", true},
		{`{"messages":[{"\ud800":1}]}`, "/messages/0/\ufffd", true},
		{`{"messages":[{"body":1,"headers":{"x-a":"\udc00"}}]}`, "/messages/0/headers/x-a", true},
		{`{"subscriptions":[{"topic":"t","tags":["ok","ok\ud800("]}]}`, "/subscriptions/0/tags/1", true},
		{`{"body":{"x":"\ud800"}}`, "", false}, // a test send's body
		{`{"a":\ud800}`, "", false},            // malformed: the decoder says so
	}
	for _, tc := range cases {
		got, bad := invalidTextPointer([]byte(tc.body))
		require.Equal(t, tc.bad, bad, tc.body)
		require.Equal(t, tc.want, got, tc.body)
	}
}
