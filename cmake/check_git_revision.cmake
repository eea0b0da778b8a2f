# The ctest BuildRevision.NamesTheCommitAndChangedTrackedFiles: git_revision.cmake, run on a scratch
# repository, names its commit, adds "-dirty" once a tracked file changes (not for an untracked
# file), follows a new commit, and says "unknown" outside a repository.
#   cmake -DSCRATCH=<folder> -DSCRIPT=git_revision.cmake -DIN=version.cpp.in -P check_git_revision.cmake
find_program(GIT git)
if(NOT GIT)
  message("git not found: skipped")
  return()
endif()
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH}/repo)
set(repo ${SCRATCH}/repo)

function(git)
  execute_process(COMMAND ${GIT} -c user.name=tbench -c user.email=tbench@localhost ${ARGN}
                  WORKING_DIRECTORY ${repo} RESULT_VARIABLE failed OUTPUT_QUIET ERROR_VARIABLE error)
  if(failed)
    message(FATAL_ERROR "git ${ARGN}: ${error}")
  endif()
endfunction()

# The revision git_revision.cmake writes for `source`. Git looks no higher than SCRATCH, which may
# sit inside another checkout (a build folder in the source tree).
function(recorded source out_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env GIT_CEILING_DIRECTORIES=${SCRATCH}
                          ${CMAKE_COMMAND} -DSOURCE_DIR=${source} -DIN=${IN} -DOUT=${SCRATCH}/version.cpp
                          -DPROJECT_VERSION=0 -P ${SCRIPT} RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "${SCRIPT} failed")
  endif()
  file(READ ${SCRATCH}/version.cpp text)
  string(REGEX MATCH "git_sha\\(\\) { return \"([^\"]*)\"" _ "${text}")
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

function(expect what actual expected)
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "${what}: recorded '${actual}', expected '${expected}'")
  endif()
endfunction()

function(head out_var)
  execute_process(COMMAND ${GIT} rev-parse --short=12 HEAD WORKING_DIRECTORY ${repo}
                  OUTPUT_VARIABLE sha OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(${out_var} "${sha}" PARENT_SCOPE)
endfunction()

git(init -q)
file(WRITE ${repo}/model.cpp "one\n")
git(add model.cpp)
git(commit -q -m first)
head(first)
recorded(${repo} sha)
expect("a clean tree" "${sha}" "${first}")
file(WRITE ${repo}/scratch.json "{}\n")
recorded(${repo} sha)
expect("an untracked file" "${sha}" "${first}")
file(WRITE ${repo}/model.cpp "two\n")
recorded(${repo} sha)
expect("a changed tracked file" "${sha}" "${first}-dirty")
git(commit -q -a -m second)
head(second)
recorded(${repo} sha)
expect("after committing it" "${sha}" "${second}")
file(MAKE_DIRECTORY ${SCRATCH}/plain)
recorded(${SCRATCH}/plain sha)
expect("outside a repository" "${sha}" "unknown")
