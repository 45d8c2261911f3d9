"""Model calls: the model registry, the backends, one pool per process, retries, usage, redaction."""
