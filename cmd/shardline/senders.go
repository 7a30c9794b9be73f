// Where send puts events: the HTTP API or a Kinesis stream.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/shardline/shardline/pkg/producer"
)

// httpSender sends to POST /v1/events, a batch at a time.
type httpSender struct {
	base  string
	route string // POST's path: /v1/events, or the tenant's
	h     *producer.HTTP
	t     *tally
	batch []inputEvent
	bytes int
}

func newHTTPSender(ctx context.Context, f *sendFlags, t *tally) (*httpSender, error) {
	c, err := f.api.client(ctx)
	if err != nil {
		return nil, err
	}
	return &httpSender{base: c.base, route: c.route("/v1/events"), h: c.producer(), t: t}, nil
}

func (s *httpSender) target() string { return "POST " + s.base + s.route }

func (s *httpSender) words() senderWords {
	return senderWords{
		outcomeWords: outcomeWords{
			sent:     "stored by the API",
			rejected: "refused by the API, which quarantined them (GET /v1/quarantine lists them)",
			failed:   "not stored after the retries; send them again",
		},
		verb:          "stored",
		afterRejected: "the API quarantined those it rejected",
	}
}

func (s *httpSender) add(ctx context.Context, ev inputEvent) error {
	if len(s.batch) == producer.MaxRequestEvents || s.bytes+len(ev.data)+1 > producer.MaxRequestBytes-2 {
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	s.batch = append(s.batch, ev)
	s.bytes += len(ev.data) + 1
	return nil
}

func (s *httpSender) close(ctx context.Context) error { return s.flush(ctx) }

// flush sends the batch and tallies what became of each event.
func (s *httpSender) flush(ctx context.Context) error {
	if len(s.batch) == 0 {
		return nil
	}
	batch := s.batch
	s.batch, s.bytes = nil, 0
	evs := make([]any, len(batch))
	for i, e := range batch {
		evs[i] = json.RawMessage(e.data)
	}
	res, err := s.h.Send(ctx, evs...)
	s.t.stored(res.Accepted)
	for _, r := range res.Rejected {
		s.t.reject(batch[r.Index].at, r.ID, r.Error)
	}
	for _, r := range res.Failed {
		s.t.fail(batch[r.Index].at, r.ID, errors.New(r.Error))
	}
	if err != nil {
		var se *producer.StatusError
		if errors.As(err, &se) {
			return &apiError{method: "POST", route: s.route, status: se.Status, message: errorMessage([]byte(se.Body))}
		}
		return fmt.Errorf("send to %s: %w", s.target(), err)
	}
	return nil
}

// kinesisSender puts events on a stream through a Kinesis producer.
type kinesisSender struct {
	stream string
	p      *producer.Kinesis
	t      *tally
	mu     sync.Mutex
	where  map[string][]string // id -> file:line of each event not yet reported
}

func newKinesisSender(ctx context.Context, f *sendFlags, t *tally) (*kinesisSender, error) {
	client, where, err := kinesisClient(ctx, f.endpoint)
	if err != nil {
		return nil, err
	}
	if err := checkStream(ctx, client, f.stream, where); err != nil {
		return nil, err
	}
	s := &kinesisSender{stream: f.stream, t: t, where: map[string][]string{}}
	popts := []producer.KinesisOption{producer.WithOnResult(s.outcome)}
	if f.aggregate {
		popts = append(popts, producer.WithAggregation())
	}
	s.p = producer.NewKinesis(client, f.stream, popts...)
	return s, nil
}

func (s *kinesisSender) target() string { return "Kinesis stream " + s.stream }

func (s *kinesisSender) words() senderWords {
	return senderWords{
		outcomeWords: outcomeWords{
			sent:     "put on the stream; the ingest function stores them and quarantines any it finds invalid (GET /v1/quarantine lists them)",
			rejected: "refused here and never sent (not an event Kinesis could carry)",
			failed:   "not put on the stream after the retries; send them again",
		},
		verb:          "put on the stream",
		afterRejected: "the rejected ones were never sent, fix them and send them again",
	}
}

func (s *kinesisSender) add(ctx context.Context, ev inputEvent) error {
	s.mu.Lock()
	s.where[ev.id] = append(s.where[ev.id], ev.at)
	s.mu.Unlock()
	err := s.p.Put(ctx, json.RawMessage(ev.data))
	if err == nil {
		return nil
	}
	s.mu.Lock()
	s.pop(ev.id)
	s.mu.Unlock()
	if errors.Is(err, producer.ErrTooLarge) || errors.Is(err, producer.ErrPartitionKey) {
		s.t.reject(ev.at, ev.id, err.Error())
		return nil
	}
	return err
}

// pop is where the oldest unreported event of id came from; s.mu is held.
func (s *kinesisSender) pop(id string) string {
	at := s.where[id]
	if len(at) == 0 {
		return ""
	}
	if len(at) == 1 {
		delete(s.where, id)
	} else {
		s.where[id] = at[1:]
	}
	return at[0]
}

// outcome tallies what became of one event; the producer calls it.
func (s *kinesisSender) outcome(o producer.Outcome) {
	s.mu.Lock()
	at := s.pop(o.ID)
	s.mu.Unlock()
	if o.Err != nil {
		s.t.fail(at, o.ID, o.Err)
		return
	}
	s.t.stored(1)
}

func (s *kinesisSender) close(ctx context.Context) error {
	if err := s.p.Close(ctx); err != nil {
		return fmt.Errorf("send to %s: %w", s.target(), err)
	}
	return nil
}
