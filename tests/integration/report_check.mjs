// Opens a stagebench HTML report in headless Chromium (driven by playwright-core) and fails
// when the page is not self-contained or did not draw what it should:
//   - any request other than the file itself (every request is intercepted and aborted),
//   - any console error or uncaught page error,
//   - an expected chart kind with no canvas, no Chart.js instance or a blank canvas,
//   - an expected annotated chart kind without annotations (or no annotation plugin),
//   - an expected text missing from the page,
//   - on an expected labels-fit chart kind (--expect-labels-fit): a category label Chart.js
//     skipped (its overlap and clipping are checked on every chart, below);
// and, on every chart the page draws, whatever its kind (the layout is looked at, not assumed):
//   - two texts of one chart that overlap (every text Chart.js or a plugin draws on the canvas:
//     ticks, axis and chart titles, legend, annotation and point labels; their boxes are taken
//     from the canvas's own fillText/strokeText calls, measured with measureText under the
//     transform in force, so a chart added later is checked without a change here),
//   - a text cut by the canvas's edge,
//   - a text inside the plot that covers a data point (a line's or scatter's point),
//   - a scatter chart whose points are crowded against one end of its x axis (their distinct
//     x values span less than a quarter of the plot's width: an axis from 0 with the points at
//     33-36);
// and every sortable table (table.sortable) sorts by a numeric column both ways when its header
// is clicked.
// Saves a full-page screenshot, and with --chart-shots DIR one PNG per chart
// (DOC-KIND-N.png). Prints one JSON line with what it saw; exit 0 on success.
// With --dump-charts FILE it also writes what every chart holds, for the caller to compare
// with the documents: [{"doc": section id ("d0"...), "kind", "labels", "datasets": [{"label",
// "data"}], "annotations": {name: {"type", "xMin", "xMax"; a label also "xValue", "yValue",
// "content"}}, "texts": [{"text", "box": [left, top, right, bottom]}] (canvas px),
// "pointLabels": [{"text", "left", "top", "right", "bottom"}] (report.js sbLabels)}] in page
// order.
//
// node report_check.mjs --driver DIR --chromium PATH --html FILE --screenshot PNG
//                       [--expect-chart KIND]... [--expect-annotated KIND]... [--expect-text TEXT]...
//                       [--expect-labels-fit KIND]... [--dump-charts FILE] [--chart-shots DIR]
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

function parseArgs(argv) {
  const a = { expectChart: [], expectAnnotated: [], expectText: [], labelsFit: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i], v = argv[i + 1];
    if (v === undefined) throw new Error('missing value for ' + k);
    if (k === '--driver') a.driver = v;
    else if (k === '--chromium') a.chromium = v;
    else if (k === '--html') a.html = v;
    else if (k === '--screenshot') a.screenshot = v;
    else if (k === '--expect-chart') a.expectChart.push(v);
    else if (k === '--expect-annotated') a.expectAnnotated.push(v);
    else if (k === '--expect-text') a.expectText.push(v);
    else if (k === '--dump-charts') a.dumpCharts = v;
    else if (k === '--chart-shots') a.chartShots = v;
    else if (k === '--expect-labels-fit') a.labelsFit.push(v);
    else throw new Error('unknown option ' + k);
  }
  for (const k of ['driver', 'chromium', 'html', 'screenshot']) {
    if (!a[k]) throw new Error('--' + k + ' is required');
  }
  return a;
}

const args = parseArgs(process.argv.slice(2));
const require = createRequire(import.meta.url);
const { chromium } = require(path.resolve(args.driver));

const problems = [];
const fileUrl = pathToFileURL(path.resolve(args.html)).href;
const browser = await chromium.launch({ executablePath: args.chromium, args: ['--no-sandbox'],
                                        timeout: 60000 });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url === fileUrl) return route.continue();
    problems.push('request to ' + url);
    return route.abort();
  });
  page.on('request', (req) => {
    // Requests the router does not see (data: URLs, for one) are reported here too.
    const url = req.url();
    if (url !== fileUrl && !url.startsWith('data:')) problems.push('request: ' + url);
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push('console error: ' + msg.text());
  });
  page.on('pageerror', (err) => problems.push('page error: ' + err.message));
  // Every text drawn on a canvas, with its box in canvas pixels: the canvas's own calls, so
  // whatever draws it (Chart.js, a plugin, a chart added later) is seen. A clear of the whole
  // canvas (Chart.js redrawing) starts the list again.
  await page.addInitScript(() => {
    const proto = CanvasRenderingContext2D.prototype;
    const record = (ctx, text, x, y) => {
      const t = String(text);
      if (!t.trim()) return;
      const m = ctx.measureText(t);
      const tf = ctx.getTransform();
      const pts = [[x - m.actualBoundingBoxLeft, y - m.actualBoundingBoxAscent],
                   [x + m.actualBoundingBoxRight, y - m.actualBoundingBoxAscent],
                   [x - m.actualBoundingBoxLeft, y + m.actualBoundingBoxDescent],
                   [x + m.actualBoundingBoxRight, y + m.actualBoundingBoxDescent]]
        .map(([px, py]) => [tf.a * px + tf.c * py + tf.e, tf.b * px + tf.d * py + tf.f]);
      const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
      const list = ctx.canvas.__sbTexts || (ctx.canvas.__sbTexts = []);
      list.push({ text: t, box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] });
    };
    for (const name of ['fillText', 'strokeText']) {
      const orig = proto[name];
      proto[name] = function (text, x, y, ...rest) {
        record(this, text, x, y);
        return orig.call(this, text, x, y, ...rest);
      };
    }
    const clear = proto.clearRect;
    proto.clearRect = function (x, y, w, h) {
      const tf = this.getTransform();
      const whole = tf.a * x + tf.e <= 0 && tf.d * y + tf.f <= 0 && tf.a * (x + w) + tf.e >= this.canvas.width &&
                    tf.d * (y + h) + tf.f >= this.canvas.height;
      if (whole) this.canvas.__sbTexts = [];
      return clear.call(this, x, y, w, h);
    };
  });

  await page.goto(fileUrl, { waitUntil: 'load', timeout: 60000 });
  await page.waitForFunction(() => window.sbReport && window.sbReport.ready === true,
                             null, { timeout: 30000 });
  const seen = await page.evaluate(() => {
    const out = [];
    for (const canvas of document.querySelectorAll('canvas[data-chart]')) {
      const chart = window.Chart.getChart(canvas);
      let painted = 0;
      const colors = new Set();
      if (canvas.width > 0 && canvas.height > 0) {
        const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        for (let i = 0; i < px.length; i += 4 * 7) {
          if (px[i + 3] > 0) {
            painted++;
            if (colors.size < 16) colors.add(px[i] + ',' + px[i + 1] + ',' + px[i + 2]);
          }
        }
      }
      const points = chart ? chart.data.datasets.reduce((n, d) => n + d.data.filter((v) => v !== null).length, 0) : 0;
      const ann = chart && chart.options.plugins.annotation ? chart.options.plugins.annotation.annotations : null;
      out.push({ kind: canvas.dataset.chart, chart: !!chart, painted: painted, colors: colors.size,
                 points: points, annotations: ann ? Object.keys(ann).length : 0 });
    }
    const charts = [];
    for (const canvas of document.querySelectorAll('canvas[data-chart]')) {
      const chart = window.Chart.getChart(canvas);
      if (!chart) continue;
      const section = canvas.closest('section.doc');
      const ann = chart.options.plugins.annotation ? chart.options.plugins.annotation.annotations : {};
      const annotations = {};
      for (const [name, a] of Object.entries(ann || {})) {
        annotations[name] = { type: a.type, xMin: a.xMin ?? null, xMax: a.xMax ?? null };
        if (a.type === 'label') {
          Object.assign(annotations[name], { xValue: a.xValue ?? null, yValue: a.yValue ?? null,
                                             content: a.content ?? null });
        }
      }
      charts.push({ doc: section ? section.id : null, kind: canvas.dataset.chart,
                    labels: chart.data.labels || [],
                    datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
                    annotations: annotations,
                    texts: (canvas.__sbTexts || []).map((t) => ({ text: t.text, box: t.box })),
                    pointLabels: chart.$sbLabels || [] });
    }
    // The layout of every chart: texts against each other, the canvas's edge and the points.
    const layout = [];
    const ratio = window.devicePixelRatio || 1;
    document.querySelectorAll('canvas[data-chart]').forEach((canvas, index) => {
      const chart = window.Chart.getChart(canvas);
      const section = canvas.closest('section.doc');
      const where = (section ? section.id : '?') + ' ' + canvas.dataset.chart + ' #' + index;
      const issues = [];
      // Each text once (a redraw of the same text in the same place is one text).
      const seenText = new Set();
      const texts = (canvas.__sbTexts || []).filter((t) => {
        const k = t.text + '@' + t.box.map((v) => Math.round(v)).join(',');
        if (seenText.has(k)) return false;
        seenText.add(k);
        return true;
      });
      const inter = (a, b) => [Math.min(a[2], b[2]) - Math.max(a[0], b[0]), Math.min(a[3], b[3]) - Math.max(a[1], b[1])];
      for (let i = 0; i < texts.length; i++) {
        for (let j = i + 1; j < texts.length; j++) {
          const [w, h] = inter(texts[i].box, texts[j].box);
          if (w > 1 && h > 1) issues.push('labels "' + texts[i].text + '" and "' + texts[j].text + '" overlap');
        }
        const b = texts[i].box;
        if (b[0] < -0.5 || b[1] < -0.5 || b[2] > canvas.width + 0.5 || b[3] > canvas.height + 0.5) {
          issues.push('label "' + texts[i].text + '" is cut by the chart\'s edge');
        }
      }
      if (chart) {
        const area = chart.chartArea;
        const inPlot = (b) => b[0] >= area.left * ratio - 1 && b[2] <= area.right * ratio + 1 &&
                              b[1] >= area.top * ratio - 1 && b[3] <= area.bottom * ratio + 1;
        const scatterLike = chart.config.type === 'scatter' || chart.config.type === 'line';
        const xs = [];
        chart.data.datasets.forEach((ds, i) => {
          if (!chart.isDatasetVisible(i)) return;
          chart.getDatasetMeta(i).data.forEach((e) => {
            if (e.skip || !Number.isFinite(e.x) || !Number.isFinite(e.y)) return;
            const r = (e.options && e.options.radius) || 0;
            if (scatterLike && r > 0) {
              xs.push(e.x);
              const p = [(e.x - r) * ratio, (e.y - r) * ratio, (e.x + r) * ratio, (e.y + r) * ratio];
              texts.forEach((t) => {
                if (!inPlot(t.box)) return;
                const [w, h] = inter(t.box, p);
                if (w > 1 && h > 1) issues.push('label "' + t.text + '" covers a point of "' + (ds.label || i) + '"');
              });
            }
          });
        });
        if (chart.config.type === 'scatter' && chart.scales.x) {
          const distinct = [...new Set(xs.map((x) => Math.round(x)))];
          const span = distinct.length > 1 ? Math.max(...distinct) - Math.min(...distinct) : null;
          if (span !== null && span < 0.25 * (area.right - area.left)) {
            issues.push('its points are crowded in ' + Math.round(100 * span / (area.right - area.left)) +
                        ' % of the x axis (' + chart.scales.x.min + ' to ' + chart.scales.x.max + ')');
          }
        }
      }
      // The category axis (y of a horizontal bar chart, x otherwise): labels shown of those given.
      const category = chart && chart.scales[chart.options.indexAxis === 'y' ? 'y' : 'x'];
      layout.push({ where: where, kind: canvas.dataset.chart, texts: texts,
                    labels: chart && chart.$sbLabels ? chart.$sbLabels : [],
                    shown: category && category.ticks ? category.ticks.length : 0,
                    categories: chart ? (chart.data.labels || []).length : 0, issues: issues });
    });
    let annotationPlugin = false;
    try { annotationPlugin = !!window.Chart.registry.getPlugin('annotation'); } catch (e) { /* absent */ }
    return { canvases: out, charts: charts, instances: Object.keys(window.Chart.instances).length,
             annotationPlugin: annotationPlugin, text: document.body.innerText, layout: layout };
  });
  for (const l of seen.layout) l.issues.forEach((i) => problems.push('chart ' + l.where + ': ' + i));
  const textsChecked = seen.layout.reduce((n, l) => n + l.texts.length, 0);

  // Sortable tables: a numeric column sorts ascending on the first click, descending on the next.
  const sortable = await page.$$('table.sortable');
  for (const [ti, tableHandle] of sortable.entries()) {
    const column = await tableHandle.evaluate((t) => {
      const rows = Array.from(t.tBodies[0].rows);
      if (rows.length < 2) return -1;
      const n = t.tHead.rows[0].cells.length;
      for (let j = n - 1; j >= 0; j--) {
        if (rows.filter((r) => r.cells[j] && r.cells[j].dataset.sort !== undefined).length >= 2) return j;
      }
      return -1;
    });
    if (column < 0) continue;
    for (const dir of ['ascending', 'descending']) {
      await tableHandle.evaluate((t, j) => t.tHead.rows[0].cells[j].click(), column);
      const ok = await tableHandle.evaluate((t, [j, d]) => {
        const v = Array.from(t.tBodies[0].rows).map((r) => r.cells[j].dataset.sort)
          .filter((x) => x !== undefined).map(Number);
        return v.every((x, i) => i === 0 || (d === 'ascending' ? v[i - 1] <= x : v[i - 1] >= x)) &&
               t.tHead.rows[0].cells[j].getAttribute('aria-sort') === d;
      }, [column, dir]);
      if (!ok) problems.push('sortable table ' + ti + ': column ' + column + ' is not ' + dir + ' after a click');
    }
  }

  if (args.chartShots) {
    mkdirSync(args.chartShots, { recursive: true });
    const canvases = await page.$$('canvas[data-chart]');
    for (const [i, c] of canvases.entries()) {
      const name = await c.evaluate((el, n) => {
        const s = el.closest('section.doc');
        return (s ? s.id : 'x') + '-' + el.dataset.chart + '-' + n;
      }, i);
      await c.screenshot({ path: path.join(args.chartShots, name + '.png') });
    }
  }

  const byKind = {};
  for (const c of seen.canvases) {
    const k = byKind[c.kind] || (byKind[c.kind] = { canvases: 0, drawn: 0, annotated: 0 });
    k.canvases++;
    if (c.annotations > 0) k.annotated++;
    // Drawn: a Chart.js instance with data, and paint of more than one colour (axes and bars).
    if (c.chart && c.points > 0 && c.painted > 50 && c.colors > 1) k.drawn++;
  }
  for (const kind of args.expectChart) {
    if (!byKind[kind]) problems.push('no chart of kind ' + kind);
    else if (byKind[kind].drawn !== byKind[kind].canvases) {
      problems.push('chart ' + kind + ': ' + byKind[kind].drawn + ' of ' + byKind[kind].canvases + ' drawn');
    }
  }
  for (const kind of args.expectAnnotated) {
    if (!seen.annotationPlugin) problems.push('the annotation plugin is not registered');
    if (!byKind[kind] || byKind[kind].annotated === 0) problems.push('no annotations on chart ' + kind);
  }
  if (seen.instances !== seen.canvases.length) {
    problems.push(seen.instances + ' Chart.js instances for ' + seen.canvases.length + ' canvases');
  }
  for (const t of args.expectText) {
    if (!seen.text.includes(t)) problems.push('text not on the page: ' + t);
  }
  for (const kind of args.labelsFit) {
    const charts = seen.layout.filter((l) => l.kind === kind);
    if (!charts.length) problems.push('no chart of kind ' + kind + ' to check the labels of');
    for (const c of charts) {
      if (c.shown !== c.categories) problems.push(kind + ': ' + c.shown + ' of ' + c.categories + ' category labels shown');
    }
  }
  if (args.dumpCharts) writeFileSync(args.dumpCharts, JSON.stringify(seen.charts));
  await page.screenshot({ path: args.screenshot, fullPage: true });
  console.log(JSON.stringify({ charts: seen.instances, kinds: byKind, texts_checked: textsChecked,
                               sortable_tables: sortable.length, screenshot: args.screenshot,
                               chromium: browser.version() }));
} finally {
  await browser.close();
}
if (problems.length) {
  for (const p of problems) console.error('report_check: ' + p);
  process.exit(1);
}
