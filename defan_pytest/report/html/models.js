"use strict";
// The page of several models' runs, drawn from the embedded JSON with textContent only (no
// markup is ever made of the data).
(function () {
  const data = JSON.parse(document.getElementById("defan-data").textContent);
  const SHOWN = 500;
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function rate(x) { return typeof x === "number" ? x.toFixed(3) : "-"; }
  function ci(c) { return Array.isArray(c) ? " [" + rate(c[0]) + ", " + rate(c[1]) + "]" : ""; }
  const models = data.models;
  document.getElementById("subtitle").textContent = models.length + " models: " + models.join(", ") +
    (data.compare_to ? "; compared with " + data.compare_to : "");

  const table = document.getElementById("figures-table");
  const head = el("tr");
  head.appendChild(el("th", "scope"));
  for (const m of models) for (const k of data.metrics.concat(["gate"])) head.appendChild(el("th", m + " " + k.toUpperCase()));
  const thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
  const tbody = el("tbody");
  for (const scope of data.scopes) {
    const tr = el("tr");
    tr.appendChild(el("td", scope));
    for (const m of models) {
      const f = (data.figures[m] || {})[scope] || {};
      for (const k of data.metrics) tr.appendChild(el("td", rate(f[k]) + ci(f[k + "_ci"]), "num"));
      tr.appendChild(el("td", f.gate || "-", f.gate === "fail" ? "st-fail" : f.gate === "pass" ? "st-pass" : ""));
    }
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);

  const comp = document.getElementById("comparisons");
  const names = Object.keys(data.comparisons || {});
  if (!names.length) comp.appendChild(el("p", data.compare_to ? "not compared" : "no model compared (--defan-compare-to)", "muted"));
  for (const m of names) {
    const c = data.comparisons[m];
    comp.appendChild(el("h3", m + " against " + data.compare_to + ": " + c.status, c.status === "fail" ? "st-fail" : ""));
    if (c.reason) comp.appendChild(el("p", c.reason, "muted"));
    const ul = el("ul");
    for (const msg of c.messages) ul.appendChild(el("li", msg, c.regressed.indexOf(msg) >= 0 ? "m-regressed" : ""));
    comp.appendChild(ul);
  }

  const fDomain = document.getElementById("f-domain");
  const fPair = document.getElementById("f-pair");
  const fSearch = document.getElementById("f-search");
  fDomain.appendChild(new Option("all", ""));
  for (const d of data.scopes) if (d !== "overall") fDomain.appendChild(new Option(d, d));
  fPair.appendChild(new Option("all prompts", ""));
  for (const a of models) for (const b of models) if (a !== b) fPair.appendChild(new Option("right in " + a + ", wrong in " + b, a + "\u0000" + b));
  for (const m of models) fPair.appendChild(new Option("wrong in " + m, "\u0000" + m));

  const rowsHead = document.querySelector("#rows thead");
  const hr = el("tr");
  for (const t of ["id", "question", "gold"].concat(models)) hr.appendChild(el("th", t));
  rowsHead.appendChild(hr);
  const body = document.querySelector("#rows tbody");

  function right(p, m) { const x = p.by[m]; return !!(x && x.right); }
  function wrong(p, m) { const x = p.by[m]; return !!(x && !x.right && !x.error); }
  function draw() {
    const domain = fDomain.value, pair = fPair.value, q = fSearch.value.toLowerCase();
    let a = null, b = null;
    if (pair) { const parts = pair.split("\u0000"); a = parts[0] || null; b = parts[1]; }
    const hits = data.prompts.filter(function (p) {
      if (domain && p.domain !== domain) return false;
      if (pair && ((a && !right(p, a)) || !wrong(p, b))) return false;
      if (!q) return true;
      const text = [p.id, p.question, p.answer].concat(models.map(function (m) { return (p.by[m] || {}).claim || ""; })).join(" ").toLowerCase();
      return text.indexOf(q) >= 0;
    });
    body.textContent = "";
    for (const p of hits.slice(0, SHOWN)) {
      const tr = el("tr");
      tr.appendChild(el("td", p.id));
      tr.appendChild(el("td", p.question));
      tr.appendChild(el("td", p.answer));
      for (const m of models) {
        const x = p.by[m];
        const td = el("td", x ? x.outcome + (x.claim ? ": " + x.claim : "") : "not asked", x && x.right ? "st-pass" : x ? "st-fail" : "muted");
        if (x) td.title = x.response;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    const info = document.getElementById("p-info");
    info.textContent = hits.length + " of " + data.prompts.length + " prompts" +
      (hits.length > SHOWN ? " (the first " + SHOWN + " shown)" : "");
    info.dataset.count = String(hits.length);
  }
  fDomain.addEventListener("change", draw);
  fPair.addEventListener("change", draw);
  fSearch.addEventListener("input", draw);
  draw();
  document.body.dataset.ready = "1";
})();
