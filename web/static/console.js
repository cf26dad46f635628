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
