// The browser client: login, lobby, waiting for a deal, the table, the end of the match.
// Everything it shows comes from the server's pushed updates (docs/protocol.md); it sends
// commands with the seq of the view they were decided on. The session (token, table) lives in
// sessionStorage, so a reload resumes the table where it stood.

import { ApiError, Connection } from "./api.js";
import { Board, pointName } from "./board.js";
import { START, after, apply, frames, stepNotation } from "./replay.js";
import { Standings } from "./standings.js";
import { verifyRolls } from "./verify.js";
import { ERROR_RATE_HELP, SAYS, SILENT, closedSentence, sentence, standingAmong } from "./words.js";

const $ = (id) => document.getElementById(id);
const LIVE_REFRESH_MS = 5000;
const HURRY_S = 10; // a clock this close to running out is shown urgent
const OVER = new Set(["PHASE_MATCH_OVER", "PHASE_CLOSED"]);
const WAITING = new Set(["PHASE_BETWEEN_GAMES", ...OVER]);
const REASONS = {
  END_REASON_POINTS: "on points", END_REASON_LEFT: "a player left",
  END_REASON_AWAY: "a player stayed away", END_REASON_MOVE_TIME: "out of move time",
  END_REASON_DOUBLER_LEFT: "the doubler left", END_REASON_BOTH_AWAY: "both players away",
  END_REASON_ASYNC_EXPIRED: "the turn-based clock ran out", END_REASON_ABANDONED: "abandoned",
  END_REASON_OPERATOR_CLOSED: "closed by an operator: every stake returned",
};

const state = {
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

const conn = new Connection(
  `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`,
  { onUpdate, onStatus, onChat, onFriends },
);
let board = null;
const standings = new Standings({
  conn, $, nameOf, learnNames, show, fail, me: () => state.playerId, openReplay: (m) => openReplay(m),
  following: (playerId) => following(playerId),
  errorWhere: () => ({ table: "table-error", standings: "standings-error" })[state.screen] || "lobby-error",
});

// -- helpers -----------------------------------------------------------------------------

function show(screen) {
  state.screen = screen;
  for (const id of ["login", "lobby", "waiting", "table", "replay", "standings"]) $(id).hidden = id !== screen;
}

function save() {
  sessionStorage.setItem("bg", JSON.stringify({
    token: conn.token, playerId: state.playerId, name: state.name, tableId: state.tableId,
    watching: state.watching, guest: state.guest,
  }));
}

// An error as a sentence (services/gateway/web/words.js), where the player is looking: next to
// `near` (the control that caused it) when given. The code stays on the element for tests.
function fail(where, err, near = null) {
  const shown = $(where);
  if (err instanceof ApiError && SILENT.has(err.code)) return;
  shown.textContent = err instanceof ApiError ? sentence(err) : String(err.message || err);
  shown.dataset.code = err instanceof ApiError ? err.code : "";
  if (near) near.insertAdjacentElement("afterend", shown);
  shown.scrollIntoView({ block: "nearest" });
}

function onStatus(status, err, tableId = "") {
  $("net").textContent = status === "online" ? "" : status === "offline" ? "reconnecting…" : "";
  $("net").className = "net " + status;
  if (err && err.code === "SEAT_TAKEN") {
    // The newest tab or device plays the seat; this one says so and offers to take it back.
    if (tableId === state.tableId) { state.taken = true; renderTable(); }
    return;
  }
  if (err) fail(state.screen === "table" ? "table-error" : "lobby-error", err);
}

function seatOf(v) { return v.seat || 0; }

function other(v) { return 1 - seatOf(v); }

function nameOf(id) {
  if (!id) return "Opponent";
  if (state.names[id]) return state.names[id];
  if (id.startsWith("cpu-")) return `CPU (${id.split("-")[1]})`;
  return `Player ${id.slice(1, 7)}`;
}

function opponentName(v) { return nameOf((v.playerIds || [])[other(v)]); }

function who(v, seat) {
  if ((seat || 0) === seatOf(v) && !v.spectator) return "You";
  return nameOf((v.playerIds || [])[seat || 0]);
}

// Names of the players in `ids` not known yet, asked once.
async function learnNames(ids) {
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
    if (said) li.textContent = describe(said[0], said[1]) || li.textContent;
  }
  for (const li of $("chat-log").children) {
    const who = li.querySelector(".who");
    if (who && li.dataset.sender !== state.playerId) who.textContent = nameOf(li.dataset.sender);
  }
  if (state.view) renderTable();
}

const logged = new WeakMap(); // a log line -> the event and view it tells

// A player away for a few seconds (opening the table as the match is dealt, a reconnect) is not
// worth two lines: their "not at the table" goes when they are back within BRIEF_AWAY_MS.
const BRIEF_AWAY_MS = 10_000;
const awayLines = {}; // seat -> {li, atMs} of the last "not at the table" line

function briefAbsence(event) {
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

function logMove(event, view, steps) {
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

function sayMoves(view) {
  const { li, seat, steps } = moveLine;
  const event = { checkersMoved: { seat, steps: [...steps] } };
  li.textContent = describe(event, view);
  logged.set(li, [event, view]);
  li.hidden = steps.length === 0;
  $("log").scrollTop = $("log").scrollHeight;
}

function phaseOf(v) { return v.phase || "PHASE_UNSPECIFIED"; }

function myTurn(v) {
  return (v.decider || 0) === seatOf(v) && !WAITING.has(phaseOf(v));
}

// -- login and lobby ---------------------------------------------------------------------

// A device login keeps the same player (diamonds, trophies, history) on this browser: its device
// id is a secret kept in localStorage, as is the session's refresh token; the short-lived
// access token is renewed with it before it expires. A guest is a new player each time.
function deviceId() {
  let id = localStorage.getItem("bg-device");
  if (!id) {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    id = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    localStorage.setItem("bg-device", id);
  }
  return id;
}

// A name is said to be missing or too long before it is sent (the field takes any length, so a
// pasted name is never cut without a word); the server says what else is wrong with it.
const NAME_MAX = 20;

function nameFits(name) {
  if (!name) throw new Error("Type the name you want to play under (3 to 20 letters or digits).");
  const letters = [...name].length;
  if (letters > NAME_MAX) {
    throw new Error(`That name has ${letters} letters: a name has at most ${NAME_MAX}. Shorten it and try again.`);
  }
}

// A device's first login asks for the exact name: one another player holds is refused
// (NAME_TAKEN), never quietly numbered, so the player chooses what they are called.
async function login(name, guest) {
  const request = guest ? { guestName: name } : { deviceId: deviceId(), displayName: name, exactName: true };
  try {
    loggedIn(await conn.call("Login", request));
  } catch (err) {
    if (err instanceof ApiError && err.code === "NAME_TAKEN") {
      throw new Error(`Another player has the name ${name}: choose another. If ${name} is you on `
        + "another device, use “Sign in” below with its email and password.");
    }
    throw err;
  }
  const asked = name.split(/\s+/).filter(Boolean).join(" ");
  // A device with an account already plays as it, whatever name was typed: said, not hidden.
  state.accountNote = !guest && asked && state.name.toLowerCase() !== asked.toLowerCase()
    ? `This device already has an account, ${state.name}, so you play as ${state.name}. `
      + "Rename it below, or sign out and sign in with another account's email and password."
    : "";
}

let renewal = null;

function loggedIn(reply) {
  conn.token = reply.token;
  state.playerId = reply.playerId;
  state.name = reply.displayName || state.name;
  state.guest = !reply.refreshToken;
  state.email = reply.email || ""; // what the Account card says is saved, after a reload too
  renderSaved();
  // An operator's fair-play restriction, said in the lobby before the player meets a refusal.
  $("restricted-note").textContent = reply.restricted ? SAYS.RESTRICTED : "";
  $("restricted-note").hidden = !reply.restricted;
  if (reply.refreshToken) {
    localStorage.setItem("bg-refresh", reply.refreshToken);
    clearTimeout(renewal);
    const inMs = Number(reply.expiresMs || 0) - Date.now() - 60_000;
    renewal = setTimeout(renew, Math.max(5_000, inMs));
  }
  save();
}

// A new access token for the stored refresh token (used up and replaced); false if the session
// is over (log in again).
async function renew() {
  const refreshToken = localStorage.getItem("bg-refresh");
  if (!refreshToken) return false;
  try {
    loggedIn(await conn.call("Refresh", { refreshToken }));
    return true;
  } catch (err) {
    if (err.status === "UNAUTHENTICATED") localStorage.removeItem("bg-refresh");
    return false;
  }
}

async function logout() {
  const refreshToken = localStorage.getItem("bg-refresh");
  localStorage.removeItem("bg-refresh");
  clearTimeout(renewal);
  if (refreshToken) {
    try { await conn.call("Logout", { refreshToken }); } catch { /* ended anyway */ }
  }
  conn.closeFriends();
  state.friends = null;
  conn.token = "";
  sessionStorage.removeItem("bg");
  state.playerId = "";
  state.name = "";
  state.email = "";
  state.accountNote = "";
  $("login-error").textContent = "";
  show("login");
}

// The header's diamonds and trophies (and the end of a match's balance), read together and shown
// at once: what bg.state() says is always what the page shows.
async function refreshMe() {
  const [balance, profile] = await Promise.allSettled([
    conn.call("GetBalance", {}),
    conn.call("GetProfile", { playerId: state.playerId }),
  ]);
  if (balance.status === "fulfilled") state.balance = Number(balance.value.balance || 0);
  if (profile.status === "fulfilled") state.trophies = Number(profile.value.trophies || 0);
  const parts = [state.name];
  if (state.balance !== null) parts.push(`${state.balance} diamonds`);
  if (state.trophies !== null) parts.push(`${state.trophies} trophies`);
  $("me").textContent = parts.join(" · ");
  $("me").setAttribute("aria-label",
    `${state.name}, ${state.balance ?? "?"} diamonds, ${state.trophies ?? "?"} trophies`);
  if (state.screen === "table" && state.view) renderEnd(state.view);
  offerWhatIsAffordable();
}

// The lobby offers a wagered table only for a bet the player's diamonds cover; a bet they do
// not is greyed out with the reason beside it (a guest starts with no diamonds).
function offerWhatIsAffordable() {
  const have = state.balance;
  const short = (bet) => have !== null && have < Number(bet);
  const quick = document.querySelector('[data-quick="wagered"]');
  const quickShort = short($("qm-bet").value);
  quick.disabled = quickShort;
  const createShort = $("ct-profile").value === "wagered" && short($("ct-bet").value);
  $("create-form").querySelector('button[type="submit"]').disabled = createShort;
  const note = $("afford");
  note.hidden = !(quickShort || createShort);
  note.textContent = have === null ? "" : have === 0
    ? "Wagered tables need diamonds: you have none."
    : `Wagered tables need the bet in diamonds: you have ${have}.`;
}

// -- the account: one player on every device (a name, an email and password to sign in with) --

function renderAccount() {
  $("rename").value = state.name;
  $("rename-form").hidden = state.guest;
  $("link-form").hidden = state.guest;
  const note = $("account-note");
  note.textContent = state.guest
    ? "You play as a guest: your diamonds and matches end when you sign out. Play with a name "
      + "to keep them on this device, then save an email and password here to take them to another."
    : state.accountNote;
  note.hidden = !note.textContent;
  renderSaved();
}

// What the Account card says of the email: renewed with the session (a reload renews it late).
function renderSaved() {
  $("link-state").textContent = state.email ? savedWords(state.email)
    : "Save an email and password to play as yourself on another device.";
  $("link-save").textContent = state.email ? "Change email and password" : "Save email and password";
  if (state.email && !$("link-email").value) $("link-email").value = state.email;
}

function savedWords(email) {
  return `Saved: on another device, choose “Sign in” with ${email} and your password to play as yourself.`;
}

async function rename() {
  $("account-error").textContent = "";
  try {
    nameFits($("rename").value.trim());
    loggedIn(await conn.call("SetDisplayName", { displayName: $("rename").value.trim() }));
    state.accountNote = "";
    state.names[state.playerId] = state.name;
    renderAccount();
    $("account-note").textContent = `You are ${state.name} now.`;
    $("account-note").hidden = false;
    await refreshMe();
  } catch (err) {
    fail("account-error", err, $("rename-form"));
  }
}

async function linkEmail() {
  $("account-error").textContent = "";
  const email = $("link-email").value.trim();
  const button = $("link-save");
  button.disabled = true; // a save takes a second (the password's hash): said, and not sent twice
  $("link-state").textContent = "Saving…";
  try {
    await conn.call("LinkEmail", { email, password: $("link-password").value });
    $("link-password").value = "";
    state.email = email;
  } catch (err) {
    fail("account-error", err, $("link-form"));
  } finally {
    button.disabled = false;
    renderAccount();
  }
}

async function signIn() {
  $("signin-error").textContent = "";
  try {
    loggedIn(await conn.call("Login", {
      email: $("signin-email").value.trim(), password: $("signin-password").value,
    }));
  } catch (err) {
    fail("signin-error", err);
    return;
  }
  $("signin-password").value = "";
  state.accountNote = "";
  await toLobby();
  await joinFromLink();
}

async function copyInvite() {
  const link = $("invite-link");
  try {
    await navigator.clipboard.writeText(link.value);
  } catch { // no clipboard permission (an insecure page, an old browser): the selection's copy
    link.select();
    document.execCommand("copy");
  }
  $("copy-state").textContent = "Copied: send it to your friend.";
}

async function toLobby() {
  if (state.tableId) conn.leave(state.tableId); // however the page got here: no stream lingers
  state.tableId = "";
  state.watching = false;
  state.table = null;
  state.view = null;
  state.taken = false;
  save();
  show("lobby");
  $("end").hidden = true;
  renderAccount();
  conn.openFriends(); // online to the players who follow this one
  await refreshMe();
  await listMine();
  await listTournaments();
}

async function lobbyAction(run, near = null) {
  $("lobby-error").textContent = "";
  state.quick = false;
  // The balance before a deal's stake is held: the end of the match says what it won or cost.
  try {
    state.balanceBefore = Number((await conn.call("GetBalance", {})).balance || 0);
  } catch { state.balanceBefore = null; }
  try {
    await waitForDeal(await run());
  } catch (err) {
    fail("lobby-error", err, near);
  }
}

// A party code from what a player pastes: the code itself, or an invite link (.../?join=CODE).
function partyCode(text) {
  const found = text.trim().match(/[?&]join=([A-Za-z0-9]+)/);
  return (found ? found[1] : text.trim()).toUpperCase();
}

// An invite link opened (logged in already, or just now): join its table once, then drop the
// code from the address so a reload does not join again. A bad code is said in the lobby.
async function joinFromLink() {
  const code = new URLSearchParams(location.search).get("join");
  if (!code) return;
  history.replaceState(null, "", location.pathname);
  await lobbyAction(() => conn.call("JoinByCode", { code: partyCode(code) }));
}

function matchOptions(profile, extra = {}) {
  const options = { profile, matchLength: 1, ...extra };
  if (profile === "wagered" && !options.bet) options.bet = String($("qm-bet").value);
  return options;
}

// -- waiting for the deal ----------------------------------------------------------------

// A quick match nobody else is looking for offers the computer meanwhile after this long.
const OFFER_CPU_AFTER_S = 10;

async function waitForDeal(table) {
  state.table = table;
  state.tableId = table.tableId;
  const since = Date.now();
  save();
  for (;;) {
    if (table.status === "dealt") return openTable(table.tableId);
    if (table.status === "closed") {
      await toLobby();
      $("lobby-error").textContent = closedSentence(table.closeReason);
      return;
    }
    const players = table.playerIds || [];
    const full = players.length === 2 && players.every((p) => p);
    const host = table.hostId === state.playerId;
    const casual = table.options && table.options.profile === "casual";
    const friend = players.find((p) => p && p !== table.hostId);
    await learnNames(players); // before the screen shows: it is filled in one go
    show("waiting");
    const sharing = !!table.code && !state.quick && !full;
    $("waiting-title").textContent = full ? "Ready to play" : "Waiting for an opponent";
    $("waiting-info").textContent = full && casual && host
      ? `${nameOf(friend)} sat down: start the match when you are ready.`
      : full && casual ? `Waiting for ${nameOf(table.hostId)} to start the match.`
        : full ? "Dealing the match…"
          : sharing ? `Share the code ${table.code} or the link below.`
            : `Finding an opponent… ${Math.floor((Date.now() - since) / 1000)} s`;
    const alone = state.quick && !full && (Date.now() - since) / 1000 >= OFFER_CPU_AFTER_S
      && table.options && table.options.profile !== "wagered";
    $("cpu-instead").hidden = !alone;
    $("cpu-instead-note").hidden = !alone;
    $("invite-link").value = sharing ? `${location.origin}/?join=${table.code}` : "";
    $("invite-link").hidden = !sharing;
    $("copy-invite").hidden = !sharing;
    if (!sharing) $("copy-state").textContent = "";
    offerFollow("follow-friend", full ? (host ? friend : table.hostId) : "");
    const startable = full && host && casual;
    $("start-table").hidden = !startable;
    $("start-table").textContent = startable ? `Start the match with ${nameOf(friend)}` : "Start";
    if (startable && players[1].startsWith("cpu-")) {
      table = await conn.call("StartTable", { tableId: table.tableId });
      continue;
    }
    await new Promise((r) => setTimeout(r, 700));
    if (state.tableId !== table.tableId) return; // left meanwhile
    table = await conn.call("GetTable", { tableId: table.tableId });
    state.table = table;
  }
}

// -- the table ---------------------------------------------------------------------------

async function openTable(tableId, watching = false) {
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
  openChat();
  board = new Board($("board-wrap"), (from, to) => send({ move: { from, to } }));
  if (watching) await conn.watch(tableId, 0);
  else await conn.join(tableId, 0);
}

// Take the seat back from the other tab or device (which is told in turn).
async function playHere() {
  state.taken = false;
  await conn.join(state.tableId, state.view ? Number(state.view.seq || 0) : 0);
  renderTable();
}

// "You" takes the verb's plain form: "You are back", "ann is back".
function says(subject, you, others) {
  return subject === "You" ? you : others;
}

const HOW = {
  GAME_RESULT_SINGLE: "", GAME_RESULT_GAMMON: ", a gammon", GAME_RESULT_BACKGAMMON: ", a backgammon",
  GAME_RESULT_RESIGN: ", resigned", GAME_RESULT_DROP: ", the double dropped",
};

// The seat whose side the page's board shows (a spectator sees seat 0's).
function viewerSeat(v) {
  return v.spectator ? 0 : seatOf(v);
}

// A step in the usual notation: from the mover's side, as the replay and the analysis write it
// ("24/18" is the opponent's 6 off their back point, whichever side this page shows).
function stepText(step) {
  return stepNotation(step, step.hit, pointName);
}

// A point of `seat`'s numbering as this page's board numbers it (bar and off are the same).
function onBoard(point, seat, v) {
  return seat === viewerSeat(v) || point === 0 || point === 25 ? point : 25 - point;
}

// Which of a move's steps hit, from the board the events so far leave (`sides`: the viewer's
// side and the other's, each in its own numbering, advanced here); the steps come back marked.
function markHits(sides, moved, v) {
  const steps = (moved.steps || []).map((st) => ({ ...st }));
  if (!sides) return steps;
  const mine = (moved.seat || 0) === viewerSeat(v);
  const hits = mine ? apply(sides.own, sides.opponent, steps) : apply(sides.opponent, sides.own, steps);
  steps.forEach((st, i) => { st.hit = hits[i]; });
  return steps;
}

function sidesOf(v) {
  const pad = (side) => { const out = (side || []).slice(); while (out.length < 25) out.push(0); return out; };
  const drawn = shown(v);
  return { own: pad(drawn.own), opponent: pad(drawn.opponent) };
}

function describe(event, v) {
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
      const why = e.reason && e.reason !== "END_REASON_POINTS" ? `: ${endedBy(v, e.reason, e.winnerSeat || 0)}` : "";
      return `${winner} ${says(winner, "win", "wins")} the match${why}`;
    }
    case "matchClosed": return `The match closed: ${closedWhy(v, e)}`;
    case "rematchOffered": return `${seat} ${says(seat, "offer", "offers")} a rematch`;
    case "rematchAgreed": return "Rematch agreed";
    default: return null;
  }
}

// What the status line says: whose turn, to do what, in words.
function wageredView(v) {
  return !!(v.options && v.options.profile === "wagered");
}

function statusWords(v) {
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

function track(event) {
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

function lastMove(event, steps, v) {
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

function marksOf(v) {
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
function shown(v) {
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

function onUpdate(tableId, update) {
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
    if (!state.watching) loadChat(); // the spectators' chat opens to the players now
  }
}

// -- chat --------------------------------------------------------------------------------
// Players talk on the table's channel, spectators on theirs (kibitz), which the players read
// once the match is over (docs/protocol.md, "Chat").

// Open beside the board on a wide screen; on a phone a line under the log that opens it.
function openChat() {
  state.chatTitle = state.watching ? "Spectators' chat" : "Table chat";
  state.chatUnread = 0;
  $("chat-title").textContent = state.chatTitle;
  $("chat").open = matchMedia("(min-width: 900px)").matches;
  $("chat-log").replaceChildren();
  $("chat-error").textContent = "";
  loadChat();
}

async function loadChat() {
  const tableId = state.tableId;
  try {
    const reply = await conn.call("GetChat", { tableId });
    if (tableId !== state.tableId) return;
    $("chat-log").replaceChildren();
    for (const message of reply.messages || []) showChat(message);
  } catch (err) {
    fail("chat-error", err);
  }
}

function onChat(tableId, message) {
  if (tableId !== state.tableId) return;
  showChat(message);
  if (!$("chat").open && !message.removed) {
    state.chatUnread += 1;
    $("chat-title").textContent = `${state.chatTitle} (${state.chatUnread} new)`;
  }
}

function showChat(message) {
  const log = $("chat-log");
  const old = [...log.children].find((li) => li.dataset.id === message.messageId);
  if (message.removed) { // an operator removed it
    if (old) old.replaceChildren("(removed)");
    return;
  }
  if (old) return; // pushed and then read back with the history: once
  const li = document.createElement("li");
  li.dataset.id = message.messageId;
  li.dataset.sender = message.senderId;
  const kibitz = message.channel === "CHAT_CHANNEL_KIBITZ" && !state.watching;
  const name = message.senderId === state.playerId ? "You" : nameOf(message.senderId);
  const said = document.createElement("span");
  const whoSaid = document.createElement("bdi"); // a name, whatever its script
  whoSaid.className = "who";
  whoSaid.textContent = name;
  said.append(kibitz ? "(spectator) " : "", whoSaid, `: ${message.text}`);
  li.append(said);
  if (message.senderId !== state.playerId) {
    const mute = document.createElement("button");
    mute.className = "link";
    mute.textContent = "Mute";
    mute.setAttribute("aria-label", `Mute ${name}`);
    mute.addEventListener("click", () => muteChat(message.senderId));
    li.append(" ", mute);
  }
  log.append(li);
  log.scrollTop = log.scrollHeight;
  learnNames([message.senderId]);
}

async function sendChat() {
  const text = $("chat-text").value;
  const channel = state.watching ? "CHAT_CHANNEL_KIBITZ" : "CHAT_CHANNEL_TABLE";
  $("chat-error").textContent = "";
  try {
    await conn.call("SendChat", { tableId: state.tableId, channel, text });
    $("chat-text").value = "";
  } catch (err) {
    fail("chat-error", err);
  }
}

async function muteChat(playerId) {
  try {
    await conn.call("MuteChat", { playerId, muted: true });
    for (const li of [...$("chat-log").children]) if (li.dataset.sender === playerId) li.remove();
  } catch (err) {
    fail("chat-error", err);
  }
}

// A wagered match settles through the event stream a moment after it ends: show the balance
// again until it moves (or for 20 s).
async function settling() {
  const tableId = state.tableId;
  let first;
  for (let i = 0; i < 20 && state.tableId === tableId; i++) {
    await refreshMe();
    if (i === 0) first = state.balance;
    else if (state.balance !== first) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function send(command) {
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

function button(label, command, opts = {}) {
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

function clockText(v, mine) {
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
function awayText(v, seat) {
  if (!(v.away || [])[seat]) return "";
  const at = v.deadlineKind === "DEADLINE_KIND_AWAY" ? Number(v.deadlineMs || 0) : 0;
  if (!at) return " · away";
  return ` · away: loses in ${Math.max(0, Math.ceil((at - Date.now()) / 1000))} s unless back`;
}

// A seat's box: the player's name opening their profile, then what the seat shows. Redrawn twice
// a second (the clocks), so the name's button is kept while it names the same player.
function seatName(box, playerId, name, rest) {
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

function renderSeats() {
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

function renderTable() {
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
  const stakes = wageredView(v) && stakeOf(v) ? ` · bet ${v.options.bet}, ${stakeOf(v)} each at stake` : "";
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
    actions.appendChild(button("Stop watching", null, { action: "stopWatching", run: backToLobby }));
    renderEnd(v);
    return;
  }
  const mine = myTurn(v);
  const p = phaseOf(v);
  const wagered = wageredView(v);
  if (mine && p === "PHASE_AWAIT_ROLL") actions.appendChild(button("Roll", { roll: {} }));
  if (v.canDouble) actions.appendChild(button("Double", { offerDouble: {} }));
  if (mine && p === "PHASE_DOUBLE_OFFERED") {
    // wagered: what each answer risks, in diamonds (the stake doubles with the cube).
    const stake = stakeOf(v);
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
    askToConfirm(v, actions);
    renderEnd(v);
    return;
  }
  // Resign gives the game (I-5): wagered and casual, against the computer too (W-6); scored
  // play has none (RULES.md: leave).
  if ((v.options || {}).profile !== "scored" && !WAITING.has(p)) {
    actions.appendChild(button("Resign game", null, { action: "resign", run: () => confirmFirst("resign"),
      aria: "Resign this game" }));
  }
  if (wagered && !OVER.has(p)) {
    const auto = button(v.autoRoll ? "Auto roll: on" : "Auto roll: off", { setAutoRoll: { on: !v.autoRoll } }, { action: "autoRoll" });
    auto.setAttribute("aria-pressed", String(!!v.autoRoll));
    actions.appendChild(auto);
  }
  if (!OVER.has(p)) {
    actions.appendChild(button("Leave", null, { action: "leave", run: () => confirmFirst("leave") }));
  }
  renderEnd(v);
}

// -- hints: the best plays of the roll, where the rules allow help (Play vs CPU, scored test
// games; never wagered or rated play: the server refuses them too) ----------------------------

const CPU_LEVELS = new Set(["easy", "normal", "expert"]);

function hintsAllowed(v) {
  const o = v.options || {};
  if (o.profile === "wagered" || o.rated) return false;
  return CPU_LEVELS.has(o.level) || (o.profile === "scored" && !!o.testGame);
}

async function askHint() {
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

// -- asking before what cannot be taken back (Resign, Leave) ----------------------------------

function confirmFirst(what) {
  state.confirming = what;
  renderTable();
}

function stakeOf(v) {
  return Number((v.options && v.options.bet) || 0) * (v.cube || 1);
}

// What a resignation or a walk-out costs, in the player's words (RULES I-5, I-18, the leaving row).
function costOf(what, v) {
  if (v.options && v.options.tournament) return tournamentCost(what, v);
  if (what === "resign") {
    return resignWords(v, wageredView(v) ? `: you lose your stake of ${stakeOf(v)} diamonds` : "");
  }
  if (wageredView(v)) {
    return `Leave the table? You forfeit the match and your stake of ${stakeOf(v)} diamonds.`;
  }
  if (v.options && v.options.profile === "scored") {
    return "Leave the table? You forfeit the match: a loss on the scored board, "
      + "unless you lead on completed games.";
  }
  return "Leave the table? The match ends here (a casual match: no points, no diamonds).";
}

// A tournament's match is not staked (the buy-in was): leaving it, or resigning its last game,
// puts the player out of the tournament, the buy-in staying in the prize pool.
function tournamentCost(what, v) {
  const t = state.tournamentInfo[state.tournamentOf[state.tableId]];
  if (t === undefined) learnTournament(state.tableId);
  const buyIn = t ? Number(t.buyIn || 0) : 0;
  const out = `you are out of ${t ? t.name : "the tournament"}`
    + (buyIn ? ` and your buy-in of ${buyIn} diamonds stays in its prize pool` : "");
  if (what === "resign") return resignWords(v, `: ${out}`);
  return `Leave the table? You forfeit the match: ${out}.`;
}

// "Resign this game as a single? ann scores 2 points and wins the match<lost>."
function resignWords(v, lost) {
  const cube = v.cube || 1;
  const ends = ((v.score || [])[other(v)] || 0) + cube >= (v.matchLength || 1);
  const gives = `${opponentName(v)} scores ${cube} point${cube > 1 ? "s" : ""}`;
  return `Resign this game as a single? ${gives}${ends ? ` and wins the match${lost}` : ""}.`;
}

// The tournament a table belongs to (asked once per table), for the words of what leaving costs.
async function learnTournament(tableId) {
  if (state.learning.has(tableId)) return;
  state.learning.add(tableId);
  try {
    if (!(tableId in state.tournamentOf)) {
      state.tournamentOf[tableId] = (await conn.call("GetTable", { tableId })).tournamentId || "";
    }
    const tournamentId = state.tournamentOf[tableId];
    if (!tournamentId) return; // not a tournament's after all: asked no more
    state.tournamentInfo[tournamentId] = await conn.call("GetTournament", { tournamentId });
    state.learning.delete(tableId);
    if (state.confirming && state.tableId === tableId) renderTable();
  } catch { // said without the buy-in meanwhile; asked again at the next question
    setTimeout(() => state.learning.delete(tableId), 3000);
  }
}

function askToConfirm(v, actions) {
  const what = state.confirming;
  const ask = document.createElement("p");
  ask.id = "confirm-text";
  ask.className = "confirm";
  ask.setAttribute("role", "alert");
  ask.textContent = costOf(what, v);
  actions.appendChild(ask);
  const yes = what === "resign" ? "Yes, resign" : "Yes, leave";
  actions.appendChild(button(yes, null, {
    action: `confirm-${what}`,
    run: () => { state.confirming = null; send(what === "resign" ? { resign: {} } : { leave: {} }); },
  }));
  actions.appendChild(button("Cancel", null, {
    action: "cancel", run: () => { state.confirming = null; renderTable(); },
  }));
}

// Why a match closed with no winner: who left (a casual party abandoned), or the reason.
function closedWhy(v, closed) {
  const by = closed && closed.reason === "END_REASON_ABANDONED" ? closed.leftBy ?? 0 : -1;
  if (by >= 0) return `${who(v, by)} left the table`;
  return REASONS[(closed && closed.reason) || v.endReason] || "ended";
}

// How the last game was won ("ann resigned", "a gammon"), or why the match ended otherwise.
// Why a match ended before its points, naming who did it: the loser left, stayed away, ran out
// of move time or left after doubling (I-41, the leaving row); otherwise the reason's words.
const BY_LOSER = {
  END_REASON_LEFT: "left the table", END_REASON_AWAY: "stayed away",
  END_REASON_MOVE_TIME: "ran out of move time", END_REASON_DOUBLER_LEFT: "left after doubling",
};

function endedBy(v, reason, winner) {
  if (!BY_LOSER[reason] || winner < 0) return REASONS[reason] || "ended";
  return `${who(v, 1 - winner)} ${BY_LOSER[reason]}`;
}

function howItEnded(v) {
  const games = (state.ended && state.ended.games) || [];
  const last = games[games.length - 1];
  const reason = v.endReason || "";
  if (phaseOf(v) === "PHASE_CLOSED") return `: ${closedWhy(v, state.ended)}`;
  if (reason && reason !== "END_REASON_POINTS") return `: ${endedBy(v, reason, v.winner ?? 0)}`;
  // The view says how the last game was won: the end panel has it even when this page never saw
  // the game's events (opened or resynced after them); the events' record is the fallback.
  const result = v.lastResult && v.lastResult !== "GAME_RESULT_UNSPECIFIED" ? v.lastResult : last && last.result;
  if (!result) return "";
  const loser = who(v, 1 - (v.winner ?? (last ? last.winnerSeat || 0 : 0)));
  switch (result) {
    case "GAME_RESULT_GAMMON": return ": a gammon";
    case "GAME_RESULT_BACKGAMMON": return ": a backgammon";
    case "GAME_RESULT_RESIGN": return `: ${loser} resigned`;
    case "GAME_RESULT_DROP": return `: ${loser} dropped the double`;
    default: return "";
  }
}

// wagered: the pot, the house fee and what the match won or cost (I-11: 8% of each side's
// final stake), and the balance now.
const FEE_PERCENT = 8;

function moneyOf(v) {
  const stake = stakeOf(v);
  if (!wageredView(v) || !stake || v.spectator) return "";
  // The balance once the settlement has come (it follows the match's end through the event
  // log): until then it would say the stake is still held.
  const settledAt = (net) => (state.balanceBefore !== null && state.balance === state.balanceBefore + net
    ? ` You have ${state.balance} diamonds.` : "");
  if (phaseOf(v) === "PHASE_CLOSED" || (v.winner ?? 0) < 0) {
    return `Every stake was returned: nobody won or paid a fee.${settledAt(0)}`;
  }
  const fee = 2 * Math.round((stake * FEE_PERCENT) / 100);
  const pot = 2 * stake;
  const won = (v.winner ?? 0) === seatOf(v);
  const net = won ? pot - fee - stake : -stake;
  const result = won ? `you won +${net} (${pot - fee} paid to you)` : `you lost your stake of ${stake}`;
  return `Pot ${pot} diamonds (${stake} each) · house fee ${fee} · ${result}.${settledAt(net)}`;
}

function renderEnd(v) {
  const p = phaseOf(v);
  if (!OVER.has(p)) { $("end").hidden = true; return; }
  const me = seatOf(v);
  const winner = v.winner ?? 0;
  const closed = p === "PHASE_CLOSED" || winner < 0;
  $("end-title").textContent = state.next && state.next.title ? state.next.title
    : closed ? "Match closed"
      : v.spectator ? `${who(v, winner)} won the match`
        : winner === me ? "You won the match" : "You lost the match";
  const score = v.score || [];
  $("end-detail").textContent = `${score[me] || 0}-${score[1 - me] || 0} (match to ${v.matchLength || 1})`
    + `${howItEnded(v)}`;
  $("end-money").textContent = moneyOf(v);
  $("end-money").hidden = !$("end-money").textContent;
  const tournament = !!(v.options || {}).tournament;
  $("end-tournament").hidden = !tournament || !!v.spectator;
  $("next-match").hidden = !(state.next && state.next.tableId);
  if (tournament && !v.spectator && !state.next) followTournament();
  $("end-seed").textContent = (state.ended && state.ended.seedHex) || "";
  $("end-fingerprint").textContent = v.fingerprint || "";
  $("verify-result").textContent = state.verify;
  const offeredBy = v.rematchOfferedBy ?? 0;
  const rematch = $("rematch");
  // A tournament's match has no rematch: the bracket deals the next one.
  rematch.hidden = !!v.spectator || !!(v.options || {}).tournament;
  rematch.disabled = !!v.rematchAgreed;
  rematch.textContent = offeredBy === 1 - me ? "Accept the rematch" : offeredBy === me ? "Rematch offered" : "Rematch";
  rematch.disabled = offeredBy === me || !!v.rematchAgreed;
  offerFollow("follow-them", v.spectator ? "" : (v.playerIds || [])[1 - me] || "");
  showStanding(v);
  $("end").hidden = false;
}

// What the match changed for this player on the boards (issue 60), once the leaderboard has
// applied it: a wagered match's league (and a rated one's trophies), a scored match's points, a
// ranked casual match's rating.
function showStanding(v) {
  const list = $("end-standing");
  const o = v.options || {};
  const computer = (v.playerIds || []).some((id) => id.startsWith("cpu-"));
  const expected = !v.spectator && phaseOf(v) === "PHASE_MATCH_OVER" && (o.profile === "wagered"
    || (o.profile === "scored" && !o.testGame) || (o.profile === "casual" && !!o.rated && !computer));
  if (!expected || !v.matchId) { list.hidden = true; return; }
  list.hidden = false;
  standings.matchChanges(v.matchId, (lines) => {
    if (state.view !== v && (!state.view || state.view.matchId !== v.matchId)) return;
    const items = lines === null ? ["Updating your standings…"]
      : lines.length ? lines : ["Nothing changed on the boards."];
    list.replaceChildren(...items.map((t) => { const li = document.createElement("li"); li.textContent = t; return li; }));
    list.dataset.ready = lines === null ? "" : "yes";
  });
}

// -- a tournament's match over: the next round reaches the player on the end panel -----------
// The director deals each round by itself; this says where the bracket goes next (the next
// opponent, or whose match decides them) and opens the next table when it is dealt.

const NEXT_OPENS_S = 5;

function roundName(t, r) {
  if (r === t.rounds) return "the final";
  if (r === t.rounds - 1) return "the semifinal";
  return `round ${r}`;
}

async function followTournament() {
  const tableId = state.tableId;
  if (state.next && state.next.from === tableId) return; // following already
  state.next = { from: tableId, tableId: "", title: "" };
  while (state.screen === "table" && state.tableId === tableId) {
    try {
      if (!(tableId in state.tournamentOf)) {
        const table = await conn.call("GetTable", { tableId });
        state.tournamentOf[tableId] = table.tournamentId || "";
      }
      const tournamentId = state.tournamentOf[tableId];
      if (!tournamentId) return;
      const t = await conn.call("GetTournament", { tournamentId });
      if (state.tableId !== tableId || !state.next) return;
      if (await sayNext(t, tableId)) return;
    } catch { /* asked again in a moment */ }
    await new Promise((r) => setTimeout(r, 1500));
  }
}

// Says what comes next for this player; true when nothing more will change.
async function sayNext(t, tableId) {
  const matches = t.matches || [];
  await learnNames(matches.flatMap((m) => [m.topId, m.bottomId]).filter(Boolean));
  const me = state.playerId;
  const line = $("end-tournament");
  const ranked = (t.ranks || []).find((r) => r.playerId === me);
  const prize = (t.prizes || []).find((x) => x.playerId === me);
  const paying = Number(t.buyIn || 0) > 0 && !["paid", "refunded"].includes(t.money);
  if (t.status === "cancelled") {
    line.textContent = `${t.name} was cancelled${Number(t.buyIn || 0) ? ": every buy-in is returned" : ""}.`;
    return true;
  }
  if (ranked) {
    const money = prize ? ` and won ${prize.amount} diamonds` : paying ? " (prizes are being paid)" : "";
    if (ranked.rank === 1) {
      state.next.title = `You won the tournament ${t.name}`;
      line.textContent = `You are the champion of ${t.name}${money}.`;
    } else {
      line.textContent = `${t.name}: you finished ${ORDINAL(ranked.rank)}${money}.`;
    }
    renderEnd(state.view);
    return t.status !== "running" && !paying;
  }
  const mine = matches.filter((m) => [m.topId, m.bottomId].includes(me) && !m.winnerId
    && m.tableId !== tableId);
  const next = mine.sort((a, b) => a.round - b.round)[0];
  if (!next) {
    line.textContent = `${t.name}: waiting for the bracket to move on.`;
    return false;
  }
  const rival = next.topId === me ? next.bottomId : next.topId;
  if (!rival || !next.tableId) {
    const feeder = matches.find((m) => m.round === next.round - 1 && !m.winnerId
      && ![m.topId, m.bottomId].includes(me));
    const who = feeder && feeder.topId && feeder.bottomId
      ? `the winner of ${nameOf(feeder.topId)} vs ${nameOf(feeder.bottomId)}` : nameOf(rival);
    line.textContent = `${t.name}: you are through to ${roundName(t, next.round)} against ${who}. `
      + "It is dealt as soon as that match ends.";
    return false;
  }
  state.next.tableId = next.tableId;
  const opens = Date.now() + NEXT_OPENS_S * 1000;
  const say = () => {
    const left = Math.max(0, Math.ceil((opens - Date.now()) / 1000));
    line.textContent = `${t.name}: ${roundName(t, next.round)} against ${nameOf(rival)} is dealt. `
      + `It opens in ${left} s.`;
  };
  say();
  $("next-match").textContent = `Play ${roundName(t, next.round)} against ${nameOf(rival)}`;
  $("next-match").hidden = false;
  const wanted = next.tableId;
  const tick = setInterval(() => {
    if (!state.next || state.next.tableId !== wanted || state.tableId !== tableId) {
      clearInterval(tick);
      return;
    }
    say();
    if (Date.now() >= opens) { clearInterval(tick); openNext(); }
  }, 250);
  return true;
}

async function openNext() {
  const next = state.next;
  if (!next || !next.tableId) return;
  state.opened.add(next.tableId);
  state.balanceBefore = null;
  await openTable(next.tableId);
}

// The revealed seed must reproduce the record's rolls, and the record must hold every roll
// this client saw (in order).
async function verifyDice() {
  const v = state.view;
  state.verify = "checking…";
  renderEnd(v);
  try {
    if (v.spectator) { // no record for spectators: the rolls they saw, against the seed revealed
      const result = await verifyRolls((state.ended && state.ended.seedHex) || "", v.fingerprint || "", state.seenRolls);
      state.verify = (result.ok ? "✓ " : "✗ ") + result.reason;
      renderEnd(v);
      return;
    }
    const record = await conn.call("GetMatchRecord", { tableId: state.tableId, matchId: v.matchId });
    const rolls = (record.rolls || []).map((r) => [r.a || 0, r.b || 0]);
    let i = 0;
    for (const seen of state.seenRolls) {
      while (i < rolls.length && !(rolls[i][0] === seen[0] && rolls[i][1] === seen[1])) i++;
      if (i++ >= rolls.length) throw new Error(`the roll ${seen.join("-")} shown in the game is not in the record`);
    }
    const result = await verifyRolls(record.seedHex || "", record.fingerprint || "", rolls);
    if (result.ok && record.fingerprint !== v.fingerprint) {
      throw new Error("the record's fingerprint is not the one published at the start");
    }
    state.verify = (result.ok ? "✓ " : "✗ ") + result.reason;
  } catch (err) {
    state.verify = `✗ ${err.message || err}`;
  }
  renderEnd(v);
}

function rematch() {
  const v = state.view;
  const offeredBy = v.rematchOfferedBy ?? 0;
  send(offeredBy === other(v) ? { acceptRematch: {} } : { offerRematch: {} });
}

function backToLobby() {
  conn.leave(state.tableId);
  state.watching = false;
  toLobby();
}

function listButton(label, aria, data, run) {
  const b = document.createElement("button");
  b.textContent = label;
  b.setAttribute("aria-label", aria);
  Object.assign(b.dataset, data);
  b.addEventListener("click", run);
  return b;
}

// A lobby list: rows of [text, buttons], or one line saying it is empty. The text may be a list
// of strings and elements (a name that opens its player's profile).
function fillList(id, empty, rows) {
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

// The matches in play anyone may watch (I-35), each with a Watch button; once asked for, kept
// fresh while the lobby is on screen (a match ends, another starts).
let liveTimer = null;

async function listLive() {
  $("lobby-error").textContent = "";
  clearTimeout(liveTimer);
  liveTimer = setTimeout(() => { if (state.screen === "lobby") listLive(); }, LIVE_REFRESH_MS);
  try {
    const reply = await conn.call("ListTables", { live: true, limit: 20 });
    const tables = reply.tables || [];
    await learnNames(tables.flatMap((t) => t.playerIds || []));
    fillList("live", "No match to watch right now.", tables.map((t) => {
      const players = (t.playerIds || []).map(nameOf).join(" vs ");
      // Your own match is yours to play, not to watch.
      const act = (t.playerIds || []).includes(state.playerId)
        ? resumeButton(t, `Resume your match ${players}`)
        : listButton("Watch", `Watch ${players}`, { watch: t.tableId }, () => openTable(t.tableId, true));
      const names = (t.playerIds || []).flatMap((id, i) => [...(i ? [" vs "] : []), standings.nameButton(id)]);
      return [[`${(t.options || {}).profile || ""}: `, ...names], [act]];
    }));
  } catch (err) {
    fail("lobby-error", err);
  }
}

// The player's own seats, from the server (any tab or device): each with Resume. Kept fresh
// while the lobby is on screen.
let mineTimer = null;

async function listMine() {
  clearTimeout(mineTimer);
  mineTimer = setTimeout(() => { if (state.screen === "lobby") listMine(); }, LIVE_REFRESH_MS);
  try {
    const reply = await conn.call("ListTables", { mine: true });
    const tables = reply.tables || [];
    await learnNames(tables.flatMap((t) => t.playerIds || []));
    if (state.screen !== "lobby") return;
    fillList("mine", "No match in progress.", tables.map((t) => {
      const rival = (t.playerIds || []).find((p) => p && p !== state.playerId);
      const profile = (t.options || {}).profile || "";
      const where = { dealt: "in play", dealing: "being dealt" }[t.status] || "waiting for a player";
      const line = `${profile} vs ${rival ? nameOf(rival) : "(open seat)"}, ${where}`;
      return [line, [resumeButton(t, `Resume your ${profile} match`)]];
    }));
  } catch (err) {
    fail("lobby-error", err);
  }
}

function resumeButton(t, aria) {
  return listButton("Resume", aria, { resume: t.tableId }, async () => {
    try {
      state.balanceBefore = null; // the stake was held before this page saw it
      if (t.status === "dealt") await openTable(t.tableId);
      else await waitForDeal(await conn.call("GetTable", { tableId: t.tableId }));
    } catch (err) {
      fail("lobby-error", err);
    }
  });
}

// -- tournaments: the lobby's list, the bracket, your next match opened for you ------------

const ORDINAL = (n) => `${n}${n === 1 ? "st" : n === 2 ? "nd" : n === 3 ? "rd" : "th"}`;
let tournamentTimer = null;

async function listTournaments() {
  clearTimeout(tournamentTimer);
  // Kept fresh in the lobby, and on the replay screen while a tournament of yours goes on: its
  // next match opens wherever you are (at a table, the end panel says so: followTournament).
  tournamentTimer = setTimeout(() => {
    if (state.screen === "lobby" || (state.tournamentId && state.screen === "replay")) listTournaments();
  }, 2000);
  try {
    const reply = await conn.call("ListTournaments", { limit: 10 });
    const tournaments = (reply.tournaments || []).filter((t) => t.status !== "cancelled");
    if (!["lobby", "replay"].includes(state.screen)) return;
    const entered = tournaments.filter((t) => (t.playerIds || []).includes(state.playerId));
    const live = entered.find((t) => ["registering", "running"].includes(t.status));
    state.tournamentId = live ? live.tournamentId : "";
    const mine = live || entered.find((t) => t.status === "finished"); // the latest one
    fillList("tournaments", "No tournament right now.", tournaments.map((t) => {
      const kind = t.kind === "sit_and_go" ? "sit-and-go" : "scheduled";
      const line = `${t.name}: ${kind}, ${(t.options || {}).profile}, `
        + `${(t.playerIds || []).length}/${t.size} players, ${t.status}${moneyWords(t)}`;
      const acts = [];
      const entered = (t.playerIds || []).includes(state.playerId);
      if (t.status === "registering") {
        acts.push(entered
          ? listButton("Withdraw", `Withdraw from ${t.name}`, { withdraw: t.tournamentId },
            () => tournamentCall("UnregisterTournament", t.tournamentId))
          : listButton("Register", `Register for ${t.name}`, { register: t.tournamentId },
            () => tournamentCall("RegisterTournament", t.tournamentId)));
      }
      acts.push(listButton("Bracket", `The bracket of ${t.name}`, { bracket: t.tournamentId },
        () => { state.bracketOf = t.tournamentId; showBracket(t); }));
      return [line, acts];
    }));
    const shown = tournaments.find((t) => t.tournamentId === state.bracketOf) || mine;
    if (shown) await showBracket(shown);
    if (mine) await nextMatch(mine);
    else $("my-tournament").textContent = "";
  } catch (err) {
    fail("lobby-error", err);
  }
}

// A wagered tournament's money: the buy-in while it registers, the prize money once started.
function moneyWords(t) {
  const buyIn = Number(t.buyIn || 0);
  if (!buyIn) return "";
  const prizes = Number(t.prizeMoney || 0);
  return prizes ? `, buy-in ${buyIn} diamonds, ${prizes} to win` : `, buy-in ${buyIn} diamonds`;
}

async function tournamentCall(method, tournamentId) {
  try {
    await conn.call(method, { tournamentId });
  } catch (err) {
    fail("lobby-error", err);
  }
  await listTournaments();
}

// Your match dealt in the bracket: its table opens (your seat is waiting there).
async function nextMatch(t) {
  const ranked = (t.ranks || []).find((r) => r.playerId === state.playerId);
  const prize = (t.prizes || []).find((x) => x.playerId === state.playerId);
  const held = Number(t.buyIn || 0) ? ` Your buy-in of ${t.buyIn} diamonds is held until the start.` : "";
  $("my-tournament").textContent = ranked
    ? `${t.name}: you finished ${ORDINAL(ranked.rank)}${prize ? ` and won ${prize.amount} diamonds` : ""}.`
    : t.status === "running" ? `${t.name}: your next match opens here when it is dealt.`
      : `${t.name}: registered, waiting for the start.${held}`;
  const match = (t.matches || []).find((m) => m.tableId && !m.winnerId
    && [m.topId, m.bottomId].includes(state.playerId) && !state.opened.has(m.tableId));
  if (match && ["lobby", "replay"].includes(state.screen)) {
    state.opened.add(match.tableId);
    state.balanceBefore = null;
    await openTable(match.tableId);
  }
}

async function showBracket(t) {
  await learnNames((t.matches || []).flatMap((m) => [m.topId, m.bottomId]).filter(Boolean));
  const rounds = [];
  for (let r = 1; r <= (t.rounds || 0); r++) {
    const ol = document.createElement("ol");
    ol.setAttribute("aria-label", r === t.rounds ? "Final" : `Round ${r}`);
    for (const m of (t.matches || []).filter((m) => m.round === r)) {
      const li = document.createElement("li");
      const side = (id) => (id ? nameOf(id) : r === 1 ? "(bye)" : "…");
      li.textContent = `${side(m.topId)} vs ${side(m.bottomId)}`
        + (m.winnerId ? `: ${nameOf(m.winnerId)} won` : "");
      li.classList.toggle("won", !!m.winnerId);
      ol.append(li);
    }
    rounds.push(ol);
  }
  if (!rounds.length) {
    const p = document.createElement("p");
    p.textContent = `${t.name}: the bracket is drawn at the start.`;
    rounds.push(p);
  }
  $("bracket").replaceChildren(...rounds);
  $("bracket").hidden = false;
}

// -- friends: follows, presence, challenges, blocks (docs/protocol.md "Friends") -----------

const PRESENCE = {
  FRIEND_STATUS_ONLINE: "online", FRIEND_STATUS_WAITING: "waiting at a table",
  FRIEND_STATUS_PLAYING: "in a match", FRIEND_STATUS_OFFLINE: "offline",
};

function onFriends(view) {
  state.friends = view;
  renderFriends();
}

function following(playerId) {
  return ((state.friends && state.friends.friends) || []).some((f) => f.playerId === playerId);
}

// "Follow <name>" beside a player just met (not a computer seat, not one followed already).
function offerFollow(id, playerId) {
  const b = $(id);
  const offered = !!playerId && playerId !== state.playerId && !playerId.startsWith("cpu-");
  b.hidden = !offered;
  if (!offered) return;
  b.textContent = following(playerId) ? `Following ${nameOf(playerId)}` : `Follow ${nameOf(playerId)}`;
  b.disabled = following(playerId);
  b.onclick = () => friendsCall("Follow", { playerId, following: true }, id === "follow-them" ? "table-error" : "waiting-error")
    .then(() => offerFollow(id, playerId));
}

async function friendsCall(method, request, where = "lobby-error") {
  try {
    onFriends(await conn.call(method, request));
  } catch (err) {
    fail(where, err);
  }
}

function challengeWords(c) {
  const o = c.options || {};
  const stake = o.profile === "wagered" ? `, ${o.bet} diamonds` : "";
  return `${o.profile || "casual"} to ${o.matchLength || 1}${stake}`;
}

async function renderFriends() {
  const view = state.friends || {};
  const friends = view.friends || [];
  const received = (view.received || []).filter((c) => c.status === "pending" || c.status === "declined");
  const sent = (view.sent || []).filter((c) => ["pending", "declined"].includes(c.status));
  await learnNames(view.blocked || []);
  const rows = [];
  for (const c of received.filter((c) => c.status === "pending")) {
    const from = c.fromName || nameOf(c.fromId);
    rows.push([`${from} challenges you: ${challengeWords(c)}`, [
      listButton("Accept", `Accept ${from}'s challenge`, { accept: c.challengeId }, () => lobbyAction(
        async () => (await conn.call("AnswerChallenge", { challengeId: c.challengeId, accept: true })).table)),
      listButton("Decline", `Decline ${from}'s challenge`, { decline: c.challengeId }, async () => {
        try {
          await conn.call("AnswerChallenge", { challengeId: c.challengeId, accept: false });
          onFriends(await conn.call("GetFriends", {}));
        } catch (err) { fail("lobby-error", err); }
      }),
    ]]);
  }
  for (const c of sent) {
    const to = c.toName || nameOf(c.toId);
    rows.push([c.status === "declined" ? `${to} declined your challenge` : `You challenged ${to}`, []]);
  }
  fillList("challenges", "No challenge waiting.", rows);
  const pendingWith = new Set([
    ...received.filter((c) => c.status === "pending").map((c) => c.fromId),
    ...sent.filter((c) => c.status === "pending").map((c) => c.toId)]);
  fillList("friends", "You follow nobody yet.", friends.map((f) => {
    const name = f.displayName || nameOf(f.playerId);
    const acts = [];
    if (f.tableId) {
      acts.push(listButton("Watch", `Watch ${name}`, { watchFriend: f.playerId }, () => openTable(f.tableId, true)));
    }
    // A challenge waiting between the two is answered (or waited for) in Challenges above.
    if (f.status !== "FRIEND_STATUS_PLAYING" && !pendingWith.has(f.playerId)) {
      acts.push(listButton("Challenge", `Challenge ${name}`, { challenge: f.playerId }, () => challenge(f.playerId)));
    }
    acts.push(listButton("Unfollow", `Unfollow ${name}`, { unfollow: f.playerId },
      () => friendsCall("Follow", { playerId: f.playerId, following: false })));
    acts.push(listButton("Block", `Block ${name}`, { block: f.playerId },
      () => friendsCall("Block", { playerId: f.playerId, blocked: true })));
    const challenged = received.some((c) => c.status === "pending" && c.fromId === f.playerId);
    const where = challenged ? "challenges you" : PRESENCE[f.status] || "offline";
    return [[standings.nameButton(f.playerId, name), `: ${where}`], acts];
  }));
  fillList("blocked", "Nobody.", (view.blocked || []).map((id) => [[standings.nameButton(id)], [
    listButton("Unblock", `Unblock ${nameOf(id)}`, { unblock: id },
      () => friendsCall("Block", { playerId: id, blocked: false })),
  ]]));
}

// A challenge opens a private table with the rules of "Create a table" and waits there.
function challenge(playerId) {
  const requestId = `ch-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  return lobbyAction(async () => (await conn.call(
    "Challenge", { playerId, options: createOptions(), requestId })).table);
}

function createOptions() {
  const profile = $("ct-profile").value;
  const options = { profile, matchLength: Number($("ct-length").value) };
  if (profile === "wagered") options.bet = String($("ct-bet").value);
  if (profile === "casual" && $("ct-cube").checked) options.cube = true;
  if (profile !== "scored" && $("ct-rated").checked) options.rated = true; // I-12, I-26
  if (profile === "scored") options.level = "players";
  return options;
}

// -- history: finished matches, replayed move by move, exported as .mat or JSON ----------

const replay = {
  frames: [], at: 0, board: null, names: ["", ""], matchId: "",
  analysis: null, decisions: new Map(), best: false, analysisNote: "",
};

async function listHistory() {
  $("lobby-error").textContent = "";
  try {
    const reply = await conn.call("GetMatchHistory", { limit: 20 });
    const matches = reply.matches || [];
    await learnNames(matches.flatMap((m) => m.playerIds || []));
    fillList("history", "No finished match yet.", matches.map((m) => {
      const seat = (m.playerIds || []).indexOf(state.playerId);
      const score = m.score || [];
      const result = (m.winnerSeat ?? 0) < 0 ? "undecided" : (m.winnerSeat ?? 0) === seat ? "won" : "lost";
      const rival = nameOf((m.playerIds || [])[1 - seat]);
      const ended = Number(m.endedMs || 0);
      const when = ended ? new Date(ended).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) : "";
      const rivalId = (m.playerIds || [])[1 - seat];
      const line = [`${when ? `${when}: ` : ""}${m.profile} vs `, standings.nameButton(rivalId),
        `, ${result} ${score[seat] || 0}-${score[1 - seat] || 0}`];
      return [line, [
        listButton("Replay", `Replay the match vs ${rival}`, { replay: m.matchId }, () => openReplay(m.matchId)),
        listButton(".mat", "Download as a GNU Backgammon match file", { export: "mat" }, () => download(m.matchId, "mat")),
        listButton("JSON", "Download as JSON", { export: "json" }, () => download(m.matchId, "json")),
      ]];
    }));
  } catch (err) {
    fail("lobby-error", err);
  }
}

async function download(matchId, format) {
  try {
    const file = await conn.call("ExportMatch", { matchId, format });
    const url = URL.createObjectURL(new Blob([file.content || ""], { type: file.contentType }));
    const a = document.createElement("a");
    a.href = url;
    a.download = file.filename;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    fail("lobby-error", err);
  }
}

async function openReplay(matchId) {
  try {
    const archived = await conn.call("GetArchivedMatch", { matchId });
    const ids = (archived.summary && archived.summary.playerIds) || [];
    const profile = (archived.summary && archived.summary.profile) || "";
    await learnNames(ids);
    replay.names = [nameOf(ids[0]), nameOf(ids[1])];
    replay.frames = frames(archived.moves || [], (seat) => nameOf(ids[seat]), profile);
    replay.at = 0;
    replay.matchId = matchId;
    replay.analysis = null;
    replay.decisions = new Map();
    replay.best = false;
    $("replay-seed").textContent = archived.seedHex || "";
    $("replay-fingerprint").textContent = archived.fingerprint || "";
    show("replay");
    replay.board = new Board($("replay-board"), () => {});
    showFrame();
    loadAnalysis(matchId);
  } catch (err) {
    fail("lobby-error", err);
  }
}

// The match's analysis (GetAnalysis): each judged decision by the move it judges, the players'
// summary; asked again every few seconds while it waits in the queue and the replay is open.
async function loadAnalysis(matchId) {
  let found;
  try {
    found = await conn.call("GetAnalysis", { matchId });
  } catch (err) {
    found = null;
  }
  if (replay.matchId !== matchId || state.screen !== "replay") return;  // moved on meanwhile
  if (!found) {
    replay.analysisNote = "No analysis of this match.";
    showAnalysis();
    return;
  }
  const stateName = found.state || "";
  if (stateName === "ANALYSIS_STATE_QUEUED") {
    const ahead = Number(found.ahead || 0);
    replay.analysisNote = `Analysis in progress${ahead ? ` (${ahead} match${ahead === 1 ? "" : "es"} ahead)` : ""}…`;
    showAnalysis();
    setTimeout(() => loadAnalysis(matchId), 3000);
    return;
  }
  if (stateName !== "ANALYSIS_STATE_DONE") {
    replay.analysisNote = `This match could not be analysed${found.failure ? `: ${found.failure}` : "."}`;
    showAnalysis();
    return;
  }
  replay.analysis = found;
  replay.decisions = new Map((found.decisions || []).map((d) => [Number(d.moveIndex || 0), d]));
  replay.analysisNote = "";
  showAnalysis();
  showFrame();
}

const signed = (x, digits = 2) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(digits)}`;

function showAnalysis() {
  const a = replay.analysis;
  const summary = $("replay-summary");
  $("replay-help").hidden = !a;
  $("replay-standing").hidden = true;
  if (!a) {
    summary.textContent = replay.analysisNote;
    $("replay-next-mark").disabled = true;
    return;
  }
  $("replay-help").textContent = ERROR_RATE_HELP;
  showErrorStanding(replay.matchId);
  summary.textContent = "Analysis: " + (a.players || []).map((p, seat) => {
    const marks = [[p.veryBad, "very bad"], [p.bad, "bad"], [p.doubtful, "doubtful"]]
      .filter(([n]) => n).map(([n, word]) => `${n} ${word}`).join(", ");
    return `${replay.names[seat]} error rate ${Number(p.errorRate || 0).toFixed(1)} (${p.band || "no decisions"}), `
      + `${p.decisions || 0} decision${p.decisions === 1 ? "" : "s"}${marks ? `, ${marks}` : ""}, luck ${signed(Number(p.luck || 0))}`;
  }).join(" · ");
  $("replay-next-mark").disabled = !(a.decisions || []).some((d) => d.mark);
}

// The viewer's own error rate over their analysed matches, and where it stands among the players.
async function showErrorStanding(matchId) {
  try {
    const trend = await conn.call("GetErrorTrend", {});
    const among = standingAmong(trend);
    if (replay.matchId !== matchId || !Number(trend.decisions || 0)) return;
    const line = $("replay-standing");
    line.textContent = `Your error rate over your analysed matches: ${Number(trend.errorRate || 0).toFixed(1)} `
      + `(${trend.band})${among ? `, ${among}` : ""}.`;
    line.hidden = false;
  } catch { /* the analysis service is away: the match's own figures stand */ }
}

// What the analysis says of the move a frame shows ("" when it judged none there).
function markOf(frame) {
  const d = frame && replay.decisions.get(frame.index);
  if (!d) return { text: "", mark: "", decision: null };
  const who = replay.names[d.seat || 0];
  const lost = Number(d.lost || 0);
  if (!d.mark && lost === 0) return { text: `${who}: the best ${d.kind === "move" ? "play" : "choice"}.`, mark: "", decision: d };
  const word = d.mark ? d.mark[0].toUpperCase() + d.mark.slice(1) : "Slightly off";
  return { text: `${word}: ${who} lost ${lost.toFixed(3)}; best ${d.best}.`, mark: d.mark || "", decision: d };
}

function showFrame() {
  const frame = replay.frames[replay.at];
  if (!frame) return;
  const judged = markOf(frame);
  const d = judged.decision;
  const canShowBest = !!(d && d.kind === "move" && (d.bestSteps || []).length && d.played !== d.best);
  if (!canShowBest) replay.best = false;
  const before = replay.frames[replay.at - 1];
  if (replay.best && before) {
    replay.board.render(after(before.view, d.seat || 0, d.bestSteps));
  } else {
    replay.board.render(frame.view);
  }
  $("replay-mark").textContent = replay.best ? `Best play shown: ${d.best}` : judged.text;
  $("replay-mark").dataset.mark = judged.mark;
  $("replay-best").disabled = !canShowBest;
  $("replay-best").setAttribute("aria-pressed", String(replay.best));
  $("replay-best").textContent = replay.best ? "Show the play made" : "Show best play";
  const v = frame.view;
  const pips = (side) => (side || []).reduce((sum, n, i) => sum + n * (i + 1), 0);
  const score = v.score || [0, 0];
  $("replay-info").textContent = `${replay.names[0]} (white, below) ${pips(v.own)} pips, `
    + `${replay.names[1]} ${pips(v.opponent)} pips · score ${score[0] || 0}-${score[1] || 0}`;
  $("replay-text").textContent = `${replay.at + 1}/${replay.frames.length}: ${frame.text}`;
}

function step(to) {
  replay.at = Math.max(0, Math.min(replay.frames.length - 1, to));
  replay.best = false;
  showFrame();
}

function nextMistake() {
  const later = replay.frames.findIndex((f, i) => i > replay.at && markOf(f).mark);
  const first = replay.frames.findIndex((f) => markOf(f).mark);
  const to = later >= 0 ? later : first;
  if (to >= 0) step(to);
}

// -- boot --------------------------------------------------------------------------------

function wire() {
  $("chat-form").addEventListener("submit", (e) => { e.preventDefault(); sendChat(); });
  $("chat").addEventListener("toggle", () => {
    if (!$("chat").open) return;
    state.chatUnread = 0;
    $("chat-title").textContent = state.chatTitle;
  });
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("login-error").textContent = "";
    try {
      const name = $("guest-name").value.trim();
      nameFits(name);
      await login(name, e.submitter && e.submitter.id === "guest-login");
    } catch (err) { // a refused name is said beside the form, which stays (an invite too)
      fail("login-error", err);
      $("guest-name").focus();
      return;
    }
    await toLobby();
    await joinFromLink();
  });
  $("signin-form").addEventListener("submit", (e) => { e.preventDefault(); signIn(); });
  $("rename-form").addEventListener("submit", (e) => { e.preventDefault(); rename(); });
  $("link-form").addEventListener("submit", (e) => { e.preventDefault(); linkEmail(); });
  $("copy-invite").addEventListener("click", copyInvite);
  $("next-match").addEventListener("click", () => openNext());
  for (const b of document.querySelectorAll("[data-quick]")) {
    b.addEventListener("click", () => lobbyAction(() => {
      state.quick = true; // a stranger is being found: no code to share
      return conn.call("QuickMatch", { options: matchOptions(b.dataset.quick) });
    }, b.parentElement));
  }
  for (const b of document.querySelectorAll("[data-cpu]")) {
    const [profile, level] = b.dataset.cpu.split(":");
    b.addEventListener("click", () => {
      const options = { profile, level, matchLength: Number($("cpu-length").value) };
      if (profile === "casual" && $("cpu-cube").checked) options.cube = true;
      lobbyAction(() => conn.call("CreateTable", { options, public: $("cpu-public").checked }),
        b.parentElement);
    });
  }
  $("create-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const options = createOptions();
    lobbyAction(() => conn.call("CreateTable", { options, public: $("ct-public").checked }),
      e.submitter);
  });
  for (const id of ["qm-bet", "ct-bet", "ct-profile"]) {
    $(id).addEventListener("change", offerWhatIsAffordable);
  }
  $("join-form").addEventListener("submit", (e) => {
    e.preventDefault();
    lobbyAction(() => conn.call("JoinByCode", { code: partyCode($("join-code").value) }),
      e.submitter);
  });
  $("pref-auto-roll").addEventListener("change", async (e) => {
    try {
      await conn.call("SetPreferences", { autoRoll: e.target.checked });
      state.autoRoll = e.target.checked;
    } catch (err) {
      fail("lobby-error", err);
    }
  });
  $("pref-private").addEventListener("change", async (e) => {
    try {
      await conn.call("SetPrivacy", { hideFromSpectators: e.target.checked });
    } catch (err) {
      fail("lobby-error", err);
    }
  });
  $("start-table").addEventListener("click", async () => {
    try {
      await conn.call("StartTable", { tableId: state.tableId }); // the waiting loop sees the deal
    } catch (err) {
      fail("lobby-error", err);
    }
  });
  $("cpu-instead").addEventListener("click", async () => {
    // Out of the quick match's queue, then the same game against the normal computer.
    const { tableId, table } = state;
    const o = (table && table.options) || {};
    state.tableId = "";
    try { await conn.call("LeaveTable", { tableId }); } catch { /* dealt or closed meanwhile */ }
    state.quick = false;
    const options = { profile: o.profile || "casual", level: "normal", matchLength: o.matchLength || 1 };
    lobbyAction(() => conn.call("CreateTable", { options, public: $("cpu-public").checked }),
      $("cpu-instead"));
  });
  $("cancel-table").addEventListener("click", async () => {
    const tableId = state.tableId;
    state.tableId = "";
    try { await conn.call("LeaveTable", { tableId }); } catch { /* closed already */ }
    await toLobby();
  });
  $("refresh-live").addEventListener("click", listLive);
  $("logout").addEventListener("click", logout);
  $("refresh-history").addEventListener("click", listHistory);
  $("replay-first").addEventListener("click", () => step(0));
  $("replay-prev").addEventListener("click", () => step(replay.at - 1));
  $("replay-next").addEventListener("click", () => step(replay.at + 1));
  $("replay-last").addEventListener("click", () => step(replay.frames.length - 1));
  $("replay-close").addEventListener("click", () => toLobby());
  $("replay-next-mark").addEventListener("click", () => nextMistake());
  $("replay-best").addEventListener("click", () => { replay.best = !replay.best; showFrame(); });
  document.addEventListener("keydown", (e) => {
    if (state.screen !== "replay") return;
    if (e.key === "ArrowRight") step(replay.at + 1);
    else if (e.key === "ArrowLeft") step(replay.at - 1);
  });
  $("verify-dice").addEventListener("click", verifyDice);
  $("rematch").addEventListener("click", rematch);
  $("to-lobby").addEventListener("click", backToLobby);
  $("open-standings").addEventListener("click", () => standings.openBoards());
  $("my-profile").addEventListener("click", () => standings.openProfile(state.playerId));
  $("board-choice").addEventListener("change", (e) => standings.choose(e.target.value));
  $("board-prev").addEventListener("click", () => standings.page(standings.offset - 20));
  $("board-next").addEventListener("click", () => standings.page(standings.offset + 20));
  $("board-close").addEventListener("click", () => toLobby());
  $("profile-close").addEventListener("click", () => $("profile").close());
  $("profile-follow").addEventListener("click", async () => {
    const playerId = standings.profile && standings.profile.playerId;
    if (!playerId) return;
    try {
      onFriends(await conn.call("Follow", { playerId, following: true }));
      $("profile-follow").textContent = `Following ${nameOf(playerId)}`;
      $("profile-follow").disabled = true;
    } catch (err) {
      fail("profile-error", err);
    }
  });
  setInterval(renderSeats, 500); // the clocks count down between updates
}

async function boot() {
  wire();
  const saved = JSON.parse(sessionStorage.getItem("bg") || "{}");
  const invited = new URLSearchParams(location.search).get("join");
  if (invited) {
    $("invite-note").textContent = `You are invited to a table (code ${partyCode(invited)}): `
      + "say your name and play to sit down.";
    $("invite-note").hidden = false;
  }
  if (!saved.token) {
    // A new tab or a new visit: the device's session goes on if its refresh token still works.
    if (await renew()) {
      await toLobby();
      await joinFromLink();
    } else show("login");
    return;
  }
  conn.token = saved.token;
  if (localStorage.getItem("bg-refresh")) renew(); // a fresh access token, and its timer
  state.playerId = saved.playerId;
  state.name = saved.name;
  state.guest = !!saved.guest;
  if (!saved.tableId) {
    await toLobby();
    await joinFromLink();
    return;
  }
  if (saved.watching) { await openTable(saved.tableId, true); return; }
  try {
    await refreshMe();
    await waitForDeal(await conn.call("GetTable", { tableId: saved.tableId }));
  } catch (err) {
    if (err.status === "UNAUTHENTICATED" && !(await renew())) {
      sessionStorage.removeItem("bg");
      show("login");
      return;
    }
    await toLobby();
  }
}

// What the page shows, for tests and for debugging from the console.
window.bg = {
  state: () => ({
    screen: state.screen, playerId: state.playerId, tableId: state.tableId,
    seq: state.view ? Number(state.view.seq || 0) : 0, phase: state.view ? phaseOf(state.view) : "",
    myTurn: state.view ? myTurn(state.view) : false, balance: state.balance, verify: state.verify,
    spectator: !!(state.view && state.view.spectator), events: state.eventSeqs.length,
    winner: state.view ? (state.view.winner ?? 0) : null,
    away: state.view ? (state.view.away || []).map(Boolean) : [],
    board: state.view ? { own: shown(state.view).own, opponent: shown(state.view).opponent } : null,
    friends: state.friends ? (state.friends.friends || []).map((f) => [f.playerId, f.status]) : [],
    tournamentId: state.tournamentId,
    name: state.name,
    guest: state.guest,
    lastMove: state.lastMove
      ? state.lastMove.steps.map((st) => [st.from ?? 0, st.to ?? 0, !!st.hit]) : null,
    next: state.next ? { tableId: state.next.tableId, title: state.next.title } : null,
    replay: state.screen === "replay" ? {
      at: replay.at, frames: replay.frames.length, best: replay.best,
      analysed: !!replay.analysis, mark: $("replay-mark").textContent,
      board: replay.board && replay.board.view
        ? { own: replay.board.view.own, opponent: replay.board.view.opponent } : null,
    } : null,
  }),
  seqs: () => [...state.eventSeqs],
  drop: () => conn.drop(),
};

boot();
