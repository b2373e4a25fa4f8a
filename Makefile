# The newcomer's entry points. `make test` and `make serve` install missing Debian packages first
# (through deploy/install-deps.sh), then configure and build with the CMake presets. `make serve`
# builds only the two executables it needs and serves on HOST:PORT (127.0.0.1:8080).
PRESET ?= dev
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: deps test build release serve asan-test format clean

deps:
	@bash deploy/install-deps.sh
	@bash tests/clients/install.sh

build: deps
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET) -j $(JOBS)

test: build
	ctest --preset $(PRESET) $(CTEST_ARGS)

ASAN_FUZZ_SECONDS ?= 30

asan-test: deps
	cmake --preset asan -DBITNET_FUZZ_SECONDS=$(ASAN_FUZZ_SECONDS)
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan $(CTEST_ARGS)

release: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS)

# The default model of `make serve`: this line is the one place its path lives. Until the trained
# default model lands under models/, a synthetic model of shape SYNTH_SHAPE is made on first run
# and cached in the release build tree.
DEFAULT_MODEL ?= models/bitnet-fortunes-5m-i2_s.gguf
MODEL_ALIAS ?= bitnet
SYNTH_SHAPE ?= small
SYNTH_MODEL := build/release/models/synthetic-$(SYNTH_SHAPE).gguf
HOST ?= 127.0.0.1
PORT ?= 8080

serve: deps
	cmake --preset release
	cmake --build --preset release -j $(JOBS) --target bitnet-server bitnet-model
	@model="$(DEFAULT_MODEL)"; \
	if [ ! -f "$$model" ]; then \
	    model="$(SYNTH_MODEL)"; \
	    echo "make serve: $(DEFAULT_MODEL) is not there yet; serving a synthetic $(SYNTH_SHAPE) model (random weights: its text is noise)"; \
	    if [ ! -f "$$model" ]; then \
	        mkdir -p "$$(dirname "$$model")" && \
	        build/release/tools/bitnet-model make --shape $(SYNTH_SHAPE) --seed 1 -o "$$model" || exit 1; \
	    fi; \
	fi; \
	exec build/release/tools/bitnet-server --config conf/bitnet-server.json --model "$$model" \
	    --alias $(MODEL_ALIAS) --host $(HOST) --port $(PORT)

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf build
