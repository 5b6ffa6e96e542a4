"""Apache Beam as an engine (``--engine beam``): training's stages as Beam pipelines on any runner
(:mod:`.train_engine`), with files as the one way results travel between the pipelines and this process
(:mod:`.exchange`). Imports ``apache_beam``: nothing outside this folder imports it (``pip install
'shardpiece[beam]'``)."""
