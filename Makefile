# The two entry points of the README. Each installs what it needs first
# (scripts/setup-deps.sh: Debian packages and the pinned wgpu-native wheel).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWGT_WERROR=ON

.PHONY: run test deps build test-asan clean

# With no adapter `wgt devices` says so and fails; the demo then runs on the CPU.
run: build
	-$(BUILD)/bin/wgt devices
	$(BUILD)/bin/wgt demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 900

deps:
	bash scripts/setup-deps.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer with leak checks.
# Mesa's drivers are preloaded so their own leaks can be suppressed by name
# (tests/lsan.supp) after the Vulkan loader unloads them.
MESA_DRIVERS := $(wildcard /usr/lib/x86_64-linux-gnu/libvulkan_lvp.so /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so)
test-asan:
	$(MAKE) build BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DWGT_WERROR=ON -DWGT_SANITIZE=ON"
	cd build-asan && LD_PRELOAD="$(MESA_DRIVERS)" ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j2 --timeout 1800

clean:
	rm -rf $(BUILD) build-asan
