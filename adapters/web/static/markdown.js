/* ragbot web chat: a small, safe Markdown renderer.
 *
 * Text from the server (answers, documents, model output) is never parsed as HTML: every node is built with
 * createElement and every piece of text goes in through textContent or createTextNode. Links are made only
 * for http:, https: and mailto: targets; any other link (javascript:, data:, relative) stays literal text.
 *
 * Supported: paragraphs (single newlines kept as line breaks), # headings, fenced code blocks, bullet and
 * numbered lists (nested by indentation), > quotes, --- rules, **bold**, __bold__, *italic*, _italic_,
 * ~~strike~~, `code`, [text](url), <url> and bare http(s) URLs. Citations like [1] stay as text.
 */
(function (global) {
  "use strict";

  var SAFE_SCHEME = /^(https?:|mailto:)/i;
  var FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)\s*$/;
  var HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$/;
  var RULE = /^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$/;
  var ITEM = /^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
  var QUOTE = /^ {0,3}>[ \t]?(.*)$/;
  var BARE_URL = /^https?:\/\/[^\s<>"]+/i;
  var ESCAPABLE = "\\`*_{}[]()#+-.!~<>|";

  /** The href for a link target, or null when it must not become a link. */
  function safeHref(target) {
    var url = target.trim();
    if (!SAFE_SCHEME.test(url) || /[\s\u0000-\u001f\u007f]/.test(url)) {
      return null;
    }
    try {
      var parsed = new URL(url);
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:" && parsed.protocol !== "mailto:") {
        return null;
      }
    } catch (error) {
      return null;
    }
    return url;
  }

  function link(href, doc) {
    var a = doc.createElement("a");
    a.href = href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    return a;
  }

  function indentWidth(space) {
    return space.replace(/\t/g, "    ").length;
  }

  // ---- inline ------------------------------------------------------------------------------------------

  function isWordChar(ch) {
    return !!ch && /[\p{L}\p{N}]/u.test(ch);
  }

  function isSpace(ch) {
    return !ch || /\s/.test(ch);
  }

  /** Index of the closing delimiter for an emphasis run opened at `start`, or -1. */
  function findCloser(text, start, delim) {
    var from = start + delim.length;
    var ch = delim.charAt(0);
    for (var i = from; i <= text.length - delim.length; i++) {
      if (text.charAt(i) === "\\") {
        i++;
        continue;
      }
      if (text.charAt(i) === "`") {
        var run = /^`+/.exec(text.slice(i))[0];
        var end = text.indexOf(run, i + run.length);
        if (end > -1) {
          i = end + run.length - 1;
          continue;
        }
      }
      if (text.substr(i, delim.length) !== delim || i === from) {
        continue;
      }
      if (isSpace(text.charAt(i - 1))) {
        continue;
      }
      var after = text.charAt(i + delim.length);
      if (delim.length === 1 && (after === ch || text.charAt(i - 1) === ch)) {
        continue; // part of a longer run (e.g. the ** of a bold inside an italic)
      }
      if (ch === "_" && isWordChar(after)) {
        continue; // snake_case_words are not emphasis
      }
      return i;
    }
    return -1;
  }

  /** Where `[text](url)` opened at `start` ends: {label, target, end} or null. */
  function parseLink(text, start) {
    var depth = 0;
    var i = start;
    for (; i < text.length; i++) {
      var c = text.charAt(i);
      if (c === "\\") {
        i++;
      } else if (c === "[") {
        depth++;
      } else if (c === "]") {
        depth--;
        if (depth === 0) {
          break;
        }
      }
    }
    if (depth !== 0 || text.charAt(i + 1) !== "(") {
      return null;
    }
    var labelEnd = i;
    var parens = 0;
    for (var j = i + 2; j < text.length; j++) {
      var d = text.charAt(j);
      if (d === "(") {
        parens++;
      } else if (d === ")") {
        if (parens === 0) {
          var target = text.slice(i + 2, j).trim();
          var titled = /^(\S+)\s+["'].*["']$/.exec(target);
          return { label: text.slice(start + 1, labelEnd), target: titled ? titled[1] : target, end: j + 1 };
        }
        parens--;
      } else if (d === "\n") {
        return null;
      }
    }
    return null;
  }

  function trimUrlTail(url) {
    // Sentence punctuation after a bare URL is not part of it; keep a ")" only when it closes a "(" inside.
    while (/[.,;:!?'")\]]$/.test(url)) {
      if (url.endsWith(")") && (url.match(/\(/g) || []).length >= (url.match(/\)/g) || []).length) {
        break;
      }
      url = url.slice(0, -1);
    }
    return url;
  }

  /** Append the inline content of `text` to `parent`. */
  function renderInline(text, parent, inLink) {
    var doc = parent.ownerDocument;
    var buffer = "";
    function flush() {
      if (buffer) {
        parent.appendChild(doc.createTextNode(buffer));
        buffer = "";
      }
    }
    function wrap(tag, inner) {
      flush();
      var el = doc.createElement(tag);
      renderInline(inner, el, inLink);
      parent.appendChild(el);
    }
    var i = 0;
    while (i < text.length) {
      var c = text.charAt(i);
      var rest = text.slice(i);

      if (c === "\\" && i + 1 < text.length && ESCAPABLE.indexOf(text.charAt(i + 1)) > -1) {
        buffer += text.charAt(i + 1);
        i += 2;
        continue;
      }
      if (c === "\n") {
        flush();
        parent.appendChild(doc.createElement("br"));
        i += 1;
        continue;
      }
      if (c === "`") {
        var run = /^`+/.exec(rest)[0];
        var close = text.indexOf(run, i + run.length);
        while (close > -1 && text.charAt(close + run.length) === "`") {
          close = text.indexOf(run, close + run.length + 1);
        }
        if (close > -1) {
          flush();
          var code = doc.createElement("code");
          var inner = text.slice(i + run.length, close);
          if (/^ .* $/.test(inner)) {
            inner = inner.slice(1, -1);
          }
          code.textContent = inner.replace(/\n/g, " ");
          parent.appendChild(code);
          i = close + run.length;
          continue;
        }
        buffer += run;
        i += run.length;
        continue;
      }
      if (c === "[" && !inLink) {
        var parsed = parseLink(text, i);
        if (parsed) {
          var href = safeHref(parsed.target);
          if (href !== null) {
            flush();
            var a = link(href, doc);
            renderInline(parsed.label, a, true);
            parent.appendChild(a);
          } else {
            buffer += text.slice(i, parsed.end); // an unsafe link is shown exactly as written
          }
          i = parsed.end;
          continue;
        }
      }
      if (c === "<" && !inLink) {
        var auto = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(rest);
        if (auto && safeHref(auto[1]) !== null) {
          flush();
          var autoLink = link(auto[1], doc);
          autoLink.textContent = auto[1];
          parent.appendChild(autoLink);
          i += auto[0].length;
          continue;
        }
      }
      if ((c === "h" || c === "H") && !inLink && !isWordChar(text.charAt(i - 1))) {
        var bare = BARE_URL.exec(rest);
        if (bare) {
          var url = trimUrlTail(bare[0]);
          if (safeHref(url) !== null && url.length > 8) {
            flush();
            var bareLink = link(url, doc);
            bareLink.textContent = url;
            parent.appendChild(bareLink);
            i += url.length;
            continue;
          }
        }
      }
      if (c === "*" || c === "_" || c === "~") {
        var double = text.charAt(i + 1) === c;
        var delim = double ? c + c : c;
        var next = text.charAt(i + delim.length);
        var opens = !isSpace(next) && !(c === "_" && isWordChar(text.charAt(i - 1))) && (c !== "~" || double);
        if (opens) {
          var end = findCloser(text, i, delim);
          if (end > -1) {
            var tag = c === "~" ? "del" : double ? "strong" : "em";
            wrap(tag, text.slice(i + delim.length, end));
            i = end + delim.length;
            continue;
          }
        }
        buffer += delim;
        i += delim.length;
        continue;
      }
      buffer += c;
      i += 1;
    }
    flush();
  }

  // ---- blocks ------------------------------------------------------------------------------------------

  function isBlockStart(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || ITEM.test(line) || QUOTE.test(line);
  }

  function renderCode(lines, i, parent) {
    var doc = parent.ownerDocument;
    var open = FENCE.exec(lines[i]);
    var fence = open[1];
    var body = [];
    var j = i + 1;
    for (; j < lines.length; j++) {
      var closing = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[j]);
      if (closing && closing[1].charAt(0) === fence.charAt(0) && closing[1].length >= fence.length) {
        break;
      }
      body.push(lines[j]);
    }
    var pre = doc.createElement("pre");
    var code = doc.createElement("code");
    if (open[2]) {
      code.setAttribute("data-language", open[2]);
    }
    code.textContent = body.join("\n");
    pre.appendChild(code);
    parent.appendChild(pre);
    return j + 1; // an unclosed fence (an answer still streaming) runs to the end
  }

  function renderList(lines, i, parent) {
    var doc = parent.ownerDocument;
    var stack = []; // {list, indent, ordered, item}
    var j = i;
    var blank = false;
    for (; j < lines.length; j++) {
      var line = lines[j];
      var item = ITEM.exec(line);
      if (!line.trim()) {
        blank = true;
        continue;
      }
      if (item && RULE.test(line)) {
        break;
      }
      if (item) {
        var indent = indentWidth(item[1]);
        var ordered = /\d/.test(item[2]);
        while (stack.length && indent < stack[stack.length - 1].indent) {
          stack.pop();
        }
        var top = stack[stack.length - 1];
        if (top && indent >= top.indent + 2 && top.item) {
          top = null; // deeper than the current item: a nested list inside it
        } else if (top && top.ordered !== ordered) {
          if (stack.length === 1) {
            break; // a different kind of list starts a new block
          }
          stack.pop();
          top = null;
        }
        if (!top) {
          var list = doc.createElement(ordered ? "ol" : "ul");
          if (ordered) {
            var start = parseInt(item[2], 10);
            if (start !== 1) {
              list.start = start;
            }
          }
          var holder = stack.length ? stack[stack.length - 1].item : parent;
          holder.appendChild(list);
          top = { list: list, indent: indent, ordered: ordered, item: null };
          stack.push(top);
        }
        var li = doc.createElement("li");
        renderInline(item[3], li, false);
        top.list.appendChild(li);
        top.item = li;
        blank = false;
        continue;
      }
      // A non-item line: an indented continuation of the last item, else the list is over.
      if ((!blank || /^[ \t]{2,}/.test(line)) && !isBlockStart(line)) {
        var last = stack[stack.length - 1].item;
        last.appendChild(doc.createElement("br"));
        renderInline(line.trim(), last, false);
        blank = false;
        continue;
      }
      break;
    }
    return j;
  }

  function renderBlocks(text, parent) {
    var doc = parent.ownerDocument;
    var lines = text.replace(/\r\n?/g, "\n").split("\n");
    var i = 0;
    while (i < lines.length) {
      var line = lines[i];
      if (!line.trim()) {
        i++;
        continue;
      }
      if (FENCE.test(line)) {
        i = renderCode(lines, i, parent);
        continue;
      }
      var heading = HEADING.exec(line);
      if (heading) {
        // The page's own headings use h1-h2; an answer's start at h3.
        var h = doc.createElement("h" + Math.min(6, heading[1].length + 2));
        renderInline(heading[2], h, false);
        parent.appendChild(h);
        i++;
        continue;
      }
      if (RULE.test(line)) {
        parent.appendChild(doc.createElement("hr"));
        i++;
        continue;
      }
      if (ITEM.test(line)) {
        i = renderList(lines, i, parent);
        continue;
      }
      if (QUOTE.test(line)) {
        var quoted = [];
        while (i < lines.length && QUOTE.test(lines[i])) {
          quoted.push(QUOTE.exec(lines[i])[1]);
          i++;
        }
        var blockquote = doc.createElement("blockquote");
        renderBlocks(quoted.join("\n"), blockquote);
        parent.appendChild(blockquote);
        continue;
      }
      var paragraph = [line];
      i++;
      while (i < lines.length && lines[i].trim() && !isBlockStart(lines[i])) {
        paragraph.push(lines[i]);
        i++;
      }
      var p = doc.createElement("p");
      renderInline(paragraph.join("\n").trim(), p, false);
      parent.appendChild(p);
    }
  }

  /** Replace the children of `element` with the rendering of `text`. */
  function renderInto(element, text) {
    var fragment = element.ownerDocument.createDocumentFragment();
    renderBlocks(String(text || ""), fragment);
    element.replaceChildren(fragment);
  }

  global.RagbotMarkdown = { renderInto: renderInto, safeHref: safeHref };
})(window);
