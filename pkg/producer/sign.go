package producer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Signer signs requests to shardline's HTTP API with SigV4 for API Gateway
// (service execute-api), as its IAM authorization wants. HTTP signs with
// one (WithSigner); Transport signs any other request, such as the GETs
// of the read API. Make one with NewSigner.
type Signer struct {
	creds  aws.CredentialsProvider
	region string
	v4     *v4.Signer
}

// NewSigner returns a Signer that signs for region with credentials from
// creds, such as config.LoadDefaultConfig's.
func NewSigner(creds aws.CredentialsProvider, region string) *Signer {
	return &Signer{creds: creds, region: region, v4: v4.NewSigner()}
}

// Sign adds a SigV4 signature of req, whose body is body, to its headers.
func (s *Signer) Sign(ctx context.Context, req *http.Request, body []byte) error {
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("producer: credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := s.v4.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", s.region, time.Now()); err != nil {
		return fmt.Errorf("producer: sign: %w", err)
	}
	return nil
}

// Transport returns an http.RoundTripper that signs each request, then
// sends it with base (http.DefaultTransport when nil). It reads a
// request's body to sign it and leaves the caller's request untouched.
func (s *Signer) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return signingTransport{s: s, base: base}
}

type signingTransport struct {
	s    *Signer
	base http.RoundTripper
}

func (t signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("producer: read the body to sign: %w", err)
		}
		body = b
	}
	out := req.Clone(req.Context())
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if err := t.s.Sign(req.Context(), out, body); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(out)
}
