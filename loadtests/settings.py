"""A run's settings as Locust carries them: options of Locust's own command line (so a
distributed run's master forwards them to every worker when the run starts), read by the users
through `Settings.of(environment)`. The operator's key is not one of them: each process reads it
from its own environment (loadtests/operators.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from loadtests.endpoints import Endpoint
from loadtests.operators import OPERATOR_KEY_ENV

PROFILES = ("stress", "human", "mix")
# The stress profile's users and their shares (loadtests/locustfile.py); the human profile's is
# loadtests/human.py's HumanUser. Here, not there: importing Locust patches the process for
# gevent, which the runner's asyncio must not be.
STRESS_WEIGHTS = {"PlayerUser": 3, "AdversaryUser": 1, "IdleUser": 2}


def add_arguments(parser: Any) -> None:
    """Locust's `init_command_line_parser` hook: the load test's own options."""
    group = parser.add_argument_group("bgcluster load test")
    group.add_argument("--load-run-id", default="", help="the run's id (in the ledger)")
    group.add_argument("--load-prefix", default="lt", help="the players' names begin so")
    group.add_argument("--load-accounts", default="guest", choices=("guest", "device"))
    group.add_argument("--load-tls", action="store_true", help="the gateway speaks TLS")
    group.add_argument("--load-ca", default="", help="PEM roots for TLS (system roots: empty)")
    group.add_argument("--load-server-name", default="", help="the name TLS verifies")
    group.add_argument("--load-admin", default="", help="the operators' API, HOST:PORT")
    group.add_argument("--load-admin-tls", action="store_true")
    group.add_argument("--load-operator", default="admin", help="the operator who funds")
    group.add_argument("--load-funds", type=int, default=100_000, help="diamonds a player")
    group.add_argument("--load-profile", default="stress", choices=PROFILES)
    group.add_argument("--load-human-share", type=float, default=0.5, help="mix: humans' share")
    group.add_argument("--load-late-bound-ms", type=float, default=1000.0)
    group.add_argument("--load-run-dir", default="", help="where the master writes players")


@dataclass(frozen=True)
class Settings:
    gateway: Endpoint
    admin: Endpoint
    operator: str
    operator_key: str
    run_id: str
    prefix: str
    accounts: str
    funds: int
    profile: str
    human_share: float
    late_bound_ms: float
    run_dir: str

    @classmethod
    def of(cls, environment: Any) -> Settings:
        o = environment.parsed_options
        return cls(
            gateway=Endpoint(str(environment.host), o.load_tls, o.load_ca, o.load_server_name),
            admin=Endpoint(o.load_admin, o.load_admin_tls, o.load_ca),
            operator=o.load_operator,
            operator_key=os.environ.get(OPERATOR_KEY_ENV, ""),
            run_id=o.load_run_id,
            prefix=o.load_prefix,
            accounts=o.load_accounts,
            funds=o.load_funds,
            profile=o.load_profile,
            human_share=o.load_human_share,
            late_bound_ms=o.load_late_bound_ms,
            run_dir=o.load_run_dir,
        )
