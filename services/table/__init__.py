"""Table: runs games with the rules engine and turn clocks on table state held in Redis."""
