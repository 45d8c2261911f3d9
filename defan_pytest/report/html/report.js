(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("defan-data").textContent);
  var R = D.report, META = R.meta || {}, ROWS = D.rows, COL = {};
  D.cols.forEach(function (name, i) { COL[name] = i; });
  var PAGE = 200;
  var VERDICT = {0: "ok", 1: "hallucinated", 2: "misaligned", 3: "hallucinated, misaligned", 4: "call error"};
  var HAS_BASE = !!D.baseline;
  var ANY_FLIP = ROWS.some(function (r) { return r[COL.flip]; });

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) { if (arguments[i]) { parent.appendChild(arguments[i]); } }
    return parent;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) { e.setAttribute(k, String(attrs[k])); } }
    if (text !== undefined) { e.textContent = String(text); }
    return e;
  }
  function num(x) { return typeof x === "number" && isFinite(x); }
  function f3(x) { return num(x) ? x.toFixed(3) : "–"; }
  function ci(c) { return c && num(c[0]) && num(c[1]) ? "[" + c[0].toFixed(3) + ", " + c[1].toFixed(3) + "]" : ""; }
  function signed(x) { return num(x) ? (x >= 0 ? "+" : "") + x.toFixed(3) : "–"; }
  function cls(s) { return "s-" + String(s || "not judged").replace(/[^a-z]+/gi, "-").toLowerCase(); }
  function short(s, n) { s = s === null || s === undefined ? "" : String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function cell(tr, text, c) { var td = el("td", c, text); tr.appendChild(td); return td; }
  function row(table, values, header) {
    var tr = el("tr");
    values.forEach(function (v) { tr.appendChild(el(header ? "th" : "td", null, v)); });
    table.appendChild(tr);
    return tr;
  }

  // -- header ---------------------------------------------------------------------------------
  var model = META.model || {};
  var modelName = model.name || "responses";
  document.title = "DefAn: " + modelName;
  $("title").textContent = "DefAn: " + modelName + (model.version ? " (version " + model.version + ")" : "");
  var sel = META.selection || {};
  var bits = [(sel.ran !== undefined ? sel.ran : ROWS.length).toLocaleString("en") + " prompts"];
  if (sel.domains && sel.domains.length) { bits.push(sel.domains.length + " domain" + (sel.domains.length > 1 ? "s" : "")); }
  if (sel.sample) { bits.push("sample " + sel.sample + " (seed " + sel.seed + ")"); }
  if (sel.shard) { bits.push("shard " + sel.shard); }
  if (META.merged) { bits.push("merged from " + META.merged.shards + " shards"); }
  bits.push((META.dataset || {}).identity || "");
  bits.push(META.created ? "created " + META.created : "");
  bits.push(META.producer ? "by " + META.producer : "");
  $("subtitle").textContent = bits.filter(Boolean).join(" · ");
  function badge(label, status) {
    var b = el("span", "badge " + cls(status), label + ": " + (status || "not judged"));
    b.dataset.status = status || "not judged";
    return b;
  }
  var reg = D.regression;
  add($("badges"), badge("level gate", R.gate_status), badge("regression gate", reg ? reg.status : D.baseline ? "not judged" : "no baseline"));
  $("badges").children[0].id = "gate-status";
  $("badges").children[1].id = "regression-status";

  // -- charts ------------------------------------------------------------------------------------
  var limits = (R.thresholds || {}).limits || {};
  var verdictOf = {};
  (R.gate || []).forEach(function (v) { verdictOf[v.scope + "/" + v.metric] = v.status; });
  var scopes = Object.keys(R.domains || {}).map(function (d) { return {key: d, label: d, figs: R.domains[d]}; });
  var overall = (R.overall || {})[D.figure] || {};
  scopes.push({key: "overall", label: "overall (" + (D.figure === "pooled" ? "pooled" : "mean of domains") + ")", figs: overall});
  var baseFigs = D.baseline ? D.baseline.figures || {} : {};
  $("figures-note").textContent = "Bars: the figure; black whisker: its 95% interval (paraphrase groups as the unit); red dashes: the limit of "
    + ((R.thresholds || {}).source || "the thresholds") + (D.baseline ? "; purple diamond: the baseline" + (D.baseline.from === "regression" ? " (on the prompts both runs hold)" : "") : "") + ".";

  function chart(metric) {
    var W = 640, LW = 180, PW = 300, RH = 30, TOP = 26;
    var H = TOP + RH * scopes.length + 8;
    var box = el("div", "chart");
    box.id = "chart-" + metric.name;
    add(box, el("h4", null, metric.label + (metric.higher ? " (higher is better)" : " (lower is better)")));
    var s = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img"});
    s.appendChild(svg("title", {}, metric.label + " per domain"));
    function x(v) { return LW + Math.max(0, Math.min(1, v)) * PW; }
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      s.appendChild(svg("line", {"class": "grid", x1: x(t), x2: x(t), y1: TOP - 4, y2: H - 6}));
      s.appendChild(svg("text", {x: x(t), y: TOP - 8, "text-anchor": "middle", "class": "small"}, t.toString()));
    });
    scopes.forEach(function (sc, i) {
      var y = TOP + i * RH, figs = sc.figs || {}, v = figs[metric.name], c = figs[metric.name + "_ci"];
      var g = svg("g", {"class": "bar-row"});
      g.setAttribute("data-scope", sc.key);
      g.appendChild(svg("text", {x: LW - 8, y: y + 15, "text-anchor": "end", "class": "scope"}, short(sc.label, 28)));
      g.appendChild(svg("rect", {"class": "track", x: x(0), y: y + 4, width: PW, height: 16}));
      var status = verdictOf[sc.key + "/" + metric.name] || "";
      if (num(v)) {
        g.appendChild(svg("rect", {"class": "bar " + status, x: x(0), y: y + 5, width: Math.max(1, x(v) - x(0)), height: 14}));
      }
      if (c && num(c[0]) && num(c[1])) {
        g.appendChild(svg("line", {"class": "ci", x1: x(c[0]), x2: x(c[1]), y1: y + 12, y2: y + 12}));
        g.appendChild(svg("line", {"class": "ci", x1: x(c[0]), x2: x(c[0]), y1: y + 7, y2: y + 17}));
        g.appendChild(svg("line", {"class": "ci", x1: x(c[1]), x2: x(c[1]), y1: y + 7, y2: y + 17}));
      }
      var lim = (limits[sc.key] || {})[metric.key];
      if (num(lim)) { g.appendChild(svg("line", {"class": "limit", x1: x(lim), x2: x(lim), y1: y + 1, y2: y + 23})); }
      var b = (baseFigs[sc.key] || {})[metric.name];
      if (num(b)) {
        var bx = x(b), by = y + 12;
        g.appendChild(svg("path", {"class": "base", d: "M" + bx + " " + (by - 6) + "L" + (bx + 6) + " " + by + "L" + bx + " " + (by + 6) + "L" + (bx - 6) + " " + by + "Z"}));
      }
      var t = svg("text", {x: x(1) + 8, y: y + 12, "class": "v"}, num(v) ? f3(v) + (metric.interval ? " " + ci(c) : "") : "–");
      g.appendChild(t);
      var sub = [];
      if (num(lim)) { sub.push(svg("tspan", {"class": "lim"}, (metric.higher ? "min " : "max ") + lim)); }
      if (num(b)) { sub.push(svg("tspan", {"class": "was", dx: sub.length ? 8 : 0}, "baseline " + f3(b))); }
      if (sub.length) {
        var t2 = svg("text", {x: x(1) + 8, y: y + 25, "class": "small"});
        sub.forEach(function (n) { t2.appendChild(n); });
        g.appendChild(t2);
      }
      s.appendChild(g);
    });
    box.appendChild(s);
    return box;
  }
  var shownMetrics = D.metrics.filter(function (m) {
    return scopes.some(function (sc) { return sc.figs && (m.name in sc.figs); });
  });
  shownMetrics.forEach(function (m) { $("charts").appendChild(chart(m)); });

  // The figures as a table (the numbers a screen reader or a copy-paste wants).
  (function () {
    var t = $("figures-table");
    var head = ["scope", "prompts", "scored", "groups", "errors"];
    shownMetrics.forEach(function (m) { head.push(m.label); });
    row(t, head, true);
    scopes.forEach(function (sc) {
      var f = sc.figs || {};
      var tr = el("tr");
      tr.dataset.scope = sc.key;
      cell(tr, sc.label);
      ["n", "scored", "groups", "errors"].forEach(function (k) { cell(tr, f[k] === undefined ? "–" : f[k], "num"); });
      shownMetrics.forEach(function (m) {
        var text = f3(f[m.name]) + (m.interval && f[m.name + "_ci"] ? " " + ci(f[m.name + "_ci"]) : "");
        var lim = (limits[sc.key] || {})[m.key];
        if (num(lim)) { text += (m.higher ? "\nmin " : "\nmax ") + lim; }
        var b = (baseFigs[sc.key] || {})[m.name];
        if (num(b)) { text += "\nbaseline " + f3(b); }
        var td = cell(tr, text, "num " + cls(verdictOf[sc.key + "/" + m.name] || "none"));
        td.dataset.metric = m.name;
      });
      t.appendChild(tr);
    });
  })();

  // -- verdicts --------------------------------------------------------------------------------
  (function () {
    var box = $("gate");
    var why = null;
    if (R.gate_status === "skipped") {
      why = sel.shard ? "This report is shard " + sel.shard + " of a run: its gates are skipped (it ran part of the selection); defan merge judges the whole run."
        : sel.narrowed ? "Part of the selected prompts ran (-k, -m, --deselect, --lf, a path or pytest-split): the gate judges whole runs." : "Skipped.";
    }
    if (why) { box.appendChild(el("p", "warn", why)); }
    if (!(R.gate || []).length) { box.appendChild(el("p", "muted", R.thresholds ? "No limit applies." : "No thresholds file: nothing was gated.")); return; }
    var t = el("table", "grid");
    t.id = "gate-table";
    row(t, ["scope", "metric", "status", "value", "limit", "message"], true);
    R.gate.forEach(function (v) {
      var tr = el("tr");
      cell(tr, v.scope); cell(tr, v.metric); cell(tr, v.status, cls(v.status));
      cell(tr, v.metric === "samples" ? v.value : f3(v.value), "num"); cell(tr, v.limit, "num"); cell(tr, v.message);
      t.appendChild(tr);
    });
    box.appendChild(t);
  })();
  (function () {
    var box = $("regression");
    if (!reg) {
      box.appendChild(el("p", "muted", D.baseline ? "The report was not judged against a baseline; the baseline given is shown in the charts and the prompts." : "No baseline: no regression gate."));
      return;
    }
    var b = reg.baseline || {}, p = reg.pairs || {};
    box.appendChild(el("p", null, "Baseline " + (b.path || "?") + " (" + (b.model || "?") + ", " + (b.created || "?") + "): "
      + (p.paired || 0) + " prompts in common in " + (p.groups || 0) + " groups; "
      + Math.round(100 * (reg.confidence || 0.95)) + "% intervals; flipped: " + (reg.flipped_counts || {}).worse + " worse, "
      + (reg.flipped_counts || {}).better + " better."));
    if (reg.status === "skipped") { box.appendChild(el("p", "warn", "Skipped: " + (reg.reason || ""))); }
    var t = el("table", "grid");
    t.id = "regression-table";
    row(t, ["scope", "metric", "before", "after", "change", "interval", "tolerance", "flips worse / better", "verdict"], true);
    Object.keys(reg.scopes || {}).forEach(function (scope) {
      var mets = reg.scopes[scope];
      Object.keys(mets).forEach(function (m) {
        var c = mets[m], tr = el("tr");
        cell(tr, scope); cell(tr, m.toUpperCase()); cell(tr, f3(c.old), "num"); cell(tr, f3(c.new), "num");
        cell(tr, signed(c.change), "num");
        cell(tr, c.interval ? "[" + signed(c.interval[0]) + ", " + signed(c.interval[1]) + "]" : "–", "num");
        cell(tr, c.tolerance === null || c.tolerance === undefined ? "–" : c.tolerance, "num");
        cell(tr, (c.worse_flips || 0) + " / " + (c.better_flips || 0), "num");
        var verdict = c.regressed ? "REGRESSED" : "ok";
        var td = cell(tr, verdict, c.regressed ? "s-fail" : "s-pass");
        td.title = c.message || "";
        t.appendChild(tr);
      });
    });
    box.appendChild(t);
  })();

  // -- the prompts -------------------------------------------------------------------------------
  function option(select, value, label) { var o = el("option", null, label); o.value = value; select.appendChild(o); }
  var fDomain = $("f-domain"), fVerdict = $("f-verdict"), fFlip = $("f-flip"), fKind = $("f-kind"), fSearch = $("f-search");
  var domainCount = D.domains.map(function () { return 0; }), kindCount = D.kinds.map(function () { return 0; });
  ROWS.forEach(function (r) {
    if (r[COL.domain] !== null) { domainCount[r[COL.domain]]++; }
    if (r[COL.kind] !== null) { kindCount[r[COL.kind]]++; }
  });
  option(fDomain, "", "all");
  D.domains.forEach(function (d, i) { option(fDomain, String(i), d + " (" + domainCount[i] + ")"); });
  [["", "all"], ["ok", "ok (right and aligned)"], ["fch", "hallucinated (FCH: not right)"], ["pmh", "misaligned (PMH)"], ["error", "call error"]]
    .forEach(function (o) { option(fVerdict, o[0], o[1]); });
  [["", "all"], ["any", "flipped"], ["worse", "worse (right → wrong or aligned → misaligned)"], ["better", "better"]]
    .forEach(function (o) { option(fFlip, o[0], o[1]); });
  fFlip.disabled = !(HAS_BASE || ANY_FLIP);
  option(fKind, "", "all");
  option(fKind, "any", "any call error (" + kindCount.reduce(function (a, b) { return a + b; }, 0) + ")");
  D.kinds.forEach(function (k, i) { option(fKind, String(i), k + " (" + kindCount[i] + ")"); });

  var hay = null;
  function haystack() {
    if (!hay) {
      hay = ROWS.map(function (r) {
        return [r[COL.id], r[COL.question], r[COL.answer], r[COL.response], r[COL.claim], r[COL.error], r[COL.group]]
          .join("\n").toLowerCase();
      });
    }
    return hay;
  }
  var view = [], page = 0;
  function filter() {
    var d = fDomain.value, v = fVerdict.value, fl = fFlip.value, k = fKind.value, q = fSearch.value.trim().toLowerCase();
    var h = q ? haystack() : null, out = [];
    for (var i = 0; i < ROWS.length; i++) {
      var r = ROWS[i], code = r[COL.verdict], flip = r[COL.flip];
      if (d !== "" && String(r[COL.domain]) !== d) { continue; }
      if (v === "ok" && code !== 0) { continue; }
      if (v === "fch" && (code === 4 || !(code & 1))) { continue; }
      if (v === "pmh" && (code === 4 || !(code & 2))) { continue; }
      if (v === "error" && code !== 4) { continue; }
      if (fl === "any" && !flip) { continue; }
      if (fl === "worse" && !(flip & 5)) { continue; }
      if (fl === "better" && !(flip & 10)) { continue; }
      if (k === "any" && r[COL.kind] === null) { continue; }
      if (k !== "" && k !== "any" && String(r[COL.kind]) !== k) { continue; }
      if (h && h[i].indexOf(q) < 0) { continue; }
      out.push(i);
    }
    view = out;
    page = 0;
    draw();
  }
  function flipTags(flip) {
    var tags = [];
    if (flip & 1) { tags.push(["worse", "FCH: was right"]); }
    if (flip & 2) { tags.push(["better", "FCH: was wrong"]); }
    if (flip & 4) { tags.push(["worse", "PMH: was aligned"]); }
    if (flip & 8) { tags.push(["better", "PMH: was misaligned"]); }
    return tags.map(function (t) { return el("span", "flip " + t[0], t[1]); });
  }
  function verdictCell(tr, code, extra) {
    var td = cell(tr, VERDICT[code] === undefined ? "–" : VERDICT[code], "verdict v-" + code);
    (extra || []).forEach(function (n) { td.appendChild(n); });
    return td;
  }
  var thead = document.querySelector("#rows thead"), tbody = document.querySelector("#rows tbody");
  row(thead, ["prompt", "verdict", "question", "gold", "response", "claim"].concat(HAS_BASE || ANY_FLIP ? ["baseline"] : []).concat(["group"]), true);
  function draw() {
    var pages = Math.max(1, Math.ceil(view.length / PAGE));
    page = Math.max(0, Math.min(page, pages - 1));
    var start = page * PAGE, end = Math.min(view.length, start + PAGE);
    var frag = document.createDocumentFragment();
    for (var j = start; j < end; j++) {
      var i = view[j], r = ROWS[i], tr = el("tr");
      tr.dataset.id = r[COL.id];
      cell(tr, r[COL.id], "id");
      verdictCell(tr, r[COL.verdict], flipTags(r[COL.flip]));
      cell(tr, short(r[COL.question], 400));
      cell(tr, short(r[COL.answer], 200), "gold");
      cell(tr, r[COL.verdict] === 4 ? short(r[COL.error], 400) : short(r[COL.response], 400), r[COL.verdict] === 4 ? "response err" : "response");
      cell(tr, r[COL.claim] === null ? "–" : short(r[COL.claim], 200), "claim");
      if (HAS_BASE || ANY_FLIP) {
        var old = r[COL.old_verdict];
        var txt = old === null ? (r[COL.old_claim] !== null ? "claim " + short(r[COL.old_claim], 80) : "–")
          : VERDICT[old] + (r[COL.old_claim] !== null ? ": " + short(r[COL.old_claim], 80) : "");
        cell(tr, txt, "old");
      }
      var gtd = el("td", "grp");
      var btn = el("button", "link", r[COL.group]);
      btn.type = "button";
      btn.dataset.group = r[COL.group];
      gtd.appendChild(btn);
      tr.appendChild(gtd);
      frag.appendChild(tr);
    }
    tbody.textContent = "";
    if (!view.length) {
      var none = el("tr"), td = el("td", "empty", "No prompt matches these filters.");
      td.colSpan = thead.rows[0].cells.length;
      none.appendChild(td);
      frag.appendChild(none);
    }
    tbody.appendChild(frag);
    $("p-info").textContent = (view.length ? (start + 1).toLocaleString("en") + "–" + end.toLocaleString("en") : "0")
      + " of " + view.length.toLocaleString("en") + " prompts" + (view.length !== ROWS.length ? " (filtered from " + ROWS.length.toLocaleString("en") + ")" : "")
      + " · page " + (page + 1) + " of " + pages;
    $("p-info").dataset.count = String(view.length);
  }
  var timer = null;
  [fDomain, fVerdict, fFlip, fKind].forEach(function (s) { s.addEventListener("change", filter); });
  fSearch.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(filter, 150); });
  $("p-first").addEventListener("click", function () { page = 0; draw(); });
  $("p-prev").addEventListener("click", function () { page -= 1; draw(); });
  $("p-next").addEventListener("click", function () { page += 1; draw(); });
  $("p-last").addEventListener("click", function () { page = 1e9; draw(); });
  tbody.addEventListener("click", function (ev) {
    var t = ev.target;
    if (t && t.dataset && t.dataset.group !== undefined) { showGroup(t.dataset.group, true); }
  });

  // -- the paraphrase group -------------------------------------------------------------------
  // Maps, not objects: a group key is data (a user's "__proto__" must be just a key).
  var groupRows = new Map(), groupOrder = [];
  ROWS.forEach(function (r, i) {
    var g = r[COL.group];
    if (!groupRows.has(g)) { groupRows.set(g, []); groupOrder.push(g); }
    groupRows.get(g).push(i);
  });
  var groupAt = new Map();
  groupOrder.forEach(function (g, i) { groupAt.set(g, i); });
  var consistentOf = new Map(Object.keys(D.consistent).map(function (k) { return [k, D.consistent[k]]; }));
  var current = null;
  function showGroup(key, scroll) {
    var box = $("group-view");
    box.textContent = "";
    if (!groupRows.has(key)) {
      box.appendChild(el("p", "warn", "No group " + key + " in this report."));
      return;
    }
    current = key;
    $("g-key").value = key;
    var idx = groupRows.get(key), first = ROWS[idx[0]];
    var golds = [];
    idx.forEach(function (i) { if (golds.indexOf(ROWS[i][COL.answer]) < 0) { golds.push(ROWS[i][COL.answer]); } });
    var consistent = consistentOf.get(key);
    var info = el("p");
    info.id = "group-info";
    add(info, el("strong", null, key), el("span", null, " · " + (D.domains[first[COL.domain]] || "") + " · type " + (D.types[first[COL.type]] || "")
      + " · " + idx.length + " paraphrase" + (idx.length > 1 ? "s" : "") + " · gold "), el("span", "gold", golds.join(" | ")),
      el("span", null, " · RC: " + (consistent === true ? "consistent" : consistent === false ? "inconsistent" : "not counted (a single response, or a call error)")));
    box.appendChild(info);
    var wrong = 0, mis = 0, errs = 0;
    idx.forEach(function (i) { var c = ROWS[i][COL.verdict]; if (c === 4) { errs++; } else { if (c & 1) { wrong++; } if (c & 2) { mis++; } } });
    box.appendChild(el("p", "muted", wrong + " hallucinated (FCH), " + mis + " misaligned (PMH), " + errs + " call errors of " + idx.length));
    var t = el("table", "grid rows");
    t.id = "group-table";
    var base = HAS_BASE || ANY_FLIP;
    row(t, ["prompt", "question", "response", "claim", "verdict"].concat(base ? ["baseline claim", "baseline verdict", "baseline response"] : []), true);
    idx.forEach(function (i) {
      var r = ROWS[i], tr = el("tr");
      tr.dataset.id = r[COL.id];
      cell(tr, r[COL.id], "id");
      cell(tr, r[COL.question]);
      cell(tr, r[COL.verdict] === 4 ? r[COL.error] : r[COL.response], "response");
      cell(tr, r[COL.claim] === null ? "–" : r[COL.claim], "claim");
      verdictCell(tr, r[COL.verdict], flipTags(r[COL.flip]));
      if (base) {
        cell(tr, r[COL.old_claim] === null ? "–" : r[COL.old_claim]);
        var ov = r[COL.old_verdict];
        cell(tr, ov === null ? "–" : VERDICT[ov], ov === null ? "" : "v-" + ov);
        cell(tr, r[COL.old_response] === null ? "–" : short(r[COL.old_response], 600));
      }
      t.appendChild(tr);
    });
    box.appendChild(t);
    if (scroll) { $("group").scrollIntoView(); }
  }
  function step(delta) {
    if (!groupOrder.length) { return; }
    var at = current === null ? (delta > 0 ? -1 : 0) : groupAt.get(current);
    showGroup(groupOrder[(at + delta + groupOrder.length) % groupOrder.length], false);
  }
  $("g-prev").addEventListener("click", function () { step(-1); });
  $("g-next").addEventListener("click", function () { step(1); });
  $("g-key").addEventListener("change", function () { showGroup($("g-key").value.trim(), false); });

  // -- the run's metadata ------------------------------------------------------------------------
  (function () {
    var t = $("meta");
    function walk(prefix, value) {
      if (value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length) {
        Object.keys(value).forEach(function (k) { walk(prefix ? prefix + "." + k : k, value[k]); });
        return;
      }
      var text = Array.isArray(value) && value.every(function (x) { return x === null || typeof x !== "object"; })
        ? value.join(", ") : (value !== null && typeof value === "object" ? JSON.stringify(value) : String(value));
      var tr = el("tr");
      cell(tr, prefix); cell(tr, text);
      t.appendChild(tr);
    }
    walk("", {meta: META, thresholds: R.thresholds ? {source: R.thresholds.source, decide: R.thresholds.decide, figure: R.thresholds.figure} : null,
      usage: R.usage, report: {truncated_texts: D.truncated}});
  })();

  filter();
  window.__defan = {ready: true, rows: ROWS.length, renderMs: Math.round(performance.now())};
  document.body.dataset.ready = "1";
})();
