"""The metrics: their declaration and registry (:mod:`~defan_pytest.metrics.registry`), the
built-in ones (:mod:`~defan_pytest.metrics.builtin`) and the per-domain and overall figures
(:mod:`~defan_pytest.metrics.summary`).

Importing the package registers the built-in metrics, once and before any other, so every
module that reads the registry sees them first.
"""
from defan_pytest.metrics.builtin import register_built_ins

register_built_ins()
