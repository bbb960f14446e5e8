// The console's only script: poll the page's live part every few seconds
// and swap it in (the server renders it; nothing is built here), and the
// select-all boxes. Pages work without it, only without live refresh.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var every = live ? parseInt(live.getAttribute("data-refresh") || "0", 10) : 0;
  var stale = document.getElementById("stale");
  function busy() {
    // Never swap a form the operator is using out from under them.
    return live.querySelector("input[type=checkbox]:checked") !== null || live.contains(document.activeElement) && document.activeElement.tagName !== "BODY";
  }
  if (every > 0) {
    setInterval(function () {
      if (busy()) { return; }
      fetch(location.href, { headers: { "X-Console-Live": "1" }, credentials: "same-origin", cache: "no-store" })
        .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
        .then(function (html) { live.innerHTML = html; if (stale) { stale.hidden = true; } })
        .catch(function () { if (stale) { stale.hidden = false; } });
    }, every * 1000);
  }
  document.addEventListener("change", function (e) {
    var t = e.target;
    if (t.classList && t.classList.contains("all")) {
      var boxes = t.closest("table").querySelectorAll("input[name=ids]");
      for (var i = 0; i < boxes.length; i++) { boxes[i].checked = t.checked; }
    }
  });
})();
