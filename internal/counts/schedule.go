package counts

import (
	"context"
	"fmt"
	"time"
)

// Settings of the scheduled fold (docs/counts.md, "Lag"): an invocation a
// minute (EventBridge's finest schedule) folds every FoldEvery for
// FoldSpan, so that a link is read by bucket 20–40 s after it is written,
// and rolls up once an hour, RollupAfter into it, when the hour before's
// last links are folded.
const (
	FoldEvery   = 20 * time.Second
	FoldSpan    = 60 * time.Second
	RollupAfter = 2 * time.Minute
)

// rollupSK is the sort key, in the roll-up's partition, of the item that
// holds the last hour rolled up (rollupHour, Unix seconds of its start).
const (
	rollupSK   = "hour"
	rollupHour = "at"
)

// MinuteStats sums up one Minute.
type MinuteStats struct {
	Folds  int // folds that wrote a run
	Fold   FoldStats
	Rolled bool // the hour's roll-up ran
	Rollup RollupStats
}

// Minute is one invocation of the scheduled fold: a fold at once and every
// FoldEvery after while a next one starts within FoldSpan of the first, then
// the hour's roll-up if it is due and not done. A fold or roll-up that
// fails ends the invocation with its error; the next minute's finishes it.
func (l *LSM) Minute(ctx context.Context) (MinuteStats, error) {
	var st MinuteStats
	start := l.now()
	for next := start; next.Sub(start) < FoldSpan; next = next.Add(FoldEvery) {
		if err := sleepUntil(ctx, l.now, next); err != nil {
			return st, err
		}
		fs, err := l.Fold(ctx)
		if err != nil {
			return st, err
		}
		if fs.Run > 0 {
			st.Folds++
			st.Fold.Links += fs.Links
			st.Fold.Tuples += fs.Tuples
			st.Fold.Packs += fs.Packs
			st.Fold.WCU += fs.WCU
		}
	}
	var err error
	st.Rollup, st.Rolled, err = l.RollupIfDue(ctx)
	return st, err
}

// RollupIfDue rolls up the hours that ended, once an hour, RollupAfter
// into it: it answers false, having written nothing, when the hour's
// roll-up is not due or was done. A roll-up its budget stopped (Left) is
// not done: the next call goes on with it. Minute calls it after its
// folds; the local server, which folds more often, calls it beside.
func (l *LSM) RollupIfDue(ctx context.Context) (RollupStats, bool, error) {
	hour := l.now().UTC().Truncate(time.Hour)
	if l.now().Sub(hour) < RollupAfter {
		return RollupStats{}, false, nil
	}
	last, err := l.getNumber(ctx, rolledPK, rollupSK, rollupHour)
	if err != nil || last >= hour.Unix() {
		return RollupStats{}, false, err
	}
	st, err := l.Rollup(ctx)
	if err != nil {
		return st, false, err
	}
	if st.Left {
		return st, true, nil
	}
	if err := l.setNumber(ctx, rolledPK, rollupSK, rollupHour, hour.Unix()); err != nil {
		return st, true, fmt.Errorf("roll-up: %w", err)
	}
	return st, true, nil
}

// sleepUntil waits until now() reaches t, or ctx ends.
func sleepUntil(ctx context.Context, now func() time.Time, t time.Time) error {
	d := t.Sub(now())
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
