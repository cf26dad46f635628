package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// fillTopicStats adds each queue's min/max offset and each topic's published count
// over the last hour to topics, in two statements whatever their number.
func (s *Server) fillTopicStats(ctx context.Context, topics []TopicDTO) error {
	var qids []int64
	for _, t := range topics {
		for _, q := range t.Queues {
			qids = append(qids, q.ID)
		}
	}
	if len(qids) == 0 {
		return nil
	}
	ranges, err := s.st.QueueOffsetRanges(ctx, qids)
	if err != nil {
		return err
	}
	totals, err := s.st.StatsTotalsSince(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		return err
	}
	for i := range topics {
		for j := range topics[i].Queues {
			r := ranges[topics[i].Queues[j].ID]
			topics[i].Queues[j].MinOffset, topics[i].Queues[j].MaxOffset = r.Min, r.Max
		}
		topics[i].PublishedLastHour = totals.TopicPublished[topics[i].ID]
	}
	return nil
}

// topicUpdateRequest is a merge patch of a topic: Queues grows the topic to that many
// queues; ReadOnlyQueues lists the queue ids that take no publishes (replaced whole).
type topicUpdateRequest struct {
	Queues         *int     `json:"queues"`
	ReadOnlyQueues *[]int64 `json:"read_only_queues"`
}

func (s *Server) topicUpdate(c echo.Context) error {
	ctx := c.Request().Context()
	body, err := readBody(c, 64<<10)
	if err != nil {
		return err
	}
	var req topicUpdateRequest
	if err := decodeStrict(body, &req); err != nil {
		return err
	}
	t, err := s.st.TopicGetByName(ctx, c.Param("topic"))
	if err != nil {
		return err
	}
	before := topicDTO(t)
	if req.Queues != nil {
		if err := s.st.TopicAddQueues(ctx, t, *req.Queues); err != nil {
			return err
		}
	}
	if req.ReadOnlyQueues != nil {
		if err := s.st.QueuesSetReadOnly(ctx, t, *req.ReadOnlyQueues); err != nil {
			return err
		}
	}
	s.topics.Delete(t.Name)
	qids := make([]int64, len(t.Queues))
	for i, q := range t.Queues {
		qids[i] = q.ID
	}
	_ = s.notifier.Queues(ctx, qids)
	out := []TopicDTO{topicDTO(t)}
	s.audit(c, "topic.update", t.Name, before, out[0])
	if err := s.fillTopicStats(ctx, out); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out[0])
}

func (s *Server) topicDelete(c echo.Context) error {
	name := c.Param("topic")
	if err := s.st.TopicDelete(c.Request().Context(), name); err != nil {
		return err
	}
	s.topics.Delete(name)
	s.audit(c, "topic.delete", name, map[string]string{"name": name}, nil)
	return c.NoContent(http.StatusNoContent)
}
