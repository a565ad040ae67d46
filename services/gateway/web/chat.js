// The table's chat: players' or spectators' channel, muting and reporting.

import { $, conn, fail, learnNames, nameOf, state } from "./session.js";

// -- chat --------------------------------------------------------------------------------
// Players talk on the table's channel, spectators on theirs (kibitz), which the players read
// once the match is over (docs/protocol.md, "Chat").

// Open beside the board on a wide screen; on a phone a line under the log that opens it.
export function openChat() {
  state.chatTitle = state.watching ? "Spectators' chat" : "Table chat";
  state.chatUnread = 0;
  $("chat-title").textContent = state.chatTitle;
  $("chat").open = matchMedia("(min-width: 900px)").matches;
  $("chat-log").replaceChildren();
  $("chat-error").textContent = "";
  loadChat();
}

export async function loadChat() {
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

export function onChat(tableId, message) {
  if (tableId !== state.tableId) return;
  showChat(message);
  if (!$("chat").open && !message.removed) {
    state.chatUnread += 1;
    $("chat-title").textContent = `${state.chatTitle} (${state.chatUnread} new)`;
  }
}

export function showChat(message) {
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

export async function sendChat() {
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

export async function muteChat(playerId) {
  try {
    await conn.call("MuteChat", { playerId, muted: true });
    for (const li of [...$("chat-log").children]) if (li.dataset.sender === playerId) li.remove();
  } catch (err) {
    fail("chat-error", err);
  }
}
