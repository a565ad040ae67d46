"""Locust load tests of the gateway: correctness of legal plays and clocks under load."""
