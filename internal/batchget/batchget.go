// Package batchget reads items by key with BatchGetItem: at most MaxKeys
// keys a request, and the keys DynamoDB leaves unprocessed sent again
// after a pause, round after round. What a request asks (consistency,
// projection) and what becomes of the items are the caller's.
package batchget

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/backoff"
)

// MaxKeys is the most keys one BatchGetItem takes.
const MaxKeys = 100

// Key is an item's primary key.
type Key = map[string]types.AttributeValue

// Send makes one BatchGetItem of keys (at most MaxKeys), takes the items
// it answered, and returns the keys it left unprocessed.
type Send func(ctx context.Context, keys []Key) (unprocessed []Key, err error)

// Rounds says how the keys DynamoDB leaves unprocessed are read again: it
// does so when a request would exceed the partition's or the table's
// throughput, or its 16 MB answer, and the SDK does not retry them.
type Rounds struct {
	// Pause is the wait before round n (2 for the first retry).
	Pause func(n int) time.Duration
	// Most bounds the rounds, the first included; 0: only ctx does.
	Most int
	// Sleep waits d or fails (when ctx ends, or would first); default
	// backoff.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
}

// UnprocessedError is Read's error when keys are still unprocessed after
// the most rounds.
type UnprocessedError struct {
	Keys, Rounds int
}

func (e *UnprocessedError) Error() string {
	return fmt.Sprintf("%d keys left unprocessed after %d rounds", e.Keys, e.Rounds)
}

// Read sends keys with send, then the keys it leaves unprocessed after
// Pause, until none is left, the rounds run out (an *UnprocessedError), or
// send or Sleep fails. left is the keys not read when it stops: nil when
// all were.
func (r Rounds) Read(ctx context.Context, keys []Key, send Send) (left []Key, err error) {
	sleep := r.Sleep
	if sleep == nil {
		sleep = backoff.Sleep
	}
	for n := 1; len(keys) > 0; n++ {
		if r.Most > 0 && n > r.Most {
			return keys, &UnprocessedError{Keys: len(keys), Rounds: r.Most}
		}
		if n > 1 && r.Pause != nil {
			if err := sleep(ctx, r.Pause(n)); err != nil {
				return keys, err
			}
		}
		next, err := send(ctx, keys)
		if err != nil {
			return keys, err
		}
		keys = next
	}
	return nil, nil
}
