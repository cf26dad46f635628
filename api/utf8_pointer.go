package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/heraldhq/herald/models"
)

// refuseInvalidText returns a 422 validation problem naming, by JSON pointer, the
// first member name or string of body that is not Unicode text (invalidTextPointer),
// or nil. Every JSON request passes it before it is decoded.
func refuseInvalidText(body []byte) error {
	ptr, bad := invalidTextPointer(body)
	if !bad {
		return nil
	}
	p := problem(ProblemValidation, "the request holds invalid UTF-8")
	p.Errors = []models.FieldError{{Pointer: ptr, Detail: "must be valid UTF-8 (raw bytes, or \\u escapes of whole surrogate pairs)"}}
	return p
}

// invalidTextPointer returns the JSON pointer of the first member name or string of
// body that is not Unicode text ("" for the document itself), and bad false when
// there is none. Not text are raw bytes that are not UTF-8 and \u escapes of a lone
// UTF-16 surrogate (`"\ud800"` without its low half, or a low half alone), which no
// UTF-8 string can hold: encoding/json (v1 semantics, also under GOEXPERIMENT=jsonv2)
// would silently turn either into U+FFFD, so Herald would store and deliver text
// nobody sent. Inside a value the api keeps as raw JSON (keptRaw: message bodies are
// stored and delivered byte for byte) lone surrogate escapes stay as sent; raw
// invalid bytes are refused there too.
//
// Valid input costs one utf8.Valid and one scan for backslashes; only a suspect body
// is walked token by token. Malformed JSON reports bad false (the decoder's error
// tells the client more).
func invalidTextPointer(body []byte) (pointer string, bad bool) {
	if utf8.Valid(body) && firstLoneSurrogate(body) < 0 {
		return "", false
	}
	var st []frame
	ptr := func() string {
		var b []byte
		for _, f := range st {
			b = append(b, '/')
			if f.obj {
				b = append(b, models.PointerEscape(f.key)...)
			} else {
				b = strconv.AppendInt(b, int64(f.idx), 10)
			}
		}
		return string(b)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		raw := body[before:dec.InputOffset()] // the token and the separators before it
		hit := !utf8.Valid(raw) || (firstLoneSurrogate(raw) >= 0 && !keptRaw(st))
		var top *frame
		if len(st) > 0 {
			top = &st[len(st)-1]
		}
		if s, isStr := tok.(string); isStr && top != nil && top.obj && top.wantKey {
			top.key, top.wantKey = s, false
			if hit {
				return ptr(), true
			}
			continue
		}
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			st = st[:len(st)-1]
			if len(st) > 0 && st[len(st)-1].obj {
				st[len(st)-1].wantKey = true
			}
			continue
		}
		if top != nil && !top.obj {
			top.idx++
		}
		if hit {
			return ptr(), true
		}
		switch tok {
		case json.Delim('{'):
			st = append(st, frame{obj: true, wantKey: true})
		case json.Delim('['):
			st = append(st, frame{idx: -1})
		default:
			if top != nil && top.obj {
				top.wantKey = true
			}
		}
	}
}

// frame is one open object or array of invalidTextPointer's walk: an object's
// current member name (wantKey: the next string is a name), an array's index.
type frame struct {
	obj     bool
	key     string
	idx     int
	wantKey bool
}

// keptRaw reports whether the walk is inside a value the api decodes as
// json.RawMessage and keeps byte for byte: a message body (/messages/<i>/body) or a
// test send's body (/body).
func keptRaw(st []frame) bool {
	at := func(i int, key string) bool {
		f := st[i]
		return f.obj && f.key == key && (i < len(st)-1 || !f.wantKey)
	}
	return (len(st) >= 1 && at(0, "body")) || (len(st) >= 3 && at(0, "messages") && !st[1].obj && at(2, "body"))
}

// firstLoneSurrogate returns the offset in b (JSON text) of the first \u escape of a
// UTF-16 surrogate that is not a high half followed at once by an escaped low half,
// or -1. Backslashes only occur in strings, so a scan from one backslash to the next
// (skipping each escape whole, `\\` included) reads every escape correctly.
func firstLoneSurrogate(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return -1
		}
		i += j
		if i+1 >= len(b) {
			return -1
		}
		if b[i+1] != 'u' {
			i += 2
			continue
		}
		r, ok := hex4(b[i+2:])
		switch {
		case !ok:
			i += 2 // malformed: the decoder reports it
			continue
		case r >= 0xdc00 && r < 0xe000:
			return i
		case r >= 0xd800 && r < 0xdc00:
			if len(b) >= i+12 && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, ok := hex4(b[i+8:]); ok && lo >= 0xdc00 && lo < 0xe000 {
					i += 12
					continue
				}
			}
			return i
		}
		i += 6
	}
}

// hex4 parses the four hex digits that start b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
