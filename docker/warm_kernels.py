"""Compile the Numba kernels once into NUMBA_CACHE_DIR while the image is built (a smoke test of the install too):
executors then load them instead of compiling in every new Python worker. Kernels compiled for another CPU are
compiled again at run time."""

import os
import tempfile

from tokenizer.core import Tokenizer
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

texts = [("warm up the kernels %d " % i).encode() * 3 for i in range(200)]
model = train_bytepiece_local(texts, TrainSettings(vocab_sizes=(300,), min_count=2))[300]
path = os.path.join(tempfile.mkdtemp(), "warm.model")
model.save(path)
tokenizer = Tokenizer.load(path)
assert tokenizer.decode_bytes(tokenizer.encode(texts[0])) == texts[0]  # the per-call entry point
assert tokenizer.encode_batch(texts[:2]) == [tokenizer.encode(t) for t in texts[:2]]  # the batch one executors run
print("numba cache:", sum(len(files) for _, _, files in os.walk(os.environ["NUMBA_CACHE_DIR"])), "files")
