// What became of the events send read: counts, rejections, progress.

package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// tally counts what became of the events and prints rejections and
// progress to stderr.
type tally struct {
	stderr                       io.Writer
	start                        time.Time
	mu                           sync.Mutex // guards stderr and line
	line                         bool       // a progress line is on the terminal
	read, sent, rejected, failed atomic.Int64
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

// summary prints what became of the events.
func (t *tally) summary(w io.Writer, target string) {
	d := time.Since(t.start).Round(time.Millisecond)
	fmt.Fprintf(w, "%d events read in %v, to %s:\n", t.read.Load(), d, target)
	fmt.Fprintf(w, "  sent      %d\n", t.sent.Load())
	fmt.Fprintf(w, "  rejected  %d\n", t.rejected.Load())
	fmt.Fprintf(w, "  failed    %d\n", t.failed.Load())
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
