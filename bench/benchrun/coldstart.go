package benchrun

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"time"
)

// ColdRow is one function's size and start-up time.
type ColdRow struct {
	Function        string  `json:"function"`
	BinaryBytes     int64   `json:"binary_bytes_arm64"`
	InitMs          float64 `json:"init_ms"`           // process start to its first request for work
	FirstResponseMs float64 `json:"first_response_ms"` // process start to its first answer
	// InitRatio is InitMs over the hello-world function's, measured in
	// the same run: what the function's own start costs beyond Go's and
	// the runtime client's.
	InitRatio float64 `json:"init_ratio_to_hello_world"`
}

// lambdaFlags are `make build`'s.
var lambdaFlags = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w -buildid="}

func build(ctx context.Context, dir, pkg, goos, goarch string) (string, error) {
	out := filepath.Join(dir, goos+"-"+goarch, filepath.Base(pkg), "bootstrap")
	args := append([]string{"build"}, lambdaFlags...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, pkg)...)
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s for %s/%s: %v\n%s", pkg, goos, goarch, err, b)
	}
	return out, nil
}

// runtimeAPI is a minimal Lambda Runtime API: it hands out one invocation
// and notes when the function asked for it and when it answered.
type runtimeAPI struct {
	event   string
	asked   chan time.Time
	answers chan time.Time
	srv     *http.Server
	addr    string
}

func newRuntimeAPI(event string) (*runtimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &runtimeAPI{event: event, asked: make(chan time.Time, 8), answers: make(chan time.Time, 8), addr: ln.Addr().String()}
	served := false
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, req *http.Request) {
		r.asked <- time.Now()
		if served { // no second invocation: wait until the run ends
			<-req.Context().Done()
			return
		}
		served = true
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "bench-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(30*time.Second).UnixMilli()))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:bench")
		io.WriteString(w, r.event)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/bench-1/response", func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.answers <- time.Now()
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		fmt.Fprintf(os.Stderr, "runtime API: %s %s\n", req.URL.Path, b)
		w.WriteHeader(http.StatusAccepted)
	})
	r.srv = &http.Server{Handler: mux}
	go r.srv.Serve(ln)
	return r, nil
}

// coldRuns is how many times coldStart starts a function: the median of
// many, as a process start on a shared machine varies by milliseconds.
const coldRuns = 21

// coldStart starts bin under the runtime API stub coldRuns times and keeps
// the median times to its first request and its first answer.
func coldStart(ctx context.Context, bin string, env []string, event string) (initMs, firstMs float64, err error) {
	var inits, firsts []float64
	for range coldRuns {
		api, err := newRuntimeAPI(event)
		if err != nil {
			return 0, 0, err
		}
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+api.addr)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return 0, 0, err
		}
		var asked, answered time.Time
		select {
		case asked = <-api.asked:
		case <-time.After(20 * time.Second):
		}
		select {
		case answered = <-api.answers:
		case <-time.After(20 * time.Second):
		}
		cmd.Process.Kill()
		cmd.Wait()
		api.srv.Close()
		if asked.IsZero() || answered.IsZero() {
			return 0, 0, fmt.Errorf("%s did not answer under the runtime API stub", bin)
		}
		inits = append(inits, float64(asked.Sub(start).Microseconds())/1000)
		firsts = append(firsts, float64(answered.Sub(start).Microseconds())/1000)
	}
	sort.Float64s(inits)
	sort.Float64s(firsts)
	return inits[len(inits)/2], firsts[len(firsts)/2], nil
}

func coldStarts(ctx context.Context, tmp, stubURL string) ([]ColdRow, error) {
	// What Lambda gives a function, and nothing of this machine's: a
	// workstation's AWS_CA_BUNDLE alone makes the SDK parse a bundle of
	// certificates at start, milliseconds that no Lambda pays.
	env := []string{"EVENTS_TABLE=bench", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=bench",
		"AWS_SECRET_ACCESS_KEY=bench", "AWS_SESSION_TOKEN=bench", "AWS_ENDPOINT_URL_DYNAMODB=" + stubURL,
		"AWS_LAMBDA_FUNCTION_NAME=bench", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "TZ=:UTC", "LANG=en_US.UTF-8"}
	ingestEvent := `{"version":"2.0","rawPath":"/v1/events","headers":{"content-type":"application/json"},` +
		`"requestContext":{"http":{"method":"POST","path":"/v1/events"},"requestId":"r1"},` +
		`"body":"{\"id\":\"1\",\"source\":\"cold\",\"type\":\"t\"}","isBase64Encoded":false}`
	queryEvent := `{"version":"2.0","rawPath":"/v1/events","rawQueryString":"source=cold",` +
		`"requestContext":{"http":{"method":"GET","path":"/v1/events"},"requestId":"r2"}}`
	var rows []ColdRow
	for _, f := range []struct{ name, pkg, event string }{
		{"hello world (baseline)", "./bench/hello", "{}"},
		{"ingest", "./functions/ingest", ingestEvent}, {"query", "./functions/query", queryEvent},
	} {
		arm, err := build(ctx, tmp, f.pkg, "linux", "arm64")
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(arm)
		if err != nil {
			return nil, err
		}
		host, err := build(ctx, tmp, f.pkg, runtime.GOOS, runtime.GOARCH)
		if err != nil {
			return nil, err
		}
		initMs, firstMs, err := coldStart(ctx, host, env, f.event)
		if err != nil {
			return nil, err
		}
		rows = append(rows, ColdRow{Function: f.name, BinaryBytes: st.Size(), InitMs: initMs, FirstResponseMs: firstMs})
	}
	for i := range rows {
		rows[i].InitRatio = rows[i].InitMs / rows[0].InitMs // rows[0] is the baseline
	}
	return rows, nil
}
