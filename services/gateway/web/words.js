// What a player reads for each error code the server can send (docs/protocol.md, "What players
// read", is made from this table: tests/client/test_error_words.py holds the two together). The
// server's own message is for developers and is never shown.

export const SAYS = {
  WRONG_PHASE: "That is not possible right now.",
  NOT_YOUR_TURN: "Wait for your turn.",
  ILLEGAL_STEP: "That checker cannot move there.",
  INCOMPLETE_PLAY: "Play every die you can before you finish the turn.",
  NO_DICE_LEFT: "Both dice are played: finish the turn.",
  NOTHING_TO_UNDO: "There is nothing to take back.",
  TIME_UP: "Your time ran out: the table plays for you.",
  CANNOT_DOUBLE: "You cannot double now.",
  CANNOT_COVER: "Not enough diamonds to cover the raise.",
  NOT_AVAILABLE: "This table does not offer that.",
  NO_CLOCK: "This table has no clock to boost.",
  NO_BOOSTS_LEFT: "No boosts left this game.",
  CANNOT_TAKE_BACK: "That move can no longer be taken back.",
  MATCH_OVER: "The match is over.",
  ALREADY_OFFERED: "You already offered that.",
  NOT_OFFERED: "Nothing was offered to answer.",
  ALREADY_AGREED: "Already agreed.",
  ALREADY_AWAY: "You are already away.",
  NOT_AWAY: "You are back at the table.",
  BAD_SEAT: "You do not sit in that seat.",
  UNKNOWN_COMMAND: "This client sent something the table does not know. Reload the page.",
  RATE_LIMITED: "Too fast: wait a moment and try again.",
  TOO_MANY_STREAMS: "Too many tables open in this tab: leave one first.",
  TOO_MANY_TABLES: "You have too many tables waiting for an opponent: leave one first.",
  MALFORMED: "This client sent something the server cannot read. Reload the page.",
  TOO_LONG: "That is too long.",
  MISSING: "Fill this in first.",
  INVALID_OPTION: "Those table options are not allowed.",
  INVALID_CODE: "A party code is 6 letters or digits, or paste the whole invite link.",
  INVALID_NAME: "Choose another name: 3 to 20 letters or digits (a space, _ or - inside), not starting with cpu, guest or admin.",
  INVALID_DEVICE: "This browser's device id is damaged: clear the site's data and log in again.",
  INVALID_EMAIL: "That does not look like an email address.",
  WEAK_PASSWORD: "Choose a longer password.",
  INVALID_LIMIT: "Ask for fewer at a time.",
  INVALID_OFFSET: "That page is past the end of the board.",
  INVALID_AROUND: "Ask for fewer neighbours on the board.",
  BAD_FORMAT: "That file format is not offered.",
  INVALID_TARGET: "Nobody to do that to.",
  INVALID_IDEMPOTENCY_KEY: "This client sent a bad request id. Reload the page.",
  INVALID_AMOUNT: "That amount is not allowed.",
  REASON_REQUIRED: "Say why.",
  TOO_MANY: "Too many at once.",
  REQUEST_ID_REUSED: "This client reused a request id. Reload the page.",
  REQUEST_IN_PROGRESS: "Still working on it: try again in a moment.",
  JOIN_FIRST: "Open the table first.",
  NAME_THE_TABLE: "Pick the table this is for.",
  NOT_JOINED: "Open the table first.",
  ALREADY_JOINED: "This table is already open here.",
  ALREADY_WATCHING: "You are already watching this table.",
  ALREADY_OPEN: "Your friends are already open in this tab.",
  WATCHING_ONLY: "You are watching: spectators cannot play.",
  STREAM_ENDED: "The connection to the table dropped: reconnecting.",
  SEAT_TAKEN: "This match is open in another tab or device, which plays it now.",
  HINT_NOT_ALLOWED: "Hints are for games against the computer and scored test games.",
  HINT_NOT_NOW: "A hint is for the start of your move, once the dice are rolled.",
  CHAT_EMPTY: "Say something first.",
  CHAT_TOO_LONG: "That message is too long.",
  CHAT_BAD_TEXT: "That message has characters chat does not take.",
  CHAT_CHANNEL: "This client asked for something the server does not offer. Reload the page.",
  CHAT_MUTE_SELF: "You cannot mute yourself.",
  CHAT_GUESTS: "Sign in with an account to chat.",
  CHAT_NOT_SEATED: "Table chat is for the two players.",
  CHAT_KIBITZ_PLAYERS: "Spectators' chat opens to the players when the match is over.",
  CHAT_MUTES_FULL: "You have muted as many players as you can.",
  CHAT_SILENCED: "An operator has kept you from chatting for a while.",
  UNKNOWN_MESSAGE: "That message is gone.",
  FRIEND_SELF: "That is you.",
  FRIEND_BLOCKED: "You cannot follow or challenge this player.",
  UNKNOWN_PLAYER: "There is no such player.",
  FOLLOWS_FULL: "You follow as many players as you can: unfollow one first.",
  BLOCKS_FULL: "You have blocked as many players as you can.",
  CHALLENGE_NOT_FOLLOWED: "Follow a player to challenge them.",
  CHALLENGES_FULL: "Too many challenges are waiting: wait for an answer first.",
  UNKNOWN_CHALLENGE: "That challenge is gone.",
  CHALLENGE_EXPIRED: "That challenge has lapsed.",
  CHALLENGE_ANSWERED: "That challenge was answered already.",
  CHALLENGE_GONE: "The challenger has left that table.",
  UNKNOWN_TOURNAMENT: "That tournament is gone.",
  TOURNAMENT_CLOSED: "Registration for that tournament is closed.",
  TOURNAMENT_FULL: "That tournament is full.",
  TOURNAMENT_ELSEWHERE: "You are playing another tournament: finish it first.",
  TOURNAMENT_STARTED: "The tournament has started: you cannot withdraw now.",
  NOT_REGISTERED: "You are not registered for that tournament.",
  TOURNAMENT_OVER: "That tournament has ended.",
  INVALID_SIZE: "A sit-and-go takes 4, 8, 16 or 32 players.",
  INVALID_KIND: "A tournament is a sit-and-go or scheduled.",
  INVALID_START: "A scheduled tournament starts in the future.",
  UNKNOWN_METHOD: "This client asked for something the server does not offer. Reload the page.",
  UNKNOWN_TABLE: "That table is gone.",
  UNKNOWN_CODE: "No table has that code: check it, or ask for a new invite.",
  UNKNOWN_MATCH: "That match is gone.",
  UNKNOWN_BOARD: "There is no such leaderboard.",
  UNKNOWN_LEVEL: "There is no such computer level.",
  NO_ACCOUNT: "Guests have no account.",
  NOT_SEATED: "You do not sit at this table.",
  NOT_YOUR_SEAT: "You do not sit in that seat.",
  NOT_HOST: "Only the table's host can do that.",
  NOT_WATCHABLE: "This table is not open to spectators.",
  BANNED: "This player is banned.",
  NOT_OPERATOR: "Only operators can do that.",
  SERVICE_ONLY: "Only the cluster's own services can do that.",
  CPU_SEATS_ONLY: "Only the cluster's own services can do that.",
  NOT_A_SEAT: "Only the cluster's own services can do that.",
  TABLE_FULL: "Both seats are taken.",
  EMAIL_TAKEN: "Another account uses that email.",
  NAME_TAKEN: "Another player has that name.",
  TABLE_NOT_OPEN: "That table is no longer open.",
  NOT_CASUAL: "Only a casual table waits for its host to start.",
  NOT_FULL: "Wait for an opponent to sit down.",
  DEALING: "The match is being dealt: a moment.",
  NO_REMATCH: "No rematch was agreed.",
  MATCH_NOT_OVER: "The record comes when the match is over.",
  IN_PLAY: "Not while you have diamonds in play.",
  IN_TOURNAMENT: "Not while a tournament holds your buy-in: withdraw, or wait for its prizes.",
  NAME_CHANGE_TOO_SOON: "You can change your name once a day.",
  NO_ACCOUNTS: "This server plays with guests only.",
  IN_ANOTHER_MATCH: "Finish the wagered match you sit at first.",
  RESTRICTED: "After a review of your play, this account plays casual unrated games only: no wagered, scored or rated match and no tournament. To appeal, write to this server's operators quoting your name.",
  INSUFFICIENT_FUNDS: "Not enough diamonds for that.",
  NO_TOKEN: "Log in first.",
  BAD_TOKEN: "Your session ended: log in again.",
  TOKEN_EXPIRED: "Your session ended: log in again.",
  BAD_CREDENTIALS: "Wrong email or password.",
  LOCKED: "Too many tries: wait a while, then try again.",
  BAD_REFRESH: "Your session ended: log in again.",
  REFRESH_REUSED: "Your session ended: log in again.",
  REFRESH_REVOKED: "Your session ended: log in again.",
  REFRESH_EXPIRED: "Your session ended: log in again.",
  ACCOUNT_DELETED: "That account was deleted.",
  TRY_AGAIN: "Try again.",
  BUSY: "The table is busy: try again.",
  TABLE_BUSY: "The table is busy: try again.",
  UPSTREAM_UNAVAILABLE: "The server is busy or restarting: try again in a moment.",
  STORE_UNAVAILABLE: "The server is busy or restarting: try again in a moment.",
  STARTING: "The server is starting: try again in a moment.",
  STORE_FULL: "The server is full right now: try again later.",
  LEDGER_UNAVAILABLE: "The wallet is busy or restarting: try again in a moment.",
  UNAVAILABLE: "The server is busy or restarting: try again in a moment.",
  INTERNAL: "Something went wrong on the server: try again.",
};

// Codes a player never needs to read: the page already shows what happened (a second click of
// one button meets the table moved on by the first).
export const SILENT = new Set(["STALE_SEQ"]);

// Why a table closed before its match (the lobby's close_reason, "<why>[:<who>]").
export const CLOSED_SAYS = {
  host_left: "The host left the table.",
  paired_elsewhere: "Your opponent was matched at another table: try again.",
  in_another_match: "A player is still in another wagered match.",
  cannot_cover: "A player does not have the diamonds for the bet: nothing was taken.",
  deal_failed: "The match could not be dealt: nothing was taken. Try again.",
  restricted: "A player here may no longer play for diamonds or the boards: nothing was taken.",
};

export function closedSentence(reason) {
  return CLOSED_SAYS[(reason || "").split(":")[0]] || "The table closed.";
}

// The sentence for an error; a code without one (a newer server) says so plainly.
export function sentence(err) {
  return SAYS[err.code] || "Something went wrong: try again.";
}

// What an error rate measures and GNU Backgammon's bands for it (the analysis's `band`).
export const ERROR_RATE_HELP = "The error rate is the equity lost per decision, in thousandths of "
  + "a point, as the analysis judges each move and cube decision: lower is better. GNU Backgammon's "
  + "bands: under 2 supernatural, 2-5 world class, 5-8 expert, 8-12 advanced, 12-18 intermediate, "
  + "18-26 casual, 26-35 beginner, 35 or more awful.";

// Where a player's error rate stands among the players with an analysed record (PlayerTrend's
// better_than of compared), or "" before there is anyone to compare with.
export function standingAmong(trend) {
  const compared = Number(trend.compared || 0);
  if (!compared || !Number(trend.decisions || 0)) return "";
  const share = Math.round(100 * Number(trend.betterThan || 0));
  return `better than ${share}% of the ${compared} player${compared === 1 ? "" : "s"} with an analysed record`;
}
