// The board as SVG, from the viewer's side: home board bottom right, points 1..24 in the
// viewer's numbering, the bar (25) in the middle, the off tray (0) at the right. Only the
// points the server lit (view.lit) can be picked, and only their lit destinations are targets:
// the client never decides what is legal. Click or tap a lit checker then a target, drag one
// onto a target, or use the keyboard (Tab to a point, Enter or Space).

const NS = "http://www.w3.org/2000/svg";
const PW = 62; // point width
const MARGIN = 20;
const BAR = 60;
const TRAY = 80;
const H = 700;
const TRI = 280; // point height
const R = 27; // checker radius
const WIDTH = MARGIN * 2 + PW * 12 + BAR + TRAY + 20;
const BAR_X = MARGIN + PW * 6;
const TRAY_X = MARGIN + PW * 12 + BAR + 20;
const CUBE = 44; // the cube's side, on the bar
const BAR_GAP = 52; // from the bar's middle to its first checker: room for the centred cube

function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}

// Column 0..11 left to right, and whether the point is on the top row.
function place(point) {
  if (point >= 13) return { col: point - 13, top: true };
  return { col: 12 - point, top: false };
}

function columnX(col) {
  return MARGIN + col * PW + (col >= 6 ? BAR : 0) + PW / 2;
}

const PIPS = { 1: [[0, 0]], 2: [[-1, -1], [1, 1]], 3: [[-1, -1], [0, 0], [1, 1]],
  4: [[-1, -1], [1, -1], [-1, 1], [1, 1]], 5: [[-1, -1], [1, -1], [0, 0], [-1, 1], [1, 1]],
  6: [[-1, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [1, 1]] };

export function pointName(p) {
  return p === 25 ? "bar" : p === 0 ? "off" : String(p);
}

export class Board {
  constructor(container, onMove) {
    this.onMove = onMove; // (from, to) => void
    this.svg = el("svg", { viewBox: `0 0 ${WIDTH} ${H}`, role: "group", "aria-label": "Board" });
    container.replaceChildren(this.svg);
    this.view = null;
    this.selected = null;
    this.dragFrom = null;
    this.svg.addEventListener("pointerdown", (e) => this._down(e));
    this.svg.addEventListener("pointerup", (e) => this._up(e));
    this.svg.addEventListener("click", (e) => this._click(e));
    this.lastClick = null; // {point, at}: a second click on it soon after is a double click
    this.svg.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        this._pick(this._pointOf(e.target));
      } else if (e.key === "Escape") {
        this._select(null);
      }
    });
  }

  // lit: {from -> [to, ...]} for the viewer's movable checkers.
  _lit() {
    const out = new Map();
    for (const lit of (this.view && this.view.lit) || []) out.set(lit.from ?? 0, lit.to || []);
    return out;
  }

  // marks: the other side's last turn in this board's numbering, {from, to, hit} (Sets), or null.
  render(view, marks = null) {
    const keepSelection = this.view && view.seq === this.view.seq;
    this.view = view;
    this.marks = marks;
    if (!keepSelection || !this._lit().has(this.selected)) this.selected = null;
    this._draw();
  }

  _select(point) {
    this.selected = point;
    this._draw();
    const focus = this.svg.querySelector(point === null ? ".movable" : ".target");
    if (focus) focus.focus();
  }

  _pointOf(node) {
    const g = node && node.closest ? node.closest("[data-point]") : null;
    return g ? Number(g.dataset.point) : null;
  }

  _pick(point) {
    if (point === null) return;
    const lit = this._lit();
    if (this.selected !== null && (lit.get(this.selected) || []).includes(point)) {
      const from = this.selected;
      this.selected = null;
      this.onMove(from, point);
    } else if (lit.has(point) && point !== this.selected) {
      this._select(point);
    } else {
      this._select(null);
    }
  }

  // A double click (or tap) on a movable checker moves it at once: by the higher die, as
  // players expect, or the only way it can go.
  _quick(from) {
    const dests = this._lit().get(from);
    if (!dests || !dests.length) return;
    const to = dests.reduce((far, d) => (from - d > from - far ? d : far));
    this.selected = null;
    this.onMove(from, to);
  }

  _click(e) {
    if (this.dragFrom === "done") { this.dragFrom = null; return; } // ended as a drag
    const point = this._pointOf(e.target);
    const at = performance.now();
    const again = this.lastClick && this.lastClick.point === point && at - this.lastClick.at < 450;
    this.lastClick = again ? null : { point, at };
    // Counted here, not by the dblclick event: the first click redraws the board under it.
    if (again && this._lit().has(point)) this._quick(point);
    else this._pick(point);
  }

  _down(e) {
    const point = this._pointOf(e.target);
    this.dragFrom = this._lit().has(point) ? point : null;
  }

  _up(e) {
    const from = this.dragFrom;
    if (from === null) return;
    const under = document.elementFromPoint(e.clientX, e.clientY);
    const to = this._pointOf(under);
    if (to !== null && to !== from && (this._lit().get(from) || []).includes(to)) {
      this.dragFrom = "done";
      this.selected = null;
      this.onMove(from, to);
    } else {
      this.dragFrom = null;
    }
  }

  _draw() {
    const v = this.view;
    const svg = this.svg;
    svg.replaceChildren();
    el("rect", { x: 0, y: 0, width: WIDTH, height: H, fill: "#6b4226" }, svg);
    el("rect", { x: MARGIN, y: MARGIN, width: PW * 12 + BAR, height: H - 2 * MARGIN, fill: "#1f5f3f" }, svg);
    el("rect", { x: BAR_X, y: MARGIN, width: BAR, height: H - 2 * MARGIN, fill: "#4a2e1a" }, svg);
    if (!v) return;
    const own = v.own || [];
    const opp = v.opponent || [];
    const lit = this._lit();
    const targets = new Set(this.selected !== null ? lit.get(this.selected) || [] : []);
    for (let p = 1; p <= 24; p++) {
      const mine = own[p - 1] || 0;
      const theirs = opp[24 - p] || 0;
      const { col, top } = place(p);
      const x = columnX(col);
      const classes = ["point"];
      const marks = this.marks;
      const last = marks ? [marks.from.has(p) ? "from" : "", marks.to.has(p) ? "to" : ""].filter(Boolean) : [];
      for (const l of last) classes.push(`last-${l}`);
      if (marks && marks.hit.has(p)) classes.push("last-hit");
      if (lit.has(p)) classes.push("movable");
      if (this.selected === p) classes.push("selected");
      if (targets.has(p)) classes.push("target");
      const label = `Point ${p}: ${mine ? `${mine} yours` : theirs ? `${theirs} theirs` : "empty"}`
        + (lit.has(p) ? ", can move" : "") + (targets.has(p) ? ", move here" : "")
        + (last.length ? `, last move ${last.join(" and ")}${marks.hit.has(p) ? ", a hit" : ""}` : "");
      const g = el("g", { class: classes.join(" "), "data-point": p, "aria-label": label }, svg);
      if (last.length) g.setAttribute("data-last", last.join(" "));
      if (lit.has(p) || targets.has(p)) {
        g.setAttribute("tabindex", "0");
        g.setAttribute("role", "button");
      }
      if (lit.has(p)) g.setAttribute("data-movable", "");
      if (targets.has(p)) g.setAttribute("data-target", "");
      const y0 = top ? MARGIN : H - MARGIN;
      const tip = top ? MARGIN + TRI : H - MARGIN - TRI;
      const fill = p % 2 ? "#e8d5a9" : "#8a2b1d";
      el("rect", { x: x - PW / 2, y: top ? MARGIN : H - MARGIN - TRI, width: PW, height: TRI, fill: "transparent" }, g);
      el("polygon", { class: "tri", points: `${x - PW / 2},${y0} ${x + PW / 2},${y0} ${x},${tip}`, fill }, g);
      this._stack(g, x, top, mine ? mine : theirs, mine ? "mine" : "theirs");
      el("text", { class: "label", x, y: top ? MARGIN - 4 : H - 4 }, g).textContent = String(p);
    }
    // The bar: the viewer's checkers in the bottom half, the opponent's in the top half.
    const barX = BAR_X + BAR / 2;
    const myBar = el("g", { class: "point bar" + (lit.has(25) ? " movable" : "") + (this.selected === 25 ? " selected" : ""),
      "data-point": 25, "aria-label": `Bar: ${own[24] || 0} yours` }, svg);
    if (lit.has(25)) {
      myBar.setAttribute("tabindex", "0");
      myBar.setAttribute("role", "button");
      myBar.setAttribute("data-movable", "");
    }
    el("rect", { class: "tri", x: BAR_X, y: H / 2, width: BAR, height: H / 2 - MARGIN, fill: "transparent" }, myBar);
    this._stack(myBar, barX, false, own[24] || 0, "mine", H / 2 + BAR_GAP);
    const theirBar = el("g", { class: "bar", "aria-label": `Bar: ${opp[24] || 0} theirs` }, svg);
    this._stack(theirBar, barX, true, opp[24] || 0, "theirs", H / 2 - BAR_GAP);
    // The off tray: the viewer's borne-off checkers at the bottom (a target when bearing off).
    const offMine = 15 - own.reduce((a, b) => a + (b || 0), 0);
    const offTheirs = 15 - opp.reduce((a, b) => a + (b || 0), 0);
    const tray = el("g", { class: "tray" + (targets.has(0) ? " target" : ""), "data-point": 0,
      "aria-label": `Borne off: ${offMine} yours, ${offTheirs} theirs` + (targets.has(0) ? ", bear off here" : "") }, svg);
    if (targets.has(0)) {
      tray.setAttribute("tabindex", "0");
      tray.setAttribute("role", "button");
      tray.setAttribute("data-target", "");
    }
    el("rect", { x: TRAY_X, y: MARGIN, width: TRAY - 20, height: H - 2 * MARGIN, fill: "#3b2414" }, tray);
    el("text", { class: "label", x: TRAY_X + 30, y: H - MARGIN - 10 }, tray).textContent = `off ${offMine}`;
    el("text", { class: "label", x: TRAY_X + 30, y: MARGIN + 20 }, tray).textContent = `off ${offTheirs}`;
    this._dice(v);
    this._cube(v);
  }

  _stack(parent, x, top, count, side, start = null) {
    const dir = top ? 1 : -1;
    const first = start ?? (top ? MARGIN + R : H - MARGIN - R);
    for (let i = 0; i < Math.min(count, 5); i++) {
      el("circle", { class: `checker ${side}`, cx: x, cy: first + dir * i * 2 * R, r: R - 1 }, parent);
    }
    if (count > 5) {
      const t = el("text", { class: `count ${side}`, x, y: first + dir * 4 * 2 * R }, parent);
      t.textContent = String(count);
    }
  }

  _dice(v) {
    const dice = v.dice || [];
    if (!dice.length) return;
    const mine = (v.turn || 0) === (v.seat || 0);
    const cx = mine ? BAR_X + BAR + PW * 3 : MARGIN + PW * 3;
    const used = (v.steps || []).length;
    const values = dice[0] === dice[1] ? [dice[0], dice[0], dice[0], dice[0]] : dice;
    const g = el("g", { class: "dice", role: "img", "aria-label": `Dice ${dice.join(" and ")}` }, this.svg);
    values.forEach((d, i) => {
      const x = cx + (i - (values.length - 1) / 2) * 60;
      const die = el("g", { class: "die" + (i < used ? " used" : ""), "data-die": d }, g);
      el("rect", { x: x - 24, y: H / 2 - 24, width: 48, height: 48, rx: 8 }, die);
      for (const [dx, dy] of PIPS[d] || []) el("circle", { cx: x + dx * 12, cy: H / 2 + dy * 12, r: 5 }, die);
    });
  }

  // The cube sits on the bar, never in the tray (whose counts and bear-off target it would
  // cover): in the middle while nobody owns it (showing 64, as on a real board), at its owner's
  // end of the bar once taken, and while a double is offered the offered value waits at the
  // end of the player who must answer. It takes no clicks: whatever is under it still does.
  _cube(v) {
    const value = v.cube || 1;
    const owner = v.cubeOwner ?? 0; // proto3 JSON omits zeros: missing is seat 0
    if (!(v.options && (v.options.profile === "wagered" || v.options.cube)) && value === 1) return;
    const me = v.seat || 0;
    const offered = v.phase === "PHASE_DOUBLE_OFFERED";
    const mineAnswers = offered && (v.decider || 0) === me;
    const at = offered ? (mineAnswers ? "bottom" : "top")
      : owner === -1 ? "middle" : owner === me ? "bottom" : "top";
    const y = at === "middle" ? H / 2 : at === "bottom" ? H - MARGIN - CUBE / 2 - 4 : MARGIN + CUBE / 2 + 4;
    const shown = offered ? value * 2 : owner === -1 ? 64 : value;
    const owned = offered ? `offered at ${shown}` : owner === -1 ? "centred" : owner === me ? "yours" : "theirs";
    const g = el("g", { class: "cube" + (offered ? " offered" : ""), role: "img",
      "aria-label": `Cube ${offered ? value : shown}, ${owned}`, "data-cube": at }, this.svg);
    const x = BAR_X + BAR / 2;
    el("rect", { x: x - CUBE / 2, y: y - CUBE / 2, width: CUBE, height: CUBE, rx: 6 }, g);
    el("text", { x, y }, g).textContent = String(shown);
  }
}
