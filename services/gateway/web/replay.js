// A finished match, move by move, from its archive (GetArchivedMatch): the boards are rebuilt
// here from the recorded plays (each turn's final steps, from the mover's side), seat 0 below.

export const START = [0, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0];

function point(p) { return p === 25 ? "bar" : p === 0 ? "off" : String(p); }

// Applies a turn's steps to the mover's board, hitting on the other (each in its own numbering);
// says which steps hit (GNU Backgammon's "*").
export function apply(mover, other, steps) {
  return steps.map((s) => {
    const from = s.from || 0;
    const to = s.to || 0;
    mover[from - 1] -= 1;
    if (to === 0) return false;
    mover[to - 1] += 1;
    if (other[24 - to] !== 1) return false;
    other[24 - to] = 0;
    other[24] += 1;
    return true;
  });
}

// A step as notation, from the mover's side: "13/8", "bar/22", "6/off", "8/4*" for a hit.
export function stepNotation(step, hit, name = point) {
  return `${name(step.from || 0)}/${name(step.to || 0)}${hit ? "*" : ""}`;
}

// frames: [{text, view, index}] where view is what Board.render draws and index the move's place
// in `moves` (what an analysis decision's moveIndex names).
// The board after `steps` of `seat` from a frame's view (seat 0's board is `own`): to draw the
// analysis's best play in place of the one played.
export function after(view, seat, steps) {
  const boards = [view.own.slice(), view.opponent.slice()];
  apply(boards[seat], boards[1 - seat], steps);
  return { ...view, own: boards[0], opponent: boards[1], dice: [] };
}

export function frames(moves, nameOf, profile = "") {
  // A cube is drawn only in matches that have one (wagered, or a cube was used).
  const options = profile === "wagered" || moves.some((ev) => ev.doubleOffered) ? { cube: true } : {};
  const out = [];
  let boards = [START.slice(), START.slice()];
  let dice = [];
  let turn = 0;
  let cube = 1;
  let owner = -1;
  let score = [0, 0];
  let index = 0;
  const push = (text) => out.push({
    text, index,
    view: { seq: out.length + 1, seat: 0, turn, decider: turn, own: boards[0].slice(),
      opponent: boards[1].slice(), dice: dice.slice(), cube, cubeOwner: owner, lit: [],
      options, score },
  });
  for (const [i, ev] of moves.entries()) {
    index = i;
    const kind = Object.keys(ev).find((k) => !["eventId", "tableId", "seq", "matchId", "atMs"].includes(k));
    const e = ev[kind] || {};
    const seat = e.seat || 0;
    const who = nameOf(seat);
    if (kind === "gameStarted") {
      boards = [START.slice(), START.slice()];
      dice = []; cube = 1; owner = -1; score = e.score || [0, 0];
      push(`Game ${e.gameNo || 1}${e.crawford ? " (Crawford)" : ""}`);
    } else if (kind === "openingRoll") {
      dice = e.dice || []; turn = e.starter ?? 0;
      push(`Opening roll ${dice.join("-")}`);
    } else if (kind === "diceRolled") {
      dice = e.dice || []; turn = seat;
      push(`${who} rolled ${dice.join("-")}`);
    } else if (kind === "turnEnded") {
      turn = seat;
      const steps = e.steps || [];
      const hits = apply(boards[seat], boards[1 - seat], steps);
      push(`${who} played ${steps.map((s, i) => stepNotation(s, hits[i])).join(" ")}`);
      dice = [];
    } else if (kind === "turnPassed") {
      turn = seat; dice = e.dice || [];
      push(`${who} cannot move`);
    } else if (kind === "timedOut") {
      push(`${who} ran out of time (the server played)`);
    } else if (kind === "boostApplied") {
      push(`${who} boosted the clock`);
    } else if (kind === "doubleOffered") {
      push(`${who} doubles to ${e.cube}`);
    } else if (kind === "doubleTaken") {
      cube = e.cube || cube * 2; owner = seat; push(`${who} takes`);
    } else if (kind === "doubleDropped") {
      push(`${who} drops`);
    } else if (kind === "gameEnded") {
      score = e.score || score;
      push(`${nameOf(e.winnerSeat || 0)} wins ${e.points} point${e.points === 1 ? "" : "s"}`);
    }
  }
  return out;
}
