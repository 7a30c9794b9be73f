// Package devserver runs shardline on one machine: DynamoDB Local, the table
// made from the stack's definition, the API served on localhost through the
// real Lambda handlers, and a Kinesis stream in kinesalite that the ingest
// handler polls as the stack's event source mapping does. Every local
// mapping gives a failing batch up as the stack's do, to an on-failure
// bucket in a local S3. It is what `make run` starts.
package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/local/httpapi"
	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/local/openapi"
	"github.com/shardline/shardline/ops/explorer"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Options configure Run.
type Options struct {
	Addr     string // where the API listens, such as 127.0.0.1:8080
	DDBPort  int    // DynamoDB Local's port; 0 picks a free one
	DBDir    string // keep DynamoDB Local's data here; empty is in memory
	Endpoint string // use this DynamoDB endpoint instead of starting DynamoDB Local
	Table    string // the table's name
	Stream   string // the Kinesis stream's name
	// KinesisPort and S3Port are kinesalite's and the local S3's ports;
	// 0 picks free ones.
	KinesisPort, S3Port int
	Samples             string // directory of sample events to replay; empty replays nothing
	LogLevel            slog.Level
	Getenv              func(string) string // the ingest configuration's environment
	Out                 io.Writer           // progress and results
	DDBLog              *os.File            // DynamoDB Local's output; nil discards it
	OnKinesis           func(Kinesis)       // called once the stream is polled (for tests)
	// Tenants is the tenants' JSON (ReadTenants), served on their routes
	// as the stack serves them, without IAM; empty: the environment's
	// TENANTS, if any. A tenant's own stream is not made locally.
	Tenants string
}

// Serve is Run for tests: it starts everything, replays the samples and
// prints the help as Run does, then returns, the API listening: its URL,
// and stop, which stops everything and returns the API server's error if
// it failed meanwhile.
func Serve(ctx context.Context, o Options) (url string, stop func() error, err error) {
	s, err := startWithSamples(ctx, o)
	if err != nil {
		return "", nil, err
	}
	return s.URL, func() error {
		var err error
		select {
		case e := <-s.serveErr:
			err = fmt.Errorf("API server: %w", e)
		default:
		}
		s.Close()
		return err
	}, nil
}

// Server is the local stack, running: Start returns one, serving the API
// in the background; Close stops it.
type Server struct {
	// URL is the API's base URL, such as http://127.0.0.1:8080.
	URL string
	// Endpoint is DynamoDB's: DynamoDB Local's, or Options.Endpoint.
	Endpoint string
	// Kinesis is the local stream the ingest function polls.
	Kinesis Kinesis
	// ArchiveDir stands in for the archive bucket.
	ArchiveDir string

	o        Options
	ingest   *ingest.Handler
	client   *dynamodb.Client
	failed   failed
	serveErr chan error
	cancel   context.CancelFunc // ends the pollers
	closers  []func()           // in the order they were started
}

// Start starts everything — DynamoDB Local (unless Options.Endpoint names
// one), the table, the local S3 with the on-failure bucket, the counter
// and archive functions on the table's stream, kinesalite with the ingest
// function polling it — and serves the API, its OpenAPI document and the
// explorer. It replays no samples (Run does). On an error, what was
// started is stopped again.
func Start(ctx context.Context, o Options) (s *Server, err error) {
	ctx, cancel := context.WithCancel(ctx) // the pollers' lifetime
	s = &Server{o: o, cancel: cancel}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	out := o.Out
	s.Endpoint = o.Endpoint
	if s.Endpoint == "" {
		fmt.Fprintln(out, "starting DynamoDB Local ...")
		srv, err := ddblocal.Start(ctx, ddblocal.Options{Port: o.DDBPort, DBDir: o.DBDir, Log: o.DDBLog})
		if err != nil {
			return s, err
		}
		s.closers = append(s.closers, func() { srv.Close(); fmt.Fprintln(out, "stopped DynamoDB Local") })
		s.Endpoint = srv.Endpoint
	}
	fmt.Fprintf(out, "DynamoDB Local at %s\n", s.Endpoint)

	getenv := func(k string) string {
		if k == ingest.EnvTable {
			return o.Table
		}
		if k == tenant.EnvTenants && o.Tenants != "" {
			return o.Tenants
		}
		return o.Getenv(k)
	}
	cfg, err := ingest.ConfigFromEnv(getenv)
	if err != nil {
		return s, err
	}
	s.client = ddbclient.Static(s.Endpoint, cfg.WriteConcurrency)
	if err := schema.Create(ctx, s.client, o.Table); err != nil {
		return s, err
	}
	fmt.Fprintf(out, "table %s ready (GSI %s, TTL on %q)\n", o.Table, schema.GSIName, schema.TTL)

	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: o.LogLevel}))
	s.ingest = ingest.New(cfg, s.client, ingest.Options{Logger: log})
	qcfg, err := query.ConfigFromEnv(getenv)
	if err != nil {
		return s, err
	}
	fmt.Fprintf(out, "cursor key: %s\n", qcfg.CursorKeyOrigin())
	qh := query.New(qcfg, s.client, query.Options{Logger: log})
	mux := httpapi.NewMux()
	mux.Handle("POST "+ingest.Route, s.ingest.HTTP)
	mux.Handle("GET "+query.EventsRoute, qh.HTTP)
	mux.Handle("GET "+query.QuarantineRoute, qh.HTTP)
	mux.Handle("GET "+query.CountsRoute, qh.HTTP)
	mux.Handle("GET "+query.SourcesRoute, qh.HTTP)
	post, get := TenantRoutes(cfg.Tenants)
	for _, k := range post {
		mux.Handle(k, s.ingest.HTTP)
	}
	for _, k := range get {
		mux.Handle(k, qh.HTTP)
	}
	if len(post) > 0 {
		fmt.Fprintf(out, "tenants %s: their routes are served, %s<name>/events, /counts, /sources, /quarantine\n",
			strings.Join(cfg.Tenants.Names(), ", "), apigw.TenantsPath)
	}
	fb, stopS3, err := startS3(ctx, out, o.S3Port, o.DBDir)
	if err != nil {
		return s, err
	}
	s.failed = fb
	s.closers = append(s.closers, stopS3)
	if err := startCounter(ctx, out, s.client, s.Endpoint, o.Table, cfg.Retention, fb, log); err != nil {
		return s, err
	}
	if s.ArchiveDir, err = startArchive(ctx, out, s.client, s.Endpoint, o.Table, o.DBDir, fb, log); err != nil {
		return s, err
	}
	if o.Stream == "" {
		o.Stream = o.Table
	}
	kin, stopKinesis, err := startKinesis(ctx, out, o, s.ingest, fb, log)
	if err != nil {
		return s, err
	}
	s.Kinesis = kin
	s.closers = append(s.closers, stopKinesis)
	if o.OnKinesis != nil {
		o.OnKinesis(kin)
	}

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return s, fmt.Errorf("listen on %s (choose another with -addr): %w", o.Addr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	httpSrv := &http.Server{Handler: withDocument(explorer.With(mux)), ReadHeaderTimeout: 10 * time.Second}
	s.serveErr = make(chan error, 1)
	go func() { s.serveErr <- httpSrv.Serve(ln) }()
	s.closers = append(s.closers, func() { httpSrv.Close() })
	fmt.Fprintf(out, "serving POST %s%s and GET %s, %s, %s and %s on %s\n", s.URL, ingest.Route,
		query.EventsRoute, query.QuarantineRoute, query.CountsRoute, query.SourcesRoute, s.URL)
	fmt.Fprintf(out, "the API's OpenAPI document: %s%s\n", s.URL, openapi.Path)
	return s, nil
}

// Close stops what Start started: the pollers first, then the rest, the
// last started first: the API, kinesalite, the local S3, DynamoDB Local.
func (s *Server) Close() error {
	s.cancel()
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
	return nil
}

// Run starts everything, replays the samples, prints what was stored and
// how to go on, and serves until ctx is done; then it stops everything.
func Run(ctx context.Context, o Options) error {
	s, err := startWithSamples(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	select {
	case <-ctx.Done():
		fmt.Fprintln(o.Out, "\nshutting down")
		return nil
	case err := <-s.serveErr:
		return fmt.Errorf("API server: %w", err)
	}
}

// startWithSamples is Start, then the samples replayed and the help
// printed: what Run and Serve do before serving.
func startWithSamples(ctx context.Context, o Options) (*Server, error) {
	s, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := s.samples(ctx, o.Out); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.help(o.Out); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// samples replays the samples of Options.Samples, if any, and prints
// what was stored, the sample query's answer, the dashboards and the
// archive.
func (s *Server) samples(ctx context.Context, out io.Writer) error {
	if s.o.Samples == "" {
		return nil
	}
	if err := sendSamples(ctx, out, s.ingest, s.URL, s.o.Samples); err != nil {
		return err
	}
	stored, err := printStored(ctx, out, s.client, s.o.Table)
	if err != nil {
		return err
	}
	if err := sampleQuery(ctx, out, s.URL, s.o.Samples); err != nil {
		return err
	}
	if err := dashboards(ctx, out, s.URL, stored); err != nil {
		return err
	}
	return archived(ctx, out, s.ArchiveDir, stored)
}

// helpText is what Run prints once everything runs: how to send events and
// read them back, and where given-up batches go.
var helpText = template.Must(template.New("help").Parse(`
send your own events, then read them back:
  curl -si -X POST {{.URL}}{{.IngestRoute}} -H 'content-type: application/json' \
    -d '{"id":"1","source":"my-service","type":"com.example.hello","data":{"hello":"world"}}'
  curl -s '{{.URL}}{{.EventsRoute}}?source=my-service&consistent=true'
  curl -s '{{.URL}}{{.QuarantineRoute}}'
  curl -s '{{.URL}}{{.CountsRoute}}?source=my-service&interval=1m'
  curl -s '{{.URL}}{{.SourcesRoute}}'
or put them on the local Kinesis stream (any credentials will do):
  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local aws kinesis put-record --endpoint-url {{.Kinesis.Endpoint}} --region {{.Region}} \
    --stream-name {{.Kinesis.Stream}} --partition-key k --cli-binary-format raw-in-base64-out \
    --data '{"id":"2","source":"my-service","type":"com.example.hello"}'
batches the local mappings give up on land, records included, in the local S3 bucket {{.Bucket}}; process them again with:
  EVENTS_TABLE={{.Table}} AWS_REGION={{.Region}} AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
  AWS_ENDPOINT_URL_DYNAMODB={{.Endpoint}} AWS_ENDPOINT_URL_S3={{.S3}} \
    ./bin/shardline redrive --bucket {{.Bucket}} --ingest-mapping {{.IngestMapping}} --counter-mapping {{.CounterMapping}} --archive-mapping {{.ArchiveMapping}} \
      --archive-dir {{.ArchiveDir}} --tenants env --dry-run

open the explorer, a page over the API, at {{.URL}}/
serving until Ctrl-C
`))

// help prints helpText for s.
func (s *Server) help(out io.Writer) error {
	return helpText.Execute(out, struct {
		*Server
		IngestRoute, EventsRoute, QuarantineRoute, CountsRoute, SourcesRoute string
		Region, Bucket, Table, S3                                            string
		IngestMapping, CounterMapping, ArchiveMapping                        string
	}{s, ingest.Route, query.EventsRoute, query.QuarantineRoute, query.CountsRoute, query.SourcesRoute,
		kinesislocal.Region, FailedBucket, s.o.Table, s.failed.endpoint,
		LocalIngestMapping, LocalCounterMapping, LocalArchiveMapping})
}

// withDocument serves the API's OpenAPI document at openapi.Path beside
// the API's routes.
func withDocument(api http.Handler) http.Handler {
	doc := openapi.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == openapi.Path {
			doc.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// printStored lists what the table holds: events by source, day and shard,
// and the quarantine.
func printStored(ctx context.Context, out io.Writer, client *dynamodb.Client, table string) (int, error) {
	var evs, quar [][]string
	err := ddblocal.Scan(ctx, client, &dynamodb.ScanInput{TableName: aws.String(table)}, func(page *dynamodb.ScanOutput) error {
		for _, it := range page.Items {
			pkS, skS := schema.S(it[schema.PK]), schema.S(it[schema.SK])
			pk, err := bucketing.ParsePK(pkS)
			if err != nil {
				continue // shard records
			}
			t, id, err := bucketing.ParseSortKey(skS)
			if err != nil {
				continue
			}
			if pk.Space == bucketing.Events {
				evs = append(evs, []string{pk.Source, pk.Day, fmt.Sprint(pk.Shard), t.Format(time.RFC3339Nano), id, schema.S(it[schema.Type])})
			} else {
				quar = append(quar, []string{t.Format(time.RFC3339Nano), truncate(schema.S(it[schema.Reason]), 70)})
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("scan %s: %w", table, err)
	}
	sort.Slice(evs, func(i, j int) bool { return strings.Join(evs[i][:5], "\x00") < strings.Join(evs[j][:5], "\x00") })
	sort.Slice(quar, func(i, j int) bool { return quar[i][0] < quar[j][0] })
	fmt.Fprintf(out, "\nstored %d events:\n", len(evs))
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SOURCE\tDAY\tSHARD\tTIME\tID\tTYPE")
	for _, r := range evs {
		fmt.Fprintf(tw, "  %s\n", strings.Join(r, "\t"))
	}
	tw.Flush()
	fmt.Fprintf(out, "\nquarantined %d records:\n", len(quar))
	tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RECEIVED\tREASON")
	for _, r := range quar {
		fmt.Fprintf(tw, "  %s\n", strings.Join(r, "\t"))
	}
	return len(evs), tw.Flush()
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
