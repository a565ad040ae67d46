"""The admin audit log on SQL (the identity service's AuditRepository): every operator action
with who, when, what, why and how it ended."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from services.common.clock import now_ms
from services.identity.ports import Detail
from services.identity.schema import admin_audit


class AuditLog:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def record(
        self,
        operator: str,
        action: str,
        target: str,
        reason: str,
        outcome: str,
        detail: Detail | None = None,
    ) -> int:
        """A new entry; its id."""
        async with self.engine.begin() as conn:
            return int(
                (
                    await conn.execute(
                        admin_audit.insert()
                        .values(
                            at_ms=now_ms(),
                            operator=operator[:64],
                            action=action,
                            target=target[:64],
                            reason=reason,
                            outcome=outcome[:64],
                            detail=json.dumps(detail or {}, sort_keys=True),
                        )
                        .returning(admin_audit.c.id)
                    )
                ).scalar_one()
            )

    async def finish(self, entry: int, outcome: str, detail: Detail) -> None:
        """How the action an entry announced ended."""
        async with self.engine.begin() as conn:
            await conn.execute(
                update(admin_audit)
                .where(admin_audit.c.id == entry)
                .values(outcome=outcome[:64], detail=json.dumps(detail, sort_keys=True))
            )

    async def entries(self, limit: int = 50, target: str = "") -> list[Any]:
        """Newest first; only those about `target` when given."""
        query = select(admin_audit).order_by(admin_audit.c.id.desc()).limit(limit)
        if target:
            query = query.where(admin_audit.c.target == target)
        async with self.engine.connect() as conn:
            return list((await conn.execute(query)).all())
