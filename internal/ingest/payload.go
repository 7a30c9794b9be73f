package ingest

import (
	"net/http"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/payload"
)

// MaxPayloadBytes bounds a request's body as Lambda received it: a JSON
// string inside API Gateway's event, escapes and quotes counted, or base64
// in quotes. It is Lambda's 6,291,456-byte invocation limit less 32 KiB
// kept for the headers and the request context; pkg/producer batches by the
// same rule. A body Lambda could still carry but past it is refused, so
// that what fits today keeps fitting with a larger header.
const MaxPayloadBytes = payload.MaxBodyBytes // 6,258,688

// checkPayload refuses, with 413, a body that takes more than
// MaxPayloadBytes in Lambda's payload. A body much larger never reaches the
// function: API Gateway refuses it, with its own 413. A body whose bytes
// alone are over is refused unread.
func checkPayload(r apigw.Request) *apigw.Response {
	size := len(r.Body) + 2 // escapes only add
	if !r.Base64 && size <= MaxPayloadBytes {
		size = payload.Body(r.Body)
	}
	if size <= MaxPayloadBytes {
		return nil
	}
	resp := apigw.Error(http.StatusRequestEntityTooLarge,
		"body: takes at least %d bytes in Lambda's invocation payload as a JSON string (a \" or a < in it is escaped to 2 or 6 bytes), "+
			"over the %d a request may; send it in several requests (pkg/producer and shardline send size them so)", size, MaxPayloadBytes)
	return &resp
}
