"""One registry of Redis keys (issue 44, item 4): a script's keys share a Redis Cluster slot,
no two layouts meet, and no module but the registry spells a key."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from redis.crc import key_slot

from services.contracts import redis_keys as k
from services.contracts.shards import shard_of

ROOT = Path(__file__).resolve().parents[2]


def slot(key: str) -> int:
    return key_slot(key.encode())


def samples(value: str) -> dict[str, str]:
    """Every layout of the registry, each argument `value` (a shard: 7)."""
    out: dict[str, str] = {}
    for name, member in vars(k).items():
        if name.isupper() and isinstance(member, str):
            if member:  # PRESENCE_LOBBY, a Friends stream's "table", is a part, not a key
                out[name] = member
        elif inspect.isfunction(member) and member.__module__ == k.__name__:
            params = inspect.signature(member).parameters
            if name in ("stream_entries", "table_of_channel"):
                continue  # readers of the layout, not layouts
            args = [7 if p == "shard" else value for p in params]
            out[name] = member(*args)
    return out


def test_a_tables_keys_share_its_shards_slot() -> None:
    table = "tbl123"
    shard = shard_of(table)
    keys = [k.table_key(table), k.stream_key(table), k.commands_key(table)]
    keys += [k.record_key(table, "m1"), k.relay_lock_key(table), k.chat_key(table)]
    keys += [k.chat_removed_key(table), k.presence_pair_key(table, "p1")]
    keys += [k.clocks_key(shard), k.relay_key(shard), k.unconfirmed_key(shard)]
    assert {slot(key) for key in keys} == {slot(k.table_key(table))}
    assert k.table_of_channel(k.update_channel(table)) == table
    assert k.table_of_channel(k.seat_channel(table)) == table
    assert k.table_of_channel(k.chat_channel(table)) == table


def test_shared_sets_and_a_players_keys_are_each_in_one_slot() -> None:
    lobby = [k.OPEN_TABLES, k.LIVE_TABLES, k.DEALING_TABLES, k.TOURNAMENTS]
    lobby += [k.UNFINISHED_TOURNAMENTS, k.lobby_key("t1"), k.tournament_key("u1")]
    assert len({slot(key) for key in lobby}) == 1
    assert slot(k.BANNED) == slot(k.BANS_VERSION)
    player = [k.lobby_player_key("tables", "p9"), k.lobby_hold_key("hold", "p9", "x")]
    player += [k.name_key("p9"), k.private_prefs_key("p9"), k.presence_player_key("p9")]
    player += [k.tournament_player_key("p9")]
    assert len({slot(key) for key in player}) == 1


def test_no_two_layouts_meet() -> None:
    found = samples("x")
    assert len(set(found.values())) == len(found), found


# Each layout's spelling up to its first hash tag or variable part (a whole constant key when it
# starts with its tag): what no other module may spell.
PREFIXES = sorted({key.split("{")[0].split("x")[0] or key for key in samples("x").values()})


def test_no_module_but_the_registry_spells_a_redis_key() -> None:
    assert {"lobby:", "t:", "rl:", "{bans}:banned"} <= set(PREFIXES)  # it looks for something
    literal = re.compile(r"""f?["']({})""".format("|".join(re.escape(p) for p in PREFIXES)))
    registry = ROOT / "services" / "contracts" / "redis_keys.py"
    spelled = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "services").rglob("*.py"))
        if path != registry
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert spelled == []
