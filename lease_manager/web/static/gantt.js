/* The Gantt chart of a plan, drawn with Plotly: shared by `report --html` and the dashboard.
 *
 *   LMGantt.draw(div, plan, options) -> Promise (Plotly.react's)
 *
 * plan = {nodes: [label, ...]  (rows, top to bottom),
 *         now: seconds or null (a vertical line "now"),
 *         bars: [{lease, node (index into nodes), start, end (seconds), kind, type, state,
 *                 hover}, ...],
 *         colour_by: "type" (default) or "state"}
 * options = {onClick: function (leaseId) {...},   // a click on a bar
 *            unit: "auto" (default) | "s" | "min" | "h" | "day",  // of the time axis
 *            origin: "...",      // what time 0 is, in the axis title: "time (hours from ...)"
 *            epoch: seconds,     // or: time 0 as Unix time, for a date axis (UTC) instead
 *            title: "...", height: pixels}          // optional
 *
 * Speed: the bars of a colour are one trace, one SVG path of filled rectangles (fill
 * "toself", the rectangles separated by null points), so 10,000 leases on 1,000 nodes cost a
 * few paths, not tens of thousands of shapes. Consecutive rows of one lease in one phase are
 * merged into one rectangle first. Hover and click do not use Plotly's hover (it would need
 * a point a bar): the pointer's position is turned into (time, row) through the axes and the
 * few rectangles of that row are searched, so every point of a bar answers.
 *
 * LMGantt.expand(compact) turns the smaller form gantt_plan.compact writes into a plan.
 *
 * After a draw, div.__lmGantt.blocks holds the rectangles drawn ({bar, x0, x1, first, last}).
 */
(function (global) {
  "use strict";

  // Okabe and Ito's colour-blind safe palette, as the PNG Gantt chart (experiments/gantt.py)
  var TYPE_COLOURS = {
    "best-effort": "#56b4e9", "advance-reservation": "#e69f00",
    "immediate": "#009e73", "deadline": "#cc79a7"
  };
  var STATE_COLOURS = {
    "queued": "#bbbbbb", "pending": "#bbbbbb", "scheduled": "#56b4e9",
    "active": "#009e73", "running": "#009e73", "suspended": "#f0e442",
    "done": "#0072b2", "rejected": "#d55e00", "cancelled": "#cc79a7",
    "failed": "#d55e00", "unfinished": "#e69f00"
  };
  var OTHER_COLOUR = "#999999";
  // phases other than running and reserved time have colours of their own, whatever colour_by
  var KIND_COLOURS = {
    "suspend": "#555555", "resume": "#8c8c8c", "transfer": "#9467bd",
    "migrate": "#8c564b", "boot": "#f2a900", "shutdown": "#d9534f", "off": "#d0d0d0"
  };
  var KIND_ORDER = ["run", "reserved", "suspend", "resume", "transfer", "migrate", "boot",
                    "shutdown", "off"];
  var UNITS = {"s": [1, "seconds"], "min": [60, "minutes"], "h": [3600, "hours"],
               "day": [86400, "days"]};

  function pickUnit(bars, now, unit) {
    if (unit && unit !== "auto" && UNITS[unit]) return unit;
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < bars.length; i++) {
      if (bars[i].start < lo) lo = bars[i].start;
      if (bars[i].end > hi) hi = bars[i].end;
    }
    if (now !== null && now !== undefined) { lo = Math.min(lo, now); hi = Math.max(hi, now); }
    var span = hi > lo ? hi - lo : 0;
    if (span >= 4 * 86400 * 4) return "day";
    if (span >= 3 * 3600) return "h";
    if (span >= 3 * 60) return "min";
    return "s";
  }

  function colourOf(bar, by) {
    if (bar.kind !== "run" && bar.kind !== "reserved" && KIND_COLOURS[bar.kind]) {
      return {key: bar.kind, name: bar.kind, colour: KIND_COLOURS[bar.kind]};
    }
    var value = by === "state" ? bar.state : bar.type;
    var table = by === "state" ? STATE_COLOURS : TYPE_COLOURS;
    var name = value || "(none)";
    var key = value;
    if (bar.kind === "reserved") { key = "reserved:" + value; name = name + ", reserved ahead"; }
    return {key: key, name: name, colour: table[value] || OTHER_COLOUR,
            reserved: bar.kind === "reserved"};
  }

  // the bars of one lease in one phase on consecutive rows, as one rectangle each
  function mergeRows(bars) {
    var order = bars.map(function (_, i) { return i; });
    order.sort(function (a, b) {
      var p = bars[a], q = bars[b];
      return (p.lease < q.lease ? -1 : p.lease > q.lease ? 1 : 0) ||
        (p.start - q.start) || (p.end - q.end) ||
        (p.kind < q.kind ? -1 : p.kind > q.kind ? 1 : 0) || (p.node - q.node);
    });
    var out = [];
    var last = null;
    for (var k = 0; k < order.length; k++) {
      var b = bars[order[k]];
      if (last && last.bar.lease === b.lease && last.bar.start === b.start &&
          last.bar.end === b.end && last.bar.kind === b.kind && last.bar.state === b.state &&
          last.last + 1 === b.node) {
        last.last = b.node;
        last.count += 1;
        continue;
      }
      last = {bar: b, first: b.node, last: b.node, count: 1};
      out.push(last);
    }
    return out;
  }

  function tickRows(nodes) {
    var n = nodes.length;
    var step = Math.max(1, Math.ceil(n / 40));
    var vals = [], text = [];
    for (var i = 0; i < n; i += step) { vals.push(i); text.push(String(nodes[i])); }
    return {vals: vals, text: text};
  }

  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c];
    });
  }

  // the hover box and the click, found from the pointer's position: the rectangles of the
  // row under the pointer (a few a row) are searched, so any point of a bar answers
  function attachPointer(div) {
    var tip = document.createElement("div");
    tip.className = "lm-gantt-tip";
    tip.style.cssText = "position:fixed;display:none;pointer-events:none;z-index:1000;" +
      "background:rgba(255,255,255,0.96);border:1px solid #444;border-radius:3px;" +
      "padding:4px 6px;font:12px sans-serif;white-space:pre;max-width:480px;" +
      "box-shadow:0 1px 4px rgba(0,0,0,0.25)";
    document.body.appendChild(tip);
    var down = null;
    function blockAt(event) {
      var state = div.__lmGantt, full = div._fullLayout;
      if (!state || !full || !full.xaxis || !full.yaxis) return null;
      var box = div.getBoundingClientRect();
      var xa = full.xaxis, ya = full.yaxis;
      var px = event.clientX - box.left - xa._offset, py = event.clientY - box.top - ya._offset;
      if (px < 0 || py < 0 || px > xa._length || py > ya._length) return null;
      var x = xa.p2l(px), y = ya.p2l(py);   // linear values: ms on a date axis
      var list = state.rows[Math.round(y)];
      if (!list) return null;
      for (var i = list.length - 1; i >= 0; i--) {   // the one drawn last is on top
        var blk = state.blocks[list[i]];   // its rectangle: from row first - 0.4 to last + 0.4
        if (blk.x0 <= x && x <= blk.x1 && blk.first - 0.4 <= y && y <= blk.last + 0.4) {
          return blk;
        }
      }
      return null;
    }
    div.addEventListener("mousemove", function (event) {
      var blk = blockAt(event);
      if (!blk) { tip.style.display = "none"; div.style.cursor = ""; return; }
      tip.innerHTML = esc(blk.bar.hover || ("lease " + blk.bar.lease));
      tip.style.display = "block";
      var left = event.clientX + 14, top = event.clientY + 14;
      if (left + tip.offsetWidth > window.innerWidth) left = event.clientX - tip.offsetWidth - 8;
      if (top + tip.offsetHeight > window.innerHeight) top = event.clientY - tip.offsetHeight - 8;
      tip.style.left = left + "px";
      tip.style.top = top + "px";
      div.style.cursor = div.__lmGanttOnClick ? "pointer" : "";
    });
    div.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    div.addEventListener("mousedown", function (event) {
      down = [event.clientX, event.clientY];
    });
    div.addEventListener("click", function (event) {
      var moved = down && (Math.abs(event.clientX - down[0]) + Math.abs(event.clientY - down[1]) > 4);
      down = null;
      if (moved || !div.__lmGanttOnClick) return;   // a zoom drag is not a click
      var blk = blockAt(event);
      if (blk) div.__lmGanttOnClick(blk.bar.lease);
    });
  }

  function draw(div, plan, options) {
    options = options || {};
    if (typeof div === "string") div = document.getElementById(div);
    var bars = plan.bars || [];
    var nodes = plan.nodes || [];
    var by = plan.colour_by === "state" ? "state" : "type";
    var now = plan.now === undefined ? null : plan.now;
    var unit = pickUnit(bars, now, options.unit);
    var scale = UNITS[unit][0];
    var epoch = typeof options.epoch === "number" ? options.epoch : null;
    // x in the axis' units: the unit picked, or ms since 1970 on a date axis (options.epoch)
    function toX(t) { return epoch === null ? t / scale : (epoch + t) * 1000; }
    var merged = mergeRows(bars);
    var groups = {}, order = [];
    var blocks = [], rows = [];
    var labels = merged.length <= 80;
    var lx = [], ly = [], ltext = [];
    for (var i = 0; i < merged.length; i++) {
      var m = merged[i], b = m.bar;
      var c = colourOf(b, by);
      var g = groups[c.key];
      if (!g) {
        g = groups[c.key] = {c: c, kind: b.kind, x: [], y: []};
        order.push(c.key);
      }
      var x0 = toX(b.start), x1 = toX(b.end);
      var y0 = m.first - 0.4, y1 = m.last + 0.4;
      g.x.push(x0, x1, x1, x0, x0, null);
      g.y.push(y0, y0, y1, y1, y0, null);
      blocks.push({bar: b, x0: x0, x1: x1, first: m.first, last: m.last});
      for (var r = m.first; r <= m.last; r++) (rows[r] = rows[r] || []).push(i);
      if (labels) {
        lx.push((x0 + x1) / 2);
        ly.push((m.first + m.last) / 2);
        ltext.push(String(b.lease));
      }
    }
    order.sort(function (a, b) {
      var ka = KIND_ORDER.indexOf(groups[a].kind), kb = KIND_ORDER.indexOf(groups[b].kind);
      return ka - kb || (a < b ? -1 : a > b ? 1 : 0);
    });
    // outlines tell touching bars apart; past a few thousand bars they cost more than they show
    var outline = merged.length <= 4000;
    var traces = order.map(function (key) {
      var g = groups[key];
      return {
        type: "scatter", mode: outline ? "lines" : "none", fill: "toself", x: g.x, y: g.y,
        name: g.c.name, legendgroup: key, hoverinfo: "skip",
        fillcolor: g.c.colour, opacity: g.c.reserved ? 0.5 : 0.9,
        line: {color: "rgba(0,0,0,0.6)", width: 0.7}
      };
    });
    if (labels && lx.length) {
      traces.push({type: "scatter", mode: "text", x: lx, y: ly, text: ltext,
                   textfont: {size: 11, color: "#000"}, hoverinfo: "skip",
                   showlegend: false, name: "lease ids"});
    }
    var ticks = tickRows(nodes);
    var shapes = [], annotations = [];
    if (now !== null) {
      shapes.push({type: "line", xref: "x", yref: "paper", x0: toX(now), x1: toX(now),
                   y0: 0, y1: 1, line: {color: "#d62728", width: 2, dash: "dash"}});
      annotations.push({x: toX(now), y: 1, xref: "x", yref: "paper", text: "now",
                        showarrow: false, yanchor: "top", xanchor: "left", xshift: 3,
                        bgcolor: "rgba(255,255,255,0.8)", font: {color: "#d62728"}});
    }
    var nrows = Math.max(nodes.length, 1);
    var layout = {
      title: options.title ? {text: options.title, x: 0.01, xanchor: "left", yref: "container",
                              y: 1, yanchor: "top", pad: {t: 8}} : undefined,
      height: options.height || Math.min(900, Math.max(320, 160 + nrows * 26)),
      margin: {l: 90, r: 20, t: options.title ? 84 : 44, b: 50},
      xaxis: {title: {text: epoch !== null ? "time (UTC)" : "time (" + UNITS[unit][1] +
                      (options.origin ? " from " + options.origin : "") + ")"},
              type: epoch !== null ? "date" : "linear", zeroline: false,
              showgrid: true, gridcolor: "#e5e5e5"},
      yaxis: {title: {text: "node"}, tickmode: "array", tickvals: ticks.vals,
              ticktext: ticks.text, range: [nrows - 0.5, -0.5], zeroline: false,
              showgrid: false},
      hovermode: false, dragmode: "zoom", showlegend: true,
      // the legend just above the chart (the title, if any, above it; "now" inside)
      legend: {orientation: "h", x: 0, xanchor: "left", y: 1, yanchor: "bottom",
               font: {size: 12}},
      shapes: shapes, annotations: annotations,
      plot_bgcolor: "#ffffff", paper_bgcolor: "#ffffff"
    };
    div.__lmGantt = {blocks: blocks, rows: rows, unit: unit};
    div.__lmGanttOnClick = options.onClick || null;
    if (!div.__lmGanttPointer) {
      div.__lmGanttPointer = true;
      attachPointer(div);
    }
    return global.Plotly.react(div, traces, layout, {responsive: true, displaylogo: false});
  }

  // a plan written with one entry a lease and phase (as gantt_plan.compact writes it, to keep
  // a page small: the bars of a lease on 64 nodes share one hover text) as a plan
  function expand(compact) {
    var keys = compact.keys, bars = [];
    for (var i = 0; i < compact.items.length; i++) {
      var item = compact.items[i], rows = item[keys.length];
      for (var k = 0; k < rows.length; k++) {
        var bar = {node: rows[k]};
        for (var j = 0; j < keys.length; j++) bar[keys[j]] = item[j];
        bars.push(bar);
      }
    }
    return {nodes: compact.nodes, now: compact.now, colour_by: compact.colour_by, bars: bars};
  }

  global.LMGantt = {draw: draw, expand: expand, TYPE_COLOURS: TYPE_COLOURS, STATE_COLOURS: STATE_COLOURS,
                    KIND_COLOURS: KIND_COLOURS};
})(typeof window !== "undefined" ? window : this);
