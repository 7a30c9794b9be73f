package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/shardline/shardline/local/devserver"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

var updateDocs = flag.Bool("update-docs", false, "write the README's screenshot, docs/explorer.png")

// browser is the one Chromium of this test binary; each test opens a tab.
var browser context.Context

func TestMain(m *testing.M) { testddb.MainWith(m, startChromium, stopServer) }

// chromiumNames are the names Chromium goes by on PATH.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// startChromium starts the browser once for the test binary. Without one
// the binary fails: a green run must mean the page was tested.
func startChromium(context.Context) (func(), error) {
	var path string
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("browser tests: Chromium is not installed (looked for %s on PATH): "+
			"install it with `apt-get install -y chromium` (.ci/run does); these tests never skip", strings.Join(chromiumNames, ", "))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 800),
		chromedp.Flag("lang", "en-US"),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	if err := chromedp.Do(ctx); err != nil { // the first run starts the browser, with no timeout
		cancel()
		cancelAlloc()
		return nil, fmt.Errorf("browser tests: start %s: %w", path, err)
	}
	browser = ctx
	return func() { cancel(); cancelAlloc() }, nil
}

// fixture is the local server the tests share and what it holds.
type fixture struct {
	base    string
	types   []string // checkout-api's event types, sorted
	written int      // checkout-api's events
	many    int      // ManyTypes's events
}

var (
	setupOnce   sync.Once
	shared      fixture
	setupErr    = errors.New("the local server did not start (see the first test's failure)")
	stopMu      sync.Mutex
	stopRunning func()
)

// Checkout is the source of the generated data: 10 types over 24 hours.
const Checkout = "checkout-api"

// ManyTypes is a source of hundreds of types (ManyTypesCount) over 24
// hours: more than an answer lists, so its chart has an "other" series.
const (
	ManyTypes      = "sensor-fleet"
	ManyTypesCount = 300
)

// Lone is a source of one event in the last 24 hours: its chart has one
// bucket of 1,440 that is not zero.
const Lone = "door-sensor"

// Events is how many events Checkout gets: enough for a full chart, every
// type of it counted (the rarest, 1 in 110, gets 14 or so: none, about
// once in a million runs), and for paging through 1,000 with more left.
// (3,000 cost 2.6 CPU-s more of DynamoDB Local, for no check that 1,500
// does not make; at 1,000, TestPagingThousandEvents finds no more.)
const Events = 1500

// server starts, once per test binary, the local server `make run` runs,
// with the samples replayed and Checkout's events written and counted.
func server(t *testing.T) fixture {
	t.Helper()
	setupOnce.Do(func() { shared, setupErr = startServer(t) })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func startServer(t *testing.T) (fixture, error) {
	var out syncbuf.Buffer
	base, stop, err := devserver.Serve(context.Background(), devserver.Options{
		Addr:     "127.0.0.1:0",
		Endpoint: testddb.Endpoint(t),
		Table:    fmt.Sprintf("explorer-%d", time.Now().UnixNano()),
		Samples:  "../../../events",
		Getenv:   func(string) string { return "" },
		Out:      &out,
	})
	if err != nil {
		return fixture{}, fmt.Errorf("the local server ended: %v\n%s", err, out.String())
	}
	stopMu.Lock()
	stopRunning = func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "the local server:", err)
		}
	}
	stopMu.Unlock()
	f := fixture{base: base, written: Events}
	evs, types := checkoutEvents(time.Now())
	f.types = types
	for i := 0; i < len(evs); i += 1000 {
		body, _ := json.Marshal(evs[i:min(i+1000, len(evs))])
		if err := post(base, "application/json", body, http.StatusAccepted); err != nil {
			return f, err
		}
	}
	many := manyTypesEvents(time.Now())
	f.many = len(many)
	body, _ := json.Marshal(many)
	if err := post(base, "application/json", body, http.StatusAccepted); err != nil {
		return f, err
	}
	if err := waitCounted(base, ManyTypes, f.many); err != nil {
		return f, err
	}
	lone := fmt.Sprintf(`{"id":"d-1","source":%q,"type":"com.example.door.opened","time":%q}`, Lone, time.Now().Add(-5*time.Hour).UTC().Format(time.RFC3339))
	if err := post(base, "application/json", []byte(lone), http.StatusAccepted); err != nil {
		return f, err
	}
	if err := waitCounted(base, Lone, 1); err != nil {
		return f, err
	}
	// A record that is not UTF-8, for the quarantine's hex view.
	if err := post(base, "application/json", []byte("\xf3\x89\x9a\xc2 not an event \xff\x00\x01"), http.StatusBadRequest); err != nil {
		return f, err
	}
	return f, waitCounted(base, Checkout, Events)
}

// stopServer is an engine that starts nothing: it stops the shared server
// when the test binary ends.
func stopServer(context.Context) (func(), error) {
	return func() {
		stopMu.Lock()
		defer stopMu.Unlock()
		if stopRunning != nil {
			stopRunning()
		}
	}, nil
}

func post(base, contentType string, body []byte, want int) error {
	resp, err := http.Post(base+"/v1/events", contentType, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST /v1/events: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("POST /v1/events: %d %.300s", resp.StatusCode, answer)
	}
	return nil
}

// waitCounted waits until the counts of source's last 24 hours add up to n
// (the counter trails the writes by a second or so locally).
func waitCounted(base, source string, n int) error {
	deadline := time.Now().Add(45 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/counts?source=" + url.QueryEscape(source))
		if err != nil {
			return fmt.Errorf("GET /v1/counts: %w", err)
		}
		var c countsAnswer
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("GET /v1/counts: %w", err)
		}
		got := 0
		for _, s := range c.Series {
			for _, p := range s.Points {
				got += p.Count
			}
		}
		if got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("counts of %s: %d of %d events after 45 s", source, got, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkoutEvents makes Checkout's events: ten types at different rates
// with a daily rhythm, over the 24 hours before now, a little inside them.
func checkoutEvents(now time.Time) ([]map[string]any, []string) {
	types := []string{
		"com.example.checkout.cart.viewed", "com.example.checkout.item.added", "com.example.checkout.coupon.applied",
		"com.example.checkout.payment.authorized", "com.example.checkout.payment.failed", "com.example.checkout.order.placed",
		"com.example.checkout.order.cancelled", "com.example.checkout.shipment.created", "com.example.checkout.email.sent",
		"com.example.checkout.fraud.flagged",
	}
	weights := []float64{30, 22, 6, 14, 2, 12, 2, 8, 12, 1}
	var sum float64
	for _, w := range weights {
		sum += w
	}
	rng := rand.New(rand.NewPCG(13, 2026))
	start, span := now.Add(-23*time.Hour-50*time.Minute), 23*time.Hour+45*time.Minute
	evs := make([]map[string]any, 0, Events)
	for i := range Events {
		// A daily rhythm: busier in the (UTC) afternoon.
		var at time.Time
		for {
			at = start.Add(time.Duration(rng.Float64() * float64(span)))
			h := float64(at.Hour()) + float64(at.Minute())/60
			if rng.Float64() < 0.55+0.45*math.Sin((h-9)/24*2*math.Pi) {
				break
			}
		}
		r, k := rng.Float64()*sum, 0
		for r > weights[k] {
			r -= weights[k]
			k++
		}
		order := 10400 + rng.IntN(900)
		evs = append(evs, map[string]any{
			"specversion": "1.0", "id": fmt.Sprintf("chk-%05d", i), "source": Checkout, "type": types[k],
			"time": at.UTC().Format(time.RFC3339Nano), "subject": fmt.Sprintf("order/%d", order),
			"datacontenttype": "application/json",
			"data": map[string]any{"order_id": order, "total": map[string]any{"amount": json.Number(fmt.Sprintf("%d.%02d", 10+rng.IntN(400), rng.IntN(100))), "currency": "EUR"},
				"trace": json.Number("12345678901234567890")},
		})
	}
	return evs, slices.Sorted(slices.Values(types))
}

// manyTypesEvents makes ManyTypes's events: type i has 1 + i%3 of them,
// spread over the 24 hours before now.
func manyTypesEvents(now time.Time) []map[string]any {
	var evs []map[string]any
	for i := range ManyTypesCount {
		for j := range 1 + i%3 {
			at := now.Add(-time.Duration(2+(i*53+j*397)%1420) * time.Minute)
			evs = append(evs, map[string]any{"id": fmt.Sprintf("m-%d-%d", i, j), "source": ManyTypes,
				"type": fmt.Sprintf("com.example.sensor.%03d.reading", i), "time": at.UTC().Format(time.RFC3339)})
		}
	}
	return evs
}

// ---------------------------------------------------------------- the API

type plan struct {
	Path        string  `json:"path"`
	Requests    int     `json:"requests"`
	ConsumedRCU float64 `json:"consumed_rcu"`
}

type countsAnswer struct {
	Interval string `json:"interval"`
	Series   []struct {
		Type  string `json:"type"`
		Other *struct {
			Types    int  `json:"types"`
			Overflow bool `json:"overflow"`
		} `json:"other"`
		Points []struct {
			T     string `json:"t"`
			Count int    `json:"count"`
		} `json:"points"`
	} `json:"series"`
	Plan plan `json:"plan"`
}

type event struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Time    string `json:"time"`
	Subject string `json:"subject"`
}

type eventsAnswer struct {
	Events     []json.RawMessage `json:"events"`
	NextCursor string            `json:"next_cursor"`
	Plan       plan              `json:"plan"`
}

type record struct {
	ReceivedAt string                     `json:"received_at"`
	Reason     string                     `json:"reason"`
	Raw        []byte                     `json:"raw"`
	Origin     map[string]json.RawMessage `json:"origin"`
}

type quarantineAnswer struct {
	Records    []record `json:"records"`
	NextCursor string   `json:"next_cursor"`
}

type sourcesAnswer struct {
	Sources []struct {
		Source string   `json:"source"`
		Days   []string `json:"days"`
	} `json:"sources"`
}

// get asks the API what the page asked it, each answer checked against
// the OpenAPI document.
func get(t *testing.T, base, path string, q url.Values, out any) {
	t.Helper()
	resp, err := openapitest.Client(t, openapitest.Any).Get(base + path + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s?%s: %d %s", path, q.Encode(), resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// ---------------------------------------------------------------- the browser

// tab opens a tab of the shared browser at width×height, for at most 60
// seconds; the test fails on any error the page logs.
func tab(t *testing.T, width, height int64, opts ...chromedp.EmulateViewportOption) context.Context {
	t.Helper()
	return tabFor(t, 60*time.Second, width, height, opts...)
}

// tabFor is tab open for at most limit: a test that loads several views
// in one tab gives each the minute a tab has.
func tabFor(t *testing.T, limit time.Duration, width, height int64, opts ...chromedp.EmulateViewportOption) context.Context {
	t.Helper()
	if browser == nil {
		t.Fatal("browser tests: Chromium did not start (TestMain)")
	}
	ctx, cancel := chromedp.NewContext(browser)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	var mu sync.Mutex
	var logged []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == "error" || m.IsException() {
				mu.Lock()
				logged = append(logged, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	tctx, tcancel := context.WithTimeout(ctx, limit)
	t.Cleanup(func() {
		tcancel()
		cancel()
		mu.Lock()
		defer mu.Unlock()
		for _, l := range logged {
			t.Errorf("the page logged %s", l)
		}
	})
	do(t, tctx, chromedp.EmulateViewport(width, height, opts...))
	return tctx
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression in the page into T.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %.80s: %v", js, err)
	}
	return v
}

// idle waits until the page has no request under way and cond (a
// JavaScript expression) holds.
func idle(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	js := `document.documentElement.dataset.loading === 'false' && !!(` + cond + `)`
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(45*time.Second))); err != nil {
		state := eval[string](t, ctx, `location.href + ' loading=' + document.documentElement.dataset.loading + ' error=' + document.getElementById('error').textContent`)
		t.Fatalf("waiting for %s: %v (%s)", cond, err, state)
	}
}

// window is the range the page asked the API for.
func window(t *testing.T, ctx context.Context) url.Values {
	v := eval[[]string](t, ctx, `[document.documentElement.dataset.from, document.documentElement.dataset.to]`)
	return url.Values{"from": {v[0]}, "to": {v[1]}}
}

// screenshot saves the tab's view under the screenshots directory
// ($EXPLORER_SCREENSHOTS, else a temporary one) and answers its path.
func screenshot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("EXPLORER_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "shardline-explorer-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}
