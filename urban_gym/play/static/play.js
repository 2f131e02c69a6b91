// urban_gym play: draws the page state the server sends and posts the person's commands.
// Plain JavaScript, no build step. The server turns a command ({control, params}) into the
// env's structured action (urban_gym/play/controls.py); this file only knows the keys.
"use strict";

const $ = (id) => document.getElementById(id);
const page = {
  config: null,
  state: null,
  busy: false,
  widgets: {}, // name -> current value
  latencies: [], // client milliseconds from key press to the new frame drawn
};
window.__play = page;

async function api(path, body) {
  const init = { method: body === undefined ? "GET" : "POST", credentials: "same-origin" };
  if (body !== undefined) {
    init.headers = { "Content-Type": "application/json" };
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const j = await r.json();
  if (!r.ok) {
    const err = new Error(j.error || "HTTP " + r.status);
    err.status = r.status;
    throw err;
  }
  return j;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function flash(text) {
  const f = $("flash");
  f.textContent = text;
  f.hidden = !text;
}

// ---------------------------------------------------------------- widgets and buttons
function buildWidgets() {
  const box = $("widgets");
  for (const w of page.config.controls.widgets) {
    page.widgets[w.name] = w.default;
    const row = el("div", { class: "widget", id: "widget-" + w.name }, el("label", {}, w.label + ":"));
    if (w.kind === "choice") {
      for (const [value, label, key] of w.choices) {
        const id = `w-${w.name}-${value || "default"}`;
        const input = el("input", { type: "radio", name: w.name, id: id, value: value });
        if (value === w.default) input.checked = true;
        input.addEventListener("change", () => (page.widgets[w.name] = value));
        row.append(input, el("label", { for: id }, `${label} [${key}]`));
      }
    } else {
      const range = el("input", { type: "range", id: `w-${w.name}-range`, min: w.low, max: w.high, step: w.step, value: w.default });
      const num = el("input", { type: "number", id: `w-${w.name}`, min: w.low, max: w.high, step: "any", value: w.default });
      range.addEventListener("input", () => { num.value = range.value; page.widgets[w.name] = parseFloat(range.value); });
      num.addEventListener("input", () => {
        const v = parseFloat(num.value);
        if (Number.isFinite(v)) { page.widgets[w.name] = v; range.value = v; }
      });
      row.append(range, num, " " + w.unit);
    }
    box.append(row);
  }
}

function setChoice(name, value) {
  page.widgets[name] = value;
  const input = $(`w-${name}-${value || "default"}`);
  if (input) input.checked = true;
}

function buildControls() {
  const box = $("controls");
  const keys = $("keys");
  for (const c of page.config.controls.controls) {
    const b = el("button", { type: "button", id: "btn-" + c.id, "data-control": c.id }, c.label);
    b.addEventListener("click", (ev) => press(c, ev.shiftKey));
    box.append(b);
    const names = c.keys.map((k) => (k === " " ? "Space" : k)).join(" / ");
    keys.append(el("li", {}, `${names}: ${c.label}${c.shift ? " (Shift: sprint)" : ""}`));
  }
  for (const w of page.config.controls.widgets) {
    for (const [value, label, key] of w.choices || []) keys.append(el("li", {}, `${key}: ${w.label} ${label}`));
  }
  for (const note of page.config.controls.notes || []) keys.append(el("li", {}, note));
  if (page.config.controls.answer_box) {
    $("answer-form").hidden = false;
    $("answer").placeholder = page.config.controls.answer_hint;
  }
}

function modeOf(state) {
  return state && state.map_mode ? "map" : "first_person";
}

function usable(c, shift) {
  const s = page.state;
  if (!s || s.phase !== "playing") return false;
  if (c.mode && c.mode !== modeOf(s)) return false;
  const need = shift && c.needs_shift ? c.needs_shift : c.needs;
  return !need || (s.available || []).includes(need);
}

function updateButtons() {
  for (const c of page.config.controls.controls) {
    const b = $("btn-" + c.id);
    b.hidden = Boolean(c.mode && c.mode !== modeOf(page.state));
    b.disabled = page.busy || !usable(c, false);
  }
  const s = page.state || {};
  const answering = s.phase === "playing" &&
    (s.available || []).some((a) => a === "ANSWER" || a === "answer");
  for (const b of document.querySelectorAll("#options button, #letters button")) b.disabled = page.busy;
  $("answer").disabled = !answering;
  $("answer-submit").disabled = !answering || page.busy;
}

// ---------------------------------------------------------------- drawing the state
function render(state) {
  page.state = state;
  document.body.dataset.phase = state.phase;
  document.body.dataset.session = state.session;
  document.body.dataset.version = state.version;
  document.body.dataset.step = state.step || 0;
  $("env").textContent = page.config.env_id;
  const p = state.progress || {};
  $("progress").textContent = `${p.recorded || 0} of ${p.total || 0} episodes recorded`;
  $("where").textContent = state.task ? `task ${state.task.number} of ${state.task.of} · step ${state.step}` : "";
  $("between").hidden = state.phase !== "between";
  $("done").hidden = state.phase !== "done";
  if (state.last) {
    const l = state.last;
    $("last").textContent = l.error
      ? `Task ${l.number} could not start: ${l.error}`
      : `Task ${l.number} recorded (${l.termination}, ${l.steps} steps).`;
  }
  drawImages(state);
  drawOptions(state);
  drawTexts(state);
  drawLetters(state);
  const fb = $("feedback");
  fb.textContent = state.feedback ? "Not carried out: " + state.feedback : "";
  fb.hidden = !state.feedback;
  updateButtons();
}

function drawImages(state) {
  const box = $("images");
  box.replaceChildren();
  for (const [i, im] of (state.images || []).entries()) {
    const img = el("img", { src: im.src, alt: im.caption, id: "img-" + im.name, draggable: "false" });
    img.className = i === 0 ? "main" : "side";
    if (im.name === "view" && state.map_mode) {
      img.classList.add("map-mode");
      attachMapGestures(img);
    }
    box.append(el("figure", {}, img, el("figcaption", {}, state.map_mode && im.name === "view" ? "Map" : im.caption)));
  }
}

function drawOptions(state) {
  const box = $("options");
  box.replaceChildren();
  if (!state.options) return;
  if (state.heading) box.append(el("div", { class: "heading" }, "Your direction of travel: " + state.heading));
  for (const o of state.options) {
    const b = el("button", { type: "button", id: "opt-" + o.index, "data-option": o.index });
    if (o.src) b.append(el("img", { src: o.src, alt: "option " + o.index }));
    b.append(el("div", {}, `[${o.index}] Option ${o.index}: ${o.label}`));
    b.addEventListener("click", () => send("option", { option: o.index }));
    box.append(b);
  }
}

function drawTexts(state) {
  const box = $("texts");
  box.replaceChildren();
  for (const t of state.texts || []) {
    box.append(el("div", { class: "text", id: "text-" + t.name }, el("h3", {}, t.title), el("p", {}, t.text)));
  }
}

function drawLetters(state) {
  const box = $("letters");
  box.replaceChildren();
  for (const [i, L] of (state.letters || []).entries()) {
    const b = el("button", { type: "button", id: "letter-" + L }, `${i + 1}: answer ${L}`);
    b.addEventListener("click", () => send("answer", { text: L }));
    box.append(b);
  }
}

// ---------------------------------------------------------------- commands
async function send(control, params) {
  if (page.busy) { flash("wait: the last step is still running"); return; }
  if (!page.state || page.state.phase !== "playing") return;
  page.busy = true;
  document.body.dataset.busy = "1";
  updateButtons();
  flash("");
  const t0 = performance.now();
  try {
    const state = await api("/api/act", { control: control, params: params || {} });
    render(state);
    await Promise.all([...document.querySelectorAll("#stage img")].map((i) => i.decode().catch(() => null)));
    page.latencies.push({ control: control, client_ms: performance.now() - t0, server_ms: state.server_ms });
  } catch (e) {
    flash(e.message);
    if (e.status === 400 && /session/.test(e.message)) location.reload();
  } finally {
    page.busy = false;
    document.body.dataset.busy = "0";
    updateButtons();
  }
}

function press(c, shift) {
  if (!usable(c, shift)) {
    flash(`${c.label}: not possible now`);
    return;
  }
  const params = {};
  for (const n of c.params) params[n] = page.widgets[n];
  if (c.shift) params.sprint = Boolean(shift);
  send(c.id, params);
}

function answer(text) {
  send("answer", { text: text });
}

async function nextTask() {
  if (page.busy) return;
  page.busy = true;
  document.body.dataset.busy = "1";
  try {
    render(await api("/api/next", {}));
  } catch (e) {
    flash(e.message);
  } finally {
    page.busy = false;
    document.body.dataset.busy = "0";
    updateButtons();
  }
}

// ---------------------------------------------------------------- keys
function keyName(ev) {
  return ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
}

function onKey(ev) {
  const t = ev.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const key = keyName(ev);
  const s = page.state || {};
  if (s.phase === "between" && key === "n") { ev.preventDefault(); nextTask(); return; }
  if (s.phase !== "playing") return;
  const digits = page.config.controls.digits;
  if (/^[0-9]$/.test(key)) {
    const d = parseInt(key, 10);
    if (digits === "options") { ev.preventDefault(); send("option", { option: d }); return; }
    if (digits === "letters" && d >= 1 && d <= (s.letters || []).length) {
      ev.preventDefault(); answer(s.letters[d - 1]); return;
    }
    for (const w of page.config.controls.widgets) {
      for (const [value, , k] of w.choices || []) {
        if (k === key) { ev.preventDefault(); setChoice(w.name, value); flash(`${w.label}: ${value || "default"}`); return; }
      }
    }
  }
  const mode = modeOf(s);
  const hit = page.config.controls.controls.find((c) => c.keys.includes(key) && (!c.mode || c.mode === mode));
  if (hit) { ev.preventDefault(); press(hit, ev.shiftKey); return; }
  if (key === "Enter" && page.config.controls.answer_box) { ev.preventDefault(); $("answer").focus(); }
}

// ---------------------------------------------------------------- map gestures
let wheelSum = 0;
let wheelTimer = null;

function attachMapGestures(img) {
  let start = null;
  img.addEventListener("pointerdown", (ev) => {
    start = { x: ev.clientX, y: ev.clientY };
    img.setPointerCapture(ev.pointerId);
    ev.preventDefault();
  });
  img.addEventListener("pointerup", (ev) => {
    if (!start) return;
    const r = img.getBoundingClientRect();
    const dx = (ev.clientX - start.x) / r.width;
    const dy = (ev.clientY - start.y) / r.height;
    start = null;
    if (Math.hypot(dx * r.width, dy * r.height) < 4) {
      send("map_click", { x: (ev.clientX - r.left) / r.width, y: (ev.clientY - r.top) / r.height });
    } else {
      send("map_drag", { dx: dx, dy: dy });
    }
  });
  img.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    // deltaY of one mouse-wheel notch is about 100 pixels (or 1-3 lines)
    wheelSum += ev.deltaMode === 0 ? ev.deltaY / 100 : ev.deltaY / 3;
    clearTimeout(wheelTimer);
    wheelTimer = setTimeout(() => {
      const n = Math.max(-2, Math.min(2, wheelSum));
      wheelSum = 0;
      if (Math.abs(n) >= 0.05) send("map_wheel", { notches: n });
    }, 250);
  }, { passive: false });
}

// ---------------------------------------------------------------- start
async function start() {
  page.config = await api("/api/config");
  document.title = "urban_gym play: " + page.config.env_id;
  buildWidgets();
  buildControls();
  $("answer-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("answer").value.trim();
    if (text) { answer(text); $("answer").value = ""; $("answer").blur(); }
  });
  $("next").addEventListener("click", nextTask);
  document.addEventListener("keydown", onKey);
  window.addEventListener("pagehide", () => navigator.sendBeacon("/api/leave"));
  setInterval(() => api("/api/heartbeat", {}).catch(() => null), 5000);
  page.busy = true;
  document.body.dataset.busy = "1";
  try {
    render(await api("/api/session", {}));
  } finally {
    page.busy = false;
    document.body.dataset.busy = "0";
    updateButtons();
  }
}

start().catch((e) => flash("could not start: " + e.message));
