// A Gantt chart of a plan (nodes by time) drawn with Plotly: one horizontal bar trace per
// colour, so that thousands of bars stay a handful of traces. LMPlanGantt.draw(div, plan,
// options) takes the plan the daemon's dashboard sends (bars of leases and of node power
// states, times in seconds since 1970); options.onClick(leaseId) is called on a click.
"use strict";
window.LMPlanGantt = (function () {
  const TYPE = {"best-effort": "#0072B2", "advance-reservation": "#E69F00",
                "immediate": "#009E73", "deadline": "#CC79A7"};
  const STATE = {"active": "#009E73", "scheduled": "#56B4E9", "suspending": "#D55E00",
                 "suspended": "#8C8C8C", "resuming": "#F0E442", "migrating": "#CC79A7",
                 "queued": "#B0B0B0", "done": "#0072B2", "failed": "#B42318",
                 "cancelled": "#6E6E6E", "rejected": "#6E6E6E"};
  // kinds that have a colour of their own whatever the colouring
  const KIND = {"suspend": ["#D55E00", "suspending"], "resume": ["#F0E442", "resuming"],
                "migrate": ["#8C564B", "migrating"], "transfer": ["#7F7F7F", "image transfer"],
                "boot": ["#F0C419", "node booting"], "shutdown": ["#E07B39", "node shutting down"],
                "off": ["#C8CDD2", "node off"]};

  function draw(div, plan, options) {
    const ms = (t) => t * 1000;
    const now = plan.now;
    let lo = Infinity, hi = -Infinity;
    for (const b of plan.bars) {
      if (b.start < lo) lo = b.start;
      if (b.end != null && b.end > hi) hi = b.end;
    }
    if (now != null) { lo = Math.min(lo, now); hi = Math.max(hi, now); }
    if (!isFinite(lo)) { lo = 0; hi = 3600; }
    if (hi - lo < 600) hi = lo + 600;
    const openEnd = hi + 0.25 * (hi - lo);     // where bars without an end are drawn to
    const colourBy = plan.colour_by === "state" ? "state" : "type";
    const palette = colourBy === "state" ? STATE : TYPE;
    const groups = new Map();
    for (const b of plan.bars) {
      const own = KIND[b.kind];
      const value = b[colourBy] || "";
      const key = own ? b.kind : value + (b.kind === "reserved" ? " (reserved ahead)" : "");
      let g = groups.get(key);
      if (!g) {
        g = {name: own ? own[1] : key, colour: own ? own[0] : (palette[value] || "#999"),
             ahead: b.kind === "reserved", y: [], base: [], x: [], text: [], ids: []};
        groups.set(key, g);
      }
      const end = b.end == null ? openEnd : b.end;
      g.y.push(plan.nodes[b.node]);
      g.base.push(ms(b.start));
      g.x.push(ms(end - b.start));
      g.text.push(b.hover);
      g.ids.push(b.lease);
    }
    const traces = [];
    for (const g of groups.values()) {
      traces.push({type: "bar", orientation: "h", name: g.name, y: g.y, base: g.base, x: g.x,
                   hovertext: g.text, hoverinfo: "text", customdata: g.ids, width: 0.8,
                   opacity: g.ahead ? 0.7 : 1,
                   marker: {color: g.colour, line: {width: g.ahead ? 1 : 0, color: g.colour},
                            pattern: g.ahead ? {shape: "/", fillmode: "overlay", size: 8,
                                                fgcolor: "rgba(255,255,255,0.7)",
                                                solidity: 0.35} : {shape: ""}}});
    }
    const n = plan.nodes.length;
    const layout = {
      barmode: "overlay", hovermode: "closest", uirevision: "plan",
      height: Math.max(240, Math.min(720, 90 + 22 * n)),
      margin: {l: 80, r: 20, t: 10, b: 40},
      xaxis: {type: "date"},
      yaxis: {type: "category", categoryorder: "array", categoryarray: plan.nodes,
              range: [n - 0.5, -0.5], automargin: true},
      legend: {orientation: "h", y: 1.02, yanchor: "bottom", x: 0, xanchor: "left"},
      shapes: now == null ? [] : [{type: "line", xref: "x", yref: "paper", x0: ms(now),
                                   x1: ms(now), y0: 0, y1: 1,
                                   line: {color: "#B42318", width: 2}}],
      annotations: now == null ? [] : [{x: ms(now), y: 1, xref: "x", yref: "paper",
                                        text: "now", showarrow: false, yanchor: "top",
                                        xanchor: "left", xshift: 3,
                                        bgcolor: "rgba(255,255,255,0.8)",
                                        font: {color: "#B42318"}}],
    };
    if (!plan.bars.length) layout.xaxis.range = [ms(lo), ms(hi)];
    Plotly.react(div, traces, layout, {displaylogo: false, responsive: true});
    div._lmOptions = options || {};
    if (!div._lmClick) {
      div.on("plotly_click", (event) => {
        const id = event.points && event.points[0] && event.points[0].customdata;
        if (id != null && div._lmOptions.onClick) div._lmOptions.onClick(id);
      });
      div._lmClick = true;
    }
  }

  function moveNow(div, now) {
    if (!div.layout || !div.layout.shapes || !div.layout.shapes.length) return;
    Plotly.relayout(div, {"shapes[0].x0": now * 1000, "shapes[0].x1": now * 1000,
                          "annotations[0].x": now * 1000});
  }

  return {draw: draw, moveNow: moveNow};
})();
