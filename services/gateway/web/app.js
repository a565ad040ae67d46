// The browser client's entry: every screen's module, `nav` filled with their functions, the
// page's controls wired to them, and the start (a session resumed, an invite link followed).

import { $, conn, fail, myTurn, nameOf, nav, phaseOf, show, standings, state } from "./session.js";
import { linkEmail, login, logout, nameFits, refreshMe, rename, renew, signIn } from "./account.js";
import {
  copyInvite, joinFromLink, listLive, lobbyAction, matchOptions, offerWhatIsAffordable, partyCode,
  toLobby, waitForDeal,
} from "./lobby.js";
import { openTable, renderSeats, shown } from "./table.js";
import { sendChat } from "./chat.js";
import { backToLobby, openNext, rematch, verifyDice } from "./match_end.js";
import { createOptions, onFriends } from "./friends.js";
import { listHistory, nextMistake, replay, showFrame, step } from "./history.js";
import * as accountScreen from "./account.js";
import * as lobbyScreen from "./lobby.js";
import * as tableScreen from "./table.js";
import * as chatScreen from "./chat.js";
import * as matchEndScreen from "./match_end.js";
import * as tournamentsScreen from "./tournaments.js";
import * as friendsScreen from "./friends.js";
import * as historyScreen from "./history.js";

// Every screen's functions, for the others to call through `nav`.
Object.assign(
  nav,
  accountScreen,
  lobbyScreen,
  tableScreen,
  chatScreen,
  matchEndScreen,
  tournamentsScreen,
  friendsScreen,
  historyScreen,
);

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
