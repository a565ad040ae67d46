// The operators' console (issue 61, item 5): the admin API's calls over one WebSocket to the
// identity service (services/identity/console.py), the answers drawn with the DOM (text only:
// chat messages and names are players' words, never markup). The token lives in this tab only.

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

// A new request id (crypto.randomUUID needs a secure context; the console may be plain http).
const requestId = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
const when = (ms) => (Number(ms) ? new Date(Number(ms)).toISOString().replace("T", " ").slice(0, 19) : "");
const n = (value, digits = 1) => Number(value || 0).toFixed(digits);
const thinking = (ms) => (Number(ms || 0) >= 1000 ? `${n(Number(ms) / 1000)} s` : `${Number(ms || 0)} ms`);

// -- the connection: calls by id ----------------------------------------------------------------

class Admin {
  constructor() {
    this.token = sessionStorage.getItem("bg-operator-token") || "";
    this.name = sessionStorage.getItem("bg-operator-name") || "";
    this.calls = new Map();
    this.nextId = 1;
    this.opened = null;
  }

  open() {
    if (this.opened) return this.opened;
    this.opened = new Promise((resolve, reject) => {
      const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`);
      ws.onopen = () => resolve(ws);
      ws.onerror = () => reject(new Error("the console's connection failed"));
      ws.onmessage = (event) => {
        const reply = JSON.parse(event.data);
        const call = this.calls.get(reply.id);
        if (!call) return;
        this.calls.delete(reply.id);
        if (reply.error) call.reject(Object.assign(new Error(reply.error.message || reply.error.code), reply.error));
        else call.resolve(reply.response);
      };
      ws.onclose = () => {
        this.opened = null;
        for (const call of this.calls.values()) call.reject(new Error("connection lost: try again"));
        this.calls.clear();
      };
    });
    return this.opened;
  }

  async call(method, request = {}) {
    const ws = await this.open();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, request, token: this.token }));
    });
  }

  async signIn(name, key) {
    const reply = await this.call("OperatorLogin", { name, key });
    this.token = reply.token;
    this.name = name;
    sessionStorage.setItem("bg-operator-token", this.token);
    sessionStorage.setItem("bg-operator-name", name);
    return reply;
  }

  signOut() {
    this.token = "";
    sessionStorage.removeItem("bg-operator-token");
    sessionStorage.removeItem("bg-operator-name");
  }
}

const admin = new Admin();
const said = (text) => { $("status").textContent = text; };

async function guarded(work) {
  said("");
  try {
    await work();
  } catch (err) {
    if (err.code === "BAD_TOKEN" || err.code === "NO_TOKEN" || err.code === "TOKEN_EXPIRED" || err.code === "NOT_OPERATOR") {
      admin.signOut();
      show();
    }
    said(`Refused: ${err.code || "ERROR"}: ${err.message}`);
  }
}

function reasonField(id, placeholder = "why (kept in the audit log)") {
  return el("label", {}, "Reason", el("input", { id, placeholder, maxlength: 200 }));
}

function reasonOf(id) {
  const reason = $(id).value.trim();
  if (!reason) throw Object.assign(new Error("give a reason: it is kept in the audit log"), { code: "REASON_REQUIRED" });
  return reason;
}

function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: h.startsWith("#") ? "num" : "" }, h.replace(/^#/, ""))))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c, i) => el("td", { class: headers[i].startsWith("#") ? "num" : "" }, c))))));
}

// -- the review queue ------------------------------------------------------------------------

async function queueView(view) {
  const state = el("select", { id: "flag-state" },
    ["open", "cleared", "restricted", "banned", "all"].map((s) => el("option", { value: s }, s)));
  const list = el("div", { id: "flags" });
  const load = () => guarded(async () => {
    const found = await admin.call("ListFlags", { state: state.value, limit: 100 });
    const flags = found.flags || [];
    list.replaceChildren(flags.length ? "" : el("p", {}, `No ${state.value === "all" ? "" : state.value + " "}flags.`),
      ...flags.map((flag) => flagCard(flag, load)));
  });
  state.addEventListener("change", load);
  view.append(el("h2", {}, "Review queue"),
    el("p", {}, "Players the fair-play test flagged (docs/fair-play.md), oldest first, each with the matches that raised the flag. ",
      "Clear starts the test again from nothing (the same matches never flag the player again); restrict keeps them to casual unrated play; ban ends their account's play."),
    el("div", { class: "row" }, el("label", {}, "Show", state)), list);
  await load();
}

function flagCard(flag, reload) {
  const id = flag.flagId;
  const reasonId = `reason-${id}`;
  const decide = (decision) => guarded(async () => {
    const decided = await admin.call("DecideFlag", { flagId: id, decision, reason: reasonOf(reasonId) });
    await reload();
    said(`Flag ${id}: ${decided.state} (${flag.playerId})`);
  });
  return el("section", { class: "card flag", "data-flag": id },
    el("h3", {}, `Flag ${id}: `, playerLink(flag.playerId), " ", el("span", { class: "tag bad" }, flag.state)),
    el("dl", { class: "facts" },
      el("dt", {}, "Flagged"), el("dd", {}, when(flag.flaggedMs)),
      el("dt", {}, "Test value"), el("dd", {}, `${n(flag.statistic)} (threshold ${n(flag.threshold)})`),
      flag.decidedBy ? [el("dt", {}, "Decided"), el("dd", {}, `${flag.state} by ${flag.decidedBy} at ${when(flag.decidedMs)}: ${flag.reason}`)] : null),
    evidenceTable(flag.matches || []),
    flag.state === "open" ? el("div", { class: "row" }, reasonField(reasonId),
      el("button", { on: { click: () => decide("clear") } }, "Clear"),
      el("button", { class: "primary", on: { click: () => decide("restrict") } }, "Restrict"),
      el("button", { class: "danger", on: { click: () => decide("ban") } }, "Ban")) : null);
}

// Each match's fair-play evidence: the decisions by difficulty and the best found, the error
// rates, the think times, the log likelihood ratios and the test's value after it.
function evidenceTable(matches) {
  return table(["Match", "Ended", "Profile", "#Close: best", "#Clear: best", "#Checker error", "#Cube error", "#Think close / clear", "#Choice", "#Time", "#Test after"],
    matches.map((m) => [m.matchId, when(m.endedMs), m.profile,
      `${m.closeBest || 0}/${m.close || 0}`, `${m.clearBest || 0}/${m.clear || 0}`,
      n(m.checkerErrorRate), m.cubeDecisions ? `${n(m.cubeErrorRate)} (${m.cubeDecisions})` : "-",
      `${thinking(m.closeThinkMs)} / ${thinking(m.clearThinkMs)}`,
      n(m.choice, 2), n(m.timing, 2), n(m.statistic)]));
}

// -- a player ---------------------------------------------------------------------------------

function playerLink(playerId) {
  return el("a", { href: `#player=${encodeURIComponent(playerId)}`, on: { click: (e) => { e.preventDefault(); go("player", playerId); } } }, playerId);
}

async function playerView(view, playerId = "") {
  const input = el("input", { id: "player-id", value: playerId, placeholder: "player id" });
  const out = el("div", { id: "player" });
  const look = () => guarded(async () => {
    const id = input.value.trim();
    if (!id) return;
    const [record, flags, reports] = await Promise.all([
      admin.call("LookupPlayer", { playerId: id }),
      admin.call("ListFlags", { state: "all", playerId: id }),
      admin.call("ListChatReports", { limit: 200 }),
    ]);
    const against = (reports.reports || []).filter((r) => r.message && r.message.senderId === id);
    out.replaceChildren(...playerPage(id, record, flags.flags || [], against, look));
  });
  view.append(el("h2", {}, "Player"),
    el("form", { class: "row", on: { submit: (e) => { e.preventDefault(); look(); } } },
      el("label", {}, "Player id", input), el("button", { type: "submit", class: "primary" }, "Look up")), out);
  if (playerId) await look();
}

function playerPage(id, r, flags, reports, reload) {
  const act = (method, label) => guarded(async () => {
    await admin.call(method, { playerId: id, reason: reasonOf("player-reason") });
    await reload();
    said(`${label}: ${id}`);
  });
  const trend = r.errorTrend || {};
  const course = [...(trend.matches || [])].reverse();
  return [
    el("section", { class: "card" },
      el("h3", {}, r.displayName || id, " ",
        r.banned ? el("span", { class: "tag bad" }, "banned") : null,
        r.restricted ? el("span", { class: "tag bad" }, "restricted") : null),
      el("dl", { class: "facts" },
        el("dt", {}, "Id"), el("dd", {}, id),
        el("dt", {}, "Kind"), el("dd", {}, r.kind || ""),
        el("dt", {}, "Since"), el("dd", {}, when(r.createdMs)),
        el("dt", {}, "Balance"), el("dd", { id: "player-balance" }, `${Number(r.balance || 0)} diamonds`),
        el("dt", {}, "Ban"), el("dd", {}, r.banned ? `banned: ${r.banReason}` : "none"),
        el("dt", {}, "Restriction"), el("dd", { id: "player-restriction" }, r.restricted ? `casual unrated only: ${r.restrictionReason}` : "none"),
        el("dt", {}, "Error rate"), el("dd", {}, trend.decisions ? `${n(trend.errorRate)} over ${trend.decisions} decisions (${trend.band})` : "no analysed match")),
      el("div", { class: "row" }, reasonField("player-reason"),
        el("button", { on: { click: () => act(r.restricted ? "Unrestrict" : "Restrict", r.restricted ? "Restriction lifted" : "Restricted") } }, r.restricted ? "Lift restriction" : "Restrict"),
        el("button", { class: "danger", on: { click: () => act(r.banned ? "Unban" : "Ban", r.banned ? "Unbanned" : "Banned") } }, r.banned ? "Unban" : "Ban"))),
    el("section", { class: "card" }, el("h3", {}, "Error rate, match by match (thousandths a decision)"),
      course.length ? courseChart(course) : el("p", {}, "No analysed match yet."),
      table(["Match", "Ended", "Profile", "#Decisions", "#Error rate"],
        (trend.matches || []).map((m) => [m.matchId, when(m.endedMs), m.profile, m.decisions, n(m.errorRate)]))),
    el("section", { class: "card", id: "player-fair-play" }, el("h3", {}, "Fair-play test"),
      el("p", {}, `Value now ${n((r.fairPlay || {}).statistic)} (flagged at ${n((r.fairPlay || {}).threshold)})`,
        Number((r.fairPlay || {}).openFlag) ? `; flag ${r.fairPlay.openFlag} waits in the review queue` : ""),
      evidenceTable((r.fairPlay || {}).matches || [])),
    el("section", { class: "card" }, el("h3", {}, "Fair-play flags"),
      flags.length ? table(["Flag", "Flagged", "State", "#Test value", "Decided by", "Reason"],
        flags.map((f) => [f.flagId, when(f.flaggedMs), f.state, n(f.statistic), f.decidedBy || "", f.reason || ""])) : el("p", {}, "None.")),
    el("section", { class: "card" }, el("h3", {}, "Ledger (latest 20)"),
      table(["When", "Kind", "#Amount", "Match", "Memo"],
        (r.ledger || []).map((e) => [when(e.atMs), e.kind, Number(e.amount || 0), e.matchId || "", e.memo || ""]))),
    el("section", { class: "card" }, el("h3", {}, "Matches (latest 20)"),
      table(["Match", "Ended", "Profile", "Players", "Score", "Result"],
        (r.matches || []).map((m) => [m.matchId, when(m.endedMs), m.profile, (m.playerIds || []).join(" v "),
          (m.score || []).join("-"), (m.playerIds || [])[m.winnerSeat || 0] === id ? "won" : "lost"]))),
    el("section", { class: "card" }, el("h3", {}, "Chat reports against them"),
      reports.length ? table(["Reported", "By", "Message", "Reason"],
        reports.map((c) => [when(c.reportedMs), c.reporterId, c.message.text, c.reason])) : el("p", {}, "None.")),
  ];
}

// The error rate's course as a line, oldest match first (an inline SVG: the console loads no
// script but its own).
function courseChart(matches) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const w = 600, h = 150, pad = 28;
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("class", "course");
  svg.setAttribute("role", "img");
  const rates = matches.map((m) => Number(m.errorRate || 0));
  const top = Math.max(10, ...rates);
  const x = (i) => pad + (matches.length < 2 ? (w - 2 * pad) / 2 : (i * (w - 2 * pad)) / (matches.length - 1));
  const y = (v) => h - pad + 8 - (v / top) * (h - pad - 8);
  svg.setAttribute("aria-label", `error rate over ${matches.length} matches, from ${n(rates[0])} to ${n(rates[rates.length - 1])}`);
  for (const v of [0, top / 2, top]) {
    const line = document.createElementNS(ns, "line");
    Object.entries({ x1: pad, x2: w - pad, y1: y(v), y2: y(v) }).forEach(([k, val]) => line.setAttribute(k, val));
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", 2);
    label.setAttribute("y", y(v) + 3);
    label.textContent = n(v, 0);
    svg.append(line, label);
  }
  const poly = document.createElementNS(ns, "polyline");
  poly.setAttribute("points", rates.map((v, i) => `${x(i)},${y(v)}`).join(" "));
  svg.append(poly);
  rates.forEach((v, i) => {
    const dot = document.createElementNS(ns, "circle");
    Object.entries({ cx: x(i), cy: y(v), r: 3, fill: "#1f5fa8" }).forEach(([k, val]) => dot.setAttribute(k, val));
    svg.append(dot);
  });
  return svg;
}

// -- chat reports -------------------------------------------------------------------------------

async function reportsView(view) {
  const list = el("div", { id: "reports" });
  const load = () => guarded(async () => {
    const found = (await admin.call("ListChatReports", { limit: 100 })).reports || [];
    list.replaceChildren(found.length ? "" : el("p", {}, "No chat report waiting."), ...found.map((r) => {
      const reasonId = `report-${r.reportId}`;
      const done = (method, request, label) => guarded(async () => {
        await admin.call(method, { ...request, reason: reasonOf(reasonId) });
        await load();
        said(label);
      });
      return el("section", { class: "card report" },
        el("h3", {}, `Report by ${r.reporterId} at ${when(r.reportedMs)}`),
        el("p", {}, "Reported message from ", playerLink(r.message.senderId), ": ", el("q", {}, r.message.text)),
        el("p", {}, `Their reason: ${r.reason || "(none)"}`),
        table(["Sent", "From", "Text"], (r.context || []).map((m) => [when(m.sentMs), m.senderId, m.text])),
        el("div", { class: "row" }, reasonField(reasonId),
          el("button", { on: { click: () => done("ResolveChatReport", { reportId: r.reportId }, "Report resolved") } }, "Resolve"),
          el("button", { class: "danger", on: { click: () => done("RemoveChatMessage", { tableId: r.message.tableId, messageId: r.message.messageId }, "Message removed") } }, "Remove the message")));
    }));
  });
  view.append(el("h2", {}, "Chat reports"), list);
  await load();
}

// -- tournaments ------------------------------------------------------------------------------

async function tournamentsView(view) {
  const list = el("div", { id: "tournaments" });
  const field = (label, input) => el("label", {}, label, input);
  const form = el("form", { class: "card row", id: "tournament-form" },
    field("Name", el("input", { id: "t-name", required: true, maxlength: 40 })),
    field("Kind", el("select", { id: "t-kind" }, el("option", { value: "sit_and_go" }, "sit and go"), el("option", { value: "scheduled" }, "scheduled"))),
    field("Profile", el("select", { id: "t-profile" }, ["scored", "casual", "wagered"].map((p) => el("option", { value: p }, p)))),
    field("Players", el("input", { id: "t-size", type: "number", min: 2, max: 64, value: 4 })),
    field("Match lengths by round", el("input", { id: "t-lengths", value: "1,1" })),
    field("Buy-in (wagered)", el("input", { id: "t-buyin", type: "number", min: 0, value: 0 })),
    el("button", { type: "submit", class: "primary" }, "Create"));
  const load = () => guarded(async () => {
    const found = (await admin.call("ListTournaments", { limit: 50 })).tournaments || [];
    list.replaceChildren(found.length ? "" : el("p", {}, "No tournament."), ...found.map((t) => tournamentCard(t, load)));
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    guarded(async () => {
      const lengths = $("t-lengths").value.split(",").map((s) => Number(s.trim())).filter(Boolean);
      const created = await admin.call("CreateTournament", {
        name: $("t-name").value.trim(), kind: $("t-kind").value, size: Number($("t-size").value),
        lengths, options: { profile: $("t-profile").value, matchLength: lengths[0] || 1, bet: String(Number($("t-buyin").value) || 0) },
        requestId: requestId(), startsMs: $("t-kind").value === "scheduled" ? String(Date.now() + 3600e3) : "0",
      });
      await load();
      said(`Tournament created: ${created.name}`);
    });
  });
  view.append(el("h2", {}, "Tournaments"), form, list);
  await load();
}

// An empty seat of the bracket: a bye in the first round, a winner to come after it.
const empty = (round) => (round <= 1 ? "(bye)" : "(to be decided)");

function tournamentCard(t, reload) {
  const reasonId = `cancel-${t.tournamentId}`;
  const rounds = new Map();
  for (const m of t.matches || []) {
    if (!rounds.has(m.round || 0)) rounds.set(m.round || 0, []);
    rounds.get(m.round || 0).push(m);
  }
  const open = t.status === "registering" || t.status === "running";
  return el("section", { class: "card tournament", "data-tournament": t.tournamentId },
    el("h3", {}, `${t.name} `, el("span", { class: "tag" }, t.status)),
    el("dl", { class: "facts" },
      el("dt", {}, "Kind"), el("dd", {}, `${t.kind}, ${(t.options || {}).profile || ""}, ${t.size} players`),
      el("dt", {}, "Field"), el("dd", {}, (t.playerIds || []).join(", ") || "nobody yet"),
      t.cancelReason ? [el("dt", {}, "Cancelled"), el("dd", {}, t.cancelReason)] : null),
    rounds.size ? el("div", { class: "bracket" }, [...rounds.entries()].sort((a, b) => a[0] - b[0]).map(([round, ms]) =>
      el("div", { class: "round" }, el("strong", {}, `Round ${round}`), ms.sort((a, b) => (a.slot || 0) - (b.slot || 0)).map((m) =>
        el("div", { class: "match" },
          el("div", { class: m.winnerId && m.winnerId === m.topId ? "winner" : "" }, m.topId || empty(round)),
          el("div", { class: m.winnerId && m.winnerId === m.bottomId ? "winner" : "" }, m.bottomId || empty(round))))))) : el("p", {}, "No bracket yet (it is drawn when the tournament starts)."),
    open ? el("div", { class: "row" }, reasonField(reasonId),
      el("button", { class: "danger", on: { click: () => guarded(async () => {
        await admin.call("CancelTournament", { tournamentId: t.tournamentId, reason: reasonOf(reasonId) });
        await reload();
        said(`Tournament cancelled: ${t.name}`);
      }) } }, "Cancel")) : null);
}

// -- the audit log ------------------------------------------------------------------------------

async function auditView(view) {
  const target = el("input", { id: "audit-target", placeholder: "player or table id (empty: all)" });
  const out = el("div", { id: "audit" });
  const load = () => guarded(async () => {
    const entries = (await admin.call("ListAudit", { limit: 200, target: target.value.trim() })).entries || [];
    out.replaceChildren(table(["When", "Operator", "Action", "Target", "Reason", "Outcome"],
      entries.map((e) => [when(e.atMs), e.operator, e.action, e.target, e.reason, e.outcome])));
  });
  view.append(el("h2", {}, "Audit log"),
    el("form", { class: "row", on: { submit: (e) => { e.preventDefault(); load(); } } },
      el("label", {}, "Target", target), el("button", { type: "submit" }, "Show")), out);
  await load();
}

// -- the frame ----------------------------------------------------------------------------------

const VIEWS = { queue: queueView, player: playerView, reports: reportsView, tournaments: tournamentsView, audit: auditView };
let current = "queue";

async function go(name, arg) {
  current = name;
  for (const b of document.querySelectorAll("nav button[data-view]")) {
    if (b.dataset.view === name) b.setAttribute("aria-current", "page");
    else b.removeAttribute("aria-current");
  }
  const view = $("view");
  view.replaceChildren();
  view.dataset.view = name;
  await VIEWS[name](view, arg);
}

function show() {
  const signedIn = Boolean(admin.token);
  $("signin").hidden = signedIn;
  $("nav").hidden = !signedIn;
  $("who").textContent = signedIn ? `Signed in as ${admin.name}` : "";
  if (signedIn) go(current);
  else $("view").replaceChildren();
}

$("signin").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("signin-error").textContent = "";
  try {
    await admin.signIn($("signin-name").value.trim(), $("signin-key").value);
    $("signin-key").value = "";
    show();
  } catch (err) {
    $("signin-error").textContent = err.code === "BAD_CREDENTIALS" ? "Wrong operator name or key." : `Refused: ${err.code}: ${err.message}`;
  }
});
for (const b of document.querySelectorAll("nav button[data-view]")) b.addEventListener("click", () => go(b.dataset.view));
$("signout").addEventListener("click", () => { admin.signOut(); show(); });
window.console_state = () => ({ view: current, signedIn: Boolean(admin.token) });
show();
