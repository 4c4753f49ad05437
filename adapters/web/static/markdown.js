/* ragbot web chat: a small, safe Markdown renderer.
 *
 * Text from the server (answers, documents, model output) is never parsed as HTML: every node is built with
 * createElement and every piece of text goes in through textContent or createTextNode. Links are made only
 * for http:, https: and mailto: targets; any other link (javascript:, data:, relative) stays literal text.
 *
 * Supported: paragraphs (single newlines kept as line breaks), # headings, fenced code blocks, bullet and
 * numbered lists (nested by indentation), > quotes, --- rules, GitHub-flavoured pipe tables (also in quotes and
 * list items), **bold**, __bold__, *italic*, _italic_, ~~strike~~, `code`, [text](url), <url> and bare http(s)
 * URLs. Citations like [1] stay as text.
 *
 * Linear time in the text, whatever it holds (an answer is re-rendered as it streams, so a long one must not
 * freeze the tab): each paragraph is read once up front to pair its code spans, brackets and parentheses;
 * an emphasis opener then looks up its closer from a cursor that only moves forward, and every block pattern
 * is anchored to one line and cannot backtrack over it more than once.
 */
(function (global) {
  "use strict";

  var SAFE_SCHEME = /^(https?:|mailto:)/i;
  // A line that fails to match a block pattern must not be read once per character: HEADING and ITEM take
  // their spaces only when no space follows, and a heading's closing #s are cut off by headingText (its
  // `(.*?)[ \t#]*$` took 2 s on a 64 KB line of "# # # ... x", and 7.7 s on "# ", 4,000 spaces and a U+2028).
  var FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)\s*$/;
  var FENCE_CLOSE = /^ {0,3}(`{3,}|~{3,})\s*$/;
  var HEADING = /^ {0,3}(#{1,6})[ \t]+(?![ \t])(.*)$/;
  var RULE = /^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$/;
  var ITEM = /^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(?![ \t])(.*)$/;
  var QUOTE = /^ {0,3}>[ \t]?(.*)$/;
  var URL_START = /https?:\/\//iy;
  var AUTOLINK = /<((?:https?:\/\/|mailto:)[^\s<>]+)>/iy;
  var ESCAPABLE = "\\`*_{}[]()#+-.!~<>|";
  // The characters that may start an inline construct (by char code); every other character is plain text.
  var SPECIAL = new Uint8Array(128);
  "\\\n`[<hH*_~".split("").forEach(function (ch) {
    SPECIAL[ch.charCodeAt(0)] = 1;
  });
  var URL_TAIL = ".,;:!?'\")]";
  // Quotes nest this deep at most; a deeper ">" is text. Each level re-reads its lines, so the cap keeps the
  // work linear, and no answer needs more (markdown-it's commonmark preset allows 20 nested blocks of any kind).
  var MAX_QUOTE_DEPTH = 8;
  // A run of URL characters is tried as a bare URL this many times at most: text holding "http://" many times
  // in one run and no URL would otherwise be read to the run's end once per "http://".
  var URL_TRIES = 4;
  // A table's delimiter row holds only these characters, and each of its cells is dashes between optional colons.
  var DELIMITER_ROW = /^[ \t]*[|:-][ \t|:-]*$/;
  var DELIMITER_CELL = /^(:?)-+(:?)$/;

  // Kinds of position in a paragraph, from its first reading.
  var TOKEN = 0; // read as itself
  var ESCAPED = 1; // the character after an escaping backslash
  var CODE = 2; // part of a code span, its backticks included

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

  function isWordChar(ch) {
    return !!ch && /[\p{L}\p{N}]/u.test(ch);
  }

  function isSpace(ch) {
    return !ch || /\s/.test(ch);
  }

  function trimUrlTail(url) {
    // Sentence punctuation after a bare URL is not part of it; keep a ")" only when it closes a "(" inside.
    var open = 0;
    var close = 0;
    for (var k = 0; k < url.length; k++) {
      var c = url.charAt(k);
      if (c === "(") {
        open++;
      } else if (c === ")") {
        close++;
      }
    }
    var end = url.length;
    while (end > 0 && URL_TAIL.indexOf(url.charAt(end - 1)) > -1) {
      if (url.charAt(end - 1) === ")") {
        if (open >= close) {
          break;
        }
        close--;
      }
      end--;
    }
    return url.slice(0, end);
  }

  // ---- inline: the first reading -----------------------------------------------------------------------

  /** Start positions of the maximal backtick runs of `text`, by run length, each list with a forward cursor. */
  function backtickRuns(text) {
    var runs = new Map();
    var i = text.indexOf("`");
    while (i > -1) {
      var end = i;
      while (text.charAt(end) === "`") {
        end++;
      }
      var entry = runs.get(end - i);
      if (!entry) {
        entry = { starts: [], next: 0 };
        runs.set(end - i, entry);
      }
      entry.starts.push(i);
      i = text.indexOf("`", end);
    }
    return runs;
  }

  /** The start of the first run of exactly `length` backticks at or after `from` (asked with growing `from`). */
  function nextRun(runs, length, from) {
    var entry = runs.get(length);
    if (!entry) {
      return -1;
    }
    while (entry.next < entry.starts.length && entry.starts[entry.next] < from) {
      entry.next++;
    }
    return entry.next < entry.starts.length ? entry.starts[entry.next] : -1;
  }

  /**
   * One left-to-right reading of a paragraph: which characters are escaped or code, where each code span,
   * [label] and (target) closes. Code spans bind tighter than brackets (as in CommonMark): a "]" or ")"
   * inside backticks closes nothing. A code span closes at the next run of exactly as many backticks.
   */
  function Paragraph(text, doc) {
    var n = text.length;
    this.text = text;
    this.doc = doc;
    this.kind = new Uint8Array(n);
    this.code = new Map(); // opening backtick position -> closing run position, or -1
    this.brackets = new Map(); // "[" position -> its "]"
    this.parens = new Map(); // "(" position -> its ")" on the same line
    this.closers = new Map(); // emphasis delimiter -> the forward cursor of nextCloser
    this.urlRunFrom = -1; // the run of URL characters last read (see urlRun)
    this.urlRunEnd = -1;
    this.failedRun = -1; // the run where bare URLs failed `failures` times (see bareUrl)
    this.failures = 0;
    var runs = backtickRuns(text);
    var open = [];
    var i = 0;
    while (i < n) {
      var c = text.charAt(i);
      if (c === "\\" && i + 1 < n && ESCAPABLE.indexOf(text.charAt(i + 1)) > -1) {
        this.kind[i + 1] = ESCAPED;
        i += 2;
      } else if (c === "`") {
        var end = i;
        while (end < n && text.charAt(end) === "`") {
          end++;
        }
        var close = nextRun(runs, end - i, end);
        this.code.set(i, close);
        if (close > -1) {
          this.kind.fill(CODE, i, close + end - i);
          i = close + end - i;
        } else {
          i = end;
        }
      } else {
        if (c === "[") {
          open.push(i);
        } else if (c === "]" && open.length) {
          this.brackets.set(open.pop(), i);
        }
        i++;
      }
    }
    this.matchParens();
  }

  /** Pair parentheses outside code spans, line by line (a link target never spans lines). */
  Paragraph.prototype.matchParens = function () {
    var text = this.text;
    var open = [];
    for (var i = 0; i < text.length; i++) {
      var c = text.charAt(i);
      if (c === "\n") {
        open.length = 0;
      } else if (this.kind[i] !== CODE) {
        if (c === "(") {
          open.push(i);
        } else if (c === ")" && open.length) {
          this.parens.set(open.pop(), i);
        }
      }
    }
  };

  /** Whether an emphasis run of `len` × `ch` can close at `j`, given the character after it. */
  Paragraph.prototype.closesAt = function (j, ch, len, after) {
    var text = this.text;
    if (this.kind[j] !== TOKEN || text.charAt(j) !== ch || (len === 2 && text.charAt(j + 1) !== ch)) {
      return false;
    }
    var before = text.charAt(j - 1);
    if (isSpace(before)) {
      return false;
    }
    if (len === 1 && (after === ch || before === ch)) {
      return false; // part of a longer run (e.g. the ** of a bold inside an italic)
    }
    return !(ch === "_" && isWordChar(after)); // snake_case_words are not emphasis
  };

  /**
   * The first position at or after `from` where `len` × `ch` can close, reading to the end of the paragraph.
   * Openers are met left to right, so `from` only grows: each delimiter kind keeps the answer it found last
   * and reads on from there, never reading a character twice.
   */
  Paragraph.prototype.nextCloser = function (ch, len, from) {
    var key = ch + len;
    var cursor = this.closers.get(key);
    if (cursor && from >= cursor.from && (cursor.at === -1 || from <= cursor.at)) {
      return cursor.at;
    }
    var text = this.text;
    var j = text.indexOf(ch, from);
    while (j > -1 && j + len <= text.length) {
      if (this.closesAt(j, ch, len, text.charAt(j + len))) {
        break;
      }
      j = text.indexOf(ch, j + 1);
    }
    if (j + len > text.length) {
      j = -1;
    }
    this.closers.set(key, { from: from, at: j });
    return j;
  };

  /** Where an emphasis run opened just before `from` closes inside [from, to), or -1. */
  Paragraph.prototype.closer = function (ch, len, from, to) {
    var at = this.nextCloser(ch, len, from);
    if (at > -1 && at + len <= to) {
      return at;
    }
    // At the end of the range the next character is the range's own end, which counts as nothing.
    var last = to - len;
    return len === 1 && last >= from && this.closesAt(last, ch, len, "") ? last : -1;
  };

  /**
   * Where the run of URL characters holding `i` ends (exclusive), stopping at a code span. Positions inside one
   * run share its end, so each run is read once.
   */
  Paragraph.prototype.urlRun = function (i) {
    if (i < this.urlRunFrom || i >= this.urlRunEnd) {
      var text = this.text;
      var end = i;
      while (end < text.length && this.kind[end] !== CODE && !/[\s<>"]/.test(text.charAt(end))) {
        end++;
      }
      this.urlRunFrom = i;
      this.urlRunEnd = end;
    }
    return this.urlRunEnd;
  };

  /** The bare http(s) URL starting at `i` (before `to`), or "" when there is none. */
  Paragraph.prototype.bareUrl = function (i, to) {
    URL_START.lastIndex = i;
    if (!URL_START.test(this.text)) {
      return "";
    }
    var runEnd = this.urlRun(i);
    if (runEnd === this.failedRun && this.failures >= URL_TRIES) {
      return "";
    }
    var url = trimUrlTail(this.text.slice(i, Math.min(runEnd, to)));
    if (url.length > 8 && safeHref(url) !== null) {
      return url;
    }
    if (runEnd !== this.failedRun) {
      this.failedRun = runEnd;
      this.failures = 0;
    }
    this.failures++;
    return "";
  };

  // ---- inline: rendering -------------------------------------------------------------------------------

  /** Append the inline content of text[from, to) to `parent` (inLink: inside a link's label). */
  Paragraph.prototype.render = function (from, to, parent, inLink) {
    var text = this.text;
    var doc = this.doc;
    var buffer = "";
    var plain = from; // text[plain, i) is plain text not yet in buffer
    var i = from;
    function at(k) {
      return k >= from && k < to ? text.charAt(k) : "";
    }
    function flush(upTo) {
      buffer += text.slice(plain, upTo);
      if (buffer) {
        parent.appendChild(doc.createTextNode(buffer));
        buffer = "";
      }
    }
    while (i < to) {
      var code = text.charCodeAt(i);
      if (code >= 128 || !SPECIAL[code]) {
        i++;
        continue;
      }
      var c = text.charAt(i);
      if (c === "\\") {
        if (i + 1 < to && ESCAPABLE.indexOf(text.charAt(i + 1)) > -1) {
          buffer += text.slice(plain, i) + text.charAt(i + 1);
          plain = i += 2;
        } else {
          i++;
        }
        continue;
      }
      if (c === "\n") {
        flush(i);
        parent.appendChild(doc.createElement("br"));
        plain = i += 1;
        continue;
      }
      if (c === "`") {
        var run = i;
        while (run < to && text.charAt(run) === "`") {
          run++;
        }
        var width = run - i;
        var close = this.code.has(i) ? this.code.get(i) : -1;
        if (close > -1 && close + width <= to) {
          flush(i);
          var span = doc.createElement("code");
          var inner = text.slice(run, close);
          if (/^ .* $/.test(inner)) {
            inner = inner.slice(1, -1);
          }
          span.textContent = inner.replace(/\n/g, " ");
          parent.appendChild(span);
          plain = i = close + width;
        } else {
          i = run; // no closing run: the backticks are text
        }
        continue;
      }
      if (c === "[" && !inLink) {
        var end = this.linkEnd(i, to);
        if (end > -1) {
          var labelEnd = this.brackets.get(i);
          var target = text.slice(labelEnd + 2, end - 1).trim();
          var titled = /^(\S+)\s+["'].*["']$/.exec(target);
          var href = safeHref(titled ? titled[1] : target);
          if (href !== null) {
            flush(i);
            var a = link(href, doc);
            this.render(i + 1, labelEnd, a, true);
            parent.appendChild(a);
            plain = end;
          } // else: an unsafe link is shown exactly as written
          i = end;
          continue;
        }
      }
      if (c === "<" && !inLink) {
        AUTOLINK.lastIndex = i;
        var auto = AUTOLINK.exec(text);
        var autoEnd = AUTOLINK.lastIndex;
        if (auto && autoEnd <= to && !this.crossesCode(i, autoEnd) && safeHref(auto[1]) !== null) {
          flush(i);
          var autoLink = link(auto[1], doc);
          autoLink.textContent = auto[1];
          parent.appendChild(autoLink);
          plain = i = i + auto[0].length;
          continue;
        }
      }
      if ((c === "h" || c === "H") && !inLink && !isWordChar(at(i - 1))) {
        var url = this.bareUrl(i, to);
        if (url) {
          flush(i);
          var bareLink = link(url, doc);
          bareLink.textContent = url;
          parent.appendChild(bareLink);
          plain = i += url.length;
          continue;
        }
      }
      if (c === "*" || c === "_" || c === "~") {
        var double = at(i + 1) === c;
        var len = double ? 2 : 1;
        var opens = !isSpace(at(i + len)) && !(c === "_" && isWordChar(at(i - 1))) && (c !== "~" || double);
        var closer = opens ? this.closer(c, len, i + len + 1, to) : -1;
        if (closer > -1) {
          flush(i);
          var el = doc.createElement(c === "~" ? "del" : double ? "strong" : "em");
          this.render(i + len, closer, el, inLink);
          parent.appendChild(el);
          plain = i = closer + len;
        } else {
          i += len;
        }
        continue;
      }
      i++;
    }
    flush(to);
  };

  /** Where `[label](target)` opened at `i` ends (exclusive) inside [i, to), or -1 when it is no link. */
  Paragraph.prototype.linkEnd = function (i, to) {
    var labelEnd = this.brackets.has(i) ? this.brackets.get(i) : -1;
    if (labelEnd < 0 || labelEnd + 1 >= to || this.text.charAt(labelEnd + 1) !== "(") {
      return -1;
    }
    var targetEnd = this.parens.has(labelEnd + 1) ? this.parens.get(labelEnd + 1) : -1;
    return targetEnd > -1 && targetEnd < to ? targetEnd + 1 : -1;
  };

  /** Whether text[from, to) holds part of a code span (an autolink does not swallow one). */
  Paragraph.prototype.crossesCode = function (from, to) {
    for (var k = from; k < to; k++) {
      if (this.kind[k] === CODE) {
        return true;
      }
    }
    return false;
  };

  function renderInline(text, parent) {
    new Paragraph(text, parent.ownerDocument).render(0, text.length, parent, false);
  }

  // ---- tables ------------------------------------------------------------------------------------------

  /**
   * The cells of a table row, at most `limit`: split at each pipe without a backslash before it, the outer pipes
   * dropped, every `\|` made a literal pipe (even in a code span, as GFM does) and each cell trimmed.
   */
  function rowCells(line, limit) {
    var text = line.trim();
    var start = text.charAt(0) === "|" ? 1 : 0;
    var end = text.length;
    if (end > start && text.charAt(end - 1) === "|" && text.charAt(end - 2) !== "\\") {
      end--;
    }
    var cells = [];
    var from = start;
    var scan = start;
    while (cells.length < limit) {
      var pipe = scan < end ? text.indexOf("|", scan) : -1;
      if (pipe < 0 || pipe >= end) {
        cells.push(text.slice(from, end).replace(/\\\|/g, "|").trim());
        break;
      }
      if (text.charAt(pipe - 1) !== "\\") {
        cells.push(text.slice(from, pipe).replace(/\\\|/g, "|").trim());
        from = pipe + 1;
      }
      scan = pipe + 1;
    }
    return cells;
  }

  /**
   * The header cells and column alignments when lines[i] and lines[i + 1] open a table (a row, then a delimiter
   * row of as many cells: `| --- | :-: |`), else null. Both lines must hold a pipe: `---` alone is a rule.
   */
  function tableHead(lines, i) {
    var delimiter = lines[i + 1];
    if (delimiter === undefined || !DELIMITER_ROW.test(delimiter) || delimiter.indexOf("|") < 0) {
      return null;
    }
    if (lines[i].indexOf("|") < 0) {
      return null;
    }
    var header = rowCells(lines[i], Infinity);
    var rule = rowCells(delimiter, header.length + 1);
    if (rule.length !== header.length) {
      return null;
    }
    var align = [];
    for (var c = 0; c < rule.length; c++) {
      var colons = DELIMITER_CELL.exec(rule[c]);
      if (!colons) {
        return null;
      }
      align.push(colons[1] && colons[2] ? "center" : colons[2] ? "right" : colons[1] ? "left" : "");
    }
    return { header: header, align: align };
  }

  /** A row of `tag` cells, one per column: cells missing at the end are left empty, extra ones were never split. */
  function tableRow(doc, tag, cells, align) {
    var tr = doc.createElement("tr");
    for (var c = 0; c < align.length; c++) {
      var cell = doc.createElement(tag);
      if (align[c]) {
        cell.setAttribute("align", align[c]);
      }
      if (cells[c]) {
        renderInline(cells[c], cell);
      }
      tr.appendChild(cell);
    }
    return tr;
  }

  /**
   * Render the table opened at lines[i] (see tableHead) into `parent`; the index of the first line after it.
   * Body rows run to a blank line, a line without a pipe or the start of another block. A row with fewer cells
   * than the header is padded with empty ones (GFM), but only while the table has had at least one character of
   * text per padded cell: a wide header over many one-character rows would otherwise make columns × rows cells
   * (cmark-gfm and markdown-it cap the padded cells at a fixed count; here the cap grows with the text, so the
   * work stays linear at any size). The row that would pass the cap ends the table.
   */
  function renderTable(lines, i, head, parent, depth) {
    var doc = parent.ownerDocument;
    var columns = head.align.length;
    var table = doc.createElement("table");
    var thead = doc.createElement("thead");
    thead.appendChild(tableRow(doc, "th", head.header, head.align));
    table.appendChild(thead);
    var budget = lines[i].length + lines[i + 1].length;
    var tbody = null;
    var j = i + 2;
    for (; j < lines.length; j++) {
      var line = lines[j];
      if (line.indexOf("|") < 0 || isBlockStart(line, depth)) {
        break;
      }
      var cells = rowCells(line, columns);
      budget += line.length - (columns - cells.length);
      if (budget < 0) {
        break;
      }
      if (!tbody) {
        tbody = doc.createElement("tbody");
        table.appendChild(tbody);
      }
      tbody.appendChild(tableRow(doc, "td", cells, head.align));
    }
    parent.appendChild(table);
    return j;
  }

  // ---- blocks ------------------------------------------------------------------------------------------

  function isQuote(line, depth) {
    return depth < MAX_QUOTE_DEPTH && QUOTE.test(line);
  }

  function isBlockStart(line, depth) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || ITEM.test(line) || isQuote(line, depth);
  }

  /** A heading's text: the line after its #s, without the closing run of spaces and #s. */
  function headingText(content) {
    var end = content.length;
    while (end > 0 && " \t#".indexOf(content.charAt(end - 1)) > -1) {
      end--;
    }
    return content.slice(0, end);
  }

  function renderCode(lines, i, parent) {
    var doc = parent.ownerDocument;
    var open = FENCE.exec(lines[i]);
    var fence = open[1];
    var body = [];
    var j = i + 1;
    for (; j < lines.length; j++) {
      var closing = FENCE_CLOSE.exec(lines[j]);
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

  function renderList(lines, i, parent, depth) {
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
        renderInline(item[3], li);
        top.list.appendChild(li);
        top.item = li;
        blank = false;
        continue;
      }
      // A non-item line: an indented continuation of the last item, else the list is over.
      if ((!blank || /^[ \t]{2,}/.test(line)) && !isBlockStart(line, depth)) {
        var last = stack[stack.length - 1].item;
        var head = tableHead(lines, j);
        if (head) {
          j = renderTable(lines, j, head, last, depth) - 1;
          blank = false;
          continue;
        }
        last.appendChild(doc.createElement("br"));
        renderInline(line.trim(), last);
        blank = false;
        continue;
      }
      break;
    }
    return j;
  }

  function renderBlocks(lines, parent, depth) {
    var doc = parent.ownerDocument;
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
        renderInline(headingText(heading[2]), h);
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
        i = renderList(lines, i, parent, depth);
        continue;
      }
      if (isQuote(line, depth)) {
        var quoted = [];
        while (i < lines.length && isQuote(lines[i], depth)) {
          quoted.push(QUOTE.exec(lines[i])[1]);
          i++;
        }
        var blockquote = doc.createElement("blockquote");
        renderBlocks(quoted, blockquote, depth + 1);
        parent.appendChild(blockquote);
        continue;
      }
      var table = tableHead(lines, i);
      if (table) {
        i = renderTable(lines, i, table, parent, depth);
        continue;
      }
      var paragraph = [line];
      i++;
      while (i < lines.length && lines[i].trim() && !isBlockStart(lines[i], depth) && !tableHead(lines, i)) {
        paragraph.push(lines[i]);
        i++;
      }
      var p = doc.createElement("p");
      renderInline(paragraph.join("\n").trim(), p);
      parent.appendChild(p);
    }
  }

  /** Replace the children of `element` with the rendering of `text`. */
  function renderInto(element, text) {
    var fragment = element.ownerDocument.createDocumentFragment();
    renderBlocks(String(text || "").replace(/\r\n?/g, "\n").split("\n"), fragment, 0);
    element.replaceChildren(fragment);
  }

  global.RagbotMarkdown = { renderInto: renderInto, safeHref: safeHref };
})(window);
