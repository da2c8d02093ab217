// Sphinx's search page shows under each result the text of the page around the words searched
// for. It reads that text from the page's [role="main"], which in this theme also holds the
// article's header: the download buttons and the colour-mode menu, hidden until opened. A result
// whose words are near the top of a page (or not in its text at all) then starts with
// "System Settings Light Dark". The text is read from the article alone.
(() => {
  function readArticleOnly() {
    if (typeof Search === "undefined" || !Search.htmlToText || Search.htmlToText.articleOnly) {
      return;
    }
    const pageText = Search.htmlToText;
    const articleText = (htmlString, anchor) => {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      const main = page.querySelector('[role="main"]');
      const article = main && main.querySelector("article");
      if (article) main.replaceChildren(article);
      return pageText(page.documentElement.outerHTML, anchor);
    };
    articleText.articleOnly = true;
    Search.htmlToText = articleText;
  }
  readArticleOnly(); // searchtools.js may come before or after this script
  document.addEventListener("DOMContentLoaded", readArticleOnly);
})();
