// The daemon's dashboard: polls /dashboard/state about once a second and redraws what
// changed. The plan comes only when its version changed; the line at now moves every poll.
"use strict";
(function () {
  const POLL_MS = 1000;
  const $ = (id) => document.getElementById(id);
  let version = null;
  let plan = null;
  let now = null;
  let stopped = false;

  function text(tag, content, cls) {
    const el = document.createElement(tag);
    el.textContent = content == null ? "" : String(content);
    if (cls) el.className = cls;
    return el;
  }

  function status(what, cls) {
    const el = $("status");
    el.textContent = what;
    el.className = "status " + (cls || "");
  }

  function shortTime(iso) {
    return iso ? iso.replace("T", " ").replace("Z", "") : "–";
  }

  // --------------------------------------------------------------------- counters
  function card(label, value, id) {
    const c = text("div", "", "card");
    if (id) c.id = id;
    c.appendChild(text("div", label, "label"));
    c.appendChild(text("div", value, "value"));
    return c;
  }

  // a panel is redrawn only when its data changed (the page polls every second)
  const shown = {};
  function changed(panel, data) {
    const key = JSON.stringify(data);
    if (shown[panel] === key) return false;
    shown[panel] = key;
    return true;
  }

  function counters(state) {
    if (!changed("counters", [state.counters, state.power && [state.power.now_watts,
                                                              state.power.energy_joules]])) {
      return;
    }
    const box = $("counters");
    box.replaceChildren();
    const leases = state.counters.leases;
    const running = ["active", "suspending", "resuming", "migrating"]
      .reduce((s, k) => s + (leases[k] || 0), 0);
    box.appendChild(card("running", running, "count-running"));
    box.appendChild(card("queued", (leases.queued || 0) + (leases.held || 0), "count-queued"));
    box.appendChild(card("planned", leases.scheduled || 0, "count-planned"));
    box.appendChild(card("suspended", leases.suspended || 0, "count-suspended"));
    box.appendChild(card("done", leases.done || 0, "count-done"));
    box.appendChild(card("rejected", leases.rejected || 0, "count-rejected"));
    box.appendChild(card("failed / cancelled",
                         (leases.failed || 0) + " / " + (leases.cancelled || 0), "count-failed"));
    for (const [name, use] of Object.entries(state.counters.utilisation)) {
      box.appendChild(card(name + " in use", (100 * use).toFixed(1) + " %",
                           "use-" + name.toLowerCase()));
    }
    if (state.power) {
      box.appendChild(card("power now", (state.power.now_watts / 1000).toFixed(2) + " kW",
                           "power-now"));
      box.appendChild(card("energy so far",
                           (state.power.energy_joules / 3.6e6).toFixed(3) + " kWh", "energy"));
    }
  }

  // -------------------------------------------------------------------------- plan
  // The Gantt chart is LMGantt's (gantt.js, shared with `report --html`), on a date axis in
  // UTC: bar times are given from an origin (the daemon's clock when the plan was drawn) and
  // ``options.epoch`` says what that origin is.
  const when = (t) => new Date(t * 1000).toISOString().slice(0, 19).replace("T", " ");
  const NODE_STATE = {off: "off", boot: "booting", shutdown: "shutting down"};
  let origin = null;

  // The daemon's compact plan as LMGantt takes it: one object a bar with its hover text,
  // times from ``origin``; a bar with no end (a lease of unlimited length, a node off with
  // no boot planned) is drawn to a quarter of the plan's span past its last end.
  function expand(compact, origin) {
    const names = compact.nodes, leases = compact.leases;
    let last = now;
    for (const b of compact.bars) if (b[3] != null && b[3] > last) last = b[3];
    for (const b of compact.node_bars) if (b[2] != null && b[2] > last) last = b[2];
    const open = last + Math.max(3600, 0.25 * (last - now));
    const bars = [];
    for (const [id, node, start, end, kind] of compact.bars) {
      const l = leases[id];
      bars.push({lease: id, node: node, start: start - origin,
                 end: (end == null ? open : end) - origin, kind: kind, type: l.type,
                 state: l.state,
                 hover: "lease " + id + (l.name ? " \u201c" + l.name + "\u201d" : "") +
                   " (" + l.type + ", " + l.state + ")\n" + l.what + "\n" + kind + " " +
                   when(start) + (end == null ? ", no end" : " \u2192 " + when(end)) +
                   " UTC\non " + names[node]});
    }
    for (const [node, start, end, kind] of compact.node_bars) {
      // (lease "": LMGantt labels a bar with its lease, and these have none)
      bars.push({lease: "", node: node, start: start - origin,
                 end: (end == null ? open : end) - origin, kind: kind, type: null,
                 state: NODE_STATE[kind],
                 hover: names[node] + ": " + NODE_STATE[kind] + " from " + when(start) +
                   (end == null ? " UTC (no boot planned)" : " to " + when(end) + " UTC")});
    }
    return {nodes: names, bars: bars};
  }
  window.lmExpand = expand;     // (for bench/dashboard.py)

  function drawPlan() {
    if (!window.LMGantt || !plan) return;
    origin = now;
    const p = Object.assign(expand(plan, origin), {now: 0, colour_by: $("colour-by").value});
    const div = $("gantt");
    if (window.lmFirstDrawMs == null) performance.mark("lm-first-expanded");
    window.LMGantt.draw(div, p, {onClick: showLease, epoch: origin}).then(() => {
      if (window.lmFirstDrawMs == null) {
        performance.mark("lm-first-drawn");
        window.lmFirstDrawMs = performance.now();
      }
    });
  }

  function moveNow() {
    const div = $("gantt");
    if (!plan || !div.__lmGantt || !div.layout || !div.layout.shapes.length) return;
    const x = now * 1000;                    // (ms since 1970 on the date axis)
    Plotly.relayout(div, {"shapes[0].x0": x, "shapes[0].x1": x, "annotations[0].x": x});
  }

  // ------------------------------------------------------------------------- queue
  function queue(q) {
    if (!changed("queue", q)) return;
    const body = $("queue").tBodies[0];
    body.replaceChildren();
    for (const r of q.rows) {
      const tr = document.createElement("tr");
      tr.dataset.lease = r.id;
      tr.appendChild(text("td", r.position == null ? "planned" : r.position, "num"));
      const lease = text("td", r.id, "nowrap");
      if (r.name) lease.appendChild(text("span", r.name, "name"));
      tr.appendChild(lease);
      tr.appendChild(text("td", r.type, "nowrap"));
      tr.appendChild(text("td", r.state, "nowrap"));
      tr.appendChild(text("td", r.vms, "num"));
      tr.appendChild(text("td", r.duration, "nowrap"));
      tr.appendChild(text("td", r.reason, "reason"));
      tr.addEventListener("click", () => showLease(r.id));
      body.appendChild(tr);
    }
    if (!q.rows.length) {
      const tr = document.createElement("tr");
      const td = text("td", "nothing waits", "hint");
      td.colSpan = 7;
      tr.appendChild(td);
      body.appendChild(tr);
    }
    const shown = q.rows.length;
    const all = q.waiting + q.planned;
    $("queue-count").textContent = q.waiting + " waiting, " + q.planned + " planned" +
      (shown < all ? " (the first " + shown + " shown)" : "");
  }

  // ------------------------------------------------------------------------- nodes
  function nodes(n) {
    const grid = $("node-grid");
    if (grid.children.length !== n.names.length) {
      grid.replaceChildren();
      for (let i = 0; i < n.names.length; i++) grid.appendChild(text("div", "", "node"));
    }
    for (let i = 0; i < n.names.length; i++) {
      const el = grid.children[i];
      const s = n.state[i];
      el.className = "node " + s.replace(" ", "-") + (n.busy[i] ? " busy" : "");
      el.title = n.names[i] + ": " + s + (s !== "on" ? "" : n.busy[i] ? ", in use" : ", idle");
    }
    const c = n.counts;
    $("node-count").textContent = c.on + " on, " + c.off + " off, " + c.booting +
      " booting, " + c["shutting down"] + " shutting down";
  }

  // ------------------------------------------------------------------------- power
  let powerDrawn = false;
  function power(p) {
    if (!p) return;
    $("power-panel").hidden = false;
    const ms = (t) => t * 1000;
    const traces = [{type: "scatter", mode: "lines", line: {shape: "hv", color: "#1d2430"},
                     name: "IT power", x: p.times.map(ms), y: p.watts,
                     hovertemplate: "%{y:.0f} W<extra>power</extra>"}];
    if (p.green) traces.push({type: "scatter", mode: "lines", fill: "tozeroy",
                              line: {shape: "hv", color: "#2ca02c", width: 1},
                              fillcolor: "rgba(44,160,44,0.18)", name: "green production",
                              x: p.grid.map(ms), y: p.green});
    if (p.cap) traces.push({type: "scatter", mode: "lines", name: "power cap",
                            line: {shape: "hv", color: "#b42318", dash: "dash"},
                            x: p.grid.map(ms), y: p.cap});
    const layout = {height: 260, margin: {l: 55, r: 10, t: 10, b: 40},
                    xaxis: {type: "date"}, yaxis: {title: {text: "W"}, rangemode: "tozero"},
                    legend: {orientation: "h", y: -0.25},
                    shapes: [{type: "line", xref: "x", yref: "paper", x0: ms(now), x1: ms(now),
                              y0: 0, y1: 1, line: {color: "#b42318", width: 1.5}}]};
    if (!powerDrawn) {
      Plotly.newPlot($("power"), traces, layout, {displayModeBar: false, responsive: true});
      powerDrawn = true;
    } else {
      Plotly.react($("power"), traces, layout);
    }
  }

  // ------------------------------------------------------------------- lease detail
  async function showLease(id) {
    if (id == null || id === "") return;    // a node's power state: no lease
    const answer = await fetch("/dashboard/lease/" + encodeURIComponent(id),
                               {cache: "no-store", credentials: "same-origin"});
    if (!answer.ok) return;
    const l = await answer.json();
    $("lease-detail").hidden = false;
    $("lease-title").textContent = "Lease " + l.id + " (" + l.type + "): " + l.state;
    $("lease-summary").textContent = (l.reason ? l.reason + ". " : "") + "History from its " +
      l.source + ".";
    const body = $("lease-history").tBodies[0];
    body.replaceChildren();
    for (const h of l.history) {
      const tr = document.createElement("tr");
      tr.appendChild(text("td", shortTime(h.time)));
      tr.appendChild(text("td", h.text));
      body.appendChild(tr);
    }
    $("lease-detail").scrollIntoView({block: "nearest"});
  }

  // -------------------------------------------------------------------------- poll
  async function poll() {
    if (stopped) return;
    try {
      const answer = await fetch("/dashboard/state" +
                                 (version ? "?since=" + encodeURIComponent(version) : ""),
                                 {cache: "no-store", credentials: "same-origin"});
      if (answer.status === 401) {
        stopped = true;
        status("signed out: run `lease-manager dashboard` for a new link", "lost");
        return;
      }
      if (!answer.ok) throw new Error("HTTP " + answer.status);
      const state = await answer.json();
      if (!plan) performance.mark("lm-first-state");
      now = state.now;
      $("clock").textContent = shortTime(state.now_text) + " UTC" +
        (state.speedup !== 1 ? " (×" + state.speedup + ")" : "");
      counters(state);
      queue(state.queue);
      nodes(state.nodes);
      power(state.power);
      if (!plan) performance.mark("lm-first-panels");
      if (state.plan) {
        plan = state.plan;
        version = state.version;
        drawPlan();
      } else {
        moveNow();
      }
      document.body.dataset.version = version;
      status("live", "live");
    } catch (err) {
      status("connection lost, retrying…", "lost");
    }
    setTimeout(poll, POLL_MS);
  }

  $("colour-by").addEventListener("change", drawPlan);
  $("lease-close").addEventListener("click", () => { $("lease-detail").hidden = true; });
  poll();
})();
