// The language switch keeps the reader's place and the search they made. Both editions have the
// same sections in the same order, but their anchors differ (they come from the headings' words),
// so the switch carries the reading position as the section's index and how far into it the
// reader is, in thousandths (#fxcourse-section-N-F); the other page turns it back into its own
// anchor and scrolls as far into that section. On the search page the query goes along.
(() => {
  const PLACE = /^#fxcourse-section-(\d+)(?:-(\d+))?$/;
  const EYE = 80; // px from the window's top: under the theme's header, where reading starts
  const sections = () => Array.from(document.querySelectorAll("article section[id]"));

  function readingPlace() {
    const all = sections();
    // the innermost section crossing the reading line (sections come in document order)
    let index = -1;
    all.forEach((section, i) => {
      const box = section.getBoundingClientRect();
      if (box.top <= EYE && box.bottom > EYE) index = i;
    });
    // a section the reader went to by its link, which the page's end kept from scrolling up
    const atEnd = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 2;
    const named = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    const holder = atEnd && named && named.closest("section[id]");
    const top = holder && holder.getBoundingClientRect().top;
    if (holder && top > EYE && top < window.innerHeight && all.indexOf(holder) > index) {
      return { index: all.indexOf(holder), thousandths: 0 };
    }
    if (index < 0) return null;
    const box = all[index].getBoundingClientRect();
    const thousandths = Math.round((1000 * (EYE - box.top)) / box.height);
    return { index, thousandths: Math.min(999, Math.max(0, thousandths)) };
  }

  function carryAlong(link) {
    const target = new URL(link.getAttribute("data-fxcourse-href") || link.href, location.href);
    link.setAttribute("data-fxcourse-href", target.href.split("#")[0]);
    const query = new URLSearchParams(location.search).get("q");
    if (query) target.searchParams.set("q", query);
    const place = readingPlace();
    target.hash = place && (place.index > 0 || place.thousandths > 0)
      ? `fxcourse-section-${place.index}-${place.thousandths}` : "";
    link.href = target.href;
  }
  for (const kind of ["click", "auxclick", "contextmenu", "focusin"]) {
    document.addEventListener(kind, (event) => {
      const link = event.target.closest && event.target.closest(".fxcourse-language a");
      if (link) carryAlong(link);
    });
  }

  let readerScrolled = false;
  for (const kind of ["wheel", "touchstart", "keydown", "mousedown"]) {
    window.addEventListener(kind, () => { readerScrolled = true; }, { passive: true });
  }
  function arrive(place) {
    const section = sections()[place.index];
    if (!section || readerScrolled) return;
    const box = section.getBoundingClientRect();
    window.scrollBy(0, box.top + (box.height * place.thousandths) / 1000 - EYE);
  }
  const place = PLACE.exec(location.hash);
  if (!place) return;
  const wanted = { index: Number(place[1]), thousandths: Number(place[2] || 0) };
  function start() {
    const section = sections()[wanted.index];
    if (!section) return;
    history.replaceState(null, "", location.pathname + location.search + "#" + section.id);
    arrive(wanted);
    // pictures, fonts and formulas above the place take their room later: scroll back to it
    window.addEventListener("load", () => arrive(wanted));
    if (document.fonts) document.fonts.ready.then(() => arrive(wanted));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
