package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// waitingShown is how many waiting delayed messages a topic's page lists.
const waitingShown = 20

// delayedView is a delayed message waiting for its time, as the console shows it.
type delayedView struct {
	ID, DeliverAt, PublishedAt, Tag, Key, ContentType string
	BodyBytes                                         int64
}

func delayedViewOf(m *models.DelayedMessage) delayedView {
	return delayedView{ID: models.DelayedID(m.ID), DeliverAt: fmtTime(m.DeliverAt), PublishedAt: msTime(m.CreatedAt),
		Tag: m.Tag, Key: m.Key, ContentType: m.ContentType, BodyBytes: int64(len(m.Body))}
}

type delayedPage struct {
	M       delayedView
	Topic   string
	Headers map[string]string
	Body    string
	Base64  bool
}

// consoleDelayed shows a delayed message while it waits, with its due time and,
// for operators, a cancel button; once moved into its queue or cancelled it is a
// 404 that says so.
func (s *Console) consoleDelayed(c echo.Context) error {
	m, topic, err := s.ctl.GetDelayed(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	page := delayedPage{M: delayedViewOf(m), Topic: topic, Headers: m.Headers}
	page.Body, page.Base64 = bodyText(m.ContentType, m.Body)
	return s.render(c, http.StatusOK, "delayed", "topics", "Delayed message "+page.M.ID, page, "", "")
}

// consoleMessageCancel cancels a delayed message before its time and returns to
// its topic's page.
func (s *Console) consoleMessageCancel(c echo.Context) error {
	ctx, id := c.Request().Context(), c.Param("id")
	_, topic, err := s.ctl.GetDelayed(ctx, id)
	if err == nil {
		err = s.ctl.CancelDelayed(ctx, actorOf(c), id)
	}
	if err != nil {
		return err
	}
	return redirectWith(c, consolePath+"/topics/"+topic, "Delayed message "+id+" cancelled; it will not be delivered.")
}
