// The index's search and filters, over the JSON index embedded in the page (no framework, no network).
// The table's rows are in the page already; this only hides those that do not match.
"use strict";
(function () {
  var data = document.getElementById("ops-data");
  var table = document.getElementById("ops");
  if (!data || !table) { return; }
  var index = JSON.parse(data.textContent);
  var ops = index.ops;
  var rows = table.tBodies[0].rows;
  var shown = document.getElementById("shown");
  var ids = ["q", "bucket", "tag", "key", "profile", "backend", "state", "status"];
  var inputs = {};
  ids.forEach(function (id) { inputs[id] = document.getElementById(id); });
  function value(id) { return inputs[id] ? inputs[id].value : ""; }
  function has(list, x) { return list.indexOf(x) !== -1; }

  function apply() {
    var q = value("q").trim().toLowerCase();
    var bucket = value("bucket"), tag = value("tag"), key = value("key"), profile = value("profile");
    var backend = value("backend"), state = value("state"), status = value("status") || "present";
    var count = 0;
    for (var i = 0; i < ops.length; i++) {
      var op = ops[i];
      var ok = (status === "all" || (status === "gone") === (op.g === 1)) &&
        (!q || op.n.toLowerCase().indexOf(q) !== -1) &&
        (!bucket || op.b === bucket) &&
        (!tag || has(op.t, tag)) &&
        (!key || has(op.k, key)) &&
        (!profile || has(op.p, profile));
      if (ok && backend) {
        var cov = op.v[backend];
        ok = cov !== undefined && (state === "covered" ? cov[0] === cov[1] : cov[0] < cov[1]);
      }
      rows[i].hidden = !ok;
      if (ok) { count++; }
    }
    shown.textContent = String(count);
    var params = new URLSearchParams();
    ids.forEach(function (id) { if (value(id) && !(id === "status" && value(id) === "present") && !(id === "state" && !backend)) { params.set(id, value(id)); } });
    var hash = params.toString();
    if (window.location.protocol !== "file:" || hash) {
      history.replaceState(null, "", hash ? "#" + hash : window.location.pathname);
    }
  }

  // Filters can be linked to: index.html#bucket=view&tag=core
  var start = new URLSearchParams(window.location.hash.slice(1));
  ids.forEach(function (id) {
    if (inputs[id] && start.has(id)) { inputs[id].value = start.get(id); }
    if (inputs[id]) { inputs[id].addEventListener(id === "q" ? "input" : "change", apply); }
  });
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });
  apply();
})();
