# Writes OUT from IN with the source tree's git revision as TBENCH_GIT_SHA, at every build (not
# only at configure time), so a result names the code it ran: the commit, with "-dirty" where
# tracked files differed from it when the binary was built (untracked files are left out: results
# and scratch files). OUT is rewritten only when its text changes, so nothing recompiles otherwise.
#   cmake -DSOURCE_DIR=... -DIN=version.cpp.in -DOUT=version.cpp -DPROJECT_VERSION=... -P git_revision.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE TBENCH_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(TBENCH_GIT_SHA)
  # --no-optional-locks: a build must not take .git/index.lock from a commit running beside it.
  execute_process(COMMAND git --no-optional-locks status --porcelain --untracked-files=no WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND TBENCH_GIT_SHA "-dirty")
  endif()
else()
  set(TBENCH_GIT_SHA "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
