# The newcomer's entry points. `make test` and `make serve` install missing Debian packages first
# (through deploy/install-deps.sh), then configure and build with the CMake presets.
PRESET ?= dev
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: deps test build release serve asan-test format clean

deps:
	@bash deploy/install-deps.sh

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

serve: release
	@echo "bitnet-server is not built yet (it arrives with the serving work); see README" >&2
	@exit 1

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf build
