// The profile's pictures: functions by own time as bars (SVG), the program's
// source with the count of each executed line. Built with DOM calls only:
// every text comes from the run and is set as text, never as markup.
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs = {}, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export function functionsChart(parent, functions, limit = 15) {
  parent.replaceChildren();
  const top = (functions || []).slice(0, limit);
  if (top.length === 0) {
    parent.append(el("p", {}, "No function ran."));
    return;
  }
  const row = 22, label = 300, width = 640;
  const max = Math.max(...top.map((f) => f.own_ms), 0.001);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${row * top.length}`, role: "img",
                             "aria-label": "functions by own time" });
  top.forEach((f, i) => {
    const y = i * row;
    const name = f.file === "<built-in>" ? f.name : `${f.name} (${f.file.split("/").pop()}:${f.line})`;
    const w = Math.max(1, ((width - label - 120) * f.own_ms) / max);
    const g = svg("g", { class: "function", "data-name": f.name });
    g.append(svg("title", {}, `${f.name} — ${f.calls} calls, own ${f.own_ms} ms, cumulative ${f.cum_ms} ms`));
    g.append(svg("text", { x: 0, y: y + 15 }, name.length > 40 ? name.slice(0, 39) + "…" : name));
    g.append(svg("rect", { class: "bar", x: label, y: y + 4, width: w, height: row - 8 }));
    g.append(svg("text", { x: label + w + 6, y: y + 15 }, `${f.own_ms} ms · ${f.calls}×`));
    chart.append(g);
  });
  parent.append(chart);
}

export function linesTable(table, source, counts) {
  const body = table.tBodies[0];
  body.replaceChildren();
  const values = Object.values(counts || {});
  const max = Math.max(1, ...values);
  source.split("\n").forEach((text, i) => {
    const n = (counts || {})[String(i + 1)] || 0;
    const tr = el("tr", { class: n ? "line hot" : "line", "data-line": i + 1, "data-count": n });
    tr.style.setProperty("--heat", `${Math.round((100 * n) / max)}%`);
    tr.append(el("td", { class: "number" }, String(i + 1)));
    tr.append(el("td", { class: "count" }, n ? String(n) : ""));
    tr.append(el("td", { class: "source" }, text || " "));
    body.append(tr);
  });
}
