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
	// Moves, on a single topic's read only, lists the queues a move sealed that
	// are not retired yet, with what each group still owes them.
	Moves     []MoveDTO `json:"moves,omitempty"`
	CreatedAt string    `json:"created_at"`
}

// MoveDTO is one queue a move sealed: From (the sealed queue), To (the queue its
// key slots went to), Slots (how many), Watermark (its last offset; -1 while
// sealing), State (sealing or draining) and, per group, what it still owes.
type MoveDTO struct {
	From      int64         `json:"from_queue"`
	To        int64         `json:"to_queue"`
	Slots     int           `json:"slots"`
	Watermark int64         `json:"watermark"`
	State     string        `json:"state"`
	Groups    []MoveOwedDTO `json:"groups"`
}

// MoveOwedDTO is what one group owes a sealed queue: Remaining messages at most
// (watermark minus committed offset, plus ids listed as not done) and Retries (its
// retry rows on the queue).
type MoveOwedDTO struct {
	Group     string `json:"group"`
	Committed int64  `json:"committed_offset"`
	Remaining int64  `json:"remaining"`
	Retries   int64  `json:"retries"`
}

// QueueDTO is one queue of a topic. MinOffset and MaxOffset are the lowest and
// highest offsets it holds (0 when empty), filled by reads of the admin API.
// UnreachableSince, present only while the queue's db node does not answer, is
// since when (RFC 3339 UTC); its offsets then read 0 (unknown).
type QueueDTO struct {
	ID               int64   `json:"id"`
	Position         int     `json:"position"`
	State            string  `json:"state"`
	Node             int64   `json:"node"`
	MinOffset        int64   `json:"min_offset"`
	MaxOffset        int64   `json:"max_offset"`
	UnreachableSince *string `json:"unreachable_since,omitempty"`
}

func topicDTO(t *models.Topic, st control.TopicStats) TopicDTO {
	out := TopicDTO{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC().Format(control.TimeFormat), Queues: []QueueDTO{},
		PublishedLastHour: st.PublishedLastHour[t.ID], RetentionHours: t.RetentionHours, RetentionPolicy: string(t.RetentionPolicy)}
	for _, q := range t.Queues {
		r := st.Offsets[q.ID]
		d := QueueDTO{ID: q.ID, Position: q.Position, State: string(q.State), Node: q.NodeID, MinOffset: r.Min, MaxOffset: r.Max}
		if h, down := st.NodesDown[q.NodeID]; down {
			d.UnreachableSince = nodeHealthDTO(h).Since
		}
		out.Queues = append(out.Queues, d)
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
	moves, err := s.ctl.TopicMoveProgress(ctx, t)
	if err != nil {
		return err
	}
	for _, m := range moves {
		d := MoveDTO{From: m.From, To: m.To, Slots: m.Slots, Watermark: m.Watermark, State: m.State, Groups: []MoveOwedDTO{}}
		for _, g := range m.Groups {
			d.Groups = append(d.Groups, MoveOwedDTO{Group: g.Group, Committed: g.Committed, Remaining: g.Remaining, Retries: g.Retries})
		}
		out[0].Moves = append(out[0].Moves, d)
	}
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
	// SpreadKeys asks growth to remap key slots over the old and new queues: not
	// built yet, so true is refused (false is what growth does).
	SpreadKeys *bool `json:"spread_keys"`
}

func (s *Server) topicUpdate(c echo.Context) error {
	var req topicUpdateRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	if req.SpreadKeys != nil && *req.SpreadKeys {
		return problem(ProblemNotBuilt, "spread_keys (remapping key slots onto a grown topic's new queues) is not built yet; growth keeps every key on its queue, or move the topic to re-home it")
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

type topicMoveRequest struct {
	ToNode *int64 `json:"to_node"`
}

// topicMove moves a topic's queues to a db node (control.MoveTopic) and answers 202
// with the topic and its move progress.
func (s *Server) topicMove(c echo.Context) error {
	var req topicMoveRequest
	if err := bodyOf(c, 64<<10, &req); err != nil {
		return err
	}
	if req.ToNode == nil {
		return &models.ValidationError{Errors: []models.FieldError{{Pointer: "/to_node", Detail: "the id of the db node to move the topic to is required"}}}
	}
	t, err := s.ctl.MoveTopic(c.Request().Context(), actor(c), c.Param("topic"), *req.ToNode)
	if err != nil {
		return err
	}
	return s.topicResponse(c, http.StatusAccepted, t)
}
