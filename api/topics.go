package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// TopicDTO is a topic as the admin API shows it.
// PublishedLastHour (messages) comes from the per-minute rollups.
type TopicDTO struct {
	ID                int64      `json:"id"`
	Name              string     `json:"name"`
	Queues            []QueueDTO `json:"queues"`
	PublishedLastHour int64      `json:"published_last_hour"`
	CreatedAt         string     `json:"created_at"`
}

// QueueDTO is one queue of a topic. MinOffset and MaxOffset are the lowest and
// highest offsets it holds (0 when empty), filled by reads of the admin API.
type QueueDTO struct {
	ID        int64  `json:"id"`
	Position  int    `json:"position"`
	State     string `json:"state"`
	Node      int64  `json:"node"`
	MinOffset int64  `json:"min_offset"`
	MaxOffset int64  `json:"max_offset"`
}

func topicDTO(t *models.Topic, st control.TopicStats) TopicDTO {
	out := TopicDTO{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC().Format(timeFormat), Queues: []QueueDTO{},
		PublishedLastHour: st.PublishedLastHour[t.ID]}
	for _, q := range t.Queues {
		r := st.Offsets[q.ID]
		out.Queues = append(out.Queues, QueueDTO{ID: q.ID, Position: q.Position, State: string(q.State), Node: q.NodeID,
			MinOffset: r.Min, MaxOffset: r.Max})
	}
	return out
}

// topicDTOs converts topics with their stats (two statements whatever their number).
func (s *Server) topicDTOs(ctx context.Context, ts []*models.Topic) ([]TopicDTO, error) {
	st, err := s.ctl.TopicStats(ctx, ts)
	if err != nil {
		return nil, err
	}
	out := make([]TopicDTO, 0, len(ts))
	for _, t := range ts {
		out = append(out, topicDTO(t, st))
	}
	return out, nil
}

// topicResponse answers with t and its stats.
func (s *Server) topicResponse(c echo.Context, t *models.Topic) error {
	out, err := s.topicDTOs(c.Request().Context(), []*models.Topic{t})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out[0])
}

type topicCreateRequest struct {
	Name   string `json:"name"`
	Queues *int   `json:"queues"`
}

func (s *Server) topicCreate(c echo.Context) error {
	var req topicCreateRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	t, err := s.ctl.CreateTopic(c.Request().Context(), actor(c), control.TopicSpec{Name: req.Name, Queues: req.Queues})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, topicDTO(t, control.TopicStats{}))
}

func (s *Server) topicGet(c echo.Context) error {
	t, err := s.st.TopicGetByName(c.Request().Context(), c.Param("topic"))
	if err != nil {
		return err
	}
	return s.topicResponse(c, t)
}

func (s *Server) topicList(c echo.Context) error {
	p, err := listPage(c)
	if err != nil {
		return err
	}
	page, err := s.ctl.ListTopics(c.Request().Context(), p)
	if err != nil {
		return err
	}
	items, err := s.topicDTOs(c.Request().Context(), page.Items)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listResponse[TopicDTO]{Items: items, NextCursor: page.NextCursor})
}

// topicUpdateRequest is a merge patch of a topic: Queues grows the topic to that many
// queues; ReadOnlyQueues lists the queue ids that take no publishes (replaced whole).
type topicUpdateRequest struct {
	Queues         *int     `json:"queues"`
	ReadOnlyQueues *[]int64 `json:"read_only_queues"`
}

func (s *Server) topicUpdate(c echo.Context) error {
	var req topicUpdateRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	t, err := s.ctl.PatchTopic(c.Request().Context(), actor(c), c.Param("topic"), control.TopicPatch{Queues: req.Queues, ReadOnlyQueues: req.ReadOnlyQueues})
	if err != nil {
		return err
	}
	return s.topicResponse(c, t)
}

func (s *Server) topicDelete(c echo.Context) error {
	if err := s.ctl.DeleteTopic(c.Request().Context(), actor(c), c.Param("topic")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
