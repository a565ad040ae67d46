// Tournaments: the lobby's list, registering and leaving, the bracket, your next match.

import {
  $, conn, fail, fillList, learnNames, listButton, nameOf, nav, ORDINAL, state,
} from "./session.js";

let tournamentTimer = null;

export async function listTournaments() {
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
export function moneyWords(t) {
  const buyIn = Number(t.buyIn || 0);
  if (!buyIn) return "";
  const prizes = Number(t.prizeMoney || 0);
  return prizes ? `, buy-in ${buyIn} diamonds, ${prizes} to win` : `, buy-in ${buyIn} diamonds`;
}

export async function tournamentCall(method, tournamentId) {
  try {
    await conn.call(method, { tournamentId });
  } catch (err) {
    fail("lobby-error", err);
  }
  await listTournaments();
}

// Your match dealt in the bracket: its table opens (your seat is waiting there).
export async function nextMatch(t) {
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
    await nav.openTable(match.tableId);
  }
}

export async function showBracket(t) {
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
