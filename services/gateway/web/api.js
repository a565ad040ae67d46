// The gateway's WebSocket API (docs/protocol.md): unary calls by id, Play streams per table,
// reconnecting by itself. After a dropped connection it joins every table again from the last
// seq it processed (each event arrives once) and sends again the commands that got no answer,
// with the same command ids (a repeated id is applied once, I-34).

export class ApiError extends Error {
  constructor(error) {
    super(error.message || error.code || "error");
    this.code = error.code || error.status || "ERROR";
    this.status = error.status || "";
    this.field = error.field || "";
  }
}

export class Connection {
  constructor(url, { onUpdate, onStatus, onChat = () => {}, onFriends = () => {} }) {
    this.url = url;
    this.onUpdate = onUpdate;
    this.onChat = onChat;
    this.onFriends = onFriends;
    this.friendsWanted = false; // the Friends stream: opened again after every reconnect
    this.friendsId = null; // the request id it was opened with
    this.onStatus = onStatus;
    this.token = "";
    this.nextId = 1;
    this.calls = new Map(); // id -> {resolve, reject}
    this.commands = new Map(); // request id -> {message, resolve, reject}, until answered
    this.joins = new Map(); // request id -> tableId: Play joins and Watches awaiting answers
    this.tables = new Map(); // tableId -> last seq processed
    this.watching = new Set(); // tables joined read-only (Watch, I-35)
    this.ws = null;
    this.backoffMs = 250;
    this.opened = null;
  }

  connect() {
    if (this.opened) return this.opened;
    this.opened = new Promise((resolve) => {
      const ws = new WebSocket(this.url);
      this.ws = ws;
      ws.onopen = () => {
        this.backoffMs = 250;
        this.onStatus("online");
        for (const [tableId, seq] of this.tables) this._join(tableId, seq);
        if (this.friendsWanted) this._friends();
        for (const pending of this.commands.values()) ws.send(JSON.stringify(pending.message));
        resolve();
      };
      ws.onmessage = (event) => this._receive(JSON.parse(event.data));
      ws.onclose = () => {
        this.opened = null;
        this.friendsId = null;
        this.onStatus("offline");
        for (const call of this.calls.values()) {
          call.reject(new ApiError({ code: "UNAVAILABLE", message: "connection lost" }));
        }
        this.calls.clear();
        setTimeout(() => this.connect(), this.backoffMs);
        this.backoffMs = Math.min(this.backoffMs * 2, 5000);
      };
    });
    return this.opened;
  }

  async call(method, request = {}) {
    await this.connect();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, request, token: this.token }));
    });
  }

  async join(tableId, fromSeq = 0) {
    if (this.tables.has(tableId)) return; // one stream per table per connection
    const open = this.ws && this.ws.readyState === WebSocket.OPEN;
    this.tables.set(tableId, fromSeq);
    if (open) this._join(tableId, fromSeq);
    else await this.connect(); // joins every table once open
  }

  // Watch a table anyone may watch: the same updates, read-only.
  async watch(tableId, fromSeq = 0) {
    this.watching.add(tableId);
    return this.join(tableId, fromSeq);
  }

  // The Friends stream: the player is online to their followers while it is open; its views go
  // to onFriends (at once, then whenever they change).
  openFriends() {
    this.friendsWanted = true;
    if (this.friendsId !== null) return;
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this._friends();
    else this.connect(); // opens it once connected
  }

  // A stream ends only with its connection: a new one, without it (a logout).
  closeFriends() {
    this.friendsWanted = false;
    if (this.friendsId !== null && this.ws) this.ws.close(4001, "friends closed");
  }

  _friends() {
    const id = this.nextId++;
    this.friendsId = id;
    this.ws.send(JSON.stringify({ id, method: "Friends", request: {}, token: this.token }));
  }

  // Done with a table: its stream ends on the server too (EndStream), so the player's presence
  // there ends with it (a friend sees them in the lobby, not in the match they left).
  leave(tableId) {
    const had = this.tables.delete(tableId);
    this.watching.delete(tableId);
    if (had && this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.call("EndStream", { tableId }).catch(() => {}); // gone anyway with its connection
    }
  }

  _join(tableId, fromSeq) {
    const id = this.nextId++;
    this.joins.set(id, tableId);
    if (this.watching.has(tableId)) {
      const request = { tableId, fromSeq: String(fromSeq) };
      this.ws.send(JSON.stringify({ id, method: "Watch", request, token: this.token }));
      return;
    }
    const request = { join: { tableId, fromSeq: String(fromSeq) } };
    this.ws.send(JSON.stringify({ id, method: "Play", request, token: this.token }));
  }

  // Sends one command; resolves with its result or rejects with the refusal. After a dropped
  // connection it is sent again, with the same command id.
  command(tableId, commandId, expectedSeq, command) {
    const id = this.nextId++;
    const message = {
      id, method: "Play", tableId, token: this.token,
      request: { command: { commandId, expectedSeq: String(expectedSeq), command } },
    };
    return new Promise((resolve, reject) => {
      this.commands.set(id, { message, resolve, reject });
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
    });
  }

  // Every request gets one answer carrying its id; the streams' pushes say "push".
  _receive(message) {
    if (message.push === "update") {
      const update = message.update;
      const seq = Number(update.update.seq || 0);
      if (seq > (this.tables.get(update.tableId) ?? -1)) this.tables.set(update.tableId, seq);
      this.onUpdate(update.tableId, update.update);
      return;
    }
    if (message.push === "chat") {
      this.onChat(message.tableId, message.chat);
      return;
    }
    if (message.push === "friends") {
      this.onFriends(message.friends);
      return;
    }
    if (message.push === "ended" && message.stream === "Friends") {
      this.friendsId = null; // Redis away, say: open it again in a while
      setTimeout(() => { if (this.friendsWanted) this.openFriends(); }, 3000);
      return;
    }
    if (message.id !== undefined && message.id === this.friendsId) {
      if (message.response) this.onFriends(message.response);
      else this.friendsId = null;
      return;
    }
    if (message.push === "ended") {
      const err = message.error ? new ApiError(message.error) : null;
      // Another tab or device took the seat: no joining it again by ourselves.
      if (err && err.code === "SEAT_TAKEN") this.leave(message.tableId);
      if (err) this.onStatus("error", err, message.tableId);
      return;
    }
    const pending = this.calls.get(message.id) || this.commands.get(message.id);
    if (pending) {
      this.calls.delete(message.id);
      this.commands.delete(message.id);
      if (message.error) pending.reject(new ApiError(message.error));
      else pending.resolve(message.response || {});
      return;
    }
    if (this.joins.has(message.id)) {
      this.joins.delete(message.id);
      if (message.error) this.onStatus("error", new ApiError(message.error)); // a join refused
    }
  }

  // Drops the socket as a network failure would (the reconnect path); used by the tests.
  drop() {
    if (this.ws) this.ws.close(4000, "dropped");
  }
}
