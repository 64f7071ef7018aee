"""What runs the verified definitions.

* :mod:`lvt.runtime.core`: the reference backend, the Python transliteration of
  ``Verified/Spec/Core.lean`` (items, symbol streams, encode and parse over a codec).
* :mod:`lvt.runtime.codec`: the tokenizer codec the definitions are stated over (text to ids
  with special tokens off, its laws checked, a span cache).
* :mod:`lvt.runtime.wire` and :mod:`lvt.runtime.native`: the native backend, the Lean-built
  C library (``Verified/Ffi.lean``, ``ffi/lvt.h``) through cffi and its wire format.
"""
