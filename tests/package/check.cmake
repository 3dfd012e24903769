# ctest's Package.InstallAndFindPackage: installs the build tree into a fresh prefix, then
# configures, builds and runs tests/package against it with find_package(ktune), static and shared,
# and checks ktune.pc. Arguments: BUILD_DIR, SOURCE_DIR, WORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()
run("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
foreach(f bin/ktune include/ktune/runtime.h include/ktune/ktune.h lib/cmake/ktune/ktuneConfig.cmake
          lib/cmake/ktune/ktuneConfigVersion.cmake lib/pkgconfig/ktune.pc)
  if(NOT EXISTS "${WORK_DIR}/prefix/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(GLOB libs "${WORK_DIR}/prefix/lib/libktune.a" "${WORK_DIR}/prefix/lib/libktune.so*")
list(LENGTH libs n)
if(n LESS 2)
  message(FATAL_ERROR "expected libktune.a and libktune.so in ${WORK_DIR}/prefix/lib, found: ${libs}")
endif()
run("configuring the outside project" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package" -B "${WORK_DIR}/build"
    "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix" -DCMAKE_BUILD_TYPE=Release)
run("building the outside project" ${CMAKE_COMMAND} --build "${WORK_DIR}/build" -j 2)
foreach(exe consumer consumer_shared)
  run("running ${exe}" "${WORK_DIR}/build/${exe}")
  if(NOT last_out MATCHES "choice (nearest|exact|cublas) gemm_skinny" OR NOT last_out MATCHES "c api ktune_sgemm")
    message(FATAL_ERROR "${exe} printed:\n${last_out}")
  endif()
endforeach()
# The installed program runs from the prefix (templates and tables are embedded).
# No user database (query refuses a --db that names no file): the shipped tables answer.
run("installed ktune" ${CMAKE_COMMAND} -E env KTUNE_DB=/nonexistent.db "${WORK_DIR}/prefix/bin/ktune" query --arch sm_90
    --problem 4096x4096x4096)
# pkg-config, where the machine has it: the relocated prefix and the library.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} "${WORK_DIR}/prefix/lib/pkgconfig")
  run("pkg-config" ${PKG_CONFIG} --cflags --libs ktune)
  if(NOT last_out MATCHES "-lktune" OR NOT last_out MATCHES "/include")
    message(FATAL_ERROR "pkg-config --cflags --libs ktune printed: ${last_out}")
  endif()
  # A program built with those flags alone runs without LD_LIBRARY_PATH (the .pc's rpath).
  separate_arguments(pc_flags UNIX_COMMAND "${last_out}")
  find_program(CXX NAMES c++ g++ REQUIRED)
  run("building with pkg-config's flags" ${CXX} -std=c++20 -O1 "${SOURCE_DIR}/tests/package/consumer.cc" ${pc_flags}
      -o "${WORK_DIR}/pc_consumer")
  run("running the pkg-config build" ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH "${WORK_DIR}/pc_consumer")
  if(NOT last_out MATCHES "choice (nearest|exact|cublas) gemm_skinny")
    message(FATAL_ERROR "pc_consumer printed:\n${last_out}")
  endif()
endif()
# Leave nothing behind on success: the build folder travels to the GPU machine, which caps its size.
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "package check passed")
