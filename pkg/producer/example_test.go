package producer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/pkg/producer"
)

// Order is an application's event, a CloudEvent in JSON.
type Order struct {
	SpecVersion string         `json:"specversion"`
	ID          string         `json:"id,omitempty"` // Put gives it a UUIDv7 when empty
	Source      string         `json:"source"`
	Type        string         `json:"type"`
	Data        map[string]any `json:"data"`
}

func ExampleKinesis() {
	ctx := context.Background()
	client := kinesis.New(kinesis.Options{ // or kinesis.NewFromConfig(cfg)
		Region: "eu-west-1", BaseEndpoint: aws.String(fakeKinesis()),
		Credentials: credentials.NewStaticCredentialsProvider("id", "secret", ""),
	})
	p := producer.NewKinesis(client, "events", producer.WithAggregation(),
		producer.WithOnResult(func(o producer.Outcome) {
			if o.Err != nil {
				log.Printf("event %s not stored: %v", o.ID, o.Err)
			}
		}))
	for i := range 3 {
		err := p.Put(ctx, Order{SpecVersion: "1.0", Source: "shop/orders", Type: "order.placed", Data: map[string]any{"n": i}})
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil { // sends what is buffered
		log.Fatal(err)
	}
	s := p.Stats()
	fmt.Printf("%d events put in %d record(s), %d failed\n", s.Put, s.Records, s.Failed)
	// Output: 3 events put in 1 record(s), 0 failed
}

func ExampleHTTP() {
	api := fakeAPI() // "http://127.0.0.1:8080" for make run
	h := producer.NewHTTP(api)
	res, err := h.Send(context.Background(),
		json.RawMessage(`{"specversion":"1.0","id":"a1","source":"shop/orders","type":"order.placed"}`),
		json.RawMessage(`{"specversion":"1.0","id":"a2","source":"shop/orders"}`),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("accepted:", res.Accepted)
	for _, r := range res.Rejected {
		fmt.Printf("rejected #%d (%s): %s\n", r.Index, r.ID, r.Error)
	}
	// Output:
	// accepted: 1
	// rejected #1 (a2): type: is required
}

// A deployed API with IAM authorization wants SigV4-signed requests.
func ExampleWithSigner() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx) // the SDK's credential chain
	if err != nil {
		log.Fatal(err)
	}
	h := producer.NewHTTP("https://abc123.execute-api.eu-west-1.amazonaws.com",
		producer.WithSigner(cfg.Credentials, cfg.Region))
	_, _ = h.Send(ctx, Order{SpecVersion: "1.0", Source: "shop/orders", Type: "order.placed"})
}

// fakeKinesis serves PutRecords, storing every record, and returns its URL.
func fakeKinesis() string {
	seq := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Records []json.RawMessage }
		json.NewDecoder(r.Body).Decode(&in)
		var out []string
		for range in.Records {
			seq++
			out = append(out, fmt.Sprintf(`{"SequenceNumber":"%d","ShardId":"shardId-000000000000"}`, seq))
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fmt.Fprintf(w, `{"FailedRecordCount":0,"Records":[%s]}`, strings.Join(out, ","))
	}))
	return srv.URL
}

// fakeAPI answers POST /v1/events as shardline does, refusing events
// without a type, and returns its URL.
func fakeAPI() string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var evs []struct{ ID, Type string }
		json.NewDecoder(r.Body).Decode(&evs)
		type rejection struct {
			Index int    `json:"index"`
			ID    string `json:"id"`
			Error string `json:"error"`
		}
		rejected := []rejection{}
		for i, e := range evs {
			if e.Type == "" {
				rejected = append(rejected, rejection{i, e.ID, "type: is required"})
			}
		}
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(map[string]any{"accepted": len(evs) - len(rejected), "rejected": rejected})
	}))
	return srv.URL
}
