// The Phalanx view: a live session fed over Server-Sent Events (/events),
// or replays asked frame by frame (/api/replay). Everything is drawn here;
// nothing is loaded from outside.
"use strict";

const $ = (s) => document.querySelector(s);
const colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
  "#7f7f7f", "#bcbd22", "#393b79", "#843c39", "#637939", "#7b4173", "#3182bd", "#e6550d"];
const color = (i) => colors[((i % colors.length) + colors.length) % colors.length];
const fmt = (v, d = 1) => (v === undefined || v === null || isNaN(v)) ? "–" : Number(v).toFixed(d);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));

// ---- drawing the world ----

const terrainCache = new Map();

function terrainImage(scene) {
  const key = scene.w + "x" + scene.h + ":" + scene.blocked;
  let img = terrainCache.get(key);
  if (img) return img;
  const bits = atob(scene.blocked || "");
  img = document.createElement("canvas");
  img.width = scene.w; img.height = scene.h;
  const ctx = img.getContext("2d");
  const data = ctx.createImageData(scene.w, scene.h);
  for (let i = 0; i < scene.w * scene.h; i++) {
    const blocked = (bits.charCodeAt(i >> 3) >> (i & 7)) & 1;
    const v = blocked ? 70 : 236;
    data.data[4 * i] = v; data.data[4 * i + 1] = blocked ? 72 : 232; data.data[4 * i + 2] = blocked ? 76 : 220;
    data.data[4 * i + 3] = 255;
  }
  ctx.putImageData(data, 0, 0);
  terrainCache.clear();
  terrainCache.set(key, img);
  return img;
}

// drawScene draws scene on canvas; marks maps unit IDs to a highlight
// colour.
function drawScene(canvas, scene, marks) {
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#eee";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (!scene) return;
  const s = Math.min(canvas.width / scene.w, canvas.height / scene.h);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(terrainImage(scene), 0, 0, scene.w * s, scene.h * s);
  // Orders: a faint line from each moving unit to where it goes.
  ctx.lineWidth = 1;
  for (const u of scene.units) {
    if (u.tx < 0) continue;
    ctx.strokeStyle = color(u.o) + "30";
    ctx.beginPath();
    ctx.moveTo(u.x * s, u.y * s);
    ctx.lineTo((u.tx + 0.5) * s, (u.ty + 0.5) * s);
    ctx.stroke();
  }
  for (const u of scene.units) {
    ctx.fillStyle = color(u.o);
    const r = Math.max(1.5, s * 0.45);
    if (u.k === 1) {
      ctx.beginPath();
      ctx.arc(u.x * s, u.y * s, r, 0, 2 * Math.PI);
      ctx.fill();
    } else {
      ctx.fillRect(u.x * s - r, u.y * s - r, 2 * r, 2 * r);
    }
    if (u.m && u.h < u.m) {
      ctx.fillStyle = "#000";
      ctx.fillRect(u.x * s - r, u.y * s + r, 2 * r * (u.h / u.m), 1);
    }
  }
  if (marks) {
    ctx.lineWidth = 2;
    for (const u of scene.units) {
      const m = marks.get(u.i);
      if (!m) continue;
      ctx.strokeStyle = m;
      ctx.beginPath();
      ctx.arc(u.x * s, u.y * s, Math.max(4, s * 1.5), 0, 2 * Math.PI);
      ctx.stroke();
    }
  }
}

// ---- charts ----

// drawLines draws series (arrays of [x, y]) on canvas, each with a colour
// and a dash.
function drawLines(canvas, series, xmax) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  let ymax = 0;
  for (const s of series) for (const p of s.points) ymax = Math.max(ymax, p[1]);
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  xmax = Math.max(xmax, 1);
  ctx.fillStyle = "#888";
  ctx.font = "10px sans-serif";
  ctx.fillText(fmt(ymax, ymax < 10 ? 2 : 0), 2, 10);
  ctx.fillText(fmt(xmax, 0) + " s", w - 40, h - 2);
  for (const s of series) {
    ctx.strokeStyle = s.color;
    ctx.setLineDash(s.dash ? [4, 3] : []);
    ctx.beginPath();
    s.points.forEach((p, i) => {
      const x = (p[0] / xmax) * (w - 4) + 2, y = h - 12 - (p[1] / ymax) * (h - 24);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  }
  ctx.setLineDash([]);
}

// ---- the live session ----

const live = { samples: [], snap: null, prev: new Map(), rates: new Map() };

function startLive(mode) {
  $("#live").hidden = false;
  $("#click-hint").textContent = mode.command ? "Click on the map: the member's units move there (a command submitted through it)." : "";
  const es = new EventSource("events");
  es.addEventListener("history", (e) => { live.samples = JSON.parse(e.data) || []; });
  es.onmessage = (e) => {
    const snap = JSON.parse(e.data);
    if (!snap) return;
    live.snap = snap;
    addSample(snap);
    render(snap);
    if (snap.done) es.close();
  };
  es.onerror = () => {
    if (!live.snap || !live.snap.done) $("#status").textContent = "disconnected, retrying…";
  };
  $("#map").addEventListener("click", (e) => {
    const snap = live.snap;
    if (!mode.command || !snap || !snap.scene) return;
    const c = e.target;
    const s = Math.min(c.width / snap.scene.w, c.height / snap.scene.h);
    const x = Math.floor((e.offsetX * (c.width / c.clientWidth)) / s);
    const y = Math.floor((e.offsetY * (c.height / c.clientHeight)) / s);
    if (x < 0 || y < 0 || x >= snap.scene.w || y >= snap.scene.h) return;
    fetch("api/command?x=" + x + "&y=" + y, { method: "POST" }).then(async (r) => {
      const t = await r.text();
      let said = t.trim();
      try { said = JSON.parse(t).ordered; } catch (_) { /* an error, in plain text */ }
      $("#click-hint").textContent = (r.ok ? "ordered " : "refused: ") + said;
    });
  });
}

function addSample(snap) {
  const last = live.samples[live.samples.length - 1];
  if (last && last.t >= snap.t) return;
  live.samples.push({
    t: snap.t, m: snap.members.map((m) => ({
      s: m.slot, f: m.frame, e: m.executed, st: m.stalls, b: m.bytes_sent, d: m.dg_sent, bi: m.bytes_recv, di: m.dg_recv,
    })),
  });
  if (live.samples.length > 4096) live.samples.splice(0, live.samples.length - 4096);
}

// rates returns, per slot, series of per-second rates of field over the
// samples.
function rateSeries(field) {
  const out = new Map();
  let j = 0;
  for (let i = 1; i < live.samples.length; i++) {
    const b = live.samples[i];
    // Over about a second: the counters move in steps.
    while (j < i - 1 && live.samples[j + 1].t <= b.t - 1) j++;
    const a = live.samples[j], dt = b.t - a.t;
    if (dt <= 0) continue;
    for (const mb of b.m) {
      const ma = a.m.find((x) => x.s === mb.s);
      if (!ma) continue;
      if (!out.has(mb.s)) out.set(mb.s, []);
      out.get(mb.s).push([b.t, Math.max(0, (mb[field] - ma[field]) / dt)]);
    }
  }
  return out;
}

function lastRate(series, slot) {
  const s = series.get(slot);
  if (!s || s.length === 0) return undefined;
  // Over the last two seconds, for a steadier figure.
  const end = s[s.length - 1][0];
  let sum = 0, n = 0;
  for (let i = s.length - 1; i >= 0 && s[i][0] > end - 2; i--) { sum += s[i][1]; n++; }
  return n ? sum / n : undefined;
}

function render(snap) {
  $("#title").textContent = snap.title || "";
  const st = $("#status");
  st.textContent = snap.done ? "ended — " + (snap.summary || "") : "running, " + fmt(snap.t, 1) + " s";
  st.className = snap.done ? "done" : "";
  const bytes = rateSeries("b"), dgrams = rateSeries("d"), bytesIn = rateSeries("bi"), stalls = rateSeries("st");
  const tbody = $("#members tbody");
  const rows = snap.members.map((m) => {
    let l50 = 0, l99 = 0;
    for (const p of m.peers || []) { l50 = Math.max(l50, p.late50_ms); l99 = Math.max(l99, p.late99_ms); }
    const rtts = (m.peers || []).map((p) => `<span style="color:${color(p.slot)}">${p.slot}</span>:${fmt(p.rtt_ms)}`).join(" ");
    return `<tr data-slot="${m.slot}" title="${esc(m.error || "")}">
      <td style="color:${color(m.slot)}"><b>${m.slot}</b></td><td class="phase">${esc(m.phase)}</td>
      <td class="frame">${m.frame}</td><td class="executed">${m.executed}</td>
      <td>${fmt(m.lead_ms)} ms</td><td>${m.delay}</td><td>${fmt(l50)} / ${fmt(l99)} ms</td>
      <td class="peers">${rtts} ms</td><td class="stalls">${m.stalls}</td>
      <td>${fmt(lastRate(bytes, m.slot) / 1000, 1)} kB/s ${fmt(lastRate(dgrams, m.slot), 0)} dg/s</td>
      <td>${fmt(lastRate(bytesIn, m.slot) / 1000, 1)} kB/s</td></tr>`;
  });
  tbody.innerHTML = rows.join("");
  const xmax = snap.t;
  drawLines($("#chart-stalls"), [...stalls].map(([slot, pts]) => ({ color: color(slot), points: pts })), xmax);
  const bs = [...bytes].map(([slot, pts]) => ({ color: color(slot), points: pts.map((p) => [p[0], p[1] / 1000]) }));
  drawLines($("#chart-bytes"), bs, xmax);
  drawTimeline(snap);
  $("#events").innerHTML = snap.events.slice(-200).map((e) =>
    `<li class="ev-${e.type}">frame ${e.frame}: ${e.type} of member ${e.member}${e.section ? ` in section "${esc(e.section)}"` : ""}${e.reason ? " [" + esc(e.reason) + "]" : ""} (seen by ${e.observer})${e.detail ? ": " + esc(e.detail) : ""}</li>`).join("");
  $("#scene-from").textContent = snap.scene ? `member ${snap.scene_slot}'s simulation at frame ${snap.scene.frame}` : "(the simulation draws nothing)";
  drawScene($("#map"), snap.scene, null);
  const n = snap.members.length;
  $("#commands").innerHTML = (snap.commands || []).slice().reverse().map((c) =>
    `<li data-id="${c.id}" data-executed="${(c.executed || []).length}">#${c.id} through member ${c.slot}: ${esc(c.text)} — ` +
    (c.error ? `<span class="bad">${esc(c.error)}</span>` : c.seq < 0 ? "waiting to be submitted" :
      `sequence ${c.seq}, executed on ${(c.executed || []).length} of ${n} members` + (c.frame >= 0 ? ` at frame ${c.frame}` : "")) + "</li>").join("");
}

function drawTimeline(snap) {
  const c = $("#timeline"), ctx = c.getContext("2d");
  ctx.clearRect(0, 0, c.width, c.height);
  let fmax = 1;
  for (const m of snap.members) fmax = Math.max(fmax, m.frame);
  const observers = [...new Set(snap.members.map((m) => m.slot))].sort((a, b) => a - b);
  const rowH = Math.max(6, Math.min(16, (c.height - 12) / Math.max(1, observers.length)));
  ctx.font = "10px sans-serif";
  observers.forEach((o, i) => {
    ctx.fillStyle = color(o);
    ctx.fillText(String(o), 2, 10 + i * rowH + rowH / 2);
    ctx.fillStyle = "#eee";
    ctx.fillRect(14, 4 + i * rowH + rowH / 2, c.width - 16, 1);
  });
  const typeColor = { desync: "#c00", drop: "#b60", stop: "#b60", leave: "#555", violation: "#909" };
  for (const e of snap.events) {
    const i = observers.indexOf(e.observer);
    const x = 14 + (e.frame / fmax) * (c.width - 18);
    ctx.fillStyle = typeColor[e.type] || "#06c";
    ctx.fillRect(x - 1, 4 + Math.max(0, i) * rowH, 3, rowH - 1);
  }
  ctx.fillStyle = "#888";
  ctx.fillText("frame " + fmax, c.width - 70, c.height - 2);
}

// ---- replays ----

const rp = { info: null, frame: 0, playing: false, busy: false, want: null, last: 0 };

async function startReplay() {
  $("#replay").hidden = false;
  rp.info = await (await fetch("api/replay")).json();
  const info = rp.info;
  $("#slider").max = info.frames - 1;
  $("#frameno").max = info.frames - 1;
  $("#status").textContent = `${info.files.length} replay(s), ${info.frames} frames`;
  showFiles(info);
  if (!info.checked) pollChecked();
  $("#reports").innerHTML = (info.reports || []).map((r) => `<div class="report"><h2>Desync report ${esc(r.file)}</h2>
    member ${r.self} found it comparing with member ${r.with} (${esc(r.engine)}, ${esc(r.sim)}, built with ${esc(r.build || "?")}): ${esc(r.detail)};
    member ${r.member} differs from the majority.
    <table><tr><th>section at frame ${r.frame}</th><th>member ${r.self}</th><th>member ${r.with}</th><th></th></tr>
    ${r.ours.map((s, j) => {
      const t = r.theirs[j] || { hash: "–" };
      const differs = t.hash !== s.hash;
      return `<tr class="${differs ? "differs" : ""}"><td>${esc(s.name)}</td><td><code>${esc(s.hash)}</code></td><td><code>${esc(t.hash)}</code></td><td>${differs ? "differs" : ""}</td></tr>`;
    }).join("")}</table></div>`).join("");
  const d = info.divergence;
  const dv = $("#divergence");
  if (d) {
    dv.className = "diverged";
    dv.innerHTML = `First divergent frame <span id="div-frame">${d.frame}</span>` +
      (d.section ? `, first divergent section "<span id="div-section">${esc(d.section)}</span>"` : "") +
      `: ${esc(d.text)}.`;
    $("#jump").hidden = false;
    $("#jump").onclick = () => seek(d.frame);
  } else {
    dv.className = "";
    dv.textContent = info.files.length > 1 ? "The replays agree: same buckets, same recorded hashes." : "";
  }
  $("#slider").oninput = (e) => seek(+e.target.value);
  $("#frameno").onchange = (e) => seek(+e.target.value);
  $("#play").onclick = () => {
    rp.playing = !rp.playing;
    $("#play").textContent = rp.playing ? "pause" : "play";
    rp.last = performance.now();
    rp.pos = rp.frame;
    if (rp.playing) requestAnimationFrame(tick);
  };
  seek(d ? d.frame : 0);
}

// showFiles describes the replays: what each is and whether re-running
// its buckets reproduces its hashes (once checked).
function showFiles(info) {
  $("#files").innerHTML = info.files.map((f, i) =>
    `<div>${i === 0 ? "reference" : "compared"}: <b>${esc(f.name)}</b> — ${esc(f.sim)}, recorded by member ${f.self} of ${f.members.length}, ${f.frames} frames, ${f.checkpoints} checkpoints, ${esc(f.end || "no end")}; ` +
    (f.error ? `<span class="bad">${esc(f.error)}</span>` : !info.checked ? `<span class="checking">checking that re-running its buckets reproduces its hashes… (${f.checked_to} of ${f.frames} frames)</span>` : f.reproduces ? "re-running its buckets reproduces its hashes"
      : `<span class="bad">re-running its buckets does not reproduce its hashes from frame ${f.rerun_frame}${f.rerun_section ? ` (section "${esc(f.rerun_section)}")` : ""}: its state was changed by something outside its commands</span>`) +
    (f.changes.length ? "; " + f.changes.map((c) => `${c.type} of member ${c.member} at frame ${c.frame}`).join(", ") : "") +
    (f.world_frame >= 0 ? `; its report holds the world its member had after frame <a href="#" class="world-jump" data-frame="${f.world_frame}">${f.world_frame}</a>` : "") +
    ((f.restored_frames || []).length ? `; states restored from its report at frame(s) ` +
      f.restored_frames.map((x) => `<a href="#" class="world-jump" data-frame="${x}">${x}</a>`).join(" and ") : "") + "</div>").join("");
  for (const a of document.querySelectorAll(".world-jump")) a.onclick = (e) => { e.preventDefault(); seek(+a.dataset.frame); };
}

// pollChecked asks for the replays' description until the server has
// re-run them all, and shows it then.
async function pollChecked() {
  for (;;) {
    await new Promise((done) => setTimeout(done, 1000));
    const info = await (await fetch("api/replay")).json();
    if (!info.checked) showFiles(info); // how far the check has got
    if (info.checked) {
      rp.info.files = info.files;
      rp.info.checked = true;
      showFiles(info);
      if (rp.shown) { const f = rp.frame; rp.frame = -1; seek(f); } // the notes under each world depend on it
      return;
    }
  }
}

function tick(now) {
  if (!rp.playing) return;
  const speed = Math.max(0.01, +$("#speed").value || 1);
  const frameMS = (rp.info.files[0] && rp.info.files[0].frame_ms) || 50;
  rp.pos += ((now - rp.last) / frameMS) * speed;
  rp.last = now;
  if (rp.pos >= rp.info.frames - 1) {
    rp.pos = rp.info.frames - 1;
    rp.playing = false;
    $("#play").textContent = "play";
  }
  seek(Math.floor(rp.pos));
  if (rp.playing) requestAnimationFrame(tick);
}

// seek shows frame f; while a request is on its way, only the newest
// frame asked for is fetched next.
function seek(f) {
  f = Math.max(0, Math.min(rp.info.frames - 1, Math.floor(f)));
  rp.want = f;
  if (!rp.playing) rp.pos = f;
  if (rp.busy) return;
  rp.busy = true;
  const go = async () => {
    while (rp.want !== null) {
      const want = rp.want;
      rp.want = null;
      if (want === rp.frame && rp.shown) continue;
      const r = await fetch("api/replay/frame?f=" + want);
      if (r.ok) showFrame(await r.json());
    }
    rp.busy = false;
  };
  go();
}

function showFrame(fr) {
  rp.frame = fr.frame;
  // A pending frame shows an earlier world (the check has not got that
  // far yet): it is asked again until it comes whole.
  rp.shown = !fr.pending;
  clearTimeout(rp.retry);
  if (fr.pending) rp.retry = setTimeout(() => { if (rp.frame === fr.frame && !rp.shown) seek(fr.frame); }, 700);
  $("#slider").value = fr.frame;
  $("#frameno").value = fr.frame;
  const sides = $("#sides");
  if (sides.children.length !== fr.sides.length) {
    sides.innerHTML = fr.sides.map((_, i) => `<div class="side panel" data-side="${i}">
      <h3></h3><canvas width="480" height="480"></canvas><div class="diff"></div>
      <div class="recorded" hidden><h2>The world its member had at this frame (from its desync report)</h2>
      <canvas width="480" height="480"></canvas><div class="recorded-diff"></div></div>
      <div class="restored" hidden><h2></h2><div class="pair">
      <figure><figcaption></figcaption><canvas width="320" height="320"></canvas></figure>
      <figure><figcaption></figcaption><canvas width="320" height="320"></canvas></figure></div>
      <div class="restored-diff"></div><table class="restored-secs"></table></div>
      <h2>Bucket of this frame</h2><ul class="cmds"></ul><h2>Hash report</h2><div class="check"></div></div>`).join("");
  }
  const ref = fr.sides[0];
  // Units the others lack are ringed on the reference's side.
  const missing = new Set();
  for (const s of fr.sides.slice(1)) for (const d of s.diff) if (d.what === "missing here") missing.add(d.i);
  fr.sides.forEach((s, i) => {
    const el = sides.children[i];
    const f = rp.info.files[i];
    el.querySelector("h3").textContent = s.at === fr.frame ? `${f.name} (member ${f.self}) at frame ${fr.frame}, re-run hash ${s.hash || "–"}` :
      `${f.name} (member ${f.self}): the world after frame ${s.at}, re-run hash ${s.hash || "–"}; frame ${fr.frame} follows when the check gets there`;
    const marks = new Map();
    for (const d of s.diff) marks.set(d.i, d.what === "moved" ? "#f0a" : d.what === "hp" ? "#fa0" : "#f00");
    if (i === 0) for (const id of missing) marks.set(id, "#f00");
    drawScene(el.querySelector("canvas"), s.scene, marks);
    const rec = el.querySelector(".recorded");
    rec.hidden = !s.recorded;
    if (s.recorded) {
      const rmarks = new Map();
      for (const d of s.recorded_diff || []) rmarks.set(d.i, d.what === "moved" ? "#f0a" : d.what === "hp" ? "#fa0" : "#f00");
      drawScene(rec.querySelector("canvas"), s.recorded, rmarks);
      const n = (s.recorded_diff || []).length;
      rec.querySelector(".recorded-diff").innerHTML = n === 0 ? "the same as the world its commands give" :
        `<span class="bad">${n} unit(s) differ from the world its commands give: ` +
        s.recorded_diff.slice(0, 12).map((d) => `unit ${d.i} (${esc(d.what)})`).join(", ") + (n > 12 ? ", …" : "") + "</span>";
    }
    showRestored(el.querySelector(".restored"), s.restored);
    const counts = {};
    for (const d of s.diff) counts[d.what] = (counts[d.what] || 0) + 1;
    const notRerun = !f.reproduces && f.rerun_frame >= 0 && fr.frame >= f.rerun_frame;
    el.querySelector(".diff").innerHTML = i === 0 ? "reference" : s.diff.length === 0 ? "re-run from its buckets, the same world as the reference" +
      (notRerun ? `; <span class="bad">but the world its member recorded was not this one (its hashes differ from frame ${f.rerun_frame}): the change did not come from its commands</span>` : "") :
      `<span class="bad">differs from the reference: ${Object.entries(counts).map(([k, v]) => `${v} unit(s) ${k}`).join(", ")}</span>`;
    el.querySelector(".cmds").innerHTML = s.commands.length === 0 ? "<li>(empty)</li>" :
      s.commands.map((c) => `<li style="color:${color(c.slot)}">member ${c.slot} #${c.seq}: ${esc(c.text)}</li>`).join("");
    const cp = s.checkpoint;
    if (!cp) {
      el.querySelector(".check").textContent = "no checkpoint recorded yet";
    } else {
      const rc = ref.checkpoint && ref.checkpoint.frame === cp.frame ? ref.checkpoint : null;
      el.querySelector(".check").innerHTML = `checkpoint of frame ${cp.frame}: <code>${cp.hash}</code>` +
        `<table>${cp.sections.map((sec, j) => {
          const differs = rc && rc.sections[j] && rc.sections[j].hash !== sec.hash;
          return `<tr class="${differs ? "differs" : ""}"><td>${esc(sec.name)}</td><td><code>${sec.hash}</code></td><td>${differs ? "differs" : ""}</td></tr>`;
        }).join("")}</table>`;
    }
  });
}

// showRestored draws the two states a desync report holds for this frame,
// restored, side by side: the units of the second that differ from the
// first are ringed, and the sections whose hashes differ are marked.
function showRestored(el, p) {
  el.hidden = !p;
  if (!p) return;
  const ws = p.worlds;
  el.querySelector("h2").textContent = `Restored from its desync report: the states at the ${p.role} (frame ${p.frame})`;
  const figs = el.querySelectorAll("figure");
  const marks = new Map();
  for (const d of p.diff) marks.set(d.i, d.what === "moved" ? "#f0a" : d.what === "hp" ? "#fa0" : "#f00");
  figs.forEach((fig, j) => {
    const w = ws[j];
    fig.hidden = !w;
    if (!w) return;
    fig.querySelector("figcaption").innerHTML = `member ${w.member}${j === 0 ? " (the report's)" : ""}: hash <code>${esc(w.hash || "–")}</code>` +
      (w.error ? ` <span class="bad">${esc(w.error)}</span>` : "");
    // Ring on both: the same unit, as each side has it.
    drawScene(fig.querySelector("canvas"), w.scene, marks);
  });
  const n = p.diff.length;
  el.querySelector(".restored-diff").innerHTML = ws.length < 2 ? "the other side's state is not in the report" :
    n === 0 && !p.section ? "the two states are the same" :
      `<span class="bad">first divergent section "<span class="restored-section">${esc(p.section || "?")}</span>"; ${n} unit(s) differ: ` +
      p.diff.slice(0, 12).map((d) => `unit ${d.i} (${esc(d.what)})`).join(", ") + (n > 12 ? ", …" : "") + "</span>";
  const a = ws[0] ? ws[0].sections : [], b = ws[1] ? ws[1].sections : [];
  el.querySelector(".restored-secs").innerHTML = `<tr><th>section</th>${ws.map((w) => `<th>member ${w.member}</th>`).join("")}<th></th></tr>` +
    a.map((sec, j) => {
      const differs = b[j] && b[j].hash !== sec.hash;
      return `<tr class="${differs ? "differs" : ""}"><td>${esc(sec.name)}</td><td><code>${sec.hash}</code></td>` +
        (ws.length > 1 ? `<td><code>${b[j] ? b[j].hash : "–"}</code></td>` : "") + `<td>${differs ? "differs" : ""}</td></tr>`;
    }).join("");
}

// ---- start ----

fetch("api/mode").then((r) => r.json()).then((mode) => {
  document.title = "Phalanx " + (mode.title || "");
  $("#title").textContent = mode.title || "";
  if (mode.mode === "replay") startReplay(); else startLive(mode);
});
