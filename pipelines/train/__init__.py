"""Training's Spark steps: each algorithm counts its shards (:mod:`.bytepiece`, :mod:`.unigram`, :mod:`.bpe`; local
files through :mod:`.direct_count`), every count table goes through the one reduce (:mod:`.reduce`), and each
stage's output is kept in the work directory so a run resumes (:mod:`.workdir`). The fitting itself is the
single-node trainers' (:mod:`tokenizer.trainers`)."""
