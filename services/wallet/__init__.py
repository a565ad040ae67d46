"""Wallet: diamonds on a double-entry SQL ledger."""
