/* The page of `lease-manager report DIR --html`: draws its Plotly figures and its Gantt chart
 * and makes its tables sortable and filterable. Everything it shows is in the page's JSON
 * (<script type="application/json" id="lm-data">); nothing is fetched.
 */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("lm-data").textContent);
  var CONFIG = {responsive: true, displaylogo: false};
  var PAGE = 500;   // table rows shown at once

  // a trace given as "rects" ([[from, to, row], ...], figures.node_states) as a filled path
  function withRects(trace) {
    if (!trace.rects) return trace;
    var x = [], y = [];
    trace.rects.forEach(function (r) {
      var lo = r[2] - 0.4, hi = r[2] + 0.4;
      x.push(r[0], r[1], r[1], r[0], r[0], null);
      y.push(lo, lo, hi, hi, lo, null);
    });
    var out = Object.assign({}, trace, {x: x, y: y});
    delete out.rects;
    return out;
  }

  function drawFigures() {
    return (data.figures || []).map(function (f) {
      var div = document.getElementById(f.id);
      return div ? Plotly.newPlot(div, f.figure.data.map(withRects), f.figure.layout, CONFIG)
                 : null;
    });
  }

  function drawGantt() {
    var g = data.gantt;
    if (!g) return null;
    var div = document.getElementById("gantt-chart");
    var plan = LMGantt.expand(g.plan);
    var select = document.getElementById("gantt-colour");
    function draw() {
      plan.colour_by = select ? select.value : plan.colour_by;
      return LMGantt.draw(div, plan, {title: g.title, onClick: function (lease) {
        var filter = document.querySelector('input.lm-filter[data-table="leases"]');
        if (filter) {   // a click on a bar shows that lease in the table of leases
          filter.value = "^" + lease + "$";
          filter.dispatchEvent(new Event("input"));
          filter.scrollIntoView({behavior: "smooth", block: "center"});
        }
      }});
    }
    if (select) select.addEventListener("change", draw);
    return draw().then(function () { div.setAttribute("data-drawn", "1"); });
  }

  function cellText(value) { return value === null || value === undefined ? "" : String(value); }

  // a number as the terminal's report prints it (experiments/report.py's fmt): 33,855.5
  // 4.210 0.4910; whole numbers as they are
  function fmt(x) {
    if (typeof x !== "number") return cellText(x);
    if (Number.isInteger(x)) return x.toLocaleString("en-US");
    var ax = Math.abs(x);
    if (ax >= 1e7) return x.toPrecision(4);
    if (ax >= 100) return x.toLocaleString("en-US", {minimumFractionDigits: 1,
                                                     maximumFractionDigits: 1});
    if (ax >= 1) return x.toFixed(3);
    if (ax >= 1e-3) return x.toFixed(4);
    return x.toPrecision(3);
  }

  // a table from {id, columns, numeric, rows}: a click on a header sorts by it (again: the
  // other way), the filter keeps the rows with a cell that contains its text (or, written
  // ^text$, a cell equal to it)
  function table(spec) {
    var holder = document.getElementById("table-" + spec.id);
    if (!holder) return;
    var filter = holder.querySelector("input.lm-filter");
    var count = holder.querySelector(".lm-count");
    var more = holder.querySelector("button.lm-more");
    var tbl = holder.querySelector("table");
    var head = tbl.querySelector("thead tr"), body = tbl.querySelector("tbody");
    var order = spec.rows.map(function (_, i) { return i; });
    var shown = [], limit = PAGE, sortCol = -1, sortDir = 1;
    spec.columns.forEach(function (name, c) {
      var th = document.createElement("th");
      th.textContent = name;
      th.setAttribute("data-col", name);
      th.title = "sort by " + name;
      th.addEventListener("click", function () {
        sortDir = sortCol === c ? -sortDir : 1;
        sortCol = c;
        sort();
        render();
      });
      head.appendChild(th);
    });
    function key(row) {
      var v = spec.rows[row][sortCol];
      if (spec.numeric[sortCol]) return v === null || v === "" ? null : Number(v);
      return cellText(v);
    }
    function sort() {
      order.sort(function (a, b) {
        var p = key(a), q = key(b);
        if (p === null && q === null) return a - b;
        if (p === null) return 1;   // empty cells last, whichever the direction
        if (q === null) return -1;
        return (p < q ? -1 : p > q ? 1 : 0) * sortDir || a - b;
      });
      head.querySelectorAll("th").forEach(function (th, c) {
        th.className = c === sortCol ? (sortDir > 0 ? "asc" : "desc") : "";
      });
    }
    function matches(row, text) {
      if (!text) return true;
      var cells = spec.rows[row];
      var exact = text.length > 1 && text[0] === "^" && text[text.length - 1] === "$";
      var needle = exact ? text.slice(1, -1) : text.toLowerCase();
      for (var c = 0; c < cells.length; c++) {
        var t = cellText(cells[c]);
        if (exact ? t === needle : t.toLowerCase().indexOf(needle) >= 0) return true;
      }
      return false;
    }
    function render() {
      var text = filter ? filter.value.trim() : "";
      shown = order.filter(function (row) { return matches(row, text); });
      var frag = document.createDocumentFragment();
      shown.slice(0, limit).forEach(function (row) {
        var tr = document.createElement("tr");
        spec.rows[row].forEach(function (v, c) {
          var td = document.createElement("td");
          if (spec.links && spec.links[c] && v) {
            var a = document.createElement("a");
            a.href = spec.links[c].replace("{}", encodeURI(cellText(v)));
            a.textContent = cellText(v);
            td.appendChild(a);
          } else {
            td.textContent = spec.numeric[c] && spec.columns[c] !== "lease_id" &&
              spec.columns[c] !== "seed" ? fmt(v) : cellText(v);
          }
          if (spec.numeric[c]) {
            td.className = "num";
            if (v !== null && v !== undefined) td.setAttribute("data-value", String(v));
          }
          tr.appendChild(td);
        });
        frag.appendChild(tr);
      });
      body.replaceChildren(frag);
      var n = Math.min(limit, shown.length);
      count.textContent = shown.length === spec.rows.length
        ? (n < shown.length ? "the first " + n + " of " : "") + spec.rows.length + " rows"
        : shown.length + " of " + spec.rows.length + " rows match" +
          (n < shown.length ? " (the first " + n + " shown)" : "");
      if (more) more.style.display = n < shown.length ? "" : "none";
    }
    if (filter) filter.addEventListener("input", function () { limit = PAGE; render(); });
    if (more) more.addEventListener("click", function () { limit += PAGE; render(); });
    render();
  }

  var drawing = [drawGantt()];
  (data.tables || []).forEach(table);
  drawing = drawing.concat(drawFigures());
  document.body.setAttribute("data-ready", "1");
  // when every chart is drawn: ms since the page began to load (bench/gantt_page.py --page)
  Promise.all(drawing).then(function () {
    requestAnimationFrame(function () {
      document.body.setAttribute("data-drawn-ms", String(Math.round(performance.now())));
    });
  });
})();
