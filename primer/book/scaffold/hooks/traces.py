from primer.book.mkdocs_hook import *  # noqa: F403
