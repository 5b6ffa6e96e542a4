# shardpiece: `make demo` runs the main job on the shipped sample corpus; `make test` runs the test suite.
# Both create .venv/ at the repository root on first use (Python 3.10+, Java 17+ needed).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.shardpiece-installed
export SPARK_LOCAL_IP := 127.0.0.1
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN)/python)

.PHONY: install test demo java clean bench docker-test test-transformers4

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	@$(MAKE) --no-print-directory java
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,beam]'
	# bytepiece (a test oracle only) needs pyahocorasick built for bytes and no build isolation.
	$(BIN)/python -m pip install --quiet cython setuptools wheel
	AHOCORASICK_BYTES=1 $(BIN)/python -m pip install --quiet --no-binary pyahocorasick pyahocorasick
	$(BIN)/python -m pip install --quiet --no-build-isolation bytepiece
	@touch $(STAMP)

java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  echo "Java 17 or newer is needed for Spark (found: $${v:-none})."; \
	  echo "Install it with:  sudo apt-get install -y openjdk-17-jre-headless   (Debian/Ubuntu)"; \
	  echo "             or:  brew install openjdk@17   (macOS), then put its bin/ on PATH"; \
	  exit 1; fi

test: install
	$(BIN)/python -m pytest -q -ra

demo: install
	$(BIN)/shardpiece demo

# The client tests against the other transformers major version (4.x; the suite runs 5.x), in .venv-transformers4.
test-transformers4: install
	@test -x .venv-transformers4/bin/python || $(PYTHON) -m venv .venv-transformers4
	.venv-transformers4/bin/python -m pip install --quiet -e '.[test]' 'transformers>=4.57,<5'
	.venv-transformers4/bin/python -m pytest -q -ra tests/tokenizer/test_huggingface_clients.py

# The image end to end on a standalone cluster (host network only); needs root and minutes; not part of `test`.
docker-test:
	bash docker/test.sh

bench: install
	$(BIN)/python -m pip install --quiet -e '.[bench]'

clean:
	rm -rf $(VENV) .venv-transformers4 build *.egg-info .pytest_cache .hypothesis
