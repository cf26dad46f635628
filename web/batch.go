package web

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/models"
)

// batchPage is a batch POST (webhook-id bat_…) as the attempt log records it: the
// group it went to, its member messages in (queue, offset) order and every attempt,
// one row per member and POST, oldest first.
type batchPage struct {
	ID       string
	Group    string
	Messages []string
	Attempts []attemptView
}

// consoleBatch shows a batch found by its webhook-id in the attempt log; one never
// sent, or past attempt retention, is not found.
func (s *Console) consoleBatch(c echo.Context) error {
	id := c.Param("id")
	group, as, err := s.ctl.BatchAttempts(c.Request().Context(), id)
	if err != nil {
		return err
	}
	page := batchPage{ID: id, Group: group}
	names := map[int64]string{}
	var members [][2]int64
	for _, a := range as {
		names[a.GroupID] = group
		if k := [2]int64{a.QueueID, a.Offset}; !slices.Contains(members, k) {
			members = append(members, k)
		}
	}
	slices.SortFunc(members, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range members {
		page.Messages = append(page.Messages, models.MessageID(k[0], k[1]))
	}
	page.Attempts = attemptViews(as, names)
	return s.render(c, http.StatusOK, "batch", "groups", "Batch "+id, page, "", "")
}
