"""The language the services share: the event records, Redis key layouts (lobby, money, shards,
table feeds), computer seats, table options and the engine<->proto vocabulary. The platform
(hosting, settings, logs, metrics, tracing, clients, the event log and its topics) is in
services/common, which imports nothing from here."""
