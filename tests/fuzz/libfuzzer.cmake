# libFuzzer targets, one per parser of outside input (clang and its fuzzer
# runtime: scripts/setup-deps.sh --fuzz). Configure with clang:
#   CC=clang cmake -S . -B build-fuzz -DWGT_FUZZ=ON -DWGT_SANITIZE=ON
#   cmake --build build-fuzz --target fuzz_safetensors
# The library is compiled with -fsanitize=fuzzer-no-link (top-level
# CMakeLists.txt) so coverage inside it guides the fuzzer.
# wgt_fuzz_target(name library): tests/fuzz/<name>.c linked with library
# (wgtensor_static for the library's own readers, wgtensor_models for the
# model-folder and checkpoint readers of the floors above it).
function(wgt_fuzz_target name library)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/${name}.c)
  target_link_libraries(${name} PRIVATE ${library})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  # Under CTest: the seeds (past crashes are kept among them) run once, no
  # fuzzing, as a regression check. Fuzzing itself is run by hand or in CI for
  # a fixed time (see each target's header).
  string(REPLACE "fuzz_" "corpus_" corpus ${name})
  if(IS_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/${corpus})
    add_test(NAME ${name}_seeds COMMAND ${name} -runs=0 ${CMAKE_CURRENT_LIST_DIR}/${corpus})
  endif()
endfunction()

# safetensors reader: seeds in corpus_safetensors/, dictionary safetensors.dict
wgt_fuzz_target(fuzz_safetensors wgtensor_static)
# wgt_fused expression parser: seeds in corpus_fused/, dictionary fused.dict
wgt_fuzz_target(fuzz_fused wgtensor_static)

# Hugging Face model-folder readers (src/models): tokenizer.json and
# config.json. Seeds in corpus_tokenizer/ and corpus_llama_config/,
# dictionary json.dict.
wgt_fuzz_target(fuzz_tokenizer wgtensor_models)
wgt_fuzz_target(fuzz_llama_config wgtensor_models)
# BPE encoding of arbitrary text with the fixtures' byte-level tokenizers
# (read from the source tree): seeds in corpus_tokenizer_text/
wgt_fuzz_target(fuzz_tokenizer_text wgtensor_models)
target_compile_definitions(fuzz_tokenizer_text PRIVATE WGT_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# wgt train / wgt sample checkpoints (tools/wgt/train_checkpoint.c, its config
# and history readers): seeds in corpus_train_checkpoint/
wgt_fuzz_target(fuzz_train_checkpoint wgtensor_models)
target_sources(fuzz_train_checkpoint PRIVATE ${CMAKE_SOURCE_DIR}/tools/wgt/train_checkpoint.c
               ${CMAKE_SOURCE_DIR}/tools/wgt/train_config.c ${CMAKE_SOURCE_DIR}/tools/wgt/train_log_csv.c)
target_include_directories(fuzz_train_checkpoint PRIVATE ${CMAKE_SOURCE_DIR}/tools/wgt)
