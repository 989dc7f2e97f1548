# The two entry points of the README. Each installs what it needs first
# (scripts/setup-deps.sh: Debian packages and the pinned wgpu-native wheel).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWGT_WERROR=ON

.PHONY: run test deps build test-asan clean

run: build
	$(BUILD)/bin/wgt devices
	$(BUILD)/bin/wgt demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 900

deps:
	bash scripts/setup-deps.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DWGT_WERROR=ON -DWGT_SANITIZE=ON"

clean:
	rm -rf $(BUILD) build-asan
