"""Bootstrap shared by every service: settings, logs, metrics, tracing, health, shutdown."""
