"""Thresholds, the level gate, the regression gate and baseline comparability."""
