// Asking before what cannot be taken back (Resign, Leave: what it costs), the end of a match
// (how it ended, the money, the standing, the dice verified), the rematch, and a tournament's
// next match reaching the player on the end panel.

import { verifyRolls } from "./verify.js";
import {
  $, conn, learnNames, nameOf, nav, opponentName, ORDINAL, other, OVER, phaseOf, REASONS, seatOf,
  standings, state, who,
} from "./session.js";

// -- asking before what cannot be taken back (Resign, Leave) ----------------------------------

export function confirmFirst(what) {
  state.confirming = what;
  nav.renderTable();
}

export function stakeOf(v) {
  return Number((v.options && v.options.bet) || 0) * (v.cube || 1);
}

// What a resignation or a walk-out costs, in the player's words (RULES I-5, I-18, the leaving row).
export function costOf(what, v) {
  if (v.options && v.options.tournament) return tournamentCost(what, v);
  if (what === "resign") {
    return resignWords(v, nav.wageredView(v) ? `: you lose your stake of ${stakeOf(v)} diamonds` : "");
  }
  if (nav.wageredView(v)) {
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
export function tournamentCost(what, v) {
  const t = state.tournamentInfo[state.tournamentOf[state.tableId]];
  if (t === undefined) learnTournament(state.tableId);
  const buyIn = t ? Number(t.buyIn || 0) : 0;
  const out = `you are out of ${t ? t.name : "the tournament"}`
    + (buyIn ? ` and your buy-in of ${buyIn} diamonds stays in its prize pool` : "");
  if (what === "resign") return resignWords(v, `: ${out}`);
  return `Leave the table? You forfeit the match: ${out}.`;
}

// "Resign this game as a single? ann scores 2 points and wins the match<lost>."
export function resignWords(v, lost) {
  const cube = v.cube || 1;
  const ends = ((v.score || [])[other(v)] || 0) + cube >= (v.matchLength || 1);
  const gives = `${opponentName(v)} scores ${cube} point${cube > 1 ? "s" : ""}`;
  return `Resign this game as a single? ${gives}${ends ? ` and wins the match${lost}` : ""}.`;
}

// The tournament a table belongs to (asked once per table), for the words of what leaving costs.
export async function learnTournament(tableId) {
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
    if (state.confirming && state.tableId === tableId) nav.renderTable();
  } catch { // said without the buy-in meanwhile; asked again at the next question
    setTimeout(() => state.learning.delete(tableId), 3000);
  }
}

export function askToConfirm(v, actions) {
  const what = state.confirming;
  const ask = document.createElement("p");
  ask.id = "confirm-text";
  ask.className = "confirm";
  ask.setAttribute("role", "alert");
  ask.textContent = costOf(what, v);
  actions.appendChild(ask);
  const yes = what === "resign" ? "Yes, resign" : "Yes, leave";
  actions.appendChild(nav.button(yes, null, {
    action: `confirm-${what}`,
    run: () => { state.confirming = null; nav.send(what === "resign" ? { resign: {} } : { leave: {} }); },
  }));
  actions.appendChild(nav.button("Cancel", null, {
    action: "cancel", run: () => { state.confirming = null; nav.renderTable(); },
  }));
}

// Why a match closed with no winner: who left (a casual party abandoned), or the reason.
export function closedWhy(v, closed) {
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

export function endedBy(v, reason, winner) {
  if (!BY_LOSER[reason] || winner < 0) return REASONS[reason] || "ended";
  return `${who(v, 1 - winner)} ${BY_LOSER[reason]}`;
}

export function howItEnded(v) {
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

export function moneyOf(v) {
  const stake = stakeOf(v);
  if (!nav.wageredView(v) || !stake || v.spectator) return "";
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

export function renderEnd(v) {
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
  nav.offerFollow("follow-them", v.spectator ? "" : (v.playerIds || [])[1 - me] || "");
  showStanding(v);
  $("end").hidden = false;
}

// What the match changed for this player on the boards (issue 60), once the leaderboard has
// applied it: a wagered match's league (and a rated one's trophies), a scored match's points, a
// ranked casual match's rating.
export function showStanding(v) {
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

export function roundName(t, r) {
  if (r === t.rounds) return "the final";
  if (r === t.rounds - 1) return "the semifinal";
  return `round ${r}`;
}

export async function followTournament() {
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
export async function sayNext(t, tableId) {
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

export async function openNext() {
  const next = state.next;
  if (!next || !next.tableId) return;
  state.opened.add(next.tableId);
  state.balanceBefore = null;
  await nav.openTable(next.tableId);
}

// The revealed seed must reproduce the record's rolls, and the record must hold every roll
// this client saw (in order).
export async function verifyDice() {
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

export function rematch() {
  const v = state.view;
  const offeredBy = v.rematchOfferedBy ?? 0;
  nav.send(offeredBy === other(v) ? { acceptRematch: {} } : { offerRematch: {} });
}

export function backToLobby() {
  conn.leave(state.tableId);
  state.watching = false;
  nav.toLobby();
}
