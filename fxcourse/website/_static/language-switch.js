// The language switch keeps the reader's place. Both editions have the same sections in the same
// order, but their anchors differ (they come from the headings' words), so the switch carries the
// section's position (#fxcourse-section-N) and the other page turns it back into its own anchor.
(() => {
  const PLACE = /^#fxcourse-section-(\d+)$/;
  const sections = () => Array.from(document.querySelectorAll("article section[id]"));

  function currentSection(all) {
    const named = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (named) {
      const holder = named.closest("section[id]");
      if (holder) return all.indexOf(holder);
    }
    let index = -1;
    all.forEach((section, i) => {
      if (section.getBoundingClientRect().top <= 80) index = i;
    });
    return index;
  }

  document.addEventListener("click", (event) => {
    const link = event.target.closest(".fxcourse-language a");
    if (!link) return;
    const index = currentSection(sections());
    if (index > 0) link.href = link.href.split("#")[0] + "#fxcourse-section-" + index;
  });

  function arrive() {
    const place = PLACE.exec(location.hash);
    if (!place) return;
    const section = sections()[Number(place[1])];
    if (!section) return;
    history.replaceState(null, "", "#" + section.id);
    section.scrollIntoView();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", arrive);
  else arrive();
})();
