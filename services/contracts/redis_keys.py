"""Every Redis key, channel and stream of the cluster, in one place (issue 44, item 4).

The layout is part of the data, like a schema: what one service writes another may read (the
tables' streams and channels by the gateways, the lobby by the bots), and a key moved is data
lost. Hash tags (`{...}`) put the keys one script touches in one Redis Cluster slot:
- a table's keys carry its shard's tag `{s<n>}` (services/contracts/shards.py), as do the
  shard's clock, relay and unconfirmed sets: a commit script touches one slot;
- the lobby's shared sets and documents carry `{lobby}`;
- a player's keys carry `{<player id>}` where a script touches several of them together.
Keys are built here and nowhere else; `tests/contracts/test_redis_keys.py` checks the slots and that
no two layouts meet.
"""

from __future__ import annotations

from typing import Any

from services.contracts.shards import shard_of, shard_tag

# -- tables (the table service writes; the gateways read the stream and the channels) ---------
#
# `t:{s<n>}:<table>` (hash: seq, state, meta, relay pointers), `...:ev` a stream whose entry ids
# are the event seqs (`<seq>-0`, field `e` a serialized bg.events.v1.TableEvent: the durable
# record, read to resume), `...:up` the channel each commit publishes its TableUpdate on (at most
# once: readers detect a gap by seq and fill it from the stream), `...:seat` the gateways' own
# channel (a Play stream that opens publishes `<player> <stream>`; every other stream of that
# player to the table ends with SEAT_TAKEN), `...:cmd` the command ids seen ("<seat>:<command
# id>" -> "seq:count"), `...:rec:<match>` a finished match's record.

WAKE_CHANNEL = "clocks:wake"  # "<shard>:<deadline ms>" when a commit makes a deadline sooner
# The table replicas' leases: member -> lease expiry (ms), and member -> its gRPC address.
TABLE_REPLICAS = "table:replicas"
TABLE_REPLICA_ADDRESSES = "table:replica_addresses"


def table_key(table_id: str) -> str:
    return "t:" + shard_tag(shard_of(table_id)) + ":" + table_id


def stream_key(table_id: str) -> str:
    return table_key(table_id) + ":ev"


def update_channel(table_id: str) -> str:
    return table_key(table_id) + ":up"


def seat_channel(table_id: str) -> str:
    return table_key(table_id) + ":seat"


def commands_key(table_id: str) -> str:
    return table_key(table_id) + ":cmd"


def record_key(table_id: str, match_id: str) -> str:
    return table_key(table_id) + ":rec:" + match_id


def stream_entries(entries: list[Any]) -> list[tuple[int, bytes]]:
    """(seq, serialized TableEvent) pairs from raw XRANGE/XREAD entries of a table's stream."""
    return [(int(eid.split(b"-")[0]), fields[b"e"]) for eid, fields in entries]


def table_of_channel(channel: str) -> str:
    """The table id of an update, seat or chat channel name (table ids hold no `}` or `:`)."""
    return channel[channel.index("}:") + 2 : channel.rindex(":")]


def clocks_key(shard: int) -> str:
    """The shard's deadlines: table id -> deadline ms."""
    return "clocks:" + shard_tag(shard)


def relay_key(shard: int) -> str:
    """The shard's tables with events not yet on Kafka: table id -> ms of the oldest."""
    return "relay:" + shard_tag(shard)


def unconfirmed_key(shard: int) -> str:
    """The shard's tables whose last relayed records some group may not have read yet."""
    return "relay:u:" + shard_tag(shard)


def relay_lock_key(table_id: str) -> str:
    return "relay:lock:" + shard_tag(shard_of(table_id)) + ":" + table_id


def table_prefs_key(player_id: str) -> str:
    """A player's table preferences (a hash: the table service's)."""
    return f"prefs:{player_id}"


# -- chat (the gateways' players' side; the identity service's moderation) ---------------------

CHAT_REPORTS = "chat:reports"  # the operators' queue (a stream: oldest first)
# A table's chat lives a day after its last message, and what is kept about it (a message's
# removal, a report made once) as long.
CHAT_KEEP_S = 86_400


def chat_channel(table_id: str) -> str:
    return table_key(table_id) + ":chat"


def chat_key(table_id: str) -> str:
    """The table's chat messages (a stream)."""
    return table_key(table_id) + ":chatlog"


def chat_removed_key(table_id: str) -> str:
    return chat_key(table_id) + ":removed"


def chat_mutes_key(player_id: str) -> str:
    return f"chat:mutes:{player_id}"


def chat_silenced_key(player_id: str) -> str:
    return f"chat:silenced:{player_id}"


def chat_reported_key(message_id: str, player_id: str) -> str:
    """Set once: a player reports a message once."""
    return f"chat:reported:{message_id}:{player_id}"


# -- players, friends, presence, rate limits (the gateways') ------------------------------------

PRESENCE_GATEWAYS = "presence:gateways"  # gateway -> expiry ms
PRESENCE_LOBBY = ""  # the "table" of a Friends stream: online, at no table
BANNED = "{bans}:banned"  # banned players (one hash slot with its version: Redis Cluster)
BANS_VERSION = "{bans}:v"  # bumped on each change: gateways reload the set when it moves
# Players restricted to casual unrated play (issue 61): matchmaking checks it at every staked or
# ranked seat and deal; the identity service's `restrictions` table is the record.
RESTRICTED = "{bans}:restricted"


def name_key(player_id: str) -> str:
    return f"player:name:{{{player_id}}}"


def private_prefs_key(player_id: str) -> str:
    return f"prefs:private:{{{player_id}}}"


def follows_key(player_id: str) -> str:
    return f"friends:follows:{player_id}"


def blocks_key(player_id: str) -> str:
    return f"friends:blocks:{player_id}"


def challenge_key(challenge_id: str) -> str:
    return f"friends:challenge:{challenge_id}"


def challenges_sent_key(player_id: str) -> str:
    return f"friends:sent:{player_id}"  # challenge id -> sent ms


def challenges_received_key(player_id: str) -> str:
    return f"friends:received:{player_id}"


def presence_pair_key(table_id: str, player_id: str) -> str:
    """The streams of one player at one table (with the table's shard tag)."""
    return f"presence:{shard_tag(shard_of(table_id))}:{table_id}:{player_id}"


def presence_player_key(player_id: str) -> str:
    return f"presence:player:{{{player_id}}}"


def presence_streams_key(gateway: str) -> str:
    return f"presence:streams:{{{gateway}}}"


def rate_limit_key(bucket: int, kind: str, window: int) -> str:
    """One hash bucket of one kind of limit in one window (the gateways share them)."""
    return f"rl:{{rl{bucket}}}:{kind}:{window}"


# -- the lobby and tournaments (matchmaking writes; the bots read their tables) -----------------

LOBBY_TAG = "{lobby}"  # one hash slot for the lobby's shared sets (Redis Cluster)
BOT_TABLES = "bots:tables"  # tables with a computer seat, until the bots are done with them
OPEN_TABLES = f"lobby:{LOBBY_TAG}:open"  # public tables with a free seat -> ms created
LIVE_TABLES = f"lobby:{LOBBY_TAG}:live"  # watchable tables dealt -> ms dealt (I-35)
DEALING_TABLES = f"lobby:{LOBBY_TAG}:dealing"  # table id -> ms its deal started
TOURNAMENTS = f"lobby:{LOBBY_TAG}:tournaments"
UNFINISHED_TOURNAMENTS = f"lobby:{LOBBY_TAG}:tournaments:unfinished"


def party_code_key(code: str) -> str:
    """A party code -> its table id."""
    return f"lobby:code:{code}"


def scored_table_key(player_id: str) -> str:
    """A player's open scored table (one at a time)."""
    return f"lobby:scored:{player_id}"


def quick_queue_key(options: str) -> str:
    """Quick match's queue of tables waiting for one set of options (their canonical string)."""
    return f"lobby:quick:{options}"


def lobby_key(table_id: str) -> str:
    """A table's lobby document (JSON: its seats, options, status)."""
    return f"lobby:{LOBBY_TAG}:t:{table_id}"


def lobby_player_key(kind: str, player_id: str) -> str:
    """A player's set of one kind (their tables, their queue entries)."""
    return f"lobby:{kind}:{{{player_id}}}"


def lobby_hold_key(kind: str, player_id: str, key: str) -> str:
    return f"lobby:{kind}:{{{player_id}}}:{key}"


def tournament_key(tournament_id: str) -> str:
    return f"lobby:{LOBBY_TAG}:tn:{tournament_id}"


def tournament_player_key(player_id: str) -> str:
    return f"tournament:player:{{{player_id}}}"


def bot_lease_key(table_id: str) -> str:
    """The bots worker that plays a table's computer seat holds this lock."""
    return f"bots:lease:{table_id}"


# -- the leaderboard (derived: rebuilt from its SQL record) --------------------------------------


BOARDS = "lb:*"  # every board's key (a SCAN pattern: the rebuild empties them)


def board_key(board: str, key: str) -> str:
    return f"lb:{board}:{key}"
