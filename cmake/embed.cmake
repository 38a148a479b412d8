# tpujobs_embed(<target> <namespace> <file>...)
# Compiles the given files into a static library <target> exposing
#   std::string_view <namespace>::find(std::string_view name)
# (empty when absent) and <namespace>::names(). The file name (without
# directory) is the lookup key, so the service stays one binary.
function(tpujobs_embed target ns)
  set(out_cc ${CMAKE_CURRENT_BINARY_DIR}/${target}_embedded.cc)
  set(files ${ARGN})
  # A ';' in a custom command would split it: pass the list '|'-separated.
  string(REPLACE ";" "|" files_arg "${files}")
  add_custom_command(
    OUTPUT ${out_cc}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_cc} -DNS=${ns} "-DFILES=${files_arg}"
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
    DEPENDS ${files} ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
    COMMENT "Embedding ${target}"
    VERBATIM)
  add_library(${target} STATIC ${out_cc})
endfunction()
