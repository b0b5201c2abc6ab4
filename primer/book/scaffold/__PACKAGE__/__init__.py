"""The chapters of __SITE_NAME__: one module per chapter, ``chNN_name.py``, its scenarios in it."""
