(function () {
  "use strict";
  // Every text of the report goes in with textContent (el, cell, svg): never as markup.
  var D = JSON.parse(document.getElementById("defan-data").textContent);
  var R = D.report, META = R.meta || {}, ROWS = D.rows, COL = {}, OUT = D.outcomes;
  D.cols.forEach(function (name, i) { COL[name] = i; });
  var PAGE = 100;
  var HAS_BASE = !!D.baseline;
  var ANY_FLIP = ROWS.some(function (r) { return r[COL.flip]; });
  var BASE_COLS = HAS_BASE || ANY_FLIP;

  function $(id) { return document.getElementById(id); }
  function own(o, k) { return o && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined; }
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
  function addAll(parent, list) { list.forEach(function (n) { parent.appendChild(n); }); return parent; }
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
  function pct(x) { return String(Math.round(10000 * x) / 100) + "%"; }
  function slug(s) { return String(s).replace(/[^a-z]+/gi, "-").toLowerCase(); }
  function stCls(state) { return "st-" + (state ? slug(state) : "none"); }
  function short(s, n) { s = s === null || s === undefined ? "" : String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  function cell(tr, text, c) { var td = el("td", c, text); tr.appendChild(td); return td; }
  function row(table, values, header) {
    var tr = el("tr");
    values.forEach(function (v) { tr.appendChild(el(header ? "th" : "td", null, v)); });
    table.appendChild(tr);
    return tr;
  }
  function plural(n, noun) { return n.toLocaleString("en") + " " + noun + (n === 1 ? "" : "s"); }

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
  bits.push(R.thresholds ? "decide " + (R.thresholds.decide || "point") : "");
  bits.push(META.created ? "created " + META.created : "");
  $("subtitle").textContent = bits.filter(Boolean).join(" · ");
  function badge(label, status) {
    var b = el("span", "badge " + stCls(status), label + ": " + (status || "not judged"));
    b.dataset.status = status || "not judged";
    return b;
  }
  var reg = D.regression;
  var gateBadge = badge("level gate", R.gate_status), regBadge = badge("regression gate", reg ? reg.status : HAS_BASE ? "not judged" : "no baseline");
  gateBadge.id = "gate-status";
  regBadge.id = "regression-status";
  add($("badges"), gateBadge, regBadge);

  // -- what each figure is (judged.py: pass, fail, not decided, not judged; regressed) -------------
  var limits = (R.thresholds || {}).limits || {};
  function judgedOf(scope, metric) { return own(own(own(D.judged, scope), "metrics"), metric) || null; }
  function scopeJudged(scope) { return own(D.judged, scope) || null; }
  var scopes = Object.keys(R.domains || {}).map(function (d) { return {key: d, label: d, figs: R.domains[d]}; });
  var overall = (R.overall || {})[D.figure] || {};
  scopes.push({key: "overall", label: "overall (" + (D.figure === "pooled" ? "pooled" : "mean of domains") + ")",
    chartLabel: "overall (" + (D.figure === "pooled" ? "pooled" : "mean") + ")", figs: overall});
  var baseFigs = D.baseline ? D.baseline.figures || {} : {};
  function limitOf(scope, metric) { return own(own(limits, scope), metric.key); }
  function baseOf(scope, metric) { return own(own(baseFigs, scope), metric.name); }
  function marks(j, brief) {
    // The words beside a figure: its state unless it passed, and a regression (brief: in a chart).
    var out = [];
    if (j && j.state && j.state !== "pass") { out.push(["m-" + slug(j.state), (j.state === "fail" ? "✗ " : "") + j.word]); }
    if (j && j.regressed) { out.push(["m-regressed", (brief ? "▲ " : "▲ regressed ") + signed(j.change)]); }
    return out;
  }
  // -- charts ------------------------------------------------------------------------------------
  $("figures-note").textContent = "Bars: the figure, coloured by its verdict; black whisker: its 95% interval (paraphrase groups as the unit); "
    + (R.thresholds ? "red dashes: the limit of " + (R.thresholds.source || "the thresholds") + ", decided on "
      + (R.thresholds.decide === "interval" ? "the whole interval" : "the figure") : "no thresholds file, so no limits")
    + (D.baseline ? "; purple diamond: the baseline" + (D.baseline.from === "regression" ? " (on the prompts both runs hold)" : "") : "") + ".";

  function chart(metric) {
    var W = 640, LW = 160, PW = 245, RH = 32, TOP = 26;
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
      var j = judgedOf(sc.key, metric.name), state = j ? j.state : null;
      var g = svg("g", {"class": "bar-row " + stCls(state) + (j && j.regressed ? " regressed" : "")});
      g.setAttribute("data-scope", sc.key);
      g.setAttribute("data-state", state || "none");
      g.setAttribute("data-regressed", j && j.regressed ? "1" : "0");
      g.appendChild(svg("text", {x: LW - 8, y: y + 15, "text-anchor": "end", "class": "scope"}, short(sc.chartLabel || sc.label, 24)));
      g.appendChild(svg("rect", {"class": "track", x: x(0), y: y + 4, width: PW, height: 16}));
      if (num(v)) {
        // At least 4px: a figure of 0 still shows its colour.
        g.appendChild(svg("rect", {"class": "bar", x: x(0), y: y + 5, width: Math.max(4, x(v) - x(0)), height: 14}));
      }
      if (c && num(c[0]) && num(c[1])) {
        g.appendChild(svg("line", {"class": "ci", x1: x(c[0]), x2: x(c[1]), y1: y + 12, y2: y + 12}));
        g.appendChild(svg("line", {"class": "ci", x1: x(c[0]), x2: x(c[0]), y1: y + 7, y2: y + 17}));
        g.appendChild(svg("line", {"class": "ci", x1: x(c[1]), x2: x(c[1]), y1: y + 7, y2: y + 17}));
      }
      var lim = limitOf(sc.key, metric);
      if (num(lim)) { g.appendChild(svg("line", {"class": "limit", x1: x(lim), x2: x(lim), y1: y + 1, y2: y + 23})); }
      var b = baseOf(sc.key, metric);
      if (num(b)) {
        var bx = x(b), by = y + 12;
        g.appendChild(svg("path", {"class": "base", d: "M" + bx + " " + (by - 6) + "L" + (bx + 6) + " " + by + "L" + bx + " " + (by + 6) + "L" + (bx - 6) + " " + by + "Z"}));
      }
      g.appendChild(svg("text", {x: x(1) + 8, y: y + 12, "class": "v"}, num(v) ? f3(v) + (metric.interval ? " " + ci(c) : "") : "–"));
      var sub = [];
      if (num(lim)) { sub.push(["lim", (metric.higher ? "min " : "max ") + lim]); }
      if (num(b)) { sub.push(["was", "baseline " + f3(b)]); }
      marks(j, true).forEach(function (m) { sub.push(["mark " + m[0], m[1]]); });
      if (sub.length) {
        var t2 = svg("text", {x: x(1) + 8, y: y + 25, "class": "small"});
        sub.forEach(function (n, k) { t2.appendChild(svg("tspan", {"class": n[0], dx: k ? 6 : 0}, n[1])); });
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
  (function legend() {
    // The key of the colours and marks this page uses.
    var used = {}, regressed = false;
    scopes.forEach(function (sc) {
      shownMetrics.forEach(function (m) {
        var j = judgedOf(sc.key, m.name);
        if (num((sc.figs || {})[m.name]) || (j && j.state)) { used[stCls(j && j.state)] = true; }
        regressed = regressed || !!(j && j.regressed);
      });
    });
    var box = $("legend");
    [["st-pass", "pass", "within its limit"], ["st-fail", "✗ fail", "beyond its limit: fails the gate"],
      ["st-not-decided", "not decided", "beyond its limit, but its 95% interval reaches it (--defan-decide=interval passes it)"],
      ["st-not-judged", "not judged", "too few paraphrase groups (min_samples), or no figure"], ["st-none", "no limit", "nothing to judge it by"],
      ["m-regressed", "▲ regressed", "worse than the baseline beyond its tolerance (regression gate)"]]
      .forEach(function (k) {
        if (k[0] === "m-regressed" ? !regressed : !used[k[0]]) { return; }
        var item = add(el("span", "key"), el("span", "swatch " + k[0], k[1]), el("span", "muted", " " + k[2]));
        item.dataset.key = k[0];
        box.appendChild(item);
      });
  })();

  // The figures as a table (the numbers a screen reader or a copy-paste wants), coloured alike.
  (function () {
    var t = $("figures-table");
    var head = ["scope", "verdict", "prompts", "scored", "groups", "errors"];
    shownMetrics.forEach(function (m) { head.push(m.label); });
    row(t, head, true);
    scopes.forEach(function (sc) {
      var f = sc.figs || {}, sj = scopeJudged(sc.key);
      var tr = el("tr");
      tr.dataset.scope = sc.key;
      cell(tr, sc.label, "scope");
      var vtd = cell(tr, sj ? sj.word : "no limit", "verdict " + stCls(sj && sj.state));
      if (sj && sj.regressed) { vtd.appendChild(el("span", "mark m-regressed", "▲ regressed")); }
      ["n", "scored", "groups", "errors"].forEach(function (k) { cell(tr, f[k] === undefined ? "–" : f[k], "num"); });
      shownMetrics.forEach(function (m) {
        var j = judgedOf(sc.key, m.name);
        var text = f3(f[m.name]) + (m.interval && f[m.name + "_ci"] ? " " + ci(f[m.name + "_ci"]) : "");
        var lim = limitOf(sc.key, m);
        if (num(lim)) { text += (m.higher ? "\nmin " : "\nmax ") + lim; }
        var b = baseOf(sc.key, m);
        if (num(b)) { text += "\nbaseline " + f3(b); }
        var td = cell(tr, text, "num fig " + stCls(j && j.state) + (j && j.regressed ? " regressed" : ""));
        marks(j).forEach(function (mk) { td.appendChild(el("span", "mark " + mk[0], mk[1])); });
        td.dataset.metric = m.name;
        td.dataset.state = j && j.state ? j.state : "none";
        td.dataset.regressed = j && j.regressed ? "1" : "0";
        if (j && j.message) { td.title = j.message; }
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
    row(t, ["scope", "metric", "verdict", "value", "limit", "message"], true);
    R.gate.forEach(function (v) {
      var tr = el("tr");
      tr.dataset.state = v.state;
      tr.dataset.status = v.status;
      cell(tr, v.scope); cell(tr, v.metric);
      var st = cell(tr, v.word, "verdict " + stCls(v.state));
      st.title = "gate status: " + v.status;
      cell(tr, v.metric === "samples" ? v.value : f3(v.value), "num"); cell(tr, v.limit, "num"); cell(tr, v.message);
      t.appendChild(tr);
    });
    box.appendChild(t);
  })();
  (function () {
    var box = $("regression");
    if (!reg) {
      box.appendChild(el("p", "muted", HAS_BASE ? "The report was not judged against a baseline; the baseline given is shown in the charts and the prompts." : "No baseline: no regression gate."));
      return;
    }
    var b = reg.baseline || {}, p = reg.pairs || {};
    box.appendChild(el("p", null, "Baseline " + (b.path || "?") + " (" + (b.model || "?") + ", " + (b.created || "?") + "): "
      + (p.paired || 0) + " prompts in common in " + (p.groups || 0) + " groups; "
      + pct(reg.per_test_confidence || reg.confidence || 0.95) + " intervals (the gate's " + pct(reg.confidence || 0.95)
      + " over " + (reg.judged || 0) + " judged changes); flipped: " + (reg.flipped_counts || {}).worse + " worse, "
      + (reg.flipped_counts || {}).better + " better."));
    if (reg.status === "skipped") { box.appendChild(el("p", "warn", "Skipped: " + (reg.reason || ""))); }
    var t = el("table", "grid");
    t.id = "regression-table";
    row(t, ["scope", "metric", "groups in common", "before", "after", "change", "interval", "tolerance", "flips worse / better", "verdict"], true);
    Object.keys(reg.scopes || {}).forEach(function (scope) {
      var mets = reg.scopes[scope];
      Object.keys(mets).forEach(function (m) {
        var c = mets[m], tr = el("tr");
        var shared = (reg.shared || {})[scope] || {};
        var few = c.judged === false;  // fewer groups in common than min_samples: shown, not judged
        var state = c.regressed ? "fail" : few || c.tolerance === null || c.tolerance === undefined ? "not judged" : "pass";
        tr.dataset.state = state;
        cell(tr, scope); cell(tr, m.toUpperCase());
        cell(tr, shared.groups === undefined ? String(c.groups || 0) : shared.groups + " (" + shared.prompts + " prompts)", "num");
        cell(tr, f3(c.old), "num"); cell(tr, f3(c.new), "num");
        cell(tr, signed(c.change), "num");
        cell(tr, c.interval ? "[" + signed(c.interval[0]) + ", " + signed(c.interval[1]) + "]" : "–", "num");
        cell(tr, c.tolerance === null || c.tolerance === undefined ? "–" : c.tolerance, "num");
        cell(tr, (c.worse_flips || 0) + " / " + (c.better_flips || 0), "num");
        var word = c.regressed ? "▲ REGRESSED" : state === "pass" ? "pass"
          : few ? "not judged: " + (shared.groups || 0) + " < " + (shared.needed || 0) + " groups" : "no tolerance";
        var td = cell(tr, word, "verdict " + stCls(state));
        td.title = c.message || "";
        t.appendChild(tr);
      });
    });
    box.appendChild(t);
  })();

  // -- the prompts, one row per paraphrase group ------------------------------------------------
  // A colour by what the figures make of an outcome (FCH counts it, PMH does, a call error), never by its name.
  function outCls(o) { return "oc-" + (o.error ? "err" : o.wrong ? "wrong" : o.misaligned ? "mis" : "good") + " o-" + slug(o.name); }
  function outWord(k) { var o = OUT[k]; return o ? o.word : "–"; }
  // Maps, not objects: a group key is data (a user's "__proto__" must be just a key).
  var groups = [], groupOf = new Map();
  ROWS.forEach(function (r, i) {
    var key = r[COL.domain] + "\u0000" + r[COL.group], g = groupOf.get(key);
    if (!g) { g = {pos: groups.length, key: r[COL.group], domain: r[COL.domain], idx: []}; groupOf.set(key, g); groups.push(g); }
    g.idx.push(i);
  });
  var consistentOf = new Map(Object.keys(D.consistent).map(function (k) { return [k, D.consistent[k]]; }));
  groups.forEach(function (g) {
    var counts = OUT.map(function () { return 0; }), claims = new Map(), golds = [];
    g.wrong = g.mis = g.err = g.bad = g.worse = g.better = 0;
    g.idx.forEach(function (i) {
      var r = ROWS[i], o = OUT[r[COL.outcome]] || {}, f = r[COL.flip];
      counts[r[COL.outcome]]++;
      if (o.error) { g.err++; } else { if (o.wrong) { g.wrong++; } if (o.misaligned) { g.mis++; } }
      if (o.error || o.wrong || o.misaligned) { g.bad++; }
      if (f & 5) { g.worse++; }
      if (f & 10) { g.better++; }
      if (!o.error) { var c = r[COL.claim] === null ? "" : r[COL.claim]; claims.set(c, (claims.get(c) || 0) + 1); }
      if (golds.indexOf(r[COL.answer]) < 0) { golds.push(r[COL.answer]); }
    });
    var top = null, topN = 0;
    claims.forEach(function (n, c) { if (n > topN) { top = c; topN = n; } });
    g.counts = counts;
    g.n = g.idx.length;
    g.scored = g.n - g.err;
    g.gold = golds.join(" | ");
    g.question = ROWS[g.idx[0]][COL.question];
    g.claim = top === null ? null : top;
    g.claimN = topN;
    g.rc = consistentOf.has(g.key) ? (consistentOf.get(g.key) ? 1 : 0) : 2;  // 2: not counted
  });
  function share(a, b) { return b ? a / b : -1; }
  var collate = new Intl.Collator("en", {numeric: true, sensitivity: "base"}).compare;
  // Each column: its title, what it sorts by, and whether it is a number (a number sorts worst first).
  var COLS = [
    {key: "group", title: "group", by: function (g) { return g.pos; }, number: true, first: 1},
    {key: "domain", title: "domain", by: function (g) { return D.domains[g.domain] || ""; }},
    {key: "question", title: "question", by: function (g) { return g.question; }},
    {key: "gold", title: "gold", by: function (g) { return g.gold; }},
    {key: "prompts", title: "prompts", by: function (g) { return g.n; }, number: true},
    {key: "outcomes", title: "outcomes", by: function (g) { return share(g.bad, g.n); }, number: true},
    {key: "fch", title: "FCH", by: function (g) { return share(g.wrong, g.scored); }, number: true},
    {key: "pmh", title: "PMH", by: function (g) { return share(g.mis, g.scored); }, number: true},
    {key: "rc", title: "RC", by: function (g) { return g.rc; }, number: true, first: 1},
    {key: "claim", title: "top claim", by: function (g) { return g.claim === null ? "" : g.claim; }},
  ];
  if (BASE_COLS) { COLS.push({key: "baseline", title: "baseline", by: function (g) { return g.worse * 1e6 + g.better; }, number: true}); }
  var sortCol = COLS[0], sortDir = 1;

  // Filters: they choose prompts; a group is shown when one of its prompts is chosen.
  function option(select, value, label) { var o = el("option", null, label); o.value = value; select.appendChild(o); }
  var fDomain = $("f-domain"), fVerdict = $("f-verdict"), fFlip = $("f-flip"), fKind = $("f-kind"), fSearch = $("f-search");
  var domainCount = D.domains.map(function () { return 0; }), kindCount = D.kinds.map(function () { return 0; });
  var outCount = OUT.map(function () { return 0; });
  ROWS.forEach(function (r) {
    if (r[COL.domain] !== null) { domainCount[r[COL.domain]]++; }
    if (r[COL.kind] !== null) { kindCount[r[COL.kind]]++; }
    outCount[r[COL.outcome]]++;
  });
  option(fDomain, "", "all");
  D.domains.forEach(function (d, i) { option(fDomain, String(i), d + " (" + domainCount[i] + ")"); });
  [["", "all"], ["fch", "FCH counts it (not right)"], ["pmh", "PMH counts it (misaligned)"], ["error", "any call error"]]
    .forEach(function (o) { option(fVerdict, o[0], o[1]); });
  OUT.forEach(function (o, i) { option(fVerdict, "o:" + i, o.word + " (" + outCount[i] + ")"); });
  [["", "all"], ["any", "flipped"], ["worse", "worse (right → wrong or aligned → misaligned)"], ["better", "better"]]
    .forEach(function (o) { option(fFlip, o[0], o[1]); });
  fFlip.disabled = !BASE_COLS;
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
  function predicate() {
    var d = fDomain.value, v = fVerdict.value, fl = fFlip.value, k = fKind.value, q = fSearch.value.trim().toLowerCase();
    if (!d && !v && !fl && !k && !q) { return null; }
    var h = q ? haystack() : null, only = v.indexOf("o:") === 0 ? Number(v.slice(2)) : null;
    return function (i) {
      var r = ROWS[i], o = OUT[r[COL.outcome]] || {}, flip = r[COL.flip];
      if (d !== "" && String(r[COL.domain]) !== d) { return false; }
      if (only !== null && r[COL.outcome] !== only) { return false; }
      if ((v === "fch" && !o.wrong) || (v === "pmh" && !o.misaligned) || (v === "error" && !o.error)) { return false; }
      if ((fl === "any" && !flip) || (fl === "worse" && !(flip & 5)) || (fl === "better" && !(flip & 10))) { return false; }
      if (k === "any" && r[COL.kind] === null) { return false; }
      if (k !== "" && k !== "any" && String(r[COL.kind]) !== k) { return false; }
      return !(h && h[i].indexOf(q) < 0);
    };
  }
  var view = [], matched = 0, page = 0, open = new Set();
  function filter() {
    var test = predicate(), out = [];
    matched = 0;
    groups.forEach(function (g) {
      var m = test ? g.idx.filter(test) : g.idx;
      if (m.length) { out.push({g: g, m: m}); matched += m.length; }
    });
    view = out;
    page = 0;
    sortView();
  }
  function sortView() {
    var by = sortCol.by, dir = sortDir;
    var keyed = view.map(function (v) { return {v: v, k: by(v.g)}; });
    keyed.sort(function (a, b) {
      var c = sortCol.number ? a.k - b.k : collate(a.k, b.k);
      return c ? c * dir : a.v.g.pos - b.v.g.pos;
    });
    view = keyed.map(function (x) { return x.v; });
    draw();
  }

  var table = $("rows"), thead = table.querySelector("thead"), tbody = table.querySelector("tbody");
  (function header() {
    var tr = el("tr");
    COLS.forEach(function (c) {
      var th = el("th", "c-" + c.key), btn = el("button", "sort", c.title);
      btn.type = "button";
      btn.dataset.col = c.key;
      btn.title = "sort by " + c.title;
      th.dataset.col = c.key;
      th.appendChild(btn);
      tr.appendChild(th);
    });
    thead.appendChild(tr);
  })();
  function showSort() {
    Array.prototype.forEach.call(thead.querySelectorAll("th"), function (th) {
      var on = th.dataset.col === sortCol.key;
      th.setAttribute("aria-sort", on ? (sortDir > 0 ? "ascending" : "descending") : "none");
    });
  }
  thead.addEventListener("click", function (ev) {
    var b = ev.target && ev.target.closest ? ev.target.closest("button.sort") : null;
    if (!b) { return; }
    var c = COLS.filter(function (x) { return x.key === b.dataset.col; })[0];
    if (c === sortCol) { sortDir = -sortDir; } else { sortCol = c; sortDir = c.number && !c.first ? -1 : 1; }
    page = 0;
    sortView();
  });

  function flipTags(worse, better) {
    var tags = [];
    if (worse) { tags.push(el("span", "flip worse", worse + " worse")); }
    if (better) { tags.push(el("span", "flip better", better + " better")); }
    return tags;
  }
  function promptFlips(flip) {
    var tags = [];
    if (flip & 1) { tags.push(["worse", "FCH: was right"]); }
    if (flip & 2) { tags.push(["better", "FCH: was wrong"]); }
    if (flip & 4) { tags.push(["worse", "PMH: was aligned"]); }
    if (flip & 8) { tags.push(["better", "PMH: was misaligned"]); }
    return tags.map(function (t) { return el("span", "flip " + t[0], t[1]); });
  }
  function chips(g) {
    var td = el("td", "outcomes");
    g.counts.forEach(function (n, k) {
      if (n) {
        var c = el("span", "chip " + outCls(OUT[k]), OUT[k].word + " " + n);
        c.dataset.outcome = OUT[k].name;
        td.appendChild(c);
      }
    });
    return td;
  }
  function groupRow(v) {
    var g = v.g, tr = el("tr", "group"), isOpen = open.has(g);
    tr.dataset.group = g.key;
    var gtd = el("td", "grp"), btn = el("button", "toggle", (isOpen ? "▾ " : "▸ ") + g.key);
    btn.type = "button";
    btn.setAttribute("aria-expanded", isOpen ? "true" : "false");
    btn.dataset.pos = String(g.pos);
    gtd.appendChild(btn);
    tr.appendChild(gtd);
    cell(tr, D.domains[g.domain]);
    cell(tr, short(g.question, 240), "question");
    cell(tr, short(g.gold, 160), "gold");
    cell(tr, v.m.length === g.n ? g.n : v.m.length + " of " + g.n, "num");
    tr.appendChild(chips(g));
    cell(tr, g.scored ? g.wrong + "/" + g.scored : "–", "num");
    cell(tr, g.scored ? g.mis + "/" + g.scored : "–", "num");
    cell(tr, g.rc === 1 ? "consistent" : g.rc === 0 ? "inconsistent" : "–", g.rc === 0 ? "rc rc-no" : "rc");
    cell(tr, g.claim === null ? "–" : (g.claim === "" ? "(no claim)" : short(g.claim, 120)) + " ×" + g.claimN, "claim");
    if (BASE_COLS) { addAll(cell(tr, "", "flips"), flipTags(g.worse, g.better)); }
    return tr;
  }
  function promptsRow(v) {
    // The group's prompts (those the filters chose), as a table in one cell under the group's row.
    var g = v.g, tr = el("tr", "sub"), td = el("td");
    tr.dataset.group = g.key;
    td.colSpan = COLS.length;
    if (v.m.length !== g.n) { td.appendChild(el("p", "muted", v.m.length + " of the group's " + g.n + " prompts match the filters.")); }
    var t = el("table", "grid prompts");
    row(t, ["prompt", "outcome", "paraphrase", "response", "claim"].concat(BASE_COLS ? ["baseline", "baseline response"] : []), true);
    v.m.forEach(function (i) {
      var r = ROWS[i], p = el("tr"), o = OUT[r[COL.outcome]] || {};
      p.dataset.id = r[COL.id];
      cell(p, r[COL.id], "id");
      addAll(cell(p, outWord(r[COL.outcome]), "outcome " + (OUT[r[COL.outcome]] ? outCls(o) : "")), promptFlips(r[COL.flip]));
      cell(p, short(r[COL.question], 600));
      var resp = cell(p, o.error ? short(r[COL.error], 600) : short(r[COL.response], 600), o.error ? "response err" : "response");
      // The provider's finish reason, where it is not the ordinary "stop" (length: cut by the token limit).
      var fin = r[COL.finish_reason];
      if (fin !== null && fin !== undefined && fin !== "stop") {
        resp.appendChild(el("span", "finish muted", " [finish: " + fin + (fin === "length" ? ", cut by the token limit" : "") + "]"));
      }
      cell(p, r[COL.claim] === null ? "–" : short(r[COL.claim], 200), "claim");
      if (BASE_COLS) {
        var old = r[COL.old_outcome];
        cell(p, (old === null ? "" : outWord(old) + ": ") + (r[COL.old_claim] === null ? "–" : short(r[COL.old_claim], 120)),
          old === null ? "old" : "old " + outCls(OUT[old] || {}));
        cell(p, r[COL.old_response] === null ? "–" : short(r[COL.old_response], 400), "old");
      }
      t.appendChild(p);
    });
    td.appendChild(t);
    tr.appendChild(td);
    return tr;
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(view.length / PAGE));
    page = Math.max(0, Math.min(page, pages - 1));
    var start = page * PAGE, end = Math.min(view.length, start + PAGE);
    var frag = document.createDocumentFragment();
    for (var j = start; j < end; j++) {
      frag.appendChild(groupRow(view[j]));
      if (open.has(view[j].g)) { frag.appendChild(promptsRow(view[j])); }
    }
    tbody.textContent = "";
    if (!view.length) {
      var none = el("tr"), td = el("td", "empty", "No prompt matches these filters.");
      td.colSpan = COLS.length;
      none.appendChild(td);
      frag.appendChild(none);
    }
    tbody.appendChild(frag);
    showSort();
    var info = $("p-info");
    info.textContent = (view.length ? (start + 1).toLocaleString("en") + "–" + end.toLocaleString("en") : "0")
      + " of " + plural(view.length, "group") + " (" + plural(matched, "prompt")
      + (matched !== ROWS.length ? ", filtered from " + ROWS.length.toLocaleString("en") : "") + ")"
      + " · page " + (page + 1) + " of " + pages + " · sorted by " + sortCol.title + (sortDir > 0 ? " ↑" : " ↓");
    info.dataset.count = String(matched);
    info.dataset.groups = String(view.length);
  }
  var timer = null;
  [fDomain, fVerdict, fFlip, fKind].forEach(function (s) { s.addEventListener("change", filter); });
  fSearch.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(filter, 150); });
  $("p-first").addEventListener("click", function () { page = 0; draw(); });
  $("p-prev").addEventListener("click", function () { page -= 1; draw(); });
  $("p-next").addEventListener("click", function () { page += 1; draw(); });
  $("p-last").addEventListener("click", function () { page = 1e9; draw(); });
  function pageGroups() { return view.slice(page * PAGE, page * PAGE + PAGE).map(function (v) { return v.g; }); }
  $("x-open").addEventListener("click", function () { pageGroups().forEach(function (g) { open.add(g); }); draw(); });
  $("x-close").addEventListener("click", function () { open.clear(); draw(); });
  tbody.addEventListener("click", function (ev) {
    var b = ev.target && ev.target.closest ? ev.target.closest("button.toggle") : null;
    if (!b) { return; }
    var g = groups[Number(b.dataset.pos)];
    if (open.has(g)) { open.delete(g); } else { open.add(g); }
    draw();
  });

  // -- the run --------------------------------------------------------------------------------------
  (function () {
    var t = $("meta").tBodies[0];
    D.run.forEach(function (r) {
      var tr = el("tr");
      tr.dataset.label = r[0];
      add(tr, el("th", null, r[0]), el("td", null, r[1]));
      t.appendChild(tr);
    });
  })();

  // The page's header is sticky: the table's header sticks right under it.
  function headHeight() { document.documentElement.style.setProperty("--head", document.querySelector("body > header").offsetHeight + "px"); }
  window.addEventListener("resize", headHeight);
  headHeight();

  filter();
  window.__defan = {ready: true, rows: ROWS.length, groups: groups.length, renderMs: Math.round(performance.now())};
  document.body.dataset.ready = "1";
})();
