"""Thresholds, the level gate and its table, the paired test and the regression gate, and
whether two runs can be compared at all."""
