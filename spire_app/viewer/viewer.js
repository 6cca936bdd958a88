// SPIRE evidence viewer: asks POST /query and shows the ranked evidence. Every text that comes
// from a question or a page is set with textContent (never as markup): it is shown, not run.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const form = $("ask"), status = $("status"), summary = $("summary"), list = $("results");
  const FIELDS = ["q", "budget", "max_citations"];
  let pending = null;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function say(text, isError) {
    status.textContent = text;
    status.classList.toggle("error", Boolean(isError));
  }

  // a citation's text opens with its context's headings ("## Title"): the crumbs show them
  function body(text) {
    const lines = String(text).split("\n");
    let i = 0;
    while (i < lines.length && (/^#{1,6} /.test(lines[i]) || lines[i].trim() === "")) i++;
    return (i < lines.length ? lines.slice(i) : lines).join("\n");
  }

  function crumbs(chain) {
    const div = el("div", "crumbs");
    chain.forEach((h, i) => {
      if (i) div.appendChild(el("span", "sep", "\u203a"));
      div.appendChild(el("span", "heading", h));
    });
    return div;
  }

  const isEvidence = (c) => c.evidence !== false;
  const score = (x) => (typeof x === "number" ? x.toFixed(3) : "\u2013");

  function sourceUrl(docId, cited, target) {
    const params = new URLSearchParams();
    params.set("doc", docId);
    for (const [n, c] of cited) {
      params.append("cite", c.id);
      params.append("n", String(n));
    }
    return "/source?" + params.toString() + "#spire-cite-" + target;
  }

  function render(payload, ms) {
    const results = payload.results || [];
    const outline = payload.outline || {};
    // [n]: the n-th strongest named citation across results, as in a prompt's markers
    const named = [];
    results.forEach((r) => r.citations.filter(isEvidence).forEach((c) => named.push(c)));
    const ranked = named.map((c, i) => [c, i]).sort((a, b) => (b[0].score || 0) - (a[0].score || 0) || a[1] - b[1]);
    const number = new Map(ranked.map(([c], i) => [c, i + 1]));
    const byPage = new Map();
    for (const [c] of ranked) {
      if (!byPage.has(c.doc_id)) byPage.set(c.doc_id, []);
      byPage.get(c.doc_id).push([number.get(c), c]);
    }

    const cost = results.reduce((sum, r) => sum + (r.cost || 0), 0);
    summary.replaceChildren();
    summary.appendChild(el("q", "question", payload.query));
    const spent = el("span", "cost", cost + " of " + payload.budget + " tokens");
    const meter = el("span", "meter");
    const fill = el("span");
    fill.style.width = Math.min(100, (100 * cost) / Math.max(1, payload.budget)) + "%";
    meter.appendChild(fill);
    spent.appendChild(meter);
    summary.appendChild(spent);
    summary.appendChild(el("span", "", results.length + (results.length === 1 ? " page" : " pages")));
    summary.appendChild(
      el("span", "", named.length + " evidence, " + (results.reduce((s, r) => s + r.citations.length, 0) - named.length) + " context")
    );
    const report = payload.filter;
    if (report) {
      let text;
      if (report.error) text = "LLM filter failed (" + report.error + "): every citation kept";
      else text = "LLM filter kept " + (report.labels.length ? report.labels.join(", ") : "nothing");
      if (report.unknown && report.unknown.length) text += "; unknown labels " + report.unknown.join(", ");
      summary.appendChild(el("span", "filter" + (report.error ? " failed" : ""), text));
    }
    summary.hidden = false;
    $("budget").placeholder = String(payload.budget);

    list.replaceChildren();
    results.forEach((r) => {
      const page = outline[r.doc_id] || { title: null, headings: {} };
      const item = el("li", "result");
      item.appendChild(el("h2", "title", page.title || r.doc_id));
      item.appendChild(el("div", "meta", r.doc_id + " \u00b7 score " + score(r.score) + " \u00b7 " + r.cost + " tokens"));
      const evidence = r.citations.filter(isEvidence);
      const context = r.citations.filter((c) => !isEvidence(c));
      const chainOf = (c) => page.headings[c.id] || [];
      const top = chainOf(evidence[0] || r.citations[0] || {});
      if (top.length) item.appendChild(crumbs(top));

      const ol = el("ol", "evidence");
      evidence.forEach((c) => {
        const li = el("li", "citation");
        const n = number.get(c);
        const link = el("a", "cite");
        link.href = sourceUrl(r.doc_id, byPage.get(r.doc_id), n);
        link.target = "_blank";
        link.rel = "noopener noreferrer";
        link.title = "open the page at this citation";
        link.appendChild(el("span", "num", "[" + n + "]"));
        link.appendChild(el("span", "score", score(c.score)));
        li.appendChild(link);
        const right = el("div");
        const chain = chainOf(c);
        if (chain.join("\u0000") !== top.join("\u0000")) right.appendChild(crumbs(chain));
        right.appendChild(el("p", "text", body(c.text)));
        li.appendChild(right);
        ol.appendChild(li);
      });
      item.appendChild(ol);

      if (context.length) {
        const details = el("details", "context");
        details.open = true;
        details.appendChild(el("summary", "", context.length + " delivered as context, not cited"));
        const ul = el("ul");
        context.forEach((c) => {
          const li = el("li");
          li.appendChild(el("span", "score", score(c.score)));
          li.appendChild(el("p", "text", body(c.text)));
          ul.appendChild(li);
        });
        details.appendChild(ul);
        item.appendChild(details);
      }
      list.appendChild(item);
    });
    const text = results.length ? "" : "no evidence found \u00b7 ";
    say(text + "answered in " + Math.round(ms) + " ms");
    status.dataset.ms = String(Math.round(ms));
  }

  async function ask() {
    const question = $("q").value;
    if (!question.trim()) return;
    const body = { q: question, outline: true };
    const state = new URLSearchParams({ q: question });
    for (const name of ["budget", "max_citations"]) {
      const value = $(name).value.trim();
      if (value) {
        body[name] = value;
        state.set(name, value);
      }
    }
    history.replaceState(null, "", "?" + state.toString());
    if (pending) pending.abort();
    const controller = (pending = new AbortController());
    say("asking\u2026");
    delete status.dataset.ms;
    $("submit").disabled = true;
    const started = performance.now();
    try {
      const response = await fetch("/query", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      const payload = await response.json();
      if (controller !== pending) return;
      if (!response.ok) {
        say("error " + response.status + ": " + (payload.error || response.statusText), true);
        return;
      }
      render(payload, performance.now() - started);
    } catch (err) {
      if (err.name !== "AbortError") say("the server did not answer: " + err, true);
    } finally {
      if (controller === pending) {
        pending = null;
        $("submit").disabled = false;
      }
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ask();
  });

  fetch("/health")
    .then((r) => r.json())
    .then((h) => {
      const name = String(h.store).split(/[\\/]/).filter(Boolean).pop() || h.store;
      $("store").textContent = name + " \u00b7 " + h.pages + " pages" + (h.complete === false ? " (incomplete)" : "");
      $("store").title = h.store;
    })
    .catch(() => {});

  const start = new URLSearchParams(location.search);
  for (const name of FIELDS) if (start.has(name)) $(name).value = start.get(name);
  if (start.get("q")) ask();
})();
