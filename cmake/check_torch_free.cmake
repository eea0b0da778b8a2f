# The records, the result and the analysis commands must build without LibTorch. Their library
# (tbench_records) gets no LibTorch include path, but Debian installs ATen/ and c10/ straight
# into /usr/include, where any compile would find them. So each source is preprocessed here and
# fails this check if a LibTorch header (ATen/, c10/, torch/, caffe2/) is among what it includes.
# Run by ctest: cmake -DCXX=... -DINCLUDE_DIR=... -DSOURCES="a.cpp;b.cpp" -P check_torch_free.cmake
set(failed "")
foreach(source IN LISTS SOURCES)
  execute_process(COMMAND ${CXX} -std=c++17 -M -DSPDLOG_FMT_EXTERNAL -DSPDLOG_COMPILED_LIB -I${INCLUDE_DIR} ${source}
                  OUTPUT_VARIABLE deps ERROR_VARIABLE errors RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(APPEND failed "${source}: cannot be preprocessed without LibTorch:\n${errors}")
    continue()
  endif()
  string(REGEX MATCH "[^ \n\\\\]*/(ATen|c10|torch|caffe2)/[^ \n\\\\]*" torch_header "${deps}")
  if(torch_header)
    list(APPEND failed "${source}: includes a LibTorch header (${torch_header})")
  endif()
endforeach()
if(failed)
  string(REPLACE ";" "\n" failed "${failed}")
  message(FATAL_ERROR "torch-free sources reach LibTorch:\n${failed}")
endif()
list(LENGTH SOURCES count)
message(STATUS "${count} torch-free sources include no LibTorch header")
