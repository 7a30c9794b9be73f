package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/shardline/shardline/internal/ddberr"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/ops/plural"
)

// API is the part of the DynamoDB client a replay uses besides the ingest
// handler's: reading the quarantine, and marking its records.
type API interface {
	query.Client
	MarkAPI
}

// Defaults of Options.
const (
	DefaultProgressEvery   = 10 * time.Second
	DefaultProgressRecords = 1000
	DefaultBatchTimeout    = 2 * time.Minute
	markConcurrency        = 8
)

// Options are one run's: the records, whether to write, and how to report.
type Options struct {
	Range
	// DryRun checks every record and reports what would become of it, and
	// writes nothing: no event, no mark, no shard record.
	DryRun bool
	// A progress line is logged at least every ProgressEvery, and every
	// ProgressRecords records read. Defaults: DefaultProgressEvery,
	// DefaultProgressRecords.
	ProgressEvery   time.Duration
	ProgressRecords int
	// BatchTimeout bounds the storing of one page of records, retries of
	// throttled writes included; what is not stored by then fails, for the
	// next run. Default DefaultBatchTimeout.
	BatchTimeout time.Duration
	// OnRecord, if set, is told what became of each record in the range
	// that the reason did not leave out.
	OnRecord func(Result)
}

func (o *Options) defaults() {
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	if o.ProgressRecords <= 0 {
		o.ProgressRecords = DefaultProgressRecords
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = DefaultBatchTimeout
	}
}

// Action is what a replay did with a record.
type Action string

// The actions. In a dry run, Stored and Invalid are what would be done.
const (
	Stored    Action = "stored"    // its events are valid now, stored, and the record marked so
	Invalid   Action = "invalid"   // still refused; the new outcome marked
	Unchanged Action = "unchanged" // still refused, as an earlier replay marked: nothing written
	Skipped   Action = "skipped"   // an earlier (or concurrent) replay stored its events
	Failed    Action = "failed"    // not stored or not marked for now; the next run does it
)

// Result is what became of one record.
type Result struct {
	Record  Record
	Action  Action
	Outcome string // the outcome marked (or, in a dry run, that would be)
	Events  int    // events stored (dry run: that would be)
	Err     error  // why it Failed
}

// Summary counts a run's records.
type Summary struct {
	Read            int       // records received in the range
	Filtered        int       // of those, left out by the reason prefix
	Checked         int       // checked again under the current rules
	NowValid        int       // of those, records whose events are valid now
	Events          int       // events stored (dry run: that would be)
	StillInvalid    int       // records still refused
	Unchanged       int       // of those, refused as an earlier replay had marked: not written again
	AlreadyReplayed int       // records an earlier replay had stored: skipped
	Failed          int       // records not stored or not marked for now: run again
	Last            time.Time // received time of the last record read
}

func (s *Summary) add(r Result) {
	switch r.Action {
	case Skipped:
		s.AlreadyReplayed++
		return
	case Stored:
		s.NowValid++
		s.Events += r.Events
	case Invalid:
		s.StillInvalid++
	case Unchanged:
		s.StillInvalid++
		s.Unchanged++
	case Failed:
		s.Failed++
	}
	s.Checked++
}

// Replayer replays the quarantine of one table.
type Replayer struct {
	Client API
	Table  string
	// Ingest checks and stores the records: a handler built from the
	// ingest function's configuration (ingest.ConfigFromEnv), on the same
	// table and client.
	Ingest *ingest.Handler
	Log    *slog.Logger     // progress; default: discard
	Now    func() time.Time // the time marks carry; default time.Now
}

// Run replays the records of o.Range. A record whose events an earlier
// replay stored is skipped; one still refused for the reason already marked
// is left as it is; so a second run writes nothing. The error is the first
// that stopped the run (the table, permissions, an interruption), or says
// how many records failed for now; either way what is done stays done, and
// running the same command again finishes the rest.
func (r *Replayer) Run(ctx context.Context, o Options) (Summary, error) {
	var sum Summary
	if err := o.Check(); err != nil {
		return sum, err
	}
	o.defaults()
	log := r.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := newWalker(r.Client, r.Table, o.Range, PageSize)
	prog := progress{log: log, every: o.ProgressEvery, records: o.ProgressRecords, last: time.Now()}
	var firstFailure error
	for {
		pg, ok, err := w.next(ctx)
		if err != nil {
			return sum, err
		}
		if !ok {
			break
		}
		sum.Read += len(pg.records) + pg.filtered
		sum.Filtered += pg.filtered
		sum.Last = pg.last
		results, err := r.page(ctx, pg.records, o)
		for _, res := range results {
			sum.add(res)
			if res.Err != nil && firstFailure == nil {
				firstFailure = res.Err
			}
			if o.OnRecord != nil {
				o.OnRecord(res)
			}
		}
		prog.tick(sum)
		if err != nil {
			return sum, err
		}
	}
	if sum.Failed > 0 {
		return sum, fmt.Errorf("%d %s could not be stored or marked for now (the first: %w); what was done stays done: "+
			"run the same command again", sum.Failed, plural.Of(sum.Failed, "record", "records"), firstFailure)
	}
	return sum, nil
}

// page checks one page's records, stores what is valid now, and marks
// them. The error, when not nil, stops the run: the context ended, or
// DynamoDB refused a call in a way that the next record would meet too.
func (r *Replayer) page(ctx context.Context, recs []Record, o Options) ([]Result, error) {
	results := make([]Result, len(recs))
	verdicts := make([]*verdict, len(recs))
	r.check(ctx, recs, o, results, verdicts)
	marks := decide(recs, verdicts, results, o.DryRun)
	r.markAll(ctx, recs, verdicts, marks, results)
	return results, stopping(ctx, results)
}

// check finds each record's verdict: a record an earlier replay stored is
// skipped; one the quarantine kept truncated cannot be checked; the others
// go through reingest, which stores their valid events unless this
// is a dry run. A record whose events could not all be stored fails, and
// gets no verdict.
func (r *Replayer) check(ctx context.Context, recs []Record, o Options, results []Result, verdicts []*verdict) {
	var in []Record
	var at []int
	for i, rec := range recs {
		results[i].Record = rec
		switch {
		case rec.Stored():
			results[i].Action, results[i].Outcome = Skipped, rec.Replay.Outcome
		case !rec.Whole:
			v := truncated(rec)
			verdicts[i] = &v
		default:
			in = append(in, rec)
			at = append(at, i)
		}
	}
	if len(in) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, o.BatchTimeout)
	defer cancel()
	for k, g := range reingest(ctx, r.Ingest, in, o.DryRun) {
		i := at[k]
		if g.Err != nil {
			results[i].Action = Failed
			results[i].Err = fmt.Errorf("store the events of %s: %w", recs[i].Name(), g.Err)
			continue
		}
		v := judge(g)
		verdicts[i] = &v
	}
}

// decide turns the verdicts into actions, and lists the records whose mark
// must be written: every record stored now, and every record still invalid
// whose outcome differs from its mark. A dry run writes none.
func decide(recs []Record, verdicts []*verdict, results []Result, dryRun bool) (marks []int) {
	for i, v := range verdicts {
		if v == nil {
			continue
		}
		res, rec := &results[i], recs[i]
		res.Outcome, res.Events = v.outcome, v.events
		switch {
		case v.state == item.ReplayStored:
			res.Action = Stored
		case rec.Replayed && rec.Replay.State == v.state && rec.Replay.Outcome == v.outcome:
			res.Action = Unchanged
			continue
		default:
			res.Action = Invalid
		}
		if !dryRun {
			marks = append(marks, i)
		}
	}
	return marks
}

// markAll writes the marks of recs[marks], a few at a time.
func (r *Replayer) markAll(ctx context.Context, recs []Record, verdicts []*verdict, marks []int, results []Result) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	sem := make(chan struct{}, markConcurrency)
	var wg sync.WaitGroup
	for _, i := range marks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := mark(ctx, r.Client, r.Table, recs[i], *verdicts[i], now())
			switch {
			case errors.Is(err, errAlreadyStored):
				// Another replay marked it stored first; the events this
				// one stored are the same items.
				results[i].Action, results[i].Events = Skipped, 0
			case err != nil:
				results[i].Action, results[i].Err = Failed, err
			}
		}()
	}
	wg.Wait()
}

// stopping is the error that must stop the run, if any: the context's end,
// or a failure that is not about one record (a missing table, a refused
// permission, a request DynamoDB finds invalid).
func stopping(ctx context.Context, results []Result) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("replay interrupted: %w", err)
	}
	for _, res := range results {
		if res.Err == nil {
			continue
		}
		switch ddberr.Classify(res.Err) {
		case ddberr.Missing, ddberr.Refused, ddberr.Invalid:
			return res.Err
		}
	}
	return nil
}

// progress logs a line every so often on long runs.
type progress struct {
	log     *slog.Logger
	every   time.Duration
	records int
	last    time.Time
	lastN   int
}

func (p *progress) tick(s Summary) {
	if time.Since(p.last) < p.every && s.Read-p.lastN < p.records {
		return
	}
	p.last, p.lastN = time.Now(), s.Read
	p.log.Info("replay progress",
		slog.Int("read", s.Read),
		slog.Int("checked", s.Checked),
		slog.Int("now_valid", s.NowValid),
		slog.Int("events", s.Events),
		slog.Int("still_invalid", s.StillInvalid),
		slog.Int("already_replayed", s.AlreadyReplayed),
		slog.Int("failed", s.Failed),
		slog.String("received_up_to", s.Last.Format(time.RFC3339Nano)))
}
