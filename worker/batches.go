package worker

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/internal/delivery"
	"github.com/heraldhq/herald/models"
)

// splitBatches cuts msgs (offset order) into POSTs of at most size messages and
// maxBytes of bodies; a single message larger than maxBytes goes alone.
func splitBatches(msgs []models.Message, size, maxBytes int) [][]models.Message {
	var out [][]models.Message
	var cur []models.Message
	curBytes := 0
	for _, m := range msgs {
		if len(cur) > 0 && (len(cur) >= size || curBytes+len(m.Body) > maxBytes) {
			out = append(out, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, m)
		curBytes += len(m.Body)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// splitJob cuts a job's messages into POSTs. A retry job with batch keys first
// parts its messages by key (the failed POST each came from, in order of first
// offset), so a batch that failed is sent again with the same members.
func splitJob(j delivery.Job, offsets []int64, msgs []models.Message, size, maxBytes int) [][]models.Message {
	if !j.Retry || len(j.BatchKeys) != len(offsets) {
		return splitBatches(msgs, size, maxBytes)
	}
	keyOf := make(map[int64]int64, len(offsets))
	for i, o := range offsets {
		keyOf[o] = j.BatchKeys[i]
	}
	var order []int64
	parts := map[int64][]models.Message{}
	for _, m := range msgs {
		k := keyOf[m.Offset]
		if _, ok := parts[k]; !ok {
			order = append(order, k)
		}
		parts[k] = append(parts[k], m)
	}
	var out [][]models.Message
	for _, k := range order {
		out = append(out, splitBatches(parts[k], size, maxBytes)...)
	}
	return out
}

var lowerBase32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// batchID is `bat_` + the first 26 base32 characters (lower case) of SHA-256 over
// the group id and the member message ids: stable across re-sends of the same batch.
func batchID(group int64, msgs []models.Message) string {
	h := sha256.New()
	h.Write(strconv.AppendInt(nil, group, 10))
	for _, m := range msgs {
		h.Write([]byte{0})
		h.Write([]byte(models.MessageID(m.QueueID, m.Offset)))
	}
	return "bat_" + strings.ToLower(lowerBase32.EncodeToString(h.Sum(nil))[:26])
}

// envelope renders a batch > 1 as {"messages":[…]}: JSON bodies embedded as the
// exact bytes published (no re-encoding, no HTML escaping), others as body_base64.
func envelope(topic string, attempt func(offset int64) int, msgs []models.Message) []byte {
	size := 16
	for _, m := range msgs {
		size += len(m.Body)*4/3 + 256
	}
	b := make([]byte, 0, size)
	b = append(b, `{"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":"`...)
		b = append(b, models.MessageID(m.QueueID, m.Offset)...)
		b = append(b, `","topic":`...)
		b = appendString(b, topic)
		b = append(b, `,"queue":`...)
		b = strconv.AppendInt(b, m.QueueID, 10)
		b = append(b, `,"offset":`...)
		b = strconv.AppendInt(b, m.Offset, 10)
		b = append(b, `,"tag":`...)
		b = appendString(b, m.Tag)
		b = append(b, `,"key":`...)
		b = appendString(b, m.Key)
		b = append(b, `,"headers":`...)
		if len(m.Headers) == 0 {
			b = append(b, "{}"...)
		} else {
			hb, _ := json.Marshal(m.Headers)
			b = append(b, hb...)
		}
		b = append(b, `,"published_at":"`...)
		b = time.UnixMilli(m.CreatedAt).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, `","attempt":`...)
		b = strconv.AppendInt(b, int64(attempt(m.Offset)), 10)
		b = append(b, `,"content_type":`...)
		b = appendString(b, m.ContentType)
		if isJSON(m.ContentType) && json.Valid(m.Body) {
			b = append(b, `,"body":`...)
			b = append(b, m.Body...)
		} else {
			b = append(b, `,"body_base64":"`...)
			b = base64.StdEncoding.AppendEncode(b, m.Body)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func isJSON(ct string) bool {
	ct, _, _ = strings.Cut(ct, ";")
	ct = strings.TrimSpace(strings.ToLower(ct))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
