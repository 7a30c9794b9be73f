// "shardline quarantine list" through the HTTP API: GET /v1/quarantine,
// paged, for make run or a deployed stack without access to its table.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/shardline/shardline/cmd/shardline/internal/replay"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/ops/plural"
)

// quarantineWindow is the longest range GET /v1/quarantine takes; a longer
// one is read window by window.
const quarantineWindow = 31 * 24 * time.Hour

// quarantinePage is the answer of GET /v1/quarantine.
type quarantinePage struct {
	Records []struct {
		ReceivedAt string        `json:"received_at"`
		Reason     string        `json:"reason"`
		Raw        []byte        `json:"raw"`
		RawSize    int           `json:"raw_size"`
		Truncated  bool          `json:"truncated"`
		Origin     item.Origin   `json:"origin"`
		Replay     *listedReplay `json:"replay"`
	} `json:"records"`
	NextCursor string `json:"next_cursor"` // "" on the last page
}

// quarantineListAPI lists the records of rg through the API, oldest first,
// in the lines the table's listing prints.
func quarantineListAPI(q *quarantineFlags, rg replay.Range, stdout, stderr io.Writer) error {
	ctx, stop := interruptible()
	defer stop()
	c, err := q.api.client(ctx)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	n := 0
	err = pageQuarantine(ctx, c, rg, func(l listedRecord) error {
		if !q.raw {
			l.Raw = nil
		}
		n++
		return enc.Encode(l)
	})
	fmt.Fprintf(stderr, "%d quarantined %s (from %s%s)\n", n, plural.Of(n, "record", "records"), c.base, c.route("/v1/quarantine"))
	if err != nil {
		return fmt.Errorf("quarantine list: %w (to read the table instead, pass -table or set EVENTS_TABLE, or AWS_ENDPOINT_URL_DYNAMODB for make run's)", err)
	}
	return nil
}

// pageQuarantine calls fn with each record of rg whose reason begins with
// rg.Reason, in the order received, following next_cursor to the end of
// each window of at most 31 days.
func pageQuarantine(ctx context.Context, c *apiClient, rg replay.Range, fn func(listedRecord) error) error {
	for from := rg.From; from.Before(rg.To); from = from.Add(quarantineWindow) {
		to := from.Add(quarantineWindow)
		if to.After(rg.To) {
			to = rg.To
		}
		q := url.Values{"from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)},
			"order": {"asc"}, "limit": {"1000"}}
		for {
			var page quarantinePage
			if err := c.get(ctx, "/v1/quarantine", q, &page); err != nil {
				return err
			}
			for _, r := range page.Records {
				if !strings.HasPrefix(r.Reason, rg.Reason) {
					continue
				}
				l := listedRecord{ReceivedAt: r.ReceivedAt, Reason: r.Reason, Origin: r.Origin, Bytes: len(r.Raw),
					Truncated: r.Truncated, Raw: r.Raw, Replay: r.Replay}
				if r.RawSize > 0 {
					l.Bytes = r.RawSize
				}
				if err := fn(l); err != nil {
					return err
				}
			}
			if page.NextCursor == "" {
				break
			}
			q.Set("cursor", page.NextCursor)
		}
	}
	return nil
}
