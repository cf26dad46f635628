package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// replyError stands for an error reply from Redis (MOVED, CLUSTERDOWN, NOSCRIPT …),
// which go-redis types as redis.Error.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestUnreachable checks which errors start a slot-map reload: a node that could
// not be reached (refused dial, broken connection), not an answer from Redis, a
// caller giving up or a closed client.
func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{replyError("CLUSTERDOWN The cluster is down"), false},
		{fmt.Errorf("enqueue: %w", replyError("MOVED 3999 127.0.0.1:6381")), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{redis.ErrClosed, false},
		{refused, true},
		{fmt.Errorf("redis eval error: %w", refused), true},
		{io.EOF, true},
		{errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"), true},
	} {
		require.Equal(t, c.want, unreachable(c.err), "%v", c.err)
	}
}
