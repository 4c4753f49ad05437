/* ragbot web chat: session, history, the message stream, uploads and admin login.
 *
 * Every text from the server reaches the page through textContent or RagbotMarkdown (which builds DOM nodes);
 * nothing is ever assigned to innerHTML. Streams (POST /api/messages and /api/upload) are read with fetch and
 * a ReadableStream, since EventSource cannot POST.
 */
(function () {
  "use strict";

  var md = window.RagbotMarkdown;

  // The page's own words in the chat's language, sent by /api/session; the English in the code until they arrive.
  var texts = {};

  function t(key, english, values) {
    var text = Object.prototype.hasOwnProperty.call(texts, key) ? String(texts[key]) : english;
    Object.keys(values || {}).forEach(function (name) {
      text = text.split("{" + name + "}").join(String(values[name]));
    });
    return text;
  }

  function applyTexts(received) {
    texts = received && typeof received === "object" ? received : {};
    document.querySelectorAll("[data-text]").forEach(function (el) {
      el.textContent = t(el.getAttribute("data-text"), el.textContent);
    });
    document.querySelectorAll("[data-text-label]").forEach(function (el) {
      el.setAttribute("aria-label", t(el.getAttribute("data-text-label"), el.getAttribute("aria-label") || ""));
    });
    document.querySelectorAll("[data-text-title]").forEach(function (el) {
      el.setAttribute("title", t(el.getAttribute("data-text-title"), el.getAttribute("title") || ""));
    });
  }

  var $ = function (id) {
    return document.getElementById(id);
  };
  var els = {
    kbs: $("kbs"),
    messages: $("messages"),
    empty: $("empty"),
    status: $("status"),
    statusText: $("status-text"),
    composer: $("composer"),
    input: $("input"),
    send: $("send"),
    stop: $("stop"),
    newConversation: $("new-conversation"),
    adminButton: $("admin-button"),
    adminDialog: $("admin-dialog"),
    adminForm: $("admin-form"),
    adminLogin: $("admin-login"),
    adminToken: $("admin-token"),
    adminError: $("admin-error"),
    adminLoggedIn: $("admin-logged-in"),
    adminSubmit: $("admin-submit"),
    adminCancel: $("admin-cancel"),
    adminLogout: $("admin-logout"),
    upload: $("upload"),
    uploadInput: $("upload-input"),
    attach: $("attach"),
    attachInput: $("attach-input"),
    attachments: $("attachments"),
    notice: $("composer-notice"),
    dropzone: $("dropzone"),
    dropzoneHint: $("dropzone-hint"),
    record: $("record"),
    mediaPreview: $("media-preview"),
  };

  var state = {
    admin: false,
    busy: false,
    uploadLimitMb: 0,
    stickToBottom: true,
    bubbles: new Map(), // ref -> bubble
    dragDepth: 0,
    attachments: [], // files chosen to go with the next command (/faq import, /ingest)
    noticeKind: "", // what the notice above the composer is about: "busy", "files", "media" or nothing
    media: null, // a pasted image or a recording going with the next question: {kind, blob, name, preview, seconds}
    recorder: null, // the recording under way: {rec, stream, started, ticker, limit}
    audioSeconds: 0, // the longest recording the server listens to (the page stops there)
    imageLimitMb: 0,
  };

  // The commands a file can go with, as typed in the composer (nothing typed means /ingest).
  var FILE_COMMAND = /^\/(?:ingest|faq\s+import)(?:\s|$)/i;

  // ---- scrolling -----------------------------------------------------------------------------------------

  function nearBottom() {
    var list = els.messages;
    return list.scrollHeight - list.scrollTop - list.clientHeight < 48;
  }

  els.messages.addEventListener("scroll", function () {
    state.stickToBottom = nearBottom();
  });

  /** Keep the newest text in view, unless the person scrolled up to read (force: they just sent something). */
  function scrollToEnd(force) {
    if (force) {
      state.stickToBottom = true;
    }
    if (state.stickToBottom) {
      els.messages.scrollTop = els.messages.scrollHeight;
    }
  }

  // ---- icons ---------------------------------------------------------------------------------------------

  // Static outlines after Feather icons (MIT): drawn as SVG so they show without an emoji font.
  var ICONS = {
    up: "M14 9V5a3 3 0 0 0-3-3l-4 9v11h11.28a2 2 0 0 0 2-1.7l1.38-9a2 2 0 0 0-2-2.3zM7 22H4a2 2 0 0 1-2-2v-7a2 2 0 0 1 2-2h3",
    down: "M10 15v4a3 3 0 0 0 3 3l4-9V2H5.72a2 2 0 0 0-2 1.7l-1.38 9a2 2 0 0 0 2 2.3zm7-13h2.67A2.31 2.31 0 0 1 22 4v7a2.31 2.31 0 0 1-2.33 2H17",
    file: "M13 2H6a2 2 0 0 0-2 2v16a2 2 0 0 0 2 2h12a2 2 0 0 0 2-2V9zM13 2v7h7",
  };

  function icon(name) {
    var ns = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "16");
    svg.setAttribute("height", "16");
    svg.setAttribute("fill", "none");
    svg.setAttribute("stroke", "currentColor");
    svg.setAttribute("stroke-width", "2");
    svg.setAttribute("stroke-linecap", "round");
    svg.setAttribute("stroke-linejoin", "round");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    var path = document.createElementNS(ns, "path");
    path.setAttribute("d", ICONS[name]);
    svg.appendChild(path);
    return svg;
  }

  // ---- bubbles -------------------------------------------------------------------------------------------

  function makeBubble(role) {
    els.empty.hidden = true;
    var article = document.createElement("article");
    article.className = "msg msg--" + role;
    article.setAttribute("data-testid", "message");
    article.setAttribute("data-role", role);
    article.setAttribute("aria-label", role === "user" ? t("you_said", "You said") : t("ragbot_said", "ragbot said"));
    var body = document.createElement("div");
    body.className = "msg__body";
    body.setAttribute("data-testid", "message-text");
    article.appendChild(body);
    els.messages.appendChild(article);
    var bubble = { el: article, body: body, text: "", role: role, frame: 0, rested: 0 };
    return bubble;
  }

  function addUserBubble(text) {
    var bubble = makeBubble("user");
    bubble.text = text;
    bubble.body.textContent = text; // what the person typed is shown as typed
    return bubble;
  }

  /** Show `text` in the bubble now (a render the next frame would have made is no longer needed). */
  function setText(bubble, text) {
    bubble.text = text;
    if (bubble.frame) {
      cancelAnimationFrame(bubble.frame);
      bubble.frame = 0;
    }
    md.renderInto(bubble.body, text);
  }

  /**
   * Add a streamed piece of the answer. The bubble is rendered at an animation frame, once for all the pieces
   * that came before it: a model sends pieces faster than a screen shows them, and each render reads the whole
   * answer again. A render that took some milliseconds is followed by as many without one, so however long the
   * answer grows, rendering it takes at most half of the page's time.
   */
  function appendText(bubble, piece) {
    bubble.text += piece;
    if (!bubble.frame) {
      bubble.frame = requestAnimationFrame(function draw(now) {
        if (now < bubble.rested) {
          bubble.frame = requestAnimationFrame(draw);
          return;
        }
        bubble.frame = 0;
        var start = performance.now();
        md.renderInto(bubble.body, bubble.text);
        var end = performance.now();
        bubble.rested = end + (end - start);
        scrollToEnd(false);
      });
    }
  }

  /** The assistant bubble for `ref`, created (empty) when it is new. */
  function assistantBubble(ref, ctx) {
    var key = String(ref);
    var bubble = state.bubbles.get(key);
    if (!bubble || !bubble.el.isConnected) {
      bubble = makeBubble("assistant");
      bubble.el.setAttribute("data-ref", key);
      state.bubbles.set(key, bubble);
      if (ctx) {
        ctx.created.push(bubble);
      }
    }
    return bubble;
  }

  function addErrorBubble(text, ctx) {
    var bubble = makeBubble("assistant");
    bubble.el.classList.add("msg--error");
    bubble.el.setAttribute("data-kind", "error");
    bubble.el.setAttribute("role", "alert");
    setText(bubble, text);
    if (ctx) {
      ctx.failed = true;
      ctx.created.push(bubble);
    }
    scrollToEnd(false);
    return bubble;
  }

  function setStreaming(bubble, streaming) {
    if (!streaming && bubble.frame) {
      setText(bubble, bubble.text); // the stream ended before the frame: show everything that came now
    }
    bubble.el.classList.toggle("msg--streaming", streaming);
    bubble.el.setAttribute("data-status", streaming ? "streaming" : "done");
  }

  function setNotice(bubble, notice) {
    var old = bubble.el.querySelector(".msg__notice");
    if (old) {
      old.remove();
    }
    if (!notice) {
      return;
    }
    var p = document.createElement("p");
    p.className = "msg__notice";
    p.setAttribute("data-testid", "message-notice");
    var em = document.createElement("em");
    em.textContent = notice;
    p.appendChild(em);
    bubble.el.appendChild(p);
  }

  function setSources(bubble, sources, title) {
    var old = bubble.el.querySelector(".sources");
    if (old) {
      old.remove();
    }
    if (!Array.isArray(sources) || sources.length === 0) {
      return;
    }
    var section = document.createElement("section");
    section.className = "sources";
    section.setAttribute("data-testid", "sources");
    // The server names the heading in the language of the answer; stored history has no language: English.
    title = title ? String(title) : t("sources", "Sources");
    section.setAttribute("aria-label", title);
    var heading = document.createElement("p");
    heading.className = "sources__title";
    heading.textContent = title;
    section.appendChild(heading);
    var list = document.createElement("ol");
    sources.forEach(function (source) {
      list.appendChild(sourceItem(source || {}));
    });
    section.appendChild(list);
    bubble.el.appendChild(section);
  }

  function sourceItem(source) {
    var li = document.createElement("li");
    li.className = "source";
    li.setAttribute("data-testid", "source");
    var number = source.number != null ? String(source.number) : "";
    li.setAttribute("data-number", number);
    li.setAttribute("data-document-id", String(source.document_id || ""));

    var badge = document.createElement("span");
    badge.className = "source__number";
    badge.textContent = number;
    li.appendChild(badge);

    var main = document.createElement("div");
    var title = String(source.title || source.document_id || "untitled");
    if (source.page) {
      title = t("turn.source_page", "{title}, p. {page}", { page: source.page, title: title });
    }
    var url = String(source.url || "");
    var href = /^https?:/i.test(url.trim()) ? md.safeHref(url) : null;
    var titleEl;
    if (href !== null) {
      titleEl = document.createElement("a");
      titleEl.href = href;
      titleEl.rel = "noopener noreferrer";
      titleEl.target = "_blank";
    } else {
      titleEl = document.createElement("span");
    }
    titleEl.className = "source__title";
    titleEl.setAttribute("data-testid", "source-title");
    titleEl.textContent = title;
    main.appendChild(titleEl);
    if (source.snippet) {
      // The server sends the snippet as plain text (the quoted sentence where the answer quoted one).
      var snippet = document.createElement("p");
      snippet.className = "source__snippet";
      snippet.setAttribute("data-testid", "source-snippet");
      snippet.textContent = String(source.snippet);
      snippet.title = String(source.snippet);
      main.appendChild(snippet);
    }
    if (Array.isArray(source.table) && source.table.length > 0) {
      // A query's result (data analysis): its column names, then its rows, drawn as a Markdown table.
      var table = document.createElement("div");
      table.className = "source__table";
      table.setAttribute("data-testid", "source-table");
      md.renderInto(table, markdownTable(source.table));
      main.appendChild(table);
    }
    li.appendChild(main);
    return li;
  }

  /** Cells (the column names first) as Markdown pipe rows, each pipe in a cell escaped. */
  function markdownTable(rows) {
    var lines = rows.map(function (row) {
      var cells = (Array.isArray(row) ? row : []).map(function (cell) {
        return String(cell).replace(/\|/g, "\\|").replace(/\s+/g, " ");
      });
      return "| " + cells.join(" | ") + " |";
    });
    var width = Array.isArray(rows[0]) ? rows[0].length : 1;
    var rule = [];
    for (var column = 0; column < width; column++) {
      rule.push(numericColumn(rows.slice(1), column) ? " ---: |" : " --- |");
    }
    lines.splice(1, 0, "|" + rule.join(""));
    return lines.join("\n");
  }

  /** Whether every filled cell of a column is a number: such a column is right-aligned, as in a spreadsheet. */
  function numericColumn(rows, column) {
    var filled = rows
      .map(function (row) { return Array.isArray(row) ? row[column] : null; })
      .filter(function (cell) { return cell !== null && cell !== undefined && String(cell) !== ""; });
    return filled.length > 0 && filled.every(function (cell) { return /^-?\d+(\.\d+)?$/.test(String(cell)); });
  }

  var REASONS = [
    ["wrong", "Wrong"],
    ["outdated", "Outdated"],
    ["not_found", "Didn't find it"],
    ["too_long", "Too long"],
    ["other", "Other"],
  ];
  var NOTE_MAX = 500;

  /** Under a 👎 answer: the reasons to pick from and an optional note; nobody has to send it. */
  function setReasonMenu(bubble, messageId, reason) {
    var old = bubble.el.querySelector(".feedback-why");
    if (old) {
      old.remove();
    }
    var menu = document.createElement("div");
    menu.className = "feedback-why";
    menu.setAttribute("data-testid", "feedback-why");
    if (reason) {
      var label = REASONS.filter(function (spec) { return spec[0] === reason; })[0];
      menu.textContent = t("feedback.noted", "👎 Thanks, noted: {reason}", {
        reason: t("feedback.reason_" + reason, label ? label[1] : reason),
      });
      bubble.el.appendChild(menu);
      return;
    }
    var form = document.createElement("form");
    var question = t("feedback.why_question", "What was wrong with this answer?");
    form.setAttribute("aria-label", question);
    var legend = document.createElement("p");
    legend.className = "feedback-why__question";
    legend.textContent = question;
    var choices = document.createElement("div");
    choices.className = "feedback-why__reasons";
    choices.setAttribute("role", "radiogroup");
    REASONS.forEach(function (spec) {
      var option = document.createElement("label");
      var radio = document.createElement("input");
      radio.type = "radio";
      radio.name = "reason-" + messageId;
      radio.value = spec[0];
      radio.setAttribute("data-testid", "reason-" + spec[0]);
      option.appendChild(radio);
      option.appendChild(document.createTextNode(" " + t("feedback.reason_" + spec[0], spec[1])));
      choices.appendChild(option);
    });
    var note = document.createElement("input");
    note.type = "text";
    note.maxLength = NOTE_MAX;
    note.className = "feedback-why__note";
    note.setAttribute("data-testid", "reason-note");
    note.placeholder = t("feedback.why_note", "Anything to add? (optional)");
    var send = document.createElement("button");
    send.type = "submit";
    send.setAttribute("data-testid", "reason-send");
    send.className = "btn btn--ghost btn--small";
    send.textContent = t("feedback.why_send", "Send");
    form.appendChild(legend);
    form.appendChild(choices);
    form.appendChild(note);
    form.appendChild(send);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var picked = form.querySelector("input[type=radio]:checked");
      if (picked) {
        sendReason(bubble, messageId, picked.value, note.value, send);
      }
    });
    menu.appendChild(form);
    bubble.el.appendChild(menu);
  }

  async function sendReason(bubble, messageId, reason, note, button) {
    button.disabled = true;
    try {
      var response = await post("/api/feedback/reason", { message_id: messageId, reason: reason, note: note });
      if (!response.ok) {
        addErrorBubble(await errorText(response));
        return;
      }
      setReasonMenu(bubble, messageId, reason);
    } catch (error) {
      addErrorBubble(t("feedback_not_sent", "Your feedback could not be sent. Please try again."));
    } finally {
      button.disabled = false;
    }
  }

  function setFeedback(bubble, messageId, current, reason) {
    var old = bubble.el.querySelector(".feedback");
    if (old) {
      old.remove();
    }
    var oldMenu = bubble.el.querySelector(".feedback-why");
    if (oldMenu) {
      oldMenu.remove();
    }
    if (!messageId) {
      return;
    }
    var group = document.createElement("div");
    group.className = "feedback";
    group.setAttribute("data-testid", "feedback");
    group.setAttribute("role", "group");
    group.setAttribute("aria-label", t("was_it_helpful", "Was this answer helpful?"));
    [
      ["up", t("helpful", "Helpful answer")],
      ["down", t("unhelpful", "Unhelpful answer")],
    ].forEach(function (spec) {
      var button = document.createElement("button");
      button.type = "button";
      button.setAttribute("data-testid", "feedback-" + spec[0]);
      button.setAttribute("data-value", spec[0]);
      button.setAttribute("aria-label", spec[1]);
      button.setAttribute("aria-pressed", String(current === spec[0]));
      button.title = spec[1];
      button.appendChild(icon(spec[0]));
      button.addEventListener("click", function () {
        sendFeedback(bubble, group, messageId, spec[0]);
      });
      group.appendChild(button);
    });
    bubble.el.appendChild(group);
    if (current === "down") {
      setReasonMenu(bubble, messageId, reason || null);
    }
  }

  /** The status line with its typing dots (text may be empty: just the dots); null hides it. */
  function showStatus(text) {
    els.statusText.textContent = text || "";
    els.status.hidden = text === null;
    if (text !== null && els.status !== els.messages.lastElementChild) {
      els.messages.appendChild(els.status); // under the newest message, where the answer will appear
    }
    scrollToEnd(false);
  }

  function clearMessages() {
    state.bubbles.clear();
    Array.prototype.slice.call(els.messages.querySelectorAll(".msg")).forEach(function (el) {
      el.remove();
    });
    els.empty.hidden = false;
    showStatus(null);
  }

  // ---- the event stream ----------------------------------------------------------------------------------

  /** An incremental text/event-stream parser (the WHATWG rules: event/data fields, blank line dispatches). */
  function SseParser(onEvent) {
    this.buffer = "";
    this.event = "";
    this.data = [];
    this.onEvent = onEvent;
  }
  SseParser.prototype.push = function (chunk) {
    this.buffer += chunk;
    var match;
    while ((match = /\r\n|\n|\r/.exec(this.buffer))) {
      if (match[0] === "\r" && match.index === this.buffer.length - 1) {
        break; // may be the first half of \r\n
      }
      var line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      this.line(line);
    }
  };
  SseParser.prototype.line = function (line) {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.charAt(0) === ":") {
      return;
    }
    var colon = line.indexOf(":");
    var field = colon < 0 ? line : line.slice(0, colon);
    var value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charAt(0) === " ") {
      value = value.slice(1);
    }
    if (field === "event") {
      this.event = value;
    } else if (field === "data") {
      this.data.push(value);
    }
  };
  SseParser.prototype.dispatch = function () {
    var name = this.event || "message";
    var raw = this.data.join("\n");
    var hadData = this.data.length > 0;
    this.event = "";
    this.data = [];
    if (!hadData && name === "message") {
      return;
    }
    var payload = {};
    if (raw) {
      try {
        payload = JSON.parse(raw);
      } catch (error) {
        payload = { text: raw };
      }
    }
    this.onEvent(name, payload || {});
  };

  function handleEvent(name, data, ctx) {
    var bubble;
    switch (name) {
      case "user":
        if (ctx.userBubble && data.id) {
          ctx.userBubble.el.setAttribute("data-message-id", String(data.id));
        }
        break;
      case "status":
        showStatus(String(data.text || ""));
        break;
      case "message":
      case "edit":
        showStatus(null);
        bubble = assistantBubble(data.ref, ctx);
        setText(bubble, String(data.text || ""));
        setStreaming(bubble, false);
        break;
      case "delta":
        showStatus(null);
        bubble = assistantBubble(data.ref, ctx);
        ctx.streaming.add(bubble);
        setStreaming(bubble, true);
        appendText(bubble, String(data.text || ""));
        break;
      case "final":
        showStatus(null);
        bubble = assistantBubble(data.ref, ctx);
        ctx.streaming.delete(bubble);
        setText(bubble, String(data.text || ""));
        setStreaming(bubble, false);
        if (data.outcome) {
          bubble.el.setAttribute("data-outcome", String(data.outcome));
        }
        if (data.message_id) {
          bubble.el.setAttribute("data-message-id", String(data.message_id));
        }
        setNotice(bubble, data.notice ? String(data.notice) : "");
        setSources(bubble, data.sources, data.sources_heading);
        setFeedback(bubble, data.message_id && data.rateable ? String(data.message_id) : "", null);
        break;
      case "error":
        showStatus(null);
        addErrorBubble(String(data.text || t("something_went_wrong", "Something went wrong.")), ctx);
        break;
      case "accepted":
        ctx.answerId = String(data.answer_id || "");
        break;
      case "done":
        ctx.done = true;
        break;
      default:
        break; // unknown events are ignored, so the server may add some
    }
    if (name !== "user" && name !== "done" && name !== "accepted") {
      scrollToEnd(false);
    }
  }

  async function errorText(response) {
    var fallback = t("request_failed", "The request failed (HTTP {status}).", { status: response.status });
    try {
      var body = await response.json();
      return body && body.error ? String(body.error) : fallback;
    } catch (error) {
      return fallback;
    }
  }

  /** Read one streamed response to its end, applying each event; errors become error bubbles. */
  async function consume(response, ctx) {
    if (!response.ok) {
      addErrorBubble(await errorText(response), ctx);
      return;
    }
    var type = response.headers.get("Content-Type") || "";
    if (type.indexOf("text/event-stream") < 0 || !response.body) {
      try {
        var body = await response.json();
        if (body && body.error) {
          addErrorBubble(String(body.error), ctx);
        }
      } catch (error) {
        addErrorBubble(t("unreadable_answer", "The server sent an answer the page cannot read."), ctx);
      }
      return;
    }
    ctx.streamed = true;
    var parser = new SseParser(function (name, data) {
      handleEvent(name, data, ctx);
    });
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) {
        break;
      }
      parser.push(decoder.decode(chunk.value, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.push("\n\n"); // a last event the server did not terminate
  }

  // Seconds the page waits for another server to finish an answer whose stream broke off: a server's leases
  // last 15 s by default, and the answer is then written again from its start.
  var RECOVER_ATTEMPTS = 120;

  function newContext(userBubble) {
    return {
      userBubble: userBubble,
      created: [],
      streaming: new Set(),
      failed: false,
      done: false,
      streamed: false,
      answerId: "",
    };
  }

  function finishContext(ctx) {
    ctx.streaming.forEach(function (bubble) {
      setStreaming(bubble, false);
    });
    ctx.streaming.clear();
  }

  async function post(path, body) {
    return fetch(path, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body || {}),
    });
  }

  // ---- sending -------------------------------------------------------------------------------------------

  function setBusy(busy) {
    state.busy = busy;
    if (!busy && state.noticeKind === "busy") {
      showNotice("");
    }
    els.send.disabled = busy;
    els.stop.hidden = !busy;
    els.stop.disabled = false;
    els.composer.setAttribute("data-busy", String(busy));
    els.messages.setAttribute("aria-busy", String(busy));
  }

  async function sendMessage(text) {
    var trimmed = text.trim();
    if (state.attachments.length) {
      sendAttached(trimmed);
      return;
    }
    if (state.media) {
      if (state.busy) {
        showNotice(t("busy", "An answer is still being written: wait for it, or press Stop to end it."), "busy");
      } else {
        sendMedia(trimmed);
      }
      return;
    }
    if (trimmed && state.busy) {
      // One answer at a time in a conversation: say so, and keep what was typed for when it is done.
      showNotice(t("busy", "An answer is still being written: wait for it, or press Stop to end it."), "busy");
      return;
    }
    if (!trimmed) {
      return;
    }
    var startsOver = /^\/new(\s|$)/i.test(trimmed);
    els.input.value = "";
    autoGrow();
    var userBubble = addUserBubble(trimmed);
    scrollToEnd(true);
    setBusy(true);
    var ctx = newContext(userBubble);
    await ask(ctx, "/api/messages", {
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ text: trimmed, id: questionId() }),
    });
    if (startsOver && !ctx.failed) {
      // `/new` started a new conversation: keep only its reply on screen.
      Array.prototype.slice.call(els.messages.querySelectorAll(".msg")).forEach(function (el) {
        var keep = ctx.created.some(function (bubble) {
          return bubble.el === el;
        });
        if (!keep) {
          el.remove();
        }
      });
    }
    els.input.focus();
  }

  /** POST a question to `path` and show its answer as it streams; a broken stream waits for the stored answer. */
  async function ask(ctx, path, request) {
    try {
      var response = await fetch(path, Object.assign({ method: "POST", credentials: "same-origin" }, request));
      await consume(response, ctx);
      if (ctx.streamed && !ctx.done && !(await recoverAnswer(ctx))) {
        addErrorBubble(t("connection_lost", "The connection to ragbot was lost. Please try again."), ctx);
      }
    } catch (error) {
      if (!ctx.streamed || !(await recoverAnswer(ctx))) {
        addErrorBubble(t("connection_lost", "The connection to ragbot was lost. Please try again."), ctx);
      }
    } finally {
      finishContext(ctx);
      showStatus(null);
      setBusy(false);
    }
  }

  /** A name for one question: sent again (a proxy retrying the request), it is answered once. */
  function questionId() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map
      .call(bytes, function (byte) {
        return ("0" + byte.toString(16)).slice(-2);
      })
      .join("");
  }

  function pause(ms) {
    return new Promise(function (resolve) {
      setTimeout(resolve, ms);
    });
  }

  /** The answer's stream broke off (its server went away). A question the server had stored (it said so with
   *  `accepted`) is finished by another server: read the conversation until that answer is no longer being
   *  written, and show it in place. A question never stored is not waited for: the person sends it again. */
  async function recoverAnswer(ctx) {
    if (!ctx.answerId) {
      return false;
    }
    showStatus(t("reconnecting", "The connection broke: waiting for the answer…"));
    for (var attempt = 0; attempt < RECOVER_ATTEMPTS; attempt++) {
      await pause(1000);
      var last = await storedMessage(ctx.answerId);
      if (last && last.status !== "streaming") {
        ctx.created.forEach(function (bubble) {
          bubble.el.remove();
        });
        ctx.streaming.clear();
        handleEvent(
          "final",
          {
            ref: "stored-" + last.id,
            text: last.text,
            outcome: last.outcome,
            message_id: last.id,
            rateable: last.rateable,
            sources: last.sources,
          },
          ctx
        );
        return true;
      }
    }
    return false;
  }

  async function storedMessage(id) {
    try {
      var response = await fetch("/api/history", { credentials: "same-origin" });
      if (!response.ok) {
        return null; // the next server may not be up yet
      }
      var list = (await response.json()).messages || [];
      return list.filter(function (entry) {
        return entry.id === id;
      })[0] || null;
    } catch (error) {
      return null;
    }
  }

  async function stopAnswer() {
    els.stop.disabled = true;
    try {
      await post("/api/stop");
    } catch (error) {
      els.stop.disabled = false;
    }
  }

  async function sendFeedback(bubble, group, messageId, value) {
    try {
      var response = await post("/api/feedback", { message_id: messageId, value: value });
      if (!response.ok) {
        addErrorBubble(await errorText(response));
        return;
      }
      Array.prototype.forEach.call(group.querySelectorAll("button"), function (button) {
        button.setAttribute("aria-pressed", String(button.getAttribute("data-value") === value));
      });
      var menu = bubble.el.querySelector(".feedback-why");
      if (value === "down") {
        setReasonMenu(bubble, messageId, null);
      } else if (menu) {
        menu.remove();
      }
    } catch (error) {
      addErrorBubble(t("feedback_not_sent", "Your feedback could not be sent. Please try again."));
    }
  }

  async function newConversation() {
    try {
      var response = await post("/api/new");
      if (!response.ok) {
        addErrorBubble(await errorText(response));
        return;
      }
      clearMessages();
      els.input.focus();
    } catch (error) {
      addErrorBubble(t("connection_lost", "The connection to ragbot was lost. Please try again."));
    }
  }

  function autoGrow() {
    els.input.style.height = "auto";
    els.input.style.height = Math.min(els.input.scrollHeight, 192) + "px";
  }

  els.composer.addEventListener("submit", function (event) {
    event.preventDefault();
    sendMessage(els.input.value);
  });
  els.input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
      event.preventDefault();
      sendMessage(els.input.value);
    }
  });
  els.input.addEventListener("input", autoGrow);
  els.stop.addEventListener("click", stopAnswer);
  els.newConversation.addEventListener("click", newConversation);

  // ---- admin ---------------------------------------------------------------------------------------------

  function setAdmin(admin) {
    state.admin = admin;
    els.upload.hidden = !admin;
    els.attach.hidden = !admin;
    if (!admin && state.attachments.length) {
      state.attachments = [];
      renderAttachments();
    }
    els.adminButton.textContent = admin ? t("admin_signed_in", "Admin ✓") : t("admin", "Admin");
    els.adminButton.classList.toggle("btn--admin-on", admin);
    els.adminButton.setAttribute("aria-label", admin ? t("admin_label_signed_in", "Admin: signed in") : t("admin_login", "Admin login"));
    els.adminButton.setAttribute("data-admin", String(admin));
    els.adminLogin.hidden = admin;
    els.adminLoggedIn.hidden = !admin;
    els.adminSubmit.hidden = admin;
    els.adminLogout.hidden = !admin;
    els.adminToken.required = !admin;
    els.dropzoneHint.textContent = admin ? "" : t("uploading_needs_admin", "Uploading needs an admin login.");
  }

  function openAdmin() {
    els.adminError.hidden = true;
    els.adminToken.value = "";
    if (typeof els.adminDialog.showModal === "function") {
      els.adminDialog.showModal();
    } else {
      els.adminDialog.setAttribute("open", "");
    }
    (state.admin ? els.adminLogout : els.adminToken).focus();
  }

  function closeAdmin() {
    if (els.adminDialog.open) {
      els.adminDialog.close();
    }
  }

  async function login() {
    var token = els.adminToken.value;
    if (!token) {
      return;
    }
    els.adminSubmit.disabled = true;
    try {
      var response = await post("/api/admin/login", { token: token });
      if (response.ok) {
        els.adminToken.value = "";
        setAdmin(true);
        closeAdmin();
        return;
      }
      els.adminError.textContent = await errorText(response);
      els.adminError.hidden = false;
      els.adminToken.select();
    } catch (error) {
      els.adminError.textContent = t("connection_lost", "The connection to ragbot was lost. Please try again.");
      els.adminError.hidden = false;
    } finally {
      els.adminSubmit.disabled = false;
    }
  }

  async function logout() {
    try {
      var response = await post("/api/admin/logout");
      if (!response.ok) {
        els.adminError.textContent = await errorText(response);
        els.adminError.hidden = false;
        return;
      }
      setAdmin(false);
      closeAdmin();
    } catch (error) {
      els.adminError.textContent = t("connection_lost", "The connection to ragbot was lost. Please try again.");
      els.adminError.hidden = false;
    }
  }

  els.adminButton.addEventListener("click", openAdmin);
  els.adminCancel.addEventListener("click", closeAdmin);
  els.adminLogout.addEventListener("click", logout);
  els.adminForm.addEventListener("submit", function (event) {
    event.preventDefault();
    login();
  });

  // ---- uploads -------------------------------------------------------------------------------------------

  /** Send files with the command typed beside them ("" for /ingest): the jobs' progress streams back. */
  async function upload(fileList, typed) {
    var files = Array.prototype.slice.call(fileList || []);
    if (files.length === 0) {
      return;
    }
    var names = files
      .map(function (file) {
        return file.name;
      })
      .join(", ");
    var userBubble = addUserBubble(typed ? typed + " · " + names : names);
    userBubble.el.setAttribute("data-kind", "upload");
    userBubble.body.prepend(icon("file"), " ");
    scrollToEnd(true);
    var ctx = newContext(userBubble);
    // The server's limit is per file, in MB of 1,000,000 bytes; checking here saves sending a file it refuses.
    var tooLarge = files.filter(function (file) {
      return state.uploadLimitMb && file.size > state.uploadLimitMb * 1000000;
    });
    if (tooLarge.length) {
      addErrorBubble(
        tooLarge[0].name + " is over the " + state.uploadLimitMb + " MB limit for files. An admin of the server " +
          "can raise the limit; until then, split it into smaller files.",
        ctx
      );
      return;
    }
    var form = new FormData();
    if (typed) {
      form.append("text", typed);
    }
    files.forEach(function (file) {
      form.append("file", file, file.name);
    });
    try {
      var response = await fetch("/api/upload", {
        method: "POST",
        credentials: "same-origin",
        // A custom header no other origin may send without a preflight: ragbot's CSRF check for uploads.
        headers: { Accept: "text/event-stream", "X-Ragbot-Request": "1" },
        body: form,
      });
      if (response.status === 403 && state.admin) {
        setAdmin(false); // the admin session ended on the server
      }
      await consume(response, ctx);
    } catch (error) {
      addErrorBubble(t("upload_interrupted", "The upload was interrupted. Please try again."), ctx);
    } finally {
      finishContext(ctx);
      showStatus(null);
    }
  }

  // ---- files attached to a command --------------------------------------------------------------------

  /** The one-line notice above the composer ("" hides it); `kind` says what ends it. */
  function showNotice(text, kind) {
    els.notice.textContent = text;
    els.notice.hidden = !text;
    state.noticeKind = text ? kind || "" : "";
  }

  function renderAttachments() {
    els.attachments.replaceChildren();
    state.attachments.forEach(function (file, index) {
      var li = document.createElement("li");
      li.className = "attachment";
      li.setAttribute("data-testid", "attachment");
      li.appendChild(icon("file"));
      var name = document.createElement("span");
      name.className = "attachment__name";
      name.setAttribute("data-testid", "attachment-name");
      name.textContent = file.name;
      name.title = file.name;
      li.appendChild(name);
      var remove = document.createElement("button");
      remove.type = "button";
      remove.textContent = "×";
      remove.setAttribute("data-testid", "attachment-remove");
      remove.setAttribute("aria-label", t("remove_file", "Remove {name}", { name: file.name }));
      remove.addEventListener("click", function () {
        state.attachments.splice(index, 1);
        renderAttachments();
        els.input.focus();
      });
      li.appendChild(remove);
      els.attachments.appendChild(li);
    });
    var attached = state.attachments.length > 0;
    els.attachments.hidden = !attached;
    els.input.placeholder = attached
      ? t("attached_placeholder", "Type /faq import or /ingest (or nothing) and press Enter…")
      : t("ask_placeholder", "Ask a question…");
    if (!attached && state.noticeKind === "files") {
      showNotice("");
    }
  }

  function attach(fileList) {
    Array.prototype.forEach.call(fileList || [], function (file) {
      state.attachments.push(file);
    });
    renderAttachments();
    els.input.focus();
  }

  /** Send the attached files with the command typed ("" is /ingest); other text is not a command for files. */
  function sendAttached(typed) {
    if (typed && !FILE_COMMAND.test(typed)) {
      showNotice(
        t("attached_files", "Attached files go with /faq import or /ingest: type one of them, or nothing, and press Enter."),
        "files"
      );
      return;
    }
    var files = state.attachments.slice();
    state.attachments = [];
    renderAttachments();
    els.input.value = "";
    autoGrow();
    upload(files, typed);
  }

  els.attach.addEventListener("click", function () {
    els.attachInput.click();
  });
  els.attachInput.addEventListener("change", function () {
    attach(els.attachInput.files);
    els.attachInput.value = "";
  });

  els.uploadInput.addEventListener("change", function () {
    var files = els.uploadInput.files;
    upload(files).finally(function () {
      els.uploadInput.value = "";
    });
  });

  function carriesFiles(event) {
    var types = event.dataTransfer && event.dataTransfer.types;
    return !!types && Array.prototype.indexOf.call(types, "Files") > -1;
  }

  window.addEventListener("dragenter", function (event) {
    if (!carriesFiles(event)) {
      return;
    }
    event.preventDefault();
    state.dragDepth += 1;
    els.dropzone.hidden = false;
  });
  window.addEventListener("dragover", function (event) {
    if (!carriesFiles(event)) {
      return;
    }
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
  });
  window.addEventListener("dragleave", function (event) {
    if (!carriesFiles(event)) {
      return;
    }
    state.dragDepth = Math.max(0, state.dragDepth - 1);
    if (state.dragDepth === 0) {
      els.dropzone.hidden = true;
    }
  });
  window.addEventListener("drop", function (event) {
    if (!carriesFiles(event)) {
      return;
    }
    event.preventDefault(); // never let the browser navigate to the dropped file
    state.dragDepth = 0;
    els.dropzone.hidden = true;
    upload(event.dataTransfer.files);
  });

  // ---- a question with a pasted image or a recording ---------------------------------------------------

  /** A length of time as a clock shows it: 0:05, 2:30. */
  function clockTime(seconds) {
    var whole = Math.max(0, Math.round(seconds || 0));
    return Math.floor(whole / 60) + ":" + String(whole % 60).padStart(2, "0");
  }

  /** What goes with the next question: one image or one recording (null: none), previewed above the composer. */
  function setMedia(media) {
    state.media = media;
    els.mediaPreview.replaceChildren();
    els.mediaPreview.hidden = !media;
    if (!media) {
      return;
    }
    els.mediaPreview.appendChild(mediaLabel(media, "media-preview-item"));
    var remove = document.createElement("button");
    remove.type = "button";
    remove.textContent = "×";
    remove.setAttribute("data-testid", "media-remove");
    remove.setAttribute("aria-label", t("remove_media", "Remove the image or recording"));
    remove.addEventListener("click", function () {
      setMedia(null);
      els.input.focus();
    });
    els.mediaPreview.appendChild(remove);
  }

  /** The image itself (a data: URL: the page's policy loads images from nowhere else), or the recording's length. */
  function mediaLabel(media, testId) {
    var el;
    if (media.kind === "image") {
      el = document.createElement("img");
      el.src = media.preview;
      el.alt = t("pasted_image", "Image");
      el.className = "msg__media";
    } else {
      el = document.createElement("span");
      el.textContent = "🎙 " + t("voice_message", "Voice message ({time})", { time: clockTime(media.seconds) });
    }
    el.setAttribute("data-testid", testId);
    return el;
  }

  function dataUrl(blob) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () {
        resolve(String(reader.result));
      };
      reader.onerror = function () {
        reject(reader.error);
      };
      reader.readAsDataURL(blob);
    });
  }

  els.input.addEventListener("paste", function (event) {
    var files = event.clipboardData ? Array.prototype.slice.call(event.clipboardData.files || []) : [];
    var image = files.find(function (file) {
      return /^image\//.test(file.type);
    });
    if (!image) {
      return; // text pastes as text
    }
    event.preventDefault();
    if (state.imageLimitMb && image.size > state.imageLimitMb * 1000000) {
      showNotice(t("image_too_large", "That image is over the {limit} MB limit for a question.", {
        limit: state.imageLimitMb,
      }), "media");
      return;
    }
    dataUrl(image).then(function (preview) {
      setMedia({ kind: "image", blob: image, name: image.name || "pasted.png", preview: preview, seconds: null });
      els.input.focus();
    });
  });

  function setRecording(recording) {
    els.record.setAttribute("aria-pressed", String(recording));
    var label = recording ? t("stop_recording", "Stop recording and keep it") : t("record_label", "Record a voice question");
    els.record.setAttribute("aria-label", label);
    els.record.title = label;
    if (!recording && state.noticeKind === "recording") {
      showNotice("");
    }
  }

  async function startRecording() {
    var stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      showNotice(t("microphone_denied", "The microphone could not be used: allow it in the browser, or type your question."), "media");
      return;
    }
    var type = MediaRecorder.isTypeSupported("audio/webm;codecs=opus") ? "audio/webm;codecs=opus" : "";
    var rec = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    var chunks = [];
    var recording = { rec: rec, stream: stream, started: performance.now(), ticker: 0, limit: 0 };
    state.recorder = recording;
    rec.addEventListener("dataavailable", function (event) {
      if (event.data && event.data.size) {
        chunks.push(event.data);
      }
    });
    rec.addEventListener("stop", function () {
      var seconds = (performance.now() - recording.started) / 1000;
      clearInterval(recording.ticker);
      clearTimeout(recording.limit);
      stream.getTracks().forEach(function (track) {
        track.stop();
      });
      state.recorder = null;
      setRecording(false);
      var blob = new Blob(chunks, { type: (rec.mimeType || "audio/webm").split(";")[0] });
      setMedia({ kind: "audio", blob: blob, name: "recording.webm", preview: "", seconds: seconds });
      els.input.focus();
    });
    rec.start(250);
    setRecording(true);
    var tick = function () {
      var time = clockTime((performance.now() - recording.started) / 1000);
      showNotice(t("recording", "Recording… {time}", { time: time }), "recording");
    };
    tick();
    recording.ticker = setInterval(tick, 500);
    if (state.audioSeconds) {
      // The server listens to so much and no more: the recording ends there rather than be refused whole.
      recording.limit = setTimeout(stopRecording, state.audioSeconds * 1000);
    }
  }

  function stopRecording() {
    if (state.recorder && state.recorder.rec.state !== "inactive") {
      state.recorder.rec.stop();
    }
  }

  els.record.addEventListener("click", function () {
    if (state.recorder) {
      stopRecording();
    } else {
      startRecording();
    }
  });

  /** Send the question with its image or recording: what ragbot understood comes back first, then the answer. */
  async function sendMedia(typed) {
    var media = state.media;
    setMedia(null);
    els.input.value = "";
    autoGrow();
    var userBubble = addUserBubble(typed);
    userBubble.body.prepend(mediaLabel(media, "message-media"));
    scrollToEnd(true);
    setBusy(true);
    var ctx = newContext(userBubble);
    var form = new FormData();
    form.append("text", typed);
    form.append("id", questionId());
    if (media.seconds !== null) {
      form.append("seconds", String(media.seconds));
    }
    form.append("file", media.blob, media.name);
    await ask(ctx, "/api/media", {
      // A custom header no other origin may send without a preflight: ragbot's CSRF check for multipart posts.
      headers: { Accept: "text/event-stream", "X-Ragbot-Request": "1" },
      body: form,
    });
    els.input.focus();
  }

  // ---- start-up ------------------------------------------------------------------------------------------

  /** The most asked questions, offered on the empty page: one click asks it. */
  function renderSuggestions(questions) {
    var list = $("suggestions-list");
    list.replaceChildren();
    (questions || []).forEach(function (question) {
      var li = document.createElement("li");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "suggestion";
      button.setAttribute("data-testid", "suggestion");
      button.textContent = String(question);
      button.addEventListener("click", function () {
        sendMessage(String(question));
      });
      li.appendChild(button);
      list.appendChild(li);
    });
    $("suggestions").hidden = list.children.length === 0;
  }

  function renderKnowledgeBases(names) {
    els.kbs.replaceChildren();
    (names || []).forEach(function (name) {
      var li = document.createElement("li");
      li.textContent = String(name);
      li.title = t("knowledge_base", "Knowledge base {name}", { name: String(name) });
      els.kbs.appendChild(li);
    });
  }

  function renderHistoryMessage(message) {
    if (message.role === "user") {
      var user = addUserBubble(String(message.text || ""));
      user.el.setAttribute("data-message-id", String(message.id || ""));
      return;
    }
    var bubble = makeBubble("assistant");
    var id = String(message.id || "");
    bubble.el.setAttribute("data-ref", id);
    bubble.el.setAttribute("data-message-id", id);
    setText(bubble, String(message.text || ""));
    bubble.el.setAttribute("data-status", String(message.status || "done"));
    if (message.outcome) {
      bubble.el.setAttribute("data-outcome", String(message.outcome));
    }
    if (message.status === "failed") {
      bubble.el.classList.add("msg--error");
    } else if (message.status === "streaming") {
      setNotice(bubble, t("still_writing", "This answer was still being written when the page loaded."));
    }
    setSources(bubble, message.sources);
    if (id && message.status === "done" && message.outcome && message.rateable) {
      setFeedback(bubble, id, message.feedback || null, message.reason || null);
    }
  }

  async function start() {
    try {
      var response = await fetch("/api/session", { credentials: "same-origin" });
      if (!response.ok) {
        addErrorBubble(await errorText(response));
      } else {
        var session = await response.json();
        applyTexts(session.texts);
        if (session.language) {
          document.documentElement.setAttribute("lang", String(session.language));
        }
        els.input.placeholder = t("ask_placeholder", "Ask a question…");
        setAdmin(!!session.admin);
        // A ragbot without an admin token has no admin to log in as.
        els.adminButton.hidden = session.admin_enabled === false;
        renderKnowledgeBases(session.knowledge_bases);
        renderSuggestions(session.suggestions);
        state.uploadLimitMb = Number(session.upload_limit_mb) || 0;
        state.audioSeconds = Number(session.audio_seconds) || 0;
        state.imageLimitMb = Number(session.image_limit_mb) || 0;
      }
      var history = await fetch("/api/history", { credentials: "same-origin" });
      if (!history.ok) {
        addErrorBubble(await errorText(history));
      } else {
        var body = await history.json();
        (body.messages || []).forEach(renderHistoryMessage);
        scrollToEnd(true);
      }
    } catch (error) {
      addErrorBubble(t("unreachable", "ragbot could not be reached. Reload the page to try again."));
    }
    document.body.setAttribute("data-ready", "true");
    els.input.focus();
  }

  setAdmin(false);
  setBusy(false);
  start();
})();
