"""Who calls whom: every service another service calls, with its gRPC service and the setting
that lists its replicas (IP:port,... or one dns:/// name resolved to every replica). Calls to
them are balanced round robin and UNAVAILABLE is retried (services/common/balanced.py), which
each one makes safe as its help says. The topology in one place: the platform knows no
service by name."""

from __future__ import annotations

from services.common.peer import Peer

WALLET = Peer(
    "bg.wallet.v1.WalletService",
    "BG_WALLET_ADDR",
    "127.0.0.1:50053",
    "Wallet replicas: IP:port,... or one dns:/// name (balanced, UNAVAILABLE retried: every "
    "write carries an idempotency key).",
)
TABLE = Peer(
    "bg.table.v1.TableService",
    "BG_TABLE_ADDRS",
    ("127.0.0.1:50061",),
    "Table service replicas: IP:port,... or one name resolved by DNS to every replica "
    "(dns:///table-headless:50061); calls are balanced round robin, UNAVAILABLE retried.",
)
# The gateway's: matchmaking's writes that could seat a player twice (CreateTable, JoinByCode,
# QuickMatch) carry a request id, which the gateway fills in when a client gave none, so a retry
# answers the first call's table; the leaderboard and the analysis are read only.
MATCHMAKING = Peer(
    "bg.matchmaking.v1.MatchmakingService",
    "BG_MATCHMAKING_ADDR",
    "127.0.0.1:50052",
    "Matchmaking's replicas (comma-separated IP:port, or one dns:/// name).",
)
LEADERBOARD = Peer(
    "bg.leaderboard.v1.LeaderboardService",
    "BG_LEADERBOARD_ADDR",
    "127.0.0.1:50054",
    "Leaderboard replicas: IP:port,... or one dns:/// name (balanced).",
)
ANALYSIS = Peer(
    "bg.analysis.v1.AnalysisService",
    "BG_ANALYSIS_ADDR",
    "127.0.0.1:50056",
    "Analysis replicas: IP:port,... or one dns:/// name (balanced).",
)
# The gateway's: accounts, sign-in's sessions, bans and the audit log, chat and friends
# (bg.social.v1, the same replicas). Retries are safe: a login's retry makes one more session
# (the first is never answered), a refresh's answers the first's within its race window, a
# challenge carries a request id (the gateway fills one in) and an accept is claimed once, the
# rest are idempotent but a retried audit entry or chat message, which may be kept twice.
IDENTITY = Peer(
    "bg.identity.v1.IdentityService",
    "BG_IDENTITY_ADDR",
    "127.0.0.1:50057",
    "Identity replicas (accounts, bans, the audit log, chat and friends): IP:port,... or one "
    "dns:/// name (balanced).",
    also=("bg.social.v1.SocialService",),
)
PEERS = (WALLET, TABLE, MATCHMAKING, LEADERBOARD, ANALYSIS, IDENTITY)
