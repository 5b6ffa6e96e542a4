"""The Python twins of the kernels: for each Numba kernel of :mod:`tokenizer.kernels`, a slow, obviously-correct
version in plain Python (dicts, lists, Python integers, ``bytes.decode``), which a hypothesis test in ``tests/``
checks the kernel against.

* One module per kernel module, named as the kernel module it mirrors: the twins of
  :mod:`tokenizer.kernels.unigram` are in :mod:`tokenizer.twins.unigram`. Two modules gather a small family:
  :mod:`tokenizer.twins.bpe` holds the twins of ``bpe`` and ``bpe_ranked``, and
  :mod:`tokenizer.twins.bpe_merges` those of ``bpe_merges`` and ``bpe_pair_rules``.
* Each twin is named ``ref_`` + the name of the kernel function it mirrors, less the ``_into`` / ``_kernel`` suffix
  of a kernel that fills caller buffers (``ref_viterbi`` is the twin of ``viterbi_chars_into`` and
  ``viterbi_bytes_into``, ``ref_ngram_viterbi`` of ``ngram_viterbi_kernel``). A twin shaped otherwise than one
  kernel function (the twin of several kernels, of a kernel run over a whole text, of one entry of a table a kernel
  builds) is named for what it computes (``ref_count_ngrams``, ``ref_split_before``, ``ref_plain_char``).
  Helpers are private (a leading underscore).
* Never imported by runtime code (``tokenizer`` outside this package, ``pipelines``, ``jobs``):
  ``tests/test_import_hygiene.py`` checks it.

The twins live outside :mod:`tokenizer.kernels` because every kernel's on-disk cache entry is stamped with a hash
of that folder's sources (:data:`tokenizer.kernels.SOURCES_FINGERPRINT`): editing a twin there would recompile
every kernel.
"""
