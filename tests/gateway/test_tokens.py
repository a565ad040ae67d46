"""Player tokens are JWTs with standard claims and key ids: forged, altered, expired, foreign
and retired-key tokens are refused with a typed error; keys rotate without logging anyone out."""

from __future__ import annotations

import time

import jwt
import pytest

from services.common.errors import Unauthenticated
from services.common.tokens import AUDIENCE, ISSUER, Identity, TokenSigner, parse_keys

ANN = Identity("gann", "ann")
OLD, NEW = "old-secret-0123456789-0123456789ab", "new-secret-0123456789-0123456789ab"


def _refused(signer: TokenSigner, token: str) -> str:
    with pytest.raises(Unauthenticated) as err:
        signer.verify(token)
    return err.value.code


def test_a_token_carries_the_standard_claims_and_verifies() -> None:
    signer = TokenSigner(OLD, 60)
    token, expires_ms = signer.issue(ANN)
    assert signer.verify(token) == ANN
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, OLD, algorithms=["HS256"], audience=AUDIENCE)
    assert header["alg"] == "HS256" and header["kid"] == signer.current
    assert (
        claims["sub"] == "gann" and claims["iss"] == ISSUER and claims["exp"] * 1000 == expires_ms
    )
    assert OLD not in token and signer.current not in OLD  # the kid does not reveal the key


def test_forged_altered_expired_and_foreign_tokens_are_refused() -> None:
    signer = TokenSigner(OLD, 60)
    token, _ = signer.issue(ANN)
    head, body, sig = token.split(".")
    assert _refused(signer, f"{head}.{body}.{sig[:-4]}AAAA") == "BAD_TOKEN"
    other = jwt.encode({"sub": "geve"}, "x" * 32, algorithm="HS256", headers={"kid": "k"})
    assert _refused(signer, f"{head}.{other.split('.')[1]}.{sig}") == "BAD_TOKEN"  # swapped body
    unsigned = jwt.encode(
        {"sub": "gann", "exp": time.time() + 60, "iat": time.time(), "iss": ISSUER,
         "aud": AUDIENCE}, None, algorithm="none", headers={"kid": signer.current},
    )  # fmt: skip
    assert _refused(signer, unsigned) == "BAD_TOKEN"  # alg "none"
    expired, _ = signer.issue(ANN, now=time.time() - 3600)
    assert _refused(signer, expired) == "TOKEN_EXPIRED"
    elsewhere = TokenSigner(NEW, 60).issue(ANN)[0]  # another deployment's key
    assert _refused(signer, elsewhere) == "BAD_TOKEN"
    wrong_audience = jwt.encode(
        {"sub": "gann", "exp": time.time() + 60, "iat": time.time(), "iss": ISSUER,
         "aud": "someone-else"}, OLD, algorithm="HS256", headers={"kid": signer.current},
    )  # fmt: skip
    assert _refused(signer, wrong_audience) == "BAD_TOKEN"
    assert _refused(signer, "garbage") == "BAD_TOKEN"


def test_keys_rotate_without_logging_anyone_out() -> None:
    before = TokenSigner("", 60, parse_keys(f"k1={OLD}"))
    old_token, _ = before.issue(ANN)
    during = TokenSigner("", 60, parse_keys(f"k2={NEW},k1={OLD}"))
    new_token, _ = during.issue(ANN)
    assert jwt.get_unverified_header(new_token)["kid"] == "k2"
    assert during.verify(old_token) == ANN and during.verify(new_token) == ANN
    after = TokenSigner("", 60, parse_keys(f"k2={NEW}"))
    assert after.verify(new_token) == ANN
    assert _refused(after, old_token) == "BAD_TOKEN"  # the retired key's tokens stop at once


def test_bad_key_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        parse_keys("k1")
    with pytest.raises(ValueError):
        TokenSigner("short", 60)
