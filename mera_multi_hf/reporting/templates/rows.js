// The rows of results.html and compare.html: JSON in #page-data ({fields, rows: [cells],
// texts}; each cell the JSON text of its value, coded: an index into texts, a string, or a
// list of both to join, page_texts.py), filtered and searched over all rows, drawn into
// #rows a page at a time as #more is scrolled to. Filters: every <select id="f-FIELD"> in #filters keeps the rows whose FIELD
// (or its data-field) equals its value; #f-q searches every field but the media. The hash sets the filters
// (#task=x&q=y), or names a row (#task-id) to draw and scroll to.
function lazyRows(drawRow) {
  var PAGE = 100;
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var body = document.getElementById("rows"), more = document.getElementById("more");
  var selects = Array.prototype.slice.call(document.querySelectorAll("#filters select"));
  var filters = selects.map(function (s) { return s.id.slice(2); });
  var fields = selects.map(function (s) { return s.getAttribute("data-field") || s.id.slice(2); });
  var decoded = pageRows(data, fields.concat(["task", "id"])), rows = decoded.rows;
  var search = document.getElementById("f-q");
  var texts = null, shown = [], drawn = 0, watch = null;
  function flat(v) {
    if (v === null || v === undefined) { return ""; }
    if (typeof v !== "object") { return String(v); }
    return Object.keys(v).map(function (k) { return flat(v[k]); }).join("\n");
  }
  function text(row) {
    return data.fields.filter(function (f) { return f !== "media"; })
      .map(function (f) { return flat(row[f]); }).join("\n").toLowerCase();
  }
  function draw() {
    var end = Math.min(shown.length, drawn + PAGE), part = document.createDocumentFragment();
    for (; drawn < end; drawn += 1) { part.appendChild(drawRow(decoded.whole(shown[drawn]), data)); }
    body.appendChild(part);
    more.hidden = drawn >= shown.length;
    more.textContent = "show " + Math.min(PAGE, shown.length - drawn) + " more of " +
      (shown.length - drawn) + " not drawn yet";
    if (watch) { watch.unobserve(more); watch.observe(more); }  // still in view: draws again
  }
  function apply() {
    var want = filters.map(function (f) { return document.getElementById("f-" + f).value; });
    var q = search.value.toLowerCase();
    if (q && texts === null) { texts = rows.map(function (row) { return text(decoded.whole(row)); }); }
    shown = rows.filter(function (row, i) {
      return fields.every(function (f, k) { return !want[k] || String(row[f]) === want[k]; }) &&
        (!q || texts[i].indexOf(q) >= 0);
    });
    body.textContent = "";
    drawn = 0;
    draw();
    document.getElementById("count").textContent = shown.length + " of " + rows.length + " examples";
  }
  function fromHash() {
    var raw = location.hash.replace(/^#/, ""), hash = decodeURIComponent(raw);
    var params = new URLSearchParams(raw.indexOf("=") >= 0 ? raw : "");
    filters.concat(["q"]).forEach(function (f) {
      document.getElementById("f-" + f).value = params.get(f) || "";
    });
    apply();
    var at = hash && hash.indexOf("=") < 0 ? shown.findIndex(function (row) {
      return row.task + "-" + row.id === hash;
    }) : -1;
    if (at >= 0) {
      while (drawn <= at) { draw(); }
      body.children[at].scrollIntoView();
    }
  }
  filters.concat(["q"]).forEach(function (f) {
    document.getElementById("f-" + f).addEventListener("input", apply);
  });
  more.addEventListener("click", draw);
  if (window.IntersectionObserver) {
    watch = new IntersectionObserver(function (seen) {
      if (seen[0].isIntersecting && drawn < shown.length) { draw(); }
    }, {rootMargin: "600px"});
    watch.observe(more);
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
}

// A value as a cell shows it: text as it is, other values as JSON, nothing for null.
function shownText(v) {
  return v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v);
}

// An element with attributes and children (text or elements); text is never parsed as HTML.
function el(tag, attrs, children) {
  var node = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
  (children || []).forEach(function (c) {
    node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  });
  return node;
}

// The media cell of a row: paths into the media folder beside the page.
function mediaCell(items) {
  var cell = el("td", {"class": "media"});
  items.forEach(function (m) {
    (m.frames || []).forEach(function (src, i) {
      cell.appendChild(el("img", {"class": "frame", src: src, alt: m.field + ": frame " + (i + 1)}));
    });
    if (m.kind === "image") {
      cell.appendChild(el("img", {src: m.src, alt: m.field}));
    } else if (m.kind === "audio" || m.kind === "video") {
      cell.appendChild(el(m.kind, {controls: "", preload: "metadata", src: m.src}));
      if (m.seconds) { cell.appendChild(el("span", {"class": "note"}, [m.seconds.toFixed(1) + " s"])); }
    } else {
      cell.appendChild(el("span", {"class": "note"}, [m.field + ": " + m.note]));
    }
  });
  return cell;
}

// The rows of the page's data, each cell's text joined from its pieces and parsed (a cell
// that is one shared text is parsed once for all the rows that name it): the fields in
// `first` at once (the filters look at every row), the others when a row is drawn or
// searched (whole(row)), so a page of many rows opens without parsing them all.
function pageRows(data, first) {
  var texts = data.texts, parsed = {}, pending = new Map();
  var all = data.fields.map(function (f, i) { return i; });
  var now = all.filter(function (i) { return first.indexOf(data.fields[i]) >= 0; });
  var later = all.filter(function (i) { return first.indexOf(data.fields[i]) < 0; });
  function piece(p) { return typeof p === "number" ? texts[p] : p; }
  function value(cell) {
    if (typeof cell === "number") {
      if (!parsed.hasOwnProperty(cell)) { parsed[cell] = JSON.parse(texts[cell]); }
      return parsed[cell];
    }
    return JSON.parse(typeof cell === "string" ? cell : cell.map(piece).join(""));
  }
  function fill(row, cells, columns) {
    columns.forEach(function (i) { row[data.fields[i]] = value(cells[i]); });
    return row;
  }
  var rows = data.rows.map(function (cells) {
    var row = fill({}, cells, now);
    pending.set(row, cells);
    return row;
  });
  function whole(row) {
    if (pending.has(row)) { fill(row, pending.get(row), later); pending.delete(row); }
    return row;
  }
  return {rows: rows, whole: whole};
}
