"""Leaderboard: trophies, leagues, scored points and ratings from the event stream."""
