"""Interval estimates and paired tests (no scipy)."""
