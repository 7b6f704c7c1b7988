// stagebench HTML report: draws the view prepared by src/report/html_data.cpp (the JSON in
// #sb-data) with the embedded Chart.js and chartjs-plugin-annotation. Values arrive in display
// units; this script only lays them out. Every text goes in through textContent, never as HTML.
(function () {
  'use strict';

  const data = JSON.parse(document.getElementById('sb-data').textContent);
  // For tests and the curious: every chart drawn, by kind.
  const registry = { charts: [], data: data };
  window.sbReport = registry;

  const COLORS = ['#3366cc', '#e0822b', '#2a9d5c', '#c0392b', '#8e5cc4', '#17a2b8', '#b58900',
                  '#6c7a89', '#d63384', '#5d8c3a'];
  const STAGE_COLORS = { prefill: 'rgba(51, 102, 204, 0.13)', decode: 'rgba(224, 130, 43, 0.15)',
                         idle: 'rgba(120, 120, 120, 0.10)' };
  const color = (i) => COLORS[i % COLORS.length];

  // ---- DOM helpers ---------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) e.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function num(v, digits) {
    if (v === null || v === undefined || !Number.isFinite(v)) return '–';
    const d = digits === undefined ? 4 : digits;
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    return v.toLocaleString('en-US', { maximumSignificantDigits: d, useGrouping: false });
  }
  const pct = (v) => (v === null || v === undefined ? '–' : num(v * 100, 3) + ' %');
  function withCi(s) {
    if (!s) return '–';
    let t = num(s.median);
    if (s.lo !== null && s.hi !== null && s.lo !== undefined) t += ' [' + num(s.lo) + ', ' + num(s.hi) + ']';
    return t;
  }

  function table(headers, rows, rowClass) {
    const thead = el('thead', null, el('tr', null, headers.map((h) => el('th', null, h))));
    const tbody = el('tbody');
    rows.forEach((r, i) => {
      const tr = el('tr', { class: rowClass ? rowClass(i) : null });
      r.forEach((c) => {
        const isNum = typeof c === 'number' || (typeof c === 'string' && /^[-–0-9.e+ [\],%]+$/.test(c) && c !== '');
        tr.appendChild(el('td', { class: isNum ? 'num' : null }, typeof c === 'number' ? num(c) : c));
      });
      tbody.appendChild(tr);
    });
    return el('div', { class: 'table-wrap' }, el('table', null, thead, tbody));
  }

  const note = (text) => el('div', { class: 'note' }, text);

  // A table whose columns sort on a click of their header (again: the other way). Cells are
  // strings, numbers or nodes, or {text, sort} where sort is the value to order by (a number
  // sorts numerically; null and missing values last).
  function sortableTable(headers, rows) {
    const cell = (c) => (c !== null && typeof c === 'object' && !(c instanceof Node) ? c : { text: c, sort: c });
    const cells = rows.map((r) => r.map(cell));
    const wrap = table(headers, cells.map((r) => r.map((c) => c.text)));
    const t = wrap.querySelector('table');
    t.classList.add('sortable');
    const trs = Array.from(t.tBodies[0].rows);
    trs.forEach((tr, i) => cells[i].forEach((c, j) => {
      const v = c.sort;
      if (typeof v === 'number' && Number.isFinite(v)) tr.cells[j].dataset.sort = String(v);
      else if (typeof v === 'string') tr.cells[j].dataset.sortText = v;
    }));
    const key = (td) => (td.dataset.sort !== undefined ? Number(td.dataset.sort)
                                                       : (td.dataset.sortText !== undefined ? td.dataset.sortText : null));
    Array.from(t.tHead.rows[0].cells).forEach((th, j) => {
      th.setAttribute('aria-sort', 'none');
      th.title = 'sort by this column';
      th.addEventListener('click', () => {
        const asc = th.getAttribute('aria-sort') !== 'ascending';
        Array.from(t.tHead.rows[0].cells).forEach((h) => h.setAttribute('aria-sort', 'none'));
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        const sorted = Array.from(t.tBodies[0].rows).sort((a, b) => {
          const x = key(a.cells[j]), y = key(b.cells[j]);
          if (x === null || y === null) return (x === null) - (y === null);
          const d = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
          return asc ? d : -d;
        });
        sorted.forEach((tr) => t.tBodies[0].appendChild(tr));
      });
    });
    return wrap;
  }

  // ---- Charts --------------------------------------------------------------------------------
  // Whiskers for datasets that carry errorBars: [{lo, hi}|null, ...] (one per point).
  const errorBarsPlugin = {
    id: 'sbErrorBars',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      chart.data.datasets.forEach((ds, i) => {
        if (!ds.errorBars || !chart.isDatasetVisible(i)) return;
        const meta = chart.getDatasetMeta(i);
        const scale = chart.scales[meta.yAxisID];
        ctx.save();
        ctx.strokeStyle = ds.errorBarColor || '#222';
        ctx.lineWidth = 1.5;
        meta.data.forEach((elem, j) => {
          const e = ds.errorBars[j];
          if (!e || e.lo === null || e.hi === null || e.lo === undefined || e.hi === undefined) return;
          const x = elem.x;
          const y1 = scale.getPixelForValue(e.lo);
          const y2 = scale.getPixelForValue(e.hi);
          const cap = Math.max(3, Math.min(8, (elem.width || 12) / 4));
          ctx.beginPath();
          ctx.moveTo(x, y1); ctx.lineTo(x, y2);
          ctx.moveTo(x - cap, y1); ctx.lineTo(x + cap, y1);
          ctx.moveTo(x - cap, y2); ctx.lineTo(x + cap, y2);
          ctx.stroke();
        });
        ctx.restore();
      });
    },
  };
  Chart.register(errorBarsPlugin);

  // Labels placed clear of the chart's points, of each other and of the plot's edges, set as
  // options.plugins.sbLabels.labels: [{text, x, y, color}] names the point at (x, y), beside it;
  // [{text, y, line: true, color}] names a horizontal line at y, along it. Each label tries
  // places around its anchor, nearest first, and takes the first that is free (points and
  // labels hard, whiskers soft); only when none is, the one that covers least. The places taken
  // are kept for tests: chart.$sbLabels = [{text, left, top, right, bottom}] (canvas px).
  const labelsPlugin = {
    id: 'sbLabels',
    afterDatasetsDraw(chart, args, opts) {
      chart.$sbLabels = [];
      const items = (opts && opts.labels) || [];
      if (!items.length) return;
      const ctx = chart.ctx, area = chart.chartArea;
      const hard = [], soft = [];
      chart.data.datasets.forEach((ds, i) => {
        if (!chart.isDatasetVisible(i)) return;
        const meta = chart.getDatasetMeta(i);
        const scale = chart.scales[meta.yAxisID];
        meta.data.forEach((e, j) => {
          if (e.skip || !Number.isFinite(e.x) || !Number.isFinite(e.y)) return;
          const r = (e.options && e.options.radius) || 3;
          if (r > 0) hard.push({ left: e.x - r - 2, right: e.x + r + 2, top: e.y - r - 2, bottom: e.y + r + 2 });
          const w = ds.errorBars && ds.errorBars[j];
          if (w && w.lo !== null && w.hi !== null && w.lo !== undefined && w.hi !== undefined) {
            const y1 = scale.getPixelForValue(w.lo), y2 = scale.getPixelForValue(w.hi);
            soft.push({ left: e.x - 5, right: e.x + 5, top: Math.min(y1, y2), bottom: Math.max(y1, y2) });
          }
        });
      });
      const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                                Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top));
      const inside = (b) => b.left >= area.left + 1 && b.right <= area.right - 1 && b.top >= area.top + 1 &&
                            b.bottom <= area.bottom - 1;
      ctx.save();
      ctx.font = '11px ' + Chart.defaults.font.family;
      ctx.textAlign = 'left';
      ctx.textBaseline = 'alphabetic';
      items.forEach((it) => {
        const m = ctx.measureText(it.text);
        const w = m.actualBoundingBoxLeft + m.actualBoundingBoxRight;
        const h = m.actualBoundingBoxAscent + m.actualBoundingBoxDescent;
        const centres = [];
        if (it.line) {
          const py = chart.scales.y.getPixelForValue(it.y);
          for (let k = 0; k < 40; k++) {
            const cx = area.right - 4 - w / 2 - k * (area.right - area.left) / 40;
            centres.push([cx, py - h / 2 - 3], [cx, py + h / 2 + 3]);
          }
        } else {
          const px = chart.scales.x.getPixelForValue(it.x), py = chart.scales.y.getPixelForValue(it.y);
          for (let d = 0; d < 5; d++) {
            const gx = 10 + d * (h + 4), gy = 9 + d * (h + 4);
            centres.push([px + gx + w / 2, py], [px - gx - w / 2, py], [px, py - gy - h / 2], [px, py + gy + h / 2],
                         [px + gx + w / 2, py - gy], [px - gx - w / 2, py - gy], [px + gx + w / 2, py + gy],
                         [px - gx - w / 2, py + gy]);
          }
        }
        let best = null, bestCost = Infinity;
        for (const [cx, cy] of centres) {
          const b = { left: cx - w / 2, right: cx + w / 2, top: cy - h / 2, bottom: cy + h / 2 };
          if (!inside(b)) continue;
          const onHard = hard.concat(chart.$sbLabels).reduce((n, o) => n + overlap(b, o), 0);
          const onSoft = soft.reduce((n, o) => n + overlap(b, o), 0);
          const cost = onHard * 1000 + onSoft;
          if (cost < bestCost) { best = b; bestCost = cost; }
          if (cost === 0) break;
        }
        if (!best) {  // no place inside the plot: at the anchor's side, clamped to the plot
          const cx = Math.min(Math.max(centres[0][0], area.left + w / 2 + 1), area.right - w / 2 - 1);
          const cy = Math.min(Math.max(centres[0][1], area.top + h / 2 + 1), area.bottom - h / 2 - 1);
          best = { left: cx - w / 2, right: cx + w / 2, top: cy - h / 2, bottom: cy + h / 2 };
        }
        ctx.fillStyle = 'rgba(255, 255, 255, 0.85)';
        ctx.fillRect(best.left - 1, best.top - 1, w + 2, h + 2);
        ctx.fillStyle = it.color || '#1d2330';
        ctx.fillText(it.text, best.left + m.actualBoundingBoxLeft, best.top + m.actualBoundingBoxAscent);
        chart.$sbLabels.push({ text: it.text, left: best.left, top: best.top, right: best.right, bottom: best.bottom });
      });
      ctx.restore();
    },
  };
  Chart.register(labelsPlugin);
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;

  // height: of the chart in px; the style sheet's default when absent.
  function addChart(parent, kind, config, height) {
    const canvas = el('canvas', { 'data-chart': kind, role: 'img' });
    parent.appendChild(el('div', { class: 'chart', style: height ? 'height:' + height + 'px' : null }, canvas));
    config.options = Object.assign({ animation: false, responsive: true, maintainAspectRatio: false },
                                   config.options || {});
    const chart = new Chart(canvas, config);
    registry.charts.push({ kind: kind, id: chart.id });
    canvas.setAttribute('aria-label', kind);
    return chart;
  }

  // The highest value a chart must show: medians and the tops of their whiskers.
  function maxOf(points, cis) {
    let m = 0;
    points.forEach((v) => { if (v !== null && v > m) m = v; });
    (cis || []).forEach((c) => { if (c && c.hi !== null && c.hi > m) m = c.hi; });
    return m;
  }

  function barsWithCi(parent, kind, labels, stats, label, unit, colorIndex) {
    const medians = stats.map((s) => (s ? s.median : null));
    const cis = stats.map((s) => (s ? { lo: s.lo, hi: s.hi } : null));
    addChart(parent, kind, {
      type: 'bar',
      data: { labels: labels, datasets: [{ label: label, data: medians, errorBars: cis,
                                           backgroundColor: color(colorIndex) }] },
      options: {
        scales: { y: { beginAtZero: true, suggestedMax: maxOf(medians, cis) * 1.05,
                       title: { display: true, text: unit } } },
        plugins: { tooltip: { callbacks: { afterLabel: (c) => {
          const e = cis[c.dataIndex];
          return e && e.lo !== null ? '95% CI [' + num(e.lo) + ', ' + num(e.hi) + ']' : '';
        } } } },
      },
    });
  }

  // ---- Sections ------------------------------------------------------------------------------
  function renderHeader(sec, d) {
    const h = d.header || {};
    const items = [['command', d.command], ['source', d.source], ['host', h.host], ['cpu', h.cpu],
                   ['os', h.os], ['started at', h.started_at], ['finished at', h.finished_at],
                   ['created at', h.created_at], ['command line', h.command_line],
                   ['stagebench', [h.tool_version, h.build_type].filter(Boolean).join(' ')],
                   ['llama.cpp', h.llama]];
    const dl = el('dl', { class: 'header' });
    items.forEach(([k, v]) => {
      if (!v) return;
      dl.appendChild(el('dt', null, k));
      dl.appendChild(el('dd', { class: k === 'command line' ? 'mono' : null }, v));
    });
    sec.appendChild(dl);
  }

  // "3/640 tokens": a stage's stalls, counted and never dropped.
  const stallsText = (s) => (s && s.stalls ? s.stalls.count + '/' + s.stalls.of + ' ' + s.stalls.unit : '–');

  function renderSummary(sec, rows) {
    sec.appendChild(el('h3', null, 'Summary'));
    // -ngl beside the devices where the tests differ in it, as in every table of the run.
    const ngl = new Set(rows.map((r) => r.n_gpu_layers)).size > 1;
    sec.appendChild(table(
      ['test', 'model', 'devices', 'threads', 'backends', 'prefill tok/s robust [95% CI]', 'prefill stalls',
       'decode tok/s robust [95% CI]', 'decode stalls', 'TTFT ms median [95% CI]', 'ITL ms median / p99', 'status'],
      rows.map((r) => [r.test, r.model, r.devices + (ngl ? ' (ngl ' + r.n_gpu_layers + ')' : '') +
                         (r.engine && r.engine !== 'llama' ? ' (' + r.engine + ')' : ''),
                       r.threads === null ? 'default' : String(r.threads), (r.backends || []).join(', '),
                       withCi(r.prefill), stallsText(r.prefill), withCi(r.decode), stallsText(r.decode),
                       withCi(r.ttft_ms), num(r.itl_ms.median) + ' / ' + num(r.itl_ms.p99),
                       r.status + (r.error ? ': ' + r.error : '')]),
      (i) => (rows[i].status && rows[i].status !== 'ok' ? 'failed' : null)));
    sec.appendChild(el('p', { class: 'caption' },
      'Robust tok/s, the figure to quote: prefill = prompt tokens / the median repetition time, decode = ' +
      '1e9 / the median inter-token latency; a stall moves a mean, not these medians. TTFT: the median ' +
      'repetition. Brackets: the 95% confidence interval of that median (seeded bootstrap resampling whole ' +
      'repetitions). Stalls: slow prefill repetitions and stalled decode tokens (modified z-score above 3.5), ' +
      'counted, never dropped.'));
  }

  function renderMemory(sec, rows) {
    sec.appendChild(el('h3', null, 'Memory per buffer type'));
    const ngl = new Set(rows.map((r) => r.n_gpu_layers)).size > 1;
    const models = new Set(rows.map((r) => r.model)).size > 1;
    sec.appendChild(table(
      (models ? ['model'] : []).concat(['test', 'devices', 'buffer', 'weights MiB', 'context MiB',
                                        'compute MiB', 'total MiB']),
      rows.map((r) => (models ? [r.model] : []).concat([r.test + (r.tests > 1 ? ' (' + r.tests + ' tests alike)' : ''),
                       r.devices + (ngl ? ' (ngl ' + r.n_gpu_layers + ')' : ''), r.buffer,
                       num(r.weights_mib), num(r.context_mib), num(r.compute_mib), num(r.total_mib)]))));
    sec.appendChild(el('p', { class: 'caption' },
      'What llama.cpp allocated per buffer type once the test\'s model and context were made, by its own ' +
      'accounting: the weights, the context (the KV cache) and the compute buffers. A device\'s name is its ' +
      'memory; CPU_Mapped is the model file\'s range mapped into memory (it may span weights another buffer ' +
      'type holds too, such as CPU_REPACK\'s, the weights laid out again for the CPU\'s kernels); *_Host is a ' +
      'GPU backend\'s pinned host memory. Tests of one configuration with the same memory (sustained\'s rounds) ' +
      'are one set of rows.'));
  }

  function renderThroughput(sec, t) {
    sec.appendChild(el('h3', null, 'Throughput per stage and device'));
    if (t.prefill.some((s) => s)) {
      sec.appendChild(el('h4', null, 'Prefill'));
      barsWithCi(sec, 'throughput-prefill', t.labels, t.prefill, 'prefill tokens/s (robust)', 'tokens/s', 0);
    }
    if (t.decode.some((s) => s)) {
      sec.appendChild(el('h4', null, 'Decode'));
      barsWithCi(sec, 'throughput-decode', t.labels, t.decode, 'decode tokens/s (robust)', 'tokens/s', 1);
    }
    sec.appendChild(el('p', { class: 'caption' },
      'Bars: the stall-robust rate (prefill: prompt tokens / the median repetition time; decode: 1e9 / the ' +
      'median inter-token latency); whiskers: the 95% CI of that median.'));
  }

  function stackedOps(parent, kind, bars, title) {
    const labels = bars.map((b) => b.label);
    const datasets = [
      { label: 'op time (ms)', data: bars.map((b) => (b.fallback ? null : b.op_ms)), stack: 's',
        backgroundColor: color(0) },
    ];
    // A fallback bar holds only the nodes that ran off the device asked for (html_data.cpp).
    if (bars.some((b) => b.fallback)) {
      datasets.push({ label: 'op time, fallback nodes only (ms)', data: bars.map((b) => (b.fallback ? b.op_ms : null)),
                      stack: 's', backgroundColor: '#c0392b' });
    }
    datasets.push({ label: 'call overhead: call − op (ms)', data: bars.map((b) => b.overhead_ms), stack: 's',
                    backgroundColor: color(1) });
    addChart(parent, kind, {
      type: 'bar',
      data: { labels: labels, datasets: datasets },
      options: {
        indexAxis: 'y',
        scales: { x: { stacked: true, beginAtZero: true, title: { display: true, text: 'ms per stage' } },
                  y: { stacked: true, ticks: { autoSkip: false } } },
        plugins: { title: { display: true, text: title },
                   tooltip: { callbacks: { afterBody: (items) => {
                     const b = bars[items[0].dataIndex];
                     const out = ['count: ' + num(b.count), 'call/op: ' + num(b.call_op_ratio, 3)];
                     if (b.fallback) out.push('fallback: ' + b.fallback);
                     return out;
                   } } } },
      },
    }, 110 + 24 * bars.length);
  }

  function renderOps(sec, ops, command) {
    sec.appendChild(el('h3', null, command === 'decompose' ? 'Pipeline decomposition and operators'
                                                           : 'Operator breakdown'));
    sec.appendChild(el('p', { class: 'caption' },
      'devices ' + (ops.devices || '–') + '; ran on ' + ((ops.backends || []).join(', ') || '–') +
      (ops.method ? '; ' + ops.method : '') +
      '. Op time: compute with dispatch amortised; call overhead: what dispatching the op alone adds.'));
    const decomposed = ops.stages.filter((s) => s.decomposition);
    if (decomposed.length) {
      sec.appendChild(el('h4', null, 'Pipeline decomposition'));
      const names = [];
      decomposed.forEach((s) => s.decomposition.parts.forEach((p) => {
        if (!names.includes(p.name)) names.push(p.name);
      }));
      addChart(sec, 'decomposition', {
        type: 'bar',
        data: { labels: decomposed.map((s) => s.stage), datasets: names.map((n, i) => ({
          label: n, backgroundColor: color(i), stack: 's',
          data: decomposed.map((s) => { const p = s.decomposition.parts.find((q) => q.name === n); return p ? p.ms : null; }),
        })) },
        options: { indexAxis: 'y', scales: { x: { stacked: true, title: { display: true, text: 'ms per stage' } },
                                             y: { stacked: true } } },
      }, 110 + 50 * decomposed.length);
      sec.appendChild(table(['stage', 'part', 'ms', 'share of the stage', 'note'],
        decomposed.flatMap((s) => s.decomposition.parts.map((p) => [s.stage, p.name, num(p.ms), pct(p.share), p.note]))));
    }
    ops.stages.forEach((s) => {
      sec.appendChild(el('h4', null, 'Stage ' + s.stage + (s.n_tokens ? ' (' + s.n_tokens + ' tokens)' : '')));
      const r = s.reconciliation;
      sec.appendChild(el('p', { class: 'caption' },
        'stage ' + num(r.plain_ms) + ' ms uninstrumented, ' + num(r.traced_ms) + ' ms traced; sum of op times ' +
        num(r.sum_op_ms) + ' ms (' + pct(r.op_fraction) + ' of the stage), sum of call times ' + num(r.sum_call_ms) + ' ms.'));
      if (s.by_op.length) stackedOps(sec, 'ops-by-op', s.by_op, s.stage + ': by op type');
      if (s.by_backend.length) stackedOps(sec, 'ops-by-backend', s.by_backend, s.stage + ': by backend');
      if (s.fallback.length) {
        sec.appendChild(el('p', null, el('span', { class: 'flag' }, 'Fallback: '),
          'these nodes ran on another backend than the one asked for (the red bars above hold them and only them; ' +
          'the same op type\'s other nodes are in its blue bar).'));
        sec.appendChild(table(['op', 'ran on', 'asked for', 'count', 'op ms', 'call ms', 'penalty ×', 'note'],
          s.fallback.map((f) => [f.op, f.backend, f.requested, num(f.count), num(f.op_ms), num(f.call_ms),
                                 num(f.penalty, 3), f.note])));
      }
      if (s.coverage) {
        const devs = s.coverage.devices;
        sec.appendChild(el('p', null, el('span', { class: 'flag' }, 'Op coverage: '),
          'of the nodes of each op type, how many each device supports (its backend\'s own answer) and where they ran.'));
        sec.appendChild(table(['op', 'nodes'].concat(devs.map((d) => d + ' supports'), ['ran on', 'why elsewhere']),
          s.coverage.rows.map((c) => [c.op, num(c.count)].concat(
            devs.map((d) => num(c.supported[d] || 0)),
            [Object.entries(c.ran).map(([b, n]) => b + ' ' + n).join(', '), c.note]))));
      }
      if (s.clamped.length) {
        sec.appendChild(note('Call time below op time (measured separately), shown as no overhead: ' +
                             s.clamped.join(', ')));
      }
      s.notes.forEach((n) => sec.appendChild(note(n)));
    });
  }

  function renderTelemetry(sec, t) {
    sec.appendChild(el('h3', null, 'Telemetry'));
    const stages = [];
    t.spans.forEach((s) => { if (!stages.includes(s.kind)) stages.push(s.kind); });
    const shade = (s) => STAGE_COLORS[s] || 'rgba(142, 92, 196, 0.12)';
    const boxes = {};
    t.spans.forEach((s, i) => {
      boxes['span' + i] = { type: 'box', xMin: s.begin_s, xMax: s.end_s, backgroundColor: shade(s.kind),
                            borderWidth: 0, drawTime: 'beforeDatasetsDraw' };
    });
    t.groups.forEach((g) => {
      sec.appendChild(el('h4', null, g.quantity + ' (' + g.unit + ')'));
      addChart(sec, 'telemetry-' + g.quantity, {
        type: 'line',
        data: { datasets: g.series.map((s, i) => ({
          label: s.name, borderColor: color(i), backgroundColor: color(i), borderWidth: 1.5,
          pointRadius: 0, spanGaps: false, data: s.points.map((p) => ({ x: p[0], y: p[1] })),
        })) },
        options: {
          parsing: false,
          interaction: { mode: 'nearest', intersect: false },
          scales: { x: { type: 'linear', title: { display: true, text: 'time (s)' } },
                    y: { title: { display: true, text: g.unit } } },
          plugins: { annotation: { annotations: boxes } },
        },
      });
    });
    if (stages.length) {
      const cap = el('p', { class: 'caption' }, 'Shaded:');
      stages.forEach((s) => {
        cap.appendChild(el('span', { class: 'swatch', style: 'background:' + shade(s).replace(/[\d.]+\)$/, '0.5)') }));
        cap.appendChild(document.createTextNode(s));
      });
      sec.appendChild(cap);
    }
  }

  function renderHybrid(sec, h) {
    sec.appendChild(el('h3', null, 'Hybrid: prefill on ' + h.prefill_device + ', decode on ' + h.decode_device));
    h.points.forEach((p) => {
      sec.appendChild(el('h4', null, p.test));
      const labels = p.modes.map((m) => m.label);
      addChart(sec, 'hybrid-e2e', {
        type: 'bar',
        data: { labels: labels, datasets: [
          { label: 'prefill (ms)', data: p.modes.map((m) => m.prefill_ms), stack: 's', backgroundColor: color(0) },
          { label: 'state transfer (ms)', data: p.modes.map((m) => m.transfer_ms), stack: 's', backgroundColor: color(3) },
          { label: 'decode (ms)', data: p.modes.map((m) => m.decode_ms), stack: 's', backgroundColor: color(1) },
        ] },
        options: { indexAxis: 'y',
                   scales: { x: { stacked: true, beginAtZero: true, title: { display: true, text: 'ms (medians)' } },
                             y: { stacked: true } },
                   plugins: { title: { display: true, text: 'End to end, stage by stage' } } },
      }, 110 + 36 * labels.length);
      sec.appendChild(table(['mode', 'status', 'prefill ms', 'transfer ms', 'transfer bytes', 'decode ms', 'TTFT ms',
                             'E2E ms median [95% CI]'],
        p.modes.map((m) => [m.label, m.status, num(m.prefill_ms), num(m.transfer_ms),
                            m.transfer_bytes === null ? '–' : String(m.transfer_bytes), num(m.decode_ms),
                            m.ttft ? num(m.ttft.median) : '–',
                            m.e2e ? num(m.e2e.median) + ' [' + num(m.e2e.lo) + ', ' + num(m.e2e.hi) + ']' : '–'])));
      p.comparisons.forEach((c) => {
        sec.appendChild(el('p', null, 'Against ' + c.against + ': the hybrid is ' + num(c.speedup, 3) + '× (95% CI ' +
                                      num(c.lo, 3) + '–' + num(c.hi, 3) + '): ', el('strong', null, c.verdict)));
      });
    });
  }

  // `serve`: latency against throughput (one marker per point, in sweep order; a log scale, as
  // TTFT and TPOT differ by orders of magnitude) with the SLOs as lines, then per point the
  // percentile bars of TTFT, TPOT and E2E, and the table.
  function renderServe(sec, s) {
    sec.appendChild(el('h3', null, 'Serving load: ' + (s.server || 'server') +
                                   (s.slots !== null ? ', ' + s.slots + ' slots' : '') +
                                   ', pp' + s.n_prompt + '+tg' + s.n_gen + ' per request'));
    const pts = s.points;
    const curve = (stage, q) => pts.filter((p) => p[stage][q] !== null && p[stage][q] > 0)
      .map((p) => ({ x: p.output_tps, y: p[stage][q], point: p.label }));
    const series = [['ttft', 'p50', 0, []], ['ttft', 'p99', 0, [6, 4]], ['tpot', 'p50', 1, []], ['tpot', 'p99', 1, [6, 4]]];
    const datasets = series.map(([stage, q, c, dash]) => ({
      label: stage.toUpperCase() + ' ' + q + ' (ms)', data: curve(stage, q), showLine: true, borderDash: dash,
      borderColor: color(c), backgroundColor: color(c) }));
    // The x axis hugs the points (they may all sit at 33-36 tok/s: an axis from 0 would crowd them
    // against its end), padded by a tenth of their span, or a fiftieth of their value when they
    // coincide; never by more than their span, so that points of nearly one throughput (a
    // saturated server: 2.67 and 2.69 tok/s) still fill a third of the axis, not its middle.
    const xs = datasets.flatMap((d) => d.data.map((p) => p.x));
    const xLo = Math.min(...xs), xHi = Math.max(...xs), xSpan = xHi - xLo;
    const xPad = !xs.length ? 0 : xSpan > 0 ? Math.min(Math.max(xSpan * 0.1, Math.abs(xHi) * 0.02), xSpan)
                                            : Math.max(Math.abs(xHi) * 0.02, 1e-9);
    // The SLOs as dotted lines, each named by a label placed clear of the points (sbLabels).
    const annotations = {}, sloLabels = [];
    ['ttft', 'tpot', 'e2e'].forEach((k, i) => {
      if (s.slo_ms[k] === undefined) return;
      annotations['slo_' + k] = { type: 'line', yMin: s.slo_ms[k], yMax: s.slo_ms[k], borderColor: color(i),
                                  borderWidth: 1, borderDash: [2, 2] };
      sloLabels.push({ text: k.toUpperCase() + ' SLO ' + num(s.slo_ms[k]) + ' ms', y: s.slo_ms[k], line: true,
                    color: color(i) });
    });
    addChart(sec, 'serve-curve', {
      type: 'scatter',
      data: { datasets: datasets },
      options: {
        scales: { x: { min: xs.length ? Math.max(0, xLo - xPad) : undefined, max: xs.length ? xHi + xPad : undefined,
                       title: { display: true, text: 'output tokens/s' } },
                  y: { type: 'logarithmic', title: { display: true, text: 'ms' } } },
        plugins: { title: { display: true, text: 'Latency against throughput, one marker per point' },
                   tooltip: { callbacks: { label: (c) => c.dataset.label + ' ' + num(c.raw.y) + ' at ' +
                                                        num(c.raw.x) + ' tok/s (' + c.raw.point + ')' } },
                   annotation: { annotations: annotations },
                   sbLabels: { labels: sloLabels } },
      },
    });
    const slos = Object.keys(s.slo_ms).map((k) => k.toUpperCase() + ' ' + num(s.slo_ms[k]) + ' ms');
    sec.appendChild(el('p', { class: 'caption' }, 'Solid: p50; dashed: p99. The throughput axis spans the points ' +
      '(it does not start at 0). ' +
      (slos.length ? 'SLO: ' + slos.join(', ') + ' (dotted lines).' : 'No SLO was given (--slo).')));
    const labels = pts.map((p) => p.label);
    [['ttft', 'TTFT'], ['tpot', 'TPOT'], ['e2e', 'E2E']].forEach(([stage, name]) => {
      addChart(sec, 'serve-percentiles-' + stage, {
        type: 'bar',
        data: { labels: labels, datasets: ['p50', 'p90', 'p99'].map((q, i) => ({
          label: name + ' ' + q + ' (ms)', data: pts.map((p) => p[stage][q]), backgroundColor: color(i) })) },
        options: { scales: { y: { beginAtZero: true, title: { display: true, text: 'ms' } } },
                   plugins: { title: { display: true, text: name + ' percentiles per point' } } },
      });
    });
    const goodput = pts.some((p) => p.goodput_per_s !== null);
    sec.appendChild(table(['point', 'ok', 'failed', 'req/s', 'output tok/s'].concat(goodput ? ['goodput req/s'] : [])
                            .concat(['TTFT p50 ms', 'TTFT p99 ms', 'TPOT p50 ms', 'TPOT p99 ms', 'E2E p90 ms']),
      pts.map((p) => [p.label, String(p.ok), String(p.errors), num(p.request_per_s), num(p.output_tps)]
        .concat(goodput ? [num(p.goodput_per_s)] : [])
        .concat([num(p.ttft.p50), num(p.ttft.p99), num(p.tpot.p50), num(p.tpot.p99), num(p.e2e.p90)]))));
  }

  // `fidelity`: decode tokens/s against the decode KL to the reference (log scale), one labelled
  // point per variant, the frontier marked and joined; prefill's own smaller chart; the table.
  // KL 0 (the reference itself) has no place on a log axis: such points sit on the axis floor
  // (f.kl_floor, a decade below the smallest KL drawn), marked by a dotted line and the tick "0".
  function renderFidelity(sec, f) {
    sec.appendChild(el('h3', null, 'Fidelity: speed against the distance from ' + f.reference));
    const floor = f.kl_floor;
    const ok = f.variants.filter((v) => !v.error);
    const isFloor = (x) => Math.abs(x / floor - 1) < 1e-9;
    function tick(v) {
      if (isFloor(v)) return '0';
      const e = Math.log10(v);
      return Math.abs(e - Math.round(e)) < 1e-9 ? v.toExponential(0) : '';
    }
    function speedChart(kind, stage, klKey, title, withFrontier, height) {
      const pts = ok.filter((v) => v[stage + '_tps']).map((v) => ({
        x: v[klKey] > 0 ? v[klKey] : floor, y: v[stage + '_tps'].median, kl: v[klKey], label: v.short_label,
        frontier: withFrontier && v.frontier, spread: { lo: v[stage + '_tps'].min, hi: v[stage + '_tps'].max } }));
      if (!pts.length) return false;
      const front = pts.filter((p) => p.frontier).sort((a, b) => a.x - b.x || a.y - b.y);
      const rest = pts.filter((p) => !p.frontier);
      const points = (list) => list.map((p) => ({ x: p.x, y: p.y, kl: p.kl, label: p.label }));
      const datasets = [];
      if (front.length) {
        datasets.push({ label: 'on the frontier', data: points(front), errorBars: front.map((p) => p.spread),
                        errorBarColor: color(3), showLine: true, borderWidth: 2, pointStyle: 'rectRot',
                        pointRadius: 7, borderColor: color(3), backgroundColor: color(3) });
      }
      if (rest.length) {
        datasets.push({ label: withFrontier ? 'not on the frontier' : 'variants', data: points(rest),
                        errorBars: rest.map((p) => p.spread), errorBarColor: color(0), pointRadius: 5,
                        borderColor: color(0), backgroundColor: color(0) });
      }
      // KL 0's floor: a dotted line, named by its tick "0" (a label on the line covered points).
      const annotations = {
        kl0: { type: 'line', xMin: floor, xMax: floor, borderColor: '#444', borderDash: [2, 3], borderWidth: 1 },
      };
      // Each point named beside it, placed clear of the other points, labels and the edges.
      const labels = pts.map((p) => ({ text: p.label, x: p.x, y: p.y }));
      let xMax = floor, yMax = 0;
      pts.forEach((p) => {
        xMax = Math.max(xMax, p.x);
        yMax = Math.max(yMax, p.y, p.spread.hi === null ? 0 : p.spread.hi);
      });
      addChart(sec, kind, {
        type: 'scatter',
        data: { datasets: datasets },
        options: {
          scales: {
            x: { type: 'logarithmic', min: floor / 4, max: xMax * 3,
                 ticks: { callback: tick, autoSkip: false, maxRotation: 0 },
                 title: { display: true, text: (klKey === 'decode_kl_mean' ? 'decode' : f.prefill_kl_stage) +
                                               ' KL(reference ‖ variant), nats, mean (log scale; 0 on the floor)' } },
            y: { beginAtZero: true, suggestedMax: yMax * 1.15, title: { display: true, text: stage + ' tokens/s' } },
          },
          plugins: { title: { display: true, text: title },
                     tooltip: { callbacks: { label: (c) => c.raw.label + ': ' + num(c.raw.y) + ' tok/s, KL ' +
                                                          (c.raw.kl > 0 ? num(c.raw.kl) : '0') } },
                     annotation: { annotations: annotations },
                     sbLabels: { labels: labels } },
        },
      }, height);
      return true;
    }
    const reps = f.reps + (f.reps === 1 ? ' repetition' : ' repetitions');
    if (!speedChart('fidelity-decode', 'decode', 'decode_kl_mean',
                    'Decode speed against decode KL, one point per variant', true, 380)) {
      sec.appendChild(note('No variant has a decode speed and a distance to draw; the table says why.'));
    } else {
      sec.appendChild(el('p', { class: 'caption' },
        'Each point is a variant: decode tokens/s (median of the speed pass; whiskers: the range of its ' + reps +
        ') against its mean decode KL to the reference over the ' + f.n_gen + ' teacher-forced positions, on a log ' +
        'scale. KL 0 (the reference itself, and any variant with exactly its logits) cannot sit on a log scale: ' +
        'those points are drawn on the axis floor at ' + num(floor) + ', a decade below the smallest KL measured, ' +
        'marked by the dotted line and the tick "0". Red diamonds joined by the line: the frontier, the variants ' +
        'that no other variant beats both in decode speed and in closeness to the reference.'));
    }
    if (speedChart('fidelity-prefill', 'prefill', 'prefill_kl_mean', 'Prefill speed against ' + f.prefill_kl_stage + ' KL',
                   false, 260)) {
      sec.appendChild(el('p', { class: 'caption' },
        'Prefill tokens/s (pp' + f.n_prompt + ') against the mean KL of the ' +
        (f.prefill_kl_stage === 'prompt' ? 'prompt stage (every prompt position, --prompt-logits)'
                                         : 'prefill stage (the logits after the prompt\'s last token)') +
        ', KL 0 on the floor as above. The frontier is the document\'s, on decode; it is not drawn here.'));
    }
    const ppl = f.variants.some((v) => v.perplexity !== null);
    const spread = (s) => (s ? num(s.median) + (s.n > 1 ? ' [' + num(s.min) + '–' + num(s.max) + ']' : '') : '–');
    sec.appendChild(table(
      ['variant', 'devices', 'weights', 'ctk/ctv', 'decode tok/s median [min–max]', 'prefill tok/s median [min–max]',
       'KL decode mean', 'KL decode p99', 'top-1 decode'].concat(ppl ? ['PPL ±'] : []).concat(['frontier', 'status']),
      f.variants.map((v) => [v.label, v.devices, v.weights || '–', v.type_k + '/' + v.type_v, spread(v.decode_tps),
                             spread(v.prefill_tps), num(v.decode_kl_mean), num(v.decode_kl_p99), pct(v.decode_top1)]
        .concat(ppl ? [v.perplexity === null ? '–' : num(v.perplexity, 6) + ' ± ' + num(v.perplexity_error, 3)] : [])
        .concat([v.frontier ? 'yes' : '', v.error ? 'failed: ' + v.error : v.reference ? 'reference' : 'ok'])),
      (i) => (f.variants[i].error ? 'failed' : null)));
    if (f.text) {
      sec.appendChild(el('p', { class: 'caption' }, 'Perplexity of ' + f.text.path + ' in ' + f.text.chunks +
        ' windows of ' + f.text.n_ctx + ' tokens (llama-perplexity\'s windows); the reference: ' +
        num(f.text.reference_perplexity, 6) + '.'));
    }
  }

  function renderSustained(sec, s) {
    sec.appendChild(el('h3', null, 'Sustained rounds'));
    s.phases.forEach((p) => {
      sec.appendChild(el('h4', null, 'Phase: ' + p.name + (p.background ? ' (background load ' + p.background + ')' : '')));
      const rounds = p.rounds;
      const series = (key) => rounds.map((r) => ({ x: r.round, y: r[key] }));
      const hasTemp = rounds.some((r) => r.temp_max_c !== null);
      // The marks are vertical lines named in the caption under the charts, not on them: a
      // label on the plot would cover the rounds' points wherever they happen to lie.
      const annotations = {};
      const marks = [];
      if (p.onset_round !== null) {
        annotations.onset = { type: 'line', xMin: p.onset_round, xMax: p.onset_round, borderColor: '#b3261e',
                              borderWidth: 2 };
        marks.push('solid red line: throttle onset (round ' + p.onset_round + ')');
      }
      // A drop of throughput without clock or temperature evidence is not called throttling.
      if (p.drop_round !== undefined && p.drop_round !== null && p.drop_round !== p.onset_round) {
        annotations.drop = { type: 'line', xMin: p.drop_round, xMax: p.drop_round, borderColor: '#9a6700',
                             borderDash: [6, 3], borderWidth: 2 };
        marks.push('dashed brown line: throughput drop without clock or temperature evidence (round ' +
                   p.drop_round + ')');
      }
      if (p.freq_onset_round !== null && p.freq_onset_round !== p.onset_round) {
        annotations.freq = { type: 'line', xMin: p.freq_onset_round, xMax: p.freq_onset_round, borderColor: '#8e5cc4',
                             borderDash: [4, 4], borderWidth: 1.5 };
        marks.push('dotted purple line: CPU frequency drop (round ' + p.freq_onset_round + ')');
      }
      // One chart per stage (their rates differ by orders of magnitude), each over temperature.
      [['decode', 'decode_tps', 1], ['prefill', 'prefill_tps', 0]].forEach(([stage, key, c]) => {
        if (!rounds.some((r) => r[key] !== null)) return;
        const datasets = [{ label: stage + ' tokens/s', data: series(key), yAxisID: 'y',
                            borderColor: color(c), backgroundColor: color(c) }];
        const scales = { x: { type: 'linear', offset: true, title: { display: true, text: 'round' }, ticks: { stepSize: 1 } },
                         y: { beginAtZero: true, position: 'left', title: { display: true, text: stage + ' tokens/s' } } };
        if (hasTemp) {
          datasets.push({ label: 'hottest sensor, max °C', data: series('temp_max_c'), yAxisID: 'y2',
                          borderColor: color(3), backgroundColor: color(3), borderDash: [5, 4] });
          scales.y2 = { position: 'right', grid: { drawOnChartArea: false }, title: { display: true, text: '°C' } };
        }
        addChart(sec, 'sustained-' + stage, { type: 'line', data: { datasets: datasets },
                                              options: { scales: scales, plugins: { annotation: { annotations: annotations } } } });
      });
      if (marks.length) sec.appendChild(el('p', { class: 'caption' }, 'Marks: ' + marks.join('; ') + '.'));
      sec.appendChild(el('p', null, 'Verdict: ', el('strong', null, p.verdict || '–'),
        p.steady_decode_tps !== null ? '; steady decode ' + num(p.steady_decode_tps) + ' tok/s' : '',
        p.first_last_change !== null ? '; last vs first round ' + pct(p.first_last_change) : '',
        p.onset_round !== null ? '; throttle onset at round ' + p.onset_round : '',
        p.onset_basis ? ' (from ' + p.onset_basis + ')' : ''));
      if (p.evidence && p.evidence.length) {
        sec.appendChild(el('p', { class: 'caption' }, 'Evidence of throttling: ' + p.evidence.join('; ') + '.'));
      }
      if (p.load && !(p.verdict || '').includes(p.load)) {
        sec.appendChild(el('p', { class: 'caption' }, 'Load: ' + p.load + '.'));
      }
      // The sustained-load study's table: one request per round, and the mean ± sd of each figure.
      const a = p.across || {};
      const meanSd = (x, d) => (!x || x.mean === null || x.mean === undefined ? '–'
        : num(x.mean, d) + (x.sd === null || x.sd === undefined ? '' : ' ± ' + num(x.sd, 2)));
      const given = (v) => v !== null && v !== undefined;
      const hasNpu = rounds.some((r) => given(r.temp_npu_c));
      const hasBattery = rounds.some((r) => given(r.battery_capacity_start_pct) || given(r.battery_capacity_end_pct));
      const hasDrain = rounds.some((r) => given(r.battery_drain_pct_per_h));
      const headers = ['round', 'status', 'E2E s', 'combined tok/s', 'prefill tok/s', 'decode tok/s', 'TTFT ms',
                       'power W', 'energy J', 'J/token', 'CPU °C', 'GPU °C']
        .concat(hasNpu ? ['NPU °C'] : []).concat(hasBattery ? ['battery %'] : []).concat(hasDrain ? ['drain %/h'] : [])
        .concat(['max °C', 'CPU MHz']);
      const rows = rounds.map((r) => [String(r.round), r.status, num(r.e2e_s), num(r.combined_tps), num(r.prefill_tps),
                                      num(r.decode_tps), num(r.ttft_ms), num(r.power_w), num(r.energy_j),
                                      num(r.j_per_token), num(r.temp_cpu_c), num(r.temp_gpu_c)]
        .concat(hasNpu ? [num(r.temp_npu_c)] : [])
        .concat(hasBattery ? [num(r.battery_capacity_start_pct) + ' → ' + num(r.battery_capacity_end_pct)] : [])
        .concat(hasDrain ? [num(r.battery_drain_pct_per_h)] : [])
        .concat([num(r.temp_max_c), num(r.cpu_freq_mhz)]));
      rows.push(['mean ± sd', '', meanSd(a.e2e_s), meanSd(a.combined_tps), '', '', '', meanSd(a.power_w),
                 meanSd(a.energy_j), meanSd(a.j_per_token), meanSd(a.temp_cpu_c), meanSd(a.temp_gpu_c)]
        .concat(hasNpu ? [meanSd(a.temp_npu_c)] : []).concat(hasBattery ? [''] : []).concat(hasDrain ? [''] : [])
        .concat(['', '']));
      sec.appendChild(table(headers, rows));
      const drains = [];
      if (p.battery_drain_capacity_pct !== undefined && p.battery_drain_capacity_pct !== null) {
        drains.push(num(p.battery_drain_capacity_pct) + ' % by the capacity (whole percent), first round to last');
      }
      if (p.battery_drain_energy_pct !== undefined && p.battery_drain_energy_pct !== null) {
        drains.push(num(p.battery_drain_energy_pct, 3) + ' % of a full charge by energy over the requests');
      }
      if (given(p.battery_drain_pct)) {
        drains.push(num(p.battery_drain_pct, 3) + ' % (' + num(p.battery_drain_pct_per_h) + ' %/h) by ' +
                    p.battery_drain_from + ', first round\'s start to last round\'s end');
      }
      if (drains.length) sec.appendChild(el('p', { class: 'caption' }, 'Battery drain: ' + drains.join('; ') + '.'));
    });
    if (s.slowdown.length) {
      sec.appendChild(el('h4', null, 'Slowdown under background load'));
      sec.appendChild(table(['stage', 'baseline / loaded', '95% CI', 'verdict'],
        s.slowdown.map((x) => [x.stage, num(x.ratio), '[' + num(x.lo) + ', ' + num(x.hi) + ']',
                               x.no_difference ? 'no difference' : 'different'])));
    }
  }

  function renderWarnings(sec, ws) {
    sec.appendChild(el('h3', null, 'Warnings'));
    ws.forEach((w) => {
      sec.appendChild(el('div', { class: 'warning' },
        el('span', { class: 'code' }, w.code || 'warning'), w.where ? ' (' + w.where + ')' : '', ': ', w.message,
        w.hint ? el('div', { class: 'hint' }, w.hint) : null));
    });
  }

  function verdictClass(v) {
    if (/faster|better|improv|less energy/i.test(v)) return 'verdict-better';
    if (/slower|worse|regress|more energy/i.test(v)) return 'verdict-worse';
    return null;
  }

  // A compare side: its median with the median's 95% CI, or its total ("Σ"), in the row's unit.
  function sideValue(r, s) {
    if (s.total !== null && s.total !== undefined) return 'Σ ' + num(s.total);
    return withCi(s);
  }

  const ratioText = (x) => (x ? num(x.median, 3) + (x.lo !== null ? ' [' + num(x.lo, 3) + ', ' + num(x.hi, 3) + ']' : '') : '–');

  // The ratios of rows as points with their CIs, against the line at 1.
  function ratioChart(sec, rows, label) {
    const labels = [], medians = [], cis = [];
    // Each label in lines at its ' · ' (row, metric, ratio), so that long ones fit.
    rows.forEach((r) => r.ratios.forEach((x) => {
      labels.push((label(r) + ' · ' + x.label).split(' · '));
      medians.push(x.median);
      cis.push({ lo: x.lo, hi: x.hi });
    }));
    if (!labels.length) return;
    let lo = 1, hi = 1;
    medians.concat(cis.map((e) => e.lo), cis.map((e) => e.hi)).forEach((v) => {
      if (v !== null && v !== undefined) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    });
    const pad = Math.max(0.02, (hi - lo) * 0.1);
    // When the labels side by side would not fit across the chart (an ops compare: every op
    // type of both stages), they stand upright, so that none overlaps another or leaves the chart.
    const longest = Math.max(...labels.map((l) => Math.max(...l.map((line) => line.length))));
    const upright = labels.length * longest * 7 > 700;
    addChart(sec, 'compare-ratios', {
      type: 'line',
      data: { labels: labels, datasets: [{ label: 'ratio (point) with its 95% CI (whiskers)', data: medians,
                                           errorBars: cis, showLine: false, pointRadius: 5, pointStyle: 'rectRot',
                                           borderColor: color(0), backgroundColor: color(0) }] },
      options: {
        scales: { x: { offset: true, ticks: { autoSkip: false, maxRotation: upright ? 90 : 0,
                                              minRotation: upright ? 90 : 0 } },
                  y: { min: Math.max(0, lo - pad), max: hi + pad, title: { display: true, text: 'ratio' } } },
        plugins: { annotation: { annotations: { one: { type: 'line', yMin: 1, yMax: 1, borderColor: '#444',
                                                       borderDash: [6, 4], borderWidth: 1 } } } },
      },
    }, upright ? 300 + 7 * longest : 300 + 16 * Math.max(...labels.map((l) => l.length)));
    sec.appendChild(el('p', { class: 'caption' },
      'Points: the ratio to the baseline (of medians; for op types, of totals); whiskers: its 95% CI; dashed line: ' +
      'no change (1).'));
  }

  // Ops documents compared node by node: one sortable row per stage, op, shape and metric, the
  // op types' totals first (analysis/compare_ops.cpp).
  function renderOpsCompare(sec, c) {
    const labels = c.inputs.map((i) => i.label);
    const headers = ['stage', 'op', 'role', 'shape', 'metric']
      .concat(labels.map((l) => l + ' (n)'))
      .concat(labels.slice(1).map((l) => l + '/' + labels[0] + ' [95% CI]'))
      .concat(['verdict']);
    const rows = c.rows.map((r) => {
      const sig = r.signature || { role: '', shape: '' };
      // A fallback priced against the device alone names where it ran; a fused op which side
      // summed its parts.
      const fallback = r.metric === 'fallback_us';
      const cells = [r.stage, (fallback ? r.test : r.op || r.test) + (r.fused ? ' (fused; ' + r.fused + ')' : ''),
                     fallback ? '–' : sig.role || (r.signature ? '–' : 'all shapes'), sig.shape || '–',
                     r.metric + (r.unit ? ' (' + r.unit + ')' : '')];
      labels.forEach((l) => {
        const s = r.sides.find((x) => x.label === l);
        cells.push(s ? { text: sideValue(r, s) + ' (' + num(s.n) + ')',
                         sort: s.total !== null && s.total !== undefined ? s.total : s.median } : '–');
      });
      labels.slice(1).forEach((l) => {
        const x = r.ratios.find((q) => q.label === l + '/' + labels[0]);
        cells.push({ text: ratioText(x), sort: x ? x.median : null });
      });
      cells.push(el('span', { class: verdictClass(r.ratios.map((x) => x.verdict).join(' ')) },
                    r.ratios.map((x) => x.verdict).join('; ') || '–'));
      return cells;
    });
    sec.appendChild(el('p', { class: 'caption' },
      'Per stage, each op type summed over the shapes both sides ran ("all shapes": Σ op time, Σ call time, Σ call ' +
      '/ Σ op), then each shape (matched by op, role and the types and shapes of its tensors): the median over its ' +
      'nodes with the median\'s 95% CI, and n nodes. Click a column header to sort.'));
    sec.appendChild(sortableTable(headers, rows));
    // The op types' summed op times only: one point per op type and stage.
    ratioChart(sec, c.rows.filter((r) => r.metric === 'op_total_us'), (r) => r.stage + ' ' + r.test + ' Σ op');
  }

  function renderCompare(sec, c) {
    sec.appendChild(el('h3', null, 'Comparison'));
    if (c.inputs.length) {
      sec.appendChild(table(['label', 'source', 'command', 'host', 'cpu', 'started at'],
        c.inputs.map((i) => [i.label, i.source, i.command, i.host, i.cpu, i.started_at])));
    }
    if (c.rows.some((r) => r.op)) {
      renderOpsCompare(sec, c);
    } else if (c.rows.length) {
      const rows = [];
      c.rows.forEach((r) => {
        const sides = r.sides.map((s) => s.label + ': ' + sideValue(r, s) + ' ' + r.unit +
                                          ' (CV ' + pct(s.cv) + ', n ' + num(s.n) + ')' +
                                          (s.robust ? '; robust ' + withCi(s.robust) + ' tok/s, stalls ' +
                                                      stallsText(s.robust) : '')).join('\n');
        const ratioCells = r.ratios.length ? r.ratios : [null];
        ratioCells.forEach((x) => {
          const verdict = x ? el('span', { class: verdictClass(x.verdict) }, x.verdict) : '–';
          rows.push([r.test, r.stage + (r.metric ? ' (' + r.metric + ')' : ''), r.differs || '–',
                     { text: sides, sort: r.sides.length ? r.sides[0].median : null },
                     { text: x ? x.label + ' ' + ratioText(x) : '–', sort: x ? x.median : null }, verdict]);
        });
      });
      const t = sortableTable(['test', 'stage', 'differs', 'median [95% CI] and CV per side; robust tok/s and stalls',
                               'ratio [95% CI]', 'verdict'], rows);
      t.querySelectorAll('td:nth-child(4)').forEach((td) => { td.style.whiteSpace = 'pre-line'; });
      sec.appendChild(t);
      const serveMetric = (r) => ['median_ms', 'p99_ms', 'output_tokens_per_s', 'request_per_s', 'goodput_per_s'].includes(r.metric);
      ratioChart(sec, c.rows, (r) => r.test + ' · ' + r.stage + (serveMetric(r) ? ' ' + r.metric : ''));
    }
    if (c.unmatched.length) {
      sec.appendChild(el('p', null, 'Without a counterpart (listed, not dropped): ' +
                                    c.unmatched.map((u) => u.label + ' ' + u.test + (u.why ? ' (' + u.why + ')' : '')).join('; ')));
    }
    c.notes.forEach((n) => sec.appendChild(note(n)));
  }

  // Each section on its own: a section that fails to draw says so and leaves the rest.
  function section(sec, name, fn) {
    try {
      fn();
    } catch (e) {
      sec.appendChild(note('The ' + name + ' section could not be drawn: ' + e.message));
      console.error('stagebench report: ' + name + ': ' + e.message);
    }
  }

  // Every field of every measured stage, as --format csv writes them (src/report/stage_fields.cpp):
  // a field added there shows here without a change to this script.
  function renderStages(sec, s) {
    const text = (v) => (v === null || v === undefined ? '–' : String(v));
    const details = el('details', null,
      el('summary', null, 'Every field of every measured stage (' + s.rows.length + ' rows, the columns of --format csv)'),
      table(s.columns, s.rows.map((r) => r.map(text))));
    sec.appendChild(details);
  }

  function renderModes(sec, m) {
    sec.appendChild(el('h3', null, 'Pipeline modes'));
    sec.appendChild(el('p', { class: 'caption' }, 'stage time: ' + m.time_basis +
      '. Part 0 is the first mode\'s time, each next part the difference to the mode before; ' +
      'the parts add up to the last mode\'s time.'));
    const ci = (x) => (x.lo_ms == null ? '–' : num(x.lo_ms) + ' … ' + num(x.hi_ms));
    sec.appendChild(table(['mode', 'environment', 'stage', 'runs', 'stage ms', '95 % CI'],
      m.modes.flatMap((o) => m.stages.map((st) => {
        const t = o.times[st] || {};
        return [o.name, o.env, st, num(t.n), num(t.ms), ci(t)];
      }))));
    sec.appendChild(table(['stage', 'part', 'ms', '95 % CI', 'share of the last mode'],
      m.parts.map((p) => [p.stage, p.name, num(p.ms), ci(p), pct(p.share)])));
  }

  // `explain`: per stage, the levels (table) and the waterfall of the gap between the bench and
  // the server: floating horizontal bars from where the previous part ended, the bench and the
  // server as whole bars. Each bar's value is written beside it (sbValueLabels); the boxes of
  // those texts are kept on the chart (chart.$sbValueLabels, CSS px; the test harness checks
  // every text drawn on a canvas for clipping and overlap).
  const valueLabelsPlugin = {
    id: 'sbValueLabels',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      const boxes = [];
      chart.data.datasets.forEach((ds, i) => {
        if (!ds.valueLabels || !chart.isDatasetVisible(i)) return;
        const meta = chart.getDatasetMeta(i);
        ctx.save();
        ctx.font = '11px ' + Chart.defaults.font.family;
        ctx.fillStyle = '#1d2330';
        ctx.textBaseline = 'middle';
        meta.data.forEach((bar, j) => {
          const text = ds.valueLabels[j];
          if (!text) return;
          const w = ctx.measureText(text).width;
          const right = Math.max(bar.x, bar.base);
          let x = right + 4;
          // No room right of the bar: the text goes inside its right end.
          if (x + w > chart.chartArea.right) x = Math.max(chart.chartArea.left + 2, right - w - 4);
          ctx.fillText(text, x, bar.y);
          boxes.push({ x: x, y: bar.y - 7, w: w, h: 14, text: text });
        });
        ctx.restore();
      });
      chart.$sbValueLabels = boxes;
    },
  };
  Chart.register(valueLabelsPlugin);

  function renderExplain(sec, x) {
    sec.appendChild(el('h3', null, 'explain: from the op to the served request'));
    sec.appendChild(el('p', { class: 'caption' }, 'a ' + x.n_prompt + '-token prompt and ' + x.n_gen +
      ' generated tokens, ' + x.rounds + ' interleaved round(s); the server: ' + x.server_kind));
    x.verdicts.forEach((v) => sec.appendChild(el('p', null, v)));
    const ci = (lo, hi) => (lo === null || lo === undefined ? '–' : '[' + num(lo) + ', ' + num(hi) + ']');
    x.stages.forEach((st) => {
      sec.appendChild(el('h4', null, st.title));
      sec.appendChild(table(['level', 'median ms', '95 % CI', 'runs', 'step ms', '95 % CI'],
        st.levels.map((l) => [l.label, num(l.ms), ci(l.lo_ms, l.hi_ms), l.n + '/' + l.runs,
                              l.step_ms === null ? '' : num(l.step_ms), ci(l.step_lo_ms, l.step_hi_ms)])));
      if (!st.waterfall.length) return;
      const wf = st.waterfall;
      let top = 0;
      wf.forEach((w) => { top = Math.max(top, w.start_ms, w.end_ms); });
      const colors = wf.map((w) => (w.kind === 'total' ? '#6c7a89' : w.end_ms >= w.start_ms ? color(1) : color(2)));
      addChart(sec, 'explain-waterfall-' + st.stage, {
        type: 'bar',
        data: { labels: wf.map((w) => w.short),
                datasets: [{ label: st.stage + ' (ms)', data: wf.map((w) => [Math.min(w.start_ms, w.end_ms), Math.max(w.start_ms, w.end_ms)]),
                             backgroundColor: colors, valueLabels: wf.map((w) => w.value_label) }] },
        options: {
          indexAxis: 'y',
          scales: { x: { beginAtZero: true, max: top * 1.45, title: { display: true, text: 'ms' },
                         ticks: { callback: (v) => num(v, 3) } },
                    y: { ticks: { autoSkip: false } } },
          plugins: { legend: { display: false },
                     title: { display: true, text: 'Where the gap between the bench and the server goes (' + st.stage + ')' },
                     tooltip: { callbacks: { label: (c) => wf[c.dataIndex].label + ': ' + wf[c.dataIndex].value_label +
                       (wf[c.dataIndex].lo_ms === null ? '' : ', 95% CI ' + ci(wf[c.dataIndex].lo_ms, wf[c.dataIndex].hi_ms)) } } },
        },
      }, 36 * wf.length + 90);
      sec.appendChild(table(['part', 'ms', '95 % CI', 'share of the gap'],
        wf.map((w) => [w.label, w.kind === 'total' ? num(w.ms) : (w.ms >= 0 ? '+' : '') + num(w.ms),
                       ci(w.lo_ms, w.hi_ms), w.share === null ? '' : pct(w.share)])));
    });
    sec.appendChild(el('h4', null, 'Settings: the bench against the server'));
    sec.appendChild(table(['setting', 'bench', 'server', 'from', 'measured alone'],
      x.settings.map((s) => [s.label, s.bench, s.server === null ? '–' : s.server, s.source || '–', s.alone])));
    x.findings.forEach((f) => sec.appendChild(el('div', { class: 'warning' }, f)));
    x.notes.forEach((n) => sec.appendChild(note(n)));
  }

  // ---- Page ----------------------------------------------------------------------------------
  const main = document.getElementById('report');
  const toc = document.getElementById('toc');
  if (!data.documents.length) main.appendChild(note('No documents were given.'));
  data.documents.forEach((d) => {
    const sec = el('section', { id: d.id, class: 'doc', 'data-kind': d.kind });
    const title = (d.command || 'document') + ' — ' + d.source;
    sec.appendChild(el('h2', null, title));
    toc.appendChild(el('a', { href: '#' + d.id }, title));
    main.appendChild(sec);
    if (d.kind !== 'unknown') renderHeader(sec, d);
    (d.notes || []).forEach((n) => sec.appendChild(note(n)));
    if (d.summary) section(sec, 'summary', () => renderSummary(sec, d.summary));
    if (d.throughput) section(sec, 'throughput', () => renderThroughput(sec, d.throughput));
    if (d.memory) section(sec, 'memory', () => renderMemory(sec, d.memory));
    if (d.ops) section(sec, 'operator', () => renderOps(sec, d.ops, d.command));
    if (d.telemetry) section(sec, 'telemetry', () => renderTelemetry(sec, d.telemetry));
    if (d.sustained) section(sec, 'sustained', () => renderSustained(sec, d.sustained));
    if (d.hybrid) section(sec, 'hybrid', () => renderHybrid(sec, d.hybrid));
    if (d.modes) section(sec, 'modes', () => renderModes(sec, d.modes));
    if (d.serve) section(sec, 'serve', () => renderServe(sec, d.serve));
    if (d.fidelity) section(sec, 'fidelity', () => renderFidelity(sec, d.fidelity));
    if (d.explain) section(sec, 'explain', () => renderExplain(sec, d.explain));
    if (d.compare) section(sec, 'comparison', () => renderCompare(sec, d.compare));
    if (d.warnings) section(sec, 'warnings', () => renderWarnings(sec, d.warnings));
    if (d.stages) section(sec, 'stages', () => renderStages(sec, d.stages));
  });

  const libs = (data.libraries || []).map((l) => l.name + ' ' + l.version).join(', ');
  const footer = document.getElementById('footer');
  footer.appendChild(el('p', null, 'Generated by stagebench ' + (data.tool_version || '') + ' at ' +
                        data.generated_at + '. Charts drawn with ' + libs +
                        ' (embedded; this page loads nothing from the network).'));
  registry.ready = true;
}());
