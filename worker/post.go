package worker

import (
	"context"
	"time"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/internal/signing"
	"github.com/heraldhq/herald/internal/stagetrace"
	"github.com/heraldhq/herald/internal/webhook"
	"github.com/heraldhq/herald/models"
)

// post sends one batch and classifies the answer (internal/webhook); for a failure
// it also returns the start of the response body. The timestamp and signature are
// made immediately before the POST. attempt gives each message's attempt number.
func (w *Worker) post(ctx context.Context, g *cachedGroup, topic string, attempt func(offset int64) int, msgs []models.Message) (webhook.Outcome, []byte) {
	p := &webhook.Post{URL: g.EndpointURL, ID: webhookID(g, msgs), Group: g.Name, Topic: topic, TraceID: msgs[0].TraceID,
		Auth: g.EndpointAuth, Signers: g.signers}
	if len(msgs) == 1 && g.BatchSize == 1 {
		m := msgs[0]
		p.Body, p.ContentType = m.Body, m.ContentType
		p.Message = &webhook.Message{Tag: m.Tag, Key: m.Key, Attempt: attempt(m.Offset), Headers: m.Headers}
	} else {
		p.Body, p.ContentType = envelope(topic, attempt, msgs), "application/json"
	}
	if g.PushAuth != nil {
		p.PushToken = func(ctx context.Context, id string, iat time.Time) (string, error) {
			return w.pushToken(ctx, g, id, iat)
		}
	}
	traceStart := stagetrace.Now()
	res, err := webhook.Send(ctx, w.client, p, time.Duration(g.TimeoutMS)*time.Millisecond, w.cfg.ResponseCapBytes)
	if !traceStart.IsZero() {
		done := time.Now()
		for _, m := range msgs {
			stagetrace.Mark(stagetrace.PostStart, traceStart, m.QueueID, m.Offset)
			stagetrace.Mark(stagetrace.PostDone, done, m.QueueID, m.Offset)
		}
	}
	if err != nil {
		w.log.Warn("make webhook request", "group", g.Name, "err", err)
		return webhook.Outcome{Kind: webhook.KindFailed, Class: delivery.ClassOther}, nil
	}
	switch res.Kind {
	case webhook.KindDelivered:
		return res.Outcome, nil
	case webhook.KindPartial:
		// The answer that named the failed messages is their attempts' excerpt.
		return res.Outcome, res.Head[:min(len(res.Head), webhook.ExcerptBytes)]
	}
	return res.Outcome, res.Head
}

// pushToken signs the push JWT of one POST (DESIGN §5): aud the group's audience,
// sub its name, jti the webhook-id, iat the webhook-timestamp.
func (w *Worker) pushToken(ctx context.Context, g *cachedGroup, id string, now time.Time) (string, error) {
	s, err := w.pushSigner(ctx)
	if err != nil {
		return "", err
	}
	return s.Sign(g.PushAudience(), g.Name, id, now)
}

// webhookID is a POST's webhook-id: the message id when it is sent alone at batch
// size 1, otherwise the batch id of its members.
func webhookID(g *cachedGroup, msgs []models.Message) string {
	if len(msgs) == 1 && g.BatchSize == 1 {
		return models.MessageID(msgs[0].QueueID, msgs[0].Offset)
	}
	return batchID(g.ID, msgs)
}

// cachedGroup is a group with its decoded signers: the current secret and, during a
// rotation's overlap window, the previous one.
type cachedGroup struct {
	*models.Group
	signers []*signing.Signer
}
