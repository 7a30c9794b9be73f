package catalog

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/shardline/shardline/internal/params"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Route is the path of the source catalogue in the HTTP API.
const Route = "/v1/sources"

// Bounds of GET /v1/sources.
const (
	DefaultRange = 24 * time.Hour
	MaxRange     = 31 * 24 * time.Hour
	DefaultLimit = 1000
	MaxLimit     = 1000
)

// Request is a parsed GET /v1/sources.
type Request struct {
	From, To time.Time
	Limit    int
	After    string // from the cursor: list sources bytewise after this one
	// Prefixes, when set, list only the sources that begin with one of
	// them (a tenant's: ListPrefixed). Not a parameter: the route says.
	Prefixes []string
}

// Response is the answer to GET /v1/sources.
type Response struct {
	Sources    []Entry `json:"sources"`
	NextCursor string  `json:"next_cursor"` // "" on the last page, never absent
}

// ParseRequest reads the query string of GET /v1/sources. key verifies
// cursors. Every error is a *params.Error naming the parameter.
func ParseRequest(rawQuery string, now time.Time, key []byte) (Request, error) {
	v, err := params.Parse(rawQuery, "from", "to", "limit", "cursor")
	if err != nil {
		return Request{}, err
	}
	rg, err := v.Range(now, DefaultRange, MaxRange)
	if err != nil {
		return Request{}, err
	}
	req := Request{From: rg.From, To: rg.To}
	if req.Limit, err = v.Int("limit", 1, MaxLimit, DefaultLimit); err != nil {
		return Request{}, err
	}
	if s, ok := v.Get("cursor"); ok {
		c, err := decodeCursor(s, key)
		if err != nil {
			return Request{}, err
		}
		if !rg.Explicit { // the cursor keeps the first page's range
			req.From, req.To = c.from, c.to
		} else if !c.from.Equal(req.From) || !c.to.Equal(req.To) {
			return Request{}, params.Errorf("cursor", "belongs to another range; send the same from and to as the first page, or none")
		}
		// A cursor's range is checked like any other, however it was made.
		if err := (params.Range{From: req.From, To: req.To}).Check(MaxRange); err != nil {
			return Request{}, err
		}
		req.After = c.after
	}
	return req, nil
}

// Days lists the UTC days that overlap [from, to), in order.
func Days(from, to time.Time) []string {
	var out []string
	for d := from.UTC().Truncate(24 * time.Hour); d.Before(to); d = d.Add(24 * time.Hour) {
		out = append(out, bucketing.Day(d))
	}
	return out
}

// Serve answers a GET /v1/sources request.
func Serve(ctx context.Context, c ReadAPI, table string, req Request, key []byte) (Response, Page, error) {
	p, err := ListPrefixed(ctx, c, table, Days(req.From, req.To), req.Prefixes, req.After, req.Limit)
	if err != nil {
		return Response{}, p, err
	}
	resp := Response{Sources: p.Entries}
	if resp.Sources == nil {
		resp.Sources = []Entry{}
	}
	if p.Next != "" {
		resp.NextCursor = encodeCursor(cursor{from: req.From, to: req.To, after: p.Next}, key)
	}
	return resp, p, nil
}

// cursor is where the next page of a listing starts, bound to its range.
type cursor struct {
	from, to time.Time
	after    string
}

const macBytes = 16

func mac(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("shardline sources cursor v1\x00"))
	m.Write(b)
	return m.Sum(nil)[:macBytes]
}

func encodeCursor(c cursor, key []byte) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(c.from.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(c.to.UnixNano()))
	b = append(b, c.after...)
	return base64.RawURLEncoding.EncodeToString(append(b, mac(key, b)...))
}

func decodeCursor(s string, key []byte) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 16+macBytes {
		return cursor{}, params.Errorf("cursor", "is not a cursor this API gave; start again without it")
	}
	body, sum := b[:len(b)-macBytes], b[len(b)-macBytes:]
	if !hmac.Equal(sum, mac(key, body)) {
		return cursor{}, params.Errorf("cursor", "was altered, comes from another deployment, or was issued on another route or tenant; start again without it")
	}
	return cursor{
		from:  time.Unix(0, int64(binary.BigEndian.Uint64(body))).UTC(),
		to:    time.Unix(0, int64(binary.BigEndian.Uint64(body[8:]))).UTC(),
		after: string(body[16:]),
	}, nil
}
