# ---- Install the compiler: cmake --install <build> --component compiler ----
# The recording frontend, the ONNX importer and compile() (imported as
# Locus::frontend, Locus::import and Locus::compile, all three behind
# Locus::compiler), the libraries they load (the dialect, the passes, the
# pipelines, the dump; installed, not imported: their headers are MLIR's
# world and not a public API), the public headers and the tools.
# Installed libraries find each other through $ORIGIN and libMLIR/libLLVM
# through the LLVM library folder this build used.

set(LOCUS_COMPILER_LIBS LocusFrontend LocusImport LocusCompile)
set(LOCUS_COMPILER_PRIVATE_LIBS LocusDialect LocusPasses LocusPipelines
                                LocusDump)
set(LOCUS_COMPILER_TOOLS locus-compile locus-dump locus-opt locus-import
                         locus-calibrate locus-cache)

foreach(_lib IN LISTS LOCUS_COMPILER_LIBS LOCUS_COMPILER_PRIVATE_LIBS)
  set_target_properties(${_lib} PROPERTIES
    INSTALL_RPATH "$ORIGIN;${LLVM_LIBRARY_DIR}")
endforeach()
foreach(_tool IN LISTS LOCUS_COMPILER_TOOLS)
  set_target_properties(${_tool} PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
endforeach()
install(TARGETS ${LOCUS_COMPILER_LIBS} ${LOCUS_COMPILER_PRIVATE_LIBS}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT compiler)
install(TARGETS ${LOCUS_COMPILER_TOOLS}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT compiler)

# The public headers: no MLIR, LLVM or Boost in any of them.
set(_inc ${PROJECT_SOURCE_DIR}/compiler/include/locus)
install(FILES ${_inc}/locus.h ${_inc}/Compile.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/locus COMPONENT compiler)
install(FILES ${_inc}/Frontend/Graph.h ${_inc}/Frontend/Nn.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/locus/Frontend COMPONENT compiler)
install(FILES ${_inc}/Import/Onnx.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/locus/Import COMPONENT compiler)
install(FILES ${_inc}/Support/Errors.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/locus/Support COMPONENT compiler)

# The imported targets, written here rather than by install(EXPORT): an
# exported shared library drags every library it links privately (the
# dialect and passes, and through them MLIR's build-tree interface) into the
# package, while a consumer needs only the three libraries and the headers;
# the rest is found through the installed libraries' RUNPATH.
file(RELATIVE_PATH LOCUS_CMAKE_TO_PREFIX /prefix/${LOCUS_CMAKE_DIR} /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/LocusCompilerTargets.cmake.in
  ${PROJECT_BINARY_DIR}/LocusCompilerTargets.cmake @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/LocusCompilerTargets.cmake
  DESTINATION ${LOCUS_CMAKE_DIR} COMPONENT compiler)
