// The query builder's front end: an anywidget ES module, plain DOM, no dependencies.
//
// The browser owns the document (what a person typed); every edit updates a local
// copy, bumps `rev` and sends it. Python checks it and answers with `report`
// (errors per item, the query); a report never rewrites a box being typed in.

const TEXT_OPS = new Set([
  "begins_with", "not_begins_with", "contains", "not_contains",
  "ends_with", "not_ends_with", "matches",
]);
// Date operators whose bare day means the whole day (document.py reads `whole_day`).
const WHOLE_DAY_OPS = new Set(["equal", "not_equal", "less_or_equal", "greater", "between", "not_between"]);
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

function render({ model, el }) {
  const uid = `snqb${++instances}x${Math.random().toString(36).slice(2, 7)}`;
  let doc = null;
  let undoStack = [], redoStack = [];
  let coalesce = null; // the text box whose typing makes the current undo step
  let nextId = 1;
  let jsonShown = true;
  let clearedNote = false;
  const notes = new Map(); // list box key -> refused-value note, until the next edit
  const listBoxes = new Map(); // list box key -> its refresh function
  const ruleViews = new Map(); // rule id -> {shape, el, update}
  const groupViews = new Map(); // group id -> {el, message}

  // ---------------------------------------------------------------- catalog
  const catalog = () => model.get("catalog") || {};
  function opTable() {
    const table = new Map();
    const operators = catalog().operators || {};
    for (const list of Object.values(operators)) {
      for (const [op, label, arity] of list) if (!table.has(op)) table.set(op, { label, arity });
    }
    return table;
  }
  function opsOf(kind) {
    const operators = catalog().operators || {};
    return operators[kind] || operators.string || [];
  }
  function arityOf(op) {
    const found = opTable().get(op);
    return found ? found.arity : 1;
  }
  function fieldsFor(inEach) {
    return (inEach ? catalog().subscription_fields : catalog().fields) || [];
  }
  function lookupField(text, inEach) {
    const t = (text || "").trim();
    if (!t) return null;
    const fields = fieldsFor(inEach);
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
  function noteIds(d) {
    walk(d.root, (n) => {
      const m = /(\d+)$/.exec(n.id || "");
      if (m) nextId = Math.max(nextId, Number(m[1]) + 1);
    });
  }
  const newId = (prefix) => `${prefix}${nextId++}`;
  const emptyRule = () => ({
    id: newId("r"), type: "rule", field: "", operator: "equal", value: "", ignore_case: false,
  });
  const emptyGroup = (each = null) => ({
    id: newId("g"), type: "group", join: "and", not: false, each, items: [emptyRule()],
  });
  function freshDoc(old) {
    const root = emptyGroup();
    return {
      rev: old && typeof old.rev === "number" ? old.rev : 0,
      root,
      fields: [],
      preview_rows: old && old.preview_rows !== undefined ? old.preview_rows : "20",
    };
  }
  function find(id, node = doc.root, parent = null) {
    if (node.id === id) return { node, parent };
    if (node.type === "group") {
      for (const item of node.items) {
        const found = find(id, item, node);
        if (found) return found;
      }
    }
    return null;
  }
  function inEachGroup(id) {
    let result = false;
    walk(doc.root, (n, _p, each) => { if (n.id === id) result = each; });
    return result;
  }
  function reid(node) {
    node.id = newId(node.type === "group" ? "g" : "r");
    if (node.type === "group") node.items.forEach(reid);
    return node;
  }

  function send() {
    model.set("document", clone(doc));
    model.save_changes();
  }

  /** One edit: `change(doc)` mutates the document. `key` names the text box being
   *  typed in: edits with the same key one after another are one undo step. */
  function edit(change, { key = null, redraw = true, focus = null } = {}) {
    if (key === null || key !== coalesce) {
      undoStack.push(clone(doc));
      if (undoStack.length > 200) undoStack.shift();
    }
    redoStack = [];
    coalesce = key;
    clearNotes();
    change(doc);
    doc.rev = (doc.rev || 0) + 1;
    send();
    if (redraw) draw(focus);
    else refreshBar();
  }

  function clearNotes() {
    notes.clear();
    for (const note of el.querySelectorAll(".sn-tag-note")) note.remove();
    if (clearedNote) {
      clearedNote = false;
      for (const note of el.querySelectorAll(".sn-clear-note")) note.remove();
    }
  }

  /** Undo (`from` the undo stack, saving the current document `to` the redo one) or redo. */
  function step(from, to) {
    if (!from.length) return;
    to.push(clone(doc));
    const rev = doc.rev;
    doc = from.pop();
    doc.rev = rev + 1;  // a new revision, so the report answers this document
    coalesce = null;
    clearNotes();
    noteIds(doc);
    send();
    draw();
  }
  const undo = () => step(undoStack, redoStack);
  const redo = () => step(redoStack, undoStack);

  /** A document from Python (load, clear, import): adopted as one undoable step. */
  function adopt() {
    const incoming = model.get("document");
    if (!incoming || !incoming.root || sameDoc(incoming, doc)) return;
    undoStack.push(clone(doc));
    redoStack = [];
    coalesce = null;
    const rev = doc.rev || 0;
    doc = clone(incoming);
    noteIds(doc);
    if (!(doc.rev > rev)) {
      doc.rev = rev + 1;
      send();
    }
    clearNotes();
    draw();
  }

  // ---------------------------------------------------------------- keys
  el.classList.add("sn-qb-host");
  const root = h("div", { class: "sn-qb", "data-lm-suppress-shortcuts": "true" });
  el.append(root);
  root.addEventListener("keydown", (event) => {
    event.stopPropagation();
    const mod = event.ctrlKey || event.metaKey;
    if (!mod || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key === "z" && !event.shiftKey) { event.preventDefault(); undo(); }
    else if ((key === "z" && event.shiftKey) || key === "y") { event.preventDefault(); redo(); }
  });
  // Lumino stops looking for a shortcut's selector at an element with this
  // attribute, but tests the key's target first: a focused button matches
  // ".jp-Notebook.jp-mod-commandMode :focus" by itself. So the attribute goes on
  // whatever takes focus here; the root's stopPropagation alone only helps where
  // shortcuts are read as the key bubbles (JupyterLab), not in Notebook 7.
  root.addEventListener("focusin", (event) => {
    if (event.target instanceof Element) event.target.setAttribute("data-lm-suppress-shortcuts", "true");
  });
  root.addEventListener("focusout", (event) => {
    if (event.target && event.target.matches && event.target.matches("input, textarea")) {
      coalesce = null;
    }
  });

  // ---------------------------------------------------------------- drawing
  function focusKey() {
    const active = document.activeElement;
    if (!active || !root.contains(active)) return null;
    const key = active.getAttribute("data-fk");
    if (!key) return null;
    const sel = "selectionStart" in active && typeof active.selectionStart === "number"
      ? [active.selectionStart, active.selectionEnd] : null;
    return { key, sel };
  }
  function restoreFocus(saved) {
    if (!saved) return;
    const keys = Array.isArray(saved.key) ? saved.key : [saved.key];
    for (const key of keys) {
      const target = root.querySelector(`[data-fk="${CSS.escape(key)}"]`);
      if (target && !target.disabled) {
        target.focus({ preventScroll: true });
        if (saved.sel && "setSelectionRange" in target) {
          try { target.setSelectionRange(saved.sel[0], saved.sel[1]); } catch (e) { /* not text */ }
        }
        return;
      }
    }
  }

  const parts = {};

  function draw(focus = null) {
    const saved = focus ? { key: focus, sel: null } : focusKey();
    listBoxes.clear();
    ruleViews.clear();
    groupViews.clear();
    root.replaceChildren();
    parts.notices = h("div", { class: "sn-notices", role: "status" });
    parts.bar = drawBar();
    parts.datalists = h("div", { class: "sn-datalists", hidden: true });
    parts.datalists.append(datalist(`${uid}-fields`, fieldsFor(false).map((f) => f.label || f.name)));
    parts.datalists.append(datalist(`${uid}-subfields`, fieldsFor(true).map((f) => f.label || f.name)));
    const returnable = [...new Set(fieldsFor(false).map((f) => f.name).concat(["_id", "subscriptions"]))];
    parts.datalists.append(datalist(`${uid}-returnable`, returnable));
    parts.tree = h("div", { class: "sn-tree" }, drawGroup(doc.root, null, false));
    parts.bottom = drawBottom();
    root.append(parts.notices, parts.bar, parts.tree, parts.bottom, parts.datalists);
    applyReport();
    applyPreview();
    applyNotices();
    restoreFocus(saved);
  }

  function datalist(id, values) {
    return h("datalist", { id }, values.map((v) => h("option", { value: v })));
  }

  function drawBar() {
    const bar = h("div", { class: "sn-bar" },
      h("button", { type: "button", class: "sn-btn sn-undo", "data-fk": "undo", title: "Undo (Ctrl+Z)",
        disabled: !undoStack.length, onclick: undo }, "Undo"),
      h("button", { type: "button", class: "sn-btn sn-redo", "data-fk": "redo", title: "Redo (Ctrl+Shift+Z)",
        disabled: !redoStack.length, onclick: redo }, "Redo"),
      h("button", { type: "button", class: "sn-btn sn-clear", "data-fk": "clear",
        title: "Start again with one empty rule (Undo brings it back)", onclick: clearAll }, "Clear"),
    );
    if (clearedNote) bar.append(h("span", { class: "sn-clear-note", role: "status" }, "cleared: Undo brings it back"));
    return bar;
  }
  function refreshBar() {
    if (!parts.bar) return;
    parts.bar.querySelector(".sn-undo").disabled = !undoStack.length;
    parts.bar.querySelector(".sn-redo").disabled = !redoStack.length;
  }

  function clearAll() {
    edit((d) => {
      const fresh = freshDoc(d);
      d.root = fresh.root;
      d.fields = [];
    }, { focus: "clear" });
    clearedNote = true;
    parts.bar.append(h("span", { class: "sn-clear-note", role: "status" }, "cleared: Undo brings it back"));
  }

  function moveButtons(node, parent, kind) {
    const index = parent ? parent.items.indexOf(node) : -1;
    if (!parent) return [];
    const id = node.id;
    return [
      h("button", { type: "button", class: "sn-btn sn-icon sn-clone", "aria-label": `clone ${kind}`,
        title: `clone ${kind}`, "data-fk": `${id}:clone`, onclick: () => cloneItem(id) }, "\u2750"),
      h("button", { type: "button", class: "sn-btn sn-icon sn-up", "aria-label": `move ${kind} up`,
        title: `move ${kind} up`, "data-fk": `${id}:up`, disabled: index === 0,
        onclick: () => moveItem(id, -1) }, "\u2191"),
      h("button", { type: "button", class: "sn-btn sn-icon sn-down", "aria-label": `move ${kind} down`,
        title: `move ${kind} down`, "data-fk": `${id}:down`, disabled: index === parent.items.length - 1,
        onclick: () => moveItem(id, 1) }, "\u2193"),
      h("button", { type: "button", class: "sn-btn sn-icon sn-remove", "aria-label": `remove ${kind}`,
        title: `remove ${kind}`, "data-fk": `${id}:remove`, onclick: () => removeItem(id) }, "\u00d7"),
    ];
  }

  function cloneItem(id) {
    let copyId = null;
    edit((d) => {
      const { node, parent } = find(id);
      const copy = reid(clone(node));
      copyId = copy.id;
      parent.items.splice(parent.items.indexOf(node) + 1, 0, copy);
    }, { focus: [`${id}:clone`] });
    restoreFocus({ key: `${copyId}:clone` });
  }
  function moveItem(id, step) {
    edit((d) => {
      const { node, parent } = find(id);
      const i = parent.items.indexOf(node);
      const j = i + step;
      if (j < 0 || j >= parent.items.length) return;
      parent.items.splice(i, 1);
      parent.items.splice(j, 0, node);
    }, { focus: [`${id}:${step < 0 ? "up" : "down"}`, `${id}:${step < 0 ? "down" : "up"}`, `${id}:clone`] });
  }
  function removeItem(id) {
    const { node, parent } = find(id);
    const i = parent.items.indexOf(node);
    const after = parent.items[i + 1] || parent.items[i - 1];
    const focus = after
      ? [`${after.id}:remove`, `${after.id}:field`]
      : [`${parent.id}:add-rule`];
    edit(() => {
      parent.items.splice(parent.items.indexOf(node), 1);
    }, { focus });
  }

  function drawGroup(group, parent, inEach) {
    const id = group.id;
    const isRoot = parent === null;
    const each = inEach || group.each === "subscriptions";
    const header = h("div", { class: "sn-group-header" },
      h("select", {
        class: "sn-join", "aria-label": "join the items with", "data-fk": `${id}:join`,
        onchange: (e) => edit((d) => { find(id).node.join = e.target.value; }),
      },
      h("option", { value: "and", selected: group.join !== "or" }, "AND"),
      h("option", { value: "or", selected: group.join === "or" }, "OR")),
      h("button", {
        type: "button", class: `sn-btn sn-not${group.not ? " sn-on" : ""}`, "aria-pressed": group.not ? "true" : "false",
        title: "negate the whole group", "data-fk": `${id}:not`,
        onclick: () => edit((d) => { const n = find(id).node; n.not = !n.not; }),
      }, "NOT"),
    );
    if (!isRoot && (!inEach || group.each)) { // shown ticked inside another, to untick it
      const box = h("input", {
        type: "checkbox", class: "sn-each", "data-fk": `${id}:each`, checked: group.each === "subscriptions",
        onchange: (e) => edit(() => { find(id).node.each = e.target.checked ? "subscriptions" : null; }),
      });
      header.append(h("label", { class: "sn-each-label", title: "all rules of this group hold for one and the same subscription" },
        box, " same subscription"));
    }
    header.append(
      h("button", { type: "button", class: "sn-btn sn-add-rule", "data-fk": `${id}:add-rule`,
        onclick: () => addItem(id, "rule") }, "+ rule"),
      h("button", { type: "button", class: "sn-btn sn-add-group", "data-fk": `${id}:add-group`,
        onclick: () => addItem(id, "group") }, "+ group"),
      ...moveButtons(group, parent, "group"),
    );
    const items = h("div", { class: "sn-items" },
      group.items.map((item) => item.type === "group"
        ? drawGroup(item, group, each)
        : drawRule(item, group, each)));
    const cls = ["sn-group"];
    if (isRoot) cls.push("sn-root");
    if (group.each === "subscriptions") cls.push("sn-each-group");
    if (group.not) cls.push("sn-negated");
    const message = h("div", { class: "sn-message sn-group-message", "aria-live": "polite" });
    const el = h("div", { class: cls.join(" "), "data-id": id }, header, message, items);
    groupViews.set(id, { el, message });
    return el;
  }

  function addItem(groupId, type) {
    let made = null;
    edit(() => {
      const item = type === "rule" ? emptyRule() : emptyGroup();
      made = item;
      find(groupId).node.items.push(item);
    }, { focus: [`${groupId}:add-${type}`] });
    const focusId = made.type === "rule" ? made.id : made.items[0].id;
    restoreFocus({ key: `${focusId}:field` });
  }

  // ---------------------------------------------------------------- rules
  function ruleKind(rule, inEach) {
    const item = ((model.get("report") || {}).items || {})[rule.id];
    if (item && item.kind) return item.kind;
    const f = lookupField(rule.field, inEach);
    return f ? f.kind : "string";
  }
  function shapeOf(rule, inEach) {
    const kind = ruleKind(rule, inEach);
    return `${kind}|${rule.operator}|${arityOf(rule.operator)}`;
  }

  function drawRule(rule, parent, inEach) {
    const id = rule.id;
    const field = h("input", {
      type: "text", class: "sn-field", "aria-label": "field", placeholder: "field",
      list: `${uid}-${inEach ? "subfields" : "fields"}`, value: rule.field, "data-fk": `${id}:field`,
      autocomplete: "off", spellcheck: "false",
      oninput: (e) => {
        const text = e.target.value;
        edit(() => { find(id).node.field = text; }, { key: `${id}:field`, redraw: false });
        resizeField(e.target);
      },
    });
    resizeField(field);
    const slot = h("span", { class: "sn-op-slot" });
    const valueSlot = h("span", { class: "sn-value-slot" });
    const icSlot = h("span", { class: "sn-ic-slot" });
    const message = h("div", { class: "sn-message", "aria-live": "polite" });
    const number = h("span", { class: "sn-number", "aria-hidden": "true" });
    const row = h("div", { class: "sn-rule", "data-id": id },
      number, field, slot, valueSlot, icSlot,
      h("span", { class: "sn-rule-buttons" }, ...moveButtons(rule, parent, "rule")),
      message);
    const view = { el: row, shape: null, message, number };
    view.update = () => {
      const current = find(id);
      if (!current) return;
      const r = current.node;
      const shape = shapeOf(r, inEach);
      if (shape === view.shape) return;
      const saved = focusKey();
      view.shape = shape;
      const kind = ruleKind(r, inEach);
      slot.replaceChildren(operatorSelect(r, kind));
      valueSlot.replaceChildren(valueEditor(r, kind, inEach));
      icSlot.replaceChildren(...(TEXT_OPS.has(r.operator) ? [h("label", { class: "sn-ic-label", title: "ignore upper and lower case" },
        h("input", {
          type: "checkbox", class: "sn-ignore-case", "data-fk": `${id}:ic`, checked: !!r.ignore_case,
          onchange: (e) => edit(() => { find(id).node.ignore_case = e.target.checked; }, { redraw: false }),
        }), " ignore case")] : []),
        ...(kind === "date" && WHOLE_DAY_OPS.has(r.operator) ? [h("label", { class: "sn-wd-label",
          title: "a bare day (2024-05-31) stands for the whole day; untick to compare the text as typed" },
        h("input", {
          type: "checkbox", class: "sn-whole-day", "data-fk": `${id}:wd`, checked: r.whole_day !== false,
          onchange: (e) => edit(() => { find(id).node.whole_day = e.target.checked; }, { redraw: false }),
        }), " whole day")] : []));
      if (saved && saved.key.startsWith(`${id}:`) && !row.contains(document.activeElement)) restoreFocus(saved);
    };
    view.update();
    ruleViews.set(id, view);
    return row;
  }

  function resizeField(input) {
    const n = Math.max(12, Math.min(60, (input.value || "").length + 2));
    input.style.setProperty("--sn-chars", String(n));
  }

  function operatorSelect(rule, kind) {
    const id = rule.id;
    const ops = opsOf(kind);
    const options = ops.map(([op, label]) => h("option", { value: op, selected: op === rule.operator }, label));
    if (!ops.some(([op]) => op === rule.operator)) {
      const known = opTable().get(rule.operator);
      options.unshift(h("option", { value: rule.operator, selected: true },
        `${known ? known.label : rule.operator} (not for ${kind})`));
    }
    return h("select", {
      class: "sn-operator", "aria-label": "operator", "data-fk": `${id}:operator`,
      onchange: (e) => setOperator(id, e.target.value),
    }, options);
  }

  function setOperator(id, op) {
    edit(() => {
      const rule = find(id).node;
      const before = arityOf(rule.operator), after = arityOf(op);
      rule.operator = op;
      if (before === after) return;
      const first = Array.isArray(rule.value) ? (rule.value[0] || "") : (rule.value ?? "");
      if (after === 0) rule.value = null;
      else if (after === 2) rule.value = Array.isArray(rule.value) && rule.value.length === 2 ? rule.value : [first, ""];
      else if (after === "list") rule.value = Array.isArray(rule.value) ? rule.value.filter((v) => v !== "") : (first ? [first] : []);
      else rule.value = first;
    }, { redraw: false });
    const view = ruleViews.get(id);
    if (view) view.update();
  }

  function valueEditor(rule, kind, inEach) {
    const id = rule.id;
    const arity = arityOf(rule.operator);
    if (arity === 0) return h("span", { class: "sn-value sn-value-none" });
    if (arity === "list") {
      return listBox({
        key: `${id}:value`, cls: "sn-value", label: "values",
        get: () => { const r = find(id); return r && Array.isArray(r.node.value) ? r.node.value : []; },
        set: (values) => edit(() => { find(id).node.value = values; }, { redraw: false }),
        suggestions: suggestionsId(rule, inEach),
      });
    }
    if (arity === 2) {
      const value = Array.isArray(rule.value) ? rule.value : ["", ""];
      const input = (i, label) => h("input", {
        type: "text", class: `sn-value-${i ? "to" : "from"}`, "aria-label": label, placeholder: label,
        value: value[i] ?? "", "data-fk": `${id}:value${i}`, autocomplete: "off",
        oninput: (e) => {
          const text = e.target.value;
          edit(() => {
            const r = find(id).node;
            if (!Array.isArray(r.value)) r.value = ["", ""];
            r.value[i] = text;
          }, { key: `${id}:value${i}`, redraw: false });
        },
      });
      return h("span", { class: "sn-value sn-between" }, input(0, "from"), h("span", { class: "sn-and" }, "and"), input(1, "to"));
    }
    const text = typeof rule.value === "string" ? rule.value : (rule.value ?? "") + "";
    if (kind === "boolean") {
      const choices = ["", "true", "false"];
      const options = choices.map((v) => h("option", { value: v, selected: v === text }, v || "\u2014 pick \u2014"));
      if (!choices.includes(text)) options.push(h("option", { value: text, selected: true }, text));
      return h("select", {
        class: "sn-value sn-value-bool", "aria-label": "value", "data-fk": `${id}:value`,
        onchange: (e) => { const v = e.target.value; edit(() => { find(id).node.value = v; }, { redraw: false }); },
      }, options);
    }
    return h("input", {
      type: "text", class: "sn-value", "aria-label": "value", placeholder: "value", value: text,
      "data-fk": `${id}:value`, list: suggestionsId(rule, inEach), autocomplete: "off",
      oninput: (e) => {
        const v = e.target.value;
        edit(() => { find(id).node.value = v; }, { key: `${id}:value`, redraw: false });
      },
    });
  }

  function suggestionsId(rule, inEach) {
    const f = lookupField(((model.get("report") || {}).items || {})[rule.id]?.field || rule.field, inEach)
      || lookupField(rule.field, inEach);
    if (!f || !f.suggestions || !f.suggestions.length) return null;
    const listId = `${uid}-s-${inEach ? "sub-" : ""}${f.name.replace(/[^\w-]/g, "_")}`;
    if (parts.datalists && !parts.datalists.querySelector(`#${CSS.escape(listId)}`)) {
      parts.datalists.append(datalist(listId, f.suggestions));
    }
    return listId;
  }

  // ---------------------------------------------------------------- list box
  /** Chips with a remove button each, and an input that splits what is typed or pasted. */
  function listBox({ key, cls, label, get, set, suggestions, problems }) {
    const box = h("div", { class: `sn-tags ${cls || ""}`, "data-key": key, role: "group", "aria-label": label });
    const chips = h("span", { class: "sn-tag-list" });
    const input = h("input", {
      type: "text", class: "sn-tag-input", "aria-label": `add ${label}`, "data-fk": `${key}:input`,
      placeholder: "type, Enter", list: suggestions, autocomplete: "off", spellcheck: "false",
    });
    box.append(chips, input);

    function refresh() {
      const values = get();
      const bad = problems ? problems() : new Map();
      chips.replaceChildren(...values.map((value, i) => h("span", {
        class: `sn-tag${bad.has(i) ? " sn-tag-bad" : ""}`, title: bad.get(i) || null,
      }, h("span", { class: "sn-tag-text" }, value), h("button", {
        type: "button", class: "sn-tag-remove", "aria-label": `remove ${value}`, title: `remove ${value}`,
        "data-fk": `${key}:chip${i}`,
        onclick: () => {
          const now = get().slice();
          now.splice(i, 1);
          set(now);
          refresh();
          restoreFocus({ key: [`${key}:chip${i}`, `${key}:chip${i - 1}`, `${key}:input`] });
        },
      }, "\u00d7"))));
      box.classList.toggle("sn-tags-empty", values.length === 0);
      const note = notes.get(key);
      box.querySelector(".sn-tag-note")?.remove();
      if (note) box.append(h("span", { class: "sn-tag-note", role: "status" }, note));
    }

    function add(values) {
      if (!values.length) return;
      const now = get().slice();
      const refused = [];
      for (const v of values) {
        if (now.includes(v)) refused.push(v);
        else now.push(v);
      }
      if (now.length !== get().length) set(now);
      if (refused.length) {
        notes.set(key, `${refused.map((v) => `"${v}"`).join(", ")} ${refused.length > 1 ? "are" : "is"} already in the list`);
      }
      refresh();
    }

    function commit(finish, text = input.value) {
      // `text` is given for a paste: an input's value cannot hold its newlines.
      const [values, rest] = splitValues(text, finish);
      if (!values.length && rest === input.value) return false;
      input.value = rest;
      add(values);
      return values.length > 0;
    }

    input.addEventListener("keydown", (event) => {
      if (event.isComposing) return;
      if (event.key === "Enter") {
        event.preventDefault();
        commit(true);
      } else if (event.key === "Tab" && !event.shiftKey && input.value.trim()) {
        commit(true); // and the focus moves on, as Tab does
      } else if (event.key === "Backspace" && input.value === "" && get().length) {
        event.preventDefault();
        const now = get().slice(0, -1);
        set(now);
        refresh();
      }
    });
    input.addEventListener("input", () => {
      // A separator typed outside quotes ends a value; the rest stays in the box.
      const text = input.value;
      let quoted = false, split = false;
      for (const ch of text) {
        if (ch === '"') quoted = !quoted;
        else if (!quoted && SPLIT.has(ch)) { split = true; break; }
      }
      if (split) commit(false);
    });
    input.addEventListener("paste", (event) => {
      const text = (event.clipboardData || window.clipboardData)?.getData("text") ?? "";
      if (!/[,\n\r\t]/.test(text)) return;
      event.preventDefault();
      const start = input.selectionStart ?? input.value.length;
      const end = input.selectionEnd ?? input.value.length;
      commit(true, input.value.slice(0, start) + text + input.value.slice(end));
    });
    input.addEventListener("change", () => {
      // Leaving the box (a click elsewhere) keeps what was typed, as a value.
      if (input.value.trim()) commit(true);
    });
    refresh();
    listBoxes.set(key, refresh);
    return box;
  }

  // ---------------------------------------------------------------- bottom
  function drawBottom() {
    const fieldsBox = listBox({
      key: "fields", cls: "sn-return-fields", label: "fields to return",
      get: () => doc.fields || [],
      set: (values) => edit((d) => { d.fields = values; }, { redraw: false }),
      suggestions: `${uid}-returnable`,
      problems: () => {
        const found = new Map();
        for (const p of (((model.get("report") || {}).fields || {}).problems || [])) found.set(p.index, p.message);
        return found;
      },
    });
    const rows = h("input", {
      type: "text", class: "sn-preview-rows", "aria-label": "rows to preview", value: doc.preview_rows ?? "",
      "data-fk": "preview_rows", size: 6, autocomplete: "off",
      oninput: (e) => { const v = e.target.value; edit((d) => { d.preview_rows = v; }, { key: "preview_rows", redraw: false }); },
    });
    parts.fieldsProblems = h("div", { class: "sn-fields-problems sn-error-text" });
    parts.rowsError = h("span", { class: "sn-preview-rows-error sn-error-text", "aria-live": "polite" });
    parts.summary = h("ul", { class: "sn-summary", "aria-live": "polite" });
    parts.json = h("pre", { class: "sn-json", hidden: !jsonShown });
    parts.copyNote = h("span", { class: "sn-copy-note", role: "status" });
    parts.importArea = h("textarea", {
      class: "sn-import", "aria-label": "paste a query as JSON", placeholder: "paste a query as JSON",
      rows: 3, spellcheck: "false", "data-fk": "import",
    });
    parts.importError = h("div", { class: "sn-import-error sn-error-text", "aria-live": "polite" });
    parts.previewButton = h("button", {
      type: "button", class: "sn-btn sn-preview sn-primary", "data-fk": "preview",
      onclick: () => model.send({ kind: "preview" }),
    }, "Preview");
    parts.previewNote = h("span", { class: "sn-preview-note" });
    parts.previewArea = h("div", { class: "sn-preview-area", "aria-live": "polite" });
    return h("div", { class: "sn-bottom" },
      h("div", { class: "sn-line" }, h("span", { class: "sn-caption" }, "Return fields"), fieldsBox,
        h("span", { class: "sn-hint" }, "none: all fields")),
      parts.fieldsProblems,
      parts.summary,
      h("div", { class: "sn-line" },
        h("span", { class: "sn-caption" }, "Query"),
        h("button", {
          type: "button", class: "sn-btn sn-json-toggle", "aria-expanded": jsonShown ? "true" : "false", "data-fk": "json-toggle",
          onclick: (e) => {
            jsonShown = !jsonShown;
            parts.json.hidden = !jsonShown;
            e.currentTarget.setAttribute("aria-expanded", jsonShown ? "true" : "false");
            e.currentTarget.textContent = jsonShown ? "Hide JSON" : "Show JSON";
          },
        }, jsonShown ? "Hide JSON" : "Show JSON"),
        h("button", { type: "button", class: "sn-btn sn-copy", "data-fk": "copy", title: "copy the query's JSON", onclick: copyJson }, "Copy"),
        parts.copyNote),
      parts.json,
      h("details", { class: "sn-import-box" },
        h("summary", { class: "sn-import-summary" }, "Load a query from JSON"),
        h("div", { class: "sn-line" }, parts.importArea,
          h("button", {
            type: "button", class: "sn-btn sn-import-load", "data-fk": "import-load",
            onclick: () => model.send({ kind: "import", text: parts.importArea.value }),
          }, "Load")),
        parts.importError),
      h("div", { class: "sn-line sn-preview-line" },
        parts.previewButton,
        h("label", { class: "sn-rows-label" }, "rows ", rows), parts.rowsError, parts.previewNote),
      parts.previewArea,
    );
  }

  async function copyJson() {
    const text = (model.get("report") || {}).json || "";
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch (e) {
      const area = h("textarea", { class: "sn-copy-buffer" }, text);
      area.value = text;
      root.append(area);
      area.select();
      try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
      area.remove();
      restoreFocus({ key: "copy" });
    }
    parts.copyNote.textContent = ok ? "copied" : "could not copy: select the JSON and copy it";
  }

  // ---------------------------------------------------------------- report
  function applyReport() {
    const report = model.get("report") || {};
    const items = report.items || {};
    for (const [id, view] of groupViews) {
      const item = items[id] || {};
      const errors = item.errors || [], warnings = item.warnings || [];
      view.el.classList.toggle("sn-has-error", errors.length > 0);
      view.el.classList.toggle("sn-has-warning", !errors.length && warnings.length > 0);
      view.message.replaceChildren(
        ...errors.map((e) => h("div", { class: "sn-error-text" }, e.message)),
        ...warnings.map((w) => h("div", { class: "sn-warning-text" }, w.message)),
      );
    }
    walk(doc.root, (node) => {
      if (node.type !== "rule") return;
      const view = ruleViews.get(node.id);
      if (!view) return;
      view.update();
      const item = items[node.id] || {};
      const errors = item.errors || [], warnings = item.warnings || [];
      view.el.classList.toggle("sn-has-error", errors.length > 0);
      view.el.classList.toggle("sn-has-warning", !errors.length && warnings.length > 0);
      view.number.textContent = item.number ? String(item.number) : "";
      view.message.replaceChildren(
        ...errors.map((e) => h("div", { class: "sn-error-text", "data-part": e.part || null }, e.message)),
        ...warnings.map((w) => h("div", { class: "sn-warning-text", "data-part": w.part || null }, w.message)),
      );
      for (const part of ["field", "operator", "value"]) {
        const bad = errors.some((e) => e.part === part);
        view.el.querySelectorAll(`.sn-${part}, .sn-${part} input`).forEach((x) => x.setAttribute("aria-invalid", bad ? "true" : "false"));
      }
    });
    if (parts.summary) {
      parts.summary.replaceChildren(...(report.summary || []).map((s) => h("li", null, s)));
      const problems = ((report.fields || {}).problems || []);
      parts.fieldsProblems.replaceChildren(...problems.map((p) => h("div", null, p.message)));
      listBoxes.get("fields")?.();
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
    applyPreview();
  }

  function applyPreview() {
    if (!parts.previewArea) return;
    const preview = model.get("preview") || {};
    const report = model.get("report") || {};
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
    area.replaceChildren(...(state === "running" ? [h("div", { class: "sn-preview-message" }, "running\u2026")] : []),
      ...(message ? [message] : []), body);
    const stale = !!preview.html && preview.query_json !== undefined && preview.query_json !== null &&
      preview.query_json !== report.query_json;
    area.classList.toggle("sn-stale", stale);
    area.title = stale ? "out of date: the query changed after this Preview" : "";
  }

  function applyNotices() {
    if (!parts.notices) return;
    const notices = model.get("notices") || [];
    parts.notices.replaceChildren(...notices.map((n) => h("div", { class: "sn-notice" }, n)));
    parts.notices.hidden = notices.length === 0;
  }

  // ---------------------------------------------------------------- start
  const initial = model.get("document");
  if (initial && initial.root) {
    doc = clone(initial);
    noteIds(doc);
  } else {
    doc = freshDoc(initial);
    doc.rev = (initial && initial.rev) || 0;
    send();
  }
  draw();

  const handlers = {
    "change:document": adopt,
    "change:report": () => applyReport(),
    "change:preview": () => applyPreview(),
    "change:notices": () => applyNotices(),
    "change:catalog": () => draw(),
  };
  for (const [event, fn] of Object.entries(handlers)) model.on(event, fn);
  return () => {
    for (const [event, fn] of Object.entries(handlers)) model.off(event, fn);
  };
}

export default { render };
