package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
)

// subscriberNames returns the names of the groups subscribed to topic, for the
// message page's resend form.
func (s *Console) subscriberNames(c echo.Context, topic string) ([]string, error) {
	var out []string
	p := control.PageRequest{Limit: 500}
	for {
		gs, err := s.ctl.ListGroups(c.Request().Context(), p)
		if err != nil {
			return nil, err
		}
		for _, g := range gs.Items {
			for _, sub := range g.Subscriptions {
				if sub.Topic == topic {
					out = append(out, g.Name)
				}
			}
		}
		if gs.NextCursor == "" || len(gs.Items) == 0 {
			return out, nil
		}
		p.After = gs.Items[len(gs.Items)-1].ID
	}
}

// consoleMessageResend sends the message to the chosen group again (control.ResendMessage).
func (s *Console) consoleMessageResend(c echo.Context) error {
	id, group := c.Param("id"), c.FormValue("group")
	res, err := s.ctl.ResendMessage(c.Request().Context(), actorOf(c), group, id)
	if err != nil {
		return rerender(err, func(_ map[string]string, line string) error {
			return failure(http.StatusUnprocessableEntity, line)
		})
	}
	notice := fmt.Sprintf("Queued for %s: it is sent again through the retry topic under the same webhook-id.", group)
	if res.Queued == 0 {
		notice = fmt.Sprintf("Already waiting in the retry topic of %s.", group)
	}
	return redirectWith(c, consolePath+"/messages/"+id, notice)
}
