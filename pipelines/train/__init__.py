"""Training, engine-neutral: the skeleton every run goes through (:mod:`.skeleton`), the algorithms' settings,
counts, fits and stage files (:mod:`.algorithms`, :mod:`.bytepiece`, :mod:`.unigram`, :mod:`.bpe`), the count
tables and their reduce (:mod:`.tables`), what an engine provides (:mod:`.engine`) and the work directory that lets
a run resume (:mod:`.workdir`). The engines are :mod:`pipelines.inprocess` and :mod:`pipelines.spark`; the fitting
itself is the single-node trainers' (:mod:`tokenizer.trainers`)."""
