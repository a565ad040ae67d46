// Signing in and out (a guest by device, an account by email), the session's renewal, and the
// lobby's Account card: one player on every device (a name, an email and password to sign in with).

import { ApiError } from "./api.js";
import { SAYS } from "./words.js";
import { $, conn, fail, nav, save, show, state } from "./session.js";

// -- signing in and out ------------------------------------------------------------------

// A device login keeps the same player (diamonds, trophies, history) on this browser: its device
// id is a secret kept in localStorage, as is the session's refresh token; the short-lived
// access token is renewed with it before it expires. A guest is a new player each time.
export function deviceId() {
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

export function nameFits(name) {
  if (!name) throw new Error("Type the name you want to play under (3 to 20 letters or digits).");
  const letters = [...name].length;
  if (letters > NAME_MAX) {
    throw new Error(`That name has ${letters} letters: a name has at most ${NAME_MAX}. Shorten it and try again.`);
  }
}

// A device's first login asks for the exact name: one another player holds is refused
// (NAME_TAKEN), never quietly numbered, so the player chooses what they are called.
export async function login(name, guest) {
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

export function loggedIn(reply) {
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
export async function renew() {
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

export async function logout() {
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
export async function refreshMe() {
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
  if (state.screen === "table" && state.view) nav.renderEnd(state.view);
  nav.offerWhatIsAffordable();
}

// -- the account: one player on every device (a name, an email and password to sign in with) --

export function renderAccount() {
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
export function renderSaved() {
  $("link-state").textContent = state.email ? savedWords(state.email)
    : "Save an email and password to play as yourself on another device.";
  $("link-save").textContent = state.email ? "Change email and password" : "Save email and password";
  if (state.email && !$("link-email").value) $("link-email").value = state.email;
}

export function savedWords(email) {
  return `Saved: on another device, choose “Sign in” with ${email} and your password to play as yourself.`;
}

export async function rename() {
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

export async function linkEmail() {
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

export async function signIn() {
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
  await nav.toLobby();
  await nav.joinFromLink();
}
