// The query builder's front end: an anywidget ES module, plain DOM, no dependencies.
//
// The browser owns the document (what a person typed); every edit updates a local
// copy, bumps `rev` and sends it. Python checks it and answers with `report`
// (errors per item, the query); a report never rewrites a box being typed in.
// The operators (per kind of field with their words and arity, those that match
// text, those that read a bare day as the whole day) come from Python in
// `catalog`: no table of them is written here.

const SPLIT = new Set([",", "\n", "\r", "\t"]);

function clone(value) {
  return JSON.parse(JSON.stringify(value));
}

function canon(value) {
  if (Array.isArray(value)) return "[" + value.map(canon).join(",") + "]";
  if (value && typeof value === "object") {
    return "{" + Object.keys(value).sort()
      .map((k) => JSON.stringify(k) + ":" + canon(value[k])).join(",") + "}";
  }
  return JSON.stringify(value === undefined ? null : value);
}

function sameDoc(a, b) {
  const strip = (d) => Object.assign({}, d || {}, { rev: 0 });
  return canon(strip(a)) === canon(strip(b));
}

/** Split typed or pasted text into values: commas, newlines and tabs separate,
 *  except inside double quotes; the quotes themselves are dropped.
 *  Returns [values, rest]: rest is the text after the last separator (unfinished). */
export function splitValues(text, finish) {
  const values = [];
  let current = "", quoted = false;
  for (const ch of text) {
    if (ch === '"') { quoted = !quoted; current += ch; continue; }
    if (!quoted && SPLIT.has(ch)) { values.push(current); current = ""; continue; }
    current += ch;
  }
  let rest = values.length ? current.replace(/^\s+/, "") : current;
  if (finish) { values.push(current); rest = ""; }
  const clean = values.map(unquote).filter((v) => v !== "");
  return [clean, rest];
}

function unquote(text) {
  let t = text.trim();
  if (t.length >= 2 && t.startsWith('"') && t.endsWith('"')) t = t.slice(1, -1);
  else t = t.replace(/^"|"$/g, "");
  return t.trim();
}

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "value") el.value = value;
    else if (key === "checked" || key === "disabled" || key === "selected") el[key] = true;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

let instances = 0;

// The functions below take `ui`, the state of one builder (its model, its root
// element, the document with its undo and redo stacks, the views last drawn), or
// `list`, that of one list box.

// ---------------------------------------------------------------- catalog
const catalogOf = (ui) => ui.model.get("catalog") || {};
const reportOf = (ui) => ui.model.get("report") || {};

function opTable(ui) {
  const table = new Map();
  for (const list of Object.values(catalogOf(ui).operators || {})) {
    for (const [op, label, arity] of list) if (!table.has(op)) table.set(op, { label, arity });
  }
  return table;
}
function opsOf(ui, kind) {
  const operators = catalogOf(ui).operators || {};
  return operators[kind] || operators.string || [];
}
function arityOf(ui, op) {
  const found = opTable(ui).get(op);
  return found ? found.arity : 1;
}
const isTextOp = (ui, op) => (catalogOf(ui).text_operators || []).includes(op);
const isWholeDayOp = (ui, op) => (catalogOf(ui).whole_day_operators || []).includes(op);
function fieldsFor(ui, inEach) {
  return (inEach ? catalogOf(ui).subscription_fields : catalogOf(ui).fields) || [];
}
function lookupField(ui, text, inEach) {
  const t = (text || "").trim();
  if (!t) return null;
  const fields = fieldsFor(ui, inEach);
  return fields.find((f) => f.name === t || f.label === t) ||
    fields.find((f) => f.title && f.title.toLowerCase() === t.toLowerCase()) || null;
}

// ---------------------------------------------------------------- document
function walk(node, fn, parent = null, inEach = false) {
  fn(node, parent, inEach);
  if (node.type === "group") {
    const each = inEach || node.each === "subscriptions";
    for (const item of node.items) walk(item, fn, node, each);
  }
}
function noteIds(ui) {
  walk(ui.doc.root, (n) => {
    const m = /(\d+)$/.exec(n.id || "");
    if (m) ui.nextId = Math.max(ui.nextId, Number(m[1]) + 1);
  });
}
const newId = (ui, prefix) => `${prefix}${ui.nextId++}`;
const emptyRule = (ui) => ({
  id: newId(ui, "r"), type: "rule", field: "", operator: "equal", value: "", ignore_case: false,
});
const emptyGroup = (ui, each = null) => ({
  id: newId(ui, "g"), type: "group", join: "and", not: false, each, items: [emptyRule(ui)],
});
function findIn(node, id, parent = null) {
  if (node.id === id) return { node, parent };
  if (node.type === "group") {
    for (const item of node.items) {
      const found = findIn(item, id, node);
      if (found) return found;
    }
  }
  return null;
}
const find = (ui, id) => findIn(ui.doc.root, id);
function reid(ui, node) {
  node.id = newId(ui, node.type === "group" ? "g" : "r");
  if (node.type === "group") node.items.forEach((item) => reid(ui, item));
  return node;
}

/** The document Python set: the only maker of a fresh one (until it comes, nothing is drawn). */
function start(ui) {
  const initial = ui.model.get("document");
  ui.doc = initial && initial.root ? clone(initial) : null;
  if (ui.doc) noteIds(ui);
}

function send(ui) {
  ui.model.set("document", clone(ui.doc));
  ui.model.save_changes();
}

/** One edit: `change(doc)` mutates the document. `key` names the text box being
 *  typed in: edits with the same key one after another are one undo step. */
function edit(ui, change, { key = null, redraw = true, focus = null } = {}) {
  if (key === null || key !== ui.coalesce) {
    ui.undoStack.push(undoStep(ui));
    if (ui.undoStack.length > 200) ui.undoStack.shift();
  }
  ui.redoStack = [];
  ui.coalesce = key;
  clearNotes(ui);
  change(ui.doc);
  ui.doc.rev = (ui.doc.rev || 0) + 1;
  send(ui);
  if (redraw) draw(ui, focus);
  else refreshBar(ui);
}

function clearNotes(ui) {
  ui.notes.clear();
  for (const note of ui.el.querySelectorAll(".sn-tag-note")) note.remove();
  if (ui.clearedNote) {
    ui.clearedNote = false;
    for (const note of ui.el.querySelectorAll(".sn-clear-note")) note.remove();
  }
}

/** An undo step: the document before an edit, and the control the edit was made with. */
function undoStep(ui, by = focusKey(ui)?.key ?? null) {
  return { doc: clone(ui.doc), by };
}

/** Undo (`from` the undo stack, saving the current document `to` the redo one) or redo.
 *  Focus stays in the builder, so the next Ctrl+Z reaches it: on the control focused
 *  now if it is still drawn, else on the one the edit was made with, else on Undo/Redo. */
function step(ui, from, to) {
  if (!from.length) return;
  const { doc, by } = from.pop();
  to.push(undoStep(ui, by));
  const here = focusKey(ui);
  const rev = ui.doc.rev;
  ui.doc = doc;
  ui.doc.rev = rev + 1;  // a new revision, so the report answers this document
  ui.coalesce = null;
  clearNotes(ui);
  noteIds(ui);
  send(ui);
  const own = from === ui.undoStack ? "undo" : "redo";
  const keys = [here?.key, by, own, own === "undo" ? "redo" : "undo"].filter(Boolean);
  draw(ui, { key: keys, sel: here?.sel ?? null });
  if (!ui.root.contains(document.activeElement)) {
    ui.root.querySelector("input, select, button:not(:disabled)")?.focus({ preventScroll: true });
  }
}
const undo = (ui) => step(ui, ui.undoStack, ui.redoStack);
const redo = (ui) => step(ui, ui.redoStack, ui.undoStack);

/** A document from Python (load, clear, import): adopted as one undoable step. */
function adopt(ui) {
  const incoming = ui.model.get("document");
  if (!incoming || !incoming.root || sameDoc(incoming, ui.doc)) return;
  if (!ui.doc) {
    start(ui);
    draw(ui);
    return;
  }
  ui.undoStack.push(undoStep(ui));
  ui.redoStack = [];
  ui.coalesce = null;
  const rev = ui.doc.rev || 0;
  ui.doc = clone(incoming);
  noteIds(ui);
  if (!(ui.doc.rev > rev)) {
    ui.doc.rev = rev + 1;
    send(ui);
  }
  clearNotes(ui);
  draw(ui);
}

// ---------------------------------------------------------------- keys and focus
function listenKeys(ui) {
  ui.root.addEventListener("keydown", (event) => {
    event.stopPropagation();
    const mod = event.ctrlKey || event.metaKey;
    if (!mod || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key === "z" && !event.shiftKey) { event.preventDefault(); undo(ui); }
    else if ((key === "z" && event.shiftKey) || key === "y") { event.preventDefault(); redo(ui); }
  });
  // Lumino stops looking for a shortcut's selector at an element with this
  // attribute, but tests the key's target first: a focused button matches
  // ".jp-Notebook.jp-mod-commandMode :focus" by itself. So the attribute goes on
  // whatever takes focus here; the root's stopPropagation alone only helps where
  // shortcuts are read as the key bubbles (JupyterLab), not in Notebook 7.
  ui.root.addEventListener("focusin", (event) => {
    if (event.target instanceof Element) event.target.setAttribute("data-lm-suppress-shortcuts", "true");
  });
  ui.root.addEventListener("focusout", (event) => {
    if (event.target && event.target.matches && event.target.matches("input, textarea")) {
      ui.coalesce = null;
    }
  });
}

function focusKey(ui) {
  const active = document.activeElement;
  if (!active || !ui.root.contains(active)) return null;
  const key = active.getAttribute("data-fk");
  if (!key) return null;
  const sel = "selectionStart" in active && typeof active.selectionStart === "number"
    ? [active.selectionStart, active.selectionEnd] : null;
  return { key, sel };
}
function restoreFocus(ui, saved) {
  if (!saved) return;
  const keys = Array.isArray(saved.key) ? saved.key : [saved.key];
  for (const key of keys) {
    const target = ui.root.querySelector(`[data-fk="${CSS.escape(key)}"]`);
    if (target && !target.disabled) {
      target.focus({ preventScroll: true });
      if (saved.sel && "setSelectionRange" in target) {
        try { target.setSelectionRange(saved.sel[0], saved.sel[1]); } catch (e) { /* not text */ }
      }
      return;
    }
  }
}

// ---------------------------------------------------------------- drawing
/** Draw everything again; `focus`: the keys to focus (or {key, sel}), else what has focus now. */
function draw(ui, focus = null) {
  if (!ui.doc) return;
  const saved = focus && focus.key ? focus : focus ? { key: focus, sel: null } : focusKey(ui);
  const parts = ui.parts;
  ui.listBoxes.clear();
  ui.ruleViews.clear();
  ui.groupViews.clear();
  ui.root.replaceChildren();
  parts.notices = h("div", { class: "sn-notices", role: "status" });
  parts.bar = drawBar(ui);
  parts.datalists = drawDatalists(ui);  // before the rules, which add their suggestions
  parts.tree = h("div", { class: "sn-tree" }, drawGroup(ui, ui.doc.root, null, false));
  parts.bottom = drawBottom(ui);
  ui.root.append(parts.notices, parts.bar, parts.tree, parts.bottom, parts.datalists);
  applyReport(ui);
  applyPreview(ui);
  applyNotices(ui);
  for (const field of parts.tree.querySelectorAll("input.sn-field")) resizeField(field);
  restoreFocus(ui, saved);
}

function datalist(id, values) {
  return h("datalist", { id }, values.map((v) => h("option", { value: v })));
}
function drawDatalists(ui) {
  const label = (f) => f.label || f.name;
  const returnable = [...new Set(fieldsFor(ui, false).map((f) => f.name).concat(["_id", "subscriptions"]))];
  return h("div", { class: "sn-datalists", hidden: true },
    datalist(`${ui.uid}-fields`, fieldsFor(ui, false).map(label)),
    datalist(`${ui.uid}-subfields`, fieldsFor(ui, true).map(label)),
    datalist(`${ui.uid}-returnable`, returnable));
}

// ---------------------------------------------------------------- toolbar
const clearNote = () => h("span", { class: "sn-clear-note", role: "status" }, "cleared: Undo brings it back");

function drawBar(ui) {
  const bar = h("div", { class: "sn-bar" },
    h("button", { type: "button", class: "sn-btn sn-undo", "data-fk": "undo", title: "Undo (Ctrl+Z)",
      disabled: !ui.undoStack.length, onclick: () => undo(ui) }, "Undo"),
    h("button", { type: "button", class: "sn-btn sn-redo", "data-fk": "redo", title: "Redo (Ctrl+Shift+Z)",
      disabled: !ui.redoStack.length, onclick: () => redo(ui) }, "Redo"),
    h("button", { type: "button", class: "sn-btn sn-clear", "data-fk": "clear",
      title: "Start again with one empty rule (Undo brings it back)", onclick: () => clearAll(ui) }, "Clear"),
  );
  if (ui.clearedNote) bar.append(clearNote());
  return bar;
}
function refreshBar(ui) {
  if (!ui.parts.bar) return;
  ui.parts.bar.querySelector(".sn-undo").disabled = !ui.undoStack.length;
  ui.parts.bar.querySelector(".sn-redo").disabled = !ui.redoStack.length;
}

/** Back to one empty rule; the fields to return and the rows to preview stay, as qb.clear(). */
function clearAll(ui) {
  edit(ui, (d) => {
    d.root = emptyGroup(ui);
  }, { focus: "clear" });
  ui.clearedNote = true;  // after the edit, which clears the notes of the one before
  ui.parts.bar.append(clearNote());
}

// ---------------------------------------------------------------- moving items
function moveButtons(ui, node, parent, kind) {
  if (!parent) return [];
  const index = parent.items.indexOf(node);
  const id = node.id;
  return [
    h("button", { type: "button", class: "sn-btn sn-icon sn-clone", "aria-label": `clone ${kind}`,
      title: `clone ${kind}`, "data-fk": `${id}:clone`, onclick: () => cloneItem(ui, id) }, "\u2750"),
    h("button", { type: "button", class: "sn-btn sn-icon sn-up", "aria-label": `move ${kind} up`,
      title: `move ${kind} up`, "data-fk": `${id}:up`, disabled: index === 0,
      onclick: () => moveItem(ui, id, -1) }, "\u2191"),
    h("button", { type: "button", class: "sn-btn sn-icon sn-down", "aria-label": `move ${kind} down`,
      title: `move ${kind} down`, "data-fk": `${id}:down`, disabled: index === parent.items.length - 1,
      onclick: () => moveItem(ui, id, 1) }, "\u2193"),
    h("button", { type: "button", class: "sn-btn sn-icon sn-remove", "aria-label": `remove ${kind}`,
      title: `remove ${kind}`, "data-fk": `${id}:remove`, onclick: () => removeItem(ui, id) }, "\u00d7"),
  ];
}

function cloneItem(ui, id) {
  let copyId = null;
  edit(ui, () => {
    const { node, parent } = find(ui, id);
    const copy = reid(ui, clone(node));
    copyId = copy.id;
    parent.items.splice(parent.items.indexOf(node) + 1, 0, copy);
  }, { focus: [`${id}:clone`] });
  restoreFocus(ui, { key: `${copyId}:clone` });
}
function moveItem(ui, id, by) {
  edit(ui, () => {
    const { node, parent } = find(ui, id);
    const i = parent.items.indexOf(node);
    const j = i + by;
    if (j < 0 || j >= parent.items.length) return;
    parent.items.splice(i, 1);
    parent.items.splice(j, 0, node);
  }, { focus: [`${id}:${by < 0 ? "up" : "down"}`, `${id}:${by < 0 ? "down" : "up"}`, `${id}:clone`] });
}
function removeItem(ui, id) {
  const { node, parent } = find(ui, id);
  const i = parent.items.indexOf(node);
  const after = parent.items[i + 1] || parent.items[i - 1];
  const focus = after
    ? [`${after.id}:remove`, `${after.id}:field`]
    : [`${parent.id}:add-rule`];
  edit(ui, () => {
    parent.items.splice(parent.items.indexOf(node), 1);
  }, { focus });
}
function addItem(ui, groupId, type) {
  let made = null;
  edit(ui, () => {
    made = type === "rule" ? emptyRule(ui) : emptyGroup(ui);
    find(ui, groupId).node.items.push(made);
  }, { focus: [`${groupId}:add-${type}`] });
  const focusId = made.type === "rule" ? made.id : made.items[0].id;
  restoreFocus(ui, { key: `${focusId}:field` });
}

// ---------------------------------------------------------------- a group
function drawGroup(ui, group, parent, inEach) {
  const id = group.id;
  const each = inEach || group.each === "subscriptions";
  const items = h("div", { class: "sn-items" },
    group.items.map((item) => item.type === "group"
      ? drawGroup(ui, item, group, each)
      : drawRule(ui, item, group, each)));
  const cls = ["sn-group"];
  if (parent === null) cls.push("sn-root");
  if (group.each === "subscriptions") cls.push("sn-each-group");
  if (group.not) cls.push("sn-negated");
  const message = h("div", { class: "sn-message sn-group-message", "aria-live": "polite" });
  const el = h("div", { class: cls.join(" "), "data-id": id },
    groupHeader(ui, group, parent, inEach), message, items);
  ui.groupViews.set(id, { el, message });
  return el;
}

function groupHeader(ui, group, parent, inEach) {
  const id = group.id;
  const header = h("div", { class: "sn-group-header" },
    h("select", {
      class: "sn-join", "aria-label": "join the items with", "data-fk": `${id}:join`,
      onchange: (e) => edit(ui, () => { find(ui, id).node.join = e.target.value; }),
    },
    h("option", { value: "and", selected: group.join !== "or" }, "AND"),
    h("option", { value: "or", selected: group.join === "or" }, "OR")),
    h("button", {
      type: "button", class: `sn-btn sn-not${group.not ? " sn-on" : ""}`, "aria-pressed": group.not ? "true" : "false",
      title: "negate the whole group", "data-fk": `${id}:not`,
      onclick: () => edit(ui, () => { const n = find(ui, id).node; n.not = !n.not; }),
    }, "NOT"),
  );
  if (parent !== null && (!inEach || group.each)) { // shown ticked inside another, to untick it
    const box = h("input", {
      type: "checkbox", class: "sn-each", "data-fk": `${id}:each`, checked: group.each === "subscriptions",
      onchange: (e) => edit(ui, () => { find(ui, id).node.each = e.target.checked ? "subscriptions" : null; }),
    });
    header.append(h("label", { class: "sn-each-label", title: "all rules of this group hold for one and the same subscription" },
      box, " same subscription"));
  }
  header.append(
    h("button", { type: "button", class: "sn-btn sn-add-rule", "data-fk": `${id}:add-rule`,
      onclick: () => addItem(ui, id, "rule") }, "+ rule"),
    h("button", { type: "button", class: "sn-btn sn-add-group", "data-fk": `${id}:add-group`,
      onclick: () => addItem(ui, id, "group") }, "+ group"),
    ...moveButtons(ui, group, parent, "group"),
  );
  return header;
}

// ---------------------------------------------------------------- a rule
function ruleKind(ui, rule, inEach) {
  const item = (reportOf(ui).items || {})[rule.id];
  if (item && item.kind) return item.kind;
  const f = lookupField(ui, rule.field, inEach);
  return f ? f.kind : "string";
}
function shapeOf(ui, rule, inEach) {
  const kind = ruleKind(ui, rule, inEach);
  return `${kind}|${rule.operator}|${arityOf(ui, rule.operator)}`;
}

function drawRule(ui, rule, parent, inEach) {
  const id = rule.id;
  const field = fieldInput(ui, rule, inEach);
  // The operator, the value and the ticks are drawn again when the rule's shape changes.
  const view = {
    id, inEach, shape: null,
    slot: h("span", { class: "sn-op-slot" }),
    valueSlot: h("span", { class: "sn-value-slot" }),
    icSlot: h("span", { class: "sn-ic-slot" }),
    message: h("div", { class: "sn-message", "aria-live": "polite" }),
    number: h("span", { class: "sn-number", "aria-hidden": "true" }),
  };
  view.el = h("div", { class: "sn-rule", "data-id": id },
    view.number, field, view.slot, view.valueSlot, view.icSlot,
    h("span", { class: "sn-rule-buttons" }, ...moveButtons(ui, rule, parent, "rule")),
    view.message);
  updateRule(ui, view);
  ui.ruleViews.set(id, view);
  return view.el;
}

function fieldInput(ui, rule, inEach) {
  const id = rule.id;
  const field = h("input", {
    type: "text", class: "sn-field", "aria-label": "field", placeholder: "field",
    list: `${ui.uid}-${inEach ? "subfields" : "fields"}`, value: rule.field, "data-fk": `${id}:field`,
    autocomplete: "off", spellcheck: "false",
    oninput: (e) => {
      const text = e.target.value;
      edit(ui, () => { find(ui, id).node.field = text; }, { key: `${id}:field`, redraw: false });
      resizeField(e.target);
    },
  });
  resizeField(field);
  return field;
}

/** Make the field box as wide as its text, as the browser lays it out (see builder.css). */
function resizeField(input) {
  if (!input.isConnected) return;  // laid out once drawn: draw() calls this again
  input.style.setProperty("--sn-text-width", "0px");
  // scrollWidth is the text's own width with the padding once the box is narrower.
  const borders = input.offsetWidth - input.clientWidth;
  input.style.setProperty("--sn-text-width", `${input.scrollWidth + borders + 2}px`);
}

/** Draw the rule's operator, value and ticks again when its kind, operator or arity changed. */
function updateRule(ui, view) {
  const current = find(ui, view.id);
  if (!current) return;
  const rule = current.node;
  const shape = shapeOf(ui, rule, view.inEach);
  if (shape === view.shape) return;
  const saved = focusKey(ui);
  view.shape = shape;
  const kind = ruleKind(ui, rule, view.inEach);
  view.slot.replaceChildren(operatorSelect(ui, rule, kind));
  view.valueSlot.replaceChildren(valueEditor(ui, rule, kind, view.inEach));
  view.icSlot.replaceChildren(...ruleTicks(ui, rule, kind));
  if (saved && saved.key.startsWith(`${view.id}:`) && !view.el.contains(document.activeElement)) {
    restoreFocus(ui, saved);
  }
}

/** The ignore case tick of a text operator, the whole day tick of a date one. */
function ruleTicks(ui, rule, kind) {
  const id = rule.id;
  const ticks = [];
  if (isTextOp(ui, rule.operator)) {
    ticks.push(h("label", { class: "sn-ic-label", title: "ignore upper and lower case" },
      h("input", {
        type: "checkbox", class: "sn-ignore-case", "data-fk": `${id}:ic`, checked: !!rule.ignore_case,
        onchange: (e) => edit(ui, () => { find(ui, id).node.ignore_case = e.target.checked; }, { redraw: false }),
      }), " ignore case"));
  }
  if (kind === "date" && isWholeDayOp(ui, rule.operator)) {
    ticks.push(h("label", { class: "sn-wd-label",
      title: "a bare day (2024-05-31) stands for the whole day; untick to compare the text as typed" },
    h("input", {
      type: "checkbox", class: "sn-whole-day", "data-fk": `${id}:wd`, checked: rule.whole_day !== false,
      onchange: (e) => edit(ui, () => { find(ui, id).node.whole_day = e.target.checked; }, { redraw: false }),
    }), " whole day"));
  }
  return ticks;
}

function operatorSelect(ui, rule, kind) {
  const id = rule.id;
  const ops = opsOf(ui, kind);
  const options = ops.map(([op, label]) => h("option", { value: op, selected: op === rule.operator }, label));
  if (!ops.some(([op]) => op === rule.operator)) {
    const known = opTable(ui).get(rule.operator);
    options.unshift(h("option", { value: rule.operator, selected: true },
      `${known ? known.label : rule.operator} (not for ${kind})`));
  }
  return h("select", {
    class: "sn-operator", "aria-label": "operator", "data-fk": `${id}:operator`,
    onchange: (e) => setOperator(ui, id, e.target.value),
  }, options);
}

/** A new operator keeps what was typed as far as its arity allows. */
function setOperator(ui, id, op) {
  edit(ui, () => {
    const rule = find(ui, id).node;
    const before = arityOf(ui, rule.operator), after = arityOf(ui, op);
    rule.operator = op;
    if (before === after) return;
    const first = Array.isArray(rule.value) ? (rule.value[0] || "") : (rule.value ?? "");
    if (after === 0) rule.value = null;
    else if (after === 2) rule.value = Array.isArray(rule.value) && rule.value.length === 2 ? rule.value : [first, ""];
    else if (after === "list") rule.value = Array.isArray(rule.value) ? rule.value.filter((v) => v !== "") : (first ? [first] : []);
    else rule.value = first;
  }, { redraw: false });
  const view = ui.ruleViews.get(id);
  if (view) updateRule(ui, view);
}

// ---------------------------------------------------------------- the value editor
function valueEditor(ui, rule, kind, inEach) {
  const id = rule.id;
  const arity = arityOf(ui, rule.operator);
  if (arity === 0) return h("span", { class: "sn-value sn-value-none" });
  if (arity === "list") {
    return listBox(ui, {
      key: `${id}:value`, cls: "sn-value", label: "values",
      get: () => { const r = find(ui, id); return r && Array.isArray(r.node.value) ? r.node.value : []; },
      set: (values) => edit(ui, () => { find(ui, id).node.value = values; }, { redraw: false }),
      suggestions: suggestionsId(ui, rule, inEach),
    });
  }
  if (arity === 2) return betweenEditor(ui, rule);
  const text = typeof rule.value === "string" ? rule.value : (rule.value ?? "") + "";
  if (kind === "boolean") return booleanSelect(ui, rule, text);
  return h("input", {
    type: "text", class: "sn-value", "aria-label": "value", placeholder: "value", value: text,
    "data-fk": `${id}:value`, list: suggestionsId(ui, rule, inEach), autocomplete: "off",
    oninput: (e) => {
      const v = e.target.value;
      edit(ui, () => { find(ui, id).node.value = v; }, { key: `${id}:value`, redraw: false });
    },
  });
}

function betweenEditor(ui, rule) {
  const id = rule.id;
  const value = Array.isArray(rule.value) ? rule.value : ["", ""];
  const input = (i, label) => h("input", {
    type: "text", class: `sn-value-${i ? "to" : "from"}`, "aria-label": label, placeholder: label,
    value: value[i] ?? "", "data-fk": `${id}:value${i}`, autocomplete: "off",
    oninput: (e) => {
      const text = e.target.value;
      edit(ui, () => {
        const r = find(ui, id).node;
        if (!Array.isArray(r.value)) r.value = ["", ""];
        r.value[i] = text;
      }, { key: `${id}:value${i}`, redraw: false });
    },
  });
  return h("span", { class: "sn-value sn-between" }, input(0, "from"), h("span", { class: "sn-and" }, "and"), input(1, "to"));
}

function booleanSelect(ui, rule, text) {
  const id = rule.id;
  const choices = ["", "true", "false"];
  const options = choices.map((v) => h("option", { value: v, selected: v === text }, v || "\u2014 pick \u2014"));
  if (!choices.includes(text)) options.push(h("option", { value: text, selected: true }, text));
  return h("select", {
    class: "sn-value sn-value-bool", "aria-label": "value", "data-fk": `${id}:value`,
    onchange: (e) => { const v = e.target.value; edit(ui, () => { find(ui, id).node.value = v; }, { redraw: false }); },
  }, options);
}

function suggestionsId(ui, rule, inEach) {
  const f = lookupField(ui, (reportOf(ui).items || {})[rule.id]?.field || rule.field, inEach)
    || lookupField(ui, rule.field, inEach);
  if (!f || !f.suggestions || !f.suggestions.length) return null;
  const listId = `${ui.uid}-s-${inEach ? "sub-" : ""}${f.name.replace(/[^\w-]/g, "_")}`;
  const datalists = ui.parts.datalists;
  if (datalists && !datalists.querySelector(`#${CSS.escape(listId)}`)) {
    datalists.append(datalist(listId, f.suggestions));
  }
  return listId;
}

// ---------------------------------------------------------------- list box
/** Chips with a remove button each, and an input that splits what is typed or pasted. */
function listBox(ui, { key, cls, label, get, set, suggestions, problems }) {
  const box = h("div", { class: `sn-tags ${cls || ""}`, "data-key": key, role: "group", "aria-label": label });
  const chips = h("span", { class: "sn-tag-list" });
  const input = h("input", {
    type: "text", class: "sn-tag-input", "aria-label": `add ${label}`, "data-fk": `${key}:input`,
    placeholder: "type, Enter", list: suggestions, autocomplete: "off", spellcheck: "false",
  });
  box.append(chips, input);
  const list = { ui, key, box, chips, input, get, set, problems };
  listenListInput(list);
  refreshList(list);
  ui.listBoxes.set(key, () => refreshList(list));
  return box;
}

function refreshList(list) {
  const { key, box, chips } = list;
  const values = list.get();
  const bad = list.problems ? list.problems() : new Map();
  chips.replaceChildren(...values.map((value, i) => chip(list, value, i, bad)));
  box.classList.toggle("sn-tags-empty", values.length === 0);
  const note = list.ui.notes.get(key);
  box.querySelector(".sn-tag-note")?.remove();
  if (note) box.append(h("span", { class: "sn-tag-note", role: "status" }, note));
}

function chip(list, value, i, bad) {
  const key = list.key;
  return h("span", {
    class: `sn-tag${bad.has(i) ? " sn-tag-bad" : ""}`, title: bad.get(i) || null,
  }, h("span", { class: "sn-tag-text" }, value), h("button", {
    type: "button", class: "sn-tag-remove", "aria-label": `remove ${value}`, title: `remove ${value}`,
    "data-fk": `${key}:chip${i}`,
    onclick: () => {
      const now = list.get().slice();
      now.splice(i, 1);
      list.set(now);
      refreshList(list);
      restoreFocus(list.ui, { key: [`${key}:chip${i}`, `${key}:chip${i - 1}`, `${key}:input`] });
    },
  }, "\u00d7"));
}

/** Add `values` but those already listed, which a note names until the next edit. */
function addValues(list, values) {
  if (!values.length) return;
  const now = list.get().slice();
  const refused = [];
  for (const v of values) {
    if (now.includes(v)) refused.push(v);
    else now.push(v);
  }
  if (now.length !== list.get().length) list.set(now);
  if (refused.length) {
    list.ui.notes.set(list.key, `${refused.map((v) => `"${v}"`).join(", ")} ${refused.length > 1 ? "are" : "is"} already in the list`);
  }
  refreshList(list);
}

function commitText(list, finish, text = list.input.value) {
  // `text` is given for a paste: an input's value cannot hold its newlines.
  const input = list.input;
  const [values, rest] = splitValues(text, finish);
  if (!values.length && rest === input.value) return false;
  input.value = rest;
  addValues(list, values);
  return values.length > 0;
}

function listenListInput(list) {
  const input = list.input;
  input.addEventListener("keydown", (event) => {
    if (event.isComposing) return;
    if (event.key === "Enter") {
      event.preventDefault();
      commitText(list, true);
    } else if (event.key === "Tab" && !event.shiftKey && input.value.trim()) {
      commitText(list, true); // and the focus moves on, as Tab does
    } else if (event.key === "Backspace" && input.value === "" && list.get().length) {
      event.preventDefault();
      list.set(list.get().slice(0, -1));
      refreshList(list);
    }
  });
  input.addEventListener("input", () => {
    // A refused value's note is about what was typed before: the next keystroke ends it.
    if (list.ui.notes.delete(list.key)) list.box.querySelector(".sn-tag-note")?.remove();
    // A separator typed outside quotes ends a value; the rest stays in the box.
    let quoted = false, split = false;
    for (const ch of input.value) {
      if (ch === '"') quoted = !quoted;
      else if (!quoted && SPLIT.has(ch)) { split = true; break; }
    }
    if (split) commitText(list, false);
  });
  input.addEventListener("paste", (event) => {
    const text = (event.clipboardData || window.clipboardData)?.getData("text") ?? "";
    if (!/[,\n\r\t]/.test(text)) return;
    event.preventDefault();
    const start = input.selectionStart ?? input.value.length;
    const end = input.selectionEnd ?? input.value.length;
    commitText(list, true, input.value.slice(0, start) + text + input.value.slice(end));
  });
  input.addEventListener("change", () => {
    // Leaving the box (a click elsewhere) keeps what was typed, as a value.
    if (input.value.trim()) commitText(list, true);
  });
}

// ---------------------------------------------------------------- below the rules
function drawBottom(ui) {
  const parts = ui.parts;
  parts.fieldsProblems = h("div", { class: "sn-fields-problems sn-error-text" });
  parts.summary = h("ul", { class: "sn-summary", "aria-live": "polite" });
  return h("div", { class: "sn-bottom" },
    fieldsPicker(ui),
    parts.fieldsProblems,
    parts.summary,
    queryLine(ui),
    parts.json,
    importBox(ui),
    previewLine(ui),
    parts.previewArea,
  );
}

function fieldsPicker(ui) {
  const fieldsBox = listBox(ui, {
    key: "fields", cls: "sn-return-fields", label: "fields to return",
    get: () => ui.doc.fields || [],
    set: (values) => edit(ui, (d) => { d.fields = values; }, { redraw: false }),
    suggestions: `${ui.uid}-returnable`,
    problems: () => {
      const found = new Map();
      for (const p of ((reportOf(ui).fields || {}).problems || [])) found.set(p.index, p.message);
      return found;
    },
  });
  return h("div", { class: "sn-line" }, h("span", { class: "sn-caption" }, "Return fields"), fieldsBox,
    h("span", { class: "sn-hint" }, "none: all fields"));
}

/** The caption of the query's JSON with its Show/Hide and Copy buttons; the JSON goes below. */
function queryLine(ui) {
  const parts = ui.parts;
  parts.json = h("pre", { class: "sn-json", hidden: !ui.jsonShown });
  parts.copyNote = h("span", { class: "sn-copy-note", role: "status" });
  const toggleText = () => (ui.jsonShown ? "Hide JSON" : "Show JSON");
  return h("div", { class: "sn-line" },
    h("span", { class: "sn-caption" }, "Query"),
    h("button", {
      type: "button", class: "sn-btn sn-json-toggle", "aria-expanded": ui.jsonShown ? "true" : "false", "data-fk": "json-toggle",
      onclick: (e) => {
        ui.jsonShown = !ui.jsonShown;
        parts.json.hidden = !ui.jsonShown;
        e.currentTarget.setAttribute("aria-expanded", ui.jsonShown ? "true" : "false");
        e.currentTarget.textContent = toggleText();
      },
    }, toggleText()),
    h("button", { type: "button", class: "sn-btn sn-copy", "data-fk": "copy", title: "copy the query's JSON", onclick: () => copyJson(ui) }, "Copy"),
    parts.copyNote);
}

async function copyJson(ui) {
  const text = reportOf(ui).json || "";
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch (e) {
    const area = h("textarea", { class: "sn-copy-buffer" }, text);
    area.value = text;
    ui.root.append(area);
    area.select();
    try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
    area.remove();
    restoreFocus(ui, { key: "copy" });
  }
  ui.parts.copyNote.textContent = ok ? "copied" : "could not copy: select the JSON and copy it";
}

function importBox(ui) {
  const parts = ui.parts;
  parts.importArea = h("textarea", {
    class: "sn-import", "aria-label": "paste a query as JSON", placeholder: "paste a query as JSON",
    rows: 3, spellcheck: "false", "data-fk": "import",
  });
  parts.importError = h("div", { class: "sn-import-error sn-error-text", "aria-live": "polite" });
  return h("details", { class: "sn-import-box" },
    h("summary", { class: "sn-import-summary" }, "Load a query from JSON"),
    h("div", { class: "sn-line" }, parts.importArea,
      h("button", {
        type: "button", class: "sn-btn sn-import-load", "data-fk": "import-load",
        onclick: () => ui.model.send({ kind: "import", text: parts.importArea.value }),
      }, "Load")),
    parts.importError);
}

/** The Preview button and the rows to preview; the preview itself goes below. */
function previewLine(ui) {
  const parts = ui.parts;
  const rows = h("input", {
    type: "text", class: "sn-preview-rows", "aria-label": "rows to preview", value: ui.doc.preview_rows ?? "",
    "data-fk": "preview_rows", size: 6, autocomplete: "off",
    oninput: (e) => { const v = e.target.value; edit(ui, (d) => { d.preview_rows = v; }, { key: "preview_rows", redraw: false }); },
  });
  parts.rowsError = h("span", { class: "sn-preview-rows-error sn-error-text", "aria-live": "polite" });
  parts.previewButton = h("button", {
    type: "button", class: "sn-btn sn-preview sn-primary", "data-fk": "preview",
    onclick: () => ui.model.send({ kind: "preview" }),
  }, "Preview");
  parts.previewNote = h("span", { class: "sn-preview-note" });
  parts.previewArea = h("div", { class: "sn-preview-area", "aria-live": "polite" });
  return h("div", { class: "sn-line sn-preview-line" },
    parts.previewButton,
    h("label", { class: "sn-rows-label" }, "rows ", rows), parts.rowsError, parts.previewNote);
}

// ---------------------------------------------------------------- report
/** An item's errors and warnings beside it (`parted`: each names the part it is about). */
function showMessages(view, item, parted) {
  const errors = item.errors || [], warnings = item.warnings || [];
  view.el.classList.toggle("sn-has-error", errors.length > 0);
  view.el.classList.toggle("sn-has-warning", !errors.length && warnings.length > 0);
  const line = (cls, m) => h("div", { class: cls, "data-part": parted ? m.part || null : null }, m.message);
  view.message.replaceChildren(
    ...errors.map((e) => line("sn-error-text", e)),
    ...warnings.map((w) => line("sn-warning-text", w)),
  );
  return errors;
}

function applyReport(ui) {
  if (!ui.doc) return;
  const report = reportOf(ui);
  const items = report.items || {};
  for (const [id, view] of ui.groupViews) showMessages(view, items[id] || {}, false);
  walk(ui.doc.root, (node) => {
    if (node.type !== "rule") return;
    const view = ui.ruleViews.get(node.id);
    if (!view) return;
    updateRule(ui, view);
    const item = items[node.id] || {};
    const errors = showMessages(view, item, true);
    view.number.textContent = item.number ? String(item.number) : "";
    for (const part of ["field", "operator", "value"]) {
      const bad = errors.some((e) => e.part === part);
      view.el.querySelectorAll(`.sn-${part}, .sn-${part} input`).forEach((x) => x.setAttribute("aria-invalid", bad ? "true" : "false"));
    }
  });
  if (ui.parts.summary) applyBottomReport(ui, report);
  applyPreview(ui);
}

function applyBottomReport(ui, report) {
  const parts = ui.parts;
  parts.summary.replaceChildren(...(report.summary || []).map((s) => h("li", null, s)));
  const problems = ((report.fields || {}).problems || []);
  parts.fieldsProblems.replaceChildren(...problems.map((p) => h("div", null, p.message)));
  ui.listBoxes.get("fields")?.();
  const pr = report.preview_rows || {};
  parts.rowsError.textContent = pr.error || "";
  parts.rowsError.previousElementSibling?.querySelector("input")?.setAttribute("aria-invalid", pr.error ? "true" : "false");
  parts.json.textContent = report.json || "{}";
  const ok = report.ok !== false;
  parts.json.classList.toggle("sn-json-stale", !ok);
  parts.json.title = ok ? "" : "the last valid query: fix the errors to update it";
  parts.importError.textContent = report.import_error || "";
  let why = "";
  if (!ok) {
    const first = (report.summary || [])[0];
    why = `Preview is off until the errors are fixed${first ? ": " + first : ""}`;
  } else if (pr.error) {
    why = `Preview is off: ${pr.error}`;
  }
  parts.previewButton.disabled = !!why;
  parts.previewButton.title = why || "read the first rows of this query";
  parts.previewNote.textContent = why;
}

// ---------------------------------------------------------------- preview and notices
function applyPreview(ui) {
  const parts = ui.parts;
  if (!parts.previewArea) return;
  const preview = ui.model.get("preview") || {};
  const report = reportOf(ui);
  const area = parts.previewArea;
  const state = preview.state || "none";
  area.dataset.state = state;
  const message = preview.message
    ? h("div", { class: `sn-preview-message${state === "error" ? " sn-error-text" : ""}` }, preview.message)
    : null;
  if (state === "running") {
    parts.previewButton.setAttribute("aria-busy", "true");
  } else {
    parts.previewButton.removeAttribute("aria-busy");
  }
  const body = h("div", { class: "sn-preview-html" });
  body.innerHTML = preview.html || "";
  area.replaceChildren(...(message ? [message] : []), body);
  const changed = staleParts(preview, report);
  area.classList.toggle("sn-stale", !!changed);
  area.dataset.stale = changed
    ? `Out of date: ${changed} changed after this Preview; press Preview to run it again.` : "";
  area.title = changed ? `out of date: ${changed} changed after this Preview` : "";
}

/** What differs between the Preview shown and the document now, in words, or "". */
function staleParts(preview, report) {
  if (!preview.html || preview.query_json == null) return "";
  const fields = ((report.fields || {}).resolved) || [];
  const parts = [];
  if (preview.query_json !== report.query_json) parts.push("the query");
  if (canon(preview.fields || []) !== canon(fields)) parts.push("the fields to return");
  return parts.join(" and ");
}

function applyNotices(ui) {
  const notices = ui.parts.notices;
  if (!notices) return;
  const said = ui.model.get("notices") || [];
  notices.replaceChildren(...said.map((n) => h("div", { class: "sn-notice" }, n)));
  notices.hidden = said.length === 0;
}

// ---------------------------------------------------------------- start
function render({ model, el }) {
  el.classList.add("sn-qb-host");
  const root = h("div", { class: "sn-qb", "data-lm-suppress-shortcuts": "true" });
  el.append(root);
  const ui = {
    model, el, root,
    uid: `snqb${++instances}x${Math.random().toString(36).slice(2, 7)}`,
    doc: null,
    undoStack: [], redoStack: [],
    coalesce: null, // the text box whose typing makes the current undo step
    nextId: 1,
    jsonShown: true,
    clearedNote: false,
    notes: new Map(), // list box key -> refused-value note, until the next edit
    listBoxes: new Map(), // list box key -> its refresh function
    ruleViews: new Map(), // rule id -> its view (drawRule)
    groupViews: new Map(), // group id -> {el, message}
    parts: {}, // the parts of the last drawing that reports and previews fill in
  };
  listenKeys(ui);
  start(ui);
  draw(ui);

  const handlers = {
    "change:document": () => adopt(ui),
    "change:report": () => applyReport(ui),
    "change:preview": () => applyPreview(ui),
    "change:notices": () => applyNotices(ui),
    "change:catalog": () => draw(ui),
  };
  for (const [event, fn] of Object.entries(handlers)) model.on(event, fn);
  return () => {
    for (const [event, fn] of Object.entries(handlers)) model.off(event, fn);
  };
}

export default { render };
