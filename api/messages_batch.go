package api

import (
	"cmp"
	"context"
	"slices"

	"github.com/heraldhq/herald/models"
)

// BatchDetailDTO is GET /api/v1/messages/{id} for a batch id `bat_…`: the group that
// sent it, its member message ids in (queue, offset) order and every recorded attempt
// of it, one per member and POST, oldest first.
type BatchDetailDTO struct {
	ID               string            `json:"id"`
	Group            string            `json:"group"`
	Messages         []string          `json:"messages"`
	DeliveryAttempts []BatchAttemptDTO `json:"delivery_attempts"`
}

// BatchAttemptDTO is one member message's attempt within a batch POST.
type BatchAttemptDTO struct {
	Message string `json:"message"`
	DeliveryAttemptDTO
}

// batchDetail loads a batch by its webhook-id from the attempt log. It returns an
// error wrapping models.ErrNotFound when no attempt of it is recorded (never sent,
// or past attempt retention).
func (s *Server) batchDetail(ctx context.Context, id string) (*BatchDetailDTO, error) {
	group, as, err := s.ctl.BatchAttempts(ctx, id)
	if err != nil {
		return nil, err
	}
	out := &BatchDetailDTO{ID: id, Group: group, Messages: []string{}, DeliveryAttempts: make([]BatchAttemptDTO, 0, len(as))}
	members := map[[2]int64]bool{}
	var keys [][2]int64
	for i, at := range as {
		a := attemptDTO(at)
		k := [2]int64{as[i].QueueID, as[i].Offset}
		if !members[k] {
			members[k] = true
			keys = append(keys, k)
		}
		out.DeliveryAttempts = append(out.DeliveryAttempts, BatchAttemptDTO{Message: models.MessageID(k[0], k[1]), DeliveryAttemptDTO: a})
	}
	slices.SortFunc(keys, func(a, b [2]int64) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	for _, k := range keys {
		out.Messages = append(out.Messages, models.MessageID(k[0], k[1]))
	}
	return out, nil
}
