# The two entry points of the README. Each installs what it needs first
# (scripts/setup-deps.sh: Debian packages and the pinned wgpu-native wheel).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWGT_WERROR=ON

.PHONY: run test deps build test-asan clean web test-web

# The main job (issue 11): train a character-level GPT on data/tinyshakespeare.txt
# with the preset that fits the adapter (nanoGPT's `shakespeare` on a GPU, `tiny`
# on a CPU or lavapipe), sample from it, say where the checkpoint and plot are.
# With no adapter `wgt devices` says so and fails; training then runs on the CPU.
# OMP_WAIT_POLICY=passive: OpenMP threads sleep instead of spinning between the
# small ops of a small model; on a busy 2-core machine spinning made the tiny
# preset 7x slower (56 s against 7.6 s for 30 steps).
RUN_OUT ?= out/run
run: build
	-$(BUILD)/bin/wgt devices
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} $(BUILD)/bin/wgt train --out $(RUN_OUT)
	OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-passive} $(BUILD)/bin/wgt sample --checkpoint $(RUN_OUT)/ckpt.safetensors --tokens 300
	@echo "checkpoint: $(RUN_OUT)/ckpt.safetensors  loss plot: $(RUN_OUT)/loss.png  log: $(RUN_OUT)/log.csv"
	@echo "more: $(BUILD)/bin/wgt sample --checkpoint $(RUN_OUT)/ckpt.safetensors --prompt 'ROMEO:' --seed 7"

test: build
	cd $(BUILD) && ctest --output-on-failure -j2 --timeout 900

deps:
	bash scripts/setup-deps.sh

build: deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer with leak checks.
# Mesa's drivers are preloaded so their own leaks can be suppressed by name
# (tests/lsan.supp) after the Vulkan loader unloads them. allocator_may_return_null:
# a huge allocation fails as malloc does (the library reports OUT_OF_MEMORY)
# instead of ASan aborting the test.
MESA_DRIVERS := $(wildcard /usr/lib/x86_64-linux-gnu/libvulkan_lvp.so /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so)
test-asan:
	$(MAKE) build BUILD=build-asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DWGT_WERROR=ON -DWGT_SANITIZE=ON"
	cd build-asan && LD_PRELOAD="$(MESA_DRIVERS)" ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:allocator_may_return_null=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j2 --timeout 1800

# The WebAssembly build (issue 16, docs/web.md): the library, its CPU backend
# (plain C GEMM, one thread) and the WebGPU backend on the browser's
# navigator.gpu, with Debian's emscripten, into build-web/ (serve that folder).
# setup-deps.sh --web installs emscripten, chromium, chromium-driver and
# python3-selenium. NODE_PATH: emcc -O2 finds Debian's acorn there.
WEB_BUILD ?= build-web
web:
	bash scripts/setup-deps.sh --web
	NODE_PATH=/usr/share/nodejs emcmake cmake -S web -B $(WEB_BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DWGT_NATIVE_WGT=$(abspath $(BUILD))/bin/wgt
	NODE_PATH=/usr/share/nodejs cmake --build $(WEB_BUILD) -j$(JOBS)

# The web build in headless Chromium (tests/web/web_test.py), CTest tests of
# build-web/ (CI's third stage, .ci/run): a parity subset on SwiftShader, a
# 20-step run of a micro GPT (1 layer, width 32) whose loss must fall, a
# sample, a checkpoint of the native wgt train (skipped without `make build`)
# loaded and sampled; screenshot in build-web/web-test.png. The tests took
# 40-70 s on this loaded 2-core machine, the whole target from a clean state
# 70-100 s (docs/web.md). -j2: two browsers overlap SwiftShader's
# pipeline compiles, which run one at a time per page (128 s serially).
# -V: the log shows each part's timings, losses and the screenshot's path.
# The tiny preset itself, as the page trains it:
#   /usr/bin/python3 tests/web/web_test.py build-web --part train --flags '' --steps 10 --min-drop 0.1
test-web: web
	cd $(WEB_BUILD) && ctest -V -j2 --timeout 900

clean:
	rm -rf $(BUILD) build-asan
