package batchget

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func keys(n int) []Key {
	out := make([]Key, n)
	for i := range out {
		out[i] = Key{"pk": &types.AttributeValueMemberN{Value: string(rune('a' + i))}}
	}
	return out
}

// TestReadSendsTheUnprocessedAgain: each round gets what the one before
// left, after the round's pause, until nothing is left.
func TestReadSendsTheUnprocessedAgain(t *testing.T) {
	var sent []int
	var paused []time.Duration
	r := Rounds{
		Pause: func(n int) time.Duration { return time.Duration(n) * time.Millisecond },
		Sleep: func(_ context.Context, d time.Duration) error { paused = append(paused, d); return nil },
	}
	left, err := r.Read(context.Background(), keys(5), func(_ context.Context, k []Key) ([]Key, error) {
		sent = append(sent, len(k))
		return k[:len(k)/2], nil
	})
	if err != nil || left != nil {
		t.Fatalf("left %v, err %v", left, err)
	}
	if want := []int{5, 2, 1}; !slices.Equal(sent, want) {
		t.Errorf("rounds sent %v keys, want %v", sent, want)
	}
	if want := []time.Duration{2 * time.Millisecond, 3 * time.Millisecond}; !slices.Equal(paused, want) {
		t.Errorf("paused %v, want %v", paused, want)
	}
}

// TestReadStops: after the most rounds, with the keys left and an
// UnprocessedError; at a failed request or sleep, with the keys of the
// round.
func TestReadStops(t *testing.T) {
	never := func(_ context.Context, k []Key) ([]Key, error) { return k, nil }
	left, err := Rounds{Most: 3}.Read(context.Background(), keys(4), never)
	var ue *UnprocessedError
	if !errors.As(err, &ue) || ue.Keys != 4 || ue.Rounds != 3 || len(left) != 4 {
		t.Errorf("most rounds: left %d, err %v", len(left), err)
	}
	boom := errors.New("boom")
	left, err = Rounds{}.Read(context.Background(), keys(4), func(_ context.Context, k []Key) ([]Key, error) { return nil, boom })
	if !errors.Is(err, boom) || len(left) != 4 {
		t.Errorf("failed request: left %d, err %v", len(left), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	left, err = Rounds{Pause: func(int) time.Duration { return time.Hour }}.Read(ctx, keys(4), func(_ context.Context, k []Key) ([]Key, error) { return k[1:], nil })
	if !errors.Is(err, context.Canceled) || len(left) != 3 {
		t.Errorf("ended context: left %d, err %v", len(left), err)
	}
}
