/*
 * The trace pages' little JavaScript. The pages work without it (every run
 * shown, <details> toggled by the browser, payloads as plain text, links
 * that resolve from the page's own URL); with it:
 * - the "show: mock live" switch, per chapter (remembered across pages in
 *   localStorage, and applied only where it can be: a chapter with none of
 *   the chosen mode's runs shows what it has, and says why) and per scenario
 *   (this page only); prose about one mode's runs shows and hides with them;
 * - a link to a turn or tool call opens the <details> around it, on load, on
 *   hashchange and after Material's instant navigation;
 * - a closed run's inside (its turns and calls) and the payloads are not on
 *   the page: each is a link to its element in the chapter's payload page
 *   (traces/CHAPTER.payloads.html, which a reader without JavaScript lands
 *   on). When the first <details> holding one opens, or a link names what is
 *   in one, that page is fetched once and every block of the chapter is
 *   filled in from it, with copy buttons made as Material makes them;
 * - the folds inside a run come as <div class="tr-d"> (parts.html.j2 says
 *   why) and become <details>, folded, when it is filled in (a run drawn
 *   whole, one that broke: when it is first opened, open if not by a click);
 * - a timeline's turn links to it on the payload page, and here to it in place;
 * - JSON is coloured when the <details> around it is first opened (the page
 *   ships it as plain text: highlighting markup was most of its weight);
 * - "whole context" is filled in from the run's transcript, and "the whole
 *   body as sent" is rebuilt from the request before, when opened;
 * - "open all" / "fold all" for a run and for a turn;
 * - printing prints what is open (Material opens every <details> to print:
 *   what was folded is marked so the print stylesheet leaves it folded), and
 *   "print all" prints every run with everything open (but the views that
 *   repeat what is printed anyway);
 * - the trace JSON link is made relative to the site root.
 * Material re-renders the page body on instant navigation, so setup runs on
 * every document$ emission and binds only to elements not yet bound.
 * Everything taken from the page is put back as text (textContent,
 * createElement), never as HTML: the payloads are untrusted. The payload
 * page is the renderer's own escaped HTML, parsed by DOMParser (which runs
 * no script) and copied in element by element, only those elements and
 * attributes the renderer emits.
 */
(function () {
  "use strict";

  var KEY = "primer.traces.show";
  var MODES = ["mock", "live"];

  // The site root, resolved once: Material's config holds it relative to the
  // page this script was first loaded on.
  var ROOT = (function () {
    var config = document.getElementById("__config");
    try {
      return new URL(config ? JSON.parse(config.textContent).base : ".", location.href);
    } catch (error) {
      return new URL(".", location.href);
    }
  })();

  function remembered() {
    try {
      var value = localStorage.getItem(KEY);
      return value && parse(value).length ? value : "mock live";
    } catch (error) {
      return "mock live"; // storage refused (privacy mode): not remembered
    }
  }

  function remember(value) {
    try {
      localStorage.setItem(KEY, value);
    } catch (error) {
      // Nothing to do: the choice holds for this page.
    }
  }

  function parse(value) {
    return MODES.filter(function (mode) {
      return (" " + value + " ").indexOf(" " + mode + " ") >= 0;
    });
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  // -- the switch ---------------------------------------------------------

  // Show `value`'s modes in `box` (a chapter or a scenario) and press its buttons.
  // Only what changes is written: each write makes the browser restyle what it touches.
  function show(box, value) {
    if (box.getAttribute("data-show") !== value) box.setAttribute("data-show", value);
    var own = box.querySelector(":scope > .tr-head > .tr-switch, :scope > .tr-scenario-name > .tr-switch");
    if (own) {
      own.querySelectorAll(".tr-mode").forEach(function (button) {
        // A disabled mode (no live run recorded) is never shown as pressed.
        var on = !button.disabled && parse(value).indexOf(button.getAttribute("data-tr-mode")) >= 0;
        if (button.getAttribute("aria-pressed") !== String(on)) button.setAttribute("aria-pressed", String(on));
      });
    }
    var chapter = box.closest(".tr-chapter");
    var scenario = box.classList.contains("tr-scenario") ? box.getAttribute("aria-label").replace(/^scenario /, "") : null;
    if (chapter) showProse(chapter.getAttribute("data-tr-chapter"), scenario, value);
  }

  // Prose about one mode's runs (a `::: live` or `::: mock` block) shows with
  // them: the chapter's switch decides for all of its blocks, a scenario's
  // for the blocks about that scenario.
  function showProse(name, scenario, value) {
    document.querySelectorAll(".tr-prose[data-tr-chapter]").forEach(function (prose) {
      if (prose.getAttribute("data-tr-chapter") !== name) return;
      if (scenario !== null && prose.getAttribute("data-tr-scenario") !== scenario) return;
      var hidden = parse(value).indexOf(prose.getAttribute("data-mode")) < 0;
      if (prose.hidden !== hidden) prose.hidden = hidden;
    });
  }

  // Every chapter's modes on this page, by name (its traces may sit in several boxes), from one pass over its runs.
  function modesOf() {
    var found = {};
    document.querySelectorAll(".tr-chapter .tr-run[data-mode]:not(.tr-missing)").forEach(function (run) {
      var name = run.closest(".tr-chapter").getAttribute("data-tr-chapter");
      var modes = found[name] || (found[name] = []);
      if (modes.indexOf(run.getAttribute("data-mode")) < 0) modes.push(run.getAttribute("data-mode"));
    });
    Object.keys(found).forEach(function (name) {
      found[name] = MODES.filter(function (mode) { return found[name].indexOf(mode) >= 0; });
    });
    return found;
  }

  // What a chapter shows of the reader's choice: the modes chosen that it has
  // runs of, or every mode it has when it has none of them. A remembered
  // choice never blanks a page.
  function applicable(value, modes) {
    if (!modes.length) return value;
    var chosen = parse(value).filter(function (mode) { return modes.indexOf(mode) >= 0; });
    return (chosen.length ? chosen : modes).join(" ");
  }

  // Toggle one mode; turning off the only one shown shows the other instead.
  function toggled(current, mode) {
    var modes = parse(current);
    if (modes.indexOf(mode) >= 0) {
      modes = modes.filter(function (m) { return m !== mode; });
      if (!modes.length) modes = MODES.filter(function (m) { return m !== mode; });
    } else {
      modes.push(mode);
    }
    return MODES.filter(function (m) { return modes.indexOf(m) >= 0; }).join(" ");
  }

  // Say, in the chapter's head, why it shows other runs than the reader chose: only where it has none of
  // them (a chapter showing part of the choice, as a mock-only one does by default, needs no word: its
  // other mode's button is disabled).
  function explain(chapter, chosen, shown) {
    var head = chapter.querySelector(":scope > .tr-head");
    if (!head) return;
    var note = head.querySelector(":scope > .tr-why");
    var lacking = parse(chosen).filter(function (mode) { return parse(shown).indexOf(mode) < 0; });
    if (lacking.length < parse(chosen).length) {
      if (note) note.remove();
      return;
    }
    if (!note) {
      note = element("p", "tr-why");
      note.setAttribute("role", "status");
      head.appendChild(note);
    }
    note.textContent = "Showing the " + parse(shown).join(" and ") + " runs: this chapter has no " +
      lacking.join(" or ") + " run (you chose " + parse(chosen).join(" and ") + ").";
  }

  // ``modes``: every chapter's, from modesOf() once for all the chapters shown.
  function showChapter(chapter, value, modes) {
    var shown = applicable(value, modes[chapter.getAttribute("data-tr-chapter")] || []);
    show(chapter, shown);
    chapter.querySelectorAll(".tr-scenario").forEach(function (scenario) {
      show(scenario, shown);
    });
    explain(chapter, value, shown);
  }

  function onSwitch(event) {
    var button = event.target.closest(".tr-mode");
    if (!button) return;
    var box = button.closest(".tr-scenario, .tr-chapter");
    var value = toggled(box.getAttribute("data-show") || "mock live", button.getAttribute("data-tr-mode"));
    if (box.classList.contains("tr-chapter")) {
      // Remembered only from a chapter that has both: elsewhere there is no choice to make.
      var modes = modesOf();
      if ((modes[box.getAttribute("data-tr-chapter")] || []).length === MODES.length) remember(value);
      document.querySelectorAll(".tr-chapter").forEach(function (chapter) {
        showChapter(chapter, value, modes);
      });
    } else {
      show(box, value);
    }
  }

  // -- the folds inside a run, made when it first opens ------------------------

  // Each `div.tr-d` in `run` (a details.tr-scn) becomes a <details>
  // with the same attributes, its `div.tr-sum` line the <summary>; `open`:
  // opened, as the divs showed. Outer folds first (document order): an
  // inner one moves along with its fold's content and is made after it.
  function unfold(run, open) {
    run.querySelectorAll("div.tr-d").forEach(function (div) {
      var details = document.createElement("details");
      Array.prototype.forEach.call(div.attributes, function (attribute) {
        details.setAttribute(attribute.name, attribute.value);
      });
      var line = div.firstElementChild;
      var summary = document.createElement("summary");
      while (line.firstChild) summary.appendChild(line.firstChild);
      line.remove();
      details.appendChild(summary);
      while (div.firstChild) details.appendChild(div.firstChild);
      details.open = open;
      div.replaceWith(details);
    });
  }

  // A click on a closed run's summary (the keyboard's Enter and Space click
  // too) comes before the browser opens the run: its folds are made folded
  // then, so the run opens as it always has.
  function onRunClick(event) {
    var summary = event.target.closest && event.target.closest("summary");
    var run = summary && summary.parentElement;
    if (run && run.matches(".tr details.tr-scn:not([open])")) unfold(run, false);
  }

  // -- links --------------------------------------------------------------

  // Open every <details> around the element the URL's hash names, and make
  // sure the run it belongs to is shown.
  function reveal(target) {
    if (!target || !target.closest || !target.closest(".tr")) return;
    var run = target.closest("[data-mode]");
    var box = run && run.parentElement && run.parentElement.closest("[data-show]");
    if (box && parse(box.getAttribute("data-show")).indexOf(run.getAttribute("data-mode")) < 0) {
      show(box, toggled(box.getAttribute("data-show"), run.getAttribute("data-mode")));
    }
    var outer = target.closest("details.tr-scn");
    if (outer) {
      unfold(outer, false);
      target = document.getElementById(target.id) || target; // a fold is a new element now
    }
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.scrollIntoView({ block: "start" });
    // What is laid out after (a scenario drawn at its real height, buttons
    // added above it) may move it: scrolled to again once that is done.
    requestAnimationFrame(function () {
      requestAnimationFrame(function () { target.scrollIntoView({ block: "start" }); });
    });
  }

  function revealHash(hash) {
    var id = (typeof hash === "string" ? hash : location.hash).slice(1); // a hashchange passes its event
    if (!id) return;
    try {
      id = decodeURIComponent(id);
    } catch (error) {
      return;
    }
    var target = byId(id);
    if (target) reveal(target);
    else if (document.querySelector("a.tr-load")) {
      // Maybe in a payload not filled in yet.
      fillAll().then(function () { reveal(byId(id)); });
    }
  }

  // The element a fragment names: Material renames the <pre> blocks it gives
  // a copy button ("__code_" and the block's own id), and a link to a
  // payload block names the block as rendered.
  function byId(id) {
    return document.getElementById(id) || document.getElementById("__code_" + id);
  }

  // In-page links (the timeline, "as declared in turn 1") open their target
  // even when the hash is already the same, which fires no hashchange. One to
  // what is not on the page yet (a turn of a run not filled in) is taken from
  // Material's instant navigation, which would load the page again over what
  // is filled in (capture phase, at the document: before Material's handler).
  function onLink(event) {
    var link = event.target.closest('.tr a[href^="#"]');
    if (!link || link.classList.contains("tr-anchor")) return;
    var id;
    try {
      id = decodeURIComponent(link.getAttribute("href").slice(1));
    } catch (error) {
      return; // a malformed escape names nothing
    }
    var target = byId(id);
    if (target) return reveal(target);
    event.preventDefault();
    event.stopPropagation();
    history.pushState(null, "", link.hash);
    fillAll().then(function () { reveal(byId(id)); });
  }

  // A link to copy, GitHub's heading anchor, beside each turn and call of an
  // opened run or turn: made when it is opened, so a page carries none.
  var LINKED = {
    "tr-trial": "this trial", "tr-turn": "this turn", "tr-model": "this model call", "tr-tool": "this tool call"
  };

  function addAnchors(details) {
    details.querySelectorAll(
      ":scope > details.tr-trial, :scope > details.tr-turn, :scope > details.tr-model, :scope > details.tr-tool"
    )
      .forEach(function (inner) {
        var before = inner.previousElementSibling;
        if (!inner.id || (before && before.classList.contains("tr-anchor"))) return;
        var kind = Object.keys(LINKED).filter(function (name) { return inner.classList.contains(name); })[0];
        var link = element("a", "tr-anchor", "#");
        link.href = "#" + inner.id;
        link.setAttribute("aria-label", "link to " + LINKED[kind]);
        link.title = "link to " + LINKED[kind] + " (copy it to share)";
        // Beside its summary line, not in it: a link inside a <summary> is a
        // control inside a control, which a screen reader may not reach.
        inner.parentElement.insertBefore(link, inner);
      });
  }

  // A click on a turn's or call's link goes to it and leaves it as it was.
  function onAnchor(event) {
    var link = event.target.closest(".tr-anchor");
    if (!link) return;
    event.preventDefault();
    history.replaceState(null, "", link.getAttribute("href"));
  }

  // -- payloads, filled in from the chapter's payload page ------------------

  var payloadPages = {}; // URL without its hash -> a promise of the parsed page

  // A payload block not filled in yet is its link (a.tr-load), the block's
  // id its fragment: the page, from the root-relative path its chapter's div
  // keeps (see rootRelative).
  function payloadUrl(stub) {
    var chapter = stub.closest("[data-tr-payloads]");
    var path = chapter && chapter.getAttribute("data-tr-payloads");
    return (path ? new URL(path, ROOT) : new URL(stub.href)).href.split("#")[0];
  }

  function payloadPage(url) {
    if (!payloadPages[url]) {
      payloadPages[url] = fetch(url).then(function (response) {
        if (!response.ok) throw new Error(url + ": " + response.status);
        return response.text();
      }).then(function (text) {
        return new DOMParser().parseFromString(text, "text/html");
      });
      // A failed fetch is tried again at the next opening; the link stays meanwhile.
      payloadPages[url].catch(function () { delete payloadPages[url]; });
    }
    return payloadPages[url];
  }

  // Material's copy button for a block filled in after it made its own, as
  // Material makes one (its clipboard handler is bound to the document, so a
  // copy works here too).
  var codeIds = 0;
  // The copy button's title if the theme makes copy buttons (Material's "content.code.copy"), else null.
  var COPY = (function () {
    var config = document.getElementById("__config");
    try {
      var settings = JSON.parse(config.textContent);
      if ((settings.features || []).indexOf("content.code.copy") < 0) return null;
      return (settings.translations || {})["clipboard.copy"] || "Copy to clipboard";
    } catch (error) {
      return null;
    }
  })();

  // The block keeps its own id (rendered unique on the page), so a link to it
  // still lands; one without an id gets Material's kind of name.
  function copyButton(pre) {
    if (!COPY) return;
    while (!pre.id || (document.getElementById(pre.id) && document.getElementById(pre.id) !== pre)) {
      pre.id = "__code_tr-" + codeIds++;
    }
    var id = pre.id;
    // A div, not Material's <nav>: one landmark per block would crowd a screen reader's list.
    var nav = element("div", "md-code__nav");
    var button = element("button", "md-code__button");
    button.title = COPY;
    button.setAttribute("data-clipboard-target", "#" + id + " > code");
    button.setAttribute("data-md-type", "copy");
    // An abridged request copies what was sent (onCopy), not what is shown.
    if (pre.hasAttribute("data-tr-base")) button.title = COPY + ": the whole body as sent";
    nav.appendChild(button);
    pre.insertBefore(nav, pre.firstChild);
  }

  // Before Material's clipboard handler (bound to the document, this one to
  // the window in the capture phase): the copy button of an abridged request
  // body copies the whole body as sent, rebuilt from the requests before it.
  function onCopy(event) {
    var button = event.target.closest && event.target.closest(".md-code__button[data-md-type='copy']");
    var pre = button && button.closest("pre.tr-req[data-tr-base]");
    if (!pre) return;
    try {
      button.setAttribute("data-clipboard-text", JSON.stringify(wholeBody(pre, 0), null, 2));
    } catch (error) {
      button.removeAttribute("data-clipboard-text"); // not rebuilt: the part shown is copied
    }
  }

  // `stubs`: the payload blocks' links too, which a page has one of per call
  // (named from their chapter's div: payloadUrl); at load they are left for
  // when their block is opened (fillPayloads).
  function rootRelative(scope, stubs) {
    // The path is kept in its own attribute: Material may already have made
    // the href absolute against the page's URL.
    scope.querySelectorAll(".tr a[data-tr-root-relative]").forEach(function (link) {
      var path = link.getAttribute("data-tr-root-relative");
      // A path below the site's root only: never another scheme (javascript:) nor another site.
      if (!/^[a-z][a-z0-9+.-]*:|^[\/\\]/i.test(path)) link.href = new URL(path, ROOT).href + link.hash;
      link.removeAttribute("data-tr-root-relative");
    });
    // A timeline's turn links to it on the payload page (which a reader without JavaScript
    // lands on); here, the run is filled in and opened at it (onLink).
    scope.querySelectorAll("a.tr-tl-turn").forEach(function (link) {
      if (link.getAttribute("href").charAt(0) !== "#") link.setAttribute("href", link.hash);
    });
    if (!stubs) return;
    scope.querySelectorAll("a.tr-load").forEach(function (stub) {
      stub.href = payloadUrl(stub) + stub.hash; // the fragment names the block
    });
  }

  // What the renderer puts in a payload, and nothing else: a payload page
  // edited by hand (or by anyone between the site and the reader) cannot
  // bring in an element or an attribute that runs script (`on*`, a
  // javascript: link, <script>, <img>, <svg>). Made anew with createElement,
  // attribute by attribute; text stays text.
  // A reply's Markdown (render_markdown.py) adds section, lists, quotes, rules, rel and start.
  var TAGS = /^(a|blockquote|br|code|dd|details|div|dl|dt|em|hr|li|ol|p|pre|section|span|strong|summary|table|tbody|td|th|thead|tr|ul)$/;
  var ATTRIBUTES = /^(class|id|href|rel|start|title|scope|role|aria-label|data-search-exclude|data-tr-[a-z-]+)$/;

  function copied(node) {
    if (node.nodeType === 3) return document.createTextNode(node.nodeValue);
    if (node.nodeType !== 1) return null;
    var tag = node.tagName.toLowerCase();
    if (!TAGS.test(tag)) return null;
    var copy = document.createElement(tag);
    Array.prototype.forEach.call(node.attributes, function (attribute) {
      var name = attribute.name.toLowerCase();
      if (!ATTRIBUTES.test(name)) return;
      // A link, or the attributes traces.js makes one of: a fragment, a relative path or http(s).
      var link = name === "href" || name === "data-tr-root-relative";
      if (link && !/^(#|[a-z0-9._\/-]*(\.[a-z]+)?(#|$)|https?:)/i.test(attribute.value.trim())) return;
      copy.setAttribute(name, attribute.value);
    });
    Array.prototype.forEach.call(node.childNodes, function (child) {
      var inner = copied(child);
      if (inner) copy.appendChild(inner);
    });
    return copy;
  }

  // Fill every block of the page that links to the payload page at `url`.
  function fillFrom(url) {
    return payloadPage(url).then(function (page) {
      document.querySelectorAll("a.tr-load").forEach(function (stub) {
        if (payloadUrl(stub) !== url) return;
        var id = stub.hash.slice(1);
        var source = id && page.getElementById(id);
        if (!source) return; // not in the payload page: the link stays
        var content = document.createDocumentFragment();
        Array.prototype.forEach.call(source.childNodes, function (node) {
          // Not the block's heading, nor its link to the chapter page: on the chapter page, it is there.
          if (node.nodeType === 1 && /\btr-payload-(head|to)\b/.test(node.className)) return;
          var copy = copied(node);
          if (copy) content.appendChild(copy);
        });
        // A run's inside (its turns and calls) goes straight into the run, its
        // folds folded as a run opens; a payload into a block of its own, which keeps the id.
        var run = stub.parentElement.classList.contains("tr-scn") ? stub.parentElement : null;
        var body = run || element("div", "tr-body");
        if (!run) {
          body.id = id;
          body.setAttribute("data-search-exclude", "");
          body.appendChild(content);
        }
        stub.replaceWith(run ? content : body);
        if (run) unfold(run, false);
        rootRelative(body);
        body.querySelectorAll("pre").forEach(copyButton);
        var around = body.closest("details");
        if (!around || !around.open) return;
        colour(around);
        if (run) addAnchors(run);
      });
      updateAll();
    });
  }

  // The payload pages the links `stubs` name, each once.
  function payloadUrls(stubs) {
    var urls = [];
    stubs.forEach(function (stub) {
      var url = payloadUrl(stub);
      if (url && urls.indexOf(url) < 0) urls.push(url);
    });
    return urls;
  }

  // Fill the payload blocks directly in `details` (and so every block of its chapter).
  function fillPayloads(details) {
    rootRelative(details, true); // the link stays if the page cannot be fetched: it must land
    return Promise.all(payloadUrls(details.querySelectorAll(":scope > a.tr-load")).map(fillFrom));
  }

  // Fill every payload block of the page.
  function fillAll() {
    return Promise.all(payloadUrls(document.querySelectorAll("a.tr-load")).map(function (url) {
      return fillFrom(url).catch(function () {});
    }));
  }

  // -- JSON colours ---------------------------------------------------------

  // One token of JSON text: a string (a key when a colon follows), a number,
  // or a literal. The class names are Pygments', which Material colours.
  var TOKEN = /("(?:[^"\\]|\\.)*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|\b(true|false|null)\b/g;

  function highlight(code) {
    if (code.hasAttribute("data-tr-hl")) return;
    code.setAttribute("data-tr-hl", "");
    var text = code.textContent;
    var out = document.createDocumentFragment();
    var position = 0;
    var match;
    TOKEN.lastIndex = 0;
    while ((match = TOKEN.exec(text))) {
      if (match.index > position) out.appendChild(document.createTextNode(text.slice(position, match.index)));
      var css = match[1] !== undefined ? (match[2] ? "nt" : "s2") : match[3] !== undefined ? "m" : "kc";
      out.appendChild(element("span", css, match[1] !== undefined ? match[1] : match[0]));
      if (match[2]) out.appendChild(document.createTextNode(match[2]));
      position = TOKEN.lastIndex;
    }
    if (position < text.length) out.appendChild(document.createTextNode(text.slice(position)));
    code.textContent = "";
    code.appendChild(out);
  }

  // The JSON a <details> shows once open (not what its closed ones hold).
  function colour(details) {
    details.querySelectorAll("code.highlight:not([data-tr-hl]), pre.tr-json > code:not([data-tr-hl])").forEach(
      function (code) {
        if (code.closest("details") === details) highlight(code);
      }
    );
    requestAnimationFrame(function () {
      details.querySelectorAll("pre > code").forEach(function (code) {
        if (code.closest("details") === details) reachable(code);
      });
    });
  }

  // A block taller than its box scrolls: the keyboard must be able to reach it.
  function reachable(code) {
    if (code.scrollHeight > code.clientHeight + 1) code.setAttribute("tabindex", "0");
  }

  // -- filled in when opened ------------------------------------------------

  // "whole context": the first N rows of the run's transcript, copied in.
  function fillContext(whole) {
    if (whole.querySelector("table")) return;
    var source = document.getElementById(whole.getAttribute("data-tr-transcript"));
    var table = source && source.querySelector("table");
    if (!table) return;
    var count = parseInt(whole.getAttribute("data-tr-count"), 10);
    var copy = table.cloneNode(true);
    // Row k of the transcript is message [k]: the first rows are the context.
    copy.querySelectorAll("tbody > tr").forEach(function (row, index) {
      if (index >= count) row.remove();
    });
    whole.appendChild(copy);
  }

  // The last request body a model call sent.
  function requestOf(modelId) {
    var model = document.getElementById(modelId);
    var bodies = model ? model.querySelectorAll("pre.tr-req") : [];
    return bodies.length ? bodies[bodies.length - 1] : null;
  }

  function put(object, key, value) {
    // defineProperty: a key named "__proto__" stays a key.
    Object.defineProperty(object, key, { value: value, enumerable: true, writable: true, configurable: true });
  }

  // A request body as it was sent: the body shown, with what the request
  // before carried put back (which may itself have been shown in part).
  function wholeBody(pre, depth) {
    var shown = JSON.parse(pre.querySelector("code").textContent);
    var base = pre.getAttribute("data-tr-base");
    if (!base) return shown;
    var before = requestOf(base);
    if (!before || depth > 500) throw new Error("the request before is not on this page");
    var earlier = wholeBody(before, depth + 1);
    var taken = parseInt(pre.getAttribute("data-tr-messages"), 10) || 0;
    var same = JSON.parse(pre.getAttribute("data-tr-same") || "[]");
    var whole = {};
    JSON.parse(pre.getAttribute("data-tr-keys") || "[]").forEach(function (key) {
      if (same.indexOf(key) >= 0) put(whole, key, earlier[key]);
      else if (key === "messages" && taken) put(whole, key, earlier.messages.slice(0, taken).concat(shown.messages));
      else put(whole, key, shown[key]);
    });
    return whole;
  }

  function fillBody(sent) {
    if (sent.querySelector("pre")) return;
    var pre = sent.previousElementSibling;
    if (!pre || !pre.classList.contains("tr-req")) return;
    var text;
    try {
      text = JSON.stringify(wholeBody(pre, 0), null, 2);
    } catch (error) {
      sent.appendChild(element("p", "tr-note", "It could not be rebuilt here: " + error.message + "."));
      return;
    }
    var out = element("pre", "tr-json highlight");
    var code = element("code", "", text);
    out.id = pre.id + "-whole";
    // Material's copy button, as it made one for the body shown: its
    // clipboard handler is bound to the document, so a copy works here too.
    var nav = pre.querySelector(":scope > .md-code__nav");
    if (nav) {
      nav = nav.cloneNode(true);
      nav.querySelectorAll("[data-clipboard-target]").forEach(function (button) {
        button.setAttribute("data-clipboard-target", "#" + out.id + " > code");
      });
      out.appendChild(nav);
    }
    out.appendChild(code);
    sent.appendChild(out);
    highlight(code);
    requestAnimationFrame(function () { reachable(code); });
  }

  function onToggle(event) {
    var details = event.target;
    if (details.tagName !== "DETAILS" || !details.open || !details.closest(".tr")) return;
    // Opened by other than a click (find in page, a script): what it showed stays shown.
    // Not one opened only to print, folded on paper (beforePrint marks it).
    if (details.classList.contains("tr-scn") && !details.hasAttribute("data-tr-folded")) unfold(details, true);
    // Not what the print opens to leave folded on paper.
    if (details.querySelector(":scope > a.tr-load") && !details.hasAttribute("data-tr-folded")) {
      fillPayloads(details).catch(function () {});
    }
    if (details.classList.contains("tr-whole")) fillContext(details);
    if (details.classList.contains("tr-sent")) fillBody(details);
    if (/\btr-(scn|trial|turn)\b/.test(details.className)) addAnchors(details);
    if (details.classList.contains("tr-turn")) {
      var summary = details.querySelector(":scope > summary");
      addAll(details, summary, summary.textContent.split(" · ")[0] + " of " + runName(details));
    }
    colour(details);
    updateAll();
  }

  // -- open all / fold all ----------------------------------------------------

  function within(details) {
    return [details].concat(Array.prototype.slice.call(details.querySelectorAll("details")));
  }

  function labelAll(button) {
    var target = document.getElementById(button.getAttribute("aria-controls"));
    if (!target) return;
    var closed = within(target).some(function (d) { return !d.open; });
    button.textContent = closed ? "open all" : "fold all";
    button.setAttribute("aria-label", (closed ? "open all of " : "fold all of ") + button.getAttribute("data-tr-what"));
  }

  var pending = false;
  function updateAll() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () {
      pending = false;
      document.querySelectorAll(".tr button.tr-all").forEach(labelAll);
    });
  }

  // "the mock run of service_is_busy", for what is inside it.
  function runName(element) {
    var run = element.closest(".tr-run");
    var scenario = element.closest(".tr-scenario");
    return "the " + (run ? run.getAttribute("data-mode") : "") + " run" +
      (scenario ? " of " + scenario.getAttribute("aria-label").replace(/^scenario /, "") : "");
  }

  // A button that opens (or folds) `details` and everything in it, placed after `where`.
  function addAll(details, where, what) {
    if (!where || !details.id || document.querySelector('.tr-all[aria-controls="' + details.id + '"]')) return;
    var button = element("button", "tr-all");
    button.type = "button";
    button.setAttribute("aria-controls", details.id);
    button.setAttribute("data-tr-what", what);
    where.insertAdjacentElement("afterend", button);
    labelAll(button);
  }

  function onAll(event) {
    var button = event.target.closest(".tr-all");
    if (!button) return;
    var target = document.getElementById(button.getAttribute("aria-controls"));
    if (!target) return;
    if (target.classList.contains("tr-scn")) unfold(target, false);
    var all = within(target);
    var open = all.some(function (d) { return !d.open; });
    all.forEach(function (d) { d.open = open; });
    labelAll(button);
    if (!open) return;
    // What the payloads bring in opens too, unless folded meanwhile.
    var urls = payloadUrls(target.querySelectorAll("a.tr-load"));
    if (!urls.length) return;
    Promise.all(urls.map(fillFrom)).then(function () {
      if (!target.open) return;
      within(target).forEach(function (d) { d.open = true; });
      labelAll(button);
    }).catch(function () {});
  }

  // -- printing ---------------------------------------------------------------

  var printAll = false;
  var printedOpen = [];

  // Capture phase: at the window, it runs before Material's listener opens
  // every <details>, so what the reader had folded is still known.
  function beforePrint() {
    var folded = printAll ? ".tr details.tr-whole:not([open]), .tr details.tr-sent:not([open])" : ".tr details:not([open])";
    document.querySelectorAll(folded).forEach(function (details) {
      details.setAttribute("data-tr-folded", "");
    });
  }

  function afterPrint() {
    document.querySelectorAll(".tr details[data-tr-folded]").forEach(function (details) {
      details.removeAttribute("data-tr-folded");
    });
    if (!printAll) return;
    printAll = false;
    document.documentElement.classList.remove("tr-print-all");
    printedOpen.forEach(function (details) { details.open = false; });
    printedOpen = [];
  }

  function onPrintAll(event) {
    if (!event.target.closest(".tr-print")) return;
    // Every payload in place first: printing prints what is on the page.
    fillAll().then(printEverything);
  }

  function printEverything() {
    printAll = true;
    document.documentElement.classList.add("tr-print-all");
    document.querySelectorAll(".tr details.tr-scn").forEach(function (run) { unfold(run, false); });
    // Not the views that repeat what is printed anyway: the whole context
    // (the transcript's rows) and the whole body as sent.
    printedOpen = Array.prototype.slice.call(
      document.querySelectorAll(".tr details:not([open]):not(.tr-whole):not(.tr-sent)")
    );
    printedOpen.forEach(function (details) { details.open = true; });
    window.print();
  }

  // -- setup ------------------------------------------------------------------

  // At DOMContentLoaded (Material's too, whose setup over the page is most of
  // it), only what changes what the page shows: a view other than every run
  // (one remembered, or a chapter without one mode's runs) and the folds a link
  // opens. When there is none of that, the switches and the view wait a task
  // too, out of the page's load; the rest (buttons, colours, anchors) always does.
  function setup() {
    var value = remembered();
    var modes = modesOf();
    var every = MODES.join(" ");
    var hash = fragment();
    var changes = hash || Object.keys(modes).some(function (name) {
      return applicable(value, modes[name]) !== every;
    });
    if (changes) view(value, modes, hash);
    else setTimeout(function () { view(remembered(), modes, hash); }, 0);
  }

  // The fragment the page was opened at. Under instant navigation, Material's
  // tracking (navigation.tracking) may take it off the URL before the new page
  // is set up, when it names nothing there yet (a payload block not filled
  // in): then it is the one of the link followed to this page.
  var followed = null;
  function onFollow(event) {
    var link = event.target.closest && event.target.closest("a[href]");
    var here = !(event.button || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) && // no new tab
      !(link && link.target && link.target !== "_self");
    var away = here && link && link.hash && link.origin === location.origin && link.pathname !== location.pathname;
    followed = away ? { path: link.pathname, hash: link.hash } : null;
  }

  function fragment() {
    var hash = location.hash || (followed && followed.path === location.pathname ? followed.hash : "");
    followed = null;
    return hash;
  }

  // The switches shown, the view applied, the folds a link names opened; the rest a task later.
  function view(value, modes, hash) {
    document.querySelectorAll(".tr-chapter").forEach(function (chapter) {
      chapter.querySelectorAll(".tr-switch").forEach(function (node) {
        node.hidden = false;
      });
      showChapter(chapter, value, modes);
    });
    revealHash(hash);
    setTimeout(finish, 0);
  }

  function finish() {
    document.querySelectorAll(".tr-chapter > .tr-head").forEach(function (head) {
      if (head.querySelector(".tr-print")) return;
      var print = element("button", "tr-print", "print all");
      print.type = "button";
      var name = head.parentElement.getAttribute("data-tr-chapter");
      print.setAttribute("aria-label", "print all traces of " + name + ", every part open");
      head.appendChild(print);
    });
    document.querySelectorAll(".tr-run > details.tr-scn").forEach(function (run) {
      var legend = run.parentElement.querySelector(":scope > .tr-timeline > .tr-tl-legend");
      if (legend && legend.lastElementChild) addAll(run, legend.lastElementChild, runName(run));
    });
    document.querySelectorAll(".tr details[open]").forEach(colour);
    document.querySelectorAll(".tr details.tr-scn[open], .tr details.tr-trial[open], .tr details.tr-turn[open]")
      .forEach(addAnchors);
    rootRelative(document);
    document.querySelectorAll(".tr details[open]").forEach(function (details) {
      if (details.querySelector(":scope > a.tr-load")) fillPayloads(details).catch(function () {});
    });
  }

  // Bound once on the document, so they survive instant navigation.
  document.addEventListener("click", onRunClick);
  document.addEventListener("click", onSwitch);
  document.addEventListener("click", onAnchor);
  document.addEventListener("click", onLink, true);
  document.addEventListener("click", onAll);
  document.addEventListener("click", onPrintAll);
  document.addEventListener("toggle", onToggle, true); // toggle does not bubble
  window.addEventListener("click", onCopy, true);
  window.addEventListener("hashchange", revealHash);
  document.addEventListener("click", onFollow, true); // before Material's instant navigation takes the click
  window.addEventListener("beforeprint", beforePrint, true);
  window.addEventListener("afterprint", afterPrint);

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(setup); // Material: every page, instant or not
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setup);
  } else {
    setup();
  }
})();
