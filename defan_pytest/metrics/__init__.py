"""The metric registry and the per-domain and overall figures."""
