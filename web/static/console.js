// Herald console: progressive enhancement only; every page works without it.
// Forms marked data-confirm ask before a destructive action.
document.addEventListener("submit", function (ev) {
  var msg = ev.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) {
    ev.preventDefault();
  }
});
// The offset reset form shows its timestamp field only for "timestamp".
document.addEventListener("change", function (ev) {
  if (ev.target.name === "to") {
    var ts = document.getElementById("reset-timestamp");
    if (ts) ts.hidden = ev.target.value !== "timestamp";
  }
});
// The ordering control rewords the exhaustion setting beside it for the mode chosen
// (the words ride on each option's data-* attributes; the server renders the saved
// mode's words).
document.addEventListener("change", function (ev) {
  if (ev.target.name !== "ordering" || !ev.target.form) return;
  var opt = ev.target.options[ev.target.selectedIndex];
  var sel = ev.target.form.querySelector('select[name="ordered_on_exhausted"]');
  if (!opt || !sel) return;
  var label = ev.target.form.querySelector('label[for="' + sel.id + '"]');
  if (label) label.textContent = opt.getAttribute("data-exhausted");
  sel.querySelector('option[value="dead_letter"]').textContent = opt.getAttribute("data-dead-letter");
  sel.querySelector('option[value="pause"]').textContent = opt.getAttribute("data-pause");
});
// Live state: an element with data-live="<ms>" (overview, group, topic) is fetched
// again from the server every <ms> as a server-rendered fragment (the request says
// X-Herald-Live: 1) and swapped in place, without reloading the page. It waits while
// the tab is hidden or a control inside it has focus, retries after a network
// failure, and stops when the answer is not the fragment (the session ended: the
// next navigation signs in).
(function () {
  var live = document.querySelector("[data-live]");
  if (!live || !window.fetch) return;
  var every = Math.max(parseInt(live.getAttribute("data-live"), 10) || 5000, 1000);
  function schedule() { window.setTimeout(tick, every); }
  function tick() {
    var busy = document.activeElement && live.contains(document.activeElement) && document.activeElement !== document.body;
    if (document.hidden || busy) return schedule();
    fetch(location.href, { credentials: "same-origin", headers: { "X-Herald-Live": "1" }, redirect: "manual" })
      .then(function (r) {
        if (!r.ok || r.headers.get("X-Herald-Live") !== "1") {
          live.setAttribute("data-live-stopped", "1");
          return;
        }
        return r.text().then(function (html) {
          live.innerHTML = html;
          live.setAttribute("data-refreshed", String(Date.now()));
          schedule();
        });
      })
      .catch(schedule); // the network failed: try again at the next tick
  }
  schedule();
})();
