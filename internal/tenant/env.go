package tenant

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The functions' environment (docs/configuration.md, "Tenants"). The
// stack sets these only when tenants exist; unset, there are none.
const (
	// EnvTenants holds Config.String: the tenants and their prefixes.
	EnvTenants = "TENANTS"
	// EnvStreams names the ARN of each tenant's own stream, as a JSON
	// object: {"team-a": "arn:aws:kinesis:…:stream/…"} (tenant first, so
	// that the stack writes the ARN, a CloudFormation token, as a value).
	// The ingest function's only.
	EnvStreams = "TENANT_STREAMS"
	// EnvRoles holds the unique ids (AROA…) of the roles the stack made
	// for each tenant, as a JSON object: {"team-a": {"writer": "AROA…",
	// "reader": "AROA…"}}, so that a function can tell the caller's role
	// from requestContext.authorizer.iam.userId ("AROA…:session").
	EnvRoles = "TENANT_ROLES"
)

// MaxEnvBytes bounds what the three variables may take, names and values
// with every CloudFormation token at its longest, of the 4 KB Lambda
// allows a function's whole environment: the other variables keep 1 KB.
// The stack refuses, at synth, tenants that do not fit.
const MaxEnvBytes = 3 << 10

// MetricRefused is the Embedded Metric Format metric (namespace
// emf.Namespace, dimension Function) the functions count a tenant's
// refused request or record in; the stack alarms on it.
const MetricRefused = "TenantRefused"

// Roles are the unique ids of the roles the stack made for a tenant.
type Roles struct {
	Writer string `json:"writer,omitempty"`
	Reader string `json:"reader,omitempty"`
}

// FromEnv reads the tenants, their streams and their roles from the
// environment (getenv is os.Getenv in a function). Unset, there are no
// tenants. A stream or roles naming a tenant the configuration does not
// have, or a stream of a tenant without "stream": true, is an error: the
// variables were not written by the same synth.
func FromEnv(getenv func(string) string) (*Config, error) {
	c := &Config{}
	if v := getenv(EnvTenants); v != "" {
		var err error
		if c, err = Parse([]byte(v)); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvTenants, err)
		}
	}
	if err := decodeEnv(getenv, EnvStreams, &c.streams); err != nil {
		return nil, err
	}
	if err := decodeEnv(getenv, EnvRoles, &c.roles); err != nil {
		return nil, err
	}
	var errs []error
	byARN := map[string]string{}
	for _, name := range sortedKeys(c.streams) {
		arn := c.streams[name]
		if t, ok := c.tenants[name]; !ok || !t.Stream {
			errs = append(errs, fmt.Errorf("%s: stream %s is given to %q, which is not a tenant with \"stream\": true in %s", EnvStreams, cut(arn), name, EnvTenants))
		}
		if !strings.HasPrefix(arn, "arn:") {
			errs = append(errs, fmt.Errorf("%s: %q is not a stream ARN", EnvStreams, cut(arn)))
		}
		if other, ok := byARN[arn]; ok {
			errs = append(errs, fmt.Errorf("%s: stream %s is given to both %s and %s", EnvStreams, cut(arn), other, name))
		}
		byARN[arn] = name
	}
	c.streams = byARN
	for _, name := range sortedKeys(c.roles) {
		if _, ok := c.tenants[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: roles are given to %q, which is not a tenant in %s", EnvRoles, name, EnvTenants))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tenants from the environment (the stack writes them; redeploy it rather than edit them): %w", err)
	}
	return c, nil
}

func decodeEnv[V any](getenv func(string) string, name string, dst *map[string]V) error {
	v := getenv(name)
	if v == "" {
		return nil
	}
	if err := strictDecode([]byte(v), dst); err != nil {
		return fmt.Errorf("%s: want a JSON object: %w", name, err)
	}
	return nil
}

// StreamOwner is the tenant whose own stream has the ARN, and whether
// there is one: a record read from that stream must be that tenant's.
func (c *Config) StreamOwner(streamARN string) (string, bool) {
	if c == nil {
		return "", false
	}
	t, ok := c.streams[streamARN]
	return t, ok
}

// Roles are the ids of the roles the stack made for tenant; empty when it
// made none (or FromEnv did not read them).
func (c *Config) Roles(tenant string) Roles {
	if c == nil {
		return Roles{}
	}
	return c.roles[tenant]
}

// EnvSize is how many bytes the three variables take, names and values,
// for the tenants of c, with each stream ARN streamARNLen bytes long and
// each role id roleIDLen: the stack passes the longest either can be.
func (c *Config) EnvSize(streamARNLen, roleIDLen int) int {
	if c.Len() == 0 {
		return 0
	}
	streams := map[string]string{}
	roles := map[string]Roles{}
	id := strings.Repeat("R", roleIDLen)
	for i, name := range c.Names() {
		if c.tenants[name].Stream {
			// A value of the given length: the JSON is as long as the
			// real one.
			streams[name] = fmt.Sprintf("%0*d", streamARNLen, i)
		}
		roles[name] = Roles{Writer: id, Reader: id}
	}
	size := len(EnvTenants) + len(c.String()) + len(EnvRoles) + len(mustJSON(roles))
	if len(streams) > 0 {
		size += len(EnvStreams) + len(mustJSON(streams))
	}
	return size
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v) // maps of strings cannot fail
	return b
}
