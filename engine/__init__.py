"""The rules engine: a pure library (no I/O, no clock, no randomness inside).

Time (`now_ms`) and dice come in as arguments; everything a clock does is a function call.
"""

from engine.movegen import Play, format_steps, legal_plays
from engine.position import Position, pip_count

__all__ = ["Play", "Position", "format_steps", "legal_plays", "pip_count"]
