// The table: its view drawn from the server's updates, the log of what happened, the seats and
// their clocks, the commands sent with the seq of the view they were decided on, hints.

import { Board, pointName } from "./board.js";
import { START, apply, stepNotation } from "./replay.js";
import { sentence } from "./words.js";
import {
  $, conn, fail, HURRY_S, learnNames, logged, myTurn, nameOf, nav, opponentName, other, OVER,
  phaseOf, save, seatOf, show, standings, state, WAITING, who,
} from "./session.js";

let board = null;

// A player away for a few seconds (opening the table as the match is dealt, a reconnect) is not
// worth two lines: their "not at the table" goes when they are back within BRIEF_AWAY_MS.
const BRIEF_AWAY_MS = 10_000;

const awayLines = {}; // seat -> {li, atMs} of the last "not at the table" line

export function briefAbsence(event) {
  const back = event.playerBack;
  if (!back) return false;
  const away = awayLines[back.seat || 0];
  delete awayLines[back.seat || 0];
  if (!away || Number(event.atMs || 0) - away.atMs > BRIEF_AWAY_MS) return false;
  away.li.remove();
  return true;
}

// A turn's steps, however they come (one at a time as the player plays them, or together), are
// one line: "ann moved 13/10 10/5". An undo takes its steps off the line again.
let moveLine = null; // {li, seat, steps}

export function logMove(event, view, steps) {
  if (event.turnStarted || event.turnEnded || event.turnPassed || event.gameStarted || event.turnTakenBack) {
    moveLine = null;
    return false;
  }
  const undone = event.stepsUndone;
  if (undone && moveLine && moveLine.seat === (undone.seat || 0)) {
    moveLine.steps.splice(-((undone.steps || []).length || 0));
    sayMoves(view);
    return true;
  }
  const moved = event.checkersMoved;
  if (!moved) return false;
  const seat = moved.seat || 0;
  if (!moveLine || moveLine.seat !== seat || !moveLine.li.isConnected) {
    const li = document.createElement("li");
    $("log").appendChild(li);
    moveLine = { li, seat, steps: [] };
  }
  moveLine.steps.push(...steps);
  sayMoves(view);
  return true;
}

export function sayMoves(view) {
  const { li, seat, steps } = moveLine;
  const event = { checkersMoved: { seat, steps: [...steps] } };
  li.textContent = describe(event, view);
  logged.set(li, [event, view]);
  li.hidden = steps.length === 0;
  $("log").scrollTop = $("log").scrollHeight;
}

// -- the table ---------------------------------------------------------------------------

export async function openTable(tableId, watching = false) {
  if (state.screen === "table" && state.tableId === tableId) return; // open already
  if (state.tableId && state.tableId !== tableId) conn.leave(state.tableId); // the last match's
  state.tableId = tableId;
  state.watching = watching;
  state.view = null;
  state.seenRolls = [];
  state.eventSeqs = [];
  state.moving = { seat: -1, steps: [] };
  state.ended = null;
  state.verify = "";
  state.confirming = null; // a question left open at another table is not this one's
  state.taken = false;
  state.lastMove = null;
  state.next = null; // a tournament's next match is looked for again at this one's end
  $("end-tournament").textContent = "";
  save();
  $("log").replaceChildren();
  $("end").hidden = true;
  show("table");
  nav.openChat();
  board = new Board($("board-wrap"), (from, to) => send({ move: { from, to } }));
  if (watching) await conn.watch(tableId, 0);
  else await conn.join(tableId, 0);
}

// Take the seat back from the other tab or device (which is told in turn).
export async function playHere() {
  state.taken = false;
  await conn.join(state.tableId, state.view ? Number(state.view.seq || 0) : 0);
  renderTable();
}

// "You" takes the verb's plain form: "You are back", "ann is back".
export function says(subject, you, others) {
  return subject === "You" ? you : others;
}

const HOW = {
  GAME_RESULT_SINGLE: "", GAME_RESULT_GAMMON: ", a gammon", GAME_RESULT_BACKGAMMON: ", a backgammon",
  GAME_RESULT_RESIGN: ", resigned", GAME_RESULT_DROP: ", the double dropped",
};

// The seat whose side the page's board shows (a spectator sees seat 0's).
export function viewerSeat(v) {
  return v.spectator ? 0 : seatOf(v);
}

// A step in the usual notation: from the mover's side, as the replay and the analysis write it
// ("24/18" is the opponent's 6 off their back point, whichever side this page shows).
export function stepText(step) {
  return stepNotation(step, step.hit, pointName);
}

// A point of `seat`'s numbering as this page's board numbers it (bar and off are the same).
export function onBoard(point, seat, v) {
  return seat === viewerSeat(v) || point === 0 || point === 25 ? point : 25 - point;
}

// Which of a move's steps hit, from the board the events so far leave (`sides`: the viewer's
// side and the other's, each in its own numbering, advanced here); the steps come back marked.
export function markHits(sides, moved, v) {
  const steps = (moved.steps || []).map((st) => ({ ...st }));
  if (!sides) return steps;
  const mine = (moved.seat || 0) === viewerSeat(v);
  const hits = mine ? apply(sides.own, sides.opponent, steps) : apply(sides.opponent, sides.own, steps);
  steps.forEach((st, i) => { st.hit = hits[i]; });
  return steps;
}

export function sidesOf(v) {
  const pad = (side) => { const out = (side || []).slice(); while (out.length < 25) out.push(0); return out; };
  const drawn = shown(v);
  return { own: pad(drawn.own), opponent: pad(drawn.opponent) };
}

export function describe(event, v) {
  const body = Object.keys(event).find((k) => !["eventId", "tableId", "seq", "matchId", "atMs"].includes(k));
  const e = event[body] || {};
  const seat = who(v, e.seat);
  switch (body) {
    case "gameStarted": return `Game ${e.gameNo || 1} starts${e.crawford ? " (Crawford)" : ""}`;
    case "openingRoll": {
      const [a, b] = e.dice || [];
      const starter = e.starter ?? -1;
      const start = starter < 0 ? "a tie: both roll again"
        : `${who(v, starter)} ${says(who(v, starter), "start", "starts")}`;
      return `Opening roll: ${who(v, 0)} ${a}, ${who(v, 1)} ${b}; ${start}`;
    }
    case "diceRolled": return `${seat} rolled ${(e.dice || []).join("-")}${e.auto ? " (auto)" : ""}`;
    case "checkersMoved":
      return `${seat} moved ${(e.steps || []).map((st) => stepText(st)).join(" ")}`;
    case "turnPassed": return `${seat} cannot move`;
    case "timedOut": return `${seat} ran out of time`;
    case "doubleOffered": return `${seat} doubled to ${e.cube}`;
    case "doubleTaken": return `${seat} took`;
    case "doubleDropped": return `${seat} dropped`;
    case "boostApplied": return `${seat} boosted the clock`;
    case "playerAway": {
      if (seat === "You") return null; // this page is here: it reports itself back at once
      const left = Number(e.deadlineMs || 0) && Number(event.atMs || 0)
        ? Math.round((Number(e.deadlineMs) - Number(event.atMs)) / 1000) : 0;
      return `${seat} is not at the table${left > 0 ? ` (${left} s to come back)` : ""}`;
    }
    case "playerBack": return seat === "You" ? null : `${seat} is at the table`;
    case "gameEnded": {
      const winner = who(v, e.winnerSeat);
      const points = `${e.points} point${e.points === 1 ? "" : "s"}`;
      return `${winner} ${says(winner, "win", "wins")} game ${e.gameNo || 1} (${points}${HOW[e.result] || ""})`;
    }
    case "matchEnded": {
      const winner = who(v, e.winnerSeat);
      const why = e.reason && e.reason !== "END_REASON_POINTS" ? `: ${nav.endedBy(v, e.reason, e.winnerSeat || 0)}` : "";
      return `${winner} ${says(winner, "win", "wins")} the match${why}`;
    }
    case "matchClosed": return `The match closed: ${nav.closedWhy(v, e)}`;
    case "rematchOffered": return `${seat} ${says(seat, "offer", "offers")} a rematch`;
    case "rematchAgreed": return "Rematch agreed";
    default: return null;
  }
}

// What the status line says: whose turn, to do what, in words.
export function wageredView(v) {
  return !!(v.options && v.options.profile === "wagered");
}

export function statusWords(v) {
  const mine = myTurn(v) && !v.spectator;
  const them = v.spectator ? who(v, v.decider || 0) : opponentName(v);
  switch (phaseOf(v)) {
    case "PHASE_AWAIT_ROLL": return mine ? "your turn: roll" : `${them} to roll`;
    case "PHASE_MOVING": return mine ? "your move" : `${them} is moving`;
    case "PHASE_CONFIRMING": return mine ? "your move: press Done" : `${them} is finishing the turn`;
    case "PHASE_NO_MOVE": return mine ? "you cannot move: press Got it" : `${them} cannot move`;
    case "PHASE_DOUBLE_OFFERED":
      return mine ? `${them} doubles: take or drop` : `${them} is answering the double`;
    case "PHASE_BETWEEN_GAMES": return "the next game starts in a moment";
    case "PHASE_MATCH_OVER": return "the match is over";
    case "PHASE_CLOSED": return "the match closed";
    default: return "";
  }
}

export function track(event) {
  if (event.turnStarted || event.turnEnded || event.turnPassed || event.gameStarted || event.turnTakenBack) {
    state.moving = { seat: -1, steps: [] };
  } else if (event.checkersMoved) {
    const seat = event.checkersMoved.seat || 0;
    if (state.moving.seat !== seat) state.moving = { seat, steps: [] };
    state.moving.steps.push(...(event.checkersMoved.steps || []));
  } else if (event.stepsUndone) {
    state.moving.steps.splice(-((event.stepsUndone.steps || []).length || 0));
  }
}

// The other side's last turn stays marked on the board (from, to, hits) until this player moves
// a checker (a spectator: until the other side moves), or a new game starts.
let turnSteps = { seat: -1, steps: [] };

export function lastMove(event, steps, v) {
  const me = viewerSeat(v);
  if (event.gameStarted) { state.lastMove = null; turnSteps = { seat: -1, steps: [] }; return; }
  if (event.checkersMoved) {
    const seat = event.checkersMoved.seat || 0;
    if (turnSteps.seat !== seat) turnSteps = { seat, steps: [] };
    turnSteps.steps.push(...steps);
    if (state.lastMove && (v.spectator ? state.lastMove.seat !== seat : seat === me)) state.lastMove = null;
  } else if (event.stepsUndone) {
    turnSteps.steps.splice(-((event.stepsUndone.steps || []).length || 0));
  } else if (event.turnEnded) {
    const seat = event.turnEnded.seat || 0;
    if ((v.spectator || seat !== me) && turnSteps.seat === seat && turnSteps.steps.length) {
      state.lastMove = { seat, steps: turnSteps.steps };
    }
    turnSteps = { seat: -1, steps: [] };
  }
}

export function marksOf(v) {
  const m = state.lastMove;
  if (!m) return null;
  const marks = { from: new Set(), to: new Set(), hit: new Set() };
  for (const st of m.steps) {
    const to = onBoard(st.to ?? 0, m.seat, v);
    marks.from.add(onBoard(st.from ?? 0, m.seat, v));
    marks.to.add(to);
    if (st.hit) marks.hit.add(to);
  }
  return marks;
}

// The view as the page draws it: with the steps of a turn in play that the view does not show.
export function shown(v) {
  const { seat, steps } = state.moving;
  if (seat < 0 || !steps.length || (seat === seatOf(v) && !v.spectator)) return v;
  const own = (v.own || []).slice();
  const opponent = (v.opponent || []).slice();
  while (own.length < 25) own.push(0);
  while (opponent.length < 25) opponent.push(0);
  const onOwnSide = seat === seatOf(v); // a spectator watching seat 0 move
  if (onOwnSide) apply(own, opponent, steps);
  else apply(opponent, own, steps);
  return { ...v, own, opponent };
}

export function onUpdate(tableId, update) {
  if (tableId !== state.tableId) return;
  const view = update.view || {};
  // The board before each event, for the log's hits: the page's board before this update.
  let sides = state.view ? sidesOf(state.view) : null;
  for (const event of update.events || []) {
    state.eventSeqs.push(Number(event.seq || 0));
    if (event.gameStarted) sides = { own: START.slice(), opponent: START.slice() };
    if (event.stepsUndone || event.turnTakenBack) sides = null; // known again from the next view
    const steps = event.checkersMoved ? markHits(sides, event.checkersMoved, view) : [];
    lastMove(event, steps, view);
    track(event);
    if (event.openingRoll) state.seenRolls.push(event.openingRoll.dice || []);
    if (event.diceRolled) state.seenRolls.push(event.diceRolled.dice || []);
    if (event.gameStarted && !state.ended) { /* same match */ }
    if (event.matchEnded || event.matchClosed) state.ended = event.matchEnded || event.matchClosed;
    if (event.rematchAgreed) {
      state.seenRolls = []; state.ended = null; state.verify = "";
      state.balanceBefore = null; // the first match's settlement may still be on its way
    }
    if (logMove(event, view, steps)) continue;
    if (briefAbsence(event)) continue;
    const text = describe(event, view);
    if (text) {
      const li = document.createElement("li");
      li.textContent = text;
      logged.set(li, [event, view]); // said again once the names are known
      if (event.playerAway) awayLines[event.playerAway.seat || 0] = { li, atMs: Number(event.atMs || 0) };
      $("log").appendChild(li);
      $("log").scrollTop = $("log").scrollHeight;
    }
  }
  const before = state.view;
  state.view = view;
  learnNames(view.playerIds || []);
  state.autoRoll = !!view.autoRoll;
  renderTable();
  if (OVER.has(phaseOf(view)) && !(before && OVER.has(phaseOf(before)))) {
    settling();
    if (!state.watching) nav.loadChat(); // the spectators' chat opens to the players now
  }
}

// A wagered match settles through the event stream a moment after it ends: show the balance
// again until it moves (or for 20 s).
export async function settling() {
  const tableId = state.tableId;
  let first;
  for (let i = 0; i < 20 && state.tableId === tableId; i++) {
    await nav.refreshMe();
    if (i === 0) first = state.balance;
    else if (state.balance !== first) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function send(command) {
  const v = state.view;
  if (!v) return;
  $("table-error").textContent = "";
  const id = `${Date.now().toString(36)}-${++state.commands}`;
  // Leaving holds whatever the table did meanwhile: no seq check.
  const seq = command.leave ? 0 : Number(v.seq || 0);
  try {
    await conn.command(state.tableId, id, seq, command);
  } catch (err) {
    fail("table-error", err);
  }
}

export function button(label, command, opts = {}) {
  const b = document.createElement("button");
  b.textContent = label;
  b.dataset.action = opts.action || Object.keys(command || {})[0] || label.toLowerCase();
  if (opts.aria) b.setAttribute("aria-label", opts.aria);
  b.addEventListener("click", () => (opts.run ? opts.run() : send(command)));
  return b;
}

// What the acting seat's clock does when it runs out, in words, with the seconds left: the next
// deadline when it is the acting seat's own (an auto roll, a confirm window), else its clock.
const CLOCK_WORDS = {
  DEADLINE_KIND_AUTO_ROLL: ["rolls for you in", "rolls in"],
  DEADLINE_KIND_CONFIRM: ["your turn ends in", "the turn ends in"],
  DEADLINE_KIND_NO_MOVE: ["the turn passes in", "the turn passes in"],
  DEADLINE_KIND_TURN: ["the clock plays for you in", "the clock plays in"],
  DEADLINE_KIND_ANSWER: ["counts as a drop in", "counts as a drop in"],
  DEADLINE_KIND_MOVE_TIME: ["out of time (a loss) in", "out of time in"],
};

export function clockText(v, mine) {
  const next = Number(v.deadlineMs || 0);
  const own = ["DEADLINE_KIND_AUTO_ROLL", "DEADLINE_KIND_CONFIRM", "DEADLINE_KIND_NO_MOVE"]
    .includes(v.deadlineKind) && next;
  const clock = Number(v.clockMs || 0);
  const at = own ? next : clock || next;
  if (!at) return "";
  const kind = own || !clock ? v.deadlineKind : v.phase === "PHASE_DOUBLE_OFFERED"
    ? "DEADLINE_KIND_ANSWER" : (v.options || {}).profile === "scored"
      ? "DEADLINE_KIND_MOVE_TIME" : "DEADLINE_KIND_TURN";
  const words = CLOCK_WORDS[kind];
  if (!words) return "";
  const left = Math.max(0, Math.ceil((at - Date.now()) / 1000));
  return ` · ${words[mine ? 0 : 1]} ${left} s`;
}

// An away seat with a window running: when it loses the match (I-41, I-9, I-18).
export function awayText(v, seat) {
  if (!(v.away || [])[seat]) return "";
  const at = v.deadlineKind === "DEADLINE_KIND_AWAY" ? Number(v.deadlineMs || 0) : 0;
  if (!at) return " · away";
  return ` · away: loses in ${Math.max(0, Math.ceil((at - Date.now()) / 1000))} s unless back`;
}

// A seat's box: the player's name opening their profile, then what the seat shows. Redrawn twice
// a second (the clocks), so the name's button is kept while it names the same player.
export function seatName(box, playerId, name, rest) {
  let button = box.querySelector("button.who");
  if (!playerId) { box.textContent = name + rest; return; }
  if (!button || button.dataset.profile !== playerId || button.textContent !== name) {
    button = standings.nameButton(playerId, name);
  }
  let text = box.querySelector("span.rest");
  if (!text) { text = document.createElement("span"); text.className = "rest"; }
  text.textContent = rest;
  if (box.firstChild !== button || box.lastChild !== text || box.childNodes.length !== 2) box.replaceChildren(button, text);
}

export function renderSeats() {
  const v = state.view;
  if (!v) return;
  const acting = v.decider || 0;
  const pips = v.pips || [];
  const me = seatOf(v);
  const mine = v.spectator ? nameOf((v.playerIds || [])[0]) : "You";
  const live = !WAITING.has(phaseOf(v));
  $("seat-me").textContent = `${mine} · ${pips[0] || 0} pips`
    + `${acting === me && live ? clockText(v, !v.spectator) : ""}`;
  seatName($("seat-them"), (v.playerIds || [])[v.spectator ? 1 : other(v)], opponentName(v),
    ` · ${pips[1] || 0} pips${live ? awayText(v, other(v)) : ""}${acting !== me && live ? clockText(v, false) : ""}`);
  $("seat-me").classList.toggle("acting", acting === me);
  $("seat-them").classList.toggle("acting", acting !== me);
  // The last seconds look like it: the acting seat's box turns urgent.
  const due = Number(v.clockMs || 0) || Number(v.deadlineMs || 0);
  const left = due ? (due - Date.now()) / 1000 : Infinity;
  const hurry = !WAITING.has(phaseOf(v)) && left <= HURRY_S;
  $("seat-me").classList.toggle("hurry", hurry && acting === me);
  $("seat-them").classList.toggle("hurry", hurry && acting !== me);
}

export function renderTable() {
  const v = state.view;
  if (!v) return;
  const hint = $("hint");
  if (hint.dataset.seq !== String(v.seq || 0)) { hint.hidden = true; hint.replaceChildren(); }
  board.render(shown(v), marksOf(v));
  renderSeats();
  const score = v.score || [];
  const me = seatOf(v);
  const cube = v.cube && v.cube > 1 ? ` · cube ${v.cube}` : "";
  const scores = v.spectator
    ? `${who(v, 0)} ${score[0] || 0}, ${who(v, 1)} ${score[1] || 0}`
    : `You ${score[me] || 0}, ${opponentName(v)} ${score[1 - me] || 0}`;
  const colour = v.spectator ? ` · ${who(v, 0)} plays white` : " · you play white";
  const stakes = wageredView(v) && nav.stakeOf(v) ? ` · bet ${v.options.bet}, ${nav.stakeOf(v)} each at stake` : "";
  $("match-info").textContent = `${scores} (match to ${v.matchLength || 1})`
    + ` · game ${v.gameNo || 1}${v.crawford ? " (Crawford)" : ""}${cube}${stakes}${colour}`
    + ` · ${statusWords(v)}${v.spectator ? " · watching" : ""}`;
  const actions = $("actions");
  actions.replaceChildren();
  if (state.taken) {
    const note = document.createElement("p");
    note.id = "taken-note";
    note.className = "confirm";
    note.setAttribute("role", "alert");
    note.textContent = sentence({ code: "SEAT_TAKEN" });
    actions.append(note, button("Play here", null, { action: "playHere", run: playHere }));
    return;
  }
  if (v.spectator) {
    actions.appendChild(button("Stop watching", null, { action: "stopWatching", run: nav.backToLobby }));
    nav.renderEnd(v);
    return;
  }
  const mine = myTurn(v);
  const p = phaseOf(v);
  const wagered = wageredView(v);
  if (mine && p === "PHASE_AWAIT_ROLL") actions.appendChild(button("Roll", { roll: {} }));
  if (v.canDouble) actions.appendChild(button("Double", { offerDouble: {} }));
  if (mine && p === "PHASE_DOUBLE_OFFERED") {
    // wagered: what each answer risks, in diamonds (the stake doubles with the cube).
    const stake = nav.stakeOf(v);
    const money = wagered && stake;
    actions.appendChild(button(money ? `Take: play on for ${stake * 2} each` : "Take", { take: {} },
      { action: "take" }));
    actions.appendChild(button(money ? `Drop: lose ${stake}` : "Drop", { drop: {} }, { action: "drop" }));
  }
  if (mine && (p === "PHASE_MOVING" || p === "PHASE_CONFIRMING") && (v.steps || []).length) {
    actions.appendChild(button("Undo", { undo: {} }));
  }
  if (mine && p === "PHASE_MOVING" && !(v.steps || []).length && hintsAllowed(v)) {
    actions.appendChild(button("Hint", null, { action: "hint", run: askHint,
      aria: "Show the best plays of this roll" }));
  }
  if (v.canConfirm) actions.appendChild(button(p === "PHASE_NO_MOVE" ? "Got it" : "Done", { confirm: {} }));
  if (wagered && mine && (v.boostsLeft || 0) > 0 && Number(v.deadlineMs || 0)) {
    actions.appendChild(button("Boost: +10 s for 10 diamonds", { boost: {} },
      { action: "boost", aria: "Boost the clock by 10 seconds for 10 diamonds" }));
  }
  if (state.confirming && !OVER.has(p)) {
    nav.askToConfirm(v, actions);
    nav.renderEnd(v);
    return;
  }
  // Resign gives the game (I-5): wagered and casual, against the computer too (W-6); scored
  // play has none (RULES.md: leave).
  if ((v.options || {}).profile !== "scored" && !WAITING.has(p)) {
    actions.appendChild(button("Resign game", null, { action: "resign", run: () => nav.confirmFirst("resign"),
      aria: "Resign this game" }));
  }
  if (wagered && !OVER.has(p)) {
    const auto = button(v.autoRoll ? "Auto roll: on" : "Auto roll: off", { setAutoRoll: { on: !v.autoRoll } }, { action: "autoRoll" });
    auto.setAttribute("aria-pressed", String(!!v.autoRoll));
    actions.appendChild(auto);
  }
  if (!OVER.has(p)) {
    actions.appendChild(button("Leave", null, { action: "leave", run: () => nav.confirmFirst("leave") }));
  }
  nav.renderEnd(v);
}

// -- hints: the best plays of the roll, where the rules allow help (Play vs CPU, scored test
// games; never wagered or rated play: the server refuses them too) ----------------------------

const CPU_LEVELS = new Set(["easy", "normal", "expert"]);

export function hintsAllowed(v) {
  const o = v.options || {};
  if (o.profile === "wagered" || o.rated) return false;
  return CPU_LEVELS.has(o.level) || (o.profile === "scored" && !!o.testGame);
}

export async function askHint() {
  const v = state.view;
  const shown = $("hint");
  try {
    const reply = await conn.call("GetHint", { tableId: state.tableId, limit: 3 });
    if (!state.view || Number(reply.seq || 0) !== Number(state.view.seq || 0)) return; // moved on
    const items = (reply.plays || []).map((play) => {
      const li = document.createElement("li");
      const equity = Number(play.equity || 0);
      const win = (play.probabilities || []).slice(0, 3).reduce((a, b) => a + Number(b || 0), 0);
      li.textContent = `${play.notation} (${equity >= 0 ? "+" : ""}${equity.toFixed(3)},`
        + ` ${Math.round(100 * win)}% to win)`;
      return li;
    });
    shown.replaceChildren(...items);
    shown.dataset.seq = String(reply.seq || 0);
    shown.hidden = items.length === 0;
  } catch (err) {
    fail("table-error", err, $("actions"));
  }
}
