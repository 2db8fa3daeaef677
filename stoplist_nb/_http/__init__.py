"""Everything that touches requests and urllib3, behind ``transport.Transport``."""
