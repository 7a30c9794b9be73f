package query

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/shardmap"
)

// run is the work of one page on one path: what it reads, and what its
// requests have cost so far.
type run struct {
	r    *Reader
	kind Kind
	p    *Params
	via  path
	b    bounds
	sem  chan struct{} // bounds the requests in flight
	memo *dayMemo      // the days this page has read

	mu   sync.Mutex
	reqs int
	rcu  float64
}

func (r *Reader) newRun(kind Kind, p *Params, via path) *run {
	conc := r.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	memo := &dayMemo{days: map[string]shardmap.Day{}, fresh: map[string]bool{}, busy: map[string]chan struct{}{}}
	return &run{r: r, kind: kind, p: p, via: via, b: boundsOf(p), sem: make(chan struct{}, conc), memo: memo}
}

func (rn *run) acquire(ctx context.Context) error {
	select {
	case rn.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rn *run) release() { <-rn.sem }

// count adds requests and the read capacity they consumed to the plan.
func (rn *run) count(reqs int, rcu float64) {
	rn.mu.Lock()
	rn.reqs += reqs
	rn.rcu += rcu
	rn.mu.Unlock()
}

// fail says whether err is the deadline's: then the caller answers that
// the page could not be read in time.
func (rn *run) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrDeadline, err)
	}
	return err
}

func (rn *run) result(items []map[string]types.AttributeValue, reason string) Page {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return Page{Items: items, Plan: Plan{Path: rn.via.name(), Reason: reason, Requests: rn.reqs, ConsumedRCU: rn.rcu}}
}
