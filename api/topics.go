package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// TopicDTO is a topic as the admin API shows it.
// PublishedLastHour (messages) comes from the per-minute rollups. RetentionHours and
// RetentionPolicy are its retention settings; Retention, on a single topic's read
// only, what retention holds back and what strict retention dropped.
type TopicDTO struct {
	ID                int64                   `json:"id"`
	Name              string                  `json:"name"`
	Queues            []QueueDTO              `json:"queues"`
	PublishedLastHour int64                   `json:"published_last_hour"`
	RetentionHours    int                     `json:"retention_hours"`
	RetentionPolicy   string                  `json:"retention_policy"`
	Retention         *control.TopicRetention `json:"retention,omitempty"`
	CreatedAt         string                  `json:"created_at"`
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
	out := TopicDTO{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC().Format(control.TimeFormat), Queues: []QueueDTO{},
		PublishedLastHour: st.PublishedLastHour[t.ID], RetentionHours: t.RetentionHours, RetentionPolicy: string(t.RetentionPolicy)}
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

// topicResponse answers status with t, its stats and its retention state: a create
// answers exactly what a GET then shows.
func (s *Server) topicResponse(c echo.Context, status int, t *models.Topic) error {
	ctx := c.Request().Context()
	out, err := s.topicDTOs(ctx, []*models.Topic{t})
	if err != nil {
		return err
	}
	r, err := s.ctl.TopicRetention(ctx, t)
	if err != nil {
		return err
	}
	out[0].Retention = &r
	return c.JSON(status, out[0])
}

type topicCreateRequest struct {
	Name            string  `json:"name"`
	Queues          *int    `json:"queues"`
	RetentionHours  *int    `json:"retention_hours"`
	RetentionPolicy *string `json:"retention_policy"`
}

func (s *Server) topicCreate(c echo.Context) error {
	var req topicCreateRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	spec := control.TopicSpec{Name: req.Name, Queues: req.Queues, RetentionHours: req.RetentionHours}
	if req.RetentionPolicy != nil {
		spec.RetentionPolicy = models.RetentionPolicy(*req.RetentionPolicy)
	}
	t, err := s.ctl.CreateTopic(c.Request().Context(), actor(c), spec)
	if err != nil {
		return err
	}
	return s.topicResponse(c, http.StatusCreated, t)
}

func (s *Server) topicGet(c echo.Context) error {
	t, err := s.ctl.GetTopic(c.Request().Context(), c.Param("topic"))
	if err != nil {
		return err
	}
	return s.topicResponse(c, http.StatusOK, t)
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
// RetentionHours and RetentionPolicy replace the topic's retention.
type topicUpdateRequest struct {
	Queues          *int                    `json:"queues"`
	ReadOnlyQueues  *[]int64                `json:"read_only_queues"`
	RetentionHours  *int                    `json:"retention_hours"`
	RetentionPolicy *models.RetentionPolicy `json:"retention_policy"`
}

func (s *Server) topicUpdate(c echo.Context) error {
	var req topicUpdateRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	t, err := s.ctl.PatchTopic(c.Request().Context(), actor(c), c.Param("topic"), control.TopicPatch{Queues: req.Queues, ReadOnlyQueues: req.ReadOnlyQueues,
		RetentionHours: req.RetentionHours, RetentionPolicy: req.RetentionPolicy})
	if err != nil {
		return err
	}
	return s.topicResponse(c, http.StatusOK, t)
}

// topicDeleteResponse answers a forced delete that removed subscriptions: the
// topic's name and the groups that lost theirs.
type topicDeleteResponse struct {
	Name               string   `json:"name"`
	UnsubscribedGroups []string `json:"unsubscribed_groups"`
}

// topicDelete answers 204, or 200 naming the groups a `?force=true` unsubscribed.
func (s *Server) topicDelete(c echo.Context) error {
	force, err := boolQuery(c, "force")
	if err != nil {
		return err
	}
	groups, err := s.ctl.DeleteTopic(c.Request().Context(), actor(c), c.Param("topic"), force)
	if err != nil {
		return err
	}
	if len(groups) == 0 {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, topicDeleteResponse{Name: c.Param("topic"), UnsubscribedGroups: groups})
}

// boolQuery reads query parameter name as true or false (absent: false).
func boolQuery(c echo.Context, name string) (bool, error) {
	switch c.QueryParam(name) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/" + name, Detail: "must be true or false"}}}
}
