"""Gateway: authenticates players and streams table events to them (gRPC and WebSocket)."""
