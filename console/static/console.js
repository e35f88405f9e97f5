// Live updates for the console, as progressive enhancement: the server
// sends "change" over server-sent events, and the page re-reads itself and
// swaps its live regions. Without JavaScript the pages and every decision
// work the same, only without updating on their own.
(function () {
  "use strict";
  var hook = document.querySelector("[data-events]");
  if (!hook || !window.EventSource || !window.fetch || !window.DOMParser) return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var next = doc.getElementById(el.id);
          if (!next || next.innerHTML === el.innerHTML) return;
          // Keep a note being typed while the choices are unchanged.
          if (el.contains(document.activeElement) && el.dataset.key === next.dataset.key) return;
          el.replaceWith(document.importNode(next, true));
        });
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  new EventSource(hook.dataset.events).addEventListener("change", refresh);
})();
