package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/heraldhq/herald/client"
)

// errTestFailed: a test delivery went out and the endpoint did not accept it (exit 1).
var errTestFailed = errors.New("the endpoint did not accept the test delivery")

// orderingHint adds to a 404 from a blocked key or queue action (by "key" or
// "queue") what the group's ordering allows instead: a group ordered by queue has
// no blocked keys, one ordered by key no blocked queues, an unordered group
// neither. Other errors, and a group that does not exist, pass unchanged.
func orderingHint(ctx context.Context, s *session, group, by string, err error) error {
	if !errors.Is(err, client.ErrNotFound) {
		return err
	}
	g, gerr := s.c.GetGroup(ctx, group)
	if gerr != nil {
		return err
	}
	ordering := g.Ordering
	if ordering == "" {
		ordering = "key"
	}
	switch {
	case !g.Ordered:
		return fmt.Errorf("%w\nhint: group %s is not ordered, so nothing waits on a blocked key or queue; its failed messages "+
			"retry, then become dead letters ('herald dead-letters list %s')", err, group, group)
	case ordering == "queue" && by == "key":
		return fmt.Errorf("%w\nhint: group %s is ordered by queue: unblock it with 'herald group queue-skip %s --queue <id>' "+
			"or 'herald group queue-resume'; 'herald group stats %s' lists its blocked queues", err, group, group, group)
	case ordering == "key" && by == "queue":
		return fmt.Errorf("%w\nhint: group %s is ordered by key: unblock it with 'herald group key-skip %s --key <key>' "+
			"or 'herald group key-resume'; 'herald group stats %s' lists its blocked keys", err, group, group, group)
	}
	return fmt.Errorf("%w\nhint: 'herald group stats %s' lists what is blocked now", err, group)
}

// morePages tells on stderr how to ask for the page after this one, if any.
func morePages(next string) {
	if next != "" {
		fmt.Fprintf(os.Stderr, "herald: more on the next page: add --cursor %s\n", next)
	}
}
