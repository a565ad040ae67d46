// What a player must reach without scrolling (issue 27, item 3): the wrongs found, [] if none.
// Evaluated in the page by tests/cluster/test_clients.py.
(() => {
  const vw = innerWidth, vh = innerHeight, wrong = [];
  const box = (el) => el.getBoundingClientRect();
  const inside = (el, name) => {
    const r = box(el);
    if (r.width === 0 || r.height === 0) return;
    if (r.left < -1 || r.top < -1 || r.right > vw + 1 || r.bottom > vh + 1) {
      wrong.push(`${name} [${Math.round(r.left)},${Math.round(r.top)},${Math.round(r.right)},${Math.round(r.bottom)}] outside ${vw}x${vh}`);
    }
  };
  const overlaps = (a, b) => !(a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top);
  if (document.documentElement.scrollHeight > vh + 1) wrong.push(`the page scrolls: ${document.documentElement.scrollHeight} px`);
  const screen = bg.state().screen;
  const board = document.querySelector(screen === "replay" ? "#replay-board svg" : "#board-wrap svg");
  if (board) inside(board, "board");
  for (const id of ["match-info", "seat-me", "seat-them"]) {
    if (screen === "table") inside(document.getElementById(id), id);
  }
  const buttons = [...document.querySelectorAll(`#${screen} button`)].filter((b) => !b.disabled && b.offsetParent !== null);
  for (const b of buttons) inside(b, `button "${b.textContent}"`);
  const tray = document.querySelector(".tray rect");
  const guarded = [...document.querySelectorAll(".tray text")].map(box);
  if (tray) guarded.push(box(tray));
  const end = document.getElementById("end");
  const onTop = [...buttons.map(box), ...[...document.querySelectorAll(".cube")].map(box)];
  if (screen === "table" && !end.hidden) {
    onTop.push(box(end));
    if (overlaps(box(end), box(board))) wrong.push("the end dialog covers the board");
  }
  for (const r of onTop) for (const g of guarded) if (overlaps(r, g)) wrong.push(`something covers the tray at ${Math.round(g.left)},${Math.round(g.top)}`);
  return wrong;
})
