// The page's state and its connection: what every screen reads (the session, the table it is
// at, the players' names), the one Connection to the gateway, the screens' shared helpers, and
// `nav`: how one screen calls another (app.js fills it), so no screen imports another.
// Everything the page shows comes from the server's pushed updates (docs/protocol.md); the session
// (token, table) lives in sessionStorage, so a reload resumes the table where it stood.

import { ApiError, Connection } from "./api.js";
import { Standings } from "./standings.js";
import { SILENT, sentence } from "./words.js";

// How one screen calls another: app.js fills it with every screen's functions before the start.
export const nav = {};

export const $ = (id) => document.getElementById(id);

export const LIVE_REFRESH_MS = 5000;

export const HURRY_S = 10; // a clock this close to running out is shown urgent

export const OVER = new Set(["PHASE_MATCH_OVER", "PHASE_CLOSED"]);

export const WAITING = new Set(["PHASE_BETWEEN_GAMES", ...OVER]);

export const REASONS = {
  END_REASON_POINTS: "on points", END_REASON_LEFT: "a player left",
  END_REASON_AWAY: "a player stayed away", END_REASON_MOVE_TIME: "out of move time",
  END_REASON_DOUBLER_LEFT: "the doubler left", END_REASON_BOTH_AWAY: "both players away",
  END_REASON_ASYNC_EXPIRED: "the turn-based clock ran out", END_REASON_ABANDONED: "abandoned",
  END_REASON_OPERATOR_CLOSED: "closed by an operator: every stake returned",
};

export const state = {
  screen: "login",
  playerId: "",
  name: "",
  tableId: "",
  table: null, // the lobby's table
  view: null,
  eventSeqs: [], // the seq of every event received, in order (each must come once)
  seenRolls: [], // every roll this client saw, in order: checked against the revealed seed
  ended: null, // the match_ended / match_closed event
  balance: null,
  trophies: null,
  autoRoll: false,
  verify: "",
  commands: 0,
  quick: false, // waiting for a quick match
  balanceBefore: null, // diamonds before this table's deal (null: not seen, e.g. after a reload)
  confirming: null, // "resign" or "leave": asked, with what it costs, before it is sent
  watching: false, // a spectator of this table (I-35): read-only
  taken: false, // this seat was opened in another tab or device, which plays it now
  // The single steps of the turn in play by a seat whose view this page does not get (the
  // opponent's, or either for a spectator): the server's view shows the turn's start until it
  // ends, so they are drawn on top of it as they happen.
  moving: { seat: -1, steps: [] },
  names: {}, // player id -> display name
  chatTitle: "Chat", // the chat's heading at this table (players' or spectators')
  chatUnread: 0, // messages come while the chat is folded
  friends: null, // the Friends stream's last FriendsView
  tournamentId: "", // the tournament this player is in: its next match opens by itself
  bracketOf: "", // the tournament whose bracket the lobby shows
  opened: new Set(), // tournament tables opened by themselves once (not again after the match)
  guest: false, // a guest has no account: nothing to rename or save
  accountNote: "", // said once in the lobby's Account card (this device plays another name)
  email: "", // the email the account signs in with ("" before one is saved)
  lastMove: null, // the other side's last turn: {seat, steps (the mover's numbering, with hit)}
  tournamentOf: {}, // table id -> its tournament id ("" for none), asked once per table
  tournamentInfo: {}, // tournament id -> the tournament (its name and buy-in), for costOf
  learning: new Set(), // tables whose tournament is being asked for
  next: null, // the end panel's tournament: {tournamentId, tableId, opensAt} of the next match
};

export const conn = new Connection(
  `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`,
  {
    onUpdate: (...a) => nav.onUpdate(...a),
    onStatus,
    onChat: (...a) => nav.onChat(...a),
    onFriends: (...a) => nav.onFriends(...a),
  },
);

export const standings = new Standings({
  conn, $, nameOf, learnNames, show, fail, me: () => state.playerId, openReplay: (m) => nav.openReplay(m),
  following: (playerId) => nav.following(playerId),
  errorWhere: () => ({ table: "table-error", standings: "standings-error" })[state.screen] || "lobby-error",
});

// -- helpers -----------------------------------------------------------------------------

export function show(screen) {
  state.screen = screen;
  for (const id of ["login", "lobby", "waiting", "table", "replay", "standings"]) $(id).hidden = id !== screen;
}

export function save() {
  sessionStorage.setItem("bg", JSON.stringify({
    token: conn.token, playerId: state.playerId, name: state.name, tableId: state.tableId,
    watching: state.watching, guest: state.guest,
  }));
}

// An error as a sentence (services/gateway/web/words.js), where the player is looking: next to
// `near` (the control that caused it) when given. The code stays on the element for tests.
export function fail(where, err, near = null) {
  const shown = $(where);
  if (err instanceof ApiError && SILENT.has(err.code)) return;
  shown.textContent = err instanceof ApiError ? sentence(err) : String(err.message || err);
  shown.dataset.code = err instanceof ApiError ? err.code : "";
  if (near) near.insertAdjacentElement("afterend", shown);
  shown.scrollIntoView({ block: "nearest" });
}

export function onStatus(status, err, tableId = "") {
  $("net").textContent = status === "online" ? "" : status === "offline" ? "reconnecting…" : "";
  $("net").className = "net " + status;
  if (err && err.code === "SEAT_TAKEN") {
    // The newest tab or device plays the seat; this one says so and offers to take it back.
    if (tableId === state.tableId) { state.taken = true; nav.renderTable(); }
    return;
  }
  if (err) fail(state.screen === "table" ? "table-error" : "lobby-error", err);
}

export function seatOf(v) { return v.seat || 0; }

export function other(v) { return 1 - seatOf(v); }

export function nameOf(id) {
  if (!id) return "Opponent";
  if (state.names[id]) return state.names[id];
  if (id.startsWith("cpu-")) return `CPU (${id.split("-")[1]})`;
  return `Player ${id.slice(1, 7)}`;
}

export function opponentName(v) { return nameOf((v.playerIds || [])[other(v)]); }

export function who(v, seat) {
  if ((seat || 0) === seatOf(v) && !v.spectator) return "You";
  return nameOf((v.playerIds || [])[seat || 0]);
}

// Names of the players in `ids` not known yet, asked once.
export async function learnNames(ids) {
  const missing = [...new Set(ids.filter((id) => id && !(id in state.names)))];
  if (!missing.length) return;
  for (const id of missing) state.names[id] = state.names[id] || ""; // asked: not again
  try {
    const reply = await conn.call("GetNames", { playerIds: missing.slice(0, 16) });
    Object.assign(state.names, reply.names || {});
  } catch { /* ids stand in */ }
  // Lines written before the names came (a reload's backlog, a spectator's first word) name
  // the players now.
  for (const li of $("log").children) {
    const said = logged.get(li);
    if (said) li.textContent = nav.describe(said[0], said[1]) || li.textContent;
  }
  for (const li of $("chat-log").children) {
    const who = li.querySelector(".who");
    if (who && li.dataset.sender !== state.playerId) who.textContent = nameOf(li.dataset.sender);
  }
  if (state.view) nav.renderTable();
}

export const logged = new WeakMap(); // a log line -> the event and view it tells

export function phaseOf(v) { return v.phase || "PHASE_UNSPECIFIED"; }

export function myTurn(v) {
  return (v.decider || 0) === seatOf(v) && !WAITING.has(phaseOf(v));
}

export function listButton(label, aria, data, run) {
  const b = document.createElement("button");
  b.textContent = label;
  b.setAttribute("aria-label", aria);
  Object.assign(b.dataset, data);
  b.addEventListener("click", run);
  return b;
}

// A lobby list: rows of [text, buttons], or one line saying it is empty. The text may be a list
// of strings and elements (a name that opens its player's profile).
export function fillList(id, empty, rows) {
  const items = rows.map(([text, buttons]) => {
    const li = document.createElement("li");
    const said = document.createElement("span");
    said.className = "said";
    said.append(...(Array.isArray(text) ? text : [text]));
    const acts = document.createElement("span");
    acts.className = "acts";
    acts.append(...buttons);
    li.append(said, acts);
    return li;
  });
  if (!items.length) {
    const li = document.createElement("li");
    li.textContent = empty;
    items.push(li);
  }
  $(id).replaceChildren(...items);
}

// A place in words (1st, 2nd, 3rd, 4th): the tournaments' list and the end panel.
export const ORDINAL = (n) => `${n}${n === 1 ? "st" : n === 2 ? "nd" : n === 3 ? "rd" : "th"}`;
