// The usage dashboard: draws inline-SVG charts from the data the page was served with
// (window.USAGE) and redraws from /dashboard/data on "Refresh". No library, no network beyond
// the gateway itself. Every plotted point is a <circle class="pt"> / <rect class="bar"> carrying
// data-series and data-value, so a headless browser test can check that the charts have data.
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = {
    response: "#2e90fa", semantic: "#12b76a", single_flight: "#f79009", provider: "#7a5af8",
    uncached: "#98a2b3", cache_read: "#7a5af8", cache_write: "#f04438", output: "#2e90fa",
    gateway: "#12b76a", cost: "#f04438", without: "#98a2b3",
  };
  const LABELS = {
    response: "response cache", semantic: "semantic cache", single_flight: "single-flight",
    provider: "provider cache", uncached: "uncached input", cache_read: "cache read",
    cache_write: "cache write", output: "output", gateway: "served by gateway cache",
    cost: "cost", without: "cost without caching",
  };

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }
  function text(parent, x, y, content, attrs) {
    const t = el("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = content;
    return t;
  }
  const pct = (v) => (100 * v).toFixed(0) + "%";
  const usd = (v) => "$" + (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3));
  const num = (v) => v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : String(Math.round(v));
  const ratio = (a, b) => (b ? a / b : 0);

  function empty(container, message) {
    container.textContent = "";
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = message || "No usage recorded in this window.";
    container.appendChild(p);
  }

  function legend(svg, names, x, y) {
    const g = el("g", { class: "legend" }, svg);
    let dx = x;
    for (const name of names) {
      el("rect", { x: dx, y: y - 9, width: 10, height: 10, fill: COLORS[name] }, g);
      const label = LABELS[name] || name;
      text(g, dx + 14, y, label);
      dx += 24 + label.length * 6.2;
    }
  }

  function frame(container, width, height) {
    container.textContent = "";
    return el("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" }, container);
  }

  function yAxis(svg, left, top, plotH, plotW, max, fmt) {
    const g = el("g", { class: "axis grid" }, svg);
    for (let i = 0; i <= 4; i++) {
      const y = top + plotH - (plotH * i) / 4;
      el("line", { x1: left, x2: left + plotW, y1: y, y2: y }, g);
      text(g, left - 6, y + 4, fmt((max * i) / 4), { "text-anchor": "end" });
    }
  }

  function xLabels(svg, labels, left, plotW, y) {
    const g = el("g", { class: "axis" }, svg);
    const every = Math.max(1, Math.ceil(labels.length / 8));
    labels.forEach((label, i) => {
      if (i % every) return;
      const x = left + (labels.length === 1 ? plotW / 2 : (plotW * i) / (labels.length - 1));
      text(g, x, y, label.replace("T", " ") + (label.length === 13 ? "h" : ""), { "text-anchor": "middle" });
    });
  }

  function lineChart(container, labels, series, max, fmt) {
    const W = 1100, H = 300, left = 56, top = 28, plotW = W - left - 50, plotH = H - top - 40;
    const svg = frame(container, W, H);
    legend(svg, series.map((s) => s.name), left, 14);
    yAxis(svg, left, top, plotH, plotW, max, fmt);
    xLabels(svg, labels, left, plotW, H - 12);
    const xOf = (i) => left + (labels.length === 1 ? plotW / 2 : (plotW * i) / (labels.length - 1));
    const yOf = (v) => top + plotH - plotH * Math.min(1, v / max);
    for (const s of series) {
      const pts = s.values.map((v, i) => (v === null ? null : [xOf(i), yOf(v)]));
      const d = pts.filter(Boolean).map((p, i) => (i ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1)).join(" ");
      if (d) el("path", { d: d, fill: "none", stroke: COLORS[s.name], "stroke-width": 2 }, svg);
      s.values.forEach((v, i) => {
        if (v === null) return;
        const c = el("circle", { class: "pt", cx: xOf(i), cy: yOf(v), r: 3, fill: COLORS[s.name],
                                 "data-series": s.name, "data-value": v, "data-bucket": labels[i] }, svg);
        el("title", {}, c).textContent = `${labels[i]} · ${LABELS[s.name]}: ${fmt(v)}`;
      });
    }
  }

  function stackedBars(container, labels, series, fmt) {
    const W = 1100, H = 300, left = 64, top = 28, plotW = W - left - 30, plotH = H - top - 40;
    const totals = labels.map((_, i) => series.reduce((a, s) => a + s.values[i], 0));
    const max = Math.max(1, ...totals);
    const svg = frame(container, W, H);
    legend(svg, series.map((s) => s.name), left, 14);
    yAxis(svg, left, top, plotH, plotW, max, fmt);
    const slot = plotW / labels.length, bw = Math.max(2, slot * 0.7);
    const g = el("g", { class: "axis" }, svg);
    const every = Math.max(1, Math.ceil(labels.length / 8));
    labels.forEach((label, i) => {
      let y = top + plotH;
      const x = left + slot * i + (slot - bw) / 2;
      for (const s of series) {
        const v = s.values[i];
        if (v <= 0) continue;
        const h = (plotH * v) / max;
        y -= h;
        const r = el("rect", { class: "bar", x: x, y: y, width: bw, height: h, fill: COLORS[s.name],
                               "data-series": s.name, "data-value": v, "data-bucket": label }, svg);
        el("title", {}, r).textContent = `${label} · ${LABELS[s.name]}: ${fmt(v)}`;
      }
      if (i % every === 0) text(g, x + bw / 2, H - 12, label.replace("T", " "), { "text-anchor": "middle" });
    });
  }

  function groupedBars(container, rows) {
    // rows: [{name, cost, without}] drawn as horizontal pairs of bars.
    if (!rows.length) return empty(container);
    const rowH = 34, W = 540, left = 170, right = 80, top = 24;
    const H = top + rows.length * rowH + 10;
    const max = Math.max(1e-12, ...rows.map((r) => Math.max(r.cost, r.without)));
    const svg = frame(container, W, H);
    legend(svg, ["cost", "without"], left, 14);
    const g = el("g", { class: "axis" }, svg);
    rows.forEach((r, i) => {
      const y = top + i * rowH;
      const label = r.name.length > 26 ? r.name.slice(0, 25) + "…" : r.name;
      text(g, left - 8, y + 18, label, { "text-anchor": "end" });
      [["cost", r.cost, 4], ["without", r.without, 17]].forEach(([series, v, dy]) => {
        const w = Math.max(1, ((W - left - right) * Math.max(0, v)) / max);
        const rect = el("rect", { class: "bar", x: left, y: y + dy, width: w, height: 11, fill: COLORS[series],
                                  "data-series": series, "data-value": v, "data-name": r.name }, svg);
        el("title", {}, rect).textContent = `${r.name} · ${LABELS[series]}: ${usd(v)}`;
        text(g, left + w + 4, y + dy + 10, usd(v));
      });
    });
  }

  function tiles(data) {
    const t = data.totals, box = document.getElementById("tiles");
    box.textContent = "";
    const gatewayHits = t.hits.response + t.hits.semantic + t.hits.single_flight;
    const items = [
      ["requests", num(t.requests)],
      ["gateway cache hit rate", pct(ratio(gatewayHits, t.requests))],
      ["provider cache (tokens)", pct(t.hit_rate.provider_tokens)],
      ["cost", usd(t.cost_usd)],
      ["cost without caching", usd(t.cost_without_cache_usd)],
      ["saved", usd(t.cost_without_cache_usd - t.cost_usd)],
    ];
    for (const [label, value] of items) {
      const div = document.createElement("div");
      div.className = "tile";
      div.innerHTML = '<div class="label"></div><div class="value"></div>';
      div.querySelector(".label").textContent = label;
      div.querySelector(".value").textContent = value;
      box.appendChild(div);
    }
  }

  function draw(data) {
    const error = document.getElementById("error");
    error.hidden = !data.error;
    error.textContent = data.error || "";
    if (data.error) return;
    const select = document.getElementById("tenant");
    select.length = 1;
    for (const name of data.tenants) select.add(new Option(name, name, false, name === data.tenant));
    document.getElementById("since").value = data.since || "7d";
    tiles(data);

    const series = data.series;
    const used = series.filter((b) => b.requests > 0);
    const labels = series.map((b) => b.bucket);
    const hitEl = document.getElementById("chart-hitrate"), tokEl = document.getElementById("chart-tokens");
    if (!used.length) {
      empty(hitEl);
      empty(tokEl);
    } else {
      const rate = (field, whole) => series.map((b) => (b[whole] ? b[field] / b[whole] : null));
      lineChart(hitEl, labels, [
        { name: "response", values: rate("hits_response", "requests") },
        { name: "semantic", values: rate("hits_semantic", "requests") },
        { name: "single_flight", values: rate("hits_single_flight", "requests") },
        { name: "provider", values: rate("provider_reads", "upstream_requests") },
      ], 1, pct);
      const up = (b, f, hit) => Math.max(0, b[f] - (hit ? b[hit] : 0));
      stackedBars(tokEl, labels, [
        { name: "uncached", values: series.map((b) => Math.max(0, up(b, "input_tokens", "hit_input_tokens")
            - up(b, "cached_input_tokens", "hit_cached_input_tokens") - b.cache_creation_input_tokens)) },
        { name: "cache_read", values: series.map((b) => up(b, "cached_input_tokens", "hit_cached_input_tokens")) },
        { name: "cache_write", values: series.map((b) => b.cache_creation_input_tokens) },
        { name: "output", values: series.map((b) => up(b, "output_tokens", "hit_output_tokens")) },
        { name: "gateway", values: series.map((b) => b.hit_input_tokens + b.hit_output_tokens) },
      ], num);
    }
    const money = (obj) => Object.entries(obj)
      .filter(([, v]) => v.requests > 0 || v.cost_usd > 0)
      .map(([name, v]) => ({ name: name, cost: v.cost_usd, without: v.cost_without_cache_usd }))
      .sort((a, b) => b.without - a.without).slice(0, 15);
    groupedBars(document.getElementById("chart-tenants"), money(data.by_tenant));
    groupedBars(document.getElementById("chart-templates"), money(data.by_template));
    breaks(data.breaks);
    document.body.dataset.ready = "1";
  }

  function breaks(report) {
    const body = document.querySelector("#breaks tbody");
    body.textContent = "";
    const rows = [];
    for (const t of (report && report.tenants) || []) {
      for (const r of t.templates) rows.push([report.tenant ? r.label : t.tenant + " · " + r.label, r]);
    }
    if (!rows.length) {
      const tr = body.insertRow(), td = tr.insertCell();
      td.colSpan = 9;
      td.textContent = "No prefix breaks in this window.";
      return;
    }
    const usd = (v) => "$" + v.toFixed(4);
    for (const [name, r] of rows.slice(0, 20)) {
      const causes = Object.entries(r.by_cause).map(([c, v]) => c + " " + v.breaks).join(", ");
      const w = r.what_if_saved_usd;
      const cells = [name, num(r.breaks), causes, num(r.tokens_lost), usd(r.cost_lost_usd), usd(w.rewrite),
        usd(w.sort_tools), usd(w.pin_model), usd(w.move_volatile_field)];
      const tr = body.insertRow();
      for (const c of cells) tr.insertCell().textContent = c;
    }
  }

  async function refresh(event) {
    if (event) event.preventDefault();
    const tenant = document.getElementById("tenant").value, since = document.getElementById("since").value;
    const params = new URLSearchParams({ since: since });
    if (tenant) params.set("tenant", tenant);
    history.replaceState(null, "", "/dashboard?" + params);
    try {
      const response = await fetch("/dashboard/data?" + params, { credentials: "same-origin" });
      draw(response.ok ? await response.json() : { error: `The gateway answered ${response.status}.` });
    } catch (err) {
      draw({ error: String(err) });
    }
  }

  document.getElementById("controls").addEventListener("submit", refresh);
  if (window.USAGE) draw(window.USAGE);
})();
