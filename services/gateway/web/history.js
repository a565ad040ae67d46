// History: finished matches, replayed move by move with their analysis, exported as .mat or JSON.

import { Board } from "./board.js";
import { after, frames } from "./replay.js";
import { ERROR_RATE_HELP, standingAmong } from "./words.js";
import {
  $, conn, fail, fillList, learnNames, listButton, nameOf, show, standings, state,
} from "./session.js";

// -- history: finished matches, replayed move by move, exported as .mat or JSON ----------

export const replay = {
  frames: [], at: 0, board: null, names: ["", ""], matchId: "",
  analysis: null, decisions: new Map(), best: false, analysisNote: "",
};

export async function listHistory() {
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

export async function download(matchId, format) {
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

export async function openReplay(matchId) {
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
export async function loadAnalysis(matchId) {
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

export function showAnalysis() {
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
export async function showErrorStanding(matchId) {
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
export function markOf(frame) {
  const d = frame && replay.decisions.get(frame.index);
  if (!d) return { text: "", mark: "", decision: null };
  const who = replay.names[d.seat || 0];
  const lost = Number(d.lost || 0);
  if (!d.mark && lost === 0) return { text: `${who}: the best ${d.kind === "move" ? "play" : "choice"}.`, mark: "", decision: d };
  const word = d.mark ? d.mark[0].toUpperCase() + d.mark.slice(1) : "Slightly off";
  return { text: `${word}: ${who} lost ${lost.toFixed(3)}; best ${d.best}.`, mark: d.mark || "", decision: d };
}

export function showFrame() {
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

export function step(to) {
  replay.at = Math.max(0, Math.min(replay.frames.length - 1, to));
  replay.best = false;
  showFrame();
}

export function nextMistake() {
  const later = replay.frames.findIndex((f, i) => i > replay.at && markOf(f).mark);
  const first = replay.frames.findIndex((f) => markOf(f).mark);
  const to = later >= 0 ? later : first;
  if (to >= 0) step(to);
}
