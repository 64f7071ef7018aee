"""Parity corpus: benign conversations rendered with each family's official chat template.

See ``README.md`` in this directory. The modules are importable as ``parity.*`` (``tests/`` is
on ``sys.path`` under pytest, see ``tests/conftest.py``).
"""
