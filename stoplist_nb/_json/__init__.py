"""The service's JSON as Arrow, without loss or a crash (pure: no I/O)."""
