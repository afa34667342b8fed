// Charts: a point's values show beside it under the pointer (its SVG
// <title>, read as text), and each series' button hides or shows that
// series in its chart. Nothing here is made from markup: text is set as text.
(function () {
  "use strict";
  var tip = document.createElement("div");
  tip.className = "chart-tip";
  tip.hidden = true;
  document.body.appendChild(tip);
  document.querySelectorAll("figure.chart").forEach(function (figure) {
    figure.querySelectorAll("circle.hit").forEach(function (hit) {
      var title = hit.querySelector("title");
      var text = title ? title.textContent : "";
      // The page's tip replaces the viewer's own, which would show too.
      if (title) { hit.removeChild(title); }
      hit.setAttribute("data-tip", text);
      hit.addEventListener("mouseenter", function () {
        var box = hit.getBoundingClientRect();
        tip.textContent = text;
        tip.hidden = false;
        tip.style.left = (window.scrollX + box.right + 8) + "px";
        tip.style.top = (window.scrollY + box.top - 4) + "px";
      });
      hit.addEventListener("mouseleave", function () { tip.hidden = true; });
    });
    figure.querySelectorAll("button[data-series]").forEach(function (button) {
      var key = button.getAttribute("data-series");
      button.addEventListener("click", function () {
        var shown = button.getAttribute("aria-pressed") !== "true";
        button.setAttribute("aria-pressed", shown ? "true" : "false");
        figure.querySelectorAll("g.series").forEach(function (group) {
          if (group.getAttribute("data-series") !== key) { return; }
          if (shown) { group.removeAttribute("display"); } else { group.setAttribute("display", "none"); }
        });
      });
    });
  });
  document.documentElement.setAttribute("data-charts", "ready");
})();
