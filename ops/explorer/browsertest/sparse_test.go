package browsertest

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// phone is the viewport of a 390×844 phone, as TestLayouts emulates it.
var phone = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulateMobile}

// seriesExtent is the width, in CSS pixels, of what the chart draws in its
// first series' colour (a blue: far more blue than red, which the grid,
// axes and text are not) above the zero line, in the plot's upper half:
// where a source's one event shows. A spike one bucket wide at 1,440
// buckets is a hairline, a pixel or two.
const seriesExtent = `(() => {
	const c = document.querySelector('#chart canvas');
	const g = c.getContext('2d');
	const plot = document.querySelector('#chart .u-over').getBoundingClientRect();
	const box = c.getBoundingClientRect();
	const k = c.width / box.width;
	const x0 = Math.round((plot.left - box.left) * k), y0 = Math.round((plot.top - box.top) * k);
	const w = Math.round(plot.width * k), h = Math.round(plot.height * k / 2);
	const px = g.getImageData(x0, y0, w, h).data;
	let left = Infinity, right = -Infinity;
	for (let i = 0; i < px.length; i += 4) {
		if (px[i + 3] > 0 && px[i + 2] - px[i] > 40) {
			const x = (i / 4) % w;
			left = Math.min(left, x); right = Math.max(right, x);
		}
	}
	return right < left ? 0 : (right - left + 1) / k;
})()`

// TestOneEventIsVisible: a source with one event in 24 hours, charted at
// 1 minute (1,440 buckets), shows that event as a mark a person sees, not a
// hairline, split and stacked, on a desktop and on a phone.
func TestOneEventIsVisible(t *testing.T) {
	fx := server(t)
	for _, c := range []struct {
		name          string
		width, height int64
		opts          []chromedp.EmulateViewportOption
	}{{"1280x800", 1280, 800, nil}, {"390x844", 390, 844, phone}} {
		for _, mode := range []string{"stacked", "split"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				ctx := tab(t, c.width, c.height, c.opts...)
				do(t, ctx, chromedp.Navigate(fx.base+"/?source="+url.QueryEscape(Lone)+"&mode="+mode))
				idle(t, ctx, `document.documentElement.dataset.chartRendered && document.getElementById('chart-source').textContent.includes('1 event')`)
				w := window(t, ctx)
				var counts countsAnswer
				get(t, fx.base, "/v1/counts", url.Values{"source": {Lone}, "from": w["from"], "to": w["to"], "group_by": {"type"}}, &counts)
				if counts.Interval != "1m" || len(counts.Series) != 1 || len(counts.Series[0].Points) != 1440 {
					t.Fatalf("the chart's data: interval %s, %d series; want 1m, one series of 1440 points", counts.Interval, len(counts.Series))
				}
				wide := eval[float64](t, ctx, seriesExtent)
				t.Logf("the one event is drawn %.1f px wide", wide)
				if wide < 5 {
					t.Errorf("the one event is drawn %.1f px wide: a hairline; want a mark at least 5 px wide", wide)
				}
				screenshot(t, ctx, fmt.Sprintf("one-event-%s-%s", c.name, mode))
			})
		}
	}
}

// axisLabels records, from the next chart drawn, every text uPlot draws
// on the canvas with where it goes: its box in canvas pixels.
const recordLabels = `(() => {
	window.drawnTexts = [];
	const fill = CanvasRenderingContext2D.prototype.fillText;
	CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
		const w = this.measureText(text).width;
		const left = this.textAlign === 'center' ? x - w / 2 : this.textAlign === 'right' || this.textAlign === 'end' ? x - w : x;
		const t = this.getTransform();
		window.drawnTexts.push({text: String(text), left: left + t.e, right: left + w + t.e, y: y + t.f, align: this.textAlign});
		return fill.call(this, text, x, y, ...rest);
	};
})()`

type drawnText struct {
	Text  string  `json:"text"`
	Left  float64 `json:"left"`
	Right float64 `json:"right"`
	Y     float64 `json:"y"`
	Align string  `json:"align"`
}

// TestTimeAxisLabelsApart: at 390 px (a phone) and at 1280 px, over 1
// hour, 6 and 24 hours across a UTC midnight, 7 days (one of them from
// just after a midnight, its first tick at noon) and 31 days, no two
// labels of the time axis touch: each is at least 6 px from the next on
// its line, as the canvas measures them. Each viewport's ranges load one
// after the other in one tab, each a page of its own (a navigation).
func TestTimeAxisLabelsApart(t *testing.T) {
	fx := server(t)
	// Windows that cross a UTC midnight put a date under a tick near the
	// axis's start and another under the next day's first tick.
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	custom := func(from, to time.Duration) string {
		return "range=custom&from=" + midnight.Add(from).Format(time.RFC3339) + "&to=" + midnight.Add(to).Format(time.RFC3339)
	}
	ranges := []struct{ name, query string }{
		{"1h", custom(-30*time.Minute, 30*time.Minute)}, {"6h", custom(-3*time.Hour, 3*time.Hour)},
		{"24h", custom(-7*time.Hour, 17*time.Hour)}, {"24h-late", custom(-150*time.Minute, 1290*time.Minute)},
		{"7d", "range=7d"}, {"7d-after-midnight", custom(-7*24*time.Hour+15*time.Minute, 15*time.Minute)}, {"31d", "range=31d"},
	}
	for _, c := range []struct {
		name          string
		width, height int64
		opts          []chromedp.EmulateViewportOption
	}{{"1280x800", 1280, 800, nil}, {"390x844", 390, 844, phone}, {"390x844@1x", 390, 844, nil}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := tabFor(t, time.Duration(len(ranges))*time.Minute, c.width, c.height, c.opts...)
			for _, rng := range ranges {
				t.Run(rng.name, func(t *testing.T) {
					do(t, ctx, chromedp.Navigate(fx.base+"/?source="+Checkout+"&"+rng.query))
					idle(t, ctx, `document.documentElement.dataset.chartRendered`)
					// Draw again, recording: split, then stacked.
					eval[chromedp.Void](t, ctx, recordLabels)
					n := eval[int](t, ctx, `performance.getEntriesByName('chart-render').length`)
					do(t, ctx, chromedp.Click(chromedp.CSS(`[data-mode="split"]`)))
					idle(t, ctx, fmt.Sprintf(`performance.getEntriesByName('chart-render').length === %d`, n+1))
					texts := eval[[]drawnText](t, ctx, `window.drawnTexts`)
					dpr := eval[float64](t, ctx, `devicePixelRatio`)
					// The time axis's labels are centred on their ticks; a line
					// of them shares a y.
					lines := map[float64][]drawnText{}
					for _, d := range texts {
						if d.Align == "center" {
							lines[d.Y] = append(lines[d.Y], d)
						}
					}
					if len(lines) == 0 {
						t.Fatalf("no time axis labels drawn: %v", texts)
					}
					closest := math.Inf(1)
					for y, line := range lines {
						slices.SortFunc(line, func(a, b drawnText) int { return int(a.Left - b.Left) })
						var names []string
						for i, d := range line {
							names = append(names, d.Text)
							if i > 0 {
								gap := (d.Left - line[i-1].Right) / dpr
								closest = min(closest, gap)
								if gap < 6 {
									t.Errorf("the time axis labels %q and %q are %.1f px apart; want at least 6", line[i-1].Text, d.Text, gap)
								}
							}
						}
						t.Logf("time axis line at y %.0f: %q", y, names)
					}
					t.Logf("the closest two labels are %.1f px apart", closest)
					screenshot(t, ctx, fmt.Sprintf("time-axis-%s-%s", c.name, rng.name))
				})
			}
		})
	}
}
