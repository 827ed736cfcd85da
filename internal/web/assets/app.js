// Search as you type, and copy buttons on snippets. Everything that comes
// from the server is put on the page as text, never as HTML.
"use strict";
(function () {
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  var q = document.getElementById("q");
  var results = document.getElementById("results");
  var count = document.getElementById("count");
  var pager = document.getElementById("pager");
  if (q && results) {
    var seq = 0, timer = 0;
    q.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var mine = ++seq;
        fetch("/search.json?q=" + encodeURIComponent(q.value), { headers: { Accept: "application/json" } })
          .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
          .then(function (data) {
            if (mine !== seq) return;
            results.replaceChildren();
            data.hits.forEach(function (h) {
              var li = el("li");
              var a = el("a");
              a.href = "/s/" + h.path.split("/").map(encodeURIComponent).join("/") + "/";
              a.appendChild(el("span", "name", h.name));
              if (h.prefix) { a.appendChild(document.createTextNode(" ")); a.appendChild(el("span", "prefix", h.prefix)); }
              li.appendChild(a);
              li.appendChild(el("p", "", h.description));
              li.appendChild(el("span", "meta", h.files + (h.files === 1 ? " file" : " files") + " · " + h.size));
              results.appendChild(li);
            });
            count.textContent = data.hits.length ? "Showing " + data.hits.length + " match" + (data.hits.length === 1 ? "" : "es") : "No skills match.";
            if (pager) pager.hidden = q.value !== "";
            history.replaceState(null, "", q.value ? "/?q=" + encodeURIComponent(q.value) : "/");
          })
          .catch(function () { /* the form still works without this */ });
      }, 120);
    });
  }
  document.querySelectorAll(".snippet").forEach(function (s) {
    var b = s.querySelector("button.copy");
    var code = s.querySelector("pre code");
    if (!b || !code || !navigator.clipboard) return;
    b.hidden = false;
    b.addEventListener("click", function () {
      navigator.clipboard.writeText(code.textContent).then(function () {
        b.textContent = "Copied";
        setTimeout(function () { b.textContent = "Copy"; }, 1500);
      }, function () { b.textContent = "Select and copy"; });
    });
  });
})();
