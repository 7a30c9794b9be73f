// shardline explorer: a page over the query API (GET /v1/sources, /v1/counts,
// /v1/events, /v1/quarantine), in plain JavaScript with uPlot for the chart.
// No build step: this file is served as it is. The view's state (source,
// range, filters, chart mode, tab) lives in the URL; every time is UTC.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const MIN = 60e3, HOUR = 60 * MIN, DAY = 24 * HOUR;
  // Each preset's length, and the step its end is rounded up to: the
  // interval the API picks for it, so that its rounding changes nothing.
  const PRESETS = { '1h': [HOUR, MIN], '24h': [DAY, MIN], '7d': [7 * DAY, 15 * MIN], '31d': [31 * DAY, HOUR] };
  const MAX_SPAN = 31 * DAY;
  const INTERVAL_MS = { '1m': MIN, '5m': 5 * MIN, '15m': 15 * MIN, '1h': HOUR, '1d': DAY };
  const INTERVALS = Object.keys(INTERVAL_MS);
  const PAGE = 100; // events or records per request
  const MAX_ROWS = 2000; // rows a table keeps; past that the page asks for a narrower range
  const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac',
    '#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];
  const OTHER_COLOUR = '#8c959f'; // the "other" series: neutral, apart from the palette
  // The time axis in 24-hour UTC, in the shape of uPlot's table of tick
  // formats by tick spacing (seconds): the format, then what a tick adds at
  // a new year, month, day, hour, minute and second (timeLabels reads it).
  const TIME_TICKS = [
    [365 * 86400, '{YYYY}', null, null, null, null, null, null, 1],
    [28 * 86400, '{MMM}', '\n{YYYY}', null, null, null, null, null, 1],
    [86400, '{MMM} {D}', '\n{YYYY}', null, null, null, null, null, 1],
    [3600, '{HH}:{mm}', '\n{MMM} {D} {YYYY}', null, '\n{MMM} {D}', null, null, null, 1],
    [60, '{HH}:{mm}', '\n{MMM} {D} {YYYY}', null, '\n{MMM} {D}', null, null, null, 1],
    [1, ':{ss}', '\n{MMM} {D} {YYYY} {HH}:{mm}', null, '\n{MMM} {D} {HH}:{mm}', null, '\n{HH}:{mm}', null, 1],
  ].map((r) => [r[0]].concat(r.slice(1, 8).map((f) => f && uPlot.fmtDate(f))));
  const utc = (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC');
  const LABEL_GAP = 6; // px the time axis keeps between two labels on a line
  let measurer = null;

  // timeLabels labels the time axis's ticks (splits, in seconds, incr
  // apart and space px apart) from TIME_TICKS as uPlot would: each tick its
  // format, and the first tick and each tick that starts a new year, month,
  // day, hour or minute a second line that says so. One change: the first
  // tick's second line, the long one with the year, moves to the next tick
  // that has a second line when the two lines would touch, as they do when
  // a 7-day range starts after midnight and its ticks are 12 hours apart
  // (12:00 "Nov 18 2026" beside 00:00 "Nov 19").
  function timeLabels(u, splits, axisIdx, space, incr) {
    const row = TIME_TICKS.find((r) => incr >= r[0]) || TIME_TICKS[TIME_TICKS.length - 1];
    let prev = null;
    const lines = splits.map((s) => {
      const d = utc(s);
      const parts = [d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
      // The first part that changed and has a format, as uPlot picks it.
      const i = parts.findIndex((v, i) => (!prev || v !== prev[i]) && row[i + 2]);
      prev = parts;
      return [row[1](d), i < 0 ? '' : row[i + 2](d)];
    });
    const next = lines.findIndex((l, i) => i > 0 && l[1]);
    if (lines.length && lines[0][1] && next > 0) {
      const apart = ((splits[next] - splits[0]) / incr) * space;
      const w = (text) => textWidth(u, axisIdx, text.replace('\n', ''));
      if (apart - w(lines[0][1]) / 2 - w(lines[next][1]) / 2 < LABEL_GAP) {
        lines[next][1] = row[2](utc(splits[next]));
        lines[0][1] = '';
      }
    }
    return lines.map((l) => l[0] + l[1]);
  }

  // textWidth is how wide text is drawn on axis axisIdx, in CSS px.
  function textWidth(u, axisIdx, text) {
    measurer = measurer || document.createElement('canvas').getContext('2d');
    const font = u.axes[axisIdx].font; // [the font scaled to the device's pixels, its size in them]
    measurer.font = font[0];
    return measurer.measureText(text).width / (uPlot.pxRatio || devicePixelRatio);
  }
  const nf = new Intl.NumberFormat('en-US');
  const rcuf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

  let state = null; // what the URL says, see readState
  let view = null; // the window [from, to) shown, in ms, and the current load's generation
  let gen = 0;
  let inflight = 0;
  let ctrl = null; // aborts the previous view's requests
  let plot = null;
  const events = { items: [], pages: [], cursor: null };
  const quarantine = { items: [], cursor: null, loadedFor: null };
  let sourcesCursor = null;

  // ---------------------------------------------------------------- state

  function parseTime(v) {
    if (!v) return null;
    const n = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
    return Number.isFinite(n) ? n : null;
  }

  function iso(ms) {
    return new Date(ms).toISOString().replace('.000Z', 'Z');
  }

  function readState() {
    const q = new URLSearchParams(location.search);
    let range = q.get('range') || (q.get('from') && q.get('to') ? 'custom' : '24h');
    if (range !== 'custom' && !PRESETS[range]) range = '24h';
    const s = {
      source: q.get('source') || '', range, from: null, to: null,
      type: q.get('type') || '', subject: q.get('subject') || '',
      mode: q.get('mode') === 'split' ? 'split' : 'stacked',
      interval: INTERVALS.includes(q.get('interval')) ? q.get('interval') : '',
      tab: q.get('tab') === 'quarantine' ? 'quarantine' : 'events',
    };
    if (range === 'custom') {
      const f = parseTime(q.get('from')), t = parseTime(q.get('to'));
      if (f !== null && t !== null && f < t) { s.from = f; s.to = t; } else s.range = '24h';
    }
    return s;
  }

  function urlOf(s) {
    const q = new URLSearchParams();
    if (s.source) q.set('source', s.source);
    if (s.range !== '24h') q.set('range', s.range);
    if (s.range === 'custom') { q.set('from', iso(s.from)); q.set('to', iso(s.to)); }
    if (s.type) q.set('type', s.type);
    if (s.subject) q.set('subject', s.subject);
    if (s.mode !== 'stacked') q.set('mode', s.mode);
    if (s.interval) q.set('interval', s.interval);
    if (s.tab !== 'events') q.set('tab', s.tab);
    const qs = q.toString();
    return location.pathname + (qs ? '?' + qs : '');
  }

  function writeURL(s, push) {
    const url = urlOf(s);
    if (url === location.pathname + location.search) return;
    history[push ? 'pushState' : 'replaceState'](null, '', url);
  }

  // navigate changes the state, records it in the history and loads the view.
  function navigate(change) {
    const s = Object.assign({}, state, change);
    if ('source' in change && change.source !== state.source) { s.type = ''; s.subject = ''; }
    writeURL(s, true);
    load();
  }

  function windowOf(s) {
    if (s.range === 'custom') return [s.from, s.to];
    const [span, presetStep] = PRESETS[s.range];
    const step = Math.max(presetStep, INTERVAL_MS[s.interval] || 0); // a whole number of buckets
    const to = Math.ceil(Date.now() / step) * step;
    return [to - span, to];
  }

  // ---------------------------------------------------------------- the API

  class APIError extends Error {
    constructor(status, msg) { super(msg); this.status = status; }
  }

  function query(params) {
    return Object.entries(params).filter(([, v]) => v !== '' && v !== null && v !== undefined)
      .map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join('&');
  }

  // api GETs v1/<path> (relative to the page) and answers its JSON, its
  // text and how long it took.
  async function api(path, params, signal) {
    const qs = query(params);
    const t0 = performance.now();
    const resp = await fetch('v1/' + path + (qs ? '?' + qs : ''), { signal, headers: { Accept: 'application/json' } });
    const text = await resp.text();
    const ms = performance.now() - t0;
    let body = null;
    try { body = JSON.parse(text); } catch (e) { /* reported below */ }
    if (!resp.ok || body === null) {
      const msg = (body && (body.error || body.message)) || text.slice(0, 300) || resp.statusText;
      throw new APIError(resp.status, resp.status + ': ' + msg);
    }
    return { body, text, ms };
  }

  function busy(delta) {
    inflight += delta;
    document.documentElement.dataset.loading = inflight > 0 ? 'true' : 'false';
  }

  // track runs one request of the current view; a stale answer is dropped.
  async function track(g, fn, onError) {
    busy(1);
    try {
      await fn();
    } catch (e) {
      if (e.name !== 'AbortError' && g === gen) onError(e);
    } finally {
      busy(-1);
    }
  }

  function planText(plan, ms, extra) {
    const parts = [];
    if (plan && plan.path) parts.push(plan.path === 'gsi' ? 'GSI' : 'scatter-gather');
    if (plan) parts.push(nf.format(plan.requests) + (plan.requests === 1 ? ' request' : ' requests'), rcuf.format(plan.consumed_rcu) + ' RCU');
    if (extra) parts.push(extra);
    parts.push(Math.round(ms) + ' ms');
    return parts.join(' · ');
  }

  function showPlan(el, plan, ms, extra) {
    el.textContent = planText(plan, ms, extra);
    el.title = plan && plan.reason ? 'Why: ' + plan.reason : '';
  }

  // ---------------------------------------------------------------- load

  function load() {
    state = readState();
    gen++;
    const g = gen;
    if (ctrl) ctrl.abort();
    ctrl = new AbortController();
    const signal = ctrl.signal;
    const [from, to] = windowOf(state);
    view = { from, to };
    document.documentElement.dataset.from = iso(from); // for tests: the window the requests ask for
    document.documentElement.dataset.to = iso(to);
    $('error').hidden = true;
    renderControls();
    busy(1); // held until the sources are in, so that loading never flickers off between requests
    track(g, () => loadQuarantineIfShown(g, signal), (e) => fail($('quarantine-status'), e));
    track(g, async () => {
      await loadSources(g, signal, false);
      if (g !== gen) return;
      renderSelected();
      if (!state.source) { clearSource(); return; }
      await Promise.all([
        track(g, () => loadCounts(g, signal), (e) => { clearChart(); fail($('counts-plan'), e); }),
        track(g, () => loadEvents(g, signal, false), (e) => fail($('events-status'), e)),
      ]);
    }, (e) => fail($('sources-plan'), e)).finally(() => busy(-1));
  }

  function fail(el, e) {
    el.textContent = '';
    const err = $('error');
    err.textContent = 'The API answered ' + e.message;
    err.hidden = false;
  }

  // ---------------------------------------------------------------- controls

  function fmtTime(ms, withMs) {
    const s = new Date(ms).toISOString();
    return s.slice(0, 10) + ' ' + s.slice(11, withMs && s.slice(20, 23) !== '000' ? 23 : 19);
  }

  function fmtShort(ms) {
    const d = new Date(ms);
    return d.toLocaleString('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
  }

  function toInput(ms) { return new Date(ms).toISOString().slice(0, 19); }

  function fromInput(v) {
    if (!v) return null;
    return parseTime(v.length === 16 ? v + ':00Z' : v + 'Z');
  }

  function renderControls() {
    for (const b of document.querySelectorAll('[data-range]')) {
      b.setAttribute('aria-pressed', String(b.dataset.range === state.range));
    }
    const custom = $('custom');
    const openCustom = state.range === 'custom' || custom.dataset.open === 'true';
    custom.hidden = !openCustom;
    document.querySelector('[data-range="custom"]').setAttribute('aria-expanded', String(openCustom));
    $('from').value = toInput(view.from);
    $('to').value = toInput(view.to);
    const label = state.range === 'custom' ? 'Custom range' : 'Last ' + state.range.replace('h', ' h').replace('d', ' days');
    $('range-label').textContent = label + ': ' + fmtShort(view.from) + ' – ' + fmtShort(view.to) + ' UTC';
    for (const b of document.querySelectorAll('[data-mode]')) {
      b.setAttribute('aria-pressed', String(b.dataset.mode === state.mode));
    }
    $('interval').value = state.interval;
    $('f-type').value = state.type;
    $('f-subject').value = state.subject;
    selectTab(state.tab, false);
  }

  // ---------------------------------------------------------------- sources

  async function loadSources(g, signal, more) {
    const params = { from: iso(view.from), to: iso(view.to) };
    if (more) params.cursor = sourcesCursor;
    const { body, ms } = await api('sources', params, signal);
    if (g !== gen) return;
    // next_cursor is on every page, "" on the last: both mean no more.
    sourcesCursor = body.next_cursor || null;
    renderSources(body.sources, more);
    showPlan($('sources-plan'), null, ms, nf.format(body.sources.length) + ' sources');
    if (!more && !state.source && body.sources.length) {
      state.source = body.sources[0].source;
      writeURL(state, false);
    }
  }

  function renderSources(list, more) {
    const ul = $('source-list');
    if (!more) ul.textContent = '';
    const frag = document.createDocumentFragment();
    for (const s of list) {
      const li = document.createElement('li');
      const a = document.createElement('a');
      a.href = urlOf(Object.assign({}, state, { source: s.source, type: '', subject: '' }));
      a.dataset.source = s.source;
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = s.source;
      const days = document.createElement('span');
      days.className = 'days';
      days.textContent = s.days.length === 1 ? '1 day' : s.days.length + ' days';
      days.title = s.days.join(', ');
      a.append(name, days);
      li.append(a);
      frag.append(li);
    }
    ul.append(frag);
    const n = ul.children.length;
    $('sources-count').textContent = nf.format(n) + (sourcesCursor ? '+' : '');
    $('sources-empty').hidden = n > 0;
    $('sources-more').hidden = !sourcesCursor;
    filterSources();
  }

  function renderSelected() {
    for (const a of $('source-list').querySelectorAll('a')) {
      if (a.dataset.source === state.source) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    $('chart-source').textContent = state.source || 'Events over time';
  }

  function filterSources() {
    const f = $('source-filter').value.trim().toLowerCase();
    for (const li of $('source-list').children) {
      li.hidden = f !== '' && !li.firstChild.dataset.source.toLowerCase().includes(f);
    }
  }

  function clearSource() {
    clearChart();
    clearEvents();
    $('counts-plan').textContent = '';
    $('events-status').textContent = '';
  }

  // ---------------------------------------------------------------- chart

  async function loadCounts(g, signal) {
    const { body, ms } = await api('counts', { source: state.source, from: iso(view.from), to: iso(view.to), group_by: 'type', interval: state.interval }, signal);
    if (g !== gen) return;
    performance.clearMarks('chart:data');
    performance.mark('chart:data'); // the data has arrived: the chart's clock starts
    renderChart(body);
    showPlan($('counts-plan'), body.plan, ms, 'per ' + body.interval);
  }

  function clearChart() {
    if (plot) { plot.destroy(); plot = null; }
    $('chart').textContent = '';
    $('chart-empty').hidden = true;
  }

  // stack turns counts per type into cumulative series and the bands that
  // fill between each and the one below it (uPlot's stacking recipe).
  function stack(ys) {
    const acc = new Array(ys.length ? ys[0].length : 0).fill(0);
    const out = ys.map((y) => y.map((v, i) => (acc[i] += v)));
    const bands = [];
    for (let i = 2; i <= ys.length; i++) bands.push({ series: [i, i - 1] });
    return { out, bands };
  }

  function chartSize() {
    const w = Math.max(200, $('chart').clientWidth);
    return { width: w, height: w < 600 ? 220 : 280 };
  }

  function renderChart(counts) {
    clearChart();
    const series = counts.series;
    const total = series.reduce((n, s) => n + s.points.reduce((m, p) => m + p.count, 0), 0);
    const types = series.map((s) => (s.other ? otherLabel(s.other) : s.type));
    const dl = $('types');
    dl.textContent = '';
    for (const s of series) {
      if (s.other) continue;
      const o = document.createElement('option'); o.value = s.type; dl.append(o);
    }
    $('chart-source').textContent = state.source + ' · ' + nf.format(total) + (total === 1 ? ' event' : ' events');
    if (!series.length) {
      $('chart-empty').hidden = false;
      measure('chart-render');
      document.documentElement.dataset.chartRendered = String(gen);
      return;
    }
    const xs = series[0].points.map((p) => Date.parse(p.t) / 1000);
    const raw = series.map((s) => s.points.map((p) => p.count));
    const stacked = state.mode === 'stacked';
    const { out, bands } = stacked ? stack(raw) : { out: raw, bands: [] };
    const el = $('chart');
    el.setAttribute('aria-label', 'Events of ' + state.source + ' per ' + counts.interval + ', ' +
      (stacked ? 'stacked' : 'split') + ' by type: ' + types.map((t, i) => t + ' ' + nf.format(raw[i].reduce((a, b) => a + b, 0))).join(', '));
    let first = true;
    const opts = Object.assign(chartSize(), {
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      cursor: { drag: { x: true, y: false, setScale: false }, points: { size: 6 } },
      legend: { live: true },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] } },
      axes: [
        { stroke: '#57606a', grid: { stroke: '#eaeef2', width: 1 }, ticks: { stroke: '#d0d7de', width: 1 }, values: timeLabels },
        { stroke: '#57606a', grid: { stroke: '#eaeef2', width: 1 }, ticks: { show: false }, size: 48,
          values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? nf.format(v) : '')) },
      ],
      series: [{ label: 'UTC', value: (u, v) => (v == null ? '–' : fmtTime(v * 1000)) }].concat(types.map((t, i) => ({
        label: t,
        stroke: colour(series[i], i),
        fill: stacked ? colour(series[i], i) + 'd0' : undefined,
        width: stacked ? 1 : 1.5,
        // A bucket whose neighbours are empty draws a spike one bucket
        // wide: at 1,440 buckets a hairline. It gets a dot instead.
        points: { show: false, size: 7, width: 1, fill: colour(series[i], i), filter: (u, si) => lone(u, raw[si - 1]) },
        value: (u, v, si, idx) => (idx == null ? '–' : nf.format(raw[si - 1][idx])),
      }))),
      bands,
      hooks: {
        setSelect: [zoomTo],
        draw: [() => {
          if (!first) return;
          first = false;
          measure('chart-draw'); // drawn on the canvas
          afterPaint(() => { measure('chart-render'); document.documentElement.dataset.chartRendered = String(gen); });
        }],
      },
    });
    plot = new uPlot(opts, [xs].concat(out), el);
  }

  // lone lists the buckets of counts ys that hold events between two that
  // hold none, when a bucket is under 6 px wide; null when there are none
  // (uPlot then draws no points).
  function lone(u, ys) {
    if (u.bbox.width / ys.length >= 6 * devicePixelRatio) return null;
    const out = [];
    for (let i = 0; i < ys.length; i++) {
      if (ys[i] > 0 && !(ys[i - 1] > 0) && !(ys[i + 1] > 0)) out.push(i);
    }
    return out.length ? out : null;
  }

  // otherLabel names the API's "other" series: the events of the types it
  // left out (the ones with fewest events, past 100 series or 6 MB) and of
  // the types the counter did not keep (more than 100 in an hour).
  function otherLabel(o) {
    const parts = [];
    if (o.types) parts.push(nf.format(o.types) + (o.types === 1 ? ' more type' : ' more types'));
    if (o.overflow) parts.push('types not kept');
    return 'other (' + parts.join(', ') + ')';
  }

  // colour is a series' colour: the palette's, grey for "other".
  function colour(s, i) {
    return s.other ? OTHER_COLOUR : PALETTE[i % PALETTE.length];
  }

  // measure records name: from the data's arrival ("chart:data") to now.
  function measure(name) {
    performance.clearMarks(name + ':end');
    performance.mark(name + ':end');
    performance.measure(name, 'chart:data', name + ':end');
  }

  // afterPaint calls fn once the frame being prepared has been painted.
  function afterPaint(fn) {
    requestAnimationFrame(() => setTimeout(fn, 0));
  }

  function zoomTo(u) {
    const sel = u.select;
    if (sel.width < 3) return;
    let from = Math.floor(u.posToVal(sel.left, 'x') * 1000 / MIN) * MIN;
    let to = Math.ceil(u.posToVal(sel.left + sel.width, 'x') * 1000 / MIN) * MIN;
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (to <= from) to = from + MIN;
    navigate({ range: 'custom', from, to });
  }

  // ---------------------------------------------------------------- events

  function clearEvents() {
    events.items = [];
    events.pages = [];
    events.cursor = null;
    document.querySelector('#events tbody').textContent = '';
    $('events-more').hidden = true;
    $('events-empty').hidden = true;
    $('events-plan').textContent = '';
  }

  async function loadEvents(g, signal, more) {
    const params = { source: state.source, from: iso(view.from), to: iso(view.to), limit: PAGE, type: state.type, subject: state.subject };
    if (more) params.cursor = events.cursor;
    $('events-status').textContent = 'Loading…';
    const { body, text, ms } = await api('events', params, signal);
    if (g !== gen) return;
    if (!more) clearEvents();
    const page = { text, offsets: null, first: events.items.length };
    events.pages.push(page);
    body.events.forEach((e, k) => events.items.push({ e, page, k }));
    events.cursor = body.next_cursor || null;
    appendRows(page.first);
    showPlan($('events-plan'), body.plan, ms);
    const n = events.items.length;
    const capped = events.cursor && n >= MAX_ROWS;
    $('events-more').hidden = !events.cursor || capped;
    $('events-empty').hidden = n > 0;
    $('events-status').textContent = n === 0 ? '' : nf.format(n) + (n === 1 ? ' event' : ' events') +
      (capped ? ' shown, the newest; drag across the chart to narrow the range and see older ones' : events.cursor ? ', more older' : ', all of the range');
  }

  // appendRows renders the events from index start on: only the new page,
  // never the rows already shown.
  function appendRows(start) {
    performance.mark('events-render:start');
    const frag = document.createDocumentFragment();
    for (let i = start; i < events.items.length; i++) {
      const e = events.items[i].e;
      const tr = document.createElement('tr');
      tr.dataset.i = i;
      const t = document.createElement('td');
      t.className = 'time';
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'open';
      b.textContent = fmtTime(Date.parse(e.time), true);
      b.setAttribute('aria-label', 'Show event ' + e.id + ' of ' + e.time);
      t.append(b);
      tr.append(t, cell('type', e.type), cell('subject', e.subject === undefined ? '' : String(e.subject)), cell('id', e.id));
      frag.append(tr);
    }
    document.querySelector('#events tbody').append(frag);
    performance.mark('events-render:end');
    performance.measure('events-render', 'events-render:start', 'events-render:end');
  }

  function cell(cls, text) {
    const td = document.createElement('td');
    td.className = cls;
    td.textContent = text;
    td.title = text;
    return td;
  }

  // ---------------------------------------------------------------- an event

  // elementOffsets finds where each element of the array under key sits in
  // the JSON text of an answer, without parsing it: the event is shown
  // exactly as the API answered it, every digit of every number included.
  function elementOffsets(text, key) {
    const out = [];
    let depth = 0, lastKey = null, inArray = false, start = -1;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (c === '"') {
        let j = i + 1;
        while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
        if (depth === 1) lastKey = text.slice(i, j + 1);
        i = j;
      } else if (c === '{' || c === '[') {
        if (depth === 1 && c === '[' && lastKey === JSON.stringify(key)) inArray = true;
        else if (depth === 2 && inArray) start = i;
        depth++;
      } else if (c === '}' || c === ']') {
        depth--;
        if (depth === 2 && inArray) out.push([start, i + 1]);
        if (depth === 1) inArray = false;
      }
    }
    return out;
  }

  const TOKEN = /\s+|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}[\]:,]/gy;

  // pretty renders JSON text indented by two spaces, as Go's json.Indent
  // would, its tokens kept as they are, into el with classes for colour.
  function pretty(text, el) {
    const toks = [];
    TOKEN.lastIndex = 0;
    let m;
    while ((m = TOKEN.exec(text)) !== null) if (!/^\s/.test(m[0])) toks.push(m[0]);
    const parts = []; // [class, text]
    let depth = 0;
    const nl = () => parts.push(['', '\n' + '  '.repeat(depth)]);
    for (let i = 0; i < toks.length; i++) {
      const t = toks[i];
      if (t === '{' || t === '[') {
        const close = t === '{' ? '}' : ']';
        if (toks[i + 1] === close) { parts.push(['', t + close]); i++; continue; }
        parts.push(['', t]);
        depth++;
        nl();
      } else if (t === '}' || t === ']') {
        depth--;
        nl();
        parts.push(['', t]);
      } else if (t === ',') {
        parts.push(['', ',']);
        nl();
      } else if (t === ':') {
        parts.push(['', ': ']);
      } else if (t[0] === '"') {
        parts.push([toks[i + 1] === ':' ? 'k' : 's', t]);
      } else if (t === 'true' || t === 'false' || t === 'null') {
        parts.push(['l', t]);
      } else {
        parts.push(['n', t]);
      }
    }
    el.textContent = '';
    const frag = document.createDocumentFragment();
    let plain = '';
    for (const [cls, s] of parts) {
      if (!cls) { plain += s; continue; }
      if (plain) { frag.append(plain); plain = ''; }
      const span = document.createElement('span');
      span.className = cls;
      span.textContent = s;
      frag.append(span);
    }
    if (plain) frag.append(plain);
    el.append(frag);
  }

  let opener = null;

  function showEvent(i) {
    const item = events.items[i];
    if (!item) return;
    const page = item.page;
    if (!page.offsets) page.offsets = elementOffsets(page.text, 'events');
    const [a, b] = page.offsets[item.k];
    const e = item.e;
    $('detail-h').textContent = e.type;
    $('detail-sub').textContent = e.id + ' · ' + e.source + ' · ' + e.time;
    pretty(page.text.slice(a, b), $('detail-json'));
    opener = document.activeElement;
    const d = $('detail');
    if (!d.open) d.showModal();
    $('detail-json').focus();
  }

  // ---------------------------------------------------------------- quarantine

  function loadQuarantineIfShown(g, signal) {
    const key = view.from + '/' + view.to;
    if (state.tab !== 'quarantine' || quarantine.loadedFor === key) return Promise.resolve();
    return loadQuarantine(g, signal, false);
  }

  async function loadQuarantine(g, signal, more) {
    const params = { from: iso(view.from), to: iso(view.to), limit: PAGE };
    if (more) params.cursor = quarantine.cursor;
    $('quarantine-status').textContent = 'Loading…';
    const { body, ms } = await api('quarantine', params, signal);
    if (g !== gen) return;
    const tbody = document.querySelector('#quarantine tbody');
    if (!more) { tbody.textContent = ''; quarantine.items = []; }
    quarantine.loadedFor = view.from + '/' + view.to;
    quarantine.cursor = body.next_cursor || null;
    const frag = document.createDocumentFragment();
    for (const r of body.records) {
      quarantine.items.push(r);
      frag.append(recordRow(r));
    }
    tbody.append(frag);
    showPlan($('quarantine-plan'), body.plan, ms);
    const n = quarantine.items.length;
    const capped = quarantine.cursor && n >= MAX_ROWS;
    $('quarantine-more').hidden = !quarantine.cursor || capped;
    $('quarantine-empty').hidden = n > 0;
    $('quarantine-status').textContent = n === 0 ? '' : nf.format(n) + (n === 1 ? ' record' : ' records') + (quarantine.cursor ? ', more older' : '');
  }

  function recordRow(r) {
    const tr = document.createElement('tr');
    tr.append(cell('time', fmtTime(Date.parse(r.received_at), true)));
    const reason = cell('reason', r.reason);
    tr.append(reason);
    const origin = document.createElement('td');
    origin.className = 'origin';
    const dl = document.createElement('dl');
    for (const [k, v] of Object.entries(r.origin || {})) {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = String(v);
      dl.append(dt, dd);
    }
    origin.append(dl);
    tr.append(origin);
    const bytes = base64Bytes(r.raw);
    let text = null;
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch (e) { text = null; }
    const td = document.createElement('td');
    td.className = 'raw';
    const det = document.createElement('details');
    const sum = document.createElement('summary');
    const size = r.raw_size || bytes.length;
    sum.textContent = nf.format(size) + (size === 1 ? ' byte' : ' bytes') + (text === null ? ', binary (hex)' : ', text') +
      (r.truncated ? ', the first ' + nf.format(bytes.length) + ' shown' : '');
    const pre = document.createElement('pre');
    pre.className = text === null ? 'hex' : 'text';
    pre.textContent = text === null ? hexDump(bytes) : text;
    det.append(sum, pre);
    td.append(det);
    tr.append(td);
    return tr;
  }

  function base64Bytes(b64) {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  // hexDump lays out bytes as Go's hex.Dump and `hexdump -C` do: offset,
  // sixteen bytes in hex, and the same as ASCII.
  function hexDump(bytes) {
    let out = '';
    for (let off = 0; off < bytes.length; off += 16) {
      const row = bytes.subarray(off, off + 16);
      let line = off.toString(16).padStart(8, '0') + '  ';
      let ascii = '';
      for (let p = 0; p < 16; p++) {
        line += (p < row.length ? row[p].toString(16).padStart(2, '0') : '  ') + ' ' + (p === 7 ? ' ' : '') + (p === 15 ? ' |' : '');
        if (p < row.length) ascii += row[p] >= 32 && row[p] <= 126 ? String.fromCharCode(row[p]) : '.';
      }
      out += line + ascii + '|\n';
    }
    return out;
  }

  // ---------------------------------------------------------------- tabs

  function selectTab(name, focus) {
    for (const t of document.querySelectorAll('[role="tab"]')) {
      const on = t.id === 'tab-' + name;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
      if (on && focus) t.focus();
    }
  }

  function switchTab(name, focus) {
    if (name === state.tab) { selectTab(name, focus); return; }
    state.tab = name;
    writeURL(state, false);
    selectTab(name, focus);
    const g = gen;
    track(g, () => loadQuarantineIfShown(g, ctrl.signal), (e) => fail($('quarantine-status'), e));
  }

  // ---------------------------------------------------------------- wiring

  function wire() {
    document.querySelector('#range .presets').addEventListener('click', (ev) => {
      const b = ev.target.closest('[data-range]');
      if (!b) return;
      if (b.dataset.range === 'custom') {
        const custom = $('custom');
        custom.dataset.open = String(custom.hidden);
        custom.hidden = !custom.hidden;
        b.setAttribute('aria-expanded', String(!custom.hidden));
        if (!custom.hidden) $('from').focus();
        return;
      }
      $('custom').dataset.open = 'false';
      navigate({ range: b.dataset.range, from: null, to: null });
    });
    $('range').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const from = fromInput($('from').value), to = fromInput($('to').value);
      const err = $('error');
      if (from === null || to === null || from >= to || to - from > MAX_SPAN) {
        err.textContent = 'A custom range needs a start before its end, at most 31 days apart.';
        err.hidden = false;
        return;
      }
      navigate({ range: 'custom', from, to });
    });
    $('source-list').addEventListener('click', (ev) => {
      const a = ev.target.closest('a[data-source]');
      if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
      ev.preventDefault();
      navigate({ source: a.dataset.source });
      $('main').focus({ preventScroll: true });
    });
    $('source-filter').addEventListener('input', filterSources);
    $('sources-more').addEventListener('click', () => {
      const g = gen;
      track(g, async () => { await loadSources(g, ctrl.signal, true); renderSelected(); }, (e) => fail($('sources-plan'), e));
    });
    document.querySelector('.modes').addEventListener('click', (ev) => {
      const b = ev.target.closest('[data-mode]');
      if (!b || b.dataset.mode === state.mode) return;
      navigate({ mode: b.dataset.mode });
    });
    $('filters').addEventListener('submit', (ev) => {
      ev.preventDefault();
      navigate({ type: $('f-type').value.trim(), subject: $('f-subject').value });
    });
    $('interval').addEventListener('change', () => navigate({ interval: $('interval').value }));
    $('f-clear').addEventListener('click', () => navigate({ type: '', subject: '' }));
    $('events-more').addEventListener('click', () => {
      const g = gen;
      track(g, () => loadEvents(g, ctrl.signal, true), (e) => fail($('events-status'), e));
    });
    $('quarantine-more').addEventListener('click', () => {
      const g = gen;
      track(g, () => loadQuarantine(g, ctrl.signal, true), (e) => fail($('quarantine-status'), e));
    });
    const tbody = document.querySelector('#events tbody');
    tbody.addEventListener('click', (ev) => {
      const tr = ev.target.closest('tr');
      if (tr && !window.getSelection().toString()) showEvent(Number(tr.dataset.i));
    });
    tbody.addEventListener('keydown', (ev) => {
      const tr = ev.target.closest('tr');
      if (!tr) return;
      const rows = tbody.rows;
      let next = null;
      if (ev.key === 'ArrowDown') next = tr.nextElementSibling;
      else if (ev.key === 'ArrowUp') next = tr.previousElementSibling;
      else if (ev.key === 'Home') next = rows[0];
      else if (ev.key === 'End') next = rows[rows.length - 1];
      if (!next) return;
      ev.preventDefault();
      next.querySelector('.open').focus();
    });
    document.querySelector('.tabs').addEventListener('click', (ev) => {
      const t = ev.target.closest('[role="tab"]');
      if (t) switchTab(t.id.replace('tab-', ''), false);
    });
    document.querySelector('.tabs').addEventListener('keydown', (ev) => {
      if (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight' && ev.key !== 'Home' && ev.key !== 'End') return;
      ev.preventDefault();
      const name = ev.key === 'Home' ? 'events' : ev.key === 'End' ? 'quarantine' : state.tab === 'events' ? 'quarantine' : 'events';
      switchTab(name, true);
    });
    const d = $('detail');
    $('detail-close').addEventListener('click', () => d.close());
    d.addEventListener('click', (ev) => { if (ev.target === d) d.close(); }); // the backdrop
    d.addEventListener('close', () => { if (opener && opener.isConnected) opener.focus(); });
    $('detail-copy').addEventListener('click', () => {
      const b = $('detail-copy');
      navigator.clipboard.writeText($('detail-json').textContent).then(() => { b.textContent = 'Copied'; },
        () => { b.textContent = 'Copy failed'; }).finally(() => setTimeout(() => { b.textContent = 'Copy JSON'; }, 1500));
    });
    window.addEventListener('popstate', load);
    new ResizeObserver(() => { if (plot) plot.setSize(chartSize()); }).observe($('chart'));
  }

  wire();
  load();
})();
