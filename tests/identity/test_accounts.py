"""Player accounts on SQLite and PostgreSQL: device logins, email and password with lockout,
unique names, refresh-token rotation with reuse detection, logout."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.common.connections import sql_engine
from services.common.errors import ServiceError
from services.common.migrate import migrate
from services.identity.adapters.sql_accounts import Accounts
from services.identity.adapters.sql_audit import AuditLog
from services.identity.app import MIGRATIONS
from tests.helpers import sql_url


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["sqlite", "postgres"])
async def accounts(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[Accounts]:
    engine = sql_engine(await sql_url(request, tmp_path, "accounts"))
    found = Accounts(engine, refresh_ttl_s=3600, lockout_after=3, lockout_s=60, clock=clock)
    await migrate(found.engine, MIGRATIONS)
    try:
        yield found
    finally:
        await engine.dispose()


def device() -> str:
    return secrets.token_urlsafe(32)


async def code_of(call: object) -> str:
    with pytest.raises(ServiceError) as err:
        await call  # type: ignore[misc]
    return err.value.code


async def test_a_device_is_the_same_player_every_time(accounts: Accounts) -> None:
    phone = device()
    first = await accounts.device_login(phone, "ann")
    again = await accounts.device_login(phone, "someone else")
    assert again.account == first.account and first.account.name == "ann"
    other = await accounts.device_login(device(), "Ann")  # names are unique, case aside
    assert other.account.player_id != first.account.player_id
    assert other.account.name.startswith("Ann-")
    # Issue 60, item 2: asked for the exact name, a taken one is refused and nothing made; the
    # same device then takes a free name exactly, and keeps its account after.
    tablet = device()
    assert await code_of(accounts.device_login(tablet, "ANN", exact=True)) == "NAME_TAKEN"
    mine = await accounts.device_login(tablet, "Annabel", exact=True)
    assert mine.account.name == "Annabel" and mine.email == ""
    assert (await accounts.device_login(tablet, "ann", exact=True)).account == mine.account
    # Issue 61: each session says whether an operator restricted the account.
    assert not mine.restricted
    assert await accounts.restrict(mine.account.player_id, "admin", "review 7")
    assert not await accounts.restrict(mine.account.player_id, "admin", "again")  # kept once
    assert (await accounts.device_login(tablet, "x y z")).restricted
    assert await accounts.restricted_ids() == [mine.account.player_id]
    assert (await accounts.record(mine.account.player_id))["restriction_reason"] == "review 7"
    assert await accounts.unrestrict(mine.account.player_id)
    assert not (await accounts.device_login(tablet, "x y z")).restricted
    assert await code_of(accounts.device_login("short", "bob")) == "INVALID_DEVICE"
    assert await code_of(accounts.device_login(device(), "x")) == "INVALID_NAME"
    assert await code_of(accounts.device_login(device(), "CPU killer")) == "INVALID_NAME"


async def test_names_are_unique_and_change_at_most_once_a_day(
    accounts: Accounts, clock: Clock
) -> None:
    ann = (await accounts.device_login(device(), "ann")).account
    bob = (await accounts.device_login(device(), "bob")).account
    assert await code_of(accounts.set_name(bob.player_id, "ANN")) == "NAME_TAKEN"
    renamed = await accounts.set_name(bob.player_id, "robert")
    assert renamed.name == "robert"
    assert await code_of(accounts.set_name(bob.player_id, "bobby")) == "NAME_CHANGE_TOO_SOON"
    clock.now += 86_401
    assert (await accounts.set_name(bob.player_id, "bobby")).name == "bobby"
    names = await accounts.names([ann.player_id, bob.player_id, "pnobody"])
    assert names == {ann.player_id: "ann", bob.player_id: "bobby"}
    assert await code_of(accounts.set_name("gguest", "guesty")) == "INVALID_NAME"
    assert await code_of(accounts.set_name("gguest", "visitor")) == "NO_ACCOUNT"


async def test_refresh_rotates_and_a_reused_token_ends_the_session(
    accounts: Accounts, clock: Clock
) -> None:
    login = await accounts.device_login(device(), "cat")
    second = await accounts.refresh(login.refresh_token)
    assert second.account == login.account and second.refresh_token != login.refresh_token
    # Used again within seconds (a retry after a lost answer, two tabs renewing at once): a
    # race, not theft, and it gets the same answer: one chain, never a fork (issue 24, item 1).
    clock.now += 5
    racer = await accounts.refresh(login.refresh_token)
    assert racer == second
    # Used again later (a stolen copy): refused, and the whole family with it.
    clock.now += 30
    assert await code_of(accounts.refresh(login.refresh_token)) == "REFRESH_REUSED"
    assert await code_of(accounts.refresh(second.refresh_token)) == "REFRESH_REVOKED"
    assert await code_of(accounts.refresh(racer.refresh_token)) == "REFRESH_REVOKED"
    # Logout ends a session; an expired token is refused; garbage too.
    other = await accounts.device_login(device(), "dan")
    await accounts.logout(other.refresh_token)
    await accounts.logout(other.refresh_token)  # twice: no harm
    assert await code_of(accounts.refresh(other.refresh_token)) == "REFRESH_REVOKED"
    late = await accounts.device_login(device(), "eve")
    clock.now += 3601
    assert await code_of(accounts.refresh(late.refresh_token)) == "REFRESH_EXPIRED"
    assert await code_of(accounts.refresh("garbage")) == "BAD_REFRESH"


async def test_a_refresh_retried_in_its_window_answers_the_same_and_forks_nothing(
    accounts: Accounts, clock: Clock
) -> None:
    """Issue 24, item 1: every use of r0 within the window, concurrent ones included, answers
    the same successor r1; r1's own chain goes on alone, and past the window r0 ends it."""
    login = await accounts.device_login(device(), "fay")
    answers = await asyncio.gather(*(accounts.refresh(login.refresh_token) for _ in range(4)))
    assert len({a.refresh_token for a in answers}) == 1
    assert len({(a.refresh_expires_ms, a.issued_ms) for a in answers}) == 1
    clock.now += 2
    first = answers[0]
    assert await accounts.refresh(login.refresh_token) == first  # a retry 2 s later
    second = await accounts.refresh(first.refresh_token)
    assert second.refresh_token not in (first.refresh_token, login.refresh_token)
    clock.now += 11  # past the window: r0 again is a copy in someone's hands
    assert await code_of(accounts.refresh(login.refresh_token)) == "REFRESH_REUSED"
    assert await code_of(accounts.refresh(second.refresh_token)) == "REFRESH_REVOKED"
    # An identity replica holding other keys (not the cluster's) cannot answer a retry with the
    # same token: it never makes a second chain either.
    login2 = await accounts.device_login(device(), "gus")
    one = await accounts.refresh(login2.refresh_token)
    other = Accounts(accounts.engine, refresh_ttl_s=3600, clock=clock)
    assert await code_of(other.refresh(login2.refresh_token)) == "REFRESH_REUSED"
    assert await code_of(accounts.refresh(one.refresh_token)) == "REFRESH_REVOKED"


class TickingClock(Clock):
    def __call__(self) -> float:
        self.now += 0.4  # every read of the clock is later than the last
        return self.now


async def test_a_retried_refresh_is_issued_as_of_the_first_use(accounts: Accounts) -> None:
    """The first refresh and its retry answer one access token: both are issued as of the
    refresh token's use, not as of two reads of a clock that moves on between them (the
    WebSocket contract test saw their expiries a second apart)."""
    ticking = Accounts(
        accounts.engine, refresh_ttl_s=3600, clock=TickingClock(),
        successor_keys=accounts.successor_keys,
    )  # fmt: skip
    login = await ticking.device_login(device(), "hal")
    first = await ticking.refresh(login.refresh_token)
    again = await ticking.refresh(login.refresh_token)
    assert again == first and first.issued_ms > 0


async def test_email_password_login_locks_out_after_repeated_failures(
    accounts: Accounts, clock: Clock
) -> None:
    fay = (await accounts.device_login(device(), "fay")).account
    assert await code_of(accounts.link_email(fay.player_id, "fay@x", "long enough pw")) == (
        "INVALID_EMAIL"
    )
    assert await code_of(accounts.link_email(fay.player_id, "fay@example.com", "short")) == (
        "WEAK_PASSWORD"
    )
    await accounts.link_email(fay.player_id, "Fay@Example.com", "correct horse battery")
    gus = (await accounts.device_login(device(), "gus")).account
    assert await code_of(accounts.link_email(gus.player_id, "fay@example.com", "x" * 12)) == (
        "EMAIL_TAKEN"
    )
    ok = await accounts.email_login("fay@example.com", "correct horse battery")
    assert ok.account == fay
    assert ok.email == "fay@example.com"  # issue 60, item 4: a session says its email
    renewed = await accounts.refresh(ok.refresh_token)
    assert renewed.email == "fay@example.com"
    assert await code_of(accounts.email_login("nobody@example.com", "whatever it is")) == (
        "BAD_CREDENTIALS"
    )
    for _ in range(3):
        assert await code_of(accounts.email_login("fay@example.com", "wrong guess!")) == (
            "BAD_CREDENTIALS"
        )
    # Locked: even the right password is refused until the lockout ends.
    assert await code_of(accounts.email_login("fay@example.com", "correct horse battery")) == (
        "LOCKED"
    )
    clock.now += 61
    assert (await accounts.email_login("fay@example.com", "correct horse battery")).account == fay


async def test_the_starter_grant_is_asked_for_until_it_is_credited(accounts: Accounts) -> None:
    phone = device()
    first = await accounts.device_login(phone, "ivy")
    assert not first.granted
    assert not (await accounts.device_login(phone, "ivy")).granted  # the wallet was down, say
    await accounts.granted(first.account.player_id)
    assert (await accounts.device_login(phone, "ivy")).granted


async def test_a_deleted_account_keeps_its_id_and_loses_its_personal_data(
    accounts: Accounts,
) -> None:
    phone = device()
    kim = await accounts.device_login(phone, "kim")
    await accounts.link_email(kim.account.player_id, "kim@example.com", "a long passphrase")
    await accounts.delete(kim.account.player_id)
    await accounts.delete(kim.account.player_id)  # twice: no harm
    assert await code_of(accounts.refresh(kim.refresh_token)) == "REFRESH_REVOKED"
    assert await code_of(accounts.email_login("kim@example.com", "a long passphrase")) == (
        "BAD_CREDENTIALS"
    )
    assert await accounts.names([kim.account.player_id]) == {
        kim.account.player_id: "deleted player"
    }
    fresh = await accounts.device_login(phone, "kim")  # the device starts afresh, name free
    assert fresh.account.player_id != kim.account.player_id and fresh.account.name == "kim"
    assert await code_of(accounts.delete("gguest")) == "NO_ACCOUNT"


async def test_a_ban_ends_every_session_and_operators_see_the_account(accounts: Accounts) -> None:
    """Issue 16: a ban is recorded once (guests too), revokes the player's refresh tokens; the
    record says guest/device/email, deletion and the ban's reason; unban lifts it."""
    phone = device()
    login = await accounts.device_login(phone, "ann")
    other = await accounts.device_login(phone, "ann")  # a second session of the same player
    ann = login.account.player_id
    record = await accounts.record(ann)
    assert (record["kind"], record["banned"], record["display_name"]) == ("device", False, "ann")
    await accounts.ban(ann, "alice", "collusion")
    await accounts.ban(ann, "bob", "again")  # kept once, the first reason stays
    assert await code_of(accounts.refresh(login.refresh_token)) == "REFRESH_REVOKED"
    assert await code_of(accounts.refresh(other.refresh_token)) == "REFRESH_REVOKED"
    record = await accounts.record(ann)
    assert (record["banned"], record["ban_reason"]) == (True, "collusion")
    await accounts.ban("g0123456789abcdef", "alice", "spam")  # a guest: no account, still banned
    assert sorted(await accounts.banned_ids()) == sorted([ann, "g0123456789abcdef"])
    guest = await accounts.record("g0123456789abcdef")
    assert (guest["kind"], guest["banned"], guest["created_ms"]) == ("guest", True, 0)
    assert await accounts.unban(ann) and not await accounts.unban(ann)
    assert await accounts.banned_ids() == ["g0123456789abcdef"]
    assert (await accounts.device_login(phone, "ann")).account.player_id == ann


async def test_the_audit_log_keeps_each_action_and_how_it_ended(accounts: Accounts) -> None:
    """Written before the action ("started"), finished after it; newest first; by target."""
    audit = AuditLog(accounts.engine)
    first = await audit.record("ops", "ban", "p1", "cheating", "started", {"tables": 2})
    await audit.finish(first, "ok", {"tables": ["t1", "t2"]})
    second = await audit.record("ops", "login", "ops", "", "ok")
    assert second > first
    newest, oldest = await audit.entries(10)
    assert (newest.id, newest.action, newest.detail) == (second, "login", "{}")
    assert (oldest.outcome, oldest.detail) == ("ok", '{"tables": ["t1", "t2"]}')
    assert [e.id for e in await audit.entries(10, target="p1")] == [first]
    assert [e.id for e in await audit.entries(1)] == [second]
