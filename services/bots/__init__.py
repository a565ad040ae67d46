"""Bots: plays computer seats (Play vs CPU, scored against the computer) as a gateway client."""
