"""Matchmaking: tables, party codes, quick match and the deal."""
