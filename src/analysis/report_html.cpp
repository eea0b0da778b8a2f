// `tbench report --format html`: one self-contained page (no network, no libraries) with the
// table and three SVG charts drawn by inline script from the embedded data: epoch time per model
// and label, throughput of every iteration over time, and speedup vs the baseline.
#include "tbench/analysis/analysis.hpp"
#include "tbench/json_text.hpp"

namespace tbench {
namespace {

using nlohmann::json;

json iteration_series(const Report& report) {
  json series = json::array();
  for (const auto* r : report.results) {
    json points = json::array();
    for (const auto& it : r->iterations) {
      // Global samples/s, as the table's: a data-parallel result holds rank 0's steps, and the
      // ranks step together. Steps the summary leaves out (warm-up, profiled) are circled.
      const double samples = static_cast<double>(it.samples * r->world_size);
      points.push_back({it.ended_at, samples / it.seconds, it.warmup || it.profiled});
    }
    series.push_back({{"name", model_row(*r, report.by) + " · " + label_of(*r, report.by)}, {"path", r->path}, {"points", points}});
  }
  return series;
}

// Escapes "</" so embedded JSON cannot close the <script> element.
std::string script_safe(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

const char* kPage = R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tbench report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
svg.chart{background:#fafafa;border:1px solid #ddd}
.legend span{display:inline-block;margin-right:1em}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
</style></head><body>
<h1>tbench report</h1>
<p id="note"></p>
<table id="table"></table>
<h2>Epoch time by model</h2><div id="epochs"></div>
<h2>Throughput per iteration over time</h2><div id="throughput"></div>
<h2>Speedup vs baseline</h2><div id="speedup"></div>
<script>
const DATA = __DATA__;
const COLORS = ["#4269d0","#efb118","#ff725c","#6cc5b0","#3ca951","#ff8ab7","#a463f2","#97bbf5","#9c6b4e","#9498a0"];
const NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
const esc = s => String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
function mmss(s) {  // format_duration's form: the fraction a figure under 10 s needs
  if (s < 0.9995) return "00:0" + Math.max(0, s).toFixed(3);
  if (s < 9.995) return "00:0" + s.toFixed(2);
  s = Math.round(s); const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), r = s % 60;
  const p = n => String(n).padStart(2, "0"); return (h ? h + ":" + p(m) : p(m)) + ":" + p(r); }
function significant(v, digits) {  // format_significant's: one decimal, or as many as `digits` need
  if (!(Math.abs(v) > 0) || !isFinite(v)) return v.toFixed(1);
  return v.toFixed(Math.min(9, Math.max(1, digits - 1 - Math.floor(Math.log10(Math.abs(v))))));
}
function svg(id, w, h) { return el("svg", {class: "chart", width: w, height: h, viewBox: `0 0 ${w} ${h}`}, document.getElementById(id)); }
function legend(id, names) {
  const d = document.createElement("div"); d.className = "legend";
  names.forEach((n, i) => { const s = document.createElement("span");
    s.innerHTML = `<i style="background:${COLORS[i % COLORS.length]}"></i>`; s.appendChild(document.createTextNode(n)); d.appendChild(s); });
  document.getElementById(id).appendChild(d);
}
function cell(model, label) { return DATA.report.rows.find(r => r.model === model && r.label === label); }
function groupedBars(id, value, format, unit) {
  const m = DATA.report.models, l = DATA.report.labels, W = 760, H = 320, L = 60, B = 70, T = 20;
  const vals = []; m.forEach(x => l.forEach(y => { const c = cell(x, y); if (c && value(c) !== null) vals.push(value(c)); }));
  const max = Math.max(...vals, 1e-9) * 1.1, g = svg(id, W, H), gw = (W - L - 10) / m.length, bw = gw * 0.8 / l.length;
  el("line", {x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: "#999"}, g);
  el("text", {x: 4, y: T, "font-size": 11}, g, unit);
  m.forEach((model, i) => {
    l.forEach((label, j) => { const c = cell(model, label); if (!c || value(c) === null) return;
      const v = value(c), h = (H - B - T) * v / max, x = L + i * gw + gw * 0.1 + j * bw;
      const r = el("rect", {class: "bar", x: x, y: H - B - h, width: bw - 2, height: h, fill: COLORS[j % COLORS.length]}, g);
      el("title", {}, r, `${model} · ${label}: ${format(v)}`);
      el("text", {x: x + bw / 2 - 1, y: H - B - h - 3, "font-size": 10, "text-anchor": "middle"}, g, format(v)); });
    el("text", {x: L + i * gw + gw / 2, y: H - B + 14, "font-size": 11, "text-anchor": "middle"}, g, model);
  });
  legend(id, l);
}
function throughput() {
  const W = 760, H = 320, L = 60, B = 40, T = 20, S = DATA.series;
  const xs = S.flatMap(s => s.points.map(p => p[0])), ys = S.flatMap(s => s.points.map(p => p[1]));
  const xmax = Math.max(...xs, 1e-9), ymax = Math.max(...ys, 1e-9) * 1.1, g = svg("throughput", W, H);
  el("line", {x1: L, y1: H - B, x2: W - 10, y2: H - B, stroke: "#999"}, g);
  el("text", {x: 4, y: T, "font-size": 11}, g, "samples/s");
  el("text", {x: W - 10, y: H - 8, "font-size": 11, "text-anchor": "end"}, g, `seconds since start (max ${xmax.toFixed(1)})`);
  S.forEach((s, i) => {
    const pts = s.points.map(p => `${L + (W - L - 10) * p[0] / xmax},${H - B - (H - B - T) * p[1] / ymax}`).join(" ");
    el("polyline", {class: "series", points: pts, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 1.5}, g);
    s.points.forEach(p => { if (p[2]) el("circle", {cx: L + (W - L - 10) * p[0] / xmax, cy: H - B - (H - B - T) * p[1] / ymax, r: 3,
      fill: "none", stroke: COLORS[i % COLORS.length]}, g); });
  });
  legend("throughput", S.map(s => s.name + " (circles: warm-up and profiled steps, left out of the summary)"));
}
function table() {
  const t = document.getElementById("table"), r = DATA.report;
  let html = "<tr><th>model</th>" + r.labels.map(l => `<th>${esc(l)}</th>`).join("") + "</tr>";
  r.models.forEach(m => { html += `<tr><td>${esc(m)}</td>` + r.labels.map(l => { const c = cell(m, l); if (!c) return "<td>–</td>";
    return `<td>${c.projected ? "~" : ""}${mmss(c.epoch_seconds_mean)}${c.runs > 1 ? " ±" + significant(c.epoch_seconds_stdev, 2) + "s" : ""}` +
      `${c.projected_ci95_low !== null ? " [" + mmss(c.projected_ci95_low) + ", " + mmss(c.projected_ci95_high) + "]" : ""}` +
      `<br>${c.samples_per_s.toFixed(1)}/s${c.speedup !== null ? "<br>" + c.speedup.toFixed(2) + "x" : ""}` +
      `${c.speedup_ci95_low !== null ? " (" + c.speedup_ci95_low.toFixed(2) + "-" + c.speedup_ci95_high.toFixed(2) + ")" +
        (c.speedup_ci95_basis !== "repeats" ? "*" : "") : ""}` +
      `${c.machine_speed_moved ? " !" : ""}` +
      `${c.gpu_power_w !== null ? "<br>" + c.gpu_power_w.toFixed(0) + " W" : ""}` +
      `${c.gpu_energy_j_per_sample !== null ? ", " + c.gpu_energy_j_per_sample.toFixed(2) + " J/sample" : ""}</td>`; }).join("") + "</tr>"; });
  t.innerHTML = html;
  document.getElementById("note").textContent = `Columns by ${r.by}; speedup vs '${r.baseline}' (per trained sample; its 95% interval from the repeats; * from one run's steps, blind to run-to-run drift). ~ = epoch time projected from steady-state steps, [ ] its 95% interval.` +
    (r.rows.some(c => c.machine_speed_moved) ? " ! = the machine's speed moved during one of the cell's runs (its CPU peak probes before and after the epochs lay far apart)." : "");
}
table();
groupedBars("epochs", c => c.epoch_seconds_mean, mmss, "epoch (mm:ss)");
throughput();
groupedBars("speedup", c => c.speedup, v => v.toFixed(2) + "x", "speedup");
document.body.setAttribute("data-rendered", "true");
</script></body></html>
)html";

}  // namespace

std::string render_html(const Report& report) {
  const json data = {{"report", report_json(report)}, {"series", iteration_series(report)}};
  std::string page = kPage;
  page.replace(page.find("__DATA__"), 8, script_safe(json_text(data)));
  return page;
}

}  // namespace tbench
