"""The ``trace-book`` plugin as a hook file's events: one ``TraceBookPlugin`` (``primer.book._plugin``).

A book that names a hook file rather than the plugin keeps this one line in it (this book's
``hooks/traces.py`` does)::

    from primer.book.mkdocs_hook import *  # noqa: F403

The module's public names are the plugin's ``on_*`` events. MkDocs loads a hook file once per
process, as it keeps one plugin instance, so this instance lasts across ``mkdocs serve``
rebuilds as the plugin's does.
"""

from primer.book._plugin import TraceBookPlugin as _Plugin

globals().update(_Plugin.hook().events())
