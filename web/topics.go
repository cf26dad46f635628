package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

type topicRowView struct {
	Name              string
	Queues, ReadOnly  int
	Offsets           string
	PublishedLastHour int64
	CreatedAt         string
}

func (s *Console) consoleTopics(c echo.Context) error {
	return s.renderTopics(c, http.StatusOK, nil, nil, "")
}

func (s *Console) renderTopics(c echo.Context, status int, form, errs map[string]string, errLine string) error {
	ctx := c.Request().Context()
	ts, err := fetchPage(c, s.ctl.ListTopics)
	if err != nil {
		return err
	}
	dtos, err := s.topicViews(ctx, ts.Items)
	if err != nil {
		return err
	}
	page := newListForm([]topicRowView{}, ts.NextCursor, form, errs)
	for _, t := range dtos {
		row := topicRowView{Name: t.Name, Queues: len(t.Queues), PublishedLastHour: t.PublishedLastHour, CreatedAt: t.CreatedAt}
		var lo, hi int64
		for _, q := range t.Queues {
			if q.State == string(models.QueueReadOnly) {
				row.ReadOnly++
			}
			if q.MinOffset > 0 && (lo == 0 || q.MinOffset < lo) {
				lo = q.MinOffset
			}
			hi = max(hi, q.MaxOffset)
		}
		row.Offsets = fmt.Sprintf("%d–%d", lo, hi)
		page.Items = append(page.Items, row)
	}
	return s.render(c, status, "topics", "topics", "Topics", page, "", errLine)
}

// topicViews shows topics with their queues' offsets and last hour's publishes.
func (s *Console) topicViews(ctx context.Context, ts []*models.Topic) ([]topicView, error) {
	st, err := s.ctl.TopicStats(ctx, ts)
	if err != nil {
		return nil, err
	}
	return topicViewsOf(ts, st), nil
}

// topicViewsOf shows topics ts with their stats st.
func topicViewsOf(ts []*models.Topic, st control.TopicStats) []topicView {
	out := make([]topicView, 0, len(ts))
	for _, t := range ts {
		v := topicView{ID: t.ID, Name: t.Name, PublishedLastHour: st.PublishedLastHour[t.ID], CreatedAt: fmtTime(t.CreatedAt)}
		for _, q := range t.Queues {
			r := st.Offsets[q.ID]
			v.Queues = append(v.Queues, queueView{ID: q.ID, Position: q.Position, State: string(q.State), Node: q.NodeID, MinOffset: r.Min, MaxOffset: r.Max})
		}
		out = append(out, v)
	}
	return out
}

// queueCount reads the form's queue count; a non-number is a field error.
func queueCount(c echo.Context) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(c.FormValue("queues")))
	if err != nil {
		return 0, &models.ValidationError{Errors: []models.FieldError{{Pointer: "/queues", Detail: "must be a whole number"}}}
	}
	return n, nil
}

func (s *Console) consoleTopicCreate(c echo.Context) error {
	form := map[string]string{"name": c.FormValue("name"), "queues": c.FormValue("queues")}
	n, err := queueCount(c)
	var t *models.Topic
	if err == nil {
		t, err = s.ctl.CreateTopic(c.Request().Context(), actorOf(c), control.TopicSpec{Name: form["name"], Queues: &n})
	}
	if err != nil {
		return rerender(err, func(fields map[string]string, line string) error {
			return s.renderTopics(c, http.StatusUnprocessableEntity, form, fields, line)
		})
	}
	return redirectWith(c, consolePath+"/topics/"+t.Name, "Topic "+t.Name+" created.")
}

type messageFilterForm struct {
	Key, Tag, From, To string
}

type topicPage struct {
	Topic       topicView
	Subscribers []string
	Chart       any
	Filter      messageFilterForm
	FilterError string
	Messages    []messageSummaryView
	NextURL     string
	Errors      map[string]string
	Retention   control.TopicRetention
	// Moves are the topic's queues sealed by a move and not yet retired.
	Moves []control.MoveProgress
	// NodesDown words each down db node holding the topic's queues (nodesDownLines).
	NodesDown []string
	// Waiting are the first delayed messages waiting for their time, of
	// WaitingCount in all.
	Waiting      []delayedView
	WaitingCount int64
}

func (s *Console) consoleTopic(c echo.Context) error {
	return s.renderTopic(c, http.StatusOK, map[string]string{}, "")
}

func (s *Console) renderTopic(c echo.Context, status int, errs map[string]string, errLine string) error {
	ctx := c.Request().Context()
	name := c.Param("topic")
	d, err := s.ctl.TopicDetail(ctx, name)
	if err != nil {
		return err
	}
	page := topicPage{Topic: topicViewsOf([]*models.Topic{d.Topic}, d.Stats)[0], Subscribers: d.Subscribers, Chart: statsChart(d.Series, true),
		Errors: errs, Retention: d.Retention, NodesDown: nodesDownLines(d.Unreachable),
		Filter: messageFilterForm{Key: c.QueryParam("key"), Tag: c.QueryParam("tag"), From: c.QueryParam("from"), To: c.QueryParam("to")}}
	q, err := control.ParseMessageQuery(control.MessageQueryParams{Key: c.QueryParam("key"), Tag: c.QueryParam("tag"),
		From: c.QueryParam("from"), To: c.QueryParam("to"), Limit: c.QueryParam("limit"), Cursor: c.QueryParam("cursor")})
	if err != nil {
		page.FilterError = err.Error()
	} else {
		list, err := s.ctl.BrowseMessages(ctx, name, q)
		if err != nil {
			return err
		}
		page.Messages = control.Map(list, messageSummaryViewOf).Items
		page.NextURL = nextURL(c, consolePath+"/topics/"+url.PathEscape(name), list.NextCursor)
	}
	if page.Moves, err = s.ctl.TopicMoveProgress(ctx, d.Topic); err != nil {
		return err
	}
	waiting, n, err := s.ctl.WaitingDelayed(ctx, d.Topic, waitingShown)
	if err != nil {
		return err
	}
	page.WaitingCount = n
	for i := range waiting {
		page.Waiting = append(page.Waiting, delayedViewOf(&waiting[i]))
	}
	return s.render(c, status, "topic", "topics", "Topic "+name, page, "", errLine)
}

func (s *Console) consoleTopicQueues(c echo.Context) error {
	n, err := queueCount(c)
	var t *models.Topic
	if err == nil {
		t, err = s.ctl.PatchTopic(c.Request().Context(), actorOf(c), c.Param("topic"), control.TopicPatch{Queues: &n})
	}
	if err == nil {
		return redirectWith(c, consolePath+"/topics/"+t.Name, fmt.Sprintf("Topic %s now has %d queues.", t.Name, len(t.Queues)))
	}
	return rerender(err, func(fields map[string]string, line string) error {
		return s.renderTopic(c, http.StatusUnprocessableEntity, fields, line)
	})
}

// consoleTopicMove moves the topic to the form's node (control.MoveTopic).
func (s *Console) consoleTopicMove(c echo.Context) error {
	node, err := strconv.ParseInt(strings.TrimSpace(c.FormValue("to_node")), 10, 64)
	if err != nil || node < 1 {
		return s.renderTopic(c, http.StatusUnprocessableEntity, map[string]string{"/to_node": "a db node id"}, "")
	}
	t, err := s.ctl.MoveTopic(c.Request().Context(), actorOf(c), c.Param("topic"), node)
	if err == nil {
		return redirectWith(c, consolePath+"/topics/"+t.Name, fmt.Sprintf("Topic %s is moving to node %d: its old queues drain, then retire.", t.Name, node))
	}
	return rerender(err, func(fields map[string]string, line string) error {
		return s.renderTopic(c, http.StatusUnprocessableEntity, fields, line)
	})
}

// consoleTopicDelete deletes the topic; the form's force box also removes the
// subscriptions of the groups on it, which the notice names.
func (s *Console) consoleTopicDelete(c echo.Context) error {
	name := c.Param("topic")
	groups, err := s.ctl.DeleteTopic(c.Request().Context(), actorOf(c), name, c.FormValue("force") == "true")
	if err != nil {
		if status, _, _ := describe(err); status == http.StatusConflict {
			_, line, _ := formErrors(err)
			return s.renderTopic(c, http.StatusConflict, map[string]string{}, line)
		}
		return err
	}
	notice := "Topic " + name + " deleted."
	if len(groups) > 0 {
		notice += " Groups that lost their subscription: " + strings.Join(groups, ", ") + "."
	}
	return redirectWith(c, consolePath+"/topics", notice)
}

// consoleTopicRetention sets the topic's retention hours and policy.
func (s *Console) consoleTopicRetention(c echo.Context) error {
	hours, err := strconv.Atoi(strings.TrimSpace(c.FormValue("retention_hours")))
	if err != nil {
		return s.renderTopic(c, http.StatusUnprocessableEntity, map[string]string{"/retention_hours": "a whole number of hours"}, "")
	}
	policy := models.RetentionPolicy(c.FormValue("retention_policy"))
	t, err := s.ctl.PatchTopic(c.Request().Context(), actorOf(c), c.Param("topic"), control.TopicPatch{RetentionHours: &hours, RetentionPolicy: &policy})
	if err == nil {
		return redirectWith(c, consolePath+"/topics/"+t.Name, fmt.Sprintf("Topic %s keeps messages %d h (%s).", t.Name, t.RetentionHours, t.RetentionPolicy))
	}
	return rerender(err, func(fields map[string]string, line string) error {
		return s.renderTopic(c, http.StatusUnprocessableEntity, fields, line)
	})
}

type messagePage struct {
	M      *messageView
	Body   string
	Base64 bool
	// Groups subscribe to the message's topic: the resend form's choices.
	Groups []string
}

func (s *Console) consoleMessage(c echo.Context) error {
	if models.IsBatchID(c.Param("id")) {
		return s.consoleBatch(c)
	}
	if models.IsDelayedID(c.Param("id")) {
		return s.consoleDelayed(c)
	}
	m, err := s.ctl.GetMessage(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	sum := messageSummaryViewOf(control.MessageSummary{QueueID: m.Message.QueueID, Offset: m.Message.Offset, Tag: m.Message.Tag,
		Key: m.Message.Key, ContentType: m.Message.ContentType, BodyBytes: int64(len(m.Message.Body)), CreatedAt: m.Message.CreatedAt})
	v := &messageView{messageSummaryView: sum, Topic: m.Topic, Headers: m.Message.Headers, TraceID: m.Message.TraceID,
		DeliveryAttempts: attemptViews(m.Attempts, m.GroupNames)}
	page := messagePage{M: v}
	if page.Groups, err = s.subscriberNames(c, m.Topic); err != nil {
		return err
	}
	page.Body, page.Base64 = bodyText(m.Message.ContentType, m.Message.Body)
	return s.render(c, http.StatusOK, "message", "topics", "Message "+v.ID, page, "", "")
}

// bodyText is a message body as a page shows it: indented JSON for a JSON content
// type that holds valid JSON, else base64 (b64 true).
func bodyText(contentType string, body []byte) (text string, b64 bool) {
	ct := strings.ToLower(contentType)
	var buf bytes.Buffer
	if (strings.HasPrefix(ct, "application/json") || strings.Contains(ct, "+json")) && json.Indent(&buf, body, "", "  ") == nil {
		return buf.String(), false
	}
	return base64.StdEncoding.EncodeToString(body), true
}
