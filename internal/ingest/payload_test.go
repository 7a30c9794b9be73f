package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// bodyOf is a JSON array of n events whose data strings repeat unit,
// padded so that the body takes size bytes as a JSON string in Lambda's
// payload, as encoding/json writes it.
func bodyOf(t *testing.T, n int, unit string, size int) string {
	build := func(each, pad int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			data := strings.Repeat(unit, each)
			if i == 0 {
				data += strings.Repeat("x", pad)
			}
			fmt.Fprintf(&b, `{"specversion":"1.0","id":"big-%04d","source":"big","type":"t","data":"%s"}`, i, data)
		}
		b.WriteByte(']')
		return b.String()
	}
	each := (size - jsonLen(t, build(0, 0))) / (jsonLen(t, unit) - 2) / n
	body := build(each, 0)
	body = build(each, size-jsonLen(t, body))
	if jsonLen(t, body) != size {
		t.Fatalf("built a body of %d bytes as a JSON string, want %d", jsonLen(t, body), size)
	}
	return body
}

// jsonLen is the bytes of s as a JSON string.
func jsonLen(t *testing.T, s string) int {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestPayloadLimit: a body is refused with 413, naming MaxPayloadBytes,
// when it takes more than that in Lambda's invocation payload, whatever its
// bytes: 5.3 MB of JSON with an escaped quote every 12 bytes, or a base64
// body of 4.7 MB;
// a body that takes exactly MaxPayloadBytes is stored whole.
func TestPayloadLimit(t *testing.T) {
	quoted := bodyOf(t, 1000, `abcdefghij\"`, MaxPayloadBytes+1) // \" is 4 bytes in the payload: \\\"
	if len(quoted) < 5_300_000 || len(quoted) >= MaxRequestBytes {
		t.Fatalf("the quoted body is %d bytes: want 5.3 MB, under the %d of bytes that hid it", len(quoted), MaxRequestBytes)
	}
	raw := strings.Repeat("x", (MaxPayloadBytes-2)/4*3+3)
	cases := []struct {
		name   string
		body   string
		base64 bool
		status int
	}{
		{"5.3 MB of JSON with quotes, a byte over", quoted, false, 413},
		{"base64 of 4.7 MB", base64.StdEncoding.EncodeToString([]byte(raw)), true, 413},
		{"plain JSON at the limit", bodyOf(t, 1000, "x", MaxPayloadBytes), false, 202},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false, nil)
			req := post(c.body, "application/json")
			req.IsBase64Encoded = c.base64
			resp, err := e.h.HTTP(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("a %d-byte body: status %d, want %d: %.300s", len(c.body), resp.StatusCode, c.status, resp.Body)
			}
			stored := len(e.itemsIn(t, "E#"))
			if c.status == 413 {
				if !strings.Contains(resp.Body, `"body: `) || !strings.Contains(resp.Body, fmt.Sprint(MaxPayloadBytes)) || stored != 0 {
					t.Fatalf("%.300s; %d events stored", resp.Body, stored)
				}
				return
			}
			if r := decodeResponse(t, resp.Body); r.Accepted != 1000 || stored != 1000 {
				t.Fatalf("accepted %d, stored %d, want 1,000: %.300s", r.Accepted, stored, resp.Body)
			}
		})
	}
}
