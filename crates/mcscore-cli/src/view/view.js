"use strict";
// mcscore view: renders the values mcscore computed (the JSON in
// #mcscore-data) and filters and sorts them; it computes no result. Task text
// is only ever set as text (textContent, text nodes), never parsed as HTML.
(function () {
  const D = JSON.parse(document.getElementById("mcscore-data").textContent);
  const PLOTS = JSON.parse(document.getElementById("mcscore-plots").textContent);
  const SCALE = D.probability_scale;
  const NORM = D.normalisations.indexOf(D.normalisation);
  const T = D.tasks;
  const N = T.index.length;
  const PAGE = 200;
  // The URL names a task by its index in the file; the arrays are by row.
  const ROW = new Map(T.index.map((task, row) => [task, row]));
  const selectedRow = () => (state.task === "" ? undefined : ROW.get(Number(state.task)));

  // Builds an element; strings among the children become text nodes.
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  const fmt = (x, d) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(d));
  // Accuracies, differences and margins come as fractions; the page shows points.
  const points = (x) => (x === null || x === undefined ? x : 100 * x);
  const pct = (x) => fmt(points(x), 2);
  const interval = (lo, hi, d) => "[" + fmt(lo, d) + ", " + fmt(hi, d) + "]";
  const signed = (x, d) => (x > 0 ? "+" : "") + fmt(x, d);
  const prob = (p) => fmt(p / SCALE, 3);
  // A sweep names models by path; their file names are what differ.
  const modelName = (path) => path.split("/").pop();
  const table = (head, rows) =>
    el("table", {}, el("thead", {}, el("tr", {}, ...head.map((h, i) => el("th", { class: i === 0 ? "text" : null, text: h })))),
      el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c, i) => (c instanceof Node ? el("td", { class: i === 0 ? "text" : null }, c) : el("td", { class: i === 0 ? "text" : null, text: c })))))));

  // ---- state, kept in the URL fragment so a view can be shared ----
  const DEFAULTS = { view: D.runs.length ? (D.comparison ? "compare" : "scores") : D.sweep ? "sweep" : "schemes", run: "0", other: "1", filter: "all", q: "", group: "", k: "", sort: "file", task: "", below: "0.1" };
  let state = Object.assign({}, DEFAULTS);
  const VIEWS = { scores: D.reports.length > 0, compare: !!D.comparison, tasks: N > 0, sweep: !!D.sweep, schemes: !!D.schemes };
  // An index from the URL, or the default where it is not a whole number in range.
  function index(text, low, high, fallback) {
    const n = Number(text);
    return Number.isInteger(n) && n >= low && n <= high ? String(n) : fallback;
  }
  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    state = Object.assign({}, DEFAULTS);
    for (const key of Object.keys(DEFAULTS)) if (params.has(key)) state[key] = params.get(key);
    // A link from another page, or edited by hand: whatever it says, the
    // view shows something that exists.
    if (!VIEWS[state.view]) state.view = DEFAULTS.view;
    state.run = index(state.run, 0, Math.max(D.runs.length - 1, 0), DEFAULTS.run);
    state.other = index(state.other, 1, Math.max(D.runs.length - 1, 1), DEFAULTS.other);
    state.group = state.group === "" ? "" : index(state.group, 0, T.groups.length - 1, "");
    if (!Number.isFinite(Number(state.below))) state.below = DEFAULTS.below;
  }
  function writeHash() {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(state)) if (v !== DEFAULTS[k]) params.set(k, v);
    const hash = "#" + params.toString();
    if (location.hash !== hash) history.replaceState(null, "", hash === "#" ? location.pathname + location.search : hash);
  }

  // ---- header: the answer first ----
  function header() {
    const title = D.file ? D.file : D.sweep ? "sweep" : D.schemes.file;
    document.getElementById("title").textContent = "mcscore view: " + title;
    const answer = document.getElementById("answer");
    if (D.comparison) {
      const c = D.comparison;
      for (const p of c.others) {
        const d = p.difference;
        answer.append(el("div", {}, el("strong", { text: p.other.label }), " vs " + c.base.label + ": " + p.conclusion + ", " + signed(points(d.estimate), 2) + " points " + interval(points(d.interval[0]), points(d.interval[1]), 2) + " on " + p.tasks + " tasks, McNemar p = " + fmt(p.mcnemar.p, 4)));
      }
    } else if (D.reports.length) {
      for (const m of D.reports[0].models) {
        const e = m.normalisations[D.normalisation];
        answer.append(el("div", {}, el("strong", { text: m.label }), ": " + D.normalisation + " " + pct(e.mean) + " % " + interval(points(e.low), points(e.high), 2) + " on " + m.tasks + " tasks"));
      }
    } else if (!D.sweep && D.schemes) {
      for (const m of D.schemes.models) {
        const nr = m.modes.find((f) => f.mode === "NR");
        if (nr) answer.append(el("div", {}, el("strong", { text: m.label }), ": NR prompted " + pct(nr.prompted.mean) + " % " + interval(points(nr.prompted.low), points(nr.prompted.high), 2) + ", by log-probability " + pct(nr.logprob.mean) + " % on " + D.schemes.tasks + " tasks"));
      }
    } else if (D.sweep) {
      for (const m of D.sweep.models) {
        const s = m.accuracy_across_formats;
        answer.append(el("div", {}, el("strong", { text: modelName(m.model) }), ": accuracy across formats " + pct(s.min) + "–" + pct(s.max) + " % (mean " + pct(s.mean) + ")"));
      }
    }
    const nav = document.getElementById("nav");
    const views = [["scores", "Scores", D.reports.length], ["compare", "Compare", D.comparison], ["tasks", "Tasks", N], ["sweep", "Sweep", D.sweep], ["schemes", "Schemes", D.schemes]];
    for (const [id, name, shown] of views) {
      if (!shown) continue;
      // The other settings stay as they are when the view changes.
      nav.append(el("a", { href: "#view=" + id, id: "nav-" + id, text: name, onclick: (e) => { e.preventDefault(); state.view = id; update(); } }));
    }
  }

  // ---- scores ----
  function scores() {
    const s = document.getElementById("scores");
    if (D.baselines) s.append(el("p", { class: "muted", text: "Baselines over these " + N + " tasks: chance " + pct(D.baselines.chance) + " %, majority class " + pct(D.baselines.majority_class) + " % (always option " + D.baselines.majority_position + ")." }));
    D.reports.forEach((r, ri) => {
      s.append(el("h2", { text: "Accuracy (%), 95 % bootstrap intervals (" + r.resamples + " resamples, seed " + r.seed + ")" }));
      // Report JSON gives fractions; the page shows percent.
      const names = Object.keys(r.models[0].normalisations);
      s.append(table(["model", ...names], r.models.map((m) => [m.label, ...names.map((n) => pct(m.normalisations[n].mean) + " " + interval(points(m.normalisations[n].low), points(m.normalisations[n].high), 2))])));
      s.append(el("h3", { text: "Scoring schemes (mean score per task; p = softmax of " + r.normalisation + ")" }));
      const schemes = Object.keys(r.models[0].schemes);
      s.append(table(["model", ...schemes], r.models.map((m) => [m.label, ...schemes.map((n) => fmt(m.schemes[n].mean, 4) + " " + interval(m.schemes[n].low, m.schemes[n].high, 4))])));
      const g0 = r.models[0].groups;
      if (g0) {
        // Categories first (MMLU's stem, humanities, …), then every group; the same rows for every model.
        const rowsOf = (m) => [...m.groups.categories, ...m.groups.groups];
        s.append(el("h3", { text: "Accuracy by group (%; " + g0.normalisation + ", 95 % Wilson intervals; groups from " + g0.source + ")" }));
        s.append(table(["group", "tasks", ...r.models.map((m) => m.label)], rowsOf(r.models[0]).map((g, i) =>
          [g.name, String(g.tasks), ...r.models.map((m) => { const x = rowsOf(m)[i]; return pct(x.accuracy) + " " + interval(points(x.low), points(x.high), 2); })])));
      }
      s.append(el("h3", { text: "Calibration" }));
      s.append(table(["model", "ECE", "Brier", "reliability", "resolution", "uncertainty"], r.models.map((m) => [m.label, fmt(m.calibration.ece, 4), fmt(m.calibration.brier, 4), fmt(m.calibration.reliability, 4), fmt(m.calibration.resolution, 4), fmt(m.calibration.uncertainty, 4)])));
      if (r.rankings.length) {
        s.append(el("h3", { text: "Ranks per scheme (1 = best, 95 % bootstrap interval), with Spearman ρ and Kendall τ against NR's ranking" }));
        s.append(table(["scheme", ...r.models.map((m) => m.label), "ρ", "τ"], r.rankings.map((k) => {
          // No ranking where every run scores the same; a correlation with a ranking of ties is undefined.
          const corr = (v, se) => (v === null ? "undefined" : fmt(v, 3) + (se === null ? "" : " ± " + fmt(se, 3)));
          const ranks = k.tied ? r.models.map(() => "tie") : k.ranks.map((x, i) => fmt(x, 1) + " [" + String(k.rank_intervals[i][0]) + "–" + String(k.rank_intervals[i][1]) + "]");
          return [k.scheme, ...ranks, corr(k.spearman_vs_nr, k.spearman_se), corr(k.kendall_vs_nr, k.kendall_se)];
        })));
      }
      const plots = el("div", { class: "plots" });
      for (const uri of (PLOTS.reliability[ri] || [])) plots.append(el("img", { src: uri, alt: "reliability diagram" }));
      s.append(plots);
    });
  }

  // ---- compare ----
  const FLIP_CELLS = [["both_right", null, "right_to_wrong"], ["wrong_to_right", "both_wrong", "wrong_to_other_wrong"]];
  function flipMatrix(p, o) {
    const cell = (kind) => kind === null ? el("td", { class: "none", text: "–" }) :
      el("td", {}, el("a", { class: "flip-cell", href: "#view=tasks&other=" + o + "&filter=flip%3A" + kind, "data-other": o, "data-flip": kind, "data-count": p.flips[kind], text: String(p.flips[kind]) }));
    return el("table", { class: "flip-matrix" },
      el("thead", {}, el("tr", {}, el("th", { class: "text", text: D.comparison.base.label + " ↓ / " + p.other.label + " →" }), el("th", { text: "right" }), el("th", { text: "wrong, same pick" }), el("th", { text: "wrong, other pick" }))),
      el("tbody", {}, ...FLIP_CELLS.map((row, i) => el("tr", {}, el("th", { class: "text", text: i === 0 ? "right" : "wrong" }), ...row.map(cell)))));
  }
  function compare() {
    const s = document.getElementById("compare");
    const c = D.comparison;
    if (!c) return;
    s.append(el("p", { class: "muted", text: c.tasks + " tasks, " + c.mode + ", " + c.normalisation + "; intervals at " + fmt(100 * c.interval_level, 1) + " %, equivalence (TOST) at " + fmt(100 * c.tost_level, 1) + " % within ±" + fmt(points(c.margin), 2).replace(/\.?0+$/, "") + " points; " + c.resamples + " bootstrap resamples, seed " + c.seed + (c.groups ? "; groups: " + c.groups : "") }));
    s.append(table(["run", "accuracy (%)", "tasks", "OTHER − BASE (points)", "interval", "TOST interval", "verdict", "McNemar p (Holm)", "flips b / c", "agreement", "KL mean (nats)", "gold log p change"],
      [[c.base.label + " (BASE)", pct(c.base.accuracy), String(c.tasks), "", "", "", "", "", "", "", "", ""],
        ...c.others.map((p) => [p.other.label, pct(p.other.accuracy), String(p.tasks), signed(points(p.difference.estimate), 2), interval(points(p.difference.interval[0]), points(p.difference.interval[1]), 2), interval(points(p.difference.tost_interval[0]), points(p.difference.tost_interval[1]), 2), p.conclusion, fmt(p.mcnemar.p, 4) + " (" + fmt(p.mcnemar_p_holm, 4) + ")", p.flips.right_to_wrong + " / " + p.flips.wrong_to_right, fmt(100 * p.agreement, 1) + " %", fmt(p.kl_mean.estimate, 4) + " " + interval(p.kl_mean.low, p.kl_mean.high, 4), signed(p.gold_logprob_change.estimate, 4)])]));
    c.others.forEach((p, i) => {
      const o = i + 1;
      s.append(el("h2", { text: p.other.label + " against " + c.base.label }));
      s.append(el("p", { class: "muted", text: "Flips: each cell is a link to its tasks." }));
      s.append(flipMatrix(p, o));
      if (p.clustered && p.clustered.shifts.length) {
        s.append(el("h3", { text: "Groups that moved most (" + p.clustered.groups + " groups)" }));
        s.append(table(["group", "tasks", "BASE (%)", "OTHER (%)", "difference", "interval", "McNemar p", "BH q"], p.clustered.shifts.map((g) => {
          const gi = T.groups.indexOf(g.name);
          const link = el("a", { href: "#view=tasks&other=" + o + "&group=" + gi, text: g.name });
          return [link, String(g.tasks), pct(g.base_accuracy), pct(g.other_accuracy), signed(points(g.difference), 2), g.interval ? interval(points(g.interval[0]), points(g.interval[1]), 2) : "–", fmt(g.mcnemar_p, 4), fmt(g.bh_q, 4)];
        })));
      }
      const plots = el("div", { class: "plots" });
      for (const uri of (PLOTS.pairs[i] || [])) plots.append(el("img", { src: uri, alt: "comparison plot" }));
      s.append(plots);
    });
    const plots = el("div", { class: "plots" });
    for (const uri of PLOTS.comparison) plots.append(el("img", { src: uri, alt: "comparison plot" }));
    s.append(plots);
  }

  // ---- tasks ----
  let order = [];     // rows shown, after filter and sort
  let shown = 0;      // rows of `order` rendered into the list
  let lowered = null; // lowercased text per row, built on the first search
  const run = () => Math.min(Number(state.run) || 0, D.runs.length - 1);
  const other = () => Math.min(Math.max(Number(state.other) || 1, 1), D.runs.length - 1);
  // The log's own verdict: bit NORM of the run's `correct`.
  const right = (r, row) => ((D.runs[r].correct[row] >> NORM) & 1) === 1;
  const scored = (r, row) => row < D.runs[r].tasks;

  function controls() {
    const c = document.getElementById("controls");
    const dropdown = (id, label, options) => {
      const s = el("select", { id });
      for (const [value, text] of options) s.append(el("option", { value, text }));
      s.addEventListener("change", () => { state[id] = s.value; state.task = ""; update(); });
      c.append(el("label", { for: id, text: label }), s);
    };
    const q = el("input", { id: "q", type: "search", placeholder: "search question and options  ( / )" });
    q.addEventListener("input", () => { state.q = q.value; update(); });
    c.append(q);
    const filters = [["all", "all tasks"], ["right", "right"], ["wrong", "wrong"], ["low-margin", "a margin below the box's"]];
    if (D.runs.length > 1) {
      filters.push(["flipped", "flipped (right ↔ wrong)"]);
      for (const kind of D.flip_kinds) filters.push(["flip:" + kind, "flip: " + kind.replaceAll("_", " ")]);
    }
    dropdown("filter", "show", filters);
    const below = el("input", { id: "below", type: "number", min: "0", max: "1", step: "0.01", value: state.below,
      title: "the run's margin: its top option's probability less the next one's; \"show: a margin below\" lists the tasks under it" });
    below.addEventListener("input", () => { state.below = below.value; update(); });
    c.append(el("label", { for: "below", text: "margin below" }), below);
    dropdown("run", "run", D.runs.map((r, i) => [String(i), r.label + (i === 0 && D.runs.length > 1 ? " (BASE)" : "")]));
    if (D.runs.length > 1) dropdown("other", "against", D.runs.slice(1).map((r, i) => [String(i + 1), r.label]));
    if (T.groups.length) dropdown("group", "group", [["", "every group"], ...T.groups.map((g, i) => [String(i), g])]);
    const ks = [...new Set(T.options.map((o) => o.length))].sort((a, b) => a - b);
    if (ks.length > 1) dropdown("k", "options", [["", "any number"], ...ks.map((k) => [String(k), k + " options"])]);
    const sorts = [["file", "log order"], ["margin-asc", "margin, lowest first"], ["margin-desc", "margin, highest first"]];
    if (D.runs.length > 1) sorts.push(["kl-desc", "KL, highest first"]);
    dropdown("sort", "sort", sorts);
    c.append(el("span", { id: "count", "data-count": "0" }), el("span", { class: "muted" }, el("kbd", { text: "j" }), " / ", el("kbd", { text: "k" }), " next / previous"));
    // What the marks before each task say: one per run, in the runs' order.
    const runs = D.runs.map((r, i) => r.label + (i === 0 && D.runs.length > 1 ? " (BASE)" : "")).join(", ");
    c.append(el("span", { id: "marks-legend", class: "muted", text: "marks: ✓ right, ✗ wrong, · not scored; one per run: " + runs }));
  }

  function syncControls() {
    if (!N) return;
    for (const id of ["filter", "run", "other", "group", "k", "sort", "below"]) {
      const e = document.getElementById(id);
      if (e && e.value !== state[id]) e.value = state[id];
    }
    const q = document.getElementById("q");
    if (q.value !== state.q) q.value = state.q;
  }

  const TO_WRONG = D.flip_kinds.indexOf("right_to_wrong"), TO_RIGHT = D.flip_kinds.indexOf("wrong_to_right");
  function matches() {
    const r = run(), o = other();
    const needle = state.q.trim().toLowerCase();
    if (needle && !lowered) lowered = T.question.map((q, i) => (q + "\n" + T.options[i].join("\n")).toLowerCase());
    const group = state.group === "" ? null : Number(state.group);
    const k = state.k === "" ? null : Number(state.k);
    const below = Number(state.below) * SCALE;
    const flips = D.runs.length > 1 ? D.runs[o].flips : null;
    let want = null;
    if (state.filter.startsWith("flip:")) want = D.flip_kinds.indexOf(state.filter.slice(5));
    const rows = [];
    for (let i = 0; i < N; i++) {
      if (group !== null && T.group[i] !== group) continue;
      if (k !== null && T.options[i].length !== k) continue;
      if (needle && !lowered[i].includes(needle)) continue;
      switch (state.filter) {
        case "right": if (!scored(r, i) || !right(r, i)) continue; break;
        case "wrong": if (!scored(r, i) || right(r, i)) continue; break;
        case "low-margin": if (!scored(r, i) || D.runs[r].margin[i] >= below) continue; break;
        case "flipped": if (!flips || i >= flips.length || (flips[i] !== TO_WRONG && flips[i] !== TO_RIGHT)) continue; break;
        default: if (want !== null && (!flips || i >= flips.length || flips[i] !== want)) continue;
      }
      rows.push(i);
    }
    if (state.sort === "margin-asc" || state.sort === "margin-desc") {
      const m = D.runs[r].margin, sign = state.sort === "margin-asc" ? 1 : -1;
      rows.sort((a, b) => sign * ((m[a] ?? SCALE) - (m[b] ?? SCALE)) || a - b);
    } else if (state.sort === "kl-desc" && D.runs.length > 1) {
      const kl = D.runs[o].kl;
      rows.sort((a, b) => (kl[b] ?? -1) - (kl[a] ?? -1) || a - b);
    }
    return rows;
  }

  function marks(row) {
    return D.runs.map((_, r) => (!scored(r, row) ? "·" : right(r, row) ? "✓" : "✗")).join("");
  }

  function renderMore(upTo) {
    const list = document.getElementById("task-list");
    const end = Math.min(order.length, Math.max(upTo, shown + PAGE));
    const fragment = document.createDocumentFragment();
    for (let j = shown; j < end; j++) {
      const i = order[j];
      const group = T.group[i] === null || T.group[i] === undefined ? "" : " [" + T.groups[T.group[i]] + "]";
      const li = el("li", { "data-row": i, id: "row-" + i }, el("span", { class: "marks", text: marks(i) }), "#" + T.index[i] + group + " " + T.question[i].slice(0, 160));
      if (i === selectedRow()) li.classList.add("selected");
      fragment.append(li);
    }
    list.append(fragment);
    shown = end;
  }

  function detail() {
    const d = document.getElementById("task-detail");
    d.replaceChildren();
    const i = selectedRow();
    if (i === undefined) {
      d.append(el("p", { class: "muted", text: order.length ? "Select a task (click, or j / k)." : "No task matches." }));
      return;
    }
    const at = order.indexOf(i);
    d.append(el("h2", { id: "detail-title", text: "Task " + T.index[i] + (at >= 0 ? " (" + (at + 1) + " of " + order.length + " shown)" : "") }));
    if (T.group[i] !== null && T.group[i] !== undefined) d.append(el("p", { class: "muted", text: "group: " + T.groups[T.group[i]] }));
    d.append(el("pre", { id: "question", text: T.question[i] }));
    // A VQA task's images, at the question's markers in order: thumbnails mcscore made (data: URIs).
    const images = T.task_images ? T.task_images[i] : [];
    if (images.length) {
      d.append(el("div", { id: "images" }, ...images.map((k, n) => {
        const image = T.images[k];
        const size = image.size ? image.size[0] + " × " + image.size[1] + " px, " : "";
        const caption = "image " + n + ": " + size + "sha256 " + image.sha256.slice(0, 12) + "…";
        // The whole sha256, as the log records it, on hover.
        if (!image.thumbnail) return el("p", { class: "muted", title: image.sha256, text: caption + " (no thumbnail: " + image.note + ")" });
        return el("figure", {}, el("img", { src: image.thumbnail, alt: "image " + n + " of task " + T.index[i] }), el("figcaption", { class: "muted", title: image.sha256, text: caption }));
      })));
    }
    D.runs.forEach((run, r) => {
      if (!scored(r, i)) { d.append(el("p", { class: "muted", text: run.label + ": not scored (its run stopped before this task)." })); return; }
      const head = ["option", "text", "tokens", ...D.normalisations.map((n) => "p " + n)];
      const body = T.options[i].map((text, k) => {
        const gold = T.answers[i].includes(k);
        const tr = el("tr", { class: gold ? "gold" : null },
          el("td", { class: "text", text: String.fromCharCode(65 + (k % 26)) + (gold ? " (gold)" : "") }),
          el("td", { class: "text option-text", text: text }),
          el("td", { text: String(run.tokens[i][k]) }),
          ...D.normalisations.map((_, n) => el("td", { class: run.picks[n][i] === k ? "pick" : null, text: prob(run.probabilities[n][i][k]) + (run.picks[n][i] === k ? " ◀" : "") })));
        return tr;
      });
      const status = right(r, i) ? el("span", { class: "right", text: "right" }) : el("span", { class: "wrong", text: "wrong" });
      const extra = [];
      if (r > 0 && run.flips && i < run.flips.length) extra.push(", " + D.flip_kinds[run.flips[i]].replaceAll("_", " ") + ", KL " + fmt(run.kl[i], 4) + " nats");
      d.append(el("h3", {}, run.label + ": ", status, " under " + D.normalisation + ", margin " + prob(run.margin[i]), ...extra));
      d.append(el("table", {}, el("thead", {}, el("tr", {}, ...head.map((h, c) => el("th", { class: c < 2 ? "text" : null, text: h })))), el("tbody", {}, ...body)));
    });
  }

  function select(row) {
    state.task = row === null ? "" : String(T.index[row]);
    writeHash();
    for (const e of document.querySelectorAll("#task-list li.selected")) e.classList.remove("selected");
    if (row !== null) {
      const at = order.indexOf(row);
      if (at >= shown) renderMore(at + 1);
      const li = document.getElementById("row-" + row);
      if (li) { li.classList.add("selected"); li.scrollIntoView({ block: "nearest" }); }
    }
    detail();
  }

  function step(by) {
    if (!order.length) return;
    const at = order.indexOf(selectedRow());
    const next = at < 0 ? (by > 0 ? 0 : order.length - 1) : Math.min(Math.max(at + by, 0), order.length - 1);
    select(order[next]);
  }

  function filterTasks() {
    const start = performance.now();
    order = matches();
    const list = document.getElementById("task-list");
    list.replaceChildren();
    shown = 0;
    renderMore(0);
    const count = document.getElementById("count");
    count.textContent = order.length + " of " + N + " tasks";
    count.setAttribute("data-count", String(order.length));
    window.mcscoreView.filterMs = performance.now() - start;
    window.mcscoreView.filters += 1;
  }

  function tasksView() {
    if (!N) return;
    controls();
    const list = document.getElementById("task-list");
    list.addEventListener("click", (e) => {
      const li = e.target.closest("li");
      if (li) select(Number(li.getAttribute("data-row")));
    });
    list.addEventListener("scroll", () => {
      if (list.scrollTop + list.clientHeight > list.scrollHeight - 200 && shown < order.length) renderMore(0);
    });
    document.addEventListener("keydown", (e) => {
      if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.ctrlKey || e.metaKey || e.altKey) return;
      if (state.view !== "tasks") return;
      if (e.key === "j") { step(1); e.preventDefault(); }
      else if (e.key === "k") { step(-1); e.preventDefault(); }
      else if (e.key === "/") { document.getElementById("q").focus(); e.preventDefault(); }
    });
  }

  // ---- sweep ----
  function sweep() {
    const s = document.getElementById("sweep");
    const w = D.sweep;
    if (!w) return;
    s.append(el("p", { class: "muted", text: w.file + ": " + w.tasks + " tasks, " + w.formats.length + " formats" + (w.circular ? ", every rotation (circular)" : "") + (w.pride_alpha ? ", PriDe with α = " + w.pride_alpha : "") }));
    // Accuracy in the original order always; circular accuracy beside it
    // only where some format has any (all 0.00 says nothing a table should).
    const known = (v) => v !== null && v !== undefined;
    const circularValues = w.circular ? w.models.flatMap((m) => m.formats.map((f) => f.circular_accuracy)).filter(known) : [];
    const kinds = [["accuracy", "original order", (f) => f.accuracy]];
    if (circularValues.some((v) => v > 0)) kinds.push(["circular", "circular", (f) => f.circular_accuracy]);
    const lo = {}, hi = {};
    for (const [key, , value] of kinds) {
      const all = w.models.flatMap((m) => m.formats.map(value)).filter(known);
      lo[key] = Math.min(...all);
      hi[key] = Math.max(...all);
    }
    s.append(el("h2", { text: "Accuracy (%) by format and model" + (kinds.length > 1 ? ": in the original order, and circular (right under every rotation)" : "") }));
    if (w.circular && kinds.length === 1 && circularValues.length) s.append(el("p", { class: "muted", text: "Circular accuracy is 0.00 % in every format: no task is right under every rotation." }));
    const head = el("tr", {}, el("th", { class: "text", text: "format" }));
    for (const m of w.models) for (const [, label] of kinds) head.append(el("th", { text: modelName(m.model) + (kinds.length > 1 ? " " + label : ""), title: m.model }));
    const heat = el("table", { class: "heat" }, el("thead", {}, head));
    const body = el("tbody");
    w.formats.forEach((name, f) => {
      const tr = el("tr", {}, el("td", { class: "text", text: name }));
      for (const m of w.models) {
        for (const [key, , value] of kinds) {
          const v = value(m.formats[f]);
          const td = el("td", { class: "cell", text: pct(v) });
          if (known(v)) {
            // Shaded within its kind: circular accuracy is lower than the original order's by construction.
            const t = hi[key] > lo[key] ? (v - lo[key]) / (hi[key] - lo[key]) : 0.5;
            td.style.backgroundColor = "hsl(" + Math.round(10 + 110 * t) + ", 65%, " + Math.round(88 - 18 * t) + "%)";
          }
          tr.append(td);
        }
      }
      body.append(tr);
    });
    heat.append(body);
    s.append(heat);
    if (w.comparison) {
      const c = w.comparison;
      s.append(el("h2", { text: "Rank reversals (ranked by " + c.ranked_by + ")" }));
      s.append(el("p", { text: "Share of (model pair, format pair) combinations whose order flips: " + fmt(100 * c.reversal_rate, 1) + " %; Kendall τ between formats: mean " + fmt(c.kendall_tau_mean, 3) + ", min " + fmt(c.kendall_tau_min, 3) + " (" + c.kendall_pairs + " format pairs)." }));
      s.append(table(["model pair", "formats where the first is ahead", "where the second is", "tied", "the format decides the winner"], c.pairs.map((p) => [modelName(w.models[p.a].model) + " vs " + modelName(w.models[p.b].model), String(p.a_ahead), String(p.b_ahead), String(p.tied), p.a_ahead > 0 && p.b_ahead > 0 ? "yes" : "no"])));
      s.append(table(["model", ...w.models.map((_, r) => "ranked " + (r + 1) + " by")], w.models.map((m, i) => [modelName(m.model), ...c.rank_distribution[i].map((n) => n + " formats")])));
    }
    s.append(el("h2", { text: "Position bias: how often each position is picked" + (w.pride_alpha ? " (blue: as scored; orange: after PriDe, on the debiased tasks)" : "") }));
    const bars = (counts, cls) => {
      const total = counts.reduce((a, b) => a + b, 0) || 1;
      const box = el("span", { class: "bar-box" });
      counts.forEach((n, pos) => {
        const b = el("span", { class: "bar" + (cls ? " " + cls : ""), title: String.fromCharCode(65 + pos) + ": " + fmt(100 * n / total, 1) + " %" });
        b.style.height = Math.round(48 * n / total) + "px";
        box.append(b);
      });
      return box;
    };
    const rows = [];
    for (const m of w.models) for (const f of m.formats) {
      const cell = el("span", {}, bars(f.picks, null));
      if (f.pride && f.pride.picks_after && f.pride.picks_after.length) cell.append(bars(f.pride.picks_before, null), bars(f.pride.picks_after, "after"));
      rows.push([modelName(m.model) + " · " + f.format, cell, fmt(points(f.rstd), 2), f.pia === null ? "–" : fmt(f.pia, 3), f.pride ? fmt(points(f.pride.rstd_before), 2) + " → " + fmt(points(f.pride.rstd_after), 2) : "–", f.pride ? pct(f.pride.accuracy_before) + " → " + pct(f.pride.accuracy_after) : "–"]);
    }
    s.append(table(["model · format", "picks per position (A, B, …)", "RStd", "PIA", "RStd with PriDe", "accuracy with PriDe (%)"], rows));
    const plots = el("div", { class: "plots" });
    for (const uri of PLOTS.sweep) plots.append(el("img", { src: uri, alt: "sweep plot" }));
    s.append(plots);
  }

  // ---- prompted schemes ----
  function schemes() {
    const s = document.getElementById("schemes");
    const r = D.schemes;
    if (!r) return;
    s.append(el("p", { class: "muted", text: r.file + ": " + r.tasks + " tasks, each response mode prompted" + (r.reasoning ? " with reasoning" : " under its grammar") + ", beside the same rule on the log-probabilities; 95 % bootstrap intervals (" + r.resamples + " resamples). NR in %, the others in points per task; r: Pearson's r of the task scores." }));
    const score = (f, e) => (f.mode === "NR" || f.mode === "NR-Var" ? pct(e.mean) + " % " + interval(points(e.low), points(e.high), 1) : fmt(e.mean, 3) + " " + interval(e.low, e.high, 3));
    for (const m of r.models) {
      s.append(el("h2", { text: m.label }));
      s.append(table(["scheme", "prompted", "log-probability", "r with NR", "r with log-probability", "read strict / loose / forced / unparsed", "median tokens in / out"],
        m.modes.map((f) => [f.mode, score(f, f.prompted), score(f, f.logprob), fmt(f.agreement_with_nr, 2), fmt(f.agreement_with_logprob, 2),
          [f.parses.strict, f.parses.loose, f.parses.forced, f.parses.unparsed].join(" / "), fmt(f.median_input_tokens, 1) + " / " + fmt(f.median_output_tokens, 1)])));
      const b = m.behaviour;
      const parts = [];
      if (b.abstention_rate !== null) parts.push("NM abstains on " + pct(b.abstention_rate) + " %");
      if (b.mean_eliminated !== null) parts.push("Elim removes " + fmt(b.mean_eliminated, 2) + " options per task, the key in " + pct(b.key_eliminated_rate) + " %");
      if (b.confidence_histogram !== null) parts.push("CBM confidence 1/2/3: " + b.confidence_histogram.map((x) => pct(x)).join(" / ") + " %");
      if (b.mean_attempts !== null) parts.push("AUC finds the key at attempt " + fmt(b.mean_attempts, 2) + " on average");
      if (parts.length) s.append(el("p", { text: "Behaviour: " + parts.join("; ") + "." }));
    }
    if (r.rankings.length) {
      s.append(el("h2", { text: "Ranks per scheme (1 = best) and Spearman ρ with NR's ranking ± bootstrap SE" }));
      s.append(table(["scheme", ...r.models.map((m) => m.label), "ρ with NR"],
        r.rankings.map((k) => [k.mode, ...k.ranks.map((x) => fmt(x, 1)), k.spearman_vs_nr === null ? "undefined" : fmt(k.spearman_vs_nr, 3) + (k.spearman_se === null ? "" : " ± " + fmt(k.spearman_se, 3))])));
    }
  }

  // ---- views ----
  function update() {
    syncControls();
    for (const id of ["scores", "compare", "tasks", "sweep", "schemes"]) {
      document.getElementById(id).hidden = id !== state.view;
      const a = document.getElementById("nav-" + id);
      if (a) a.classList.toggle("current", id === state.view);
    }
    writeHash();
    window.mcscoreView.updates += 1;
    if (state.view === "tasks" && N) {
      filterTasks();
      const row = selectedRow();
      if (row !== undefined) select(row); else detail();
    }
  }

  window.mcscoreView = { readyMs: null, filterMs: null, filters: 0, updates: 0 };
  readHash();
  // A section that cannot be drawn says so, in the page and the console,
  // and the others are still drawn.
  for (const [id, draw] of [["answer", header], ["scores", scores], ["compare", compare], ["tasks", tasksView], ["sweep", sweep], ["schemes", schemes]]) {
    try {
      draw();
    } catch (error) {
      document.getElementById(id).append(el("p", { class: "wrong", text: "mcscore view could not draw this part of the page: " + error }));
      console.error(error);
    }
  }
  window.addEventListener("hashchange", () => { readHash(); update(); });
  update();
  window.mcscoreView.readyMs = performance.now();
})();
