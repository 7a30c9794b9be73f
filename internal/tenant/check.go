package tenant

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/echo"
	"github.com/shardline/shardline/internal/emf"
)

// ReasonPrefix begins the quarantine reason of a record refused for its
// tenant: one on a tenant's own stream whose source is not the tenant's.
const ReasonPrefix = "tenant: "

// NotOwned is the message refusing source on tenant's route or stream,
// the 403's error: source: "…" is not a source of tenant team-a. The
// source is quoted, and cut past echo.MaxQuoted bytes.
func NotOwned(tenant, source string) string {
	return fmt.Sprintf("source: %s is not a source of tenant %s", echo.Quote(source), tenant)
}

// CallerMay says whether the caller whose unique id is userID
// (requestContext.authorizer.iam.userId, "AROA…:session" for an assumed
// role) may call tenant's write route (write) or its read routes, as
// defence in depth behind IAM. Where the stack made the tenant's roles
// (TENANT_ROLES), a caller that is one of the stack's tenant roles must
// be the route's: the tenant's writer to write, its reader to read. A
// caller that is none of them (a principal of the deployer's own, given
// the routes by GrantTenantWrite or GrantTenantRead, or no IAM caller at
// all, as locally) is left to IAM; its sources are checked all the same.
func (c *Config) CallerMay(tenant, userID string, write bool) bool {
	r := c.Roles(tenant)
	own := r.Reader
	if write {
		own = r.Writer
	}
	if own == "" || isRole(userID, own) {
		return true
	}
	for _, rs := range c.roles {
		if isRole(userID, rs.Writer) || isRole(userID, rs.Reader) {
			return false
		}
	}
	return true
}

// isRole says whether a caller's unique id is of the role whose unique id
// is roleID: an assumed role's is "<role id>:<session>".
func isRole(userID, roleID string) bool {
	return roleID != "" && (userID == roleID || strings.HasPrefix(userID, roleID+":"))
}

// Refusal is one refused request or record of a tenant, for the log and
// the metric.
type Refusal struct {
	Tenant string // as named by the route or stream; may be no tenant
	Route  string // the route key, or the stream's ARN
	Caller string // the caller's ARN; empty for a stream's record
	Reason string
	Count  int // records refused; 1 for a request
}

// Report logs r at warning level, with the caller's ARN, and counts it in
// MetricRefused through metrics (whose dimensions name the function, as
// the stack's alarm expects). now stamps the metric.
func Report(ctx context.Context, log *slog.Logger, metrics *emf.Logger, now time.Time, r Refusal) {
	if r.Count == 0 {
		r.Count = 1
	}
	attrs := []slog.Attr{
		slog.String("tenant", echo.Cut(r.Tenant, echo.MaxQuoted)),
		slog.String("route", echo.Cut(r.Route, 2*echo.MaxQuoted)),
		slog.String("caller_arn", r.Caller),
		slog.String("reason", r.Reason),
		slog.Int("refused", r.Count),
	}
	if err := metrics.Log(ctx, log, slog.LevelWarn, "tenant refused", now, attrs,
		emf.Metric{Name: MetricRefused, Value: float64(r.Count), Unit: "Count"}); err != nil {
		log.Warn("metrics", slog.String("error", err.Error()))
	}
}
