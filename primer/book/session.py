"""What kind of MkDocs run this process is, and what a ``serve`` session keeps between rebuilds.

MkDocs says whether it builds or serves, and whether with ``--dirty``, once
(``on_startup``), to the hook module of the first build; it then loads the
hook module anew for every rebuild. So the answer is kept here, for the life
of the process::

    SESSION.start("serve", dirty=True)     # the hook's on_startup
    SESSION.serving, SESSION.dirty

A serve session also keeps the theme's compiled templates: MkDocs makes a
new Jinja2 environment for every rebuild, and compiling Material's templates
again is about 0.2 s of each. ``THEME_BYTECODE`` is a Jinja2 bytecode cache
in memory, which the hook gives each new environment while serving. Jinja2
keys it by the template's name and a checksum of its source, so an edited
template (``--watch-theme``) is compiled again.
"""

from __future__ import annotations

from dataclasses import dataclass

from jinja2.bccache import Bucket, BytecodeCache

__all__ = ["SESSION", "THEME_BYTECODE", "MemoryBytecodeCache", "Session"]


@dataclass
class Session:
    """The MkDocs command this process runs."""

    command: str = "build"
    dirty: bool = False

    def start(self, command: str, *, dirty: bool) -> None:
        """Record what ``on_startup`` was told."""
        self.command = command
        self.dirty = dirty

    @property
    def serving(self) -> bool:
        """Whether this is a ``mkdocs serve`` process (rebuilds follow)."""
        return self.command == "serve"


class MemoryBytecodeCache(BytecodeCache):
    """Compiled templates, in memory, for the life of the process."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        """Fill the bucket if its template was compiled before (Jinja2 checks the checksum)."""
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep a freshly compiled template."""
        self._code[bucket.key] = bucket.bytecode_to_string()

    def clear(self) -> None:
        """Forget every compiled template."""
        self._code.clear()


#: This process's session.
SESSION = Session()
#: The theme's compiled templates, shared by every rebuild of a serve session.
THEME_BYTECODE = MemoryBytecodeCache()
