package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
	"github.com/heraldhq/herald/models/store"
)

type topicRowView struct {
	Name              string
	Queues, ReadOnly  int
	Offsets           string
	PublishedLastHour int64
	CreatedAt         string
}

type topicsPage struct {
	Items  []topicRowView
	Next   string
	Form   map[string]string
	Errors map[string]string
}

func (s *Server) consoleTopics(c echo.Context) error {
	return s.renderTopics(c, http.StatusOK, map[string]string{}, map[string]string{}, "")
}

func (s *Server) renderTopics(c echo.Context, status int, form, errs map[string]string, errLine string) error {
	ctx := c.Request().Context()
	after, limit, err := listPage(c)
	if err != nil {
		return err
	}
	ts, err := s.st.TopicList(ctx, after, limit)
	if err != nil {
		return err
	}
	dtos := make([]TopicDTO, len(ts))
	for i, t := range ts {
		dtos[i] = topicDTO(t)
	}
	if err := s.fillTopicStats(ctx, dtos); err != nil {
		return err
	}
	page := topicsPage{Form: form, Errors: errs}
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
	if len(ts) > 0 {
		page.Next = nextCursor(ts[len(ts)-1].ID, len(ts), limit)
	}
	return s.render(c, status, "topics", "topics", "Topics", page, "", errLine)
}

func (s *Server) consoleTopicCreate(c echo.Context) error {
	form := map[string]string{"name": c.FormValue("name"), "queues": c.FormValue("queues")}
	n, err := strconv.Atoi(strings.TrimSpace(form["queues"]))
	if err != nil {
		return s.renderTopics(c, http.StatusUnprocessableEntity, form, map[string]string{"/queues": "must be a whole number"}, "")
	}
	t, err := s.st.TopicCreate(c.Request().Context(), form["name"], n)
	if err != nil {
		fields, line, ok := formErrors(err)
		if !ok {
			return err
		}
		return s.renderTopics(c, http.StatusUnprocessableEntity, form, fields, line)
	}
	s.audit(c, "topic.create", t.Name, nil, topicDTO(t))
	return redirectWith(c, consolePath+"/topics/"+t.Name, "Topic "+t.Name+" created.")
}

type messageFilterForm struct {
	Key, Tag, From, To string
}

type topicPage struct {
	Topic       TopicDTO
	Subscribers []string
	Chart       any
	Filter      messageFilterForm
	FilterError string
	Messages    []MessageSummaryDTO
	NextURL     string
	Errors      map[string]string
}

func (s *Server) consoleTopic(c echo.Context) error {
	return s.renderTopic(c, http.StatusOK, map[string]string{}, "")
}

func (s *Server) renderTopic(c echo.Context, status int, errs map[string]string, errLine string) error {
	ctx := c.Request().Context()
	name := c.Param("topic")
	t, err := s.st.TopicGetByName(ctx, name)
	if err != nil {
		return err
	}
	dtos := []TopicDTO{topicDTO(t)}
	if err := s.fillTopicStats(ctx, dtos); err != nil {
		return err
	}
	subs, err := s.st.TopicSubscribers(ctx, t.ID)
	if err != nil {
		return err
	}
	now := time.Now()
	points, err := s.st.StatsSeries(ctx, store.StatsScope{TopicID: t.ID}, now.Add(-overviewHours*time.Hour), now.Add(time.Minute))
	if err != nil {
		return err
	}
	page := topicPage{Topic: dtos[0], Subscribers: subs, Chart: statsChart(points, true), Errors: errs,
		Filter: messageFilterForm{Key: c.QueryParam("key"), Tag: c.QueryParam("tag"), From: c.QueryParam("from"), To: c.QueryParam("to")}}
	q, err := parseMessageQuery(c)
	if err != nil {
		page.FilterError = err.Error()
	} else {
		_, list, err := s.browseMessages(ctx, name, q)
		if err != nil {
			return err
		}
		page.Messages = list.Items
		if list.NextCursor != "" {
			v := c.QueryParams()
			v.Set("cursor", list.NextCursor)
			page.NextURL = consolePath + "/topics/" + url.PathEscape(name) + "?" + v.Encode()
		}
	}
	return s.render(c, status, "topic", "topics", "Topic "+name, page, "", errLine)
}

func (s *Server) consoleTopicQueues(c echo.Context) error {
	ctx := c.Request().Context()
	t, err := s.st.TopicGetByName(ctx, c.Param("topic"))
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(c.FormValue("queues")))
	if err == nil {
		before := topicDTO(t)
		err = s.st.TopicAddQueues(ctx, t, n)
		if err == nil {
			s.topics.Delete(t.Name)
			s.audit(c, "topic.update", t.Name, before, topicDTO(t))
			return redirectWith(c, consolePath+"/topics/"+t.Name, fmt.Sprintf("Topic %s now has %d queues.", t.Name, len(t.Queues)))
		}
	} else {
		err = &models.ValidationError{Errors: []models.FieldError{{Pointer: "/queues", Detail: "must be a whole number"}}}
	}
	fields, line, ok := formErrors(err)
	if !ok {
		return err
	}
	return s.renderTopic(c, http.StatusUnprocessableEntity, fields, line)
}

func (s *Server) consoleTopicDelete(c echo.Context) error {
	name := c.Param("topic")
	if err := s.st.TopicDelete(c.Request().Context(), name); err != nil {
		if _, line, ok := formErrors(err); ok && fromError(err).Status == http.StatusConflict {
			return s.renderTopic(c, http.StatusConflict, map[string]string{}, line)
		}
		return err
	}
	s.topics.Delete(name)
	s.audit(c, "topic.delete", name, map[string]string{"name": name}, nil)
	return redirectWith(c, consolePath+"/topics", "Topic "+name+" deleted.")
}

type messagePage struct {
	M      *MessageDetailDTO
	Body   string
	Base64 bool
}

func (s *Server) consoleMessage(c echo.Context) error {
	d, err := s.messageDetail(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	page := messagePage{M: d}
	if d.Body != nil {
		var buf bytes.Buffer
		if json.Indent(&buf, d.Body, "", "  ") == nil {
			page.Body = buf.String()
		} else {
			page.Body = string(d.Body)
		}
	} else if d.BodyBase64 != nil {
		page.Body, page.Base64 = *d.BodyBase64, true
	}
	return s.render(c, http.StatusOK, "message", "topics", "Message "+d.ID, page, "", "")
}
