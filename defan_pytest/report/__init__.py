"""The report: its schema, its builder, and every output written from it."""
