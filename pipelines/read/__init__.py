"""Reading a corpus: Spark's readers into a DataFrame of documents (:mod:`.readers`), pyarrow inside the Python
tasks (:mod:`.arrow_read`), and Arrow text columns cut into packed shards (:mod:`.shards`)."""
