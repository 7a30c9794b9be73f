package browsertest

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestChartOfManyTypes: a source of 300 types, the explorer's default
// chart (by type, 24 hours at 1 minute). The API lists the types with most
// events that fit its answer and sums the rest in the "other" series; the
// chart draws every series the API answers, "other" last and named for
// what it holds, its title counts every event, and the type filter offers
// only the types listed.
func TestChartOfManyTypes(t *testing.T) {
	fx := server(t)
	ctx := tab(t, 1280, 800)
	do(t, ctx, chromedp.Navigate(fx.base+"/?source="+url.QueryEscape(ManyTypes)))
	idle(t, ctx, `document.documentElement.dataset.chartRendered && document.getElementById('chart-source').textContent.includes('·')`)
	w := window(t, ctx)
	var counts countsAnswer
	get(t, fx.base, "/v1/counts", url.Values{"source": {ManyTypes}, "from": w["from"], "to": w["to"], "group_by": {"type"}}, &counts)
	n := len(counts.Series)
	if counts.Interval != "1m" || n < 2 || counts.Series[n-1].Other == nil {
		t.Fatalf("the chart's data: interval %s, %d series; want 1m, and the other series last", counts.Interval, n)
	}
	other := counts.Series[n-1].Other
	if other.Types != ManyTypesCount-(n-1) || other.Overflow {
		t.Fatalf("the other series holds %d types (overflow %v); want the %d types not listed", other.Types, other.Overflow, ManyTypesCount-(n-1))
	}
	var named []string
	for _, s := range counts.Series[:n-1] {
		named = append(named, s.Type)
	}
	otherLabel := "other (" + thousands(other.Types) + " more types)"
	legend := eval[[]string](t, ctx, `[...document.querySelectorAll('.u-legend .u-series .u-label')].map(e => e.textContent)`)
	if want := append(append([]string{"UTC"}, named...), otherLabel); !slices.Equal(legend, want) {
		t.Errorf("the chart's legend: %d labels, ending %q; want %d, ending %q", len(legend), legend[max(0, len(legend)-2):], len(want), want[len(want)-2:])
	}
	if title := eval[string](t, ctx, `document.getElementById('chart-source').textContent`); title != ManyTypes+" · "+thousands(fx.many)+" events" {
		t.Errorf("the chart's title: %q; want all %d events counted", title, fx.many)
	}
	if label := eval[string](t, ctx, `document.getElementById('chart').getAttribute('aria-label')`); !strings.Contains(label, ", "+otherLabel+" ") {
		t.Errorf("the chart says %.200q…; want it to name %q", label, otherLabel)
	}
	screenshot(t, ctx, "many-types-1280x800")
	if opts := eval[[]string](t, ctx, `[...document.querySelectorAll('#types option')].map(o => o.value)`); !slices.Equal(opts, named) {
		t.Errorf("the type filter offers %d types; want the %d listed", len(opts), len(named))
	}
}
