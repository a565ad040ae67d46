// Checks a finished match's dice against its revealed seed (RULES I-27), in the browser with
// Web Crypto: sha256(seed) must be the fingerprint published at the start, and the rolls must be
// the seed's HMAC-SHA256 stream in order (opening rolls one value per seat, rolls two values).

function hexBytes(hex) {
  if (!/^([0-9a-f]{2})+$/i.test(hex)) throw new Error("not hex");
  return new Uint8Array(hex.match(/../g).map((b) => parseInt(b, 16)));
}

function hex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function fingerprintOf(seed) {
  return hex(await crypto.subtle.digest("SHA-256", seed));
}

// The first `count` die values the seed gives.
export async function diceValues(seed, count) {
  const key = await crypto.subtle.importKey(
    "raw", seed, { name: "HMAC", hash: "SHA-256" }, false, ["sign"],
  );
  const prefix = new TextEncoder().encode("bg-dice");
  const out = [];
  for (let block = 0n; out.length < count; block++) {
    const message = new Uint8Array(prefix.length + 8);
    message.set(prefix);
    new DataView(message.buffer).setBigUint64(prefix.length, block, false);
    const digest = new Uint8Array(await crypto.subtle.sign("HMAC", key, message));
    for (const b of digest) if (b < 252 && out.length < count) out.push((b % 6) + 1);
  }
  return out;
}

// rolls: [[a, b], ...] in the order drawn. Returns {ok, reason}.
export async function verifyRolls(seedHex, fingerprint, rolls) {
  if (!globalThis.crypto || !crypto.subtle) {
    return { ok: false, reason: "this page needs a secure context (HTTPS or localhost) to check" };
  }
  let seed;
  try {
    seed = hexBytes(seedHex);
  } catch {
    return { ok: false, reason: "the seed is not hex" };
  }
  if ((await fingerprintOf(seed)) !== fingerprint) {
    return { ok: false, reason: "sha256(seed) is not the fingerprint published at the start" };
  }
  const values = await diceValues(seed, rolls.length * 2);
  for (let i = 0; i < rolls.length; i++) {
    const [a, b] = rolls[i];
    if (values[2 * i] !== a || values[2 * i + 1] !== b) {
      return { ok: false, reason: `roll ${i + 1} (${a}-${b}) is not what the seed gives` };
    }
  }
  return { ok: true, reason: `all ${rolls.length} rolls reproduce from the seed` };
}
