// The standings (issue 60): the leaderboard service's boards a page at a time with your own rank,
// any player's profile (rating and its course, record, trophies, league, recent matches; your own
// error rate from the analyses), and what a finished match changed for you, in plain words.
// Everything shown is the service's figures as GetLeaderboard / GetRank / GetProfile /
// GetMatchChanges answer them; nothing is computed here but the words.

import { ERROR_RATE_HELP, standingAmong } from "./words.js";

const PAGE = 20;
export const BOARDS = [
  { board: "trophies", key: "", label: "Trophies this week", unit: "trophies" },
  { board: "trophies", key: "all", label: "Trophies, all time", unit: "trophies" },
  { board: "league", key: "", label: "League this week: diamonds won", unit: "diamonds" },
  { board: "scored", key: "players", label: "Scored points against players", unit: "points" },
  { board: "scored", key: "easy", label: "Scored points against the easy computer", unit: "points" },
  { board: "scored", key: "normal", label: "Scored points against the normal computer", unit: "points" },
  { board: "scored", key: "expert", label: "Scored points against the expert computer", unit: "points" },
  { board: "rating", key: "all", label: "Rating (ranked casual matches)", unit: "rating" },
  { board: "tournaments", key: "", label: "Tournament wins this week", unit: "wins" },
  { board: "tournaments", key: "all", label: "Tournament wins, all time", unit: "wins" },
];
const LEVEL = { players: "players", easy: "the easy computer", normal: "the normal computer", expert: "the expert computer" };
const CHANGES_WAIT_S = 20; // the leaderboard applies a match's events within seconds of its end

export const ordinal = (n) => {
  const tens = n % 100;
  const s = tens >= 11 && tens <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] || "th";
  return `${n}${s}`;
};

// A board's figure as the board counts it: a rating with one decimal, the rest whole.
export function figure(board, value) {
  const v = Number(value || 0);
  return board === "rating" ? v.toFixed(1) : String(Math.round(v));
}

const plus = (d, board) => `${d >= 0 ? "+" : "−"}${figure(board, Math.abs(d))}`;

// One change in words: "Rating 1500.0 → 1510.4 (+10.4)". A season's key is this week's: the
// match has just ended.
export function changeWords(c) {
  const before = Number(c.before || 0), after = Number(c.after || 0);
  const moved = `${figure(c.board, before)} → ${figure(c.board, after)} (${plus(after - before, c.board)})`;
  const week = c.key !== "all";
  switch (c.board) {
    case "rating": return `Rating ${moved}`;
    case "trophies": return `Trophies ${week ? "this week" : "all time"} ${moved}`;
    case "league": return `League this week: diamonds won ${moved}`;
    case "scored": return `Scored points against ${LEVEL[c.key] || c.key} ${moved}`;
    case "tournaments": return `Tournament wins ${week ? "this week" : "all time"} ${moved}`;
    default: return `${c.board} ${moved}`;
  }
}

// A course as a line (an inline SVG: the page has no chart library), with its words for a
// screen reader.
function sparkline(values, label) {
  const svgNs = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNs, "svg");
  svg.setAttribute("viewBox", "0 0 200 40");
  svg.setAttribute("class", "course");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  if (values.length < 2) return svg;
  const lo = Math.min(...values), hi = Math.max(...values);
  const span = hi - lo || 1;
  const points = values.map((v, i) => `${(i * 200 / (values.length - 1)).toFixed(1)},${(38 - (v - lo) * 36 / span).toFixed(1)}`);
  const line = document.createElementNS(svgNs, "polyline");
  line.setAttribute("points", points.join(" "));
  svg.append(line);
  return svg;
}

function el(tag, text = "", attrs = {}) {
  const e = document.createElement(tag);
  if (text) e.textContent = text;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

export class Standings {
  // deps: { conn, $, nameOf, learnNames, me(), openReplay(matchId), fail(where, err), show(screen),
  //   following(playerId), errorWhere() }
  constructor(deps) {
    this.d = deps;
    this.which = 0; // the board on screen (BOARDS' index)
    this.offset = 0;
    this.shown = null; // the last page: {key, total, entries, mine}
    this.profile = null; // the profile on screen: {playerId, reply, history, trend}
    this.changes = { matchId: "", lines: null }; // the end panel's: null while asked
  }

  // A player's name that opens their profile.
  nameButton(playerId, text = "") {
    const b = el("button", text || this.d.nameOf(playerId), { class: "who", "data-profile": playerId });
    b.setAttribute("aria-label", `Profile of ${text || this.d.nameOf(playerId)}`);
    b.addEventListener("click", () => this.openProfile(playerId));
    return b;
  }

  // -- the boards ----------------------------------------------------------------------------

  async openBoards() {
    this.d.show("standings");
    const select = this.d.$("board-choice");
    if (!select.options.length) {
      select.append(...BOARDS.map((b, i) => el("option", b.label, { value: String(i) })));
    }
    select.value = String(this.which);
    await this.page(0);
  }

  async choose(index) {
    this.which = Number(index) || 0;
    await this.page(0);
  }

  async page(offset) {
    const { board, key } = BOARDS[this.which];
    try {
      const [top, mine] = await Promise.all([
        this.d.conn.call("GetLeaderboard", { board, key, limit: PAGE, offset: Math.max(0, offset) }),
        this.d.conn.call("GetRank", { board, key, around: 0 }),
      ]);
      const entries = top.entries || [];
      await this.d.learnNames(entries.map((e) => e.playerId));
      this.offset = Math.max(0, offset);
      this.shown = { key: top.key || key, total: Number(top.total || 0), entries, mine };
      this.renderBoard();
    } catch (err) {
      this.d.fail("standings-error", err);
    }
  }

  renderBoard() {
    const { board, unit } = BOARDS[this.which];
    const { total, entries, mine } = this.shown;
    const $ = this.d.$;
    $("standings-error").textContent = "";
    $("board-mine").textContent = Number(mine.rank || 0)
      ? `You: ${ordinal(Number(mine.rank))} of ${total}, ${figure(board, mine.score)} ${unit}.`
      : `You are not on this board yet (${total} player${total === 1 ? "" : "s"} are).`;
    const rows = entries.map((e) => {
      const li = el("li");
      li.dataset.rank = String(e.rank);
      li.dataset.player = e.playerId;
      const me = e.playerId === this.d.me();
      if (me) li.className = "mine";
      li.append(el("span", ordinal(Number(e.rank)), { class: "rank" }), this.nameButton(e.playerId, me ? "You" : ""),
        el("span", `${figure(board, e.score)} ${unit}`, { class: "score" }));
      return li;
    });
    if (!rows.length) rows.push(el("li", "Nobody on this board yet."));
    $("board-rows").replaceChildren(...rows);
    const pages = Math.max(1, Math.ceil(total / PAGE));
    const at = Math.floor(this.offset / PAGE) + 1;
    $("board-page").textContent = `Page ${at} of ${pages}`;
    $("board-prev").disabled = this.offset === 0;
    $("board-next").disabled = this.offset + PAGE >= total;
  }

  // -- a profile -----------------------------------------------------------------------------

  async openProfile(playerId) {
    const $ = this.d.$;
    const own = playerId === this.d.me();
    try {
      const [reply, history, trend] = await Promise.all([
        this.d.conn.call("GetProfile", { playerId }),
        this.d.conn.call("GetMatchHistory", { playerId, limit: 10 }),
        own ? this.d.conn.call("GetErrorTrend", { limit: 50 }) : Promise.resolve(null),
        this.d.learnNames([playerId]),
      ]);
      await this.d.learnNames((history.matches || []).flatMap((m) => m.playerIds || []));
      this.profile = { playerId, reply, history: history.matches || [], trend };
      this.renderProfile();
      const dialog = $("profile");
      if (!dialog.open) dialog.showModal();
    } catch (err) {
      this.d.fail(this.d.errorWhere(), err);
    }
  }

  renderProfile() {
    const $ = this.d.$;
    const { playerId, reply: p, history, trend } = this.profile;
    const own = playerId === this.d.me();
    $("profile-title").textContent = own ? `${this.d.nameOf(playerId)} (you)` : this.d.nameOf(playerId);
    const rated = Number(p.ratedMatches || 0);
    const course = (p.ratingCourse || []).map((r) => Number(r.rating));
    if (course.length && course.length === rated) course.unshift(1500); // from the start
    const body = [];
    body.push(el("p", `Rating ${figure("rating", p.rating)}` + (rated
      ? ` after ${rated} ranked match${rated === 1 ? "" : "es"}` : " (no ranked match yet: everyone starts at 1500)"),
    { "data-figure": "rating" }));
    if (course.length > 1) {
      body.push(sparkline(course, `Rating over the last ${course.length - 1} ranked matches: from ${figure("rating", course[0])} to ${figure("rating", course.at(-1))}`));
    }
    const record = (p.record || []).map((r) => `${r.profile} ${r.wins} won, ${r.losses} lost`);
    body.push(el("p", record.length ? `Record: ${record.join(" · ")}` : "Record: no finished match yet", { "data-figure": "record" }));
    body.push(el("p", `Trophies ${p.trophies || 0} all time, ${p.seasonTrophies || 0} this week`, { "data-figure": "trophies" }));
    const league = Number(p.leagueRank || 0);
    body.push(el("p", `League this week: ${p.leagueDiamonds || 0} diamonds won` + (league ? `, ${ordinal(league)}` : ", not ranked yet"),
      { "data-figure": "league" }));
    const scored = Object.entries(p.scoredPoints || {}).map(([level, n]) => `${n} against ${LEVEL[level] || level}`);
    if (scored.length) body.push(el("p", `Scored points: ${scored.join(", ")}`, { "data-figure": "scored" }));
    if (Number(p.tournamentWins || 0)) {
      body.push(el("p", `Tournaments won: ${p.tournamentWins} (${p.seasonTournamentWins || 0} this week)`, { "data-figure": "tournaments" }));
    }
    if (trend) body.push(...this.trendParts(trend));
    $("profile-body").replaceChildren(...body);
    const rows = history.map((m) => {
      const seat = (m.playerIds || []).indexOf(playerId);
      const winner = m.winnerSeat ?? 0;
      const result = winner < 0 ? "undecided" : winner === seat ? "won" : "lost";
      const rival = this.d.nameOf((m.playerIds || [])[1 - seat]);
      const score = m.score || [];
      const ended = Number(m.endedMs || 0);
      const when = ended ? new Date(ended).toLocaleDateString([], { dateStyle: "medium" }) : "";
      const li = el("li");
      li.append(el("span", `${when ? `${when}: ` : ""}${m.profile} vs ${rival}, ${result} ${score[seat] || 0}-${score[1 - seat] || 0}`, { class: "said" }));
      if ((m.playerIds || []).includes(this.d.me())) { // a replay opens to the match's players
        const b = el("button", "Replay", { "aria-label": `Replay the match vs ${rival}` });
        b.addEventListener("click", () => { $("profile").close(); this.d.openReplay(m.matchId); });
        li.append(b);
      }
      return li;
    });
    if (!rows.length) rows.push(el("li", "No finished match yet."));
    $("profile-matches").replaceChildren(...rows);
    const follow = $("profile-follow");
    follow.hidden = own || playerId.startsWith("cpu-");
    follow.disabled = this.d.following(playerId);
    follow.textContent = `${follow.disabled ? "Following" : "Follow"} ${this.d.nameOf(playerId)}`;
  }

  // Your error rate from the analyses, with what it measures.
  trendParts(trend) {
    const matches = (trend.matches || []).slice().reverse(); // oldest first
    if (!matches.length) return [el("p", "Your error rate: no analysed match yet.", { "data-figure": "error-rate" })];
    const among = standingAmong(trend);
    const parts = [el("p", `Your error rate: ${Number(trend.errorRate || 0).toFixed(1)} (${trend.band || "unrated"}) over `
      + `${matches.length} analysed match${matches.length === 1 ? "" : "es"}, ${trend.decisions || 0} decisions`
      + (among ? `: ${among}` : ""), { "data-figure": "error-rate" })];
    if (matches.length > 1) {
      parts.push(sparkline(matches.map((m) => Number(m.errorRate || 0)), `Error rate match by match, oldest first: from ${Number(matches[0].errorRate || 0).toFixed(1)} to ${Number(matches.at(-1).errorRate || 0).toFixed(1)}`));
    }
    parts.push(el("p", ERROR_RATE_HELP, { class: "help" }));
    return parts;
  }

  // -- what a match changed ------------------------------------------------------------------

  // The end panel's lines for a finished match (asked again until the leaderboard has applied
  // its events, at most CHANGES_WAIT_S): calls `render` with the lines as they arrive.
  async matchChanges(matchId, render, expected = true) {
    if (this.changes.matchId === matchId) { render(this.changes.lines); return; }
    this.changes = { matchId, lines: null };
    if (!expected) { this.changes.lines = []; render([]); return; }
    const until = Date.now() + CHANGES_WAIT_S * 1000;
    while (this.changes.matchId === matchId) {
      try {
        const reply = await this.d.conn.call("GetMatchChanges", { matchId });
        const found = reply.changes || [];
        if (found.length || Date.now() > until) {
          const lines = found.map((c) => changeWords(c));
          const league = found.find((c) => c.board === "league");
          if (league) {
            const rank = await this.d.conn.call("GetRank", { board: "league", key: league.key, around: 0 });
            if (Number(rank.rank || 0)) lines.push(`League standing this week: ${ordinal(Number(rank.rank))}`);
          }
          this.changes.lines = lines;
          render(lines);
          return;
        }
      } catch (err) {
        this.changes.lines = [];
        render([]);
        return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
