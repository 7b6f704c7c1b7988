// Opens a stagebench HTML report in headless Chromium (driven by playwright-core) and fails
// when the page is not self-contained or did not draw what it should:
//   - any request other than the file itself (every request is intercepted and aborted),
//   - any console error or uncaught page error,
//   - an expected chart kind with no canvas, no Chart.js instance or a blank canvas,
//   - an expected annotated chart kind without annotations (or no annotation plugin),
//   - an expected text missing from the page,
//   - on an expected labels-fit chart kind: a category label Chart.js skipped, a label (category
//     tick or value label, chart.$sbLabels) outside the canvas, or two labels that overlap.
// Saves a full-page screenshot. Prints one JSON line with what it saw; exit 0 on success.
// With --dump-charts FILE it also writes what every chart holds, for the caller to compare
// with the documents: [{"doc": section id ("d0"...), "kind", "labels", "datasets": [{"label",
// "data"}], "annotations": {name: {"type", "xMin", "xMax"; a label also "xValue", "yValue",
// "content"}}}] in page order.
//
// node report_check.mjs --driver DIR --chromium PATH --html FILE --screenshot PNG
//                       [--expect-chart KIND]... [--expect-annotated KIND]... [--expect-text TEXT]...
//                       [--expect-labels-fit KIND]... [--dump-charts FILE]
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
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
                    annotations: annotations });
    }
    // Every text a chart drew, as boxes in CSS pixels: its category ticks (the y axis of a
    // horizontal bar chart, the x axis otherwise) and its value labels.
    const labelBoxes = [];
    for (const canvas of document.querySelectorAll('canvas[data-chart]')) {
      const chart = window.Chart.getChart(canvas);
      const horizontal = chart && chart.options.indexAxis === 'y';
      const scale = chart && chart.scales[horizontal ? 'y' : 'x'];
      if (!scale || !scale.ticks) continue;
      const labels = chart.data.labels || [];
      const font = window.Chart.helpers.toFont(scale.options.ticks.font);
      const ctx = canvas.getContext('2d');
      ctx.save();
      ctx.font = font.string;
      const boxes = [];
      scale.ticks.forEach((t, i) => {
        const text = String(labels[t.value] ?? t.label);
        const w = ctx.measureText(text).width;
        const p = scale.getPixelForTick(i);
        if (horizontal) {
          const right = scale.right - (scale.options.ticks.padding || 0);
          boxes.push({ x: right - w, y: p - font.lineHeight / 2, w: w, h: font.lineHeight, text: text });
        } else {
          boxes.push({ x: p - w / 2, y: scale.top, w: w, h: font.lineHeight, text: text });
        }
      });
      ctx.restore();
      for (const b of chart.$sbLabels || []) boxes.push(b);
      labelBoxes.push({ kind: canvas.dataset.chart, shown: scale.ticks.length, labels: labels.length,
                        width: chart.width, height: chart.height, boxes: boxes });
    }
    let annotationPlugin = false;
    try { annotationPlugin = !!window.Chart.registry.getPlugin('annotation'); } catch (e) { /* absent */ }
    return { canvases: out, charts: charts, instances: Object.keys(window.Chart.instances).length,
             annotationPlugin: annotationPlugin, text: document.body.innerText, labelBoxes: labelBoxes };
  });

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
    const charts = seen.labelBoxes.filter((c) => c.kind === kind);
    if (!charts.length) problems.push('no chart of kind ' + kind + ' to check the labels of');
    for (const c of charts) {
      if (c.shown !== c.labels) problems.push(kind + ': ' + c.shown + ' of ' + c.labels + ' category labels shown');
      c.boxes.forEach((b, i) => {
        if (b.x < 0 || b.y < 0 || b.x + b.w > c.width + 0.5 || b.y + b.h > c.height + 0.5) {
          problems.push(kind + ': label "' + b.text + '" is clipped (' + Math.round(b.x) + ',' + Math.round(b.y) +
                        ' ' + Math.round(b.w) + 'x' + Math.round(b.h) + ' in ' + c.width + 'x' + c.height + ')');
        }
        for (let j = i + 1; j < c.boxes.length; j++) {
          const o = c.boxes[j];
          if (b.x < o.x + o.w && o.x < b.x + b.w && b.y < o.y + o.h && o.y < b.y + b.h) {
            problems.push(kind + ': labels "' + b.text + '" and "' + o.text + '" overlap');
          }
        }
      });
    }
  }
  if (args.dumpCharts) writeFileSync(args.dumpCharts, JSON.stringify(seen.charts));
  await page.screenshot({ path: args.screenshot, fullPage: true });
  console.log(JSON.stringify({ charts: seen.instances, kinds: byKind, screenshot: args.screenshot,
                               chromium: browser.version() }));
} finally {
  await browser.close();
}
if (problems.length) {
  for (const p of problems) console.error('report_check: ' + p);
  process.exit(1);
}
