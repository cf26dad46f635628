package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/models"
)

// GroupAttemptDTO is one delivery attempt of a group (GET
// /api/v1/groups/{group}/attempts): the message it carried (or, for a batch, the
// member message this row records), its queue and offset, and the attempt.
type GroupAttemptDTO struct {
	MessageID string `json:"message_id"`
	Queue     int64  `json:"queue"`
	Offset    int64  `json:"offset"`
	DeliveryAttemptDTO
}

func groupAttemptDTO(r control.AttemptRecord) GroupAttemptDTO {
	return GroupAttemptDTO{MessageID: models.MessageID(r.QueueID, r.Offset), Queue: r.QueueID, Offset: r.Offset,
		DeliveryAttemptDTO: attemptDTO(r.DeliveryAttempt)}
}

// groupAttempts lists a group's attempts newest first, filtered by ?status=,
// ?status_class=, ?error_class=, ?since= and ?until=, paged by ?limit= and ?cursor=.
func (s *Server) groupAttempts(c echo.Context) error {
	q, err := control.ParseAttemptQuery(control.AttemptQuery{Status: c.QueryParam("status"), StatusClass: c.QueryParam("status_class"),
		ErrorClass: c.QueryParam("error_class"), Since: c.QueryParam("since"), Until: c.QueryParam("until"),
		Limit: c.QueryParam("limit"), Cursor: c.QueryParam("cursor")})
	if err != nil {
		return err
	}
	page, err := s.ctl.SearchAttempts(c.Request().Context(), c.Param("group"), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, listOf(page, groupAttemptDTO))
}
