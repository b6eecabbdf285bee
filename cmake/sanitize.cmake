# PIPETTE_SANITIZE and PIPETTE_FUZZ: compile and link every target of the tree with sanitizers.
#
# PIPETTE_SANITIZE (GCC or clang; scripts/sanitize.sh builds it in build-asan): AddressSanitizer
# and UndefinedBehaviorSanitizer, any undefined behaviour stopping the program (so a test fails).
# PIPETTE_FUZZ (clang only; scripts/fuzz.sh builds it in build-fuzz): the same sanitizers plus
# libFuzzer's coverage instrumentation; the fuzz targets of tests/fuzz link libFuzzer itself.
if(PIPETTE_SANITIZE OR PIPETTE_FUZZ)
  set(pipette_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=undefined
                         -fno-omit-frame-pointer)
  add_compile_options(${pipette_sanitizers})
  add_link_options(-fsanitize=address,undefined)
  # GCC's manual (-fsanitize=address): "sanitizers tend to increase the rate of false positive
  # warnings, most notably those around -Wmaybe-uninitialized" (here: in Boost Graph's
  # named_graph.hpp, reported as -Wuninitialized once -Wmaybe-uninitialized is off). Both off in
  # this build only, so that it builds with -Werror; the normal build keeps them.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized -Wno-uninitialized)
  endif()
  message(STATUS "pipette: sanitizers: AddressSanitizer, UndefinedBehaviorSanitizer")
endif()

if(PIPETTE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PIPETTE_FUZZ needs clang (libFuzzer): configure with CXX=clang++ "
                        "(scripts/fuzz.sh does); found ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "pipette: libFuzzer targets: ON (clang ${CMAKE_CXX_COMPILER_VERSION})")
endif()
