// Block Kit, rendered as Slack's client shows it: blocks, mrkdwn, the markdown block and the
// interactive elements. Generic: it knows Block Kit, not how relay lays out its messages.
//
// Everything agent-supplied becomes text nodes (textContent) or an attribute value that
// cannot run: links are only made for http(s) and mailto URLs, no markup is ever parsed,
// and the page's Content-Security-Policy (Trusted Types) refuses any string-to-HTML sink.
"use strict";

window.BlockKit = (() => {
  // emoji.js's table (a Map); without it, shortcodes stay text.
  const EMOJI = window.SlackEmoji instanceof Map ? window.SlackEmoji : new Map();
  const SAFE_URL = /^(https?:\/\/|mailto:)/i;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function decode(text) {
    return String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }

  function emojify(text) {
    return text.replace(/:([a-z0-9_+-]+):/g, (all, name) => EMOJI.get(name) ?? all);
  }

  function link(url, label) {
    const trimmed = String(url).trim();
    if (!SAFE_URL.test(trimmed)) return el("span", "unsafe-link", label || trimmed);
    const a = el("a", "link", label || trimmed);
    a.href = trimmed;
    a.target = "_blank";
    a.rel = "noopener noreferrer nofollow";
    return a;
  }

  // -- dates: <!date^EPOCH^FORMAT|fallback> -------------------------------------------------
  function formatDate(epoch, format, fallback) {
    const date = new Date(epoch * 1000);
    if (!Number.isFinite(epoch) || Number.isNaN(date.getTime())) return fallback;
    const day = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
    const pretty = (style) => {
      const diff = Math.round((day(date) - day(new Date())) / 86400000);
      if (diff === 0) return "today";
      if (diff === -1) return "yesterday";
      if (diff === 1) return "tomorrow";
      return date.toLocaleDateString("en-US", style);
    };
    const shortStyle = { month: "short", day: "numeric", year: "numeric" };
    const longStyle = { weekday: "long", month: "long", day: "numeric", year: "numeric" };
    const plainStyle = { month: "long", day: "numeric", year: "numeric" };
    const time = { hour: "numeric", minute: "2-digit" };
    const tokens = {
      date_num: () => date.toISOString().slice(0, 10),
      date: () => date.toLocaleDateString("en-US", plainStyle),
      date_short: () => date.toLocaleDateString("en-US", shortStyle),
      date_long: () => date.toLocaleDateString("en-US", longStyle),
      date_pretty: () => pretty(plainStyle),
      date_short_pretty: () => pretty(shortStyle),
      date_long_pretty: () => pretty(longStyle),
      time: () => date.toLocaleTimeString("en-US", time),
      time_secs: () => date.toLocaleTimeString("en-US", { ...time, second: "2-digit" }),
      ago: () => fallback,
    };
    let unknown = false;
    const out = format.replace(/\{([a-z_]+)\}/g, (all, name) => {
      if (!tokens[name]) { unknown = true; return all; }
      return tokens[name]();
    });
    return unknown ? fallback : out;
  }

  // -- mrkdwn -----------------------------------------------------------------------------
  // <…> tokens, `code`, and *bold* _italic_ ~strike~ at word boundaries, as Slack reads them.
  const INLINE = /<([^<>\n]+)>|`([^`\n]+)`|(?<![^\s(\[{"'.,;:!?\u2026\u2014\u2013\/-])([*_~])(?=\S)(.*?\S)\3(?![^\s)\]}"'.,;:!?\u2026\u2014\u2013\/-])/gu;

  function angle(token, ctx) {
    const [target, ...rest] = token.split("|");
    const label = rest.length ? decode(rest.join("|")) : null;
    if (target.startsWith("@")) {
      const id = target.slice(1);
      return el("span", "mention", "@" + (ctx.userName(id) || label || id));
    }
    if (target.startsWith("#")) {
      const id = target.slice(1);
      return el("span", "mention", "#" + (ctx.channelName(id) || label || id));
    }
    if (target.startsWith("!subteam^")) {
      const id = target.slice("!subteam^".length);
      const handle = ctx.groupHandle(id) || (label || id).replace(/^@/, "");
      return el("span", "mention", "@" + handle);
    }
    if (target.startsWith("!date^")) {
      const [, epoch, format] = target.split("^");
      return el("span", "date", formatDate(Number(epoch), format || "", label || ""));
    }
    if (target.startsWith("!")) {
      const word = target.slice(1).split("^")[0];
      return el("span", "mention", "@" + (label ? label.replace(/^@/, "") : word));
    }
    return link(decode(target), label);
  }

  function inline(text, parent, ctx) {
    let last = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > last) parent.append(emojify(decode(text.slice(last, match.index))));
      if (match[1] !== undefined) parent.append(angle(match[1], ctx));
      else if (match[2] !== undefined) parent.append(el("code", "code", decode(match[2])));
      else {
        const tag = { "*": "strong", _: "em", "~": "s" }[match[3]];
        const node = el(tag);
        inline(match[4], node, ctx);
        parent.append(node);
      }
      last = match.index + match[0].length;
    }
    if (last < text.length) parent.append(emojify(decode(text.slice(last))));
  }

  function mrkdwn(source, ctx) {
    const root = el("div", "mrkdwn");
    const parts = String(source).split("```");
    parts.forEach((part, i) => {
      if (i % 2 === 1 && i < parts.length - 1) {
        root.append(el("pre", "pre", decode(part.replace(/^\n/, ""))));
        return;
      }
      const text = i % 2 === 1 ? "```" + part : part;
      let quote = null;
      text.split("\n").forEach((line, n, lines) => {
        if (line.startsWith(">")) {
          if (!quote) { quote = el("blockquote", "quote"); root.append(quote); }
          else quote.append("\n");
          inline(line.replace(/^> ?/, ""), quote, ctx);
          return;
        }
        quote = null;
        const span = el("span");
        inline(line, span, ctx);
        root.append(span);
        if (n < lines.length - 1) root.append("\n");
      });
    });
    return root;
  }

  // -- the markdown block -----------------------------------------------------------------
  const MD_INLINE = /`([^`\n]+)`|\[([^\]\n]+)\]\(([^)\s]+)\)|<(https?:\/\/[^>\s]+)>|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?])|\*\*(?=\S)(.+?\S)\*\*|__(?=\S)(.+?\S)__|~~(?=\S)(.+?\S)~~|\*(?=\S)(.+?\S)\*|(?<![\p{L}\p{N}])_(?=\S)(.+?\S)_(?![\p{L}\p{N}])/gu;

  function entities(text) {
    return text.replace(/&(amp|lt|gt|quot|#39);/g, (all, name) =>
      ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[name]);
  }

  function mdInline(text, parent) {
    let last = 0;
    for (const m of text.matchAll(MD_INLINE)) {
      if (m.index > last) parent.append(emojify(entities(text.slice(last, m.index))));
      if (m[1] !== undefined) parent.append(el("code", "code", m[1]));
      else if (m[2] !== undefined) {
        const a = link(m[3], null);
        a.textContent = "";
        mdInline(m[2], a);
        parent.append(a);
      } else if (m[4] !== undefined || m[5] !== undefined) parent.append(link(m[4] || m[5], null));
      else {
        const inner = m[6] ?? m[7] ?? m[8] ?? m[9] ?? m[10];
        const tag = m[6] !== undefined || m[7] !== undefined ? "strong" : m[8] !== undefined ? "s" : "em";
        const node = el(tag);
        mdInline(inner, node);
        parent.append(node);
      }
      last = m.index + m[0].length;
    }
    if (last < text.length) parent.append(emojify(entities(text.slice(last))));
  }

  const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const TABLE_RULE = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

  function cells(line) {
    return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  }

  function markdown(source, depth = 0) {
    const root = el("div", depth ? "" : "markdown");
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let paragraph = null;
    const end = () => { paragraph = null; };
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(/^\s*(```|~~~)/);
      if (fence) {
        end();
        const body = [];
        i += 1;
        while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
        i += 1;
        root.append(el("pre", "pre", body.join("\n")));
        continue;
      }
      if (!line.trim()) { end(); i += 1; continue; }
      const heading = line.match(/^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/);
      if (heading) {
        end();
        const h = el("div", "md-h md-h" + heading[1].length);
        mdInline(heading[2], h);
        root.append(h);
        i += 1;
        continue;
      }
      if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { end(); root.append(el("hr", "divider")); i += 1; continue; }
      if (/^\s{0,3}>/.test(line)) {
        end();
        const body = [];
        while (i < lines.length && /^\s{0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^\s{0,3}> ?/, ""));
        const quote = el("blockquote", "quote");
        quote.append(markdown(body.join("\n"), depth + 1));
        root.append(quote);
        continue;
      }
      if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
        end();
        const table = el("table", "md-table");
        const head = el("tr");
        cells(line).forEach((c) => { const th = el("th"); mdInline(c, th); head.append(th); });
        table.append(head);
        i += 2;
        while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
          const tr = el("tr");
          cells(lines[i++]).forEach((c) => { const td = el("td"); mdInline(c, td); tr.append(td); });
          table.append(tr);
        }
        root.append(table);
        continue;
      }
      if (LIST_ITEM.test(line)) {
        end();
        const stack = [];
        while (i < lines.length && (LIST_ITEM.test(lines[i]) || (/^\s+\S/.test(lines[i]) && stack.length))) {
          const m = lines[i].match(LIST_ITEM);
          if (!m) {
            const last = stack[stack.length - 1].list.lastChild;
            last.append(" ");
            mdInline(lines[i].trim(), last);
            i += 1;
            continue;
          }
          const indent = m[1].replace(/\t/g, "    ").length;
          const ordered = /\d/.test(m[2]);
          while (stack.length && indent < stack[stack.length - 1].indent) stack.pop();
          let top = stack[stack.length - 1];
          if (!top || indent > top.indent) {
            const list = el(ordered ? "ol" : "ul", "md-list");
            if (ordered) list.start = parseInt(m[2], 10);
            if (top && top.list.lastChild) top.list.lastChild.append(list);
            else root.append(list);
            top = { indent, list };
            stack.push(top);
          }
          const item = el("li");
          const task = m[3].match(/^\[([ xX])\]\s+(.*)$/);
          if (task) item.append(task[1] === " " ? "\u2610 " : "\u2611 ");
          mdInline(task ? task[2] : m[3], item);
          top.list.append(item);
          i += 1;
        }
        continue;
      }
      if (!paragraph) { paragraph = el("p", "md-p"); root.append(paragraph); }
      else paragraph.append("\n");
      mdInline(line.trim(), paragraph);
      i += 1;
    }
    return root;
  }

  // -- text objects -----------------------------------------------------------------------
  function textObject(obj, ctx) {
    if (!obj || typeof obj !== "object") return el("span", "", "");
    if (obj.type === "mrkdwn") return mrkdwn(obj.text || "", ctx);
    const text = String(obj.text || "");
    return el("span", "plain", obj.emoji === false ? text : emojify(text));
  }

  function plain(obj) {
    return obj && typeof obj === "object" ? String(obj.text || "") : "";
  }

  // -- interactive elements ---------------------------------------------------------------
  function optionText(option) {
    return plain(option && option.text);
  }

  function optionsOf(element) {
    const options = Array.isArray(element.options) ? [...element.options] : [];
    for (const group of element.option_groups || []) options.push(...(group.options || []));
    return options;
  }

  // What an element shows before anyone touched it: its initial option(s), as in Slack.
  function initialChoice(element) {
    if (element.initial_option) return { type: element.type, selected_option: element.initial_option };
    if (element.initial_options) return { type: element.type, selected_options: element.initial_options };
    return undefined;
  }

  function button(element, block, ctx) {
    const b = el("button", "btn");
    if (element.style === "primary") b.classList.add("primary");
    if (element.style === "danger") b.classList.add("danger");
    b.type = "button";
    b.textContent = emojify(plain(element.text));
    b.disabled = !ctx.interactive;
    b.addEventListener("click", () => ctx.act(block, element, { kind: "button", text: plain(element.text) }));
    return b;
  }

  function staticSelect(element, block, ctx) {
    const select = el("select", "select");
    select.disabled = !ctx.interactive;
    const chosen = ctx.choice(block, element) || initialChoice(element);
    const current = chosen && chosen.selected_option ? optionText(chosen.selected_option) : null;
    const placeholder = el("option", "", plain(element.placeholder) || "Select an item");
    placeholder.value = "";
    placeholder.disabled = true;
    placeholder.selected = current === null;
    select.append(placeholder);
    const add = (parent, option) => {
      const o = el("option", "", optionText(option));
      o.value = optionText(option);
      o.selected = o.value === current;
      parent.append(o);
    };
    (element.options || []).forEach((o) => add(select, o));
    for (const group of element.option_groups || []) {
      const g = el("optgroup");
      g.label = plain(group.label);
      (group.options || []).forEach((o) => add(g, o));
      select.append(g);
    }
    select.addEventListener("change", () => {
      const option = optionsOf(element).find((o) => optionText(o) === select.value);
      ctx.remember(block, element, { type: element.type, selected_option: option || null });
      ctx.act(block, element, { kind: "select", text: select.value });
    });
    return select;
  }

  function multiSelect(element, block, ctx) {
    const box = el("div", "multi");
    const chosen = ctx.choice(block, element) || initialChoice(element);
    const picked = (chosen && chosen.selected_options ? chosen.selected_options : []).map(optionText);
    const send = (texts) => {
      const all = optionsOf(element);
      const options = texts.map((t) => all.find((o) => optionText(o) === t)).filter(Boolean);
      ctx.remember(block, element, { type: element.type, selected_options: options });
      ctx.act(block, element, { kind: "multi", texts });
    };
    const chips = el("div", "chips");
    for (const text of picked) {
      const chip = el("span", "chip", text);
      const remove = el("button", "chip-remove", "\u00d7");
      remove.type = "button";
      remove.title = "Remove " + text;
      remove.disabled = !ctx.interactive;
      remove.addEventListener("click", () => send(picked.filter((t) => t !== text)));
      chip.append(remove);
      chips.append(chip);
    }
    box.append(chips);
    const select = el("select", "select");
    select.disabled = !ctx.interactive;
    const placeholder = el("option", "", plain(element.placeholder) || "Select items");
    placeholder.value = "";
    placeholder.selected = true;
    select.append(placeholder);
    for (const option of optionsOf(element)) {
      if (picked.includes(optionText(option))) continue;
      const o = el("option", "", optionText(option));
      o.value = optionText(option);
      select.append(o);
    }
    select.addEventListener("change", () => { if (select.value) send([...picked, select.value]); });
    box.append(select);
    return box;
  }

  function choices(element, block, ctx, multiple) {
    const box = el("div", multiple ? "checkboxes" : "radios");
    const chosen = ctx.choice(block, element) || initialChoice(element);
    const picked = multiple
      ? (chosen && chosen.selected_options ? chosen.selected_options : []).map(optionText)
      : chosen && chosen.selected_option ? [optionText(chosen.selected_option)] : [];
    for (const option of optionsOf(element)) {
      const label = el("label", "choice");
      const input = el("input");
      input.type = multiple ? "checkbox" : "radio";
      input.checked = picked.includes(optionText(option));
      input.disabled = !ctx.interactive;
      input.addEventListener("change", () => {
        if (multiple) {
          const texts = [...box.querySelectorAll("input")]
            .map((box_, n) => (box_.checked ? optionText(optionsOf(element)[n]) : null))
            .filter((t) => t !== null);
          const options = optionsOf(element).filter((o) => texts.includes(optionText(o)));
          ctx.remember(block, element, { type: element.type, selected_options: options });
          ctx.act(block, element, { kind: "checks", texts });
        } else {
          ctx.remember(block, element, { type: element.type, selected_option: option });
          ctx.act(block, element, { kind: "select", text: optionText(option) });
        }
      });
      const words = el("span", "choice-text");
      words.append(textObject(option.text, ctx));
      if (option.description) {
        const description = el("span", "choice-description");
        description.append(textObject(option.description, ctx));
        words.append(description);
      }
      label.append(input, words);
      box.append(label);
    }
    return box;
  }

  function textInput(element, block, ctx) {
    const input = el(element.multiline ? "textarea" : "input", "text-input");
    if (!element.multiline) input.type = "text";
    // Typed as text, as in Slack, where a number field is checked only on submit.
    if (element.type === "number_input") input.inputMode = element.is_decimal_allowed ? "decimal" : "numeric";
    if (element.max_length) input.maxLength = element.max_length;
    if (element.placeholder) input.placeholder = plain(element.placeholder);
    input.dataset.blockId = block.block_id || "";
    input.dataset.actionId = element.action_id || "";
    const draft = ctx.draft(block, element);
    input.value = draft !== undefined ? draft : String(element.initial_value || "");
    input.disabled = !ctx.interactive;
    input.addEventListener("input", () => ctx.setDraft(block, element, input.value));
    const triggers = (element.dispatch_action_config || {}).trigger_actions_on || ["on_enter_pressed"];
    const dispatches = block.type !== "input" || (block.dispatch_action === true && triggers.includes("on_enter_pressed"));
    input.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
      if (ctx.inModal && element.multiline) return; // a new line, as in Slack's modals
      event.preventDefault();
      ctx.setDraft(block, element, input.value);
      if (dispatches) ctx.act(block, element, { kind: "enter" });
    });
    return input;
  }

  function element(element, block, ctx) {
    if (!element || typeof element !== "object") return el("span");
    switch (element.type) {
      case "button": return button(element, block, ctx);
      case "static_select": return staticSelect(element, block, ctx);
      case "multi_static_select": return multiSelect(element, block, ctx);
      case "checkboxes": return choices(element, block, ctx, true);
      case "radio_buttons": return choices(element, block, ctx, false);
      case "plain_text_input":
      case "number_input":
      case "email_text_input":
      case "url_text_input": return textInput(element, block, ctx);
      case "image": return el("span", "image-alt", "[image: " + String(element.alt_text || "") + "]");
      default: return el("span", "unsupported", "[" + String(element.type) + "]");
    }
  }

  // -- blocks -----------------------------------------------------------------------------
  function renderBlock(block, ctx) {
    switch (block.type) {
      case "header": return el("div", "blk-header", emojify(plain(block.text)));
      case "section": {
        const node = el("div", "blk-section");
        const body = el("div", "section-body");
        if (block.text) body.append(textObject(block.text, ctx));
        if (Array.isArray(block.fields)) {
          const fields = el("div", "fields");
          block.fields.forEach((f) => fields.append(textObject(f, ctx)));
          body.append(fields);
        }
        node.append(body);
        if (block.accessory) {
          const side = el("div", "accessory");
          side.append(element(block.accessory, block, ctx));
          node.append(side);
        }
        return node;
      }
      case "markdown": return markdown(block.text || "");
      case "context": {
        const node = el("div", "blk-context");
        for (const item of block.elements || []) {
          if (item && item.type === "image") node.append(el("span", "image-alt", "[" + String(item.alt_text || "image") + "]"));
          else node.append(textObject(item, ctx));
        }
        return node;
      }
      case "divider": return el("hr", "divider");
      case "actions": {
        const node = el("div", "blk-actions");
        (block.elements || []).forEach((e) => node.append(element(e, block, ctx)));
        return node;
      }
      case "input": {
        const node = el("div", "blk-input");
        node.append(el("label", "input-label", plain(block.label)));
        node.append(element(block.element, block, ctx));
        if (block.hint) node.append(el("div", "input-hint", plain(block.hint)));
        return node;
      }
      case "image": return el("div", "image-alt", "[image: " + String(block.alt_text || "") + "]");
      case "rich_text": return el("div", "unsupported", "(a rich_text block)");
      default: return el("div", "unsupported", "(a " + String(block.type) + " block the sandbox does not show)");
    }
  }

  const NO_STATE = {
    interactive: false,
    userName: () => null, channelName: () => null, groupHandle: () => null,
    choice: () => undefined, remember: () => {},
    draft: () => undefined, setDraft: () => {},
    act: () => {},
  };

  function renderBlocks(blocks, given) {
    const ctx = { ...NO_STATE, ...given };
    const root = el("div", "blocks");
    for (const block of blocks || []) {
      if (!block || typeof block !== "object") continue;
      const node = renderBlock(block, ctx);
      if (block.block_id) node.dataset.blockId = String(block.block_id);
      root.append(node);
    }
    return root;
  }

  return { renderBlocks, mrkdwn, markdown, formatDate, el };
})();
