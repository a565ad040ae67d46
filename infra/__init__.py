"""Local infrastructure: the cluster runner, embedded Valkey/Tansu, code generation."""
