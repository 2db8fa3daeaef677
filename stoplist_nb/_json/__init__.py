"""The service's JSON as Arrow, without loss or a crash (pure: no I/O)."""

from stoplist_nb._json.reader import Reply, read_reply

__all__ = ["Reply", "read_reply"]
