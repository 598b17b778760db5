# Warning and sanitizer flags live on interface targets, never on global flags.
add_library(icestream_warnings INTERFACE)
target_compile_options(icestream_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                    -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(ICESTREAM_WERROR)
  target_compile_options(icestream_warnings INTERFACE -Werror)
endif()

add_library(icestream_sanitizers INTERFACE)
if(ICESTREAM_SANITIZE)
  target_compile_options(icestream_sanitizers INTERFACE -fsanitize=address,undefined
                                                        -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(icestream_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
# Sanitizers must cover every object (STL containers cross library boundaries).
link_libraries(icestream_sanitizers)
