# Fails when a SIMD kernel object (AVX2 or AVX-512; the matrix or the Adam
# one) defines a linkable symbol that another object could define too: the
# linker might keep that copy and then run its instructions on a CPU without
# them (executor/gemm_kernel.cc renames Eigen's namespace to prevent exactly
# that).
#   cmake -DNM=<nm> -DKERNEL=<avx2_fma|avx512> -DOBJECTS=<objects> -P gemm_kernel_symbols.cmake
if(NOT OBJECTS OR NOT KERNEL)
  message(FATAL_ERROR "no kernel objects or kernel name given")
endif()
set(shared "")
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} --defined-only ${object} OUTPUT_VARIABLE symbols
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${object}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    # "<address> <type> <name>": upper-case types and u/v/w/i are visible to the linker.
    if(line MATCHES "^[0-9a-fA-F]* ([A-Zuvwi]) (.*)$")
      set(name "${CMAKE_MATCH_2}")
      if(NOT name MATCHES "tpujobs_eigen_${KERNEL}|[0-9](gemm|adam)_${KERNEL}" AND
         NOT name STREQUAL "DW.ref.__gxx_personality_v0")
        list(APPEND shared "${name}")
      endif()
    endif()
  endforeach()
endforeach()
list(LENGTH shared count)
if(count GREATER 0)
  list(JOIN shared "\n  " listed)
  message(FATAL_ERROR "the ${KERNEL} kernel defines ${count} symbols outside its own namespaces:\n  ${listed}")
endif()
message(STATUS "${KERNEL} kernel symbols are all its own")
