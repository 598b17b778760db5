# Warning and sanitizer flags live on interface targets, never on global flags.
add_library(icestream_warnings INTERFACE)
target_compile_options(icestream_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                    -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(ICESTREAM_WERROR)
  target_compile_options(icestream_warnings INTERFACE -Werror)
endif()

# ICESTREAM_SANITIZE: "address" (AddressSanitizer + UndefinedBehaviorSanitizer, presets
# debug and asan), "thread" (ThreadSanitizer, preset tsan) or empty. ON means address (what
# the option was before it took a value).
set(ICESTREAM_SANITIZE "" CACHE STRING "Sanitizers: address (ASan + UBSan), thread (TSan) or empty")
set_property(CACHE ICESTREAM_SANITIZE PROPERTY STRINGS "" address thread)
if(ICESTREAM_SANITIZE STREQUAL "ON")
  set(ICESTREAM_SANITIZE address)
elseif(ICESTREAM_SANITIZE STREQUAL "OFF")
  set(ICESTREAM_SANITIZE "")
endif()

add_library(icestream_sanitizers INTERFACE)
# The environment every test of a sanitizer build runs with: stop at the first report, with
# a stack; the suppression files name what is not ours (each entry says why).
set(ICESTREAM_SANITIZER_ENV "")
set(supp ${PROJECT_SOURCE_DIR}/tests/sanitizers)
if(ICESTREAM_SANITIZE STREQUAL "address")
  target_compile_options(icestream_sanitizers INTERFACE -fsanitize=address,undefined
                                                        -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(icestream_sanitizers INTERFACE -fsanitize=address,undefined)
  set(ICESTREAM_SANITIZER_ENV
      "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=1"
      "LSAN_OPTIONS=suppressions=${supp}/lsan.supp:print_suppressions=0"
      "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=${supp}/ubsan.supp")
elseif(ICESTREAM_SANITIZE STREQUAL "thread")
  target_compile_options(icestream_sanitizers INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(icestream_sanitizers INTERFACE -fsanitize=thread)
  set(ICESTREAM_SANITIZER_ENV
      "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${supp}/tsan.supp")
elseif(NOT ICESTREAM_SANITIZE STREQUAL "")
  message(FATAL_ERROR "ICESTREAM_SANITIZE must be address, thread or empty, not ${ICESTREAM_SANITIZE}")
endif()
# Sanitizers must cover every object (STL containers cross library boundaries).
link_libraries(icestream_sanitizers)
