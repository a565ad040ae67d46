"""The reference client library of the gateway's API: a scripted player (`player`), the
terminal client (`terminal`) and the demo (`demo`). Services never import it."""
