// The index's search, filters and sorting, over the JSON index embedded in the page (no framework, no
// network). The table's rows are in the page already; this only hides those that do not match, and
// reorders them when a header with data-sort is clicked.
"use strict";
(function () {
  var data = document.getElementById("ops-data");
  var table = document.getElementById("ops");
  if (!data || !table) { return; }
  var index = JSON.parse(data.textContent);
  var ops = index.ops;
  var body = table.tBodies[0];
  // ops[i]'s row, found by its data-i: sorting moves the rows, the data keeps its order
  var rows = [];
  for (var r = 0; r < body.rows.length; r++) { rows[Number(body.rows[r].getAttribute("data-i"))] = body.rows[r]; }
  var shown = document.getElementById("shown");
  var ids = ["q", "bucket", "tag", "key", "profile", "backend", "state", "status", "sort"];
  var sort = "";  // "m" (ascending) or "-m" (descending): the index row's key; "" the page's order
  var inputs = {};
  ids.forEach(function (id) { inputs[id] = document.getElementById(id); });
  function value(id) { return id === "sort" ? sort : inputs[id] ? inputs[id].value : ""; }
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

  // A null (no data: a model count for an operator newer than the table) sorts last either way; ties
  // keep the name order.
  function compare(key, dir) {
    return function (a, b) {
      var x = ops[a][key], y = ops[b][key];
      if (x === y || (x == null && y == null)) { return a - b; }
      if (x == null) { return 1; }
      if (y == null) { return -1; }
      return (x < y ? -1 : 1) * dir;
    };
  }

  var headers = table.tHead.querySelectorAll("th[data-sort]");
  function order() {
    var key = sort.replace(/^-/, ""), dir = sort.charAt(0) === "-" ? -1 : 1;
    var known = false;
    headers.forEach(function (th) {
      var mine = th.getAttribute("data-sort") === key;
      known = known || mine;
      if (mine) { th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending"); } else { th.removeAttribute("aria-sort"); }
    });
    if (!known) { sort = ""; }
    var idx = ops.map(function (_, i) { return i; });
    if (sort) { idx.sort(compare(key, dir)); }
    var frag = document.createDocumentFragment();
    idx.forEach(function (i) { frag.appendChild(rows[i]); });
    body.appendChild(frag);
  }
  headers.forEach(function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.getAttribute("data-sort");
      var first = th.getAttribute("data-first") === "desc" ? "-" + key : key;
      var flipped = sort.charAt(0) === "-" ? key : "-" + key;
      sort = sort.replace(/^-/, "") === key ? flipped : first;
      order();
      apply();
    });
  });

  // Filters and the order can be linked to: index.html#bucket=view&tag=core&sort=-m
  var start = new URLSearchParams(window.location.hash.slice(1));
  if (start.has("sort")) { sort = start.get("sort"); order(); }
  ids.forEach(function (id) {
    if (inputs[id] && start.has(id)) { inputs[id].value = start.get(id); }
    if (inputs[id]) { inputs[id].addEventListener(id === "q" ? "input" : "change", apply); }
  });
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });
  apply();
})();
