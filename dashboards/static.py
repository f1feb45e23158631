"""The site's shared assets: plotly.js copied once, a stylesheet, and two small scripts.

The scripts live here as text rather than as package files so that an installed wheel carries
them without packaging rules for ``.js`` files. Nothing is fetched from a CDN: the site must work
offline, from file:// as well as over http.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import plotly

CSS = """
:root { color-scheme: light; --ink: #1d2433; --muted: #5b6473; --line: #d9dde5; --accent: #2454c5; }
* { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; color: var(--ink); margin: 0; background: #fff; }
header, main, footer { max-width: 1240px; margin: 0 auto; padding: 0 1.25rem; }
header { padding-top: 1rem; border-bottom: 1px solid var(--line); }
nav { font-size: .9rem; color: var(--muted); }
nav a { color: var(--accent); }
h1 { margin: .4rem 0; font-size: 1.6rem; overflow-wrap: anywhere; }
h2 { margin-top: 2rem; font-size: 1.25rem; }
.account { margin: 0 0 .3rem; color: var(--muted); overflow-wrap: anywhere; }
.precision { margin: 0 0 .8rem; color: var(--muted); font-size: .85rem; }
.download { margin: -1rem 0 1.5rem; font-size: .9rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.5rem; font-size: .92rem; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .45rem; text-align: left;
  vertical-align: top; overflow-wrap: break-word; }
/* Columns of long ids, entry references and file paths (Column.breakable) break anywhere:
   "anywhere", unlike "break-word", also lowers the cell's minimum width, so a wide table (the
   audit's findings, the hidden movements) wraps inside its box instead of running past it. */
td.any { overflow-wrap: anywhere; }
/* A flag inside a cell is one box: wrapped as a block, its border and padding do not repeat
   on every line and overlap themselves. */
td .ok, td .warn { display: inline-block; max-width: 100%; padding: .1rem .45rem; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
th button { all: unset; cursor: pointer; font-weight: 600; }
th button:focus-visible { outline: 2px solid var(--accent); }
th[aria-sort="ascending"] button::after { content: " ▲"; }
th[aria-sort="descending"] button::after { content: " ▼"; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
.chart { margin: 1rem 0; }
.chart figcaption { position: absolute; left: -9999px; }
.plot { width: 100%; }
.table-wrap { overflow-x: auto; }
.empty { color: var(--muted); font-style: italic; }
.warn { background: #fff4e0; border-left: 4px solid #e09b00; padding: .5rem .8rem; }
.ok { background: #e9f7ee; border-left: 4px solid #2f9a55; padding: .5rem .8rem; }
.links { columns: 2; }
footer { color: var(--muted); font-size: .85rem; padding-bottom: 2rem; margin-top: 2rem; }
"""

CHARTS_JS = """
// Renders every figure of the page from its JSON block (no inline code in the pages).
(function () {
  "use strict";
  function render() {
    var blocks = document.querySelectorAll('script[type="application/json"][data-chart]');
    for (var i = 0; i < blocks.length; i++) {
      var block = blocks[i];
      var target = document.getElementById(block.getAttribute("data-chart"));
      if (!target) { continue; }
      var figure = JSON.parse(block.textContent);
      window.Plotly.newPlot(target, figure.data, figure.layout,
        { responsive: true, displaylogo: false });
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
"""

SORT_JS = """
// Sorts tables with class "sortable" by clicking a header; numbers compare as exact decimals.
(function () {
  "use strict";
  function parts(text) {
    var t = (text || "").trim();
    if (t === "") { return null; }
    var negative = t.charAt(0) === "-";
    if (negative || t.charAt(0) === "+") { t = t.slice(1); }
    var dot = t.indexOf(".");
    var whole = (dot < 0 ? t : t.slice(0, dot)).replace(/^0+/, "");
    var frac = (dot < 0 ? "" : t.slice(dot + 1)).replace(/0+$/, "");
    if (whole === "" && frac === "") { negative = false; }
    return { negative: negative, whole: whole, frac: frac };
  }
  function compareMagnitude(a, b) {
    if (a.whole.length !== b.whole.length) { return a.whole.length < b.whole.length ? -1 : 1; }
    if (a.whole !== b.whole) { return a.whole < b.whole ? -1 : 1; }
    var n = Math.max(a.frac.length, b.frac.length);
    var fa = a.frac + "0".repeat(n - a.frac.length), fb = b.frac + "0".repeat(n - b.frac.length);
    return fa === fb ? 0 : (fa < fb ? -1 : 1);
  }
  function compareDecimal(x, y) {
    var a = parts(x), b = parts(y);
    if (a === null || b === null) { return a === b ? 0 : (a === null ? -1 : 1); }
    if (a.negative !== b.negative) { return a.negative ? -1 : 1; }
    var m = compareMagnitude(a, b);
    return a.negative ? -m : m;
  }
  function compareText(x, y) { return x.localeCompare(y); }
  function sortBy(table, index, header) {
    var body = table.tBodies[0];
    var numeric = header.getAttribute("data-type") === "number";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    var cmp = numeric ? compareDecimal : compareText;
    rows.sort(function (r1, r2) {
      var a = r1.cells[index].getAttribute("data-sort") || "";
      var b = r2.cells[index].getAttribute("data-sort") || "";
      var c = cmp(a, b);
      return ascending ? c : -c;
    });
    for (var i = 0; i < rows.length; i++) { body.appendChild(rows[i]); }
    var heads = table.tHead.rows[0].cells;
    for (var j = 0; j < heads.length; j++) { heads[j].removeAttribute("aria-sort"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  function init() {
    var tables = document.querySelectorAll("table.sortable");
    for (var t = 0; t < tables.length; t++) {
      (function (table) {
        var heads = table.tHead.rows[0].cells;
        for (var i = 0; i < heads.length; i++) {
          (function (index, header) {
            var button = header.querySelector("button");
            if (button) { button.addEventListener("click", function () {
              sortBy(table, index, header);
            }); }
          })(i, heads[i]);
        }
      })(tables[t]);
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
"""


def plotly_js_source() -> Path:
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def write_assets(assets_dir: Path) -> list[Path]:
    assets_dir.mkdir(parents=True, exist_ok=True)
    written = [assets_dir / "plotly.min.js"]
    shutil.copyfile(plotly_js_source(), written[0])
    for name, text in (("site.css", CSS), ("charts.js", CHARTS_JS), ("sort.js", SORT_JS)):
        target = assets_dir / name
        target.write_text(text.lstrip(), encoding="utf-8")
        written.append(target)
    return written
