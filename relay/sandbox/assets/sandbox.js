// The sandbox page: one viewer's Slack client. A live feed (server-sent events) brings every
// message the relay posted or updated and the private notices sent to this viewer; each
// click, choice or Enter goes to /sandbox/act, which FakeSlack turns into the signed
// block_actions request Slack would send to the relay's /slack/events. A modal the relay opens
// for this viewer shows over the channel; its Submit is delivered as view_submission.
"use strict";

(() => {
  const { renderBlocks, mrkdwn, el } = window.BlockKit;
  const $ = (id) => document.getElementById(id);

  const state = {
    me: null,
    people: [],
    groups: [],
    channelNames: {},
    defaultChannel: null,
    messages: new Map(), // "channel|ts" -> message view
    ephemerals: [],
    dms: new Set(),
    current: null,
    openThreads: new Set(),
    unread: new Set(),
    drafts: new Map(), // "person|channel|ts|block|action" -> typed text
    choices: new Map(), // same key -> state.values entry chosen on this page
    modal: null, // the view of the modal open for this viewer, as the feed sends it
    modalDrafts: new Map(), // "person|view|block|action" -> typed text
    modalChoices: new Map(), // same key -> state.values entry chosen in the modal
    source: null,
  };

  const keyOf = (m) => m.channel + "|" + m.ts;
  const fieldKey = (m, block, element) =>
    [state.me, m.channel, m.ts, block.block_id || "", element.action_id || ""].join("|");

  function person(id) { return state.people.find((p) => p.id === id); }

  const names = {
    userName: (id) => (person(id) || {}).name,
    channelName: (id) => state.channelNames[id],
    groupHandle: (id) => (state.groups.find((g) => g.id === id) || {}).handle,
  };

  // -- the feed -----------------------------------------------------------------------------
  function connect(me) {
    if (state.source) state.source.close();
    state.me = me;
    const source = new EventSource("/sandbox/events?as=" + encodeURIComponent(me));
    state.source = source;
    setStatus("connecting…", "connecting");
    source.addEventListener("error", () => notRunning());
    source.addEventListener("snapshot", (e) => snapshot(JSON.parse(e.data)));
    source.addEventListener("message", (e) => upsert(JSON.parse(e.data)));
    source.addEventListener("ephemeral", (e) => ephemeral(JSON.parse(e.data)));
    source.addEventListener("dm", (e) => { state.dms.add(JSON.parse(e.data).channel); sidebar(); });
    source.addEventListener("modal", (e) => { state.modal = JSON.parse(e.data).modal; renderModal(); });
  }

  function setStatus(text, kind) {
    const node = $("status");
    node.textContent = text;
    node.dataset.state = kind;
  }

  function snapshot(data) {
    state.me = data.me;
    const url = new URL(window.location.href);
    if (url.searchParams.get("as") !== data.me) {
      url.searchParams.set("as", data.me);
      window.history.replaceState(null, "", url);
    }
    state.people = data.people;
    state.groups = data.groups;
    state.channelNames = data.channel_names;
    state.defaultChannel = data.default_channel;
    state.messages = new Map(data.messages.map((m) => [keyOf(m), m]));
    state.ephemerals = data.ephemerals;
    state.dms = new Set(data.dms);
    state.unread = new Set();
    for (const m of data.messages) {
      for (const entry of m.state || []) {
        const key = [state.me, m.channel, m.ts, entry.block_id, entry.action_id].join("|");
        if (entry.value !== undefined) state.drafts.set(key, entry.value || "");
        else state.choices.set(key, entry);
      }
    }
    if (!state.current || !channels().includes(state.current)) state.current = state.defaultChannel;
    whoAmI();
    samples(data.samples);
    ids();
    sidebar();
    renderChannel();
    state.modal = data.modal || null;
    renderModal();
    setStatus("live", "live");
    agentAnswers();
  }

  function upsert(m) {
    state.messages.set(keyOf(m), m);
    agentAnswersSoon();
    if (m.channel !== state.current) {
      if (!m.deleted) state.unread.add(m.channel);
      sidebar();
      return;
    }
    if (!state.dms.has(m.channel) && !(m.channel in state.channelNames)) sidebar();
    renderItem(rootKey(m));
  }

  function ephemeral(notice) {
    state.ephemerals.push(notice);
    if (notice.channel !== state.current) { state.unread.add(notice.channel); sidebar(); return; }
    const parent = notice.thread_ts && state.messages.get(notice.channel + "|" + notice.thread_ts);
    if (parent) { state.openThreads.add(keyOf(parent)); renderItem(keyOf(parent)); }
    else renderItem("E|" + notice.index);
  }

  // -- sidebar ------------------------------------------------------------------------------
  function channels() {
    const all = new Set(Object.keys(state.channelNames));
    for (const m of state.messages.values()) if (!state.dms.has(m.channel)) all.add(m.channel);
    for (const dm of state.dms) all.add(dm);
    return [...all];
  }

  function whoAmI() {
    const select = $("me");
    select.replaceChildren();
    for (const p of state.people) {
      const option = el("option", "", p.real_name + " (" + p.name + ") \u2014 " + p.title);
      option.value = p.id;
      option.selected = p.id === state.me;
      select.append(option);
    }
    const me = person(state.me);
    const note = $("me-note");
    note.textContent = me && me.allowed
      ? "May answer the relay's questions."
      : "Not on the relay's allowlist: a click is refused and told so privately.";
    note.dataset.allowed = me && me.allowed ? "yes" : "no";
  }

  function sidebar() {
    const list = $("channels");
    const dms = $("dms");
    list.replaceChildren();
    dms.replaceChildren();
    for (const channel of channels()) {
      const isDm = state.dms.has(channel);
      const item = el("li", "nav-item");
      const a = el("button", "nav-link", isDm ? "relay (app)" : "# " + (state.channelNames[channel] || channel.toLowerCase()));
      a.type = "button";
      a.dataset.channel = channel;
      if (channel === state.current) a.classList.add("active");
      if (state.unread.has(channel)) a.classList.add("unread");
      a.addEventListener("click", () => { state.current = channel; sidebar(); renderChannel(); });
      item.append(a);
      (isDm ? dms : list).append(item);
    }
    if (!state.dms.size) dms.append(el("li", "nav-empty", "none yet: a question asked of you (slack.channel = your user id) opens one"));
  }

  function samples(list) {
    const box = $("samples");
    box.replaceChildren();
    for (const sample of list || []) {
      const b = el("button", "btn sample", sample.title);
      b.type = "button";
      b.dataset.sample = sample.name;
      b.addEventListener("click", () => sendSample(sample.name, b, sample.title));
      box.append(b);
    }
  }

  // -- the channel --------------------------------------------------------------------------
  function sortTime(item) { return item.kind === "message" ? Number(item.m.ts) : Number(item.n.at); }

  function rootKey(m) {
    if (m.thread_ts && m.thread_ts !== m.ts && state.messages.has(m.channel + "|" + m.thread_ts)) {
      return m.channel + "|" + m.thread_ts;
    }
    return keyOf(m);
  }

  function items() {
    const out = [];
    for (const m of state.messages.values()) {
      if (m.channel !== state.current || m.deleted || rootKey(m) !== keyOf(m)) continue;
      out.push({ kind: "message", key: keyOf(m), m });
    }
    for (const n of state.ephemerals) {
      if (n.channel !== state.current) continue;
      if (n.thread_ts && state.messages.has(n.channel + "|" + n.thread_ts)) continue;
      out.push({ kind: "ephemeral", key: "E|" + n.index, n });
    }
    return out.sort((a, b) => sortTime(a) - sortTime(b));
  }

  function renderChannel() {
    state.unread.delete(state.current);
    const isDm = state.dms.has(state.current);
    $("channel-title").textContent = isDm
      ? "relay (app) \u2014 your direct messages"
      : "# " + (state.channelNames[state.current] || String(state.current || "").toLowerCase());
    const box = $("messages");
    box.replaceChildren();
    const list = items();
    if (!list.length) box.append(el("div", "empty", "Nothing here yet. Send a sample question, or ask through the API."));
    for (const item of list) box.append(renderNode(item));
    box.scrollTop = box.scrollHeight;
  }

  function renderItem(key) {
    const box = $("messages");
    const item = items().find((i) => i.key === key);
    const old = [...box.children].find((n) => n.dataset.key === key);
    if (!item) { if (old) old.remove(); return; }
    const node = renderNode(item);
    if (old) { old.replaceWith(node); return; }
    box.querySelector(".empty")?.remove();
    const later = [...box.children].find((n) => Number(n.dataset.time) > sortTime(item));
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
    box.insertBefore(node, later || null);
    if (atBottom && !later) box.scrollTop = box.scrollHeight;
  }

  function renderNode(item) {
    const node = item.kind === "message" ? messageNode(item.m, true) : noticeNode(item.n);
    node.dataset.key = item.key;
    node.dataset.time = String(sortTime(item));
    return node;
  }

  function clock(epoch) {
    return new Date(epoch * 1000).toLocaleTimeString("en-US", { hour: "numeric", minute: "2-digit" });
  }

  function frame(className, epoch, extra) {
    const node = el("div", "msg " + className);
    const avatar = el("div", "avatar", "r");
    const body = el("div", "msg-body");
    const head = el("div", "msg-head");
    head.append(el("span", "author", "relay"), el("span", "app-badge", "APP"), el("span", "time", clock(epoch)));
    if (extra) head.append(extra);
    body.append(head);
    node.append(avatar, body);
    return { node, body };
  }

  function messageNode(m, withThread) {
    const edited = m.version > 0 ? el("span", "edited", "(edited)") : null;
    const { node, body } = frame("message", Number(m.ts), edited);
    node.dataset.ts = m.ts;
    node.dataset.channel = m.channel;
    node.dataset.version = String(m.version);
    const ctx = context(m);
    body.append(m.blocks && m.blocks.length ? renderBlocks(m.blocks, ctx) : mrkdwn(m.text || "", ctx));
    if (withThread) thread(m, body);
    return node;
  }

  function thread(parent, body) {
    const key = keyOf(parent);
    const replies = [...state.messages.values()]
      .filter((r) => r.channel === parent.channel && r.thread_ts === parent.ts && r.ts !== parent.ts && !r.deleted)
      .map((r) => ({ kind: "message", m: r }));
    const notices = state.ephemerals
      .filter((n) => n.channel === parent.channel && n.thread_ts === parent.ts)
      .map((n) => ({ kind: "ephemeral", n }));
    const all = [...replies, ...notices].sort((a, b) => sortTime(a) - sortTime(b));
    if (!all.length) return;
    const open = state.openThreads.has(key);
    const toggle = el("button", "thread-toggle", all.length + (all.length === 1 ? " reply" : " replies") + (open ? " \u25be" : " \u25b8"));
    toggle.type = "button";
    toggle.addEventListener("click", () => {
      if (open) state.openThreads.delete(key); else state.openThreads.add(key);
      renderItem(key);
    });
    body.append(toggle);
    if (!open) return;
    const box = el("div", "thread");
    for (const item of all) box.append(item.kind === "message" ? messageNode(item.m, false) : noticeNode(item.n));
    body.append(box);
  }

  function noticeNode(n) {
    const { node, body } = frame("ephemeral", Number(n.at), el("span", "only-you", "Only visible to you"));
    node.dataset.notice = String(n.index);
    const ctx = { ...names, interactive: false };
    body.append(n.blocks && n.blocks.length ? renderBlocks(n.blocks, ctx) : mrkdwn(n.text, ctx));
    return node;
  }

  // -- interaction --------------------------------------------------------------------------
  function context(m) {
    return {
      ...names,
      interactive: true,
      draft: (block, element) => state.drafts.get(fieldKey(m, block, element)),
      setDraft: (block, element, value) => state.drafts.set(fieldKey(m, block, element), value),
      choice: (block, element) => state.choices.get(fieldKey(m, block, element)),
      remember: (block, element, entry) => {
        state.choices.set(fieldKey(m, block, element), entry);
        renderItem(rootKey(m)); // show the choice at once, as Slack's client does
      },
      act: (block, element, what) => act(m, block, element, what),
    };
  }

  function typedIn(m) {
    const typed = [];
    for (const block of m.blocks || []) {
      const elements = block.type === "input" ? [block.element]
        : block.type === "actions" ? block.elements || []
        : block.accessory ? [block.accessory] : [];
      for (const element of elements) {
        if (!element || element.type !== "plain_text_input") continue;
        const value = state.drafts.get(fieldKey(m, block, element));
        if (value !== undefined) typed.push({ block_id: block.block_id, action_id: element.action_id, value });
      }
    }
    return typed;
  }

  async function act(m, block, element, what) {
    if (state.modal) return; // behind an open modal: Slack's client sends nothing
    const body = {
      as: state.me,
      channel: m.channel,
      ts: m.ts,
      version: m.version,
      block_id: block.block_id,
      action_id: element.action_id,
      typed: typedIn(m),
      ...what,
    };
    const answer = await post("/sandbox/act", body);
    if (!answer) return;
    if (answer.dispatched && answer.status !== 200) {
      toast("The relay answered HTTP " + answer.status + (answer.body ? ": " + answer.body : ""));
    }
  }

  // -- the modal ----------------------------------------------------------------------------
  // The modal the relay opened for this viewer (views.open): its fields keep what was typed
  // here until Submit, which FakeSlack checks as Slack's client does and delivers to the
  // relay as view_submission; field errors come back in the feed and show under each field.
  const modalKey = (view, block, element) =>
    [state.me, view.id, block.block_id || "", element.action_id || ""].join("|");

  function modalEntry(view, block, element) {
    return (view.state || []).find((s) => s.block_id === block.block_id && s.action_id === element.action_id);
  }

  function modalContext(view) {
    return {
      ...names,
      interactive: true,
      inModal: true,
      draft: (block, element) => {
        const typed = state.modalDrafts.get(modalKey(view, block, element));
        if (typed !== undefined) return typed;
        const entry = modalEntry(view, block, element);
        return entry && entry.value !== undefined ? entry.value || "" : undefined;
      },
      setDraft: (block, element, value) => state.modalDrafts.set(modalKey(view, block, element), value),
      choice: (block, element) =>
        state.modalChoices.get(modalKey(view, block, element)) || modalEntry(view, block, element),
      remember: (block, element, entry) => {
        state.modalChoices.set(modalKey(view, block, element), entry);
        renderModal();
      },
      act: () => {}, // inputs in a modal send nothing until Submit (no dispatch_action here)
    };
  }

  // Slack's modal is modal: while one is open, nothing behind it takes a click, a key or the
  // focus. `inert` does that for the mouse, the keyboard and screen readers alike. The "You
  // are" switch stays usable: it belongs to the sandbox, not to this person's Slack client,
  // and the person switched to has no modal open (this one's stays open in FakeSlack).
  function blockBehind(open) {
    $("main").inert = open;
    for (const node of $("sidebar").children) {
      if (!node.classList.contains("who")) node.inert = open;
    }
    document.body.classList.toggle("modal-open", open);
  }

  function renderModal() {
    const layer = $("modal-layer");
    const view = state.modal;
    const shown = layer.querySelector(".modal");
    const opening = !!view && (!shown || shown.dataset.viewId !== view.id);
    layer.replaceChildren();
    layer.hidden = !view;
    blockBehind(!!view);
    if (!view) return;
    const box = el("div", "modal");
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.dataset.viewId = view.id;
    const head = el("div", "modal-head");
    const title = el("div", "modal-title", (view.title && view.title.text) || "");
    const x = el("button", "modal-x", "\u00d7");
    x.type = "button";
    x.title = "Close";
    x.addEventListener("click", () => closeModal(view));
    head.append(title, x);
    box.setAttribute("aria-label", title.textContent);
    box.append(head);
    if (view.problem) box.append(el("div", "modal-problem", "The app could not take this: " + view.problem));
    const body = el("div", "modal-body");
    const blocks = renderBlocks(view.blocks, modalContext(view));
    for (const [blockId, message] of Object.entries(view.errors || {})) {
      const node = [...blocks.children].find((n) => n.dataset.blockId === blockId);
      if (!node) continue;
      node.classList.add("has-error");
      // Under the field, above its hint, as Slack shows it.
      node.insertBefore(el("div", "input-error", message), node.querySelector(".input-hint"));
    }
    body.append(blocks);
    box.append(body);
    const foot = el("div", "modal-foot");
    const cancel = el("button", "btn", (view.close && view.close.text) || "Cancel");
    cancel.type = "button";
    cancel.addEventListener("click", () => closeModal(view));
    foot.append(cancel);
    if (view.submit) {
      const submit = el("button", "btn primary", view.submit.text);
      submit.type = "button";
      submit.addEventListener("click", () => submitModal(view, submit));
      foot.append(submit);
    }
    box.append(foot);
    layer.append(box);
    if (opening) {
      // As Slack does: the first field takes the focus, so no key reaches the button that
      // opened the modal (which would click it again).
      box.tabIndex = -1;
      (body.querySelector("input, textarea, select") || box).focus();
    }
  }

  function modalValues(view) {
    const values = [];
    for (const block of view.blocks || []) {
      if (block.type !== "input" || !block.element) continue;
      const element = block.element;
      const key = modalKey(view, block, element);
      if (state.modalDrafts.has(key)) {
        values.push({ block_id: block.block_id, value: state.modalDrafts.get(key) });
        continue;
      }
      const chosen = state.modalChoices.get(key);
      if (!chosen) continue;
      const text = (o) => (o && o.text ? String(o.text.text || "") : "");
      if ("selected_option" in chosen) values.push({ block_id: block.block_id, option: text(chosen.selected_option) });
      else values.push({ block_id: block.block_id, options: (chosen.selected_options || []).map(text) });
    }
    return values;
  }

  async function submitModal(view, button) {
    button.disabled = true;
    try {
      const answer = await post("/sandbox/act", { as: state.me, kind: "view_submit", view_id: view.id, values: modalValues(view) });
      if (answer && answer.outcome === "failed") toast("The relay's answer to the form: " + answer.problem);
    } finally {
      button.disabled = false;
    }
  }

  async function closeModal(view) {
    await post("/sandbox/act", { as: state.me, kind: "view_close", view_id: view.id });
  }

  async function sendSample(name, buttonNode, title) {
    buttonNode.disabled = true;
    try {
      const record = await post("/sandbox/sample", { name });
      if (record) sampleReply(name, title, record);
      if (record && state.current !== state.defaultChannel) {
        state.current = state.defaultChannel;
        sidebar();
        renderChannel();
      }
    } finally {
      buttonNode.disabled = false;
    }
  }

  // What the relay answered the latest samples (newest first), each in a line and in full: a
  // call decided at once (inside an approved plan) posts nothing, so this is where it shows.
  function sampleReply(name, title, record) {
    const box = $("sample-reply");
    for (const old of box.querySelectorAll("details")) old.open = false;
    while (box.children.length >= 3) box.lastElementChild.remove();
    const decision = record.decision;
    let said = record.status || "sent";
    if (decision && decision.plan) said = decision.behavior + ", inside plan " + decision.plan + ", with no post";
    else if (decision) said = decision.behavior;
    else if (record.status === "pending") said = "posted, waiting for a person";
    const details = el("details", "agent-answer sample-answer");
    details.open = true;
    details.dataset.sample = name;
    details.append(el("summary", "", title + ": " + said));
    details.append(el("pre", "", JSON.stringify(record, null, 2)));
    box.prepend(details);
  }

  async function post(path, body) {
    try {
      const response = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const data = await response.json();
      if (!response.ok) {
        toast((data.error && data.error.message) || "HTTP " + response.status);
        return null;
      }
      return data;
    } catch (err) {
      notRunning();
      toast("The relay is not running, so nothing was sent. Start it again (bash scripts/serve), then retry.");
      return null;
    }
  }

  // -- when the relay is gone ------------------------------------------------------------------
  // The feed retries by itself; until it is back the header says so in plain words.
  function notRunning() {
    setStatus("the relay is not running: start it with bash scripts/serve (this page reconnects)", "down");
  }

  // -- the ids a visitor needs -----------------------------------------------------------------
  function idRow(label, id) {
    const row = el("div", "ids-row");
    row.append(el("span", "", label));
    const code = el("code", "", id);
    code.title = "click to select, then copy";
    row.append(code);
    return row;
  }

  function ids() {
    const box = $("ids");
    box.replaceChildren();
    for (const p of state.people) {
      box.append(idRow(p.real_name + (p.allowed ? "" : " (not allowed)"), p.id));
    }
    for (const [id, name] of Object.entries(state.channelNames)) {
      box.append(idRow("#" + name + (id === state.defaultChannel ? " (default)" : ""), id));
    }
    for (const g of state.groups) box.append(idRow("@" + g.handle + " (group)", g.id));
  }

  // -- what each agent got back ----------------------------------------------------------------
  let answersTimer = null;
  function agentAnswersSoon() {
    clearTimeout(answersTimer);
    answersTimer = setTimeout(agentAnswers, 300);
  }

  async function agentAnswers() {
    let data;
    try {
      const response = await fetch("/sandbox/answers");
      if (!response.ok) return;
      data = await response.json();
    } catch (err) {
      return; // the feed's error says the relay is not running
    }
    const box = $("agent-answers");
    box.replaceChildren();
    if (!data.asks.length) {
      box.append(el("div", "nav-empty", "none yet: ask something, and answer it"));
      return;
    }
    for (const record of data.asks) {
      const details = el("details", "agent-answer");
      details.dataset.ask = record.id;
      const agent = (record.agent && (record.agent.name || record.agent.id)) || "an agent";
      details.append(el("summary", "", agent + ": " + record.got.status));
      details.append(el("pre", "", JSON.stringify(record.got, null, 2)));
      box.append(details);
    }
  }

  let toastTimer = null;
  function toast(text) {
    const node = $("toast");
    node.textContent = text;
    node.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { node.hidden = true; }, 8000);
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("me").addEventListener("change", (e) => connect(e.target.value));
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && state.modal) closeModal(state.modal); // as Slack's Esc does
    });
    connect(new URL(window.location.href).searchParams.get("as") || "");
  });
})();
