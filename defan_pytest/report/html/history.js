(function () {
  "use strict";
  // Every text of a report goes in with textContent or as an attribute's value: never as markup.
  var D = JSON.parse(document.getElementById("defan-data").textContent);
  var POINTS = D.points, SCOPES = D.scopes, METRICS = D.metrics;
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];

  function $(id) { return document.getElementById(id); }
  function own(o, k) { return o && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, String(attrs[k])); } }
    if (text !== undefined) { e.textContent = String(text); }
    return e;
  }
  function num(x) { return typeof x === "number" && isFinite(x); }
  function f3(x) { return num(x) ? x.toFixed(3) : "–"; }
  function ci(c) { return c && num(c[0]) && num(c[1]) ? "95% CI " + c[0].toFixed(3) + "–" + c[1].toFixed(3) : ""; }
  function when(s) { s = String(s === null || s === undefined ? "" : s); return s.length >= 16 && s.charAt(10) === "T" ? s.slice(0, 16).replace("T", " ") : s; }
  function short(s, n) { s = s === null || s === undefined ? "" : String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function has(list, x) { return Array.isArray(list) && list.indexOf(x) >= 0; }
  function colour(i) { return SCOPES[i] === "overall" ? "#222222" : PALETTE[i % PALETTE.length]; }
  function plural(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }

  // -- header ---------------------------------------------------------------------------------
  var models = [];
  POINTS.forEach(function (p) { var m = p.model || "responses"; if (models.indexOf(m) < 0) { models.push(m); } });
  var title = "DefAn history" + (models.length ? ": " + models.join(", ") : "");
  document.title = title;
  $("title").textContent = title;
  var regressions = 0;
  POINTS.forEach(function (p) { Object.keys(p.regressed || {}).forEach(function (s) { regressions += (p.regressed[s] || []).length; }); });
  var bits = [plural(POINTS.length, "report")];
  if (POINTS.length) { bits.push(when(POINTS[0].created) + (POINTS.length > 1 ? " to " + when(POINTS[POINTS.length - 1].created) : "")); }
  bits.push(plural(regressions, "regression"));
  if (D.skipped.length) { bits.push(plural(D.skipped.length, "file") + " not read"); }
  $("subtitle").textContent = bits.join(" · ");

  // -- the legend -------------------------------------------------------------------------------
  var legend = $("legend");
  function swatch(i) {
    var s = svg("svg", {width: 26, height: 12, "aria-hidden": "true"});
    s.appendChild(svg("line", {x1: 1, x2: 25, y1: 6, y2: 6, stroke: colour(i), "stroke-width": SCOPES[i] === "overall" ? 3 : 2,
                               "stroke-dasharray": SCOPES[i] === "overall" ? "6 3" : "none"}));
    return s;
  }
  SCOPES.forEach(function (scope, i) {
    var item = el("span", "scope-key");
    item.appendChild(swatch(i));
    item.appendChild(document.createTextNode(" " + scope));
    legend.appendChild(item);
  });
  legend.appendChild(el("span", "mark m-regressed", "▲ regressed against the report before"));
  legend.appendChild(el("span", "mark m-fail", "✕ beyond its limit in that run"));

  // -- a chart and a table a figure -----------------------------------------------------------------
  var W = 820, H = 240, LEFT = 44, RIGHT = 16, TOP = 12, BOTTOM = 34;
  function chart(metric) {
    var s = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "class": "history-chart"});
    s.appendChild(svg("title", {}, metric.label + " per domain over time"));
    var n = POINTS.length;
    function x(i) { return n > 1 ? LEFT + (W - LEFT - RIGHT) * i / (n - 1) : LEFT + (W - LEFT - RIGHT) / 2; }
    function y(v) { return TOP + (H - TOP - BOTTOM) * (1 - v); }
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      s.appendChild(svg("line", {"class": "grid", x1: LEFT, x2: W - RIGHT, y1: y(t), y2: y(t)}));
      s.appendChild(svg("text", {x: LEFT - 6, y: y(t) + 4, "text-anchor": "end", "class": "small"}, t.toFixed(2)));
    });
    var every = Math.max(1, Math.ceil(n / 8));
    POINTS.forEach(function (p, i) {
      if (i % every === 0 || i === n - 1) {
        var anchor = n > 1 && i === 0 ? "start" : n > 1 && i === n - 1 ? "end" : "middle";
        s.appendChild(svg("text", {x: x(i), y: H - BOTTOM + 16, "text-anchor": anchor, "class": "small"}, when(p.created).slice(0, 10)));
      }
    });
    SCOPES.forEach(function (scope, k) {
      var g = svg("g", {"class": "scope-series", "data-scope": scope});
      var pts = [];
      POINTS.forEach(function (p, i) {
        var v = own(own(p.figures, scope), metric.name);
        if (num(v)) { pts.push(x(i).toFixed(1) + "," + y(v).toFixed(1)); }
      });
      if (pts.length > 1) {
        g.appendChild(svg("polyline", {"class": "series" + (scope === "overall" ? " overall" : ""), points: pts.join(" "), stroke: colour(k)}));
      }
      POINTS.forEach(function (p, i) {
        var v = own(own(p.figures, scope), metric.name);
        if (!num(v)) { return; }
        var cx = x(i), cy = y(v);
        var dot = svg("circle", {cx: cx, cy: cy, r: 3, fill: colour(k)});
        dot.appendChild(svg("title", {}, scope + " " + metric.label + " " + f3(v) + " · " + when(p.created)));
        g.appendChild(dot);
        if (has(own(p.beyond, scope), metric.name)) {
          g.appendChild(svg("circle", {"class": "beyond-mark", cx: cx, cy: cy, r: 7}));
        }
        if (has(own(p.regressed, scope), metric.name)) {
          var tri = svg("path", {"class": "reg-mark", "data-scope": scope, d: "M" + cx + " " + (cy - 14) + "l6 10h-12z"});
          tri.appendChild(svg("title", {}, scope + " " + metric.label + " regressed at " + when(p.created)));
          g.appendChild(tri);
        }
      });
      s.appendChild(g);
    });
    return s;
  }

  function table(metric) {
    var t = el("table", "grid history");
    t.id = "table-" + metric.name;
    var head = el("tr");
    ["report", "model", "level gate"].concat(SCOPES).forEach(function (h) { head.appendChild(el("th", null, h)); });
    add(t, el("thead"), head);
    var body = el("tbody");
    POINTS.forEach(function (p) {
      var tr = el("tr");
      var w = el("td", "when", when(p.created));
      w.setAttribute("title", String(p.path));
      tr.appendChild(w);
      tr.appendChild(el("td", null, (p.model || "responses") + (p.version ? " " + p.version : "")));
      tr.appendChild(el("td", "gate", p.gate));
      SCOPES.forEach(function (scope) {
        var figs = own(p.figures, scope) || {};
        var v = own(figs, metric.name);
        var td = el("td", "num", f3(v));
        td.dataset.scope = scope;
        var tip = [ci(own(figs, metric.name + "_ci"))];
        if (has(own(p.beyond, scope), metric.name)) {
          td.classList.add("beyond");
          td.appendChild(el("span", "mark m-fail", "✕"));
          tip.push("beyond its limit in this run");
        }
        if (has(own(p.regressed, scope), metric.name)) {
          td.classList.add("regressed");
          td.appendChild(el("span", "mark m-regressed", "▲"));
          tip.push("regressed against the report before");
        }
        td.setAttribute("title", tip.filter(Boolean).join(" · "));
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }
  function add(parent, child, grandchild) { child.appendChild(grandchild); parent.appendChild(child); return parent; }

  METRICS.forEach(function (metric) {
    var box = el("section", "metric");
    box.id = "metric-" + metric.name;
    box.appendChild(el("h3", null, metric.label + (metric.higher ? " (higher is better)" : " (lower is better)")));
    if (POINTS.length) { box.appendChild(chart(metric)); }
    box.appendChild(table(metric));
    $("metrics").appendChild(box);
  });

  // -- regressions, pairs not compared, files not read ----------------------------------------------
  function item(list, text) { list.appendChild(el("li", null, text)); }
  var regs = $("regression-list"), notCompared = $("not-compared"), notRead = $("not-read");
  POINTS.forEach(function (p) {
    (p.changes || []).forEach(function (c) { item(regs, when(p.created) + ": " + short(c, 600)); });
    if (p.compared) { item(notCompared, when(p.created) + ": " + short(p.compared, 600)); }
  });
  D.skipped.forEach(function (s) { item(notRead, short(s.why, 600)); });
  [[regs, "No regression between consecutive reports."], [notCompared, "Every report was compared with the one before."],
   [notRead, "Every file was read."]].forEach(function (pair) {
    if (!pair[0].children.length) { pair[0].appendChild(el("li", "muted empty-note", pair[1])); }
  });

  window.__defan = {ready: true, points: POINTS.length};
  document.body.dataset.ready = "1";
})();
