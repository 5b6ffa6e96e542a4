"""Apache Beam as an engine (``--engine beam``): training's stages as Beam pipelines on any runner
(:mod:`.train_engine`) and the tokenize job's tasks as one (:mod:`.tokenize`), with files as the one way results
travel between the pipelines and this process (:mod:`.exchange`); inputs on any filesystem Beam's ``FileSystems``
reads (:mod:`.files`). Imports ``apache_beam``: nothing outside this folder imports it (``pip install
'shardpiece[beam]'``)."""
