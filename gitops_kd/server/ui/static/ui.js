// gitops-kd UI: live updates without reloading. Polls the page's JSON twin (body[data-live]) every
// data-refresh ms and swaps in the server-rendered (escaped) fragment when it changed. Read-only: no writes.
(function () {
  "use strict";
  var body = document.body;
  var url = body.getAttribute("data-live");
  var every = parseInt(body.getAttribute("data-refresh"), 10) || 2000;
  var live = document.getElementById("live");
  var announce = document.getElementById("announce");
  var status = document.getElementById("status");
  if (!url || !live) { return; }
  var lastHtml = null;
  var failures = 0;

  function keepFocus(apply) {
    // re-rendering must not throw the keyboard user back to the top: refocus the same link or region
    var active = document.activeElement;
    var key = null;
    if (active && live.contains(active)) {
      key = active.getAttribute("href") || active.getAttribute("aria-label");
    }
    apply();
    if (key) {
      var candidates = live.querySelectorAll("a[href], [tabindex]");
      for (var i = 0; i < candidates.length; i++) {
        var c = candidates[i];
        if (c.getAttribute("href") === key || c.getAttribute("aria-label") === key) { c.focus(); break; }
      }
    }
  }

  function tick() {
    var request = new XMLHttpRequest();
    request.open("GET", url, true);
    request.setRequestHeader("Accept", "application/json");
    request.onload = function () {
      if (request.status === 200) {
        failures = 0;
        var answer = JSON.parse(request.responseText);
        if (answer.html !== lastHtml) {
          keepFocus(function () { live.innerHTML = answer.html; });
          lastHtml = answer.html;
        }
        if (announce && announce.textContent !== answer.summary) { announce.textContent = answer.summary; }
        if (status) { status.textContent = "Live: updated " + new Date().toLocaleTimeString() + "."; }
      } else {
        failures += 1;
        if (status) { status.textContent = "Live updates paused: the controller answered " + request.status + "."; }
      }
      schedule();
    };
    request.onerror = function () {
      failures += 1;
      if (status) { status.textContent = "Live updates paused: the controller cannot be reached; retrying."; }
      schedule();
    };
    request.send();
  }

  function schedule() {
    var wait = failures ? Math.min(every * Math.pow(2, failures), 30000) : every;
    window.setTimeout(tick, document.hidden ? Math.max(wait, 10000) : wait);
  }

  tick();
}());
