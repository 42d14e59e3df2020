/* The leaderboard page's script (inlined into index.html by html_page.py): sorting, filtering,
   and each cell's details view, drawn from the JSON in #cell-data. No network, no libraries. */
(function () {
  "use strict";

  const DATA = JSON.parse(document.getElementById("cell-data").textContent);
  const dialog = document.getElementById("detail");
  const dialogTitle = document.getElementById("detail-title");
  const dialogBody = document.getElementById("detail-body");

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  function fmt(v) {
    if (v === null || v === undefined) return "—";
    const a = Math.abs(v);
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    return v.toFixed(3);
  }

  function fmtInt(v) {
    if (v === null || v === undefined) return "—";
    return Math.round(v).toLocaleString("en-US");
  }

  function fmtSteps(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return +(v / 1e6).toFixed(2) + "M";
    if (a >= 1e3) return +(v / 1e3).toFixed(1) + "k";
    return String(+v.toFixed(1));
  }

  function yesNo(v) {
    return v === null || v === undefined ? "— (fewer than 5 seeds)" : v ? "yes" : "no";
  }

  // --- sorting ---------------------------------------------------------------------------------

  function sortValue(row, key, type) {
    const td = row.querySelector('td[data-key="' + key + '"]');
    const raw = td ? td.getAttribute("data-v") : "";
    if (raw === null || raw === "") return null;
    return type === "num" ? parseFloat(raw) : raw;
  }

  function sortTable(table, th) {
    const key = th.getAttribute("data-key");
    const type = th.getAttribute("data-type");
    const direction = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    const sign = direction === "ascending" ? 1 : -1;
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).map(function (row, index) {
      return { row: row, value: sortValue(row, key, type), index: index };
    });
    rows.sort(function (a, b) {
      if (a.value === null || b.value === null) {  // empty values last, either way
        if (a.value === b.value) return a.index - b.index;
        return a.value === null ? 1 : -1;
      }
      if (a.value < b.value) return -sign;
      if (a.value > b.value) return sign;
      return a.index - b.index;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    table.querySelectorAll("th[data-key]").forEach(function (other) {
      other.setAttribute("aria-sort", other === th ? direction : "none");
    });
  }

  document.querySelectorAll("table.lb").forEach(function (table) {
    table.querySelectorAll("th[data-key]").forEach(function (th) {
      th.addEventListener("click", function () { sortTable(table, th); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortTable(table, th);
        }
      });
    });
  });

  // --- filtering -------------------------------------------------------------------------------

  function applyFilters(section) {
    const chosen = {};
    section.querySelectorAll("select[data-filter]").forEach(function (select) {
      chosen[select.getAttribute("data-filter")] = select.value;
    });
    const rows = section.querySelectorAll("table.lb tbody tr");
    let shown = 0;
    rows.forEach(function (row) {
      let keep = true;
      if (chosen.env) {
        const at = chosen.env.indexOf(":");
        const kind = chosen.env.slice(0, at);
        const value = chosen.env.slice(at + 1);
        keep = row.getAttribute(kind === "env" ? "data-env" : "data-variant") === value;
      }
      if (chosen.agent && row.getAttribute("data-agent") !== chosen.agent) keep = false;
      if (chosen.memory && row.getAttribute("data-memory") !== chosen.memory) keep = false;
      row.hidden = !keep;
      if (keep) shown += 1;
    });
    const count = section.querySelector(".count");
    if (count) count.textContent = shown + " of " + rows.length + " cells shown";
  }

  document.querySelectorAll("section.suite").forEach(function (section) {
    section.querySelectorAll("select[data-filter]").forEach(function (select) {
      select.addEventListener("change", function () { applyFilters(section); });
    });
    const reset = section.querySelector("button.reset");
    if (reset) {
      reset.addEventListener("click", function () {
        section.querySelectorAll("select[data-filter]").forEach(function (s) { s.value = ""; });
        applyFilters(section);
      });
    }
    applyFilters(section);
  });

  // --- a cell's details ------------------------------------------------------------------------

  function niceTicks(lo, hi, count) {
    const span = hi - lo || Math.abs(hi) || 1;
    const raw = span / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map(function (m) { return m * power; })
      .find(function (s) { return s >= raw; });
    const ticks = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
      ticks.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    }
    return ticks;
  }

  function pathOf(points, x, y) {
    return points.map(function (p, i) {
      return (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1);
    }).join("");
  }

  function bandPaths(band, x, y) {
    // One closed shape per stretch of steps where the band has values.
    const paths = [];
    let run = [];
    const flush = function () {
      if (run.length > 1) {
        const upper = run.map(function (i) { return [band.t[i], band.high[i]]; });
        const lower = run.slice().reverse().map(function (i) { return [band.t[i], band.low[i]]; });
        paths.push(pathOf(upper.concat(lower), x, y) + "Z");
      }
      run = [];
    };
    band.t.forEach(function (_, i) {
      if (band.low[i] === null || band.high[i] === null) flush(); else run.push(i);
    });
    flush();
    return paths;
  }

  function curveSvg(cell) {
    const W = 640, H = 300, m = { l: 58, r: 70, t: 12, b: 36 };
    const seeds = cell.seeds.map(function (s) {
      return s.curve.filter(function (p) { return p[1] !== null; });
    });
    const ts = [0], ys = [];
    seeds.forEach(function (c) { c.forEach(function (p) { ts.push(p[0]); ys.push(p[1]); }); });
    cell.band.low.concat(cell.band.high).forEach(function (v) { if (v !== null) ys.push(v); });
    [cell.ceiling, cell.optimum].forEach(function (v) { if (v !== null) ys.push(v); });
    if (ys.length === 0) return '<p class="empty">No learning curve stored for this cell.</p>';
    let ylo = Math.min.apply(null, ys), yhi = Math.max.apply(null, ys);
    const pad = (yhi - ylo || Math.abs(yhi) || 1) * 0.06;
    ylo -= pad; yhi += pad;
    const tmax = Math.max.apply(null, ts) || 1;
    const x = function (t) { return m.l + (t / tmax) * (W - m.l - m.r); };
    const y = function (v) { return m.t + (1 - (v - ylo) / (yhi - ylo)) * (H - m.t - m.b); };
    const parts = [];
    niceTicks(ylo, yhi, 5).forEach(function (v) {
      parts.push('<line class="grid" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' + y(v).toFixed(1) +
        '" y2="' + y(v).toFixed(1) + '"/><text x="' + (m.l - 6) + '" y="' + (y(v) + 4).toFixed(1) +
        '" text-anchor="end">' + esc(+v.toPrecision(4)) + "</text>");
    });
    niceTicks(0, tmax, 5).forEach(function (t) {
      parts.push('<text x="' + x(t).toFixed(1) + '" y="' + (H - m.b + 16) + '" text-anchor="middle">' +
        esc(fmtSteps(t)) + "</text>");
    });
    bandPaths(cell.band, x, y).forEach(function (d) { parts.push('<path class="band" d="' + d + '"/>'); });
    [["ceil", cell.ceiling, "ceiling"], ["opt", cell.optimum, "optimum"]].forEach(function (line) {
      if (line[1] === null) return;
      parts.push('<line class="' + line[0] + '" x1="' + m.l + '" x2="' + (W - m.r) + '" y1="' +
        y(line[1]).toFixed(1) + '" y2="' + y(line[1]).toFixed(1) + '"/><text x="' + (W - m.r + 4) +
        '" y="' + (y(line[1]) + 4).toFixed(1) + '">' + line[2] + "</text>");
    });
    seeds.forEach(function (c, i) {
      const cls = "seed s" + (i % 8);
      const seed = esc(cell.seeds[i].seed);
      if (c.length > 1) {
        parts.push('<path class="' + cls + '" data-seed="' + seed + '" d="' + pathOf(c, x, y) + '"/>');
      } else if (c.length === 1) {
        parts.push('<circle class="' + cls + '" data-seed="' + seed + '" cx="' + x(c[0][0]).toFixed(1) +
          '" cy="' + y(c[0][1]).toFixed(1) + '" r="3"/>');
      }
    });
    const mean = cell.band.t.map(function (t, i) { return [t, cell.band.mean[i]]; })
      .filter(function (p) { return p[1] !== null; });
    if (mean.length > 1) parts.push('<path class="meanline" d="' + pathOf(mean, x, y) + '"/>');
    parts.push('<rect class="frame" x="' + m.l + '" y="' + m.t + '" width="' + (W - m.l - m.r) +
      '" height="' + (H - m.t - m.b) + '"/>');
    parts.push('<text x="' + ((m.l + W - m.r) / 2) + '" y="' + (H - 4) +
      '" text-anchor="middle">env steps</text>');
    const label = "Evaluation return over training, " + cell.seeds.length + " seeds";
    const legend = cell.seeds.map(function (s, i) {
      return '<li><i class="s' + (i % 8) + '"></i>seed ' + esc(s.seed) + "</li>";
    }).join("") + '<li><i style="background:#1b1f24"></i>mean over seeds</li>' +
      '<li><i style="background:rgba(9,105,218,0.25);height:0.7rem"></i>95% bootstrap band of the mean</li>';
    return '<figure class="curve-figure"><svg class="curve" viewBox="0 0 ' + W + " " + H +
      '" role="img" aria-label="' + esc(label) + '"><title>' + esc(label) + "</title>" + parts.join("") +
      '</svg><figcaption><ul class="curve-legend">' + legend + "</ul>" +
      "Evaluation return (deterministic episodes) at each evaluation during training; the band is over " +
      "the seeds still training at that step.</figcaption></figure>";
  }

  function summary(cell) {
    const items = [
      ["mean return", fmt(cell.mean)],
      ["95% interval", "[" + fmt(cell.ci[0]) + ", " + fmt(cell.ci[1]) + "]"],
      ["IQM", fmt(cell.iqm)],
      ["IQM 95% interval", "[" + fmt(cell.iqm_ci[0]) + ", " + fmt(cell.iqm_ci[1]) + "]"],
      ["feedforward ceiling", fmt(cell.ceiling) + " (" + cell.ceiling_source + ")"],
      ["optimum", fmt(cell.optimum)],
      ["normalised score", fmt(cell.score)],
      ["learned", yesNo(cell.learned)],
      ["seeds", cell.n_seeds + (cell.n_failed ? " (" + cell.n_failed + " failed)" : "")],
      ["memory horizon", cell.horizon + " steps"],
      ["pieces", cell.pieces],
      ["cue reach", fmt(cell.cue_reach)],
      ["budget", fmtInt(cell.total_timesteps) + " steps"],
      ["steps/s", fmtInt(cell.steps_per_second)],
    ];
    if (cell.stop_reasons) items.push(["stop reasons", cell.stop_reasons]);
    if (cell.steps_to_solve !== null) {
      items.push(["steps to solve", fmtInt(cell.steps_to_solve) + " [" + fmtInt(cell.steps_to_solve_ci[0]) +
        ", " + fmtInt(cell.steps_to_solve_ci[1]) + "]"]);
    }
    return '<dl class="summary">' + items.map(function (it) {
      return "<div><dt>" + esc(it[0]) + "</dt><dd>" + esc(it[1]) + "</dd></div>";
    }).join("") + "</dl>";
  }

  function seedTable(cell) {
    const solving = cell.seeds.some(function (s) { return s.stop_reason; });
    const head = ["seed", "status", "final return", "eval episodes", "steps trained"]
      .concat(solving ? ["stop reason", "steps to solve"] : []).concat(["steps/s"]);
    const rows = cell.seeds.map(function (s, i) {
      const values = [
        '<i class="s' + (i % 8) + '" style="display:inline-block;width:0.8rem;height:0.8rem;' +
          'margin-right:0.3rem;vertical-align:middle"></i>' + esc(s.seed),
        '<span class="' + (s.status === "ok" ? "" : "failed") + '">' + esc(s.status) + "</span>",
        esc(fmt(s.final_return)), esc(s.episodes), esc(fmtInt(s.timesteps)),
      ].concat(solving ? [esc(s.stop_reason || "—"), esc(fmtInt(s.steps_to_solve))] : [])
        .concat([esc(fmtInt(s.steps_per_second))]);
      return "<tr>" + values.map(function (v) { return "<td>" + v + "</td>"; }).join("") + "</tr>";
    }).join("");
    return '<h3>Per-seed returns</h3><div class="seeds-wrap"><table class="seeds"><thead><tr>' +
      head.map(function (h) { return '<th scope="col">' + esc(h) + "</th>"; }).join("") +
      "</tr></thead><tbody>" + rows + "</tbody></table></div>";
  }

  let opener = null;

  function openDetail(id, from) {
    const cell = DATA.cells[id];
    if (!cell) return;
    opener = from || null;
    dialogTitle.textContent = cell.title;
    dialogBody.innerHTML = summary(cell) + "<h3>Learning curves</h3>" + curveSvg(cell) + seedTable(cell);
    dialog.setAttribute("data-cell", id);
    if (!dialog.open) dialog.showModal();
    try { history.replaceState(null, "", "#" + id); } catch (e) { /* some file: URLs refuse */ }
  }

  dialog.addEventListener("close", function () {
    dialog.removeAttribute("data-cell");
    try { history.replaceState(null, "", location.pathname + location.search); } catch (e) { /* as above */ }
    if (opener) opener.focus();
  });
  dialog.querySelector("button.close").addEventListener("click", function () { dialog.close(); });
  dialog.addEventListener("click", function (event) {
    if (event.target === dialog) dialog.close();  // a click on the backdrop
  });
  document.querySelectorAll("button.detail").forEach(function (button) {
    button.addEventListener("click", function () { openDetail(button.getAttribute("data-cell"), button); });
  });
  function openFromHash() {  // a link to a cell (index.html#<suite>-<row>) opens its details
    const id = location.hash.slice(1);
    if (id && DATA.cells[id] && dialog.getAttribute("data-cell") !== id) {
      openDetail(id, document.querySelector('button.detail[data-cell="' + id.replace(/"/g, "") + '"]'));
    }
  }
  window.addEventListener("hashchange", openFromHash);
  openFromHash();
})();
