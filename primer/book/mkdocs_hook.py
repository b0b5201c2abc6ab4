"""The ``trace-book`` plugin as a hook file's events, one ``TraceBookPlugin``'s (``primer.book._plugin``).

A book naming a hook file rather than the plugin keeps one line in it, as ``hooks/traces.py`` does:
``from primer.book.mkdocs_hook import *``. MkDocs loads a hook file once per process, so this instance
lasts across ``mkdocs serve`` rebuilds as a plugin's does.
"""

from primer.book._plugin import TraceBookPlugin as _Plugin

_plugin = _Plugin()
globals().update({name: getattr(_plugin, name) for name in dir(_Plugin) if name.startswith("on_")})
