// The lobby: creating and joining tables (party codes, invite links, quick match), waiting for
// the deal, the live tables to watch and the player's own tables to resume.

import { closedSentence } from "./words.js";
import {
  $, conn, fail, fillList, learnNames, listButton, LIVE_REFRESH_MS, nameOf, nav, save, show,
  standings, state,
} from "./session.js";

// The lobby offers a wagered table only for a bet the player's diamonds cover; a bet they do
// not is greyed out with the reason beside it (a guest starts with no diamonds).
export function offerWhatIsAffordable() {
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

export async function copyInvite() {
  const link = $("invite-link");
  try {
    await navigator.clipboard.writeText(link.value);
  } catch { // no clipboard permission (an insecure page, an old browser): the selection's copy
    link.select();
    document.execCommand("copy");
  }
  $("copy-state").textContent = "Copied: send it to your friend.";
}

export async function toLobby() {
  if (state.tableId) conn.leave(state.tableId); // however the page got here: no stream lingers
  state.tableId = "";
  state.watching = false;
  state.table = null;
  state.view = null;
  state.taken = false;
  save();
  show("lobby");
  $("end").hidden = true;
  nav.renderAccount();
  conn.openFriends(); // online to the players who follow this one
  await nav.refreshMe();
  await listMine();
  await nav.listTournaments();
}

export async function lobbyAction(run, near = null) {
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
export function partyCode(text) {
  const found = text.trim().match(/[?&]join=([A-Za-z0-9]+)/);
  return (found ? found[1] : text.trim()).toUpperCase();
}

// An invite link opened (logged in already, or just now): join its table once, then drop the
// code from the address so a reload does not join again. A bad code is said in the lobby.
export async function joinFromLink() {
  const code = new URLSearchParams(location.search).get("join");
  if (!code) return;
  history.replaceState(null, "", location.pathname);
  await lobbyAction(() => conn.call("JoinByCode", { code: partyCode(code) }));
}

export function matchOptions(profile, extra = {}) {
  const options = { profile, matchLength: 1, ...extra };
  if (profile === "wagered" && !options.bet) options.bet = String($("qm-bet").value);
  return options;
}

// -- waiting for the deal ----------------------------------------------------------------

// A quick match nobody else is looking for offers the computer meanwhile after this long.
const OFFER_CPU_AFTER_S = 10;

export async function waitForDeal(table) {
  state.table = table;
  state.tableId = table.tableId;
  const since = Date.now();
  save();
  for (;;) {
    if (table.status === "dealt") return nav.openTable(table.tableId);
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
    nav.offerFollow("follow-friend", full ? (host ? friend : table.hostId) : "");
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

// The matches in play anyone may watch (I-35), each with a Watch button; once asked for, kept
// fresh while the lobby is on screen (a match ends, another starts).
let liveTimer = null;

export async function listLive() {
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
        : listButton("Watch", `Watch ${players}`, { watch: t.tableId }, () => nav.openTable(t.tableId, true));
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

export async function listMine() {
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

export function resumeButton(t, aria) {
  return listButton("Resume", aria, { resume: t.tableId }, async () => {
    try {
      state.balanceBefore = null; // the stake was held before this page saw it
      if (t.status === "dealt") await nav.openTable(t.tableId);
      else await waitForDeal(await conn.call("GetTable", { tableId: t.tableId }));
    } catch (err) {
      fail("lobby-error", err);
    }
  });
}
