# Fails unless the runtime library links only glibc (libc, libm, libdl and the
# loader ld-linux, which thread-local storage resolves through), libgcc_s and
# libstdc++ (docs/architecture.md: the runtime links no LLVM, MLIR or Boost;
# OpenBLAS and the CUDA driver are loaded with dlopen).
# Usage: cmake -DLIB=<path> -P check_runtime_deps.cmake
execute_process(COMMAND readelf -d ${LIB} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIB} failed")
endif()
string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dyn}")
foreach(entry IN LISTS needed)
  string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" name "${entry}")
  message(STATUS "NEEDED ${name}")
  if(NOT name MATCHES "^(lib(c|m|dl|gcc_s|stdc\\+\\+)\\.so|ld-linux)")
    message(FATAL_ERROR "the runtime links ${name}; it may link only glibc "
                        "(libc, libm, libdl, ld-linux), libgcc_s and libstdc++")
  endif()
endforeach()
