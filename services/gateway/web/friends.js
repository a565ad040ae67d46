// Friends: follows, presence, challenges, blocks (docs/protocol.md "Friends").

import {
  $, conn, fail, fillList, learnNames, listButton, nameOf, nav, standings, state,
} from "./session.js";

// -- friends: follows, presence, challenges, blocks (docs/protocol.md "Friends") -----------

const PRESENCE = {
  FRIEND_STATUS_ONLINE: "online", FRIEND_STATUS_WAITING: "waiting at a table",
  FRIEND_STATUS_PLAYING: "in a match", FRIEND_STATUS_OFFLINE: "offline",
};

export function onFriends(view) {
  state.friends = view;
  renderFriends();
}

export function following(playerId) {
  return ((state.friends && state.friends.friends) || []).some((f) => f.playerId === playerId);
}

// "Follow <name>" beside a player just met (not a computer seat, not one followed already).
export function offerFollow(id, playerId) {
  const b = $(id);
  const offered = !!playerId && playerId !== state.playerId && !playerId.startsWith("cpu-");
  b.hidden = !offered;
  if (!offered) return;
  b.textContent = following(playerId) ? `Following ${nameOf(playerId)}` : `Follow ${nameOf(playerId)}`;
  b.disabled = following(playerId);
  b.onclick = () => friendsCall("Follow", { playerId, following: true }, id === "follow-them" ? "table-error" : "waiting-error")
    .then(() => offerFollow(id, playerId));
}

export async function friendsCall(method, request, where = "lobby-error") {
  try {
    onFriends(await conn.call(method, request));
  } catch (err) {
    fail(where, err);
  }
}

export function challengeWords(c) {
  const o = c.options || {};
  const stake = o.profile === "wagered" ? `, ${o.bet} diamonds` : "";
  return `${o.profile || "casual"} to ${o.matchLength || 1}${stake}`;
}

export async function renderFriends() {
  const view = state.friends || {};
  const friends = view.friends || [];
  const received = (view.received || []).filter((c) => c.status === "pending" || c.status === "declined");
  const sent = (view.sent || []).filter((c) => ["pending", "declined"].includes(c.status));
  await learnNames(view.blocked || []);
  const rows = [];
  for (const c of received.filter((c) => c.status === "pending")) {
    const from = c.fromName || nameOf(c.fromId);
    rows.push([`${from} challenges you: ${challengeWords(c)}`, [
      listButton("Accept", `Accept ${from}'s challenge`, { accept: c.challengeId }, () => nav.lobbyAction(
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
      acts.push(listButton("Watch", `Watch ${name}`, { watchFriend: f.playerId }, () => nav.openTable(f.tableId, true)));
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
export function challenge(playerId) {
  const requestId = `ch-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
  return nav.lobbyAction(async () => (await conn.call(
    "Challenge", { playerId, options: createOptions(), requestId })).table);
}

export function createOptions() {
  const profile = $("ct-profile").value;
  const options = { profile, matchLength: Number($("ct-length").value) };
  if (profile === "wagered") options.bet = String($("ct-bet").value);
  if (profile === "casual" && $("ct-cube").checked) options.cube = true;
  if (profile !== "scored" && $("ct-rated").checked) options.rated = true; // I-12, I-26
  if (profile === "scored") options.level = "players";
  return options;
}
