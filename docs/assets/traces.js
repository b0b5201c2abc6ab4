/*
 * The trace pages' little JavaScript. The pages work without it (every run
 * shown, <details> toggled by the browser); with it:
 * - the "show: mock live" switch, per chapter (remembered across pages in
 *   localStorage) and per scenario (this page only);
 * - a link to a turn or tool call opens the <details> around it, on load, on
 *   hashchange and after Material's instant navigation;
 * - "whole context" is filled in from the run's transcript when opened;
 * - the trace JSON link is made relative to the site root.
 * Material re-renders the page body on instant navigation, so setup runs on
 * every document$ emission and binds only to elements not yet bound.
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

  // Show `value`'s modes in `box` (a chapter or a scenario) and press its buttons.
  function show(box, value) {
    box.setAttribute("data-show", value);
    var own = box.querySelector(":scope > .tr-head > .tr-switch, :scope > .tr-scenario-name > .tr-switch");
    if (!own) return;
    own.querySelectorAll(".tr-mode").forEach(function (button) {
      var on = parse(value).indexOf(button.getAttribute("data-tr-mode")) >= 0;
      button.setAttribute("aria-pressed", on ? "true" : "false");
    });
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

  function showChapter(chapter, value) {
    show(chapter, value);
    chapter.querySelectorAll(".tr-scenario").forEach(function (scenario) {
      show(scenario, value);
    });
  }

  function onSwitch(event) {
    var button = event.target.closest(".tr-mode");
    if (!button) return;
    var box = button.closest(".tr-scenario, .tr-chapter");
    var value = toggled(box.getAttribute("data-show") || "mock live", button.getAttribute("data-tr-mode"));
    if (box.classList.contains("tr-chapter")) {
      remember(value);
      document.querySelectorAll(".tr-chapter").forEach(function (chapter) {
        showChapter(chapter, value);
      });
    } else {
      show(box, value);
    }
  }

  // Open every <details> around the element the URL's hash names, and make
  // sure the run it belongs to is shown.
  function reveal(target) {
    if (!target || !target.closest || !target.closest(".tr")) return;
    var run = target.closest("[data-mode]");
    var box = run && run.parentElement && run.parentElement.closest("[data-show]");
    if (box && parse(box.getAttribute("data-show")).indexOf(run.getAttribute("data-mode")) < 0) {
      show(box, toggled(box.getAttribute("data-show"), run.getAttribute("data-mode")));
    }
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
    target.scrollIntoView({ block: "start" });
  }

  function revealHash() {
    var id = location.hash.slice(1);
    if (!id) return;
    try {
      id = decodeURIComponent(id);
    } catch (error) {
      return;
    }
    reveal(document.getElementById(id));
  }

  // In-page links (the timeline, "as declared in turn 1") open their target
  // even when the hash is already the same, which fires no hashchange.
  function onLink(event) {
    var link = event.target.closest('.tr a[href^="#"]');
    if (!link) return;
    var target = document.getElementById(decodeURIComponent(link.getAttribute("href").slice(1)));
    if (target) reveal(target);
  }

  // "whole context": the first N rows of the run's transcript, copied in.
  function onToggle(event) {
    var whole = event.target;
    if (!whole.classList || !whole.classList.contains("tr-whole") || !whole.open || whole.querySelector("table")) return;
    var source = document.getElementById(whole.getAttribute("data-tr-transcript"));
    var table = source && source.querySelector("table");
    if (!table) return;
    var count = parseInt(whole.getAttribute("data-tr-count"), 10);
    var copy = table.cloneNode(true);
    copy.querySelectorAll("tbody > tr").forEach(function (row) {
      if (parseInt(row.getAttribute("data-i"), 10) >= count) row.remove();
    });
    whole.appendChild(copy);
  }

  function setup() {
    var value = remembered();
    document.querySelectorAll(".tr-chapter").forEach(function (chapter) {
      chapter.querySelectorAll(".tr-switch").forEach(function (element) {
        element.hidden = false;
      });
      showChapter(chapter, value);
    });
    // The path is kept in its own attribute: Material may already have made
    // the href absolute against the page's URL.
    document.querySelectorAll(".tr a[data-tr-root-relative]").forEach(function (link) {
      var path = link.getAttribute("data-tr-root-relative");
      if (!/^([a-z]+:)?\/\//i.test(path) && path.charAt(0) !== "/") link.href = new URL(path, ROOT).href;
      link.removeAttribute("data-tr-root-relative");
    });
    revealHash();
  }

  // Bound once on the document, so they survive instant navigation.
  document.addEventListener("click", onSwitch);
  document.addEventListener("click", onLink);
  document.addEventListener("toggle", onToggle, true); // toggle does not bubble
  window.addEventListener("hashchange", revealHash);

  // Material's print$ already opens every <details>; without Material, do it.
  if (typeof window.print$ === "undefined") {
    window.addEventListener("beforeprint", function () {
      document.querySelectorAll(".tr details:not([open])").forEach(function (details) {
        details.open = true;
        details.setAttribute("data-tr-printed", "");
      });
    });
    window.addEventListener("afterprint", function () {
      document.querySelectorAll(".tr details[data-tr-printed]").forEach(function (details) {
        details.open = false;
        details.removeAttribute("data-tr-printed");
      });
    });
  }

  if (typeof window.document$ !== "undefined" && window.document$.subscribe) {
    window.document$.subscribe(setup); // Material: every page, instant or not
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setup);
  } else {
    setup();
  }
})();
