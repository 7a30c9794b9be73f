package query

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"

	"github.com/shardline/shardline/internal/params"
)

// Cursor is the position after the last event of a page, bound to the query
// that produced it.
//
// The next page is read with a key condition starting at (Time, ID), so the
// cursor works on either path, and the query's own source, range and
// filters always decide which keys are read: the position alone can never
// reach another source's partition keys. On top of that, the cursor carries
// a digest of the query it belongs to and an HMAC, so a cursor that was
// edited, or that belongs to another query, is refused with a 400.
type Cursor struct {
	Time time.Time // of the last event returned
	ID   string    // of the last event returned (the origin key for the quarantine)

	kind     Kind
	order    Order
	from, to time.Time
	digest   [16]byte
}

// Keys signs and verifies cursors.
type Keys struct{ key []byte }

// NewKeys derives the cursor key from secret (CURSOR_SECRET) or, when it is
// empty, from the table name: then cursors are tamper-evident against
// accidental edits but forgeable by someone who knows the scheme, which
// gives them nothing beyond a query they could make directly.
func NewKeys(secret, table string) *Keys {
	h := sha256.New()
	h.Write([]byte("shardline cursor key v1\x00"))
	if secret != "" {
		h.Write([]byte(secret))
	} else {
		h.Write([]byte("table\x00" + table))
	}
	return &Keys{key: h.Sum(nil)}
}

const (
	cursorVersion = 1
	macLen        = 16
)

// digest binds a cursor to the parts of the query that must not change
// between pages: what is read and how it is filtered, and the tenant whose
// route issued it (a cursor of the /v1/... routes hashes no tenant, as
// before tenants).
func digest(kind Kind, p *Params) [16]byte {
	h := sha256.New()
	parts := []string{string(kind), p.Source, p.Type, p.Subject}
	if p.Tenant != "" {
		parts = append(parts, "tenant", p.Tenant)
	}
	for _, s := range parts {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	var d [16]byte
	copy(d[:], h.Sum(nil))
	return d
}

// next is the cursor after an event at (t, id) on a page of p.
func next(kind Kind, p *Params, t time.Time, id string) *Cursor {
	return &Cursor{Time: t, ID: id, kind: kind, order: p.Order, from: p.From, to: p.To, digest: digest(kind, p)}
}

// Encode renders c as an opaque, URL-safe string.
func (k *Keys) Encode(c *Cursor) string {
	b := []byte{cursorVersion, byte(c.kind), c.order[0]}
	b = binary.BigEndian.AppendUint64(b, uint64(c.from.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(c.to.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Time.UnixNano()))
	b = append(b, c.digest[:]...)
	b = binary.AppendUvarint(b, uint64(len(c.ID)))
	b = append(b, c.ID...)
	b = append(b, k.mac(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (k *Keys) mac(b []byte) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write(b)
	return m.Sum(nil)[:macLen]
}

// Decode verifies and reads a cursor. It checks integrity only; bind checks
// that it belongs to the query.
func (k *Keys) Decode(s string) (*Cursor, error) {
	bad := params.Errorf("cursor", "is not a cursor this API issued (malformed or altered); start again without it")
	b, err := base64.RawURLEncoding.DecodeString(s)
	const fixed = 3 + 8*3 + 16
	if err != nil || len(b) < fixed+1+macLen {
		return nil, bad
	}
	body, mac := b[:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(mac, k.mac(body)) || body[0] != cursorVersion {
		return nil, bad
	}
	c := &Cursor{kind: Kind(body[1])}
	switch body[2] {
	case 'a':
		c.order = Asc
	case 'd':
		c.order = Desc
	default:
		return nil, bad
	}
	c.from = time.Unix(0, int64(binary.BigEndian.Uint64(body[3:]))).UTC()
	c.to = time.Unix(0, int64(binary.BigEndian.Uint64(body[11:]))).UTC()
	c.Time = time.Unix(0, int64(binary.BigEndian.Uint64(body[19:]))).UTC()
	copy(c.digest[:], body[27:43])
	n, used := binary.Uvarint(body[fixed:])
	if used <= 0 || uint64(len(body)-fixed-used) != n {
		return nil, bad
	}
	c.ID = string(body[fixed+used:])
	return c, nil
}

// bind checks that c belongs to the query p and, when p left its range to
// the default, gives p the cursor's range (the default moves with the clock;
// the pages of one listing must not).
func (c *Cursor) bind(kind Kind, p *Params) error {
	if c.kind != kind || c.digest != digest(kind, p) {
		return params.Errorf("cursor", "belongs to another query (route, tenant, source, type or subject differ); start again without it")
	}
	if c.order != p.Order {
		return params.Errorf("cursor", "was issued for order=%s; keep the order while paging", c.order)
	}
	if !p.explicitRange {
		p.From, p.To = c.from, c.to
	} else if !p.From.Equal(c.from) || !p.To.Equal(c.to) {
		return params.Errorf("cursor", "was issued for the range %s to %s; keep from and to while paging",
			c.from.Format(time.RFC3339Nano), c.to.Format(time.RFC3339Nano))
	}
	if c.Time.Before(p.From) || !c.Time.Before(p.To) {
		return params.Errorf("cursor", "points outside its range")
	}
	return nil
}
