"""Archives for the tests: ZIP files built in memory, and a demo export that serves one."""

from __future__ import annotations

import io
import zipfile

from stoplist_nb.demo import DemoService


def make_zip(
    members: dict[str, str | bytes], *, method: int = zipfile.ZIP_DEFLATED, level: int | None = None
) -> bytes:
    """A ZIP of ``members`` (name -> content); a name ending in "/" makes a directory entry."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def serve_download(demo: DemoService, body: bytes, *, status: str | None = None) -> None:
    """Make the next export end at once and its download answer ``body`` (HTTP 200).

    ``status`` replaces the task's status reply (the JSON text of one).
    """
    demo.plan_next_export(steps=0)
    if status is not None:
        demo.add_fault("tasks/status", "raw", text=status)
    demo.add_fault("download", "raw", body=body, headers={"Content-Type": "application/zip"})
