package query

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// MaxPayloadBytes is Lambda's limit on the response of a synchronous
// invocation: here, API Gateway's response object as JSON, the body inside
// it as a string.
const MaxPayloadBytes = 6 << 20 // 6,291,456

// PageBytes bounds what a page's events or records add to the response
// payload. The rest of the answer (status, headers, the plan, the cursor,
// brackets) takes well under a kilobyte; the margin is far more.
const PageBytes = MaxPayloadBytes - 64<<10

// size is the bytes an item adds to the payload of the page's answer.
func (pr *pageReader) size(it map[string]types.AttributeValue) int {
	if pr.kind == Quarantine {
		return recordSize(it)
	}
	return eventSize(it)
}

// eventSize is the bytes an event item adds to the payload: its event
// escaped twice, and the comma before it. 0 for an item without its event
// (from a Lean GSI), until fill fetches it.
func eventSize(it map[string]types.AttributeValue) int {
	ev, ok := it[schema.Event].(*types.AttributeValueMemberS)
	if !ok {
		return 0
	}
	return payloadLen(ev.Value) + 1
}

// recordSize is the bytes a quarantine item adds to the payload: its
// record as JSON, escaped into the payload, and the comma before it.
func recordSize(it map[string]types.AttributeValue) int {
	b, err := json.Marshal(record(it))
	if err != nil {
		return PageBytes // cannot be answered anyway; alone on its page
	}
	return payloadLen(b) + 1
}

// payloadLen is how many bytes s, JSON written for the body, takes in the
// payload. It is escaped twice:
//
//   - the body is written by encoding/json (apigw.JSON), which copies an
//     event's JSON but escapes <, > and &, and U+2028 and U+2029, as
//     \u003c and the like: 6 bytes each;
//   - the Lambda runtime (aws-lambda-go) writes the response with the body
//     as a JSON string: it escapes " and \ with a backslash, control
//     characters as \n or \u0001, invalid UTF-8 as \ufffd, and U+2028 and
//     U+2029 as \u2028.
//
// So a < in an event's data is 7 bytes in the payload, a " (sent as \") 4.
// For JSON that json.Marshal wrote, which holds none of the characters of
// the first step, the count is the second step's alone.
func payloadLen[T ~string | ~[]byte](s T) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += asciiLen(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		switch {
		case r == utf8.RuneError && size == 1:
			n += len(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			n += len(`\\u2028`)
		default:
			n += size
		}
		i += size
	}
	return n
}

// asciiLen is the payload bytes of the ASCII character c in the body's
// JSON.
func asciiLen(c byte) int {
	switch {
	case c == '<' || c == '>' || c == '&':
		return len(`\\u003c`)
	case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
		return 2
	case c < 0x20:
		return len(`\u0001`)
	}
	return 1
}
