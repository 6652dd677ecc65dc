// Goodput review pages: small progressive enhancement; every page works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // filter the investigations table as you type
  const filter = document.getElementById("filter");
  const table = document.getElementById("investigations");
  if (filter && table) {
    filter.hidden = false;
    filter.addEventListener("input", () => {
      const q = filter.value.toLowerCase();
      for (const tr of table.tBodies[0].rows) {
        tr.classList.toggle("hidden", q !== "" && !tr.textContent.toLowerCase().includes(q));
      }
    });
  }
  // ask once more before an approval, showing the exact command
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (ev) => {
      if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
    });
  }
  // remember the approver's name in this browser (never sent anywhere but these forms)
  const names = document.querySelectorAll("input[name=approver]");
  const saved = window.localStorage.getItem("goodput.approver");
  for (const input of names) {
    if (saved && !input.value) input.value = saved;
    input.addEventListener("change", () =>
      window.localStorage.setItem("goodput.approver", input.value));
  }
  // scroll the highlighted source line into view
  const hit = document.querySelector("pre.source .hit");
  if (hit) hit.scrollIntoView({ block: "center" });
});
