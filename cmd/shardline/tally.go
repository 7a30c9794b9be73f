// What became of the events send read: counts, rejections, progress.

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardline/shardline/ops/plural"
)

// tally counts what became of the events and prints rejections and
// progress to stderr.
type tally struct {
	stderr                       io.Writer
	start                        time.Time
	mu                           sync.Mutex // guards stderr and line
	line                         bool       // a progress line is on the terminal
	read, sent, rejected, failed atomic.Int64
	lastSent                     atomic.Int64 // when the last event was sent, ns since start
	stopOnce                     sync.Once
	stopTick                     chan struct{}
	tickDone                     chan struct{}
	terminal                     bool
}

func (t *tally) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.line {
		fmt.Fprint(t.stderr, "\r\033[K")
		t.line = false
	}
	fmt.Fprintf(t.stderr, format, args...)
}

// stored counts n events sent and stored (by the API, or on the stream).
func (t *tally) stored(n int) {
	if n <= 0 {
		return
	}
	t.sent.Add(int64(n))
	t.lastSent.Store(int64(time.Since(t.start)))
}

func (t *tally) reject(at, id, reason string) {
	t.rejected.Add(1)
	t.printf("rejected %s%s: %s\n", at, idPart(id), reason)
}

func (t *tally) fail(at, id string, err error) {
	t.failed.Add(1)
	t.printf("failed   %s%s: %v\n", at, idPart(id), err)
}

func idPart(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (id %q)", id)
}

// progress prints a progress line every second until stopLine; on a
// terminal the line is rewritten in place.
func (t *tally) progress(terminal bool) func() {
	t.terminal = terminal
	t.stopTick, t.tickDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.tickDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-t.stopTick:
				return
			case <-tick.C:
				t.mu.Lock()
				s := t.status()
				if terminal {
					fmt.Fprintf(t.stderr, "\r\033[K%s", s)
					t.line = true
				} else {
					fmt.Fprintln(t.stderr, s)
				}
				t.mu.Unlock()
			}
		}
	}()
	return t.stopLine
}

// stopLine stops the progress line and clears it.
func (t *tally) stopLine() {
	if t.stopTick == nil {
		return
	}
	t.stopOnce.Do(func() {
		close(t.stopTick)
		<-t.tickDone
		t.mu.Lock()
		if t.line {
			fmt.Fprint(t.stderr, "\r\033[K")
			t.line = false
		}
		t.mu.Unlock()
	})
}

func (t *tally) status() string {
	secs := time.Since(t.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(t.sent.Load()) / secs
	}
	return fmt.Sprintf("read %d, sent %d, rejected %d, failed %d (%.0f events/s)", t.read.Load(), t.sent.Load(), t.rejected.Load(), t.failed.Load(), rate)
}

// outcomeWords say what each line of the summary means for a target.
type outcomeWords struct {
	sent, rejected, failed string
}

// summary prints what became of the events, in words true of the target.
// The rate is of the events sent, over the time until the last of them
// was: time spent on sends that failed does not count against it.
func (t *tally) summary(w io.Writer, target string, words outcomeWords) {
	n, sent := t.read.Load(), t.sent.Load()
	fmt.Fprintf(w, "%s read, to %s; done after %v:\n", plural.Count(int(n), "event", "events"), target, time.Since(t.start).Round(time.Millisecond))
	rate := ""
	if d := time.Duration(t.lastSent.Load()); sent > 0 && d > 0 {
		rate = fmt.Sprintf(" in %v (%.0f events/s)", d.Round(time.Millisecond), float64(sent)/d.Seconds())
	}
	fmt.Fprintf(w, "  sent      %d%s: %s\n", sent, rate, words.sent)
	fmt.Fprintf(w, "  rejected  %d: %s\n", t.rejected.Load(), words.rejected)
	fmt.Fprintf(w, "  failed    %d: %s\n", t.failed.Load(), words.failed)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
