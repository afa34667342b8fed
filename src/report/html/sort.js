// Click a column's header to sort its table by it; click again to reverse.
// Numbers (with their units, signs and thousands separators) sort as numbers;
// cells without a value ("-") go last in either direction.
(function () {
  "use strict";
  function value(cell) {
    var text = cell ? cell.textContent.trim() : "";
    var number = text.replace(/[,\s]/g, "").match(/^[(+]?(-?\d+(\.\d+)?)/);
    return number ? parseFloat(number[1]) : text.toLowerCase();
  }
  function missing(v) {
    return v === "" || v === "-" || v === "\u2014";
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    if (typeof a === "number") { return -1; }
    if (typeof b === "number") { return 1; }
    return a < b ? -1 : a > b ? 1 : 0;
  }
  document.querySelectorAll("table").forEach(function (table) {
    var body = table.tBodies[0];
    if (!body) { return; }
    table.querySelectorAll("thead th").forEach(function (th, column) {
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (x, y) {
          var a = value(x.cells[column]), b = value(y.cells[column]);
          // A failed run's "-" has no value: last whichever way the column sorts.
          if (missing(a) !== missing(b)) { return missing(a) ? 1 : -1; }
          var order = compare(a, b);
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  document.documentElement.setAttribute("data-sortable", "ready");
})();
